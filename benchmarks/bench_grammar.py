"""Constrained decoding's cost, measured in one run on the embedded model (issue 33 item 2).

Three engines on the same model and threads, interleaved request by request so that load
from other processes hits them alike: free text, a JSON schema through llama-cpp-python's
grammar-first chain (the grammar checks all 49,152 candidates every token), and the same
schema through `grammar_sampler.GrammarResampler` (the grammar checks the sampled token and
masks the vocabulary only when it rejects it). Prints each decode rate (tokens/s after the
first token, as the daemon reports), the ratios constrained / free (target >= 0.9), whether
every constrained reply parsed, and whether the two constrained engines wrote the same
greedy replies.

    python benchmarks/bench_grammar.py [--rounds 3] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import llama_cpp  # noqa: F401  (llama_cpp before grpc, see evalctl/server/engine.py)

from evalctl.chat import CompletionRequest, Message
from evalctl.modelfiles.manifest import resolve, verify
from evalctl.server.engine import Engine, EngineConfig
from evalctl.server.threads import default_threads

# Shaped like asset-triage's answers (enums and short strings) and a free-form record.
TRIAGE = {
    "type": "object",
    "properties": {
        "kind": {"type": "string", "enum": ["binary", "archive", "checksum", "signature"]},
        "os": {"type": "string", "enum": ["linux", "darwin", "windows", "unknown"]},
        "arch": {"type": "string", "enum": ["amd64", "arm64", "386", "unknown"]},
        "reason": {"type": "string"},
    },
    "required": ["kind", "os", "arch", "reason"],
}
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "city": {"type": "string"},
        "job": {"type": "string"},
        "hobbies": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "age", "city", "job", "hobbies"],
}
CASES: list[tuple[str, dict[str, Any]]] = [
    ("Classify the release asset stern_1.30.0_linux_amd64.tar.gz and explain why.", TRIAGE),
    ("Classify the release asset tflint_windows_386.zip.sig and explain why.", TRIAGE),
    ("Invent a fictional person and describe them: name, age, city, job and hobbies.", PERSON),
    ("Describe a retired sailor who now keeps bees: name, age, city, job, hobbies.", PERSON),
]


def _rate(engine: Engine, prompt: str, schema: dict[str, Any] | None, tokens: int) -> Any:
    request = CompletionRequest(
        messages=[Message.user(prompt)],
        json_schema=schema,
        max_tokens=tokens,
        temperature=0.0,
        seed=0,
    )
    response = engine.complete(request).response
    # A reply cut at max_tokens cannot parse: only finished ones count as parse failures.
    done = response.stop_reason == "end_turn"
    return response.timings.tokens_per_s, done, response.content


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    model = resolve(None)
    verify(model)
    threads = args.threads or default_threads()

    def engine(resample: bool) -> Engine:
        config = EngineConfig(
            model.path, model.name, n_threads=threads, prefix_cache=False, grammar_resample=resample
        )
        eng = Engine(config)
        eng.load()
        return eng

    resampling, grammar_first = engine(True), engine(False)
    rates: dict[str, list[float]] = {"free": [], "grammar-first": [], "resampling": []}
    replies: dict[str, list[str]] = {"grammar-first": [], "resampling": []}
    finished: dict[str, list[str]] = {"grammar-first": [], "resampling": []}
    try:
        for _ in range(args.rounds):
            for prompt, schema in CASES:
                # Free text on the resampling engine: without a schema both are the same.
                runs = [
                    ("free", resampling, None),
                    ("grammar-first", grammar_first, schema),
                    ("resampling", resampling, schema),
                ]
                for name, eng, sch in runs:
                    rate, done, content = _rate(eng, prompt, sch, args.max_tokens)
                    if rate:
                        rates[name].append(rate)
                    if name in replies:
                        replies[name].append(content)
                        if done:
                            finished[name].append(content)
    finally:
        resampling.close()
        grammar_first.close()

    free = statistics.median(rates["free"])
    print(f"embedded model, {threads} threads, {args.rounds} rounds x {len(CASES)} prompts")
    for name, values in rates.items():
        rate = statistics.median(values)
        print(f"  {name:14} {rate:7.1f} tok/s (median)   / free {rate / free:5.2f}")
    for name, texts in finished.items():
        parsed = sum(1 for text in texts if _parses(text))
        print(
            f"  {name:14} finished replies that parse as JSON: {parsed}/{len(texts)}"
            f" ({len(replies[name]) - len(texts)} cut at max_tokens)"
        )
    same = replies["grammar-first"] == replies["resampling"]
    print(f"  greedy replies identical, grammar-first vs resampling: {same}")
    first, ours = (
        statistics.median(rates[name]) / free for name in ("grammar-first", "resampling")
    )
    # run_all.py collects the line that starts with "ratio".
    print(f"ratio constrained / free decode: resampler {ours:.2f}, grammar-first {first:.2f}")


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


if __name__ == "__main__":
    main()
