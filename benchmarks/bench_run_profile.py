"""Where a run's model time goes, against llama-cpp-python in-process, measured in one run.

Reads a local run's results (default `results/demo/results.json`, which `make run` writes)
and sums every model turn of every case's transcript:

- uncached prompt tokens (`input_tokens - cached_input_tokens`) and their prefill time (the
  turn's time to first token);
- generated tokens and their decode time (the turn's total less its time to first token),
  constrained and free apart. A turn is constrained when its reply was decoded under a
  grammar: a forced tool call (`tool_choice` "required" or a tool's name) or an answer under
  a JSON schema (the suite's `output_schema` or its kind's, read from the suite files under
  `cases/`);
- model time, the turns' total time.

Then llama-cpp-python in-process, on the same model at the threads the run's daemon used,
measures in this run: prefill tokens/s of a fresh prompt of about the run's longest prefill
(`--prompt-tokens`), and decode tokens/s after the first token, free (bench_local's prompts)
and under a JSON schema (bench_local's five-field schema prompt: the run's schemas, a tool
call's arguments among them, are larger, and a grammar's cost grows with it). The floor is
what the run's work costs at those rates with every generated token at free speed (issue 33:
constrained decoding at free speed is the goal); a second floor keeps constrained tokens at
in-process constrained speed. `ratio floor / model time` is the share of the run's model time
the work needs.

    python benchmarks/bench_run_profile.py [RESULTS.json] [--threads N] [--rounds 2]

Without the results file it says how to make one and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

DEFAULT = REPO / "results" / "demo" / "results.json"
FIXTURES = REPO / "cases" / "fixtures" / "releases"
FREE_CHOICES = ("auto", "none")


@dataclass
class Work:
    """Tokens and seconds of one class of model work."""

    tokens: int = 0
    seconds: float = 0.0
    turns: int = 0

    def add(self, tokens: int, seconds: float) -> None:
        self.tokens += tokens
        self.seconds += seconds
        self.turns += 1

    @property
    def rate(self) -> float | None:
        return self.tokens / self.seconds if self.seconds > 0 else None


@dataclass
class Profile:
    prefill: Work = field(default_factory=Work)
    free: Work = field(default_factory=Work)
    constrained: Work = field(default_factory=Work)
    model_s: float = 0.0
    cached: int = 0
    prompt: int = 0
    longest_prefill: int = 0
    # Free generated tokens weighted by the context each was decoded at (the turn's prompt
    # and half its reply): decoding slows as the context grows (attention reads it all).
    free_context_tokens: float = 0.0
    # Attempts whose turns no transcript keeps (repeats, confirmation samples, crash retries):
    # counted, not classified.
    other_attempts: int = 0
    other_output: int = 0
    wall_s: float | None = None
    suites_unknown: set[str] = field(default_factory=set)


def _schema_suites(suites: set[str]) -> tuple[dict[str, bool], set[str]]:
    """Per case key of the shipped suites: whether its answer is asked under a JSON schema;
    and the suites named by the run that are not under cases/."""
    from evalctl.cases.loader import load_all
    from evalctl.plugin_loader import get_kind
    from evalctl.scoring.kinds import shape_for

    schema: dict[str, bool] = {}
    found = set()
    for suite in load_all(None, REPO / "cases"):
        kind = get_kind(suite.table.kind)
        if suite.name not in suites or kind is None:
            continue
        found.add(suite.name)
        for case in suite.cases:
            shaped = shape_for(kind, suite.table, case)
            schema[f"{suite.name}/{case.id}"] = shaped.json_schema is not None
    return schema, suites - found


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def profile(data: dict[str, Any]) -> Profile:
    out = Profile()
    cases = data.get("cases", [])
    schema, out.suites_unknown = _schema_suites({c["suite"] for c in cases})
    for case in cases:
        answered_under_schema = schema.get(case["key"], False)
        kept = 0
        for turn in case.get("transcript", []):
            reply = turn.get("reply")
            if not reply:
                continue
            kept += 1
            usage, timings = reply["usage"], reply["timings"]
            total_s = timings["total_ms"] / 1000
            first_s = (timings.get("ttft_ms") or timings["total_ms"]) / 1000
            uncached = usage["input_tokens"] - usage["cached_input_tokens"]
            out.prompt += usage["input_tokens"]
            out.cached += usage["cached_input_tokens"]
            out.longest_prefill = max(out.longest_prefill, uncached)
            out.prefill.add(uncached, first_s)
            forced = turn.get("tool_choice", "auto") not in FREE_CHOICES
            work = out.constrained if forced or answered_under_schema else out.free
            work.add(usage["output_tokens"], total_s - first_s)
            if work is out.free:
                context = usage["input_tokens"] + usage["output_tokens"] / 2
                out.free_context_tokens += usage["output_tokens"] * context
            out.model_s += total_s
        # The transcript is one attempt's; the other attempts that asked the model are counted.
        asked = [a for a in case.get("attempts", []) if a.get("turns")]
        others = asked[1:] if kept else asked
        out.other_attempts += len(others)
        out.other_output += sum(a.get("usage", {}).get("output_tokens", 0) for a in others)
    if data.get("started_at") and data.get("finished_at"):
        out.wall_s = _seconds(data["finished_at"]) - _seconds(data["started_at"])
    return out


def _long_prompt(llm: Any, tokens: int) -> str:
    """About `tokens` tokens of release JSON, like the tool results of the run's long turns."""
    texts = [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*.json"))]
    text = "Summarise these releases.\n"
    for chunk in texts * 20:
        if len(llm.tokenize(text.encode("utf-8"))) >= tokens:
            break
        text += chunk
    ids = llm.tokenize(text.encode("utf-8"))[:tokens]
    return str(llm.detokenize(ids).decode("utf-8", errors="ignore"))


def _prefill_rate(llm: Any, prompt: str) -> float:
    """Prompt tokens/s of one fresh chat completion that generates one token."""
    llm.reset()
    started = time.perf_counter()
    reply = llm.create_chat_completion(
        messages=[{"role": "user", "content": prompt}], max_tokens=1, temperature=0.0, seed=0
    )
    return float(reply["usage"]["prompt_tokens"]) / (time.perf_counter() - started)


def _decode_rate_at(llm: Any, prompt: str, max_tokens: int) -> float | None:
    """Free decoding's tokens/s after the first token, continuing a fresh `prompt` (so at
    its context length), with the engine's free-text repeat penalty."""
    from evalctl.server.engine import REPEAT_PENALTY_TEXT

    llm.reset()
    tokens = llm.tokenize(prompt.encode("utf-8"))
    first = last = None
    count = 0
    for _token in llm.generate(tokens, temp=0.0, repeat_penalty=REPEAT_PENALTY_TEXT):
        now = time.perf_counter()
        first = first or now
        last = now
        count += 1
        if count >= max_tokens:
            break
    return (count - 1) / (last - first) if first and last and last > first else None


def measure(
    threads: int, n_ctx: int, rounds: int, prompt_tokens: int, free_context: int
) -> dict[str, float]:
    import llama_cpp
    from bench_local import PROMPTS, SCHEMA, SCHEMA_PROMPT, _in_process_decode_rate, _llama

    from evalctl.modelfiles.manifest import resolve, verify

    model = resolve(None)
    verify(model)
    llm = _llama(llama_cpp, model.path, n_ctx, threads)
    try:
        long = _long_prompt(llm, min(prompt_tokens, n_ctx - 64))
        _prefill_rate(llm, "Hi")  # warm: first-call allocations, page cache
        at_context = _long_prompt(llm, max(16, min(free_context, n_ctx - 160)))
        rates: dict[str, list[float]] = {
            "prefill": [],
            "free": [],
            "constrained": [],
            "free_at_context": [],
        }
        for _ in range(rounds):
            rates["prefill"].append(_prefill_rate(llm, long))
            for prompt in PROMPTS:
                if rate := _in_process_decode_rate(llm, prompt, 128, None):
                    rates["free"].append(rate)
            if rate := _in_process_decode_rate(llm, SCHEMA_PROMPT, 128, SCHEMA):
                rates["constrained"].append(rate)
            if rate := _decode_rate_at(llm, at_context, 128):
                rates["free_at_context"].append(rate)
    finally:
        llm.close()
    return {k: statistics.median(v) for k, v in rates.items() if v}


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:6.1f} tok/s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--threads", type=int, default=None, help="default: the run's")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--prompt-tokens", type=int, default=None, help="default: the run's longest prefill"
    )
    args = parser.parse_args()
    path: Path = args.results / "results.json" if args.results.is_dir() else args.results
    if not path.is_file():
        print(f"no results at {path}: `make run` writes the demo's (results/demo/results.json),")
        print("or give a local run's results.json: python benchmarks/bench_run_profile.py FILE")
        return 0
    data = json.loads(path.read_text(encoding="utf-8"))
    provider = data.get("provider", {})
    if provider.get("name") != "local":
        print(f"{path} is a run of provider {provider.get('name')!r}; this profiles local runs")
        return 0
    settings = provider.get("settings", {})
    threads = args.threads or int(settings.get("threads") or 1)
    n_ctx = int(settings.get("n_ctx") or 4096)
    run = profile(data)
    load_before = os.getloadavg()[0]
    try:
        free_context = int(run.free_context_tokens / run.free.tokens) if run.free.tokens else 16
        inproc = measure(
            threads, n_ctx, args.rounds, args.prompt_tokens or run.longest_prefill, free_context
        )
    except ImportError as exc:
        print(f"llama-cpp-python is not installed ({exc}): the run's figures only")
        inproc = {}
    load_after = os.getloadavg()[0]

    generated = run.free.tokens + run.constrained.tokens
    share = run.cached / run.prompt if run.prompt else 0.0
    print(
        f"run {data.get('run_id')} ({len(data.get('cases', []))} cases, {provider.get('model')}, "
        f"{threads} thread(s)): model turns {run.prefill.turns}, wall "
        + (f"{run.wall_s:.1f} s" if run.wall_s is not None else "unknown")
    )
    print(
        f"prompt tokens {run.prompt}, from the KV cache {run.cached} ({share:.0%}); "
        f"in-process: llama-cpp-python {threads} thread(s), load avg {load_before:.2f} -> "
        f"{load_after:.2f}"
    )
    print(f"{'':28} {'tokens':>7} {'seconds':>8}  {'run (daemon)':>14}  {'in-process':>14}")
    for label, work, key in (
        ("uncached prompt (prefill)", run.prefill, "prefill"),
        ("generated, free", run.free, "free"),
        ("generated, constrained", run.constrained, "constrained"),
    ):
        print(
            f"{label:28} {work.tokens:7} {work.seconds:8.1f}  {_rate(work.rate):>14}  "
            f"{_rate(inproc.get(key)):>14}"
        )
    print(f"{'model time':28} {'':7} {run.model_s:8.1f}")
    if run.other_attempts:
        print(
            f"not in the transcripts: {run.other_attempts} more attempts (repeats, confirmation "
            f"samples, retries), {run.other_output} generated tokens, not counted above"
        )
    if run.suites_unknown:
        print(
            f"suites not under cases/ ({', '.join(sorted(run.suites_unknown))}): only forced "
            "tool calls counted as constrained there"
        )
    if {"prefill", "free"} <= inproc.keys() and run.model_s > 0:
        floor = run.prefill.tokens / inproc["prefill"] + generated / inproc["free"]
        print(
            f"floor, every token at in-process free speed "
            f"{run.prefill.tokens}/{inproc['prefill']:.0f} + {generated}/{inproc['free']:.0f} "
            f"= {floor:.1f} s"
        )
        print(f"ratio floor / model time                 {floor / run.model_s:7.2f}")
        if "constrained" in inproc:
            kept = (
                run.prefill.tokens / inproc["prefill"]
                + run.free.tokens / inproc["free"]
                + run.constrained.tokens / inproc["constrained"]
            )
            print(
                f"ratio floor (constrained at in-process constrained speed) / model time "
                f"{kept / run.model_s:7.2f}"
            )
        for label, work, key in (
            ("prefill", run.prefill, "prefill"),
            ("free decode", run.free, "free"),
            ("constrained decode", run.constrained, "constrained"),
        ):
            if work.rate and key in inproc:
                print(f"ratio run / in-process, {label:20} {work.rate / inproc[key]:7.2f}")
        if "free_at_context" in inproc:
            # Decoding at the contexts the run's free turns had (their token-weighted mean):
            # the short prompts above flatter the floor by the attention a long one costs.
            at = inproc["free_at_context"]
            print(
                f"in-process free decode at the run's mean free context "
                f"({int(run.free_context_tokens / max(1, run.free.tokens))} tokens): {at:.1f} tok/s"
            )
            if run.free.rate:
                print(f"ratio run / in-process, free decode at context {run.free.rate / at:7.2f}")
            floor_at = (
                run.prefill.tokens / inproc["prefill"]
                + run.free.tokens / at
                + run.constrained.tokens / inproc["free"]
            )
            print(
                f"floor at the run's contexts (free turns at their context, constrained at "
                f"free speed) = {floor_at:.1f} s"
            )
            print(f"ratio floor at the run's contexts / model time {floor_at / run.model_s:7.2f}")
            if run.wall_s:
                # With -j N several requests run at once: wall time can beat the floor.
                print(f"ratio floor at the run's contexts / wall {floor_at / run.wall_s:7.2f}")
        if run.wall_s:
            print(f"ratio model time / wall                  {run.model_s / run.wall_s:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
