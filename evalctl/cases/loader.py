"""Load `cases/*.toml` strictly. Every error is a BadInputError naming file, case id and field."""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from pydantic import BaseModel, ValidationError

from evalctl import userfiles, userpaths
from evalctl.cases.datafiles import RawCase, expand_cases
from evalctl.cases.requirements import condition_problem, is_condition, known_requirements
from evalctl.cases.schema import CASE_ID_PATTERN, Case, CaseEntry, Suite, SuiteTable
from evalctl.cases.select import CaseFilter, case_matches
from evalctl.cases.tooldecl import TOOL_NAME_PATTERN
from evalctl.config import CONFIG_FILE, env_refusal
from evalctl.errors import BadInputError, EvalctlError
from evalctl.json_schema import schema_problem
from evalctl.plugin_loader import check_types, get_kind, kind_names, tool_names
from evalctl.providers.targets.config import SAMPLING_KEYWORDS, HttpTarget
from evalctl.scoring.declared import parse_assertions
from evalctl.scoring.kinds import SuiteKind
from evalctl.tools.command import command_problems
from evalctl.tools.declared import declared_tool_problems, mcp_decl_problems
from evalctl.tools.python_tool import python_tool_problems
from evalctl.tools.spy_functions import refusal as spy_refusal

M = TypeVar("M", bound=BaseModel)


def _message(err: Any) -> str:
    return userfiles.validation_message(err, patterns=_PATTERNS)


# The name patterns, in words: a regular expression is not an answer for most users.
_PATTERNS = {
    CASE_ID_PATTERN: "letters, digits, '.', '_' and '-', starting with a letter or digit",
    TOOL_NAME_PATTERN: "letters, digits, '_' and '-' (at most 64), starting with a letter or '_'",
}


class SuiteErrors(BadInputError):
    """Every problem found in one suite file. Reads as one located line per problem; its own
    file/case_id/field are those of the first, for callers that want one."""

    def __init__(self, errors: list[BadInputError]):
        first = errors[0]
        EvalctlError.__init__(self, "\n".join(e.message for e in errors), hint=first.hint)
        self.file, self.case_id, self.field = first.file, first.case_id, first.field
        self.detail = first.detail
        self.errors = errors


class OtherCases(Collection[str]):
    """The ids of a suite's cases but one (`own`): a view over the one set of ids, so a case
    costs O(1) here however many cases its suite has."""

    def __init__(self, ids: frozenset[str], own: str):
        self._ids = ids
        self._own = own

    def __contains__(self, item: object) -> bool:
        return item != self._own and item in self._ids

    def __iter__(self) -> Iterator[str]:
        return (case_id for case_id in self._ids if case_id != self._own)

    def __len__(self) -> int:
        return len(self._ids) - (self._own in self._ids)


class _Collector:
    def __init__(self, path: Path):
        self.path = path
        self.errors: list[BadInputError] = []
        # The data-file row of the case being checked: its errors name it too.
        self.origin: str | None = None
        self.said_once: set[tuple[str, str, str]] = set()

    def add(self, message: str, *, case_id: str | None = None, field: str | None = None) -> None:
        if self.origin:
            message = f"{message} (from {self.origin})"
        self.errors.append(
            BadInputError(message, file=str(self.path), case_id=case_id, field=field or None)
        )

    def add_validation(
        self, exc: ValidationError, prefix: tuple[int | str, ...], case_id: str | None = None
    ) -> None:
        for err in exc.errors():
            self.add(
                _message(err), case_id=case_id, field=userfiles.field_path((*prefix, *err["loc"]))
            )

    def raise_any(self) -> None:
        if self.errors:
            if len(self.errors) == 1:
                raise self.errors[0]
            raise SuiteErrors(self.errors)


def _validate(
    errors: _Collector,
    model: type[M],
    data: Any,
    prefix: tuple[int | str, ...],
    case_id: str | None = None,
) -> M | None:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors.add_validation(exc, prefix, case_id)
        return None


def _case_label(raw: Any, index: int) -> str:
    case_id = raw.get("id") if isinstance(raw, dict) else None
    return case_id if isinstance(case_id, str) else f"#{index + 1}"


def _looks_like_reply_script(raw: dict[str, Any]) -> bool:
    return "suite" not in raw and "case" not in raw and ("cases" in raw or "default" in raw)


P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


def _drained(items: list[T]) -> Iterator[T]:
    """`items` in order, each let go of as it is handed out (the list is emptied): a row's
    table is freed once its case is built, so a large file's tables and cases are never all
    held at once."""
    items.reverse()
    while items:
        yield items.pop()


def _collector_paused(func: Callable[P, R]) -> Callable[P, R]:
    """`func` with Python's cyclic garbage collector paused. Loading keeps every case it
    builds, and the collector's full passes walk all of them again and again: half the time
    of a 100,000-row suite went there. What is garbage is collected once it resumes."""

    @functools.wraps(func)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        if not gc.isenabled():
            return func(*args, **kwargs)
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            gc.enable()

    return paused


@_collector_paused
def load_suite(path: Path) -> Suite:
    """Load and check one suite file: every problem in it is reported, not just the first
    (`SuiteErrors`), and everything `run` would trip over is checked here, files included."""
    raw = userfiles.read_toml(path, what="suite file")
    errors = _Collector(path)
    if _looks_like_reply_script(raw):
        # A reply script put beside the suites it answers is the likely mistake here; four
        # "unknown key" lines would not say so.
        errors.add(
            "this is a reply script, not a suite (it has `cases`, no [suite]): keep reply "
            "scripts out of the directories given as suites, e.g. in a scripts/ "
            "subdirectory (a directory's subdirectories are not read)",
            field="cases" if "cases" in raw else "default",
        )
        errors.raise_any()
    if set(raw) == {"row"}:
        # Likewise a TOML data file beside the suite that names it in `cases_from`.
        errors.add(
            "this is a data file ([[row]] tables), not a suite: keep data files out of the "
            "directories given as suites, e.g. in a data/ subdirectory",
            field="row",
        )
        errors.raise_any()
    for key in raw:
        if key not in ("suite", "case"):
            errors.add("unknown key (a suite file has [suite] and [[case]] tables)", field=key)
    if "suite" not in raw:
        errors.add("required key is missing", field="suite")
    table = (
        _validate(errors, SuiteTable, raw.get("suite", {}), ("suite",)) if "suite" in raw else None
    )
    raw_cases = raw.get("case", [])
    if not isinstance(raw_cases, list):
        errors.add("a suite needs at least one [[case]]", field="case")
        raw_cases = []

    kind = None
    offered: list[str] | None = None
    if table is not None:
        kind = _check_suite(errors, path, table)
        # A spied function's calls, and those a target reports, are tool calls too.
        offered = list(table.tools) + [spy.tool_name for spy in table.spy]
        offered += [name for target in table.target for name in target.tools]
        if table.mcp:
            # An MCP server's tool names are known once it answers, never here: the
            # assertions' names are checked against them then (evalctl.mcp_toolset).
            offered = None
        expanded, file_errors = expand_cases(table, raw_cases, path.parent, path)
        errors.errors.extend(file_errors)
    else:
        expanded = [RawCase(c, _case_label(c, i)) for i, c in enumerate(raw_cases)]
    # A [suite] that failed its own checks may still name data files: its cases are unknown,
    # not missing, and the suite's own problem is the one to fix.
    names_data = isinstance(raw.get("suite"), dict) and bool(raw["suite"].get("cases_from"))
    unknown = table is None and names_data
    if not expanded and isinstance(raw.get("case", []), list) and not unknown:
        if table is None or not table.data_files:
            errors.add("a suite needs at least one [[case]]", field="case")
        elif not errors.errors:  # an unreadable data file is the reason, and said already
            errors.add(
                "a suite needs at least one [[case]] or a row in its cases_from files",
                field="case",
            )

    seen: dict[str, str] = {}
    cases: list[Case] = []
    # Every case's id, once: each case gets a view of it without its own (OtherCases), not a
    # copy, or a suite of n rows would cost n² (issue 29).
    case_ids = frozenset(raw_case.label for raw_case in expanded)
    suite_dir = path.resolve().parent
    for index, raw_case in enumerate(_drained(expanded)):
        errors.origin = raw_case.origin
        case = _check_case(errors, table, kind, offered, raw_case, index, seen, suite_dir, case_ids)
        if case is not None:
            cases.append(case)
    errors.origin = None
    errors.raise_any()
    assert table is not None
    # The kind's `link_cases` hook: with every case of the suite, before a --case filter
    # narrows it, what one case needs of another (retrieval's distinct-from).
    if kind is not None:
        kind.link_cases(table, cases)
    return Suite(path=path, table=table, cases=cases)


def _check_case(
    errors: _Collector,
    table: SuiteTable | None,
    kind: SuiteKind | None,
    offered: list[str] | None,
    raw_case: RawCase,
    index: int,
    seen: dict[str, str],
    suite_dir: Path,
    case_ids: frozenset[str],
) -> Case | None:
    """One case, inline or from a row: filled in, validated, built. `case_ids`: every case's
    id, for assertions that name another case; `suite_dir`: the suite file's folder, resolved."""
    label = raw_case.label
    for loc, message in raw_case.problems:
        errors.add(message, case_id=label, field=userfiles.field_path(loc))
    if raw_case.problems:
        return None
    entry = _validate(errors, CaseEntry, raw_case.data, ("case",), label)
    if entry is None:
        if table is not None:
            _check_unparsed_assertions(errors, table, raw_case.data, label, offered)
        return None
    where = raw_case.origin or f"[[case]] #{index + 1}"
    if entry.id in seen:
        errors.add(
            f"duplicate case id: {seen[entry.id]} and {where}", case_id=entry.id, field="case.id"
        )
    seen.setdefault(entry.id, where)
    if kind is None or table is None:
        return None
    others = OtherCases(case_ids, entry.id)
    shared = raw_case.shared_assertions
    return _build_case(errors, table, kind, entry, offered, suite_dir, shared, others)


def _check_suite(errors: _Collector, path: Path, table: SuiteTable) -> SuiteKind | None:
    """Suite-level checks; returns the kind, if it is known."""
    kind = get_kind(table.kind)
    if kind is None:
        errors.add(
            f"unknown suite kind {table.kind!r} (known: {', '.join(kind_names())})",
            field="suite.kind",
        )
    else:
        _check_names(errors, None, "suite.checks", table.checks, tuple(kind.checks))
        # The kind's `reads_tool_choice`: one that fixes its own would silently ignore it.
        if table.tool_choice is not None and not kind.reads_tool_choice:
            errors.add(
                f"kind {table.kind!r} sets its own tool choice; tool_choice applies to kinds "
                "that read it (assert)",
                field="suite.tool_choice",
            )
    declared = [d.name for d in table.tool]
    for name in sorted({n for n in declared if declared.count(n) > 1}):
        errors.add(f"tool {name!r} is declared twice", field="suite.tool")
    registered = tool_names()
    offered = sorted(set(declared) | set(registered))
    for tool in table.tools:
        if tool not in declared and tool not in registered:
            errors.add(
                f"unknown tool {tool!r} (known: {', '.join(offered) or 'none'})",
                field="suite.tools",
            )
    suite_dir = path.resolve().parent
    for index, decl in enumerate(table.tool, start=1):
        where = f"suite.tool[{index}]"
        if decl.name not in table.tools:
            errors.add(
                f"tool {decl.name!r} is declared but not offered: add it to suite.tools",
                field=f"{where}.name",
            )
        for field, message in declared_tool_problems(decl, suite_dir):
            errors.add(message, field=f"{where}.{field}")
    for index, server in enumerate(table.mcp, start=1):
        # Checked from the file alone: validating a suite starts no server
        # (`cases validate --connect` does, evalctl.mcp_toolset).
        where = f"suite.mcp[{index}]"
        for field, message in mcp_decl_problems(server, suite_dir):
            errors.add(message, field=f"{where}.{field}")
    _check_app_functions(errors, table, suite_dir)
    if table.output_schema is not None:
        problem = schema_problem(table.output_schema)
        if problem:
            errors.add(problem, field="suite.output_schema")
    known_needs = known_requirements()
    for need in table.requires:
        if is_condition(need):
            problem = condition_problem(need)
            if problem is not None:
                errors.add(f"requirement {need!r}: {problem}", field="suite.requires")
        elif need not in known_needs:
            errors.add(
                f"unknown requirement {need!r} (known: {', '.join(sorted(known_needs))}; "
                "or a condition: env:NAME, host:NAME, tcp:HOST:PORT, http:URL)",
                field="suite.requires",
            )
    return kind


def _check_app_functions(errors: _Collector, table: SuiteTable, suite_dir: Path) -> None:
    """A python target's function and each spied function are found as `run` would find them,
    without importing them (for a method, its class); a command target's program is found."""
    named = [
        (f"suite.target[{i}].function", t.function)
        for i, t in enumerate(table.target, start=1)
        if t.type == "python"
    ]
    named += [(f"suite.spy[{i}].function", s.function) for i, s in enumerate(table.spy, start=1)]
    for field, spec in named:
        module, _, attrs = spec.partition(":")
        for message in python_tool_problems(f"{module}:{attrs.split('.')[0]}", suite_dir):
            errors.add(message, field=field)
    for index, spy in enumerate(table.spy, start=1):
        refused = spy_refusal(spy.function)  # a module evalctl itself uses
        if refused is not None:
            errors.add(refused, field=f"suite.spy[{index}].function")
    for index, target in enumerate(table.target, start=1):
        if target.type == "command":
            for message in command_problems(target.argv, suite_dir):
                errors.add(message, field=f"suite.target[{index}].argv")


def _build_case(
    errors: _Collector,
    table: SuiteTable,
    kind: SuiteKind,
    entry: CaseEntry,
    offered: list[str] | None,
    suite_dir: Path,
    shared_assertions: list[tuple[str, list[dict[str, Any]]]] | None = None,
    other_cases: Collection[str] | None = None,
) -> Case | None:
    before = len(errors.errors)
    _check_names(errors, entry.id, "case.checks", entry.checks, tuple(kind.checks))
    parsed_input = _validate(errors, kind.input_model, entry.input, ("case", "input"), entry.id)
    expected = _validate(
        errors, kind.expected_model, entry.expected, ("case", "expected"), entry.id
    )
    specs, problems = parse_assertions(
        entry.assertions or [],
        check_types(),
        offered,
        _declared_args(table),
        other_cases,
        suite_dir,
    )
    for field, message in problems:
        errors.add(message, case_id=entry.id, field=f"case.assert{field}")
    # A case overrides a shared assertion (the template's, a default) by giving its own
    # assertion the same check name.
    own = {spec.name for spec in specs}
    for where, items in shared_assertions or []:
        shared, problems = parse_assertions(
            items, check_types(), offered, _declared_args(table), other_cases, suite_dir
        )
        for field, message in problems:
            # The same default fails the same way in every case: said once, at the first.
            if (where, field, message) not in errors.said_once:
                errors.said_once.add((where, field, message))
                errors.add(message, case_id=entry.id, field=f"{where}{field}")
        specs = specs + [spec for spec in shared if spec.name not in own]
    if len(errors.errors) > before or parsed_input is None or expected is None:
        return None
    case = Case(
        suite=table.name,
        id=entry.id,
        description=entry.description,
        features=entry.features,
        metadata=entry.metadata,
        input=parsed_input,
        expected=expected,
        checks=list(entry.checks or table.checks or kind.checks),
        timeout_s=entry.timeout_s,
        threshold=entry.threshold,
        assertions=specs,
        temperature=entry.temperature,
        top_p=entry.top_p,
        seed=entry.seed,
        vars=entry.vars,
        mcp=entry.mcp,
    )
    servers = [m.name for m in table.mcp]
    for name in entry.mcp or []:
        if name not in servers:
            errors.add(
                f"unknown MCP server {name!r} (the suite's: {', '.join(servers) or 'none'})",
                case_id=entry.id,
                field="case.mcp",
            )
    # The kind's `case_problems` hook: what only the kind can tell (a file a case names, a
    # cross-field rule), found at validate time.
    for field, message in kind.case_problems(table, case, suite_dir):
        errors.add(message, case_id=entry.id, field=field)
    for field in sampling_field_clashes(table, case):
        errors.add(
            f"{field.rpartition('.')[2]!r} is a sampling setting evalctl passes to a python "
            "target with call = \"keywords\" (it comes from the suite's and case's "
            "temperature, top_p and seed); an input field may not override it: rename the "
            "field",
            case_id=entry.id,
            field=field,
        )
    return case


def sampling_field_clashes(table: SuiteTable, case: Case) -> list[str]:
    """`case.input.<name>` for each input field of `case` named like a sampling setting, in a
    suite whose python target takes keywords: read from the suite file alone, the function
    never imported. The field would replace what the function is sent, while the results
    record the run's sampling."""
    if not any(getattr(t, "call", None) == "keywords" for t in table.target):
        return []
    fields = case.input.model_dump(mode="json")
    return [
        f"case.input.{name}"
        for name in SAMPLING_KEYWORDS
        if isinstance(fields, dict) and fields.get(name) is not None
    ]


def _check_unparsed_assertions(
    errors: _Collector, table: SuiteTable, raw_case: Any, label: str, offered: list[str] | None
) -> None:
    """A case whose own keys are wrong (say `threshold = 1.5`) still gets its assertions
    checked, so one validate run lists their problems too instead of revealing them one fix
    at a time. Items that are not tables were already reported by the case's own check."""
    raw = raw_case.get("assert") if isinstance(raw_case, dict) else None
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        return
    _, problems = parse_assertions(raw, check_types(), offered, _declared_args(table))
    for field, message in problems:
        errors.add(message, case_id=label, field=f"case.assert{field}")


def _declared_args(table: SuiteTable) -> dict[str, list[str]]:
    """Argument names of the suite's declared tools whose parameters list them."""
    out = {}
    for decl in table.tool:
        properties = decl.parameters.get("properties")
        if isinstance(properties, dict):
            out[decl.name] = list(properties)
    return out


def _check_names(
    errors: _Collector,
    case_id: str | None,
    field: str,
    names: list[str] | None,
    known: tuple[str, ...],
) -> None:
    for name in names or []:
        if name not in known:
            errors.add(
                f"unknown check {name!r} (known: {', '.join(known) or 'none'})",
                case_id=case_id,
                field=field,
            )


def suites_below(directory: Path) -> list[Path]:
    """The suites in the subdirectories of `directory` (one holding no `*.toml` itself, such
    as examples/): each `*.toml` with a [suite] table, so the reply scripts, data files and
    evalctl.toml kept beside suites are left aside; hidden directories are not searched. A
    file that does not parse is taken, for the loader to say what is wrong with it."""
    found = []
    for path in sorted(directory.rglob("*.toml")):
        relative = path.relative_to(directory).parts
        if any(part.startswith(".") or part == "__pycache__" for part in relative[:-1]):
            continue
        try:
            # Refused before it is read: a symlink out (evalctl.userpaths).
            raw = userfiles.read_toml(
                userpaths.suite_file_inside(path, directory), what="suite file"
            )
        except BadInputError:
            found.append(path)
            continue
        if "suite" in raw:
            found.append(path)
    return found


def discover(paths: list[Path] | None, cases_dir: Path) -> list[Path]:
    """Expand files and directories into suite files; default is every TOML in `cases_dir`."""
    targets = paths or [cases_dir]
    files: list[Path] = []
    for target in targets:
        if target.is_dir():
            # An evalctl.toml beside the suites holds settings (evalctl.config), not a suite.
            found = [p for p in sorted(target.glob("*.toml")) if p.name != CONFIG_FILE]
            found = found or suites_below(target)
            if not found:
                # "ok 0 cases" would let a mistyped path pass CI without running anything.
                raise BadInputError(
                    "no suite files (*.toml) in this directory, and no suites in its "
                    "subdirectories",
                    file=str(target),
                )
            # The path rule (evalctl.userpaths): a suite that is a symlink out of the folder's
            # project is refused, not skipped: skipping would hide it.
            files.extend(userpaths.suite_file_inside(path, target) for path in found)
        elif target.is_file():
            files.append(userpaths.suite_file_inside(target, target.parent))
        else:
            # A FIFO or a device is named as such (never opened), not "no such file".
            problem = userfiles.path_problem(target, "suite file or directory")
            raise BadInputError(problem or "not a file or directory", file=str(target))
    return files


def load_all(paths: list[Path] | None, cases_dir: Path) -> list[Suite]:
    """Every suite of the given files and directories (default: `cases_dir`); suite names
    must be unique among them."""
    suites = [load_suite(p) for p in discover(paths, cases_dir)]
    clashes = name_clashes(suites)
    if clashes:
        raise clashes[0]
    return suites


def tool_exec_refusals(
    suites: list[Suite], allowed_env: Collection[str] = ()
) -> list[BadInputError]:
    """Under `--no-tools-exec` (`EVALCTL_NO_TOOLS_EXEC=1`): one error per part of a suite
    that would run code, naming its file and field: a `command` or `python` tool, a python or
    command target (an http target only connects), and every spy, which imports the module it
    names. Fixture tools and the tools of installed plugins stay allowed: they run no code
    from the suite's files. Also each `${VAR}` naming a variable not in `allowed_env`
    (`Settings.allowed_env`; `env_refusals`)."""
    errors = env_refusals(suites, allowed_env)
    for suite in suites:
        for index, decl in enumerate(suite.table.tool, start=1):
            if decl.backend in ("command", "python"):
                errors.append(
                    _exec_refusal(
                        suite,
                        f"tool {decl.name!r} is a {decl.backend} tool, which runs code, and "
                        "tools may not run code here",
                        f"suite.tool[{index}].{decl.backend}",
                    )
                )
        for index, target in enumerate(suite.table.target, start=1):
            if target.type in ("python", "command"):
                errors.append(
                    _exec_refusal(
                        suite,
                        f"the {target.type} target runs code, and suites may not run code here",
                        f"suite.target[{index}]",
                    )
                )
        for index, server in enumerate(suite.table.mcp, start=1):
            if server.command is not None:
                errors.append(
                    _exec_refusal(
                        suite,
                        f"MCP server {server.name!r} is started as a program (stdio), which "
                        "runs code, and suites may not run code here; no process was started",
                        f"suite.mcp[{index}].command",
                    )
                )
        for index, _spy in enumerate(suite.table.spy, start=1):
            errors.append(
                _exec_refusal(
                    suite,
                    "a spy imports the module it names, which runs code, and suites may not "
                    "run code here",
                    f"suite.spy[{index}].function",
                )
            )
    return errors


def env_refusals(suites: list[Suite], allowed_env: Collection[str]) -> list[BadInputError]:
    """Where no code may run, the `${VAR}` a suite expands from the environment (an http
    target's URL and headers, a `requires` condition) may name only `allowed_env`: else a
    pull request could send `${ANTHROPIC_API_KEY}` to a URL of its own. One error per field."""
    errors: list[BadInputError] = []
    for suite in suites:
        fields: list[tuple[str, str]] = [
            (f"suite.requires[{index}]", need)
            for index, need in enumerate(suite.table.requires, start=1)
            if is_condition(need)
        ]
        for index, target in enumerate(suite.table.target, start=1):
            if isinstance(target, HttpTarget):
                fields.append((f"suite.target[{index}].url", target.url))
                fields += [
                    (f"suite.target[{index}].headers.{key}", value)
                    for key, value in target.headers.items()
                ]
        for index, server in enumerate(suite.table.mcp, start=1):
            if server.url is not None:
                fields.append((f"suite.mcp[{index}].url", server.url))
                fields += [
                    (f"suite.mcp[{index}].headers.{key}", value)
                    for key, value in server.headers.items()
                ]
        for field, text in fields:
            refused = env_refusal(text, allowed_env, file=str(suite.path), field=field)
            if refused is not None:
                errors.append(refused)
    return errors


def _exec_refusal(suite: Suite, what: str, field: str) -> BadInputError:
    return BadInputError(
        f"{what} (--no-tools-exec or EVALCTL_NO_TOOLS_EXEC)",
        file=str(suite.path),
        field=field,
        hint="see docs/security.md: run such suites only where running the pull request's "
        "code is safe",
    )


def refuse_tool_exec(suites: list[Suite], allowed_env: Collection[str] = ()) -> None:
    """Raise the `tool_exec_refusals` of `suites`, if any (exit 2)."""
    errors = tool_exec_refusals(suites, allowed_env)
    if errors:
        raise errors[0] if len(errors) == 1 else SuiteErrors(errors)


def name_clashes(suites: list[Suite]) -> list[BadInputError]:
    """One error per suite name used by several of `suites` (`run` and `validate` alike)."""
    names = [s.name for s in suites]
    errors = []
    for name in sorted({n for n in names if names.count(n) > 1}):
        files = [str(s.path) for s in suites if s.name == name]
        errors.append(
            BadInputError(
                f"suite name {name!r} is used by several files: {', '.join(files)}",
                file=files[-1],
                field="suite.name",
            )
        )
    return errors


def select(
    suites: list[Suite],
    *,
    suite_names: list[str] | None = None,
    case_glob: str | None = None,
    case_filter: CaseFilter | None = None,
    limit: int | None = None,
) -> list[Suite]:
    """The suites named (all when none are), each narrowed to the cases matching the glob and
    the `--feature`/`--meta` filter, then to its first `limit` cases (`--limit`)."""
    names = [s.name for s in suites]
    if suite_names:
        unknown = [n for n in suite_names if n not in names]
        if unknown:
            raise BadInputError(
                f"unknown suite {unknown[0]!r} (available: {', '.join(sorted(names))})",
                field="--suite",
            )
        suites = [s for s in suites if s.name in suite_names]
    if case_glob or case_filter:
        narrowed = []
        for suite in suites:
            cases = [
                c
                for c in suite.cases
                if (not case_glob or case_matches(c.id, c.key, case_glob))
                and (not case_filter or case_filter.matches(c.features, c.metadata))
            ]
            if cases:
                narrowed.append(suite.model_copy(update={"cases": cases}))
        suites = narrowed
    if limit is not None:
        suites = [s.model_copy(update={"cases": s.cases[:limit]}) for s in suites]
    return suites


def load_suites(
    paths: list[Path] | None,
    cases_dir: Path,
    *,
    suite_names: list[str] | None = None,
    case_glob: str | None = None,
    case_filter: CaseFilter | None = None,
) -> list[Suite]:
    return select(
        load_all(paths, cases_dir),
        suite_names=suite_names,
        case_glob=case_glob,
        case_filter=case_filter,
    )
