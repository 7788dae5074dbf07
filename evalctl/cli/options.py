"""Options shared by commands that start a run (`run`, `baseline`).

Each is used as `name: Annotated[type, options.X] = default`; the default lives with the
parameter, so the function is an ordinary function when called from Python too.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from evalctl.config import Settings, load_settings
from evalctl.errors import BadInputError
from evalctl.providers.registry import provider_choices
from evalctl.runner.api import RunRequest
from evalctl.runner.confirm import ConfirmPlan
from evalctl.userfiles import MAX_SAMPLES

if TYPE_CHECKING:
    from evalctl.providers.local import LocalProvider

# The names come from the provider registry, so a new built-in provider shows up here by
# itself; plugins' providers are not (help loads no plugin), so the text points at the list.
PROVIDER = typer.Option(
    "--provider",
    "-p",
    help=(
        f"{provider_choices()} | all (each real provider in turn; those missing a key or "
        "model are skipped with the reason) | a plugin's provider (`evalctl providers` lists "
        "every one). Default: detected."
    ),
)
MODEL = typer.Option("--model", "-m", help="Model name or GGUF path (provider-specific).")
# Shared by run, baseline and `cases list`: worded for all three (listing runs nothing).
SUITE = typer.Option(
    "--suite", "-s", help="Only the cases of this suite (repeatable). Default: every suite."
)
CASE = typer.Option(
    "--case",
    "-c",
    help="Only cases whose id or suite/id match this glob (several: comma-separated, or repeat).",
)


LIMIT = typer.Option(
    "--limit",
    min=1,
    metavar="N",
    help="Only the first N cases of each suite, after the other filters.",
)


FEATURE = typer.Option(
    "--feature",
    metavar="TAG",
    help="Only cases whose features include TAG (repeat: cases with every tag given).",
)
META = typer.Option(
    "--meta",
    metavar="KEY=VALUE",
    help="Only cases whose metadata has KEY=VALUE (repeat: cases with every pair given).",
)


def case_globs(case: list[str] | None) -> str | None:
    """Every --case given, as the one comma-separated selection the loader reads (a repeated
    --case once silently kept only the last)."""
    return ",".join(case) if case else None


SCRIPT = typer.Option("--script", help="Reply script for the scripted provider.")
CASES_PATH = typer.Option(
    "--cases", help="Suite files or directories (default: the cases/ directory)."
)
JSON = typer.Option("--json", help="Print machine-readable JSON instead of tables.")
# For suites from untrusted sources (docs/security.md).
NO_TOOLS_EXEC = typer.Option(
    "--no-tools-exec",
    envvar="EVALCTL_NO_TOOLS_EXEC",
    help="Refuse (exit 2) suites that declare command or python tools, which run code.",
)
# The path rule's opt-in (evalctl.userpaths; docs/security.md, "The path rule").
ALLOW_OUTSIDE_PATHS = typer.Option(
    "--allow-outside-paths",
    help="Let suites name files (cases_from, fixture) outside their project: absolute, "
    "'..' or symlinked out. Honoured even with --no-tools-exec.",
)


def path_rule(allow_outside_paths: bool, no_tools_exec: bool = False) -> None:
    """Tell the path rule what this command line says: the opt-in flag, and whether tools
    may run code (where they may not, evalctl.toml's `allow_outside_paths` is ignored)."""
    from evalctl import userpaths

    userpaths.allow_from_flag(allow_outside_paths)
    userpaths.refuse_tools_exec(no_tools_exec)


# Sampling overrides for every suite and case (docs/writing-suites.md, "Sampling").
TEMPERATURE = typer.Option(
    "--temperature",
    min=0.0,
    max=2.0,
    help="Sampling temperature for every case, over the suites' own (0: greedy).",
)
SEED = typer.Option(
    "--seed", min=0, max=2**31 - 1, help="Sampling seed for every case, over the suites' own."
)

SAMPLES = typer.Option(
    "--samples",
    min=1,
    max=MAX_SAMPLES,
    metavar="K",
    help="Run each case K times as K samples: sample r with seed r, a greedy case at a low "
    "temperature (docs/gating.md, 'Sampled baselines'). Default 1: one run as configured.",
)


def samples_flag(samples: int | None, seed: int | None, source: str = "--samples") -> int | None:
    """K from `--samples K` on a new run, where it asks for more than one sample (else None:
    one run as configured). --seed would pin every sample to one seed, so the two together
    are refused. `source` names where K came from, for that refusal."""
    if samples is None or samples == 1:
        return None
    if seed is not None:
        raise BadInputError(
            f"cannot be combined with {source}, which sends sample r seed r (0..K-1)",
            field="--seed",
        )
    return samples


def settings_from_env(
    suite_paths: Sequence[Path] | None = None, *, code_may_run: bool = True
) -> Settings:
    """The settings, with the plugins configured; `suite_paths`: the suite files and
    directories the command line names, where evalctl.toml is looked for when the working
    directory has none (evalctl.config.config_for). `code_may_run`: False under
    --no-tools-exec and in read-only commands, where such a discovered file gives only
    settings that run no code; what it ignored is said on stderr."""
    from evalctl.plugin_loader import configure

    settings = load_settings(suite_paths=suite_paths or (), code_may_run=code_may_run)
    if settings.ignored:
        say_ignored(settings)
    # Plugins are imported on first use; their settings keys are checked now.
    configure(settings)
    return settings


def read_only_settings() -> Settings:
    """The settings of a command that reads files and runs nothing (`compare`, `report`):
    found from the working directory only, no plugin configured."""
    settings = load_settings(code_may_run=False)
    if settings.ignored:
        say_ignored(settings)
    return settings


def say_ignored(settings: Settings) -> None:
    """One line on stderr naming what a discovered evalctl.toml could not set here."""
    from evalctl.cli.output import warn_once

    warn_once(
        f"{settings.config_file}: found from a suite's directory, not the working directory, "
        f"so only settings that run no code apply here; ignored: {', '.join(settings.ignored)} "
        "(docs/security.md, 'Which evalctl.toml is trusted')"
    )


def build_request(
    *,
    provider: str | None,
    model: str | None,
    suite: list[str] | None,
    case: str | None,
    script: Path | None,
    cases: list[Path] | None,
    out: Path | None = None,
    repeats: int = 1,
    concurrency: int | None = None,
    timeout: float | None = None,
    show_progress: bool = True,
    feature: list[str] | None = None,
    meta: dict[str, str] | None = None,
    limit: int | None = None,
    shard: tuple[int, int] | None = None,
    restart_per_case: bool = False,
    cooldown: float | None = None,
    judge_cache: bool = True,
    temperature: float | None = None,
    seed: int | None = None,
    seed_base: int = 0,
    tools_exec: bool = True,
    confirm: ConfirmPlan | None = None,
) -> RunRequest:
    """A new run's request, complete, from its flags. R repeats with no --seed are samples
    (R repeats of a greedy request would be one answer R times): each is sent its own seed."""
    return RunRequest(
        provider=provider,
        model=model,
        script=script,
        paths=cases or None,
        suites=suite or [],
        case_glob=case,
        limit=limit,
        features=list(feature or []),
        meta=dict(meta or {}),
        out_dir=out,
        repeats=repeats,
        sampled=repeats > 1 and seed is None,
        concurrency=concurrency,
        timeout_s=timeout,
        show_progress=show_progress,
        shard=shard,
        restart_per_case=restart_per_case,
        cooldown_s=(cooldown or 0.0) if restart_per_case else 0.0,
        judge_cache=judge_cache,
        temperature=temperature,
        seed=seed,
        tools_exec=tools_exec,
        seed_base=seed_base,
        confirm=confirm,
    )


def environ() -> dict[str, str]:
    return dict(os.environ)


def stability_provider(settings: Settings, model: str | None) -> LocalProvider:
    """The local provider `soak` and `crash-test` drive: one request at a time, since the
    daemon's stability is measured sequentially."""
    from evalctl.providers.local import LocalProvider
    from evalctl.providers.options import ProviderOptions
    from evalctl.providers.registry import create

    provider = create(
        "local", ProviderOptions(settings=settings, env=environ(), model=model, concurrency=1)
    )
    assert isinstance(provider, LocalProvider)
    return provider
