"""`compare`'s fast reader of run results (evalctl.results.scores) returns exactly what the
general reader returns, and nothing wherever the general reader would refuse the file.

The general reader is `load_document(path, skip_conversations=True)` then
`run_from_document`; every file here goes through both. Where the fast reader returns None,
`compare` reads the file the general way, so its errors are worded as before (those tests are
in test_compare.py and test_fuzz_readers.py).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from evalctl import userfiles
from evalctl.errors import BadInputError
from evalctl.results import scores
from evalctl.results.document import CONVERSATION_FIELDS, load_document
from evalctl.results.io import run_from_document
from evalctl.results.models import RunResult
from evalctl.results.scores import FreeForm, _free_form_fields, read_scores
from tests.cli_helpers import run_cli

REPO = Path(__file__).resolve().parent.parent
COMMITTED = sorted((REPO / "baselines" / "local.results").glob("*.json"))


def _general(path: Path) -> RunResult:
    return run_from_document(load_document(path, skip_conversations=True))


def _same(fast: RunResult | None, slow: RunResult) -> None:
    assert fast is not None
    assert fast == slow
    assert fast.model_dump_json() == slow.model_dump_json()
    assert fast.model_fields_set == slow.model_fields_set
    for a, b in zip(fast.cases, slow.cases, strict=True):
        assert type(a) is type(b)
        assert a.model_fields_set == b.model_fields_set
        # The conversation is left at its defaults, as the general reader leaves it.
        assert a.transcript == [] and a.tool_calls == [] and a.output == "" and a.input is None


def _document() -> dict[str, Any]:
    data = json.loads((REPO / "baselines/local.results/asset-triage.json").read_text())
    assert isinstance(data, dict)
    return data


def _write(tmp_path: Path, data: object, name: str = "results.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_committed_results_read_the_same_both_ways(path: Path) -> None:
    slow = _general(path)
    assert slow.cases and any(c.checks for c in slow.cases)
    raw = json.loads(path.read_text())
    # The files hold conversations for the fast reader to skip (retrieval asks no model: its
    # cases have tool calls and no turns).
    assert any(case.get("transcript") or case.get("tool_calls") for case in raw["cases"])
    _same(read_scores(path), slow)


def test_a_run_directory_stands_for_its_results_file(tmp_path: Path) -> None:
    path = _write(tmp_path, _document())
    _same(read_scores(tmp_path), _general(path))


def test_old_files_and_legacy_check_shapes_read_the_same(tmp_path: Path) -> None:
    data = _document()
    data["schema_version"] = 1
    data.pop("kind")  # recognised by its shape
    check = data["cases"][0]["checks"][0]
    check.pop("status")  # a version 1 check: `passed` only
    data["settings"]["max_tokens"] = None  # before it was recorded per suite
    del data["system_prompts"]
    for case in data["cases"]:
        case.pop("daemon", None)
    path = _write(tmp_path, data)
    _same(read_scores(path), _general(path))


def test_conversation_fields_of_any_usual_shape_are_skipped(tmp_path: Path) -> None:
    data = _document()
    case = data["cases"][0]
    case["daemon"] = {"pid": 7, "start_ms": 1.0, "whatever": [1, 2]}
    case["input"] = None
    case["output"] = "x" * 1000
    case["tool_calls"] = [{"anything": {"nested": [1, {"a": None}]}}]
    path = _write(tmp_path, data)
    _same(read_scores(path), _general(path))


def _refused_by_both(path: Path) -> None:
    with pytest.raises(BadInputError):
        _general(path)
    assert read_scores(path) is None


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda d: d.pop("schema_version"), id="no-schema-version"),
        pytest.param(lambda d: d.update(schema_version=True), id="schema-version-true"),
        pytest.param(lambda d: d.update(schema_version=9), id="newer-schema-version"),
        pytest.param(lambda d: d.update(kind="baseline"), id="kind-baseline"),
        pytest.param(lambda d: d.update(baselines={}), id="baseline-shape"),
        pytest.param(lambda d: d["cases"][0].update(surprise=1), id="unknown-case-key"),
        pytest.param(lambda d: d.update(surprise=1), id="unknown-run-key"),
        pytest.param(lambda d: d["cases"][1]["checks"][0].update(passed="yes"), id="passed-str"),
        pytest.param(
            lambda d: d["cases"][1]["checks"][0].update(status="fail", passed=True),
            id="passed-contradicts-status",
        ),
        pytest.param(lambda d: d["cases"][2].pop("status"), id="no-case-status"),
        pytest.param(lambda d: d["cases"][2].update(status="maybe"), id="bad-status"),
    ],
)
def test_what_the_general_reader_refuses_the_fast_one_returns_nothing_for(
    tmp_path: Path, change: Any
) -> None:
    data = _document()
    change(data)
    _refused_by_both(_write(tmp_path, data))


@pytest.mark.parametrize(
    "text",
    [b"", b"   ", b'{"cases": [', b"[]", b"\xef\xbb\xbf{}", b'{"run_id": "\xff"}'],
    ids=["empty", "blank", "truncated", "array", "bom", "not-utf8"],
)
def test_broken_files_get_nothing_from_the_fast_reader(tmp_path: Path, text: bytes) -> None:
    path = tmp_path / "results.json"
    path.write_bytes(text)
    _refused_by_both(path)


def test_a_missing_file_gets_nothing(tmp_path: Path) -> None:
    _refused_by_both(tmp_path / "nowhere.json")


def test_an_unusual_conversation_shape_is_left_to_the_general_reader(tmp_path: Path) -> None:
    """The general reader drops a conversation field whatever it holds; the fast one vouches
    only for the shapes evalctl writes, so here it steps aside rather than refuse."""
    data = _document()
    data["cases"][0]["transcript"] = 42
    path = _write(tmp_path, data)
    assert _general(path).cases[0].transcript == []
    assert read_scores(path) is None


def _nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value]
    return value


def test_free_form_values_are_the_ones_nesting_can_hide_in() -> None:
    found = {(f.steps, f.depth) for f in _free_form_fields()}
    assert (("cases", "*", "checks", "*", "actual"), 5) in found
    assert (("cases", "*", "checks", "*", "expected"), 5) in found
    assert (("provider", "settings", "*"), 3) in found
    # Nothing from the skipped conversation is among them.
    assert not any(set(f.steps) & CONVERSATION_FIELDS for f in _free_form_fields())
    assert all(isinstance(f, FreeForm) for f in _free_form_fields())


@pytest.mark.parametrize("where", ["actual", "expected", "settings"])
def test_nesting_is_refused_exactly_where_the_general_reader_refuses_it(
    tmp_path: Path, where: str
) -> None:
    # A check's `actual` sits 5 levels below the document's root, a provider setting 3.
    depth = 3 if where == "settings" else 5
    deepest = userfiles.MAX_NESTING - depth  # list levels that still fit
    for levels, fits in ((deepest, True), (deepest + 1, False)):
        data = _document()
        value = _nested(levels)
        if where == "settings":
            data["provider"]["settings"]["deep"] = value
        else:
            data["cases"][3]["checks"][0][where] = value
        path = _write(tmp_path, data, f"{where}-{levels}.json")
        if fits:
            _same(read_scores(path), _general(path))
        else:
            _refused_by_both(path)


def test_a_deep_conversation_is_skipped_by_both(tmp_path: Path) -> None:
    data = _document()
    data["cases"][0]["tool_calls"] = [{"arguments": _nested(150)}]
    path = _write(tmp_path, data)
    _same(read_scores(path), _general(path))


def test_reading_leaves_the_document_unchanged_for_other_readers(tmp_path: Path) -> None:
    data = _document()
    before = copy.deepcopy(data)
    path = _write(tmp_path, data)
    read_scores(path)
    assert json.loads(path.read_text()) == before


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("--json",),
        ("--gate", "strict", "--all"),
    ],
    ids=["table", "json", "strict-all"],
)
def test_compare_prints_the_same_whichever_reader_read_the_run(
    args: tuple[str, ...],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The committed baseline against its own sampled results, narrowed to one suite, with
    one case's first check turned to a failure: read fast, then with the fast reader off."""
    data = json.loads((REPO / "baselines/local.results/asset-triage.json").read_text())
    passing = next(c for c in data["cases"] if c["status"] == "pass")
    passing.update(status="fail", pass_rate=0.0, pass_ci_low=0.0, pass_ci_high=0.43)
    for attempt in passing["attempts"]:
        attempt["status"] = "fail"
    check = passing["checks"][0]
    check.update(status="fail", passed=False, actual="broken")
    passing["check_counts"][check["name"]]["passed"] = 0
    results = _write(tmp_path, data)
    argv = ("compare", str(REPO / "baselines/local.json"), str(results), *args)
    fast = run_cli(capsys, *argv)
    monkeypatch.setattr(scores, "read_scores", lambda path: None)
    general = run_cli(capsys, *argv)
    assert (fast.code, fast.out, fast.err) == (general.code, general.out, general.err)
    assert passing["key"] in fast.out
