"""One attempt at one case: the conversation (`converse`: the model loop, or the calls a
model-free kind drives, tool execution through the spy), then its scoring (`score_attempt`);
`run_attempt` is the two in turn."""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from evalctl.cases.schema import Case, Suite
from evalctl.chat import (
    CompletionRequest,
    CompletionResponse,
    Message,
    Sampling,
    ToolCall,
    Usage,
)
from evalctl.config import Settings
from evalctl.cost import estimate_run_cost
from evalctl.embeddings import Embedder
from evalctl.errors import ContextOverflowError, EvalctlError, ServerCrashedError
from evalctl.plugin import Origin
from evalctl.plugin_loader import check_origin, get_check, registry
from evalctl.providers.base import Provider, measured_speed
from evalctl.results.io import write_text_atomic
from evalctl.results.models import Attempt, CheckResult, ToolCallRecord, TurnRecord
from evalctl.retry import RetryPolicy
from evalctl.runner.prompt_variant import wrap_prompt
from evalctl.runner.script_values import case_values
from evalctl.runner.timelimit import TimeLimit, case_limit
from evalctl.scoring.check import Transcript, scoring_context
from evalctl.scoring.judging import JudgeService
from evalctl.scoring.kinds import RequestShape, SuiteKind, opening_messages, shape_for
from evalctl.scoring.score import PLUGIN_CHECK_FLOOR_S, CheckBounds, score_case
from evalctl.scoring.verdict import attempt_verdict
from evalctl.secrets import redact
from evalctl.tools.base import Tool, ToolContext, ToolSpy
from evalctl.tools.spy_functions import logged_records


class CaseTimeoutError(EvalctlError):
    """The case ran past its time budget."""


@dataclass
class CaseSetup:
    """Everything one case needs, resolved once per run."""

    suite: Suite
    case: Case
    kind: SuiteKind
    tools: dict[str, Tool]
    settings: Settings
    timeout_s: float
    resources: dict[str, Any]
    # The run's judge, for `judge` checks; None where the run has none.
    judge: JudgeService | None = None
    # The run's embedding provider (evalctl.runner.embedding), for tools and checks.
    embedder: Embedder | None = None
    # What every request of the case is sent (flag > case > suite > greedy:
    # evalctl.runner.sampling).
    sampling: Sampling = field(default_factory=Sampling)
    # False: `timeout_s` is only the configured floor, and the provider's measured speed
    # may lengthen it (evalctl.runner.timelimit). True: the user set it; taken as given.
    timeout_explicit: bool = True
    # A matrix cell's prompt variant (evalctl.runner.prompt_variant); None: none.
    prompt_template: str | None = None


@dataclass
class AttemptOutcome:
    attempt: Attempt
    checks: list[CheckResult] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    output: str = ""
    first_try: bool = False
    tokens_per_s: float | None = None
    # The request in flight when the attempt ended in an error (for repro files).
    last_request: CompletionRequest | None = None
    transcript: list[TurnRecord] = field(default_factory=list)


# Sent as the user's message of the last answer turn (see `converse`).
FINAL_ANSWER_PROMPT = (
    "You have used all your tool calls. Do not call any tool now: give your final answer, "
    "based on the tool results above."
)


def _tokens_per_s(responses: list[CompletionResponse]) -> float | None:
    rates = [r.timings.tokens_per_s for r in responses if r.timings.tokens_per_s]
    return round(sum(rates) / len(rates), 2) if rates else None


def _call_keys(calls: list[ToolCall]) -> list[tuple[str, str]]:
    """The calls of one reply as comparable values: name and canonical arguments."""
    return [(c.name, json.dumps(c.arguments, sort_keys=True)) for c in calls]


def _tool_choice(shape: RequestShape, turn: int) -> str:
    if turn == 1 and shape.first_turn_tool_choice is not None:
        return shape.first_turn_tool_choice
    return shape.tool_choice


def _direct_answer(direct: list[ToolCall] | None, records: list[ToolCallRecord]) -> str | None:
    return records[0].result if direct and records else None


def _plugin_name(origin: Origin | None) -> str | None:
    """The plugin to name when its check fails; None for evalctl's own (run inline)."""
    return None if origin is None or origin.source == "builtin" else origin.plugin


def _check_bounds(kind_name: str, deadline: float, limit_s: float) -> CheckBounds:
    return CheckBounds(
        plugin_of=lambda type_name: _plugin_name(check_origin(type_name)),
        kind_plugin=_plugin_name(registry().origin_of("kind", kind_name)),
        deadline=deadline,
        floor_s=min(PLUGIN_CHECK_FLOOR_S, limit_s),
    )


def _complete_by(
    provider: Provider, request: CompletionRequest, deadline: float, limit: TimeLimit
) -> CompletionResponse:
    # Recomputed per try: retries spend the same case budget, not a fresh one each.
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise CaseTimeoutError(limit.timed_out() + " while retrying")
    return provider.complete(request, timeout=remaining)


def run_attempt(setup: CaseSetup, provider: Provider, retry: RetryPolicy) -> AttemptOutcome:
    """One attempt at the case: the conversation, then its scoring."""
    return score_attempt(setup, provider, converse(setup, provider, retry))


@dataclass
class Conversation:
    """What was said and done in one attempt, before any scoring: the messages and replies,
    the tool calls (the model's, a model-free kind's, and the application's own), and how it
    ended (`error` where it ended in one, then nothing is scored)."""

    messages: list[Message]
    responses: list[CompletionResponse]
    turns: list[TurnRecord]
    tool_calls: list[ToolCallRecord]
    usage: Usage
    # What the case's tools were given (its deadline included); its checks see it too.
    tools: ToolContext
    # A model-free case's answer: its first call's result; None: the model's last reply.
    answer: str | None
    # time.monotonic() when the case's clock started, the deadline, and the budget in seconds.
    started: float
    deadline: float
    limit_s: float
    error: str | None = None
    server_crashed: bool = False
    # The request in flight when the conversation ended in an error (for repro files).
    last_request: CompletionRequest | None = None

    def elapsed_ms(self) -> float:
        return round((time.monotonic() - self.started) * 1000, 1)


def converse(setup: CaseSetup, provider: Provider, retry: RetryPolicy) -> Conversation:
    """The case's conversation: the model's turns (≤ max_turns, and the last answer turn)
    with their tool calls run through the spy, or the calls a model-free kind drives."""
    case, table = setup.case, setup.suite.table
    ctx = ToolContext(
        case=case,
        fixtures_dir=setup.suite.directory / "fixtures",
        settings=setup.settings,
        resources=setup.resources,
        embedder=setup.embedder,
    )
    spy = ToolSpy(setup.tools, ctx)
    shape = shape_for(setup.kind, table, case)
    # The kind drives its case: by default the model conversation below; a model-free kind
    # (retrieval) names the tool calls that make up the case instead: they run through the
    # spy as a model's would, and no model is asked anything.
    direct = setup.kind.drive(table, case).calls
    tool_defs = [tool.definition for tool in setup.tools.values()]
    messages = wrap_prompt(
        opening_messages(setup.kind, table, case, ctx), setup.prompt_template, case_values(case)
    )
    # Sized before the clock starts: asking the local provider for its speed may start its
    # daemon, and the model load is not the case's time.
    limit = case_limit(
        explicit_s=setup.timeout_s if setup.timeout_explicit else None,
        floor_s=setup.timeout_s,
        turns=table.max_turns + 1,  # + the last answer turn the runner may add
        max_tokens=table.max_tokens,
        prompt_chars=sum(len(m.content) for m in messages)
        + sum(len(json.dumps(t.parameters)) + len(t.description) for t in tool_defs),
        speed=None if setup.timeout_explicit or direct is not None else measured_speed(provider),
    )
    started = time.monotonic()
    deadline = started + limit.seconds
    # Tool calls get the case's time left, so a slow tool cannot outlast the case.
    ctx.deadline = deadline
    responses: list[CompletionResponse] = []
    turns: list[TurnRecord] = []
    usage = Usage()
    request: CompletionRequest | None = None

    def ended(error: str | None = None, crashed: bool = False) -> Conversation:
        # The calls the application made itself ([[suite.spy]], a target's reply) are the
        # case's tool calls too.
        spy.records.extend(logged_records(max(1, len(responses))))
        return Conversation(
            messages=messages,
            responses=responses,
            turns=turns,
            tool_calls=spy.records,
            usage=usage,
            tools=ctx,
            # A model-free case's answer is its first call's result.
            answer=_direct_answer(direct, spy.records),
            started=started,
            deadline=deadline,
            limit_s=limit.seconds,
            error=error,
            server_crashed=crashed,
            last_request=request if error is not None else None,
        )

    def ask(turn: int, tool_choice: str, *, final: bool = False) -> CompletionResponse:
        nonlocal request, usage
        if deadline - time.monotonic() <= 0:
            raise CaseTimeoutError(limit.timed_out(time.monotonic() - started))
        # What this request adds to the conversation: everything after the previous reply; on
        # the first turn every message but the system prompt, which the run stores once.
        since = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
        request = CompletionRequest(
            messages=list(messages),
            tools=tool_defs,
            tool_choice=tool_choice,
            json_schema=shape.json_schema,
            max_tokens=table.max_tokens,
            tag=case.key,
            # Resolved for the case, every field set (evalctl.runner.sampling).
            **setup.sampling.model_dump(),
        )
        record = TurnRecord(
            turn=turn,
            sent=[m for m in messages[since + 1 :] if m.role != "system"],
            tool_choice=tool_choice,
            tools_offered=bool(tool_defs) and tool_choice != "none",
            final_answer_turn=final,
        )
        turns.append(record)
        try:
            response = retry.call(partial(_complete_by, provider, request, deadline, limit))
        except ContextOverflowError:
            record.context_overflow = True
            raise
        record.reply = response
        responses.append(response)
        usage = usage + response.usage
        if response.stop_reason == "timeout":
            raise CaseTimeoutError(limit.timed_out(time.monotonic() - started))
        messages.append(response.as_message())
        return response

    try:
        for call in direct or []:
            spy.execute(call, 1)
        ended_on_tool_call = False
        failed_calls: list[tuple[str, str]] | None = None
        model_turns = 0 if direct is not None else table.max_turns
        for turn in range(1, model_turns + 1):
            response = ask(turn, _tool_choice(shape, turn) if tool_defs else "none")
            ended_on_tool_call = bool(response.tool_calls)
            if not response.tool_calls:
                break
            submitted = False
            all_failed = True
            for call in response.tool_calls:
                result = spy.execute(call, turn)
                messages.append(Message.tool_result(result))
                submitted |= call.name == shape.terminal_tool and not result.is_error
                all_failed &= result.is_error
            if submitted:
                ended_on_tool_call = False
                break
            calls = _call_keys(response.tool_calls)
            if all_failed and calls == failed_calls:
                # The model sent again, argument for argument, the calls that just failed, and
                # they failed again: it has not read the error, and more turns would only
                # repeat it (17 of 18 release-assets cases did so on the embedded model).
                turns[-1].repeated_failed_calls = True
                break
            failed_calls = calls if all_failed else None
        # The budget ran out on a tool call: the model has seen the results but had no turn
        # left to answer, and every answer check would fail on an empty answer whatever it
        # knew. One more turn, tools disabled, asks for the answer. Not for kinds whose
        # answer *is* a tool call (a terminal tool): there a text turn could not answer.
        if ended_on_tool_call and shape.terminal_tool is None:
            messages.append(Message.user(FINAL_ANSWER_PROMPT))
            ask(table.max_turns + 1, "none", final=True)
    except ContextOverflowError as exc:
        # After the first reply it is the model's own conversation (its tool calls and their
        # results) that outgrew the window, as a sampled sommelier case did: the case is
        # scored on what it has, as when max_turns runs out. On the first request the suite's
        # prompt itself does not fit: that is not the model's doing, so `error`.
        if not responses:
            return ended(str(exc))
    except ServerCrashedError as exc:
        return ended(str(exc), crashed=True)
    except EvalctlError as exc:
        return ended(str(exc))
    return ended()


def score_attempt(
    setup: CaseSetup, provider: Provider, conversation: Conversation
) -> AttemptOutcome:
    """The attempt's outcome from its conversation: the case's checks and their verdict; a
    conversation that ended in an error is not scored, and the attempt is that error."""
    case, table = setup.case, setup.suite.table
    responses, usage = conversation.responses, conversation.usage
    if conversation.error is not None:
        return AttemptOutcome(
            attempt=Attempt(
                status="error",
                latency_ms=conversation.elapsed_ms(),
                turns=len(responses),
                usage=usage,
                stop_reasons=[r.stop_reason for r in responses],
                error=redact(conversation.error),
                server_crashed=conversation.server_crashed,
            ),
            tool_calls=conversation.tool_calls,
            output=responses[-1].content if responses else "",
            last_request=conversation.last_request,
            transcript=conversation.turns,
        )
    scoring = scoring_context(
        case,
        table,
        Transcript(
            conversation.messages,
            responses,
            conversation.tool_calls,
            answer=conversation.answer,
        ),
        judge=setup.judge,
        resources=setup.resources,
        tools=conversation.tools,
        latency_ms=conversation.elapsed_ms(),
        usage=usage,
        cost_usd=estimate_run_cost(provider.name, provider.model, usage, setup.settings),
        embedder=setup.embedder,
    )
    # A plugin's check runs under the case's deadline: one that blocks cannot hang the run.
    bounds = _check_bounds(table.kind, conversation.deadline, conversation.limit_s)
    checks = score_case(scoring, setup.kind.checks, get_check, bounds)
    # A check in `error` leaves the attempt unscored, with the checks kept to show why.
    verdict = attempt_verdict(checks, case.threshold)
    status, error = verdict.status, verdict.error
    return AttemptOutcome(
        attempt=Attempt(
            status=status,
            latency_ms=conversation.elapsed_ms(),
            turns=len(responses),
            usage=usage,
            stop_reasons=[r.stop_reason for r in responses],
            error=redact(error) if error else None,
        ),
        checks=checks,
        tool_calls=conversation.tool_calls,
        output=scoring.transcript.final_text,
        first_try=status == "pass" and not any(r.is_error for r in conversation.tool_calls),
        tokens_per_s=_tokens_per_s(responses),
        transcript=conversation.turns,
    )


# A file name is at most 255 bytes on every common filesystem; a case id may be longer.
_REPRO_NAME_CHARS = 120


def repro_name(case_key: str) -> str:
    """The repro file's name for a case: `suite__id`, with anything but letters, digits,
    `.`, `-` and `_` replaced, and a long key cut and told apart by its hash."""
    name = re.sub(r"[^\w.-]", "_", case_key.replace("/", "__"), flags=re.ASCII)
    if len(name) > _REPRO_NAME_CHARS:
        digest = hashlib.sha256(case_key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        name = f"{name[: _REPRO_NAME_CHARS - 17]}-{digest}"
    return name


def write_repro(run_dir: Path, case_key: str, request: CompletionRequest) -> Path:
    """Save the request that kept killing the daemon, so it can be replayed by hand."""
    path = run_dir / "repros" / (repro_name(case_key) + ".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, request.model_dump_json(indent=2) + "\n")
    return path
