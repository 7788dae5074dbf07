"""Cases decoded together, measured in one run on the embedded model (issue 33 item 4).

The same requests (a shared system prompt of about `--system-tokens` tokens, as a suite's
cases share theirs, and one question each, greedy, `--max-tokens` free tokens) served three
ways, on the cores this process may use and other work leaves free (`--threads` to fix the
count; on a busy machine both engines get one thread a slot and the figures mean little):

- one slot: the engine as `-j 1` runs it, one request at a time on every thread;
- P slots (`--parallel`, default 2): the engine as `-j P` runs it, P requests at once, each
  on a llama.cpp context of its own with cores/P threads (evalctl.server.slots);
- one context with P sequences (`n_seq_max`), llama.cpp's batched decoding as its server's
  parallel slots do it: every step decodes one token of each sequence in one batch.

Prints each one's wall time and tokens per second (prompt and generated tokens over the
wall time), the ratios against one slot, and whether the P slots wrote the same replies as
one slot (they should: a context's logits do not depend on its thread count).

    python benchmarks/bench_parallel.py [--requests 8] [--parallel 2] [--max-tokens 48]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import llama_cpp  # (llama_cpp before grpc, see evalctl/server/engine.py)
import numpy as np

from evalctl.chat import CompletionRequest, Message
from evalctl.modelfiles.manifest import resolve, verify
from evalctl.server.engine import Engine, EngineConfig
from evalctl.server.threads import default_threads

QUESTIONS = [
    "Which red wine would you pair with a grilled steak, and why?",
    "Suggest a white wine for oysters.",
    "What is a good dessert wine with honey notes?",
    "Name a dry rose for a summer picnic.",
    "Which sparkling wine suits a birthday toast?",
    "Recommend a light red for salmon.",
    "What wine goes with spicy Thai food?",
    "Pick a wine for a mushroom risotto.",
    "Which wine would you bring to a barbecue?",
    "Suggest an inexpensive Chianti alternative.",
]
SYSTEM_LINE = (
    "You are a sommelier for a wine shop. Answer briefly, name one wine, its grape and region, "
    "and say in one sentence why it fits. Never invent prices. "
)


def system_prompt(tokens: int) -> str:
    # About 30 tokens a line on SmolLM2's tokenizer.
    return SYSTEM_LINE * max(1, tokens // 30)


def requests(n: int, system: str, max_tokens: int) -> list[CompletionRequest]:
    return [
        CompletionRequest(
            messages=[Message.system(system), Message.user(QUESTIONS[i % len(QUESTIONS)])],
            max_tokens=max_tokens,
            temperature=0.0,
            seed=0,
        )
        for i in range(n)
    ]


def decode_rate(replies: list[Any]) -> float:
    """Generated tokens per second after each reply's first token, summed over replies."""
    tokens = sum(max(0, r.usage.output_tokens - 1) for r in replies)
    seconds = sum((r.timings.total_ms - (r.timings.ttft_ms or 0)) / 1000 for r in replies)
    return tokens / seconds if seconds > 0 else 0.0


def serve(engine: Engine, batch: list[CompletionRequest], workers: int) -> tuple[float, list[Any]]:
    """Wall seconds to serve `batch` with `workers` callers, and the responses in order."""
    out: list[Any] = [None] * len(batch)
    todo = list(enumerate(batch))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                if not todo:
                    return
                index, request = todo.pop(0)
            out[index] = engine.complete(request).response

    started = time.perf_counter()
    threads = [threading.Thread(target=work) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started, out


def engine_for(model: Any, parallel: int, threads: int) -> Engine:
    engine = Engine(
        EngineConfig(
            model_path=model.path,
            model_name=model.name,
            n_threads=max(1, threads // parallel),
            parallel=parallel,
        )
    )
    engine.load()
    return engine


def batched_sequences(
    model: Any, engine: Engine, batch: list[CompletionRequest], parallel: int, threads: int
) -> tuple[float, int]:
    """One context, `parallel` sequences decoded in one batch per step (greedy): the seconds
    spent decoding after the prompts (evaluated one sequence at a time, uncached) and the
    tokens generated. Prompts are rendered and tokenized as the engine does."""
    prompts = [engine.render_prompt(r).encode() for r in batch]
    llm = llama_cpp.Llama(
        model_path=str(model.path), n_ctx=16, vocab_only=True, verbose=False
    )  # a tokenizer only
    token_lists = [llm.tokenize(p, add_bos=False, special=True) for p in prompts]
    n_ctx = 4096 * parallel
    params = llama_cpp.llama_context_default_params()
    params.n_ctx = n_ctx
    params.n_batch = 512
    params.n_ubatch = 512
    params.n_seq_max = parallel
    params.n_threads = threads
    params.n_threads_batch = threads
    params.kv_unified = False
    mparams = llama_cpp.llama_model_default_params()
    lmodel = llama_cpp.llama_model_load_from_file(str(model.path).encode(), mparams)
    ctx = llama_cpp.llama_init_from_model(lmodel, params)
    vocab = llama_cpp.llama_model_get_vocab(lmodel)
    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
    cbatch = llama_cpp.llama_batch_init(512, 0, parallel)
    max_tokens = batch[0].max_tokens

    def add(token: int, pos: int, seq: int, logits: bool) -> None:
        i = cbatch.n_tokens
        cbatch.token[i], cbatch.pos[i], cbatch.n_seq_id[i] = token, pos, 1
        cbatch.seq_id[i][0], cbatch.logits[i] = seq, logits
        cbatch.n_tokens += 1

    def argmax(index: int) -> int:
        row = llama_cpp.llama_get_logits_ith(ctx, index)
        return int(np.ctypeslib.as_array(row, shape=(n_vocab,)).argmax())

    generated = 0
    decoding = 0.0
    for group in range(0, len(token_lists), parallel):
        seqs = token_lists[group : group + parallel]
        memory = llama_cpp.llama_get_memory(ctx)
        llama_cpp.llama_memory_clear(memory, True)
        last: list[int] = []
        positions: list[int] = []
        for seq, tokens in enumerate(seqs):
            for start in range(0, len(tokens), 512):
                cbatch.n_tokens = 0
                chunk = tokens[start : start + 512]
                for j, token in enumerate(chunk):
                    add(token, start + j, seq, j == len(chunk) - 1)
                if llama_cpp.llama_decode(ctx, cbatch) != 0:
                    raise RuntimeError("llama_decode failed")
            last.append(argmax(cbatch.n_tokens - 1))
            positions.append(len(tokens))
        live = list(range(len(seqs)))
        steps = 0
        step_start = time.perf_counter()
        while live and steps < max_tokens:
            cbatch.n_tokens = 0
            for seq in live:
                add(last[seq], positions[seq], seq, True)
                positions[seq] += 1
            if llama_cpp.llama_decode(ctx, cbatch) != 0:
                raise RuntimeError("llama_decode failed")
            still = []
            for row, seq in enumerate(live):
                generated += 1
                last[seq] = argmax(row)
                if not llama_cpp.llama_vocab_is_eog(vocab, last[seq]):
                    still.append(seq)
            live = still
            steps += 1
        decoding += time.perf_counter() - step_start
    llama_cpp.llama_batch_free(cbatch)
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(lmodel)
    llm.close()
    return decoding, generated


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--system-tokens", type=int, default=900)
    parser.add_argument("--threads", type=int, default=None, help="default: the cores free now")
    args = parser.parse_args()
    threads = args.threads or default_threads()
    parallel = args.parallel
    model = resolve(None)
    verify(model)
    batch = requests(args.requests, system_prompt(args.system_tokens), args.max_tokens)

    one = engine_for(model, 1, threads)
    wall_one, replies_one = serve(one, batch, 1)
    prompt_tokens = sum(r.usage.input_tokens - r.usage.cached_input_tokens for r in replies_one)
    out_one = sum(r.usage.output_tokens for r in replies_one)
    several = engine_for(model, parallel, threads)
    wall_p, replies_p = serve(several, batch, parallel)
    prompt_p = sum(r.usage.input_tokens - r.usage.cached_input_tokens for r in replies_p)
    out_p = sum(r.usage.output_tokens for r in replies_p)
    same = sum(a.content == b.content for a, b in zip(replies_one, replies_p, strict=True))
    decode_seq, out_seq = batched_sequences(model, one, batch, parallel, threads)
    several.close()
    one.close()

    print(
        f"{len(batch)} requests, {args.system_tokens}-token system prompt, "
        f"max {args.max_tokens} tokens, {threads} thread(s), parallel {parallel}"
    )
    # Decode rates: each slot's own (what one request sees), times the slots for what the
    # engine generates together; the batched context's is its whole.
    rate_one = decode_rate(replies_one)
    rate_p = decode_rate(replies_p) * parallel
    rate_seq = out_seq / decode_seq if decode_seq > 0 else 0.0
    print(f"{'':34}{'wall s':>8}{'uncached prompt':>17}{'generated':>11}{'decode tok/s':>14}")
    print(f"{'one slot, -j 1':34}{wall_one:8.1f}{prompt_tokens:17}{out_one:11}{rate_one:14.1f}")
    print(
        f"{f'{parallel} slots, -j {parallel}':34}{wall_p:8.1f}{prompt_p:17}{out_p:11}{rate_p:14.1f}"
    )
    print(f"{f'one context, {parallel} sequences':34}{'':8}{'':17}{out_seq:11}{rate_seq:14.1f}")
    print(f"same replies, {parallel} slots vs one: {same}/{len(batch)}")
    print(f"ratio {parallel} slots / one slot, requests per second  {wall_one / wall_p:.2f}")
    print(f"ratio {parallel} slots / one slot, decode tok/s together   {rate_p / rate_one:.2f}")
    print(
        f"ratio one context of {parallel} sequences / one slot, decode tok/s  "
        f"{rate_seq / rate_one:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
