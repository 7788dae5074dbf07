"""Load `cases/*.toml` strictly. Every error is a BadInputError naming file, case id and field."""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from evalctl import userfiles
from evalctl.cases.requirements import known_requirements
from evalctl.cases.schema import Case, Suite, SuiteFile
from evalctl.errors import BadInputError
from evalctl.plugin_loader import get_kind, kind_names, tool_names


def _field_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _case_id_at(raw: dict[str, Any], index: int) -> str:
    cases = raw.get("case")
    if isinstance(cases, list) and index < len(cases) and isinstance(cases[index], dict):
        case_id = cases[index].get("id")
        if isinstance(case_id, str):
            return case_id
    return f"#{index + 1}"


def _raise_validation(path: Path, raw: dict[str, Any], exc: ValidationError) -> None:
    err = exc.errors()[0]
    loc = tuple(err["loc"])
    case_id = None
    if len(loc) >= 2 and loc[0] == "case" and isinstance(loc[1], int):
        case_id = _case_id_at(raw, loc[1])
        loc = loc[2:]
    message = err["msg"]
    if err["type"] == "extra_forbidden":
        message = "unknown key"
    elif err["type"] == "missing":
        message = "required key is missing"
    raise BadInputError(message, file=str(path), case_id=case_id, field=_field_path(loc) or None)


def _validate_part(
    path: Path, case_id: str, part: str, model: type[BaseModel], data: dict[str, Any]
) -> BaseModel:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        message = {"extra_forbidden": "unknown key", "missing": "required key is missing"}.get(
            err["type"], err["msg"]
        )
        field = _field_path((part, *err["loc"]))
        raise BadInputError(message, file=str(path), case_id=case_id, field=field) from None


def load_suite(path: Path) -> Suite:
    raw = userfiles.read_toml(path, what="suite file")
    try:
        parsed = SuiteFile.model_validate(raw)
    except ValidationError as exc:
        _raise_validation(path, raw, exc)
        raise  # unreachable: _raise_validation always raises

    table = parsed.suite
    kind = get_kind(table.kind)
    if kind is None:
        raise BadInputError(
            f"unknown suite kind {table.kind!r} (known: {', '.join(kind_names())})",
            file=str(path),
            field="suite.kind",
        )
    known_tools = tool_names()
    for tool in table.tools:
        if tool not in known_tools:
            raise BadInputError(
                f"unknown tool {tool!r} (known: {', '.join(known_tools) or 'none'})",
                file=str(path),
                field="suite.tools",
            )
    _check_names(path, None, "suite.checks", table.checks, kind.check_names)
    known_needs = known_requirements()
    for need in table.requires:
        if need not in known_needs:
            raise BadInputError(
                f"unknown requirement {need!r} (known: {', '.join(sorted(known_needs))})",
                file=str(path),
                field="suite.requires",
            )

    seen: set[str] = set()
    cases: list[Case] = []
    for entry in parsed.case:
        if entry.id in seen:
            raise BadInputError("duplicate case id", file=str(path), case_id=entry.id, field="id")
        seen.add(entry.id)
        _check_names(path, entry.id, "checks", entry.checks, kind.check_names)
        cases.append(
            Case(
                suite=table.name,
                id=entry.id,
                description=entry.description,
                features=entry.features,
                input=_validate_part(path, entry.id, "input", kind.input_model, entry.input),
                expected=_validate_part(
                    path, entry.id, "expected", kind.expected_model, entry.expected
                ),
                checks=list(entry.checks or table.checks or kind.check_names),
                timeout_s=entry.timeout_s,
            )
        )
    return Suite(path=path, table=table, cases=cases)


def _check_names(
    path: Path, case_id: str | None, field: str, names: list[str] | None, known: tuple[str, ...]
) -> None:
    for name in names or []:
        if name not in known:
            raise BadInputError(
                f"unknown check {name!r} (known: {', '.join(known)})",
                file=str(path),
                case_id=case_id,
                field=field,
            )


def discover(paths: list[Path] | None, cases_dir: Path) -> list[Path]:
    """Expand files and directories into suite files; default is every TOML in `cases_dir`."""
    targets = paths or [cases_dir]
    files: list[Path] = []
    for target in targets:
        if target.is_dir():
            files.extend(sorted(target.glob("*.toml")))
        elif target.is_file():
            files.append(target)
        else:
            raise BadInputError("no such file or directory", file=str(target))
    return files


def load_suites(
    paths: list[Path] | None,
    cases_dir: Path,
    *,
    suite_names: list[str] | None = None,
    case_glob: str | None = None,
) -> list[Suite]:
    suites = [load_suite(p) for p in discover(paths, cases_dir)]
    names = [s.name for s in suites]
    for name in set(names):
        if names.count(name) > 1:
            files = ", ".join(str(s.path) for s in suites if s.name == name)
            raise BadInputError(f"suite name {name!r} is used by several files: {files}")
    if suite_names:
        unknown = [n for n in suite_names if n not in names]
        if unknown:
            raise BadInputError(
                f"unknown suite {unknown[0]!r} (available: {', '.join(sorted(names))})",
                field="--suite",
            )
        suites = [s for s in suites if s.name in suite_names]
    if case_glob:
        for suite in suites:
            suite.cases = [
                c
                for c in suite.cases
                if fnmatch.fnmatchcase(c.id, case_glob) or fnmatch.fnmatchcase(c.key, case_glob)
            ]
        suites = [s for s in suites if s.cases]
    return suites
