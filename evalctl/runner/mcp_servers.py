"""The MCP servers of a run's suites (`[[suite.mcp]]`, docs/mcp.md): each opened once for the
run before any case (or around each case that uses it, with `per_case = true`), its tools
added to the tools of the cases it serves (a case's `mcp = [...]` narrows them), and all
closed when the run ends, whatever way it ends.

A server that cannot start or answer, or that offers tools a provider would refuse, skips
its suite's cases with the reason, as an unmet `requires` does; with `required = true` the
cases are errors instead. Under `--no-tools-exec` a stdio server is refused before anything
runs (evalctl.cases.loader.tool_exec_refusals), so none is ever started here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from evalctl.cases.schema import TOOL_CHOICES, Case, Suite
from evalctl.cases.tooldecl import McpDecl
from evalctl.errors import BadInputError
from evalctl.mcp_toolset import McpServerError, McpToolset
from evalctl.plugin_loader import get_check
from evalctl.results.models import CaseResult
from evalctl.runner.attempt import CaseSetup
from evalctl.runner.case import skipped_case
from evalctl.tools.base import Tool

T = TypeVar("T")


@dataclass
class _Problem:
    reason: str
    required: bool


class _CaseServerError(McpServerError):
    """A `per_case` server that failed for one case."""

    def __init__(self, problem: _Problem):
        super().__init__(problem.reason)
        self.problem = problem


def case_servers(suite: Suite, case: Case) -> list[McpDecl]:
    """The suite's servers this case is offered: all, or those its `mcp` names."""
    if case.mcp is None:
        return list(suite.table.mcp)
    return [m for m in suite.table.mcp if m.name in case.mcp]


class RunServers:
    """Every run-scoped server of the run's suites, open; the per-case ones opened on demand."""

    def __init__(self, suites: list[Suite], env: Mapping[str, str]):
        self._suites = suites
        self._env = env
        self._open: dict[tuple[str, str], McpToolset] = {}
        self._problems: dict[str, _Problem] = {}

    def open(self) -> None:
        """Open the servers some selected case uses; a failure is kept as its suite's reason."""
        for suite in self._suites:
            used = {m.name for case in suite.cases for m in case_servers(suite, case)}
            for decl in suite.table.mcp:
                if decl.per_case or decl.name not in used:
                    continue
                toolset = McpToolset(decl, suite.directory, self._env)
                try:
                    toolset.open()
                except McpServerError as exc:
                    self._problems[suite.name] = _Problem(_said(exc), decl.required)
                    break
                except BadInputError as exc:  # an unset `${VAR}`: the suite file's to fix
                    raise BadInputError(
                        exc.detail, file=str(suite.path), field=exc.field, hint=exc.hint
                    ) from None
                self._open[(suite.name, decl.name)] = toolset
            if suite.name not in self._problems:
                problem = self._names_problem(suite)
                if problem is not None:
                    required = any(m.required for m in suite.table.mcp)
                    self._problems[suite.name] = _Problem(problem, required)

    def close(self) -> None:
        for toolset in self._open.values():
            toolset.close()
        self._open.clear()

    def case_tools(self, suite: Suite, case: Case) -> dict[str, Tool]:
        """The run-scoped servers' tools this case is offered."""
        tools: dict[str, Tool] = {}
        for decl in case_servers(suite, case):
            toolset = self._open.get((suite.name, decl.name))
            if toolset is not None:
                tools.update(toolset.tools)
        return tools

    def run_case(self, setup: CaseSetup, run: Callable[[CaseSetup], CaseResult]) -> CaseResult:
        """`run(setup)`, unless the suite's servers failed (skipped, or errored where
        required); with its per-case servers opened around it, their tools added."""
        problem = self._problems.get(setup.suite.name)
        if problem is not None:
            return _failed(setup, problem)
        try:
            return self.around(setup, run)
        except _CaseServerError as exc:
            return _failed(setup, exc.problem)

    def around(self, setup: CaseSetup, run: Callable[[CaseSetup], T]) -> T:
        """`run(setup)` with the case's `per_case` servers opened around it and their tools
        added; `_CaseServerError` (an McpServerError) where one fails."""
        fresh = [d for d in case_servers(setup.suite, setup.case) if d.per_case]
        if not fresh:
            return run(setup)
        opened: list[McpToolset] = []
        try:
            tools = dict(setup.tools)
            for decl in fresh:
                toolset = McpToolset(decl, setup.suite.directory, self._env)
                try:
                    toolset.open()
                except McpServerError as exc:
                    raise _CaseServerError(_Problem(_said(exc), decl.required)) from None
                opened.append(toolset)
                clash = sorted(set(tools) & set(toolset.tools))
                if clash:
                    raise _CaseServerError(_Problem(_clash(decl, clash), decl.required))
                tools.update(toolset.tools)
            return run(replace(setup, tools=tools))
        finally:
            for toolset in opened:
                toolset.close()

    def _names_problem(self, suite: Suite) -> str | None:
        """A clash between the names of the suite's tools, or a `tool_choice` no tool has."""
        names: dict[str, str] = {name: "suite.tools" for name in suite.table.tools}
        for decl in suite.table.mcp:
            toolset = self._open.get((suite.name, decl.name))
            if toolset is None:
                continue
            clash = sorted(set(names) & set(toolset.tools))
            if clash:
                return _clash(decl, clash)
            names.update(dict.fromkeys(toolset.tools, decl.name))
        choice = suite.table.tool_choice
        every_server_open = all(
            (suite.name, d.name) in self._open for d in suite.table.mcp if not d.per_case
        )
        if (
            choice is not None
            and choice not in TOOL_CHOICES
            and choice not in names
            and every_server_open
            and not any(d.per_case for d in suite.table.mcp)
        ):
            return (
                f"tool_choice names {choice!r}, which neither suite.tools nor any of its MCP "
                f"servers offers (offered: {', '.join(names) or 'none'})"
            )
        return None


def _clash(decl: McpDecl, names: list[str]) -> str:
    return (
        f"MCP server {decl.name!r} offers {', '.join(map(repr, names))}, a name another tool "
        "of the suite has: give the server a `prefix`"
    )


def _said(exc: McpServerError) -> str:
    return f"{exc.message} ({exc.hint})" if exc.hint else exc.message


def _failed(setup: CaseSetup, problem: _Problem) -> CaseResult:
    result = skipped_case(setup, problem.reason)
    if problem.required:
        # `required = true`: a server the suite cannot do without is an error, not a skip.
        result.status = "error"
        result.skip_reason = None
        result.error = problem.reason
    return result


def connect_problems(suites: list[Suite], env: Mapping[str, str]) -> list[BadInputError]:
    """`cases validate --connect`: start (or reach) each MCP server of `suites`, list its
    tools, close it, and check the tool names the suite gives (its `tool_choice`, its
    assertions') against what the servers and the suite offer. One error per problem."""
    problems: list[BadInputError] = []
    for suite in suites:
        if not suite.table.mcp:
            continue
        table = suite.table
        offered = set(table.tools) | {spy.tool_name for spy in table.spy}
        offered |= {name for target in table.target for name in target.tools}
        answered = True
        for index, decl in enumerate(table.mcp, start=1):
            toolset = McpToolset(decl, suite.directory, env)
            try:
                toolset.open()
            except McpServerError as exc:
                answered = False
                problems.append(
                    BadInputError(_said(exc), file=str(suite.path), field=f"suite.mcp[{index}]")
                )
                continue
            try:
                clash = sorted(offered & set(toolset.tools))
                if clash:
                    problems.append(
                        BadInputError(
                            _clash(decl, clash), file=str(suite.path), field=f"suite.mcp[{index}]"
                        )
                    )
                offered |= set(toolset.tools)
            finally:
                toolset.close()
        if not answered:
            continue  # the names are unknown, not wrong: the server's problem is said
        known = ", ".join(sorted(offered)) or "none"
        choice = table.tool_choice
        if choice is not None and choice not in TOOL_CHOICES and choice not in offered:
            problems.append(
                BadInputError(
                    f"{choice!r} is no tool the suite or its MCP servers offer (offered: {known})",
                    file=str(suite.path),
                    field="suite.tool_choice",
                )
            )
        for case in suite.cases:
            for index, spec in enumerate(case.assertions, start=1):
                check = get_check(spec.type)
                for key, tool in check.tools_named(spec.params) if check else []:
                    if tool not in offered:
                        problems.append(
                            BadInputError(
                                f"unknown tool {tool!r} (offered once the MCP servers "
                                f"answered: {known})",
                                file=str(suite.path),
                                case_id=case.id,
                                field=f"case.assert[{index}].{key}",
                            )
                        )
    return problems
