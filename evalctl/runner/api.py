"""The library entry point for a run, shared by `evalctl run` and `evalctl baseline`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evalctl.results.models import RunResult, samples_per_case
from evalctl.runner.confirm import ConfirmPlan
from evalctl.runner.events import RunListener


@dataclass(frozen=True)
class RunRequest:
    """What a run does, complete when made: each entry point builds it in one place (the
    CLI's from its flags: evalctl.cli.run.run_request, evalctl.cli.options.build_request;
    a resumed run's from its manifest: evalctl.runner.resume), and nothing changes it after
    (a matrix cell is a new request, `dataclasses.replace` of the matrix's)."""

    provider: str | None = None  # None: detect from the environment
    model: str | None = None
    script: Path | None = None  # for the scripted provider
    paths: list[Path] | None = None  # suite files or directories; default: settings.cases_dir
    suites: list[str] = field(default_factory=list)
    case_glob: str | None = None
    # `--limit N`: the first N cases of each suite, after the other filters.
    limit: int | None = None
    # `--feature` tags and `--meta` pairs a selected case has, all of them.
    features: list[str] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
    out_dir: Path | None = None  # default: a fresh directory under settings.results_dir
    repeats: int = 1
    # `--samples`: the repeats are samples, repeat r sent seed r and greedy cases a low
    # temperature (evalctl.runner.sampling).
    sampled: bool = False
    # `-j`; None: the provider's default_concurrency() (1, or the local daemon's slots).
    concurrency: int | None = None
    timeout_s: float | None = None  # per case; default: suite's, else settings.case_timeout_s
    crash_retries: int = 1  # extra attempts for a case during which the local daemon died
    show_progress: bool = True
    shard: tuple[int, int] | None = None  # (index, count), 1-based: run only that shard
    # Continue the run in out_dir (see evalctl.runner.resume.resume_request, which builds
    # such requests from the run's manifest).
    resume: bool = False
    # The full-benchmark procedure: a fresh local daemon per case (evalctl.runner.restart),
    # with `cooldown_s` between stopping one and starting the next.
    restart_per_case: bool = False
    cooldown_s: float = 0.0
    # Reuse judgements cached under EVALCTL_HOME (`--no-judge-cache` turns it off).
    judge_cache: bool = True
    # --temperature and --seed: override every suite's and case's own (None: not given).
    temperature: float | None = None
    seed: int | None = None
    # `--no-tools-exec`: refuse suites declaring command or python tools (docs/security.md).
    tools_exec: bool = True
    # A matrix cell's prompt variant: a template wrapping each case's prompt as `{{ prompt }}`
    # (evalctl.runner.prompt_variant); None sends the prompt as the case builds it.
    prompt_template: str | None = None
    # The first seed a sample of this run is sent (sample r: seed_base + r), and the seed of a
    # sampling suite's requests that set none: 0 when recording a baseline (`baseline
    # --samples K` uses seeds 0..K-1), a random high one for `run`, so a run never repeats
    # the baseline's draws (docs/gating.md, "Independent samples").
    seed_base: int = 0
    # `--baseline B` with `--confirm`: re-sample the cases that dropped below B (runner.confirm).
    confirm: ConfirmPlan | None = None
    # Who observes the run's events (evalctl.runner.events): the run store, given by the
    # CLI. A matrix cell's request keeps its matrix's, so each cell's run is seen.
    listeners: tuple[RunListener, ...] = ()

    @property
    def samples_per_case(self) -> int:
        """K: how many samples of each case the run takes (1 unless its repeats are samples)."""
        return samples_per_case(self.repeats, self.sampled)


@dataclass
class RunOutcome:
    result: RunResult
    out_dir: Path
    results_path: Path
