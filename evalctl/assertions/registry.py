"""Assertion types (the plugin API calls them checks) by the name `type = "..."` uses.

A check has `params_model` (a pydantic model of its keys besides `type`, `weight` and the
check name) and `evaluate(params, transcript) -> CheckResult` (`evalctl.plugin.Check`). The
built-in families are `Assertion` models wrapped in `ModelCheck` and registered by
`evalctl.assertions.plugin`; plugins add theirs with `registry.add_check`.
"""

from __future__ import annotations

from pydantic import BaseModel

from evalctl.assertions.base import Assertion, Evidence
from evalctl.plugin_loader import check_names, get_check
from evalctl.results.models import CheckResult
from evalctl.scoring.kinds import Transcript

__all__ = [
    "ModelCheck",
    "arguments_named",
    "check_names",
    "default_name",
    "get_check",
    "tools_named",
]


class ModelCheck:
    """A built-in assertion type: its params model judges the evidence itself."""

    def __init__(self, model: type[Assertion]):
        self.params_model: type[BaseModel] = model

    def evaluate(self, params: BaseModel, transcript: Transcript) -> CheckResult:
        assert isinstance(params, Assertion)
        outcome = params.evaluate(Evidence(transcript.final_text, transcript.tool_calls))
        return CheckResult(
            name=params.default_name(),
            passed=outcome.passed,
            expected=outcome.expected,
            actual=outcome.actual,
            message=outcome.reason,
        )


def default_name(type_name: str, params: BaseModel) -> str:
    """A check's name when the case gives none."""
    if isinstance(params, Assertion):
        return params.default_name()
    return type_name


def tools_named(params: BaseModel) -> list[tuple[str, str]]:
    """(key, tool) pairs an assertion refers to; a plugin check may offer `tools_named()`."""
    named = getattr(params, "tools_named", None)
    return list(named()) if callable(named) else []


def arguments_named(params: BaseModel) -> list[tuple[str, str, str]]:
    """(key, tool, argument) triples an assertion expects; a plugin check may offer them."""
    named = getattr(params, "arguments_named", None)
    return list(named()) if callable(named) else []
