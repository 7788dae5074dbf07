"""Reading versioned JSON documents (run results, baselines) with errors a user can act on.

Every failure becomes a BadInputError naming the file, the case key when the problem sits
inside one case, and the field. Both `read_run` and `read_baseline` go through here so a
truncated results file and a hand-edited baseline fail the same precise way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from evalctl import userfiles
from evalctl.errors import BadInputError
from evalctl.results.text import plural

DocumentKind = Literal["run", "baseline"]
KINDS: tuple[DocumentKind, ...] = ("run", "baseline")

M = TypeVar("M", bound=BaseModel)

# Wording for the pydantic error types users actually hit; others keep pydantic's message.
_MESSAGES = {
    "extra_forbidden": "unknown key",
    "missing": "required key is missing",
}


@dataclass(frozen=True)
class Document:
    path: Path
    data: dict[str, Any]

    @property
    def kind(self) -> DocumentKind | None:
        return detect_kind(self.data)


# What `compare` does not read of run results: each case's conversation record (transcript,
# tool calls, output, input) and the run's system prompts. They are most of a results file
# (about 80% of a 10,000-case one), and validating them is most of the cost of reading it.
CONVERSATION_FIELDS = frozenset({"transcript", "tool_calls", "output", "input", "daemon"})


def load_document(path: Path, *, skip_conversations: bool = False) -> Document:
    """Read `path` as a JSON object. A directory stands for the `results.json` inside it.

    `skip_conversations`: drop CONVERSATION_FIELDS from run results before anything checks
    them (for readers that only compare statuses, checks and figures); what remains is
    validated as usual, and the dropped fields read as their defaults.
    """
    path = resolve_results_path(path)
    if path.is_dir():
        raise BadInputError("is a directory (and holds no results.json)", file=str(path))
    text = userfiles.read_text(path)
    if not text.strip():
        raise BadInputError("empty file (an interrupted write?)", file=str(path))
    data = userfiles.parse_json(text, path, nesting=not skip_conversations)
    if not isinstance(data, dict):
        raise BadInputError(
            f"expected a JSON object at the top level, found {type(data).__name__}",
            file=str(path),
        )
    if skip_conversations:
        _drop_conversations(data)
        userfiles.check_nesting(data, path)
    return Document(path=path, data=data)


def _drop_conversations(data: dict[str, Any]) -> None:
    cases = data.get("cases")
    if detect_kind(data) != "run" or not isinstance(cases, list):
        return
    for case in cases:
        if isinstance(case, dict):
            for name in CONVERSATION_FIELDS:
                case.pop(name, None)
            # A case's prompt reference points into the dropped table.
            case.pop("system_prompt", None)
    data.pop("system_prompts", None)


# The canonical file of each result directory: run, soak, crash-test.
RESULT_FILES = ("results.json", "soak.json", "crash-test.json")


def resolve_results_path(path: Path) -> Path:
    """A result directory (as `evalctl run`, `soak` or `crash-test` prints it) stands for the
    result file inside it."""
    if path.is_dir():
        for name in RESULT_FILES:
            if (path / name).is_file():
                return path / name
    return path


def detect_kind(data: dict[str, Any]) -> DocumentKind | None:
    """Which document this is: the `kind` field when present, else its shape.

    Baselines in the familiar hand-written shape carry no `kind`, so `baselines` identifies
    them; run results are recognised by `cases` or `run_id`.
    """
    kind = data.get("kind")
    if kind in KINDS:
        return kind  # type: ignore[no-any-return]
    if kind is not None:
        return None
    if "baselines" in data:
        return "baseline"
    if "cases" in data or "run_id" in data:
        return "run"
    return None


def require_kind(doc: Document, expected: DocumentKind) -> None:
    """Refuse a document of the wrong kind with a message that says what it is instead."""
    found = doc.kind
    if found == expected:
        return
    wanted = {"run": "run results", "baseline": "a baseline"}[expected]
    if found is None:
        kind = doc.data.get("kind")
        what = (
            f"unknown kind {kind!r}" if kind is not None else "neither run results nor a baseline"
        )
        raise BadInputError(f"{what}; expected {wanted}", file=str(doc.path), field="kind")
    actual = {"run": "run results", "baseline": "a baseline"}[found]
    raise BadInputError(f"this is {actual}, expected {wanted}", file=str(doc.path), field="kind")


def check_schema_version(doc: Document, supported: tuple[int, ...]) -> None:
    """Refuse versions this evalctl does not know rather than guess at their meaning."""
    versions = ", ".join(str(v) for v in supported)
    version = doc.data.get("schema_version")
    if version is None:
        raise BadInputError(
            f"schema_version is missing (this evalctl reads version {versions})",
            file=str(doc.path),
            field="schema_version",
        )
    # bool is an int subclass in Python; `true` is not a version.
    if isinstance(version, bool) or version not in supported:
        hint = None
        if isinstance(version, int) and not isinstance(version, bool) and version > max(supported):
            hint = "the file was written by a newer evalctl; upgrade evalctl to read it"
        raise BadInputError(
            f"unsupported schema_version {version!r} (this evalctl reads version {versions})",
            file=str(doc.path),
            field="schema_version",
            hint=hint,
        )


def validate_document(
    doc: Document, model: type[M], *, case_list: str | None = None, case_map: str | None = None
) -> M:
    """Validate `doc` as `model`, turning the first error into a located BadInputError.

    `case_list` names a list of case objects each carrying a `key` (run results: `cases`);
    `case_map` names a mapping keyed by case key (baselines: `baselines`). Errors inside
    either report that case key rather than an index.
    """
    try:
        return model.model_validate(doc.data)
    except ValidationError as exc:
        raise located_error(doc, exc, case_list=case_list, case_map=case_map) from None


def located_error(
    doc: Document,
    exc: ValidationError,
    *,
    case_list: str | None = None,
    case_map: str | None = None,
) -> BadInputError:
    errors = exc.errors()
    err = errors[0]
    loc: tuple[int | str, ...] = tuple(err["loc"])
    case_key: str | None = None
    if case_list and len(loc) >= 2 and loc[0] == case_list and isinstance(loc[1], int):
        case_key = _case_key_at(doc.data.get(case_list), loc[1], case_list)
        loc = loc[2:]
    elif case_map and len(loc) >= 2 and loc[0] == case_map and isinstance(loc[1], str):
        case_key = loc[1]
        loc = (case_map, *loc[2:])
    message = _MESSAGES.get(err["type"], err["msg"])
    if err["type"] not in _MESSAGES:
        message += f" (found {_short_repr(err.get('input'))})"
    if len(errors) > 1:
        more = len(errors) - 1
        message += f"; {plural(more, 'more problem')} in this file"
    # Worded as every user file's errors are: list positions from 1 (`checks[1].passed`).
    field = userfiles.field_path(loc) or None
    return BadInputError(message, file=str(doc.path), case_id=case_key, field=field)


def _case_key_at(cases: Any, index: int, case_list: str) -> str:
    if isinstance(cases, list) and index < len(cases) and isinstance(cases[index], dict):
        key = cases[index].get("key")
        if isinstance(key, str) and key:
            return key
    # No usable key (it may be the very field that is wrong): fall back to the position.
    return userfiles.field_path((case_list, index))


def _short_repr(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
