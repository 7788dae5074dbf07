"""One llama.cpp model served on one or more slots, each serving one request at a time.

A `Llama` instance is not thread-safe (concurrent use ended in GGML_ASSERT and SIGSEGV),
so every request holds a slot (evalctl.server.slots) from prompt evaluation to its last
token, streamed or not: one context with its own KV cache. A slot's llama.cpp calls (load,
generation, embeddings) all run on one thread of its own (evalctl.server.native_thread):
called from many threads, llama.cpp's OpenMP workers stopped spinning and generation lost a
third of its speed. `parallel` slots serve that many requests at once, each on
`threads // parallel` threads by default.
Generation runs token by token through `Llama.generate`, which lets the engine count
tokens exactly, stop on a deadline, a cancelled RPC or a degenerate loop between two
tokens, and stream deltas without re-detokenizing the whole reply at every step.

Prefix reuse: the KV cache is kept between requests, and `Llama.generate` evaluates only
the tokens after the longest prefix the new prompt shares with what the cache holds. The
cases of a suite share their system prompt and tool list (~1.5k tokens for release-assets),
so each request after the first pays for its own suffix only. docs/architecture.md records
why that keeps seeded output identical to a cold cache on this backend.
"""

from __future__ import annotations

import codecs
import functools
import json
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evalctl.chat import (
    CompletionRequest,
    CompletionResponse,
    Message,
    StopReason,
    Timings,
    ToolCall,
    Usage,
)
from evalctl.server import hardware, toolcalls
from evalctl.server.embedding import (
    EmbeddingContext,
    EmbeddingModelRef,
    EmbedResult,
    EmbedTimeoutError,
)
from evalctl.server.native_thread import NativeThread
from evalctl.server.prompt import (
    CHATML_TEMPLATE,
    BadRequestError,
    Plan,
    PromptBuilder,
    call_from_json,
)
from evalctl.server.repetition import RepetitionDetector
from evalctl.server.slots import Slot, SlotPool
from evalctl.server.speed import SpeedMeter
from evalctl.server.threads import default_threads

# Sampling: top-k and min-p are llama-cpp-python's chat defaults; top_p, the temperature and
# the seed come with each request. At temperature 0 llama.cpp samples greedily and none of
# them changes anything. A mild repeat penalty keeps a small model out of loops in free
# text; under a grammar it would only push the model off the JSON it must write.
TOP_K, MIN_P = 40, 0.05
REPEAT_PENALTY_TEXT = 1.1
REPEAT_PENALTY_GRAMMAR = 1.0
GRAMMAR_CACHE_SIZE = 32
# The warm-up request at load, which gives the first speed figures (evalctl.server.speed)
# before any client waits on them: a few tokens, so it costs a fraction of a second.
WARM_UP_PROMPT = (
    "Here is a short list of fruit: apple, banana, cherry, date, elderberry, fig, grape. "
    "Name the third one."
)
WARM_UP_TOKENS = 8


@dataclass(frozen=True)
class EngineConfig:
    model_path: Path
    model_name: str
    # llama-cpp-python's default is 512, far too small for tool conversations.
    n_ctx: int = 4096
    # Per slot. None: default_threads() (the physical cores this process may use) shared
    # out among the slots, at least one each. Tests on busy machines pass 1.
    n_threads: int | None = None
    # Prompt evaluation threads (n_threads_batch); None: the same count as generation.
    n_threads_batch: int | None = None
    n_batch: int = 512
    # Layers to offload to a GPU: -1 every one, 0 none (a CPU-only build offloads none
    # whatever this says; `gpu_layers` reports what it really did).
    n_gpu_layers: int = 0
    # Keep the KV cache between requests and evaluate only what follows the shared prefix.
    prefix_cache: bool = True
    # Constrained decoding samples freely and asks the grammar about that token, masking the
    # whole vocabulary only when it is rejected (grammar_sampler.py): the same greedy tokens.
    # False: llama-cpp-python's grammar-first chain (benchmarks/bench_grammar.py compares).
    grammar_resample: bool = True
    # Requests served at once, each on a context of its own (evalctl.server.slots).
    parallel: int = 1


class ContextOverflowError(ValueError):
    def __init__(self, prompt_tokens: int, n_ctx: int, max_tokens: int):
        self.prompt_tokens = prompt_tokens
        self.n_ctx = n_ctx
        self.max_tokens = max_tokens
        super().__init__(
            f"prompt is {prompt_tokens} tokens but the context window is {n_ctx} tokens "
            f"(requested max_tokens {max_tokens}); shorten the conversation"
        )


@dataclass
class EngineResult:
    response: CompletionResponse
    prompt: str
    prompt_tokens: int
    queue_ms: float


DeltaSink = Callable[[str], None]


class Engine:
    def __init__(self, config: EngineConfig):
        if config.parallel < 1:
            raise ValueError(f"parallel must be 1 or more, not {config.parallel}")
        self.config = config
        self._pool = SlotPool(
            [
                Slot(i, NativeThread(f"llama{i}-{config.model_name}"[:15]))
                for i in range(config.parallel)
            ]
        )
        self._builder: PromptBuilder | None = None
        self._grammars: OrderedDict[str, Any] = OrderedDict()
        self._grammar_lock = threading.Lock()
        self._is_eog: Callable[[int], bool] = lambda _token: False
        self.speed = SpeedMeter()
        # Opened on the first embed() (evalctl.server.embedding), under `_embed_lock`: one
        # embedding context, used by one slot's request at a time.
        self._embedder: EmbeddingContext | None = None
        self._embed_lock = threading.Lock()

    @property
    def _llm(self) -> Any:
        """The first slot's context: the model's facts (context size, threads, layers)."""
        return self._pool.slots[0].llm

    @property
    def parallel(self) -> int:
        return len(self._pool.slots)

    @property
    def embedding_model(self) -> EmbeddingModelRef | None:
        """The embedding model an earlier embed() loaded, if any."""
        return self._embedder.loaded if self._embedder is not None else None

    @property
    def loaded(self) -> bool:
        return self._llm is not None

    @property
    def n_ctx(self) -> int:
        return int(self._llm.n_ctx()) if self._llm is not None else self.config.n_ctx

    @property
    def gpu_layers(self) -> int:
        """Layers really offloaded to a GPU (0 before the model is loaded)."""
        if self._llm is None:
            return 0
        import llama_cpp

        n_layer = int(llama_cpp.llama_model_n_layer(self._llm.model))
        return hardware.offloaded_layers(
            self.config.n_gpu_layers, n_layer, hardware.gpu_offload_supported()
        )

    @property
    def n_threads(self) -> int:
        return int(self._llm.n_threads) if self._llm is not None else self.config.n_threads or 0

    @property
    def n_threads_batch(self) -> int:
        if self._llm is not None:
            return int(self._llm.n_threads_batch)
        return self.config.n_threads_batch or self.config.n_threads or 0

    def load(self) -> None:
        for slot in self._pool.slots:
            slot.native.run(functools.partial(self._load, slot))

    def _load(self, slot: Slot) -> None:
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        kwargs: dict[str, Any] = {
            "model_path": str(self.config.model_path),
            "n_ctx": self.config.n_ctx,
            "n_batch": self.config.n_batch,
            "n_gpu_layers": self.config.n_gpu_layers,
            "seed": 0,
            "verbose": False,
        }
        # Generation defaults to the physical cores this process may use, less busy ones
        # (evalctl.server.threads); an explicit count overrides it, e.g. 1 on a machine
        # other work keeps busy, where ggml's busy-waiting threads stall each other. Prompt
        # evaluation is a batched matrix product that scales differently with cores (on a
        # 16-core Xeon a prompt-heavy suite ran faster on 2 threads than on 16), so it has a
        # count of its own (evalctl.server.threads).
        threads = self.config.n_threads or max(1, default_threads() // self.config.parallel)
        kwargs["n_threads"] = threads
        kwargs["n_threads_batch"] = self.config.n_threads_batch or threads
        llm = llama_cpp.Llama(**kwargs)
        slot.llm = llm
        if slot.index > 0:
            # The first slot's prompt builder and end-of-generation test serve them all.
            return
        template = llm.metadata.get("tokenizer.chat_template") or CHATML_TEMPLATE
        eos_id, bos_id = llm.token_eos(), llm.token_bos()
        formatter = Jinja2ChatFormatter(
            template,
            eos_token=llm._model.token_get_text(eos_id) if eos_id != -1 else "",
            bos_token=llm._model.token_get_text(bos_id) if bos_id != -1 else "",
        )

        def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
            # Plain dicts in the OpenAI shape; llama_cpp's TypedDicts add nothing here.
            return str(formatter(messages=messages, tools=tools).prompt)  # type: ignore[arg-type]

        vocab = llm._model.vocab
        # The same end-of-generation test llama-cpp-python applies (EOS, EOT, <|im_end|>...).
        self._is_eog = lambda token: bool(llama_cpp.llama_vocab_is_eog(vocab, token))
        self._builder = PromptBuilder(template, render)

    def warm_up(self) -> None:
        """One short greedy request, so the speed meter has figures before the first client
        request. The cache is then forgotten: the first client request starts cold, as it
        would have without a warm-up (its usage says so)."""
        self.complete(
            CompletionRequest(
                messages=[Message.user(WARM_UP_PROMPT)],
                max_tokens=WARM_UP_TOKENS,
                tag="warm-up",
            )
        )
        self.reset_cache()

    def close(self, timeout: float = -1) -> bool:
        """Free the model once no request holds a slot; False if one still did after
        `timeout` (negative: wait)."""
        if not self._pool.acquire_all(None if timeout < 0 else timeout):
            return False
        try:
            for slot in self._pool.slots:
                # A second close has nothing left to free (and the threads have stopped).
                if slot.llm is not None or (slot.index == 0 and self._embedder is not None):
                    slot.native.run(functools.partial(self._free, slot))
        finally:
            self._pool.release_all()
        for slot in self._pool.slots:
            slot.native.stop()
        return True

    def _free(self, slot: Slot) -> None:
        if slot.llm is not None:
            slot.llm.close()
            slot.llm = None
            slot.held = ""
        if slot.index == 0 and self._embedder is not None:
            self._embedder.close()
            self._embedder = None

    def reset_cache(self) -> None:
        """Forget every slot's KV cache, so the next request starts cold (tests and
        benchmarks)."""
        self._pool.acquire_all()
        try:
            for slot in self._pool.slots:
                if slot.llm is not None:
                    slot.native.run(slot.llm.reset)
                slot.held = ""
        finally:
            self._pool.release_all()

    def plan(self, request: CompletionRequest) -> Plan:
        if self._builder is None:
            raise RuntimeError("the model is not loaded")
        return self._builder.build(request)

    def render_prompt(self, request: CompletionRequest) -> str:
        """The exact text the model would continue for `request` (tests and debugging)."""
        return self.plan(request).prompt

    def complete(
        self,
        request: CompletionRequest,
        *,
        deadline: float | None = None,
        cancel: threading.Event | None = None,
        on_delta: DeltaSink | None = None,
    ) -> EngineResult:
        """Generate a reply. `deadline` is a `time.monotonic()` instant: when it passes (or
        `cancel` is set) generation stops between two tokens with stop_reason "timeout".
        Raises BadRequestError or ContextOverflowError for requests that cannot be served."""
        arrived = time.monotonic()
        plan = self.plan(request)
        wait = None if deadline is None else max(0.0, deadline - arrived)
        slot = self._pool.acquire(plan.prompt, wait)
        if slot is None:
            # Queued behind other requests for the whole budget: nothing was generated.
            return self._result(plan, "", [], "timeout", Usage(), arrived, None, None, arrived)
        try:
            return slot.native.run(
                lambda: self._generate(slot, request, plan, arrived, deadline, cancel, on_delta)
            )
        finally:
            self._pool.release(slot)

    def embed(
        self,
        model: EmbeddingModelRef,
        texts: Sequence[str],
        *,
        deadline: float | None = None,
        cancel: threading.Event | None = None,
    ) -> EmbedResult:
        """One L2-normalised vector per text from `model`, loaded on first use. Holds the
        model lock like a completion: the two contexts share the cores, and llama.cpp's
        threads stall each other when two decodes run at once. Raises BadRequestError or
        EmbedTimeoutError (evalctl.server.embedding)."""
        arrived = time.monotonic()
        wait = None if deadline is None else max(0.0, deadline - arrived)
        slot = self._pool.acquire("", wait)
        if slot is None:
            raise EmbedTimeoutError("queued behind other requests for the whole time limit")
        try:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self._embed_lock.acquire(timeout=-1 if left is None else left):
                raise EmbedTimeoutError("queued behind other requests for the whole time limit")
            try:
                if self._llm is None:
                    raise RuntimeError("the model is not loaded")
                if self._embedder is None:
                    self._embedder = EmbeddingContext(
                        n_threads=self.n_threads,
                        n_threads_batch=self.n_threads_batch,
                        n_gpu_layers=self.config.n_gpu_layers,
                    )
                embedder = self._embedder
                result = slot.native.run(
                    lambda: embedder.embed(model, texts, deadline=deadline, cancel=cancel)
                )
            finally:
                self._embed_lock.release()
            return replace(result, queue_ms=(time.monotonic() - arrived) * 1000 - result.run_ms)
        finally:
            self._pool.release(slot)

    def _generate(
        self,
        slot: Slot,
        request: CompletionRequest,
        plan: Plan,
        arrived: float,
        deadline: float | None,
        cancel: threading.Event | None,
        on_delta: DeltaSink | None,
    ) -> EngineResult:
        llm = slot.llm
        if llm is None:
            raise RuntimeError("the model is not loaded")
        started = time.monotonic()
        tokens = llm.tokenize(plan.prompt.encode("utf-8"), add_bos=False, special=True)
        n_ctx = self.n_ctx
        if len(tokens) >= n_ctx:
            raise ContextOverflowError(len(tokens), n_ctx, request.max_tokens)
        budget = min(request.max_tokens, n_ctx - len(tokens))
        grammar = self._grammar(plan.schema) if plan.schema is not None else None
        llm.set_seed(request.seed if request.seed is not None else random.randrange(2**31))
        cached = _shared_prefix(llm, tokens) if self.config.prefix_cache else 0
        if cached and cached == len(tokens) - 1:
            # The whole prompt is cached (a repeat, another sample of the same case): llama.cpp
            # would re-evaluate its last token alone, a batch of one whose logits come from
            # another kernel than the cold batch's and differ in the last bits, and a seeded
            # sample then goes another way (measured: same seed, two texts). Evaluate it cold.
            cached = 0
        if not cached:
            llm.reset()
        # What this slot's cache holds from here on, for the next request's choice of slot.
        slot.held = plan.prompt
        loop = None if request.allow_repetition else RepetitionDetector()
        resample = grammar is not None and self.config.grammar_resample
        # Imported here: it needs numpy, which only the `local` extra brings.
        from evalctl.server import grammar_sampler

        if resample:
            grammar_sampler.install(llm, grammar)

        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        pieces: list[str] = []
        n_out = 0
        first_at: float | None = None
        last_at: float | None = None
        finish: StopReason = "max_tokens"
        tail = ""
        stream = llm.generate(
            tokens,
            top_k=TOP_K,
            top_p=request.top_p,
            min_p=MIN_P,
            temp=max(request.temperature, 0.0),
            repeat_penalty=REPEAT_PENALTY_GRAMMAR if grammar else REPEAT_PENALTY_TEXT,
            # The resampler asks the grammar about the sampled token only (grammar_sampler).
            grammar=None if resample else grammar,
        )
        try:
            for token in stream:
                now = time.monotonic()
                if self._is_eog(int(token)):
                    finish = "end_turn"
                    break
                n_out += 1
                first_at = first_at or now
                last_at = now
                piece = decoder.decode(llm.detokenize([token]))
                if piece:
                    pieces.append(piece)
                    if on_delta is not None:
                        on_delta(piece)
                    if plan.stop:
                        tail = (tail + piece)[-64:]
                        if any(s in tail for s in plan.stop):
                            finish = "end_turn"
                            break
                if loop is not None and loop.push(int(token)):
                    # A degenerate loop would only run on to max_tokens: end it here.
                    finish = "repetition"
                    break
                if n_out >= budget:
                    finish = "max_tokens"
                    break
                if (cancel is not None and cancel.is_set()) or (
                    deadline is not None and now >= deadline
                ):
                    finish = "timeout"
                    break
        finally:
            stream.close()
            _free_sampler(llm)
            grammar_sampler.uninstall(llm)
        rest = decoder.decode(b"", final=True)
        if rest:
            pieces.append(rest)
            if on_delta is not None:
                on_delta(rest)
        usage = Usage(input_tokens=len(tokens), output_tokens=n_out, cached_input_tokens=cached)
        if first_at is not None and last_at is not None:
            self.speed.add(
                generated=n_out - 1,
                gen_seconds=last_at - first_at,
                prompt_tokens=len(tokens) - cached,
                # Up to the first token: prompt evaluation plus one sampling step.
                prompt_seconds=first_at - started,
            )
        text = "".join(pieces)
        slot.held = plan.prompt + text
        content, calls = self._interpret(plan, text)
        stop: StopReason = finish
        if calls and finish in ("end_turn", "max_tokens"):
            stop = "tool_use"
        return self._result(plan, content, calls, stop, usage, arrived, first_at, last_at, started)

    def _interpret(self, plan: Plan, text: str) -> tuple[str, list[ToolCall]]:
        if plan.mode == "forced_call":
            call = _parse_forced(text, plan)
            if call is None:
                return text, []
            return "", [ToolCall(id=f"call_{plan.first_call_id}", name=call[0], arguments=call[1])]
        if plan.mode == "json":
            if plan.tools:
                call = call_from_json(text.strip(), plan.tools)
                if call is not None:
                    tc = ToolCall(id=f"call_{plan.first_call_id}", name=call[0], arguments=call[1])
                    return "", [tc]
            return text.strip(), []
        if plan.tools:
            content, calls = toolcalls.parse_tool_calls(
                text, plan.tools, first_id=plan.first_call_id
            )
            return content, calls
        return text.strip(), []

    def _result(
        self,
        plan: Plan,
        content: str,
        calls: list[ToolCall],
        stop: StopReason,
        usage: Usage,
        arrived: float,
        first_at: float | None,
        last_at: float | None,
        started: float,
    ) -> EngineResult:
        end = time.monotonic()
        rate = None
        if first_at is not None and last_at is not None and usage.output_tokens > 1:
            span = last_at - first_at
            rate = (usage.output_tokens - 1) / span if span > 0 else None
        timings = Timings(
            ttft_ms=(first_at - arrived) * 1000 if first_at is not None else None,
            total_ms=(end - arrived) * 1000,
            tokens_per_s=rate,
        )
        response = CompletionResponse(
            content=content,
            tool_calls=calls,
            stop_reason=stop,
            usage=usage,
            timings=timings,
            model=self.config.model_name,
        )
        return EngineResult(response, plan.prompt, usage.input_tokens, (started - arrived) * 1000)

    def _grammar(self, schema: dict[str, Any]) -> Any:
        # Not sort_keys: the grammar emits properties in schema order, and that order is part
        # of the prompt design (asset-triage scores 102/168 fields in schema order against
        # 91/168 sorted on the embedded model). So key order also keys the cache.
        key = json.dumps(schema)
        with self._grammar_lock:
            return self._cached_grammar(key)

    def _cached_grammar(self, key: str) -> Any:
        from llama_cpp.llama_grammar import LlamaGrammar

        grammar = self._grammars.get(key)
        if grammar is None:
            try:
                grammar = LlamaGrammar.from_json_schema(key, verbose=False)
            except Exception as exc:
                raise BadRequestError(f"cannot build a grammar from json_schema: {exc}") from None
            self._grammars[key] = grammar
            if len(self._grammars) > GRAMMAR_CACHE_SIZE:
                self._grammars.popitem(last=False)
        else:
            self._grammars.move_to_end(key)
        return grammar


def _shared_prefix(llm: Any, tokens: list[int]) -> int:
    """How many leading prompt tokens the KV cache already holds (what `generate` skips).

    Mirrors `Llama.generate`'s own prefix match, which keeps the cache up to the longest
    common prefix (one token less when the whole prompt matches, to refresh the logits).
    """
    held = llm.input_ids[: llm.n_tokens]
    n = 0
    for a, b in zip(held, tokens, strict=False):
        if a != b:
            break
        n += 1
    return n - 1 if n == len(tokens) and n > 0 else n


def _free_sampler(llm: Any) -> None:
    """Free the sampler chain `generate()` built, now rather than at the next cyclic GC.

    llama-cpp-python's LlamaSampler holds a reference cycle (its exit stack's callback closes
    over the sampler), so only the cyclic collector frees it, and native memory does not
    trigger that collector. Each chain holds an n_vocab-sized native buffer (576 KiB for
    SmolLM2), more with a grammar: `evalctl soak` measured anonymous memory growing by that
    much per request until this was added.
    """
    sampler = getattr(llm, "_sampler", None)
    if sampler is not None:
        sampler.close()
        llm._sampler = None


def _parse_forced(text: str, plan: Plan) -> tuple[str, dict[str, Any]] | None:
    body = text.strip()
    # With the `<tool_call>[` prefill the model may close the list and tag itself.
    for suffix in (toolcalls.CALL_CLOSE, "]"):
        body = body.removesuffix(suffix).rstrip()
    return call_from_json(body, plan.tools)
