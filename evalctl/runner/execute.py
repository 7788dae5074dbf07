"""Run suites against a provider and write the results; shared by `run` and `baseline`."""

from __future__ import annotations

import queue
import secrets
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from evalctl import __version__
from evalctl.cases.loader import SuiteErrors, load_all, refuse_tool_exec, select
from evalctl.cases.requirements import ConditionChecks, unmet_requirement
from evalctl.cases.schema import Case, Suite
from evalctl.cases.select import CaseFilter
from evalctl.chat import Sampling
from evalctl.config import Settings
from evalctl.embeddings import Embedder
from evalctl.errors import BadInputError, EvalctlError, ExitCode
from evalctl.plugin_adapt import adapt_provider
from evalctl.plugin_loader import configure as configure_plugins
from evalctl.plugin_loader import get_kind, make_judge
from evalctl.providers.base import (
    Provider,
    provider_platform,
    provider_run_settings,
    sent_sampling,
)
from evalctl.providers.options import ProviderOptions
from evalctl.providers.registry import create, create_unscripted, detect, traits
from evalctl.providers.scripted import check_script_keys
from evalctl.results.io import write_run
from evalctl.results.models import (
    CaseResult,
    ConfirmSettings,
    PassCount,
    ProviderInfo,
    RunResult,
    SampleSettings,
    prompt_ref,
)
from evalctl.results.platform import platform_of
from evalctl.results.summary import summarize
from evalctl.retry import RetryPolicy
from evalctl.runner import environment, resume
from evalctl.runner.api import RunOutcome, RunRequest
from evalctl.runner.attempt import AttemptOutcome, CaseSetup
from evalctl.runner.case import confirmation_attempts, run_case, skipped_case
from evalctl.runner.confirm import ConfirmPlan, confirm_drops
from evalctl.runner.embedding import run_embedder
from evalctl.runner.events import RunEvents
from evalctl.runner.journal import Journal
from evalctl.runner.mcp_servers import RunServers
from evalctl.runner.progress import RunProgress
from evalctl.runner.recorded import run_settings
from evalctl.runner.restart import RestartPerCase
from evalctl.runner.rundir import prepare_out_dir, run_dir_lock
from evalctl.runner.sampling import (
    SamplingFlags,
    resolve_sampling,
    sample_sampling,
    sample_settings,
)
from evalctl.runner.script_values import reply_problems, run_case_values
from evalctl.runner.suite_tools import suite_tools
from evalctl.runner.targets import SuiteTargets
from evalctl.scoring.judging import JudgeService, JudgeSetup
from evalctl.sharding import in_shard
from evalctl.tools.spy_functions import check_spies


class InterruptedRunError(EvalctlError):
    code = ExitCode.INTERRUPTED


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def new_run_id(provider: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{provider}-{secrets.token_hex(2)}"


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """CI cancels jobs with SIGTERM: treat it like Ctrl-C so partial results are written."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _setups(
    suites: list[Suite],
    settings: Settings,
    request: RunRequest,
    judge: JudgeService | None,
    embedder: Embedder | None = None,
    servers: RunServers | None = None,
) -> list[CaseSetup]:
    setups = []
    for suite in suites:
        # Shared by the suite's cases: resources are opened once per suite and run.
        resources: dict[str, Any] = {}
        kind = get_kind(suite.table.kind)
        assert kind is not None  # the loader rejected unknown kinds
        tools = suite_tools(suite)
        for case in suite.cases:
            # A limit the user set is taken as given; without one, the configured case
            # timeout is a floor the measured speed may raise (evalctl.runner.timelimit).
            explicit = request.timeout_s or case.timeout_s or suite.table.timeout_s
            # The run's MCP servers' tools, those of the servers the case is offered.
            mcp_tools = servers.case_tools(suite, case) if servers is not None else {}
            setup = CaseSetup(
                suite,
                case,
                kind,
                {**tools, **mcp_tools} if mcp_tools else tools,
                settings,
                explicit or settings.case_timeout_s,
                resources,
                judge,
                embedder=embedder,
                sampling=_fresh_seed(request, suite, case),
                timeout_explicit=explicit is not None,
                prompt_template=request.prompt_template,
            )
            setups.append(setup)
    return setups


def _refuse_unanswered_judges(
    judge: JudgeService | None, script: Path, suites: list[Suite], run_provider: str
) -> None:
    """A reply script without replies for the run's judge assertions is bad input: refused
    before any case runs, as `cases validate --script` refuses it; so is a judge that would
    fall back to an application target (`run_provider`), which no script answers."""
    problems = [] if judge is None else judge.script_problems(script, suites, run_provider)
    if problems:
        first = problems[0]
        more = len(problems) - 1
        if more:
            first.hint = (
                f"{more} more judge check(s) lack replies: "
                f"`evalctl cases validate --script {script}` lists them all"
            )
        raise first


def _raise_all(errors: list[BadInputError]) -> None:
    """Every error at once (exit 2), where there is any."""
    if errors:
        raise errors[0] if len(errors) == 1 else SuiteErrors(errors)


def _without_script(request: RunRequest, suites: list[Suite]) -> Provider | None:
    """A replayer with no replies (`Provider.unscripted`), for `--provider scripted` (or
    another that `replays_script`) without `--script` where every case is driven by its
    kind's own tool calls (`drive()`, as `retrieval`'s): nothing will ask it for one. None
    otherwise: a script is needed, and its absence is bad input."""
    if request.provider is None or request.script is not None:
        return None
    if not traits(request.provider).replays_script:
        return None
    if not all(_model_free(s) for s in suites):
        return None
    return create_unscripted(request.provider)


def _model_free(suite: Suite) -> bool:
    """Whether the suite's kind drives every one of its cases without asking a model."""
    kind = get_kind(suite.table.kind)
    return kind is not None and all(
        kind.drive(suite.table, case).driven_by == "tools" for case in suite.cases
    )


def _fresh_seed(request: RunRequest, suite: Suite, case: Case | None = None) -> Sampling:
    """The case's sampling; a sampling suite's request that sets no seed of its own is sent
    the run's `seed_base`, not seed 0, which a baseline's first sample used."""
    sampling = resolve_sampling(_flags(request), suite.table, case)
    own = request.seed, case.seed if case else None, suite.table.seed
    if sampling.temperature and all(seed is None for seed in own):
        return sampling.model_copy(update={"seed": request.seed_base})
    return sampling


def _flags(request: RunRequest) -> SamplingFlags:
    return SamplingFlags(temperature=request.temperature, seed=request.seed)


def execute_run(
    request: RunRequest,
    settings: Settings,
    env: Mapping[str, str],
    *,
    provider_override: Provider | None = None,
    retry: RetryPolicy | None = None,
) -> RunOutcome:
    """Load suites, create the provider, run every case, write results (also on Ctrl-C)."""
    configure_plugins(settings)  # the plugins evalctl.toml names provide kinds and tools
    # The configured defaults name suites of cases_dir; explicit paths run what they hold.
    narrowed_to = request.suites or ([] if request.paths else settings.default_suites)
    everything = load_all(request.paths, settings.cases_dir)
    suites = select(
        everything,
        suite_names=narrowed_to,
        case_glob=request.case_glob,
        case_filter=CaseFilter(features=tuple(request.features), meta=request.meta),
        limit=request.limit,
    )
    if not request.tools_exec:
        # Before anything runs: exit 2 naming each file and tool (and `${VAR}` not allowed).
        refuse_tool_exec(suites, settings.allowed_env)
    if not suites:
        raise EvalctlError(
            "no cases matched",
            hint="check --suite/--case; `evalctl cases list` shows them",
            code=ExitCode.BAD_INPUT,
        )
    options = ProviderOptions(
        settings=settings,
        env=env,
        model=request.model,
        script=request.script,
        # A reply script is a template over each case (evalctl.runner.script_values).
        case_values=run_case_values(suites),
        # A daemon restarted around each case serves one at a time (below).
        concurrency=1 if request.restart_per_case else request.concurrency,
    )
    check_spies(suites)  # a spied function that cannot be found is bad input, before any case
    # Suites that declare a target run against it (evalctl.runner.targets).
    targets = SuiteTargets.open(suites, None if provider_override else request.provider, env)
    provider = (
        # A caller's own provider object is adapted as a registered one would be.
        (provider_override and adapt_provider(provider_override))
        or targets.run_provider
        or _without_script(request, suites)
        or create(request.provider or detect(options), options)
    )
    retry = retry or RetryPolicy()
    judge: JudgeService | None = None
    # Made before the restart wrapper, which embeds nothing; the fallback starts on first use.
    embedder = run_embedder(provider, options)
    servers = RunServers(suites, env)
    try:
        if request.script is not None and traits(provider.name).replays_script:
            # Against every suite in scope, not only the selected ones: one script may serve
            # several suites run one --suite at a time.
            check_script_keys(request.script, [c.key for s in everything for c in s.cases])
            _raise_all(reply_problems(request.script, run_case_values(suites)))
        if request.restart_per_case:
            provider = RestartPerCase.around(provider, cooldown_s=request.cooldown_s)
        # Grades `judge` assertions; it creates a judging provider only when one is needed.
        judge = make_judge(
            JudgeSetup(settings, env, provider, options, retry, cache=request.judge_cache)
        )
        if request.script is not None:
            _refuse_unanswered_judges(judge, request.script, suites, provider.name)
        # Only a selection narrows the scope (--suite, or the configured default suites;
        # --case and --shard are recorded on their own). Paths given with --cases do not:
        # a suite file deleted from them since the baseline must gate as orphaned.
        suite_filter = sorted(s.name for s in suites) if narrowed_to else []
        # The run directory's lock (runner.rundir) is held until results are on disk.
        # Started (or reached) once for the run, listed, and closed in `finally` below.
        servers.open()
        with ExitStack() as held:
            return _execute(
                request,
                settings,
                suites,
                suite_filter,
                provider,
                retry,
                judge,
                held,
                targets,
                embedder,
                servers,
            )
    finally:
        servers.close()
        if judge is not None:
            judge.close()
        embedder.close()
        provider.close()
        targets.close()


def _execute(
    request: RunRequest,
    settings: Settings,
    suites: list[Suite],
    suite_filter: list[str],
    provider: Provider,
    retry: RetryPolicy,
    judge: JudgeService | None,
    held: ExitStack,
    targets: SuiteTargets,
    embedder: Embedder | None = None,
    servers: RunServers | None = None,
) -> RunOutcome:
    setups = _setups(suites, settings, request, judge, embedder, servers)
    opened = {s.suite.name: s.resources for s in setups}
    selection = [s.case.key for s in setups]
    if request.shard is not None:
        setups = [s for s in setups if in_shard(s.case.key, *request.shard)]
    finished: dict[str, CaseResult] = {}
    if request.resume:
        assert request.out_dir is not None  # resume_request sets it
        out_dir = request.out_dir
        held.enter_context(run_dir_lock(out_dir))
        state = resume.load_state(out_dir, provider, suites, [s.case.key for s in setups])
        result, finished = state.header, state.finished
    else:
        run_id = new_run_id(provider.name)
        out_dir = request.out_dir or settings.results_dir / run_id
        prepare_out_dir(out_dir)
        held.enter_context(run_dir_lock(out_dir))
        result = _header(
            request, settings, suites, suite_filter, provider, run_id, selection, targets
        )
        resume.start_fresh(out_dir, request, provider.name, result)
    events = RunEvents(request.listeners)
    events.run_started(result, out_dir)
    conditions = ConditionChecks()  # a condition several suites require is checked once
    skip_reasons = {
        s.name: unmet_requirement(
            s, targets.provider_for(s.name, provider), settings, opened.get(s.name), conditions
        )
        for s in suites
    }

    def run_one(setup: CaseSetup) -> CaseResult:
        reason = skip_reasons[setup.suite.name]
        if reason is not None:
            return skipped_case(setup, reason)

        def run_with(setup: CaseSetup) -> CaseResult:
            return run_case(
                setup,
                targets.provider_for(setup.suite.name, provider),
                retry,
                repeats=request.repeats,
                crash_retries=request.crash_retries,
                run_dir=out_dir,
                sampled=request.sampled,
                seed_base=request.seed_base,
            )

        def run() -> CaseResult:
            # The suite's MCP servers failed: skipped or errored; per-case ones opened here.
            return servers.run_case(setup, run_with) if servers is not None else run_with(setup)

        result = provider.around_case(run) if isinstance(provider, RestartPerCase) else run()
        if result.sampling is None:  # a sampled case records its last sample's
            answering = targets.provider_for(setup.suite.name, provider)
            result.sampling = sent_sampling(answering, setup.sampling)
        result.driven_by = setup.kind.drive(setup.suite.table, setup.case).driven_by
        result.deterministic = _deterministic(result, setup, targets, provider)
        return result

    # Only providers whose backends take parallel requests run concurrently (the local daemon
    # has a slot per case of -j); a daemon restarted around each case takes one at a time.
    concurrent = traits(provider.name).concurrent and not isinstance(provider, RestartPerCase)
    workers = (request.concurrency or provider.default_concurrency()) if concurrent else 1
    pending = [s for s in setups if s.case.key not in finished]
    # Closed (its last group synced) with the run directory's lock, results written.
    journal = held.enter_context(Journal(out_dir / resume.JOURNAL))
    interrupted = False
    with (
        RunProgress(len(pending), enabled=request.show_progress) as progress,
        _sigterm_as_interrupt(),
    ):

        def record(case_result: CaseResult) -> None:
            finished[case_result.key] = case_result
            journal.append(case_result)
            events.case_finished(case_result)
            progress.advance(case_result)

        try:
            _run_all(pending, run_one, workers, record, progress)
        except KeyboardInterrupt:
            interrupted = True

    if request.confirm is not None and not interrupted:
        result.settings.confirm, interrupted = _confirm(
            request.confirm, request, setups, finished, targets, provider, retry, journal, events,
            out_dir, servers,
        )  # fmt: skip
    # Keep file order, whatever order concurrent workers finished in.
    result.cases = [finished[s.case.key] for s in setups if s.case.key in finished]
    prompts = {prompt_ref(s.table.system_prompt): s.table.system_prompt for s in suites}
    used = {c.system_prompt for c in result.cases}
    result.system_prompts = {ref: text for ref, text in prompts.items() if ref in used}
    result.finished_at = _now()
    result.interrupted = interrupted
    result.provider.settings = provider_run_settings(provider)
    result.platform = platform_of(provider.name, provider.model, provider_platform(provider))
    result.summary = summarize(
        result.cases, provider.name, model=provider.model, prices=settings.prices
    )
    results_path = write_run(result, out_dir)
    events.run_finished(result, results_path)
    if interrupted:
        raise InterruptedRunError(
            f"interrupted: kept {len(result.cases)} of {len(setups)} cases in {results_path}",
            hint=f"continue with: {resume.resume_command(out_dir, request.confirm)}",
        )
    return RunOutcome(result=result, out_dir=out_dir, results_path=results_path)


def _deterministic(
    result: CaseResult, setup: CaseSetup, targets: SuiteTargets, provider: Provider
) -> bool:
    """Whether the case's answers cannot vary between samples: no model answers it (its kind
    drove it with tool calls, as recorded in `driven_by`), or its provider or target says so
    of itself."""
    suite = setup.suite.name
    answering = targets.provider_for(suite, provider)
    return (
        result.driven_by == "tools"
        or targets.deterministic(suite)
        or traits(answering.name).deterministic
    )


def _confirm(
    plan: ConfirmPlan,
    request: RunRequest,
    setups: list[CaseSetup],
    finished: dict[str, CaseResult],
    targets: SuiteTargets,
    provider: Provider,
    retry: RetryPolicy,
    journal: Journal,
    events: RunEvents,
    out_dir: Path,
    servers: RunServers | None = None,
) -> tuple[ConfirmSettings | None, bool]:
    """The confirmation step of `run --baseline` (runner.confirm): what it did, and whether
    it was interrupted (the samples taken until then are kept, the record is not). Resumed,
    it confirms what is left, with seeds above those any earlier process handed out."""
    by_key = {s.case.key: s for s in setups}
    cases = [finished[s.case.key] for s in setups if s.case.key in finished]
    # Suites judged strictly are not tested, so not re-sampled: as `compare` will judge them.
    plan = plan.with_suite_rules({s.suite.name: s.suite.table.gate_rule for s in setups})
    drawn = resume.read_manifest(out_dir).confirm_seeds_drawn

    def resample(case: CaseResult, setup: CaseSetup, samplings: list[Sampling]) -> None:
        # On record before any is drawn: a kill from here on resumes with other seeds.
        seeds = [s.seed for s in samplings if s.seed is not None]
        resume.record_drawn(out_dir, setup.suite.name, seeds)
        answering = targets.provider_for(setup.suite.name, provider)

        def attempts(setup: CaseSetup) -> tuple[list[AttemptOutcome], dict[str, PassCount]]:
            return confirmation_attempts(
                setup, answering, retry, samplings, crash_retries=request.crash_retries
            )

        # A `per_case` MCP server is started afresh for the re-samples too.
        outcomes, counts = servers.around(setup, attempts) if servers else attempts(setup)
        case.attempts.extend(o.attempt for o in outcomes)
        case.confirmation_check_counts = counts
        journal.append(case)
        events.confirmation(case)

    with _sigterm_as_interrupt():
        try:
            return confirm_drops(plan, cases, by_key, resample=resample, drawn=drawn), False
        except KeyboardInterrupt:
            return None, True


def _header(
    request: RunRequest,
    settings: Settings,
    suites: list[Suite],
    suite_filter: list[str],
    provider: Provider,
    run_id: str,
    selection: list[str],
    targets: SuiteTargets,
) -> RunResult:
    # What each suite's requests reach: its target where it has one, so the record says
    # what that application received (evalctl.providers.base.sent_sampling).
    answering = {s.name: targets.provider_for(s.name, provider) for s in suites}
    return RunResult(
        run_id=run_id,
        started_at=_now(),
        evalctl_version=__version__,
        provider=ProviderInfo(
            name=provider.name, model=provider.model, model_sha256=provider.model_sha256
        ),
        settings=run_settings(
            request,
            default_timeout_s=settings.case_timeout_s,
            shard_selection=selection,
            suites=[s.name for s in suites],
            suite_versions={s.name: s.table.version for s in suites},
            sampling={
                s.name: sent_sampling(answering[s.name], _fresh_seed(request, s)) for s in suites
            },
            max_tokens={s.name: s.table.max_tokens for s in suites},
            sampled=_sampled(request, answering, suites),
            gates={s.name: g for s in suites if (g := s.table.metric_gate) is not None},
            gate_rules={s.name: r for s in suites if (r := s.table.gate_rule) is not None},
            suite_filter=suite_filter,
        ),
        environment=environment.capture(),
    )


def _sampled(
    request: RunRequest, answering: dict[str, Provider], suites: list[Suite]
) -> dict[str, SampleSettings]:
    """Per suite, how `--samples` samples it (empty when the run is not sampled), as the
    provider or target that answers the suite sends it."""
    if not request.sampled:
        return {}
    plans = {}
    for suite in suites:
        base = resolve_sampling(_flags(request), suite.table)
        sent = sent_sampling(answering[suite.name], sample_sampling(base, 0, request.seed_base))
        plans[suite.name] = sample_settings(base, request.samples_per_case, sent, request.seed_base)
    return plans


def _run_all(
    setups: list[CaseSetup],
    run_one: Callable[[CaseSetup], CaseResult],
    workers: int,
    record: Callable[[CaseResult], None],
    progress: RunProgress,
) -> None:
    if workers <= 1:
        for setup in setups:
            progress.start(setup.case.key)
            record(run_one(setup))
        return
    # Daemon threads, not a ThreadPoolExecutor: the interpreter joins an executor's threads
    # at exit, so after Ctrl-C the process waited for every request in flight to end (up to
    # the case timeout) though its results were written. Daemon threads are left behind.
    todo: queue.SimpleQueue[CaseSetup] = queue.SimpleQueue()
    for setup in setups:
        todo.put(setup)
    done: queue.SimpleQueue[tuple[CaseResult | None, BaseException | None]] = queue.SimpleQueue()
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            try:
                setup = todo.get_nowait()
            except queue.Empty:
                return
            try:
                done.put((run_one(setup), None))
            except BaseException as exc:  # handed to the main thread, raised there
                done.put((None, exc))

    for n in range(min(workers, len(setups))):
        threading.Thread(target=work, name=f"evalctl-case_{n}", daemon=True).start()
    try:
        # Journal each case as soon as it finishes, not in submission order: a kill must not
        # lose finished cases that were waiting behind a slow one.
        for _ in setups:
            result, error = done.get()
            if error is not None:
                raise error
            assert result is not None
            record(result)
    finally:
        # On Ctrl-C (or a case's error), start nothing more; finished cases are recorded.
        stop.set()
