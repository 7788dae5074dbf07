"""A target's provider from its `target` table, and what `--provider python|http|command`
does without one: the targets are configured per suite, so there it is bad input."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from evalctl.errors import BadInputError
from evalctl.providers.base import Provider
from evalctl.providers.targets.command_target import CommandTargetProvider
from evalctl.providers.targets.config import CommandTarget, HttpTarget, PythonTarget
from evalctl.providers.targets.http_target import HttpTargetProvider
from evalctl.providers.targets.python_target import PythonTargetProvider


def build_target(
    target: PythonTarget | HttpTarget | CommandTarget,
    suite_dir: Path,
    env: Mapping[str, str],
    *,
    source: str = "",
    field: str = "suite.target",
) -> Provider:
    """The provider for one suite's target; `source` (the suite file) and `field` (the
    target's table in it) name it in errors."""
    if isinstance(target, PythonTarget):
        return PythonTargetProvider(target, suite_dir, source=source, field=field)
    if isinstance(target, HttpTarget):
        return HttpTargetProvider(target, env, source=source, field=field)
    return CommandTargetProvider(target, suite_dir)


def unconfigured(name: str) -> BadInputError:
    return BadInputError(
        f"the {name} target is configured in the suite file, and no suite in this run declares one",
        field="--provider",
        hint=f'add [[suite.target]] with type = "{name}" to the suite (docs/targets.md)',
    )
