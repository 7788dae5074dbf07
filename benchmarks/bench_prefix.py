"""Prefill tokens the local daemon's KV-cache prefix reuse saved, per suite.

Reads results files of local runs (default: the committed source results of
`baselines/local.json`, real runs of every shipped suite on the embedded model) and prints,
per suite, the prompt tokens sent, how many the daemon took from its cache instead of
evaluating them again (`usage.cached_input_tokens`), and their ratio. A run of the suite
measures it afresh: `evalctl run --provider local --suite NAME --out DIR`, then
`python benchmarks/bench_prefix.py DIR/results.json`.

    python benchmarks/bench_prefix.py [RESULTS.json ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT = sorted((REPO / "baselines" / "local.results").glob("*.json"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results", nargs="*", type=Path, default=DEFAULT)
    args = parser.parse_args()
    if not args.results:
        print("no results files given and none committed under baselines/local.results/")
        return 1
    sent: dict[str, int] = defaultdict(int)
    cached: dict[str, int] = defaultdict(int)
    cases: dict[str, int] = defaultdict(int)
    for path in args.results:
        document = json.loads(path.read_text(encoding="utf-8"))
        for case in document.get("cases", []):
            usage = case.get("usage", {})
            sent[case["suite"]] += int(usage.get("input_tokens", 0))
            cached[case["suite"]] += int(usage.get("cached_input_tokens", 0))
            cases[case["suite"]] += 1
    print(f"{'suite':16} {'cases':>5} {'prompt tokens':>13} {'from cache':>10} {'saved':>6}")
    for suite in sorted(sent):
        share = cached[suite] / sent[suite] if sent[suite] else 0.0
        print(f"{suite:16} {cases[suite]:5} {sent[suite]:13} {cached[suite]:10} {share:6.1%}")
    total_sent, total_cached = sum(sent.values()), sum(cached.values())
    if total_sent:
        print(
            f"{'all':16} {sum(cases.values()):5} {total_sent:13} {total_cached:10} "
            f"{total_cached / total_sent:6.1%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
