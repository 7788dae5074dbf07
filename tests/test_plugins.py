"""Plugins: a third-party plugin (tests/plugin_pkg/evalctl_ping.py) loaded through a real entry
point and through `plugins = [...]` in evalctl.toml, used in real `evalctl run`s; broken
plugins are one-line errors naming them; `evalctl plugins` says where each thing came from."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalctl import plugin_loader
from evalctl.cases.loader import load_suite
from evalctl.errors import BadInputError
from evalctl.plugin import Registry

PLUGIN_DIR = Path(__file__).resolve().parent / "plugin_pkg"
REPO = PLUGIN_DIR.parent.parent

PING_SUITE = """
[suite]
name = "ping"
kind = "ping"
system_prompt = "Answer exactly."
tools = ["reverse"]

[[case]]
id = "plain"
input = { prompt = "say pong" }
expected = { answer = "pong" }

[[case]]
id = "backwards"
input = { prompt = "reverse abc" }
expected = { answer = "cba", reversed = "abc" }
"""

PING_SCRIPT = """
[[cases."ping/plain"]]
content = "pong"

[[cases."ping/backwards"]]
tool_calls = [{ name = "reverse", arguments = { text = "abc" } }]

[[cases."ping/backwards"]]
content = "cba"
"""


def write_dist_info(site: Path, entry_point: str = "ping = evalctl_ping") -> None:
    """An installed distribution's metadata, as pip writes it: importlib.metadata finds its
    entry points on sys.path like any installed package's."""
    info = site / "evalctl_ping-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evalctl-ping\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[evalctl.plugins]\n{entry_point}\n")


def project(tmp_path: Path, config: str = "") -> Path:
    root = tmp_path / "proj"
    (root / "cases").mkdir(parents=True)
    (root / "cases" / "ping.toml").write_text(PING_SUITE)
    (root / "script.toml").write_text(PING_SCRIPT)
    if config:
        (root / "evalctl.toml").write_text(config)
    return root


def evalctl(
    cwd: Path, *args: str, pythonpath: list[Path] | None = None, home: Path
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["EVALCTL_HOME"] = str(home)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
    return subprocess.run(
        [sys.executable, "-m", "evalctl.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def run_ping(root: Path, home: Path, pythonpath: list[Path] | None = None) -> dict[str, Any]:
    proc = evalctl(
        root,
        "run",
        "--provider",
        "scripted",
        "--script",
        "script.toml",
        "--cases",
        "cases/ping.toml",
        "--out",
        "out",
        "--json",
        pythonpath=pythonpath,
        home=home,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads((root / "out" / "results.json").read_text())
    return result


def assert_ping_ran(result: dict[str, Any]) -> None:
    cases = {c["id"]: c for c in result["cases"]}
    assert {i: c["status"] for i, c in cases.items()} == {"plain": "pass", "backwards": "pass"}
    # The plugin's tool really ran through the recording spy.
    [call] = cases["backwards"]["tool_calls"]
    assert (call["name"], call["arguments"], call["result"]) == ("reverse", {"text": "abc"}, "cba")
    assert call["data"] == {"plugin": "evalctl_ping"}
    assert {c["name"] for c in cases["backwards"]["checks"]} == {"answer", "reversed"}


def plugins_json(root: Path, home: Path, pythonpath: list[Path] | None = None) -> dict[str, Any]:
    proc = evalctl(root, "plugins", "--json", pythonpath=pythonpath, home=home)
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def origin_of(report: dict[str, Any], type_: str, name: str) -> tuple[str, str]:
    [row] = [e for e in report["extensions"] if (e["type"], e["name"]) == (type_, name)]
    return row["plugin"], row["source"]


# --- the two ways in, each used in a real run -----------------------------------------------


def test_an_entry_point_plugin_provides_a_kind_and_a_tool_to_a_run(
    tmp_path: Path, evalctl_home: Path
) -> None:
    site = tmp_path / "site"
    write_dist_info(site)
    root = project(tmp_path)
    path = [site, PLUGIN_DIR]
    assert_ping_ran(run_ping(root, evalctl_home, path))
    report = plugins_json(root, evalctl_home, path)
    for type_, name in (("kind", "ping"), ("tool", "reverse"), ("check", "starts-with")):
        assert origin_of(report, type_, name) == ("evalctl-ping", "entry point")
    assert origin_of(report, "kind", "catalog-qa") == ("evalctl.suites.sommelier", "builtin")
    assert {"plugin": "evalctl-ping", "source": "entry point", "target": "evalctl_ping"} in (
        report["plugins"]
    )


def test_an_evalctl_toml_plugin_is_imported_from_the_project_directory(
    tmp_path: Path, evalctl_home: Path
) -> None:
    root = project(tmp_path, 'plugins = ["evalctl_ping"]\n')
    # Only the project directory holds the module: nothing on PYTHONPATH.
    shutil.copy(PLUGIN_DIR / "evalctl_ping.py", root / "evalctl_ping.py")
    validate = evalctl(root, "cases", "validate", "cases/ping.toml", home=evalctl_home)
    assert validate.returncode == 0, validate.stderr
    assert_ping_ran(run_ping(root, evalctl_home))
    report = plugins_json(root, evalctl_home)
    assert origin_of(report, "kind", "ping") == ("evalctl_ping", "evalctl.toml")
    assert origin_of(report, "tool", "reverse") == ("evalctl_ping", "evalctl.toml")


def test_without_the_plugin_the_suite_is_refused_naming_the_known_kinds(
    tmp_path: Path, evalctl_home: Path
) -> None:
    root = project(tmp_path)
    proc = evalctl(root, "cases", "validate", "cases/ping.toml", home=evalctl_home)
    assert proc.returncode == 2
    assert "unknown suite kind 'ping'" in proc.stderr
    assert "known: assert, asset-triage, catalog-qa, install-recipe" in proc.stderr
    assert "Traceback" not in proc.stderr


# --- broken plugins ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("import no_such_dependency\n", "cannot be imported: ModuleNotFoundError"),
        ("def register(registry):\n    raise RuntimeError('boom')\n", "RuntimeError: boom"),
        ("x = 1\n", "has no register(registry) function"),
        (
            "def register(registry):\n    registry.add_tool('bad', 42)\n",
            "tool 'bad': not a tool",
        ),
        (
            "def register(registry):\n    registry.add_kind('asset-triage', lambda: None)\n",
            "already registered by plugin 'evalctl.suites.asset_triage' (builtin)",
        ),
        # sys.exit() in a plugin ended evalctl with that code (0: no output, no results).
        ("import sys\nsys.exit(0)\n", "cannot be imported: it called sys.exit(0)"),
        (
            "def register(registry):\n    raise SystemExit(5)\n",
            "register() failed: it called sys.exit(5)",
        ),
    ],
)
def test_a_broken_evalctl_toml_plugin_is_a_bad_input_error_naming_it(
    tmp_path: Path, evalctl_home: Path, source: str, message: str
) -> None:
    root = project(tmp_path, 'plugins = ["broken_plugin"]\n')
    (root / "broken_plugin.py").write_text(source)
    proc = evalctl(root, "run", "--provider", "scripted", "--script", "script.toml",
                   "--cases", "cases", home=evalctl_home)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "plugin 'broken_plugin' (evalctl.toml)" in proc.stderr
    assert message in proc.stderr
    assert "evalctl.toml" in proc.stderr and "Traceback" not in proc.stderr


def test_a_missing_evalctl_toml_plugin_names_where_it_was_looked_for(
    tmp_path: Path, evalctl_home: Path
) -> None:
    root = project(tmp_path, 'plugins = ["not_there"]\n')
    proc = evalctl(root, "plugins", home=evalctl_home)
    assert proc.returncode == 2
    assert f"no module 'not_there' in {root}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_broken_entry_point_names_its_distribution(tmp_path: Path, evalctl_home: Path) -> None:
    site = tmp_path / "site"
    write_dist_info(site, "ping = evalctl_ping:no_such_function")
    root = project(tmp_path)
    proc = evalctl(root, "plugins", pythonpath=[site, PLUGIN_DIR], home=evalctl_home)
    assert proc.returncode == 2
    assert "plugin 'evalctl-ping' (entry point)" in proc.stderr
    assert "no_such_function" in proc.stderr and "Traceback" not in proc.stderr


def test_a_factory_that_exits_is_named_when_used() -> None:
    reg = plugin_loader.registry()

    def make() -> Any:
        raise SystemExit(0)

    reg.add_kind("quitter", make)
    with pytest.raises(BadInputError, match=r"kind 'quitter' could not be created: .*sys.exit"):
        reg.kind("quitter")


def test_the_registry_tells_which_plugin_registered_a_check() -> None:
    origin = plugin_loader.check_origin("regex")
    assert origin is not None and origin.source == "builtin"
    assert plugin_loader.check_origin("no-such-check") is None


def test_a_factory_that_returns_the_wrong_thing_is_named_when_used() -> None:
    reg = plugin_loader.registry()
    reg.add_kind("hollow", lambda: object())  # type: ignore[arg-type, return-value]
    with pytest.raises(BadInputError, match="kind 'hollow' is not a kind"):
        reg.kind("hollow")


def test_a_tool_registered_under_another_name_than_its_definition_is_refused() -> None:
    from tests.plugin_pkg.evalctl_ping import ReverseTool

    reg = plugin_loader.registry()
    reg.add_tool("flip", ReverseTool())
    with pytest.raises(BadInputError, match="tool 'flip' is named 'reverse' in its definition"):
        reg.tool("flip")


def test_a_check_registered_under_another_name_than_its_type_is_refused() -> None:
    from tests.plugin_pkg.evalctl_ping import StartsWith

    reg = plugin_loader.registry()
    reg.add_check("begins-with", StartsWith())
    with pytest.raises(BadInputError, match="check 'begins-with' names its type 'starts-with'"):
        reg.check("begins-with")


def test_a_check_of_the_old_shape_is_not_a_check() -> None:
    class OldCheck:  # evaluate(params, transcript) and no type_name: the protocol before
        params_model = Registry

        def evaluate(self, params: Any, transcript: Any) -> Any: ...

    with pytest.raises(BadInputError, match=r"not a check \(needs type_name, params_model"):
        Registry().add_check("old", OldCheck())


def test_the_judge_has_one_provider() -> None:
    reg = plugin_loader.registry()
    assert reg.judge() is not None  # the built-in evalctl.judge
    with pytest.raises(BadInputError, match=r"already provided by plugin 'evalctl\.judge'"):
        reg.set_judge(lambda setup: None)  # type: ignore[arg-type, return-value]


# --- laziness and the registry's answers ------------------------------------------------------


def test_factories_run_on_first_use_only() -> None:
    made: list[str] = []

    def make() -> Any:
        from tests.plugin_pkg.evalctl_ping import ReverseTool

        made.append("reverse")
        return ReverseTool()

    reg = Registry()
    reg.add_tool("reverse", make)
    assert made == [] and reg.names("tool") == ["reverse"]
    assert reg.tool("reverse") is reg.tool("reverse")
    assert made == ["reverse"]


def test_help_loads_no_plugin() -> None:
    probe = (
        "import sys\n"
        "from evalctl.cli import app\n"
        "sys.argv = ['evalctl', '--help']\n"
        "try:\n"
        "    app.main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('SUITES=' + str(any(m.startswith('evalctl.suites') for m in sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout
    assert "plugins" in out  # the command is listed
    assert out.strip().endswith("SUITES=False")


def test_unknown_tool_lists_the_known_ones(tmp_path: Path) -> None:
    suite = tmp_path / "s.toml"
    suite.write_text(
        PING_SUITE.replace('kind = "ping"', 'kind = "asset-triage"').replace(
            'tools = ["reverse"]', 'tools = ["lookup_order"]'
        )
    )
    with pytest.raises(
        BadInputError, match=r"unknown tool 'lookup_order' \(known: extract_pattern"
    ):
        load_suite(suite)


def test_a_plugin_setting_is_validated_and_unknown_keys_are_still_errors(
    tmp_path: Path, evalctl_home: Path
) -> None:
    root = project(tmp_path, "catalog_dbb = 'x.sqlite'\n")
    proc = evalctl(root, "plugins", home=evalctl_home)
    assert proc.returncode == 2
    assert "field 'catalog_dbb': unknown key (plugin settings: catalog_db)" in proc.stderr
    (root / "evalctl.toml").write_text("catalog_db = 3\n")
    proc = evalctl(root, "plugins", home=evalctl_home)
    assert proc.returncode == 2 and "field 'catalog_db'" in proc.stderr


# --- the documented example works as written ------------------------------------------------


def doc_block(text: str, label: str) -> str:
    """The fenced code block following the line `label` (or starting with it) in the doc."""
    start = text.index(label)
    fence = text.index("```", start)
    body_start = text.index("\n", fence) + 1
    return text[body_start : text.index("```", body_start)]


def test_the_plugins_doc_example_runs(tmp_path: Path, evalctl_home: Path) -> None:
    doc = (REPO / "docs" / "plugins.md").read_text()
    root = tmp_path / "orders"
    (root / "cases").mkdir(parents=True)
    (root / "orders_plugin.py").write_text(doc_block(doc, "`orders_plugin.py`:"))
    (root / "evalctl.toml").write_text(doc_block(doc, "`evalctl.toml`:"))
    (root / "cases" / "orders.toml").write_text(doc_block(doc, "`cases/orders.toml`:"))
    (root / "script.toml").write_text(doc_block(doc, "Check it is loaded"))
    report = plugins_json(root, evalctl_home)
    assert origin_of(report, "tool", "lookup_order") == ("orders_plugin", "evalctl.toml")
    proc = evalctl(root, "run", "--provider", "scripted", "--script", "script.toml",
                   "--suite", "orders", "--out", "out", home=evalctl_home)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    [case] = json.loads((root / "out" / "results.json").read_text())["cases"]
    assert case["status"] == "pass"
    assert [c["name"] for c in case["checks"]] == ["looked_up", "status"]
    assert case["tool_calls"][0]["result"] == "shipped"


def test_a_registered_check_is_resolved_and_evaluates(tmp_path: Path) -> None:
    from evalctl.chat import CompletionResponse
    from evalctl.config import load_settings
    from evalctl.plugin import Case, ScoringContext, SuiteTable, Transcript
    from evalctl.scoring.answer import read_answer

    root = project(tmp_path, 'plugins = ["evalctl_ping"]\n')
    shutil.copy(PLUGIN_DIR / "evalctl_ping.py", root / "evalctl_ping.py")
    plugin_loader.configure(load_settings(cwd=root, env={}))
    assert "starts-with" in plugin_loader.check_names()
    check = plugin_loader.get_check("starts-with")
    assert check is not None and plugin_loader.get_check("nope") is None
    params = check.params_model.model_validate({"prefix": "po"})
    assert check.type_name == "starts-with"
    case = Case(suite="s", id="c", description="", features=[], input=params, expected=params,
                checks=[], timeout_s=None)  # fmt: skip
    ctx = ScoringContext(
        case=case,
        suite=SuiteTable(name="s", kind="ping"),
        transcript=Transcript(messages=[], responses=[CompletionResponse(content="pong")]),
        answer=read_answer("pong"),
    )
    assert check.evaluate(params, ctx).passed
    assert not check.evaluate(params.model_validate({"prefix": "x"}), ctx).passed
    with pytest.raises(ValueError, match="Extra inputs"):
        check.params_model.model_validate({"prefix": "po", "prefx": 1})


# --- resources: checked, opened once per suite, handed to tools -------------------------------


class _StampTool:
    """Answers with the resource the runner opened for the suite."""

    def __init__(self) -> None:
        from evalctl.plugin import ToolDef

        self.definition = ToolDef(name="upper", description="stamp", parameters={})

    def run(self, arguments: dict[str, Any], ctx: Any) -> Any:
        from evalctl.plugin import ToolOutput

        return ToolOutput(content=str(ctx.resources["stamp"]).upper())


def test_a_plugin_resource_is_checked_opened_once_and_given_to_tools(
    tmp_path: Path, evalctl_home: Path
) -> None:
    from evalctl.config import Settings
    from evalctl.plugin import Suite
    from evalctl.retry import RetryPolicy
    from evalctl.runner.api import RunRequest
    from evalctl.runner.execute import execute_run
    from tests.echo_kind import KIND, SUITE_TOML

    opened: list[Path] = []

    def check(settings: Settings, suite: Suite) -> str | None:
        stamp = suite.path.parent / "stamp.txt"  # next to the suite file, not the cwd
        return None if stamp.is_file() else f"{stamp} not found"

    def open_(settings: Settings, suite: Suite) -> str:
        opened.append(suite.path)
        return (suite.path.parent / "stamp.txt").read_text().strip()

    reg = plugin_loader.registry()
    reg.add_kind("echo", KIND)
    reg.add_tool("upper", _StampTool())
    reg.add_resource("stamp", check, open_)
    suites = tmp_path / "suites"
    suites.mkdir()
    suite = suites / "echo.toml"
    suite.write_text(SUITE_TOML.replace("max_turns = 3", 'max_turns = 3\nrequires = ["stamp"]'))
    script = tmp_path / "script.toml"
    script.write_text(
        '[[cases."echo/hello"]]\ncontent = "hello"\n'
        '[[cases."echo/shout"]]\ntool_calls = [{ name = "upper", arguments = {} }]\n'
        '[[cases."echo/shout"]]\ncontent = "HI"\n'
    )

    def run(out: str) -> Any:
        request = RunRequest(
            provider="scripted", script=script, paths=[suite], out_dir=tmp_path / out,
            show_progress=False,
        )  # fmt: skip
        retry = RetryPolicy(max_attempts=1, sleep=lambda _s: None)
        return execute_run(request, Settings(home=evalctl_home), {}, retry=retry).result

    missing = run("missing")
    assert {c.status for c in missing.cases} == {"skipped"}
    assert missing.cases[0].skip_reason == (
        f"requirement 'stamp' not met: {suites / 'stamp.txt'} not found"
    )
    assert opened == []
    (suites / "stamp.txt").write_text("hi\n")
    result = run("present")
    assert [c.status for c in result.cases] == ["pass", "pass"]
    assert result.cases[1].tool_calls[0].result == "HI"
    assert opened == [suite]  # once for the suite, not once per case
