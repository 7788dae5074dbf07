"""The local provider's cost, measured in one run on the embedded model:

1. generation tokens/s through LocalProvider (gRPC daemon, its default thread count) vs
   llama-cpp-python in-process at the same count (target: ratio >= 0.95), and vs the best
   in-process configuration found on this machine: every thread count from 1 to the CPUs
   this process may use, same prompts, same greedy settings. The second ratio measures the
   default's choice as well as the daemon: ggml's threads busy-wait, so a count that was
   right when the daemon started can be wrong once other work takes a core;
2. cold start, spawn -> ready (health SERVING and model loaded) (target: <= 2 s);
3. schema-constrained vs unconstrained decode tokens/s on the same prompt, through the
   daemon and in-process (about 0.6 is what llama-cpp-python's grammar costs here).

The prompts share no prefix beyond the chat template's few tokens, so the daemon's prefix
reuse barely helps it; the in-process side calls `reset()`. All configurations are
interleaved prompt by prompt so that load from other processes hits them alike.

    python benchmarks/bench_local.py [--rounds 2] [--max-tokens 128] [--threads N]
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

from evalctl.chat import CompletionRequest, Message
from evalctl.config import load_settings
from evalctl.lifecycle.manager import DaemonManager, DaemonSpec
from evalctl.modelfiles.manifest import resolve, verify
from evalctl.providers.local import LocalProvider
from evalctl.server.engine import REPEAT_PENALTY_GRAMMAR, REPEAT_PENALTY_TEXT
from evalctl.server.threads import allowed_cpus, default_threads

PROMPTS = [
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Explain how a bicycle gear system works, step by step.",
    "List ten ideas for a weekend trip and describe each in a sentence.",
    "Describe the water cycle to a ten-year-old.",
]
SCHEMA_PROMPT = "Invent a fictional person and describe them: name, age, city, job and hobbies."
SCHEMA = {
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
TIMEOUT_S = 600.0


def in_process_chat(
    llm: Any, prompt: str, max_tokens: int, schema: dict[str, Any] | None = None
) -> Any:
    """(tokens, wall seconds) of one plain, non-streamed chat completion: the fastest way to
    use llama-cpp-python, and exact token counts from its usage."""
    llm.reset()
    started = time.perf_counter()
    reply = llm.create_chat_completion(
        messages=[{"role": "user", "content": prompt}],
        max_tokens=max_tokens,
        temperature=0.0,
        seed=0,
        repeat_penalty=REPEAT_PENALTY_GRAMMAR if schema else REPEAT_PENALTY_TEXT,
        **_format(schema),
    )
    return reply["usage"]["completion_tokens"], time.perf_counter() - started


def _in_process_decode_rate(
    llm: Any, prompt: str, max_tokens: int, schema: dict[str, Any] | None
) -> float | None:
    """Tokens/s after the first token, from a streamed completion (as the daemon reports)."""
    llm.reset()
    first = last = None
    tokens = 0
    for chunk in llm.create_chat_completion(
        messages=[{"role": "user", "content": prompt}],
        max_tokens=max_tokens,
        temperature=0.0,
        seed=0,
        repeat_penalty=REPEAT_PENALTY_GRAMMAR if schema else REPEAT_PENALTY_TEXT,
        stream=True,
        **_format(schema),
    ):
        if chunk["choices"][0]["delta"].get("content"):
            now = time.perf_counter()
            first = first or now
            last = now
            tokens += 1
    return (tokens - 1) / (last - first) if first and last and last > first else None


def _format(schema: dict[str, Any] | None) -> dict[str, Any]:
    if schema is None:
        return {}
    return {"response_format": {"type": "json_object", "schema": schema}}


def provider_chat(provider: LocalProvider, prompt: str, max_tokens: int, schema: Any = None) -> Any:
    """(tokens, wall seconds, decode tokens/s) through the provider, gRPC included."""
    request = CompletionRequest(
        messages=[Message.user(prompt)], max_tokens=max_tokens, json_schema=schema
    )
    started = time.perf_counter()
    response = provider.complete(request, timeout=TIMEOUT_S)
    wall = time.perf_counter() - started
    return response.usage.output_tokens, wall, response.timings.tokens_per_s


def _cold_start(settings: Any, spec: DaemonSpec, runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        manager = DaemonManager(settings, spec)
        started = time.perf_counter()
        manager.ensure_running()
        samples.append(time.perf_counter() - started)
        manager.stop(grace_s=2)
        manager.close()
    return samples


def _llama(llama_cpp: Any, model_path: Path, n_ctx: int, threads: int) -> Any:
    return llama_cpp.Llama(
        model_path=str(model_path),
        n_ctx=n_ctx,
        seed=0,
        verbose=False,
        n_threads=threads,
        n_threads_batch=threads,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument(
        "--threads", type=int, default=None, help="the daemon's threads (default: its own)"
    )
    parser.add_argument("--cold-runs", type=int, default=3)
    args = parser.parse_args()
    daemon_threads = args.threads or default_threads()
    candidates = sorted(set(range(1, len(allowed_cpus()) + 1)) | {daemon_threads})

    import llama_cpp

    home = Path(tempfile.mkdtemp(prefix="evb-", dir="/tmp"))
    os.environ["EVALCTL_HOME"] = str(home)
    settings = load_settings(env=os.environ)
    model = resolve(None)
    sha = verify(model)
    spec = DaemonSpec(model.path, model.name, sha, n_threads=args.threads, idle_timeout_s=600)
    print(
        f"model {model.name} ({model.path.stat().st_size / 2**20:.0f} MiB), "
        f"llama-cpp-python {llama_cpp.__version__}, cpus {os.cpu_count()} "
        f"(allowed {len(allowed_cpus())}), daemon threads {daemon_threads}, in-process "
        f"thread counts tried {candidates}, load avg {os.getloadavg()[0]:.2f}"
    )

    cold = _cold_start(settings, spec, args.cold_runs)

    provider = LocalProvider(settings, model, sha, n_threads=args.threads, idle_timeout_s=600)
    llms = {n: _llama(llama_cpp, model.path, spec.n_ctx, n) for n in candidates}
    try:
        # Warm every configuration (first-call allocations, page cache), untimed.
        provider_chat(provider, "Hi", 8, None)
        # The daemon picks its count when it starts (evalctl.server.threads): read it back,
        # so the ratio at "the default threads" compares like with like.
        daemon_threads = provider.status().n_threads or daemon_threads
        for llm in llms.values():
            in_process_chat(llm, "Hi", 8, None)
        local_tok = local_s = 0.0
        inproc = {n: [0.0, 0.0] for n in llms}
        for _ in range(args.rounds):
            for prompt in PROMPTS:
                t, s, _ = provider_chat(provider, prompt, args.max_tokens, None)
                local_tok, local_s = local_tok + t, local_s + s
                for n, llm in llms.items():
                    t, s = in_process_chat(llm, prompt, args.max_tokens, None)
                    inproc[n][0] += t
                    inproc[n][1] += s
        rates = {n: tok / secs for n, (tok, secs) in inproc.items()}
        best = max(rates, key=lambda n: rates[n])
        llm = llms[best]
        schema_rates: dict[str, list[float]] = {k: [] for k in ("dc", "du", "ic", "iu")}
        for _ in range(args.rounds):
            for key, fn, schema in (
                ("dc", "daemon", SCHEMA),
                ("du", "daemon", None),
                ("ic", "inproc", SCHEMA),
                ("iu", "inproc", None),
            ):
                if fn == "daemon":
                    _, _, rate = provider_chat(provider, SCHEMA_PROMPT, args.max_tokens, schema)
                else:
                    rate = _in_process_decode_rate(llm, SCHEMA_PROMPT, args.max_tokens, schema)
                if rate:
                    schema_rates[key].append(rate)
    finally:
        provider.stop_daemon(grace_s=2)
        provider.close()
        for each in llms.values():
            each.close()
        shutil.rmtree(home, ignore_errors=True)

    local_rate = local_tok / local_s
    med = {k: statistics.median(v) if v else float("nan") for k, v in schema_rates.items()}
    for n, rate in rates.items():
        mark = "  <- best" if n == best else ""
        print(f"generation in-process, {n} thread(s) {rate:7.2f} tok/s{mark}")
    print(
        f"generation through LocalProvider  {local_rate:7.2f} tok/s  ({local_tok:.0f} tokens, "
        f"{daemon_threads} threads)"
    )
    same = rates.get(daemon_threads)
    if same is not None:
        print(
            f"ratio LocalProvider / in-process at the daemon's {daemon_threads} thread(s)  "
            f"{local_rate / same:7.3f}  (target >= 0.95)"
        )
    print(f"ratio LocalProvider / best in-process  {local_rate / rates[best]:7.3f}")
    print(
        f"cold start spawn -> ready         {statistics.median(cold):7.2f} s median of "
        f"{len(cold)} ({', '.join(f'{c:.2f}' for c in cold)})  (target <= 2 s)"
    )
    print(f"decode, schema vs free, daemon    {med['dc']:7.2f} / {med['du']:.2f} tok/s")
    print(f"decode, schema vs free, in-proc   {med['ic']:7.2f} / {med['iu']:.2f} tok/s")
    print(f"ratio constrained / free, daemon  {med['dc'] / med['du']:7.3f}")
    print(f"ratio constrained / free, in-proc {med['ic'] / med['iu']:7.3f}  (llama-cpp-python)")
    print(f"load avg after                    {os.getloadavg()[0]:7.2f}")


if __name__ == "__main__":
    main()
