"""The trust model (docs/security.md) and the validation gaps of issue 20: `cases validate`
and `cases list` run none of a suite's code, `--no-tools-exec` refuses tools that would, a
schema may only refer inside itself (never fetched, never looping), and for every probe here
`validate` refuses exactly what `run` refuses, with one line naming the file and field."""

from __future__ import annotations

import json
import textwrap
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalctl.json_schema import reference_problem, schema_problem, validation_errors
from evalctl.tools.base import CUT, RECORD_NESTING, capped
from evalctl.tools.declared import command_file_problems
from tests.cli_helpers import evalctl, run_cli

HEAD = """
[suite]
name = "{name}"
kind = "assert"
system_prompt = "Answer."
{suite_extra}

[[case]]
id = "one"
input = {{ prompt = "hi" }}
[[case.assert]]
type = "contains"
value = "hi"
{assert_extra}
"""

REPLIES = """
[[cases."probe/one"]]
content = "hi"
"""


def suite(name: str = "probe", suite_extra: str = "", assert_extra: str = "") -> str:
    return HEAD.format(name=name, suite_extra=suite_extra, assert_extra=assert_extra)


SH_TOOL = """
tools = ["sh"]
[[suite.tool]]
name = "sh"
description = "A shell script given inline"
command = ["sh", "-c", "cat >/dev/null; printf '{\\"url\\": \\"https://example.com/a/b\\"}'"]
"""

# (probe, files of the suite directory, extra run/validate flags, what the error names)
PROBES: list[tuple[str, dict[str, str], list[str], str]] = [
    (
        "self-referring $ref",
        {"s.toml": suite(suite_extra='output_schema = { "$ref" = "#" }')},
        [],
        "field 'suite.output_schema': $ref at # refers back to itself",
    ),
    (
        "unresolvable $ref",
        {"s.toml": suite(suite_extra='output_schema = { "$ref" = "#/$defs/nope" }')},
        [],
        "field 'suite.output_schema': $ref '#/$defs/nope' (at #) does not resolve",
    ),
    (
        "recursive $defs",
        {
            "s.toml": suite(
                suite_extra='output_schema = { "$ref" = "#/$defs/a", "$defs" = '
                '{ a = { allOf = [{ "$ref" = "#/$defs/b" }] }, b = { "$ref" = "#/$defs/a" } } }'
            )
        },
        [],
        "refers back to itself without going into the value",
    ),
    (
        "remote $ref in a tool's parameters",
        {
            "s.toml": suite(
                suite_extra='tools = ["t"]\n[[suite.tool]]\nname = "t"\ndescription = "d"\n'
                'fixture = "f.json"\nkey = "k"\nparameters = { type = "object", properties = '
                '{ k = { "$ref" = "https://example.invalid/k.json" } } }'
            ),
            "f.json": "{}",
        },
        [],
        "field 'suite.tool[1].parameters': $ref 'https://example.invalid/k.json' "
        "(at #/properties/k) points outside the schema",
    ),
    (
        "self-referring $ref in a json-schema assertion",
        {
            "s.toml": suite(
                assert_extra='[[case.assert]]\ntype = "json-schema"\nschema = { "$ref" = "#" }'
            )
        },
        [],
        "refers back to itself",
    ),
    (
        "nan weight",
        {"s.toml": suite(assert_extra="weight = nan")},
        [],
        "field 'case.assert[1].weight': must be a finite number above 0",
    ),
    (
        "inf weight",
        {"s.toml": suite(assert_extra="weight = inf")},
        [],
        "field 'case.assert[1].weight': must be a finite number above 0",
    ),
    (
        "one suite name in two files",
        {"s.toml": suite(), "t.toml": suite()},
        [],
        "suite name 'probe' is used by several files",
    ),
    (
        "a python tool under --no-tools-exec",
        {
            "s.toml": suite(
                suite_extra='tools = ["py"]\n[[suite.tool]]\nname = "py"\ndescription = "d"\n'
                'python = "json:dumps"'
            )
        },
        ["--no-tools-exec"],
        "field 'suite.tool[1].python': tool 'py' is a python tool, which runs code",
    ),
    (
        "a command tool under --no-tools-exec",
        {"s.toml": suite(suite_extra=SH_TOOL)},
        ["--no-tools-exec"],
        "field 'suite.tool[1].command': tool 'sh' is a command tool, which runs code",
    ),
]


def _lay_out(root: Path, files: dict[str, str]) -> Path:
    cases = root / "cases"
    cases.mkdir(parents=True)
    for name, text in files.items():
        (cases / name).write_text(textwrap.dedent(text))
    (root / "replies.toml").write_text(REPLIES)
    return cases


def _flat(text: str) -> str:
    return " ".join(text.split())  # Rich wraps long lines


@pytest.mark.parametrize(("probe", "files", "flags", "message"), PROBES, ids=[p[0] for p in PROBES])
def test_validate_refuses_what_run_refuses(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    probe: str,
    files: dict[str, str],
    flags: list[str],
    message: str,
) -> None:
    cases = _lay_out(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    checked = run_cli(capsys, "cases", "validate", str(cases), *flags)
    ran = run_cli(
        capsys, "run", "--provider", "scripted", "--script", "replies.toml",
        "--cases", str(cases), "--out", "out", *flags,
    )  # fmt: skip
    for result in (checked, ran):
        assert result.code == 2, (probe, result.out, result.err)
        assert message in _flat(result.err), result.err
        assert "Traceback" not in result.err
        assert str(cases) in _flat(result.err)  # the file is named
    assert not (tmp_path / "out" / "results.json").exists()


def test_one_suite_name_in_two_named_files_is_refused_by_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "part1.toml").write_text(suite())
    (tmp_path / "part2.toml").write_text(suite())
    checked = run_cli(capsys, "cases", "validate", str(tmp_path / "part1.toml"),
                      str(tmp_path / "part2.toml"))  # fmt: skip
    assert checked.code == 2
    assert "suite name 'probe' is used by several files" in _flat(checked.err)
    assert str(tmp_path / "part2.toml") in _flat(checked.err)


def test_an_unknown_default_suite_is_refused_by_validate_as_by_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _lay_out(tmp_path, {"s.toml": suite()})
    (tmp_path / "evalctl.toml").write_text('default_suites = ["probe", "gone"]\n')
    monkeypatch.chdir(tmp_path)
    checked = run_cli(capsys, "cases", "validate")
    ran = run_cli(capsys, "run", "--provider", "scripted", "--script", "replies.toml")
    for result in (checked, ran):
        assert result.code == 2, result.err
        assert "unknown suite 'gone' (available: probe)" in result.err
    assert "evalctl.toml: field 'default_suites'" in checked.err
    # Given paths, a run runs what they hold, not the defaults: nothing to refuse.
    assert run_cli(capsys, "cases", "validate", "cases").code == 0


def test_the_environment_variable_is_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = _lay_out(tmp_path, {"s.toml": suite(suite_extra=SH_TOOL)})
    assert run_cli(capsys, "cases", "validate", str(cases)).code == 0
    monkeypatch.setenv("EVALCTL_NO_TOOLS_EXEC", "1")
    checked = run_cli(capsys, "cases", "validate", str(cases))
    assert checked.code == 2
    assert "tool 'sh' is a command tool, which runs code" in _flat(checked.err)


def test_what_validate_accepts_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The counterpart: an inline `sh -c` script holding '/' and a URL is not "a missing file",
    # and a recursive schema that goes into the value (a tree) is a fine schema.
    tree = (
        'output_schema = { "$ref" = "#/$defs/node", "$defs" = { node = { type = "object", '
        'properties = { kids = { type = "array", items = { "$ref" = "#/$defs/node" } } } } } }'
    )
    replies = '[[cases."probe/one"]]\ntool_calls = [{ name = "sh", arguments = {} }]\n'
    replies += '[[cases."probe/one"]]\ncontent = \'{"kids": [{"kids": []}], "a": "hi"}\'\n'
    cases = _lay_out(tmp_path, {"s.toml": suite(suite_extra=tree + SH_TOOL)})
    (tmp_path / "replies.toml").write_text(replies)
    checked = run_cli(capsys, "cases", "validate", str(cases))
    assert checked.code == 0, checked.err
    ran = run_cli(
        capsys, "run", "--provider", "scripted", "--script", str(tmp_path / "replies.toml"),
        "--cases", str(cases), "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert ran.code == 0, ran.err
    case = json.loads((tmp_path / "out" / "results.json").read_text())["cases"][0]
    assert case["status"] == "pass", case["checks"]
    assert case["tool_calls"][0]["data"]["value"] == {"url": "https://example.com/a/b"}


MARKER_MODULE = """\
from pathlib import Path
Path(__file__).with_name("IMPORTED").write_text("tool code ran")

def lookup(city):
    return {"city": city}
"""


def test_validate_and_list_run_no_tool_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = (
        '[[suite.tool]]\nname = "good"\ndescription = "d"\npython = "marker_tools.lookup:lookup"\n'
    )
    gone = '[[suite.tool]]\nname = "gone"\ndescription = "d"\npython = "marker_tools.lookup:nope"\n'
    extra = 'tools = ["good", "gone"]\n' + good + gone
    cases = _lay_out(tmp_path, {"s.toml": suite(suite_extra=extra)})
    package = cases / "marker_tools"
    package.mkdir()
    # Even the package's __init__ must not run: finding a submodule through the import
    # system would execute it.
    (package / "__init__.py").write_text(MARKER_MODULE)
    (package / "lookup.py").write_text(MARKER_MODULE)
    checked = evalctl(tmp_path, "cases", "validate", str(cases))
    assert checked.returncode == 2
    assert "module 'marker_tools.lookup' has no attribute 'nope'" in _flat(checked.stderr)
    assert "'good'" not in checked.stderr
    (cases / "s.toml").write_text(suite(suite_extra='tools = ["good"]\n' + good))
    listed = evalctl(tmp_path, "cases", "list", str(cases), "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["suites"][0]["cases"][0]["key"] == "probe/one"
    assert not list(cases.rglob("IMPORTED"))


def test_a_remote_ref_is_never_fetched(monkeypatch: pytest.MonkeyPatch) -> None:
    fetched: list[Any] = []

    def urlopen(*args: Any, **kwargs: Any) -> Any:
        fetched.append(args)
        raise AssertionError("fetched")

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    schema = {"type": "object", "properties": {"x": {"$ref": "http://127.0.0.1:9/x.json"}}}
    assert "points outside the schema" in (schema_problem(schema) or "")
    # Whatever reaches the validator, nothing is fetched and nothing crashes: the value fails.
    [error] = validation_errors(schema, {"x": 1})
    assert error.startswith("(schema): cannot be checked:") and "127.0.0.1" in error
    assert fetched == []


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"$ref": "#"}, "refers back to itself"),
        ({"not": {"$ref": "#"}}, "refers back to itself"),
        ({"anyOf": [{"type": "string"}, {"$ref": "#/anyOf/1"}]}, "refers back to itself"),
        ({"$ref": "#/$defs/a"}, "does not resolve"),
        ({"$ref": "#missing"}, "does not resolve"),
        ({"$ref": "other.json#/a"}, "points outside the schema"),
        ({"properties": {"x": {"$ref": "#"}}}, None),  # goes into the value: finite
        ({"$ref": "#/$defs/a~1b", "$defs": {"a/b": {"type": "string"}}}, None),
        ({"$ref": "#s", "$defs": {"s": {"$anchor": "s", "type": "string"}}}, None),
        (
            {"$id": "https://x.test/s", "$ref": "https://x.test/s#/$defs/a", "$defs": {"a": {}}},
            None,
        ),
        ({"$dynamicRef": "#nope"}, "$dynamicRef '#nope' (at #) does not resolve"),
        ({"$recursiveRef": "#"}, "refers back to itself"),
        ({"const": {"$ref": "https://x.test/data"}, "enum": [{"$ref": "#/nowhere"}]}, None),
        ({"$defs": {"e": {"$id": "https://x.test/e", "$ref": "#/$defs/f"}}}, None),  # embedded
    ],
)
def test_references_stay_inside_and_end(schema: dict[str, Any], problem: str | None) -> None:
    found = reference_problem(schema)
    assert (found is None) if problem is None else (problem in (found or "")), found


@pytest.mark.parametrize(
    ("command", "missing"),
    [
        (["sh", "-c", "cat a/b.py | tr x y"], []),  # inline script
        (["python3", "-c", "import a.b"], []),
        (["python3", "-m", "pkg.tool", "in/put.py"], []),  # a module, and its arguments
        (["curl", "-s", "https://example.com/x.py"], []),  # a URL
        (["./tool", "out/result.json"], []),  # data may be written, not read
        (["node", "server"], []),
        (["python3", "tools/gone.py", "x/y"], ["tools/gone.py"]),
        (["python3.12", "-u", "gone.py"], ["gone.py"]),
        (["bash", "run.sh"], ["run.sh"]),
        (["./tool", "helper/gone.rb"], ["helper/gone.rb"]),
        (["python3", "there.py"], []),
    ],
)
def test_command_files_are_checked_conservatively(
    tmp_path: Path, command: list[str], missing: list[str]
) -> None:
    (tmp_path / "there.py").write_text("")
    problems = command_file_problems(command, tmp_path)
    assert problems == [f"file not found: {m} (resolved against {tmp_path})" for m in missing]


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"n": [value]} if depth % 2 else [value]
    return value


def test_recorded_values_are_cut_at_a_depth_the_readers_accept() -> None:
    shallow = _nested(10)
    assert capped(shallow) == shallow
    cut = capped(_nested(150))
    depth, node = 0, cut
    while isinstance(node, dict | list):
        node = node["n"] if isinstance(node, dict) else node[0]
        depth += 1
    assert node == CUT and depth == RECORD_NESTING


DEEP_PLUGIN = """\
from evalctl.chat import ToolDef
from evalctl.tools.base import ToolOutput


class Deep:
    definition = ToolDef(name="deep", description="d", parameters={"type": "object"})

    def run(self, arguments, ctx):
        value = "bottom"
        for _ in range(150):
            value = [value]
        return ToolOutput(content="ok", data={"value": value})


def register(registry):
    registry.add_tool("deep", Deep())
"""


def test_a_150_deep_tool_value_gives_results_report_and_baseline_read(tmp_path: Path) -> None:
    cases = _lay_out(tmp_path, {"s.toml": suite(suite_extra='tools = ["deep"]')})
    (tmp_path / "evalctl.toml").write_text('plugins = ["deep_plugin"]\n')
    (tmp_path / "deep_plugin.py").write_text(DEEP_PLUGIN)
    replies = '[[cases."probe/one"]]\ntool_calls = [{ name = "deep", arguments = {} }]\n'
    (tmp_path / "replies.toml").write_text(replies + REPLIES)
    ran = evalctl(tmp_path, "run", "--provider", "scripted", "--script", "replies.toml",
                  "--cases", str(cases), "--out", "out")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    report = evalctl(tmp_path, "report", "out", "--html", "out/report.html")
    assert report.returncode == 0, report.stderr
    baseline = evalctl(tmp_path, "baseline", "--from", "out", "--out", "b.json")
    assert baseline.returncode == 0, baseline.stderr
    text = (tmp_path / "out" / "results.json").read_text()
    assert CUT in text


def test_a_schema_validation_cannot_follow_fails_the_value_instead_of_crashing() -> None:
    # An embedded resource moves the base of its references; validation leaves those to the
    # checking of values, where a dangling one must fail the value with the reason.
    schema = {"$defs": {"e": {"$id": "https://x.test/e", "$ref": "#/$defs/f"}}}
    assert schema_problem({**schema, "$ref": "https://x.test/e"}) is None
    [error] = validation_errors({**schema, "$ref": "https://x.test/e"}, 1)
    assert error.startswith("(schema): cannot be checked: PointerToNowhere")


# --- fuzzing: whatever validation lets through, checking a value against it ends ------------

_POINTERS = ["#", "#/$defs/a", "#/$defs/b", "#/properties/x", "#/allOf/0", "#/items", "#/not"]
_VALUES = st.recursive(
    st.none() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("xy"), inner),
    max_leaves=8,
)


def _schemas() -> st.SearchStrategy[dict[str, Any]]:
    leaf = st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(["object", "array", "string", "integer"]),
        "$ref": st.sampled_from(_POINTERS),
    })  # fmt: skip
    return st.recursive(
        leaf,
        lambda inner: st.fixed_dictionaries(
            {},
            optional={
                "$ref": st.sampled_from(_POINTERS),
                "properties": st.fixed_dictionaries({}, optional={"x": inner, "y": inner}),
                "items": inner,
                "allOf": st.lists(inner, min_size=1, max_size=2),
                "anyOf": st.lists(inner, min_size=1, max_size=2),
                "not": inner,
                "$defs": st.fixed_dictionaries({}, optional={"a": inner, "b": inner}),
            },
        ),
        max_leaves=6,
    )


@settings(
    max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(schema=_schemas(), value=_VALUES)
def test_a_schema_validation_accepts_can_check_any_value(
    schema: dict[str, Any], value: Any
) -> None:
    if schema_problem(schema) is not None:
        return  # refused at validation: exit 2, never run
    errors = validation_errors(schema, value)
    assert not any(e.startswith("(schema): cannot be checked") for e in errors), (schema, errors)


@settings(max_examples=60, deadline=None, database=None)
@given(depth=st.integers(min_value=0, max_value=400), leaf=_VALUES, as_dict=st.booleans())
def test_any_recorded_value_reads_back(depth: int, leaf: Any, as_dict: bool) -> None:
    from evalctl.userfiles import check_nesting

    value = leaf
    for _ in range(depth):
        value = {"k": value} if as_dict else [value]
    kept = capped(value)
    check_nesting(kept, Path("results.json"), limit=RECORD_NESTING)  # raises past the limit
    if depth + _depth(leaf) <= RECORD_NESTING:
        assert kept == value


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0
