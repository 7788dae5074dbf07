"""Threads for the local engine, measured in one run on the embedded model:

1. prompt evaluation tokens/s (llama.cpp's `n_threads_batch`) and generation tokens/s
   (`n_threads`) in-process, at each thread count: powers of two up to the CPUs this
   process may use, and the daemon's default. A prompt is a batched matrix product and a
   generated token a chain of small ones, so the two can peak at different counts (on a
   16-core Xeon a prompt-heavy suite ran faster at 2 threads than at 16, while generation
   alone was fastest at 8 to 16): this is what `threads` / `threads_batch` are chosen from;
2. the ratio of LocalProvider (gRPC daemon, its default threads) to llama-cpp-python
   in-process at exactly the counts the daemon chose, end to end on the same chat prompts
   (target >= 0.95). The daemon picks its counts when it starts, so the bench reads them
   from the daemon rather than computing a default of its own at another moment.

Each count gets its own `Llama`; counts are interleaved round by round, so load from other
processes hits them alike. The prompt is evaluated from an empty KV cache every time.

    python benchmarks/bench_threads.py [--threads 1,2,4] [--rounds 3] [--prompt-tokens 1024]
        [--gen-tokens 64] [--requests 4] [--max-tokens 128]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_local import PROMPTS as CHAT_PROMPTS
from benchmarks.bench_local import in_process_chat, provider_chat
from evalctl.config import load_settings
from evalctl.modelfiles.manifest import resolve, verify
from evalctl.providers.local import LocalProvider
from evalctl.server.threads import allowed_cpus, default_threads

# Filler for the prompt-evaluation figure: plain prose, repeated up to --prompt-tokens.
PROSE = (
    "The release notes list every asset a build produced: its file name, size, checksum and "
    "the platform it targets. A reviewer reads them to decide which download suits a machine, "
    "and a script reads them to verify what it fetched. "
)


def _counts(text: str | None, default: int) -> list[int]:
    if text:
        return sorted({int(n) for n in text.split(",")})
    cpus = len(allowed_cpus())
    powers = {2**i for i in range(cpus.bit_length()) if 2**i <= cpus}
    return sorted(powers | {cpus, default})


def _prompt_rate(llm: Any, tokens: list[int]) -> float:
    """Tokens/s evaluating `tokens` from an empty cache (n_threads_batch at work)."""
    llm.reset()
    started = time.perf_counter()
    llm.eval(tokens)
    return len(tokens) / (time.perf_counter() - started)


def _gen_rate(llm: Any, prompt: list[int], count: int) -> float:
    """Tokens/s after the first of `count` greedy tokens (n_threads at work)."""
    llm.reset()
    first = last = 0.0
    made = 0
    for _ in llm.generate(prompt, top_k=1, temp=0.0, repeat_penalty=1.0):
        now = time.perf_counter()
        first = first or now
        last = now
        made += 1
        if made >= count:
            break
    return (made - 1) / (last - first) if last > first else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", default=None, help="comma-separated counts to measure")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompt-tokens", type=int, default=1024)
    parser.add_argument("--gen-tokens", type=int, default=64)
    parser.add_argument("--requests", type=int, default=len(CHAT_PROMPTS))
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()
    default = default_threads()
    counts = _counts(args.threads, default)

    import llama_cpp

    home = Path(tempfile.mkdtemp(prefix="evb-threads-", dir="/tmp"))
    os.environ["EVALCTL_HOME"] = str(home)
    settings = load_settings(env=os.environ)
    model = resolve(None)
    sha = verify(model)
    print(
        f"model {model.name}, llama-cpp-python {llama_cpp.__version__}, cpus {os.cpu_count()} "
        f"(allowed {len(allowed_cpus())}), counts {counts}, load avg {os.getloadavg()[0]:.2f}"
    )

    def llama(threads: int, threads_batch: int | None = None) -> Any:
        return llama_cpp.Llama(
            model_path=str(model.path),
            n_ctx=max(4096, args.prompt_tokens + args.gen_tokens + 16),
            seed=0,
            verbose=False,
            n_threads=threads,
            n_threads_batch=threads_batch or threads,
        )

    # The daemon first: it picks its own counts when it starts (the busy-core rule reads the
    # machine then), and the in-process side of the ratio must run at exactly those counts,
    # not at a default this process computed at another moment.
    provider = LocalProvider(settings, model, sha, idle_timeout_s=600)
    provider_chat(provider, "Hi", 8)
    started = provider.status()
    daemon_counts = (started.n_threads, started.n_threads_batch)
    print(f"daemon's default counts: generation {daemon_counts[0]}, prompt {daemon_counts[1]}")
    counts = sorted(set(counts) | set(daemon_counts))
    llms = {n: llama(n) for n in counts}
    # The in-process side at the daemon's counts: one of the per-count models when the two
    # counts agree, else one of its own.
    apart = daemon_counts[0] != daemon_counts[1]
    same = llama(*daemon_counts) if apart else llms[daemon_counts[0]]
    text = PROSE * (args.prompt_tokens // 40 + 2)
    tokens = same.tokenize(text.encode("utf-8"), add_bos=True)[: args.prompt_tokens]
    gen_prompt = tokens[:32]
    prompts = (CHAT_PROMPTS * (args.requests // len(CHAT_PROMPTS) + 1))[: args.requests]
    prompt_rates: dict[int, list[float]] = {n: [] for n in counts}
    gen_rates: dict[int, list[float]] = {n: [] for n in counts}
    local = [0.0, 0.0]
    inproc = [0.0, 0.0]
    try:
        # Warm every configuration (first-call allocations, page cache), untimed.
        for llm in (*llms.values(), *([same] if apart else [])):
            _prompt_rate(llm, tokens[:64])
        for _ in range(args.rounds):
            for n in counts:
                prompt_rates[n].append(_prompt_rate(llms[n], tokens))
                gen_rates[n].append(_gen_rate(llms[n], gen_prompt, args.gen_tokens))
            for prompt in prompts:
                t, s, _ = provider_chat(provider, prompt, args.max_tokens)
                local[0], local[1] = local[0] + t, local[1] + s
                t, s = in_process_chat(same, prompt, args.max_tokens)
                inproc[0], inproc[1] = inproc[0] + t, inproc[1] + s
        status = provider.status()
    finally:
        provider.stop_daemon(grace_s=2)
        provider.close()
        for llm in (*llms.values(), *([same] if apart else [])):
            llm.close()
        shutil.rmtree(home, ignore_errors=True)

    print(f"threads  prompt tok/s ({len(tokens)} tokens)  generation tok/s ({args.gen_tokens})")
    best_prompt = max(counts, key=lambda n: statistics.median(prompt_rates[n]))
    best_gen = max(counts, key=lambda n: statistics.median(gen_rates[n]))
    for n in counts:
        p, g = statistics.median(prompt_rates[n]), statistics.median(gen_rates[n])
        marks = [m for m, best in (("prompt", best_prompt), ("generation", best_gen)) if n == best]
        mark = f"  <- best {' and '.join(marks)}" if marks else ""
        roles = {"generation": daemon_counts[0], "prompt": daemon_counts[1]}
        note = "".join(f"  (default {what})" for what, c in roles.items() if c == n)
        print(f"{n:7d}  {p:27.1f}  {g:24.1f}{note}{mark}")
    local_rate, inproc_rate = local[0] / local[1], inproc[0] / inproc[1]
    print(
        f"LocalProvider {local_rate:.2f} tok/s ({local[0]:.0f} tokens, daemon threads "
        f"{status.n_threads}, prompt threads {status.n_threads_batch}); in-process "
        f"{inproc_rate:.2f} tok/s (the daemon's counts: {daemon_counts[0]} and "
        f"{daemon_counts[1]})"
    )
    print(
        f"ratio LocalProvider / in-process at the daemon's threads  {local_rate / inproc_rate:.3f}"
        "  (target >= 0.95)"
    )
    print(f"load avg after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
