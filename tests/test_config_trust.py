"""Which evalctl.toml is trusted (issue 38 item 1; docs/security.md, "Which evalctl.toml is
trusted"): only the one found from the working directory loads plugins, chooses where to
write or lets a suite read the environment where no code may run; one discovered from a
suite's directory gives only settings that run no code there, and says what it ignored;
either is refused when another user could have written it; and the pull-request recipe
pins what it says it pins."""

from __future__ import annotations

import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from evalctl.baselines.gating import GateOptions, gate_one, read_results
from evalctl.baselines.write import write_baseline
from evalctl.config import Settings, env_refusal, load_settings
from evalctl.results.document import load_document
from evalctl.results.io import write_run
from evalctl.userpaths import tools_exec_refused
from tests import factories as f
from tests.cli_helpers import evalctl, run_cli
from tests.conftest import REPO

SUITE = """
[suite]
name = "probe"
kind = "assert"
system_prompt = "Answer."
{extra}

[[case]]
id = "one"
input = {{ prompt = "hi" }}
[[case.assert]]
type = "contains"
value = "hi"
"""

REPLIES = '[[cases."probe/one"]]\ncontent = "hi"\n'

# A plugin that leaves a mark when imported: the proof that it ran.
MARKING_PLUGIN = """
from pathlib import Path
Path(__file__).with_name("IMPORTED").write_text("{mark}")

def register(registry):
    pass
"""


def _flat(text: str) -> str:
    return " ".join(text.split())  # Rich wraps long lines


def _pull_request(tmp_path: Path, settings: str) -> tuple[Path, Path]:
    """A working directory with no evalctl.toml (its own repository: the search stops
    there), and a pull request's project beside it whose cases/ carry an evalctl.toml with
    `settings` and a plugin that marks its import. Returns (workdir, cases)."""
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    (work / "replies.toml").write_text(REPLIES)
    project = tmp_path / "pr"
    cases = project / "cases"
    cases.mkdir(parents=True)
    (project / ".git").mkdir()
    (cases / "s.toml").write_text(SUITE.format(extra=""))
    (cases / "evil.py").write_text(MARKING_PLUGIN.format(mark="pull request"))
    (cases / "evalctl.toml").write_text(settings)
    return work, cases


HOSTILE = """plugins = ["evil"]
results_dir = "../../elsewhere"
baselines_dir = "../../victim/baselines"
min_pass_rate = 0.25
"""


@pytest.mark.parametrize("named", ["../pr/cases/s.toml", "../pr/cases"])
@pytest.mark.parametrize("command", [["cases", "validate"], ["cases", "list"]])
def test_a_read_only_command_imports_no_plugin_of_a_discovered_file(
    tmp_path: Path, command: list[str], named: str
) -> None:
    # The folder holds the evalctl.toml: its settings, never read as a suite.
    work, cases = _pull_request(tmp_path, HOSTILE)
    done = evalctl(work, *command, named)
    assert done.returncode == 0, done.stderr
    assert not (cases / "IMPORTED").exists()
    warning = _flat(done.stderr)
    assert "found from a suite's directory, not the working directory" in warning
    assert "ignored: plugins, results_dir, baselines_dir" in warning
    assert "min_pass_rate" not in warning.partition("ignored:")[2]  # suite-level: applied


def test_under_no_tools_exec_a_run_takes_nothing_but_suite_settings_from_a_discovered_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work, cases = _pull_request(tmp_path, HOSTILE)
    monkeypatch.setenv("EVALCTL_NO_TOOLS_EXEC", "1")
    ran = evalctl(
        work, "run", "--provider", "scripted", "--script", "replies.toml",
        "--cases", "../pr/cases/s.toml", "--out", "out",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert not (cases / "IMPORTED").exists()
    assert (work / "out" / "results.json").is_file()
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "victim").exists()
    assert "ignored: plugins, results_dir, baselines_dir" in _flat(ran.stderr)
    # The default results directory stays where the command runs, not where the file is.
    plain = evalctl(
        work, "run", "--provider", "scripted", "--script", "replies.toml",
        "--cases", "../pr/cases/s.toml",
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    assert list((work / "results").iterdir())
    assert not (cases / "results").exists()


@pytest.mark.parametrize("command", ["run", "baseline"])
def test_a_discovered_file_may_not_write_outside_its_project(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    work, cases = _pull_request(tmp_path, 'baselines_dir = "../../victim/baselines"\n')
    victim = tmp_path / "victim" / "baselines" / "scripted.json"
    victim.parent.mkdir(parents=True)
    victim.write_text('{"their": "baseline"}')
    monkeypatch.chdir(work)
    done = run_cli(
        capsys, command, "--provider", "scripted", "--script", "replies.toml",
        "--cases", str(cases / "s.toml"),
    )  # fmt: skip
    assert done.code == 2, done.err
    assert "field 'baselines_dir'" in _flat(done.err)
    assert "outside the project" in _flat(done.err)
    assert victim.read_text() == '{"their": "baseline"}'
    (cases / "evalctl.toml").write_text('results_dir = "/tmp"\n')
    absolute = run_cli(
        capsys, command, "--provider", "scripted", "--script", "replies.toml",
        "--cases", str(cases / "s.toml"),
    )  # fmt: skip
    assert absolute.code == 2 and "field 'results_dir'" in _flat(absolute.err)


def test_where_code_may_run_a_discovered_file_applies_inside_its_project(tmp_path: Path) -> None:
    work, cases = _pull_request(tmp_path, 'plugins = ["evil"]\nresults_dir = "../runs"\n')
    ran = evalctl(
        work, "run", "--provider", "scripted", "--script", "replies.toml",
        "--cases", "../pr/cases/s.toml",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert (cases / "IMPORTED").read_text() == "pull request"  # as docs/security.md says
    assert list((tmp_path / "pr" / "runs").iterdir())
    assert "ignored" not in ran.stderr


def test_the_working_directorys_file_is_trusted_and_a_discovered_one_is_not(
    tmp_path: Path,
) -> None:
    work, cases = _pull_request(tmp_path, HOSTILE + '[security]\nallow_env = ["APP_URL"]\n')
    found = load_settings(work, env={}, suite_paths=[cases / "s.toml"], code_may_run=False)
    assert not found.trusted and found.config_file == (cases / "evalctl.toml").absolute()
    assert found.plugins == [] and found.min_pass_rate == 0.25
    assert found.ignored == ("plugins", "results_dir", "baselines_dir", "security")
    assert found.allowed_env == frozenset()
    (work / "evalctl.toml").write_text('[security]\nallow_env = ["APP_URL"]\n')
    own = load_settings(work, env={}, suite_paths=[cases / "s.toml"], code_may_run=False)
    assert own.trusted and own.ignored == () and own.allowed_env == {"APP_URL"}
    assert load_settings(tmp_path, env={}).trusted  # no file: evalctl's defaults
    # EVALCTL_NO_TOOLS_EXEC restricts a discovered file whatever the caller says.
    (work / "evalctl.toml").unlink()
    env = {"EVALCTL_NO_TOOLS_EXEC": "yes"}
    restricted = load_settings(work, env=env, suite_paths=[cases / "s.toml"], code_may_run=True)
    assert restricted.ignored[0] == "plugins"
    (cases / "evalctl.toml").write_text('plugins = ["evil"]\n')
    whole = load_settings(work, env={}, suite_paths=[cases / "s.toml"], code_may_run=True)
    assert whole.plugins == ["evil"] and whole.ignored == () and not whole.trusted


# ------------------------------------------------------------------ ownership


def test_an_evalctl_toml_in_a_directory_every_user_may_write_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    (shared / "cases").mkdir(parents=True)
    (shared / "cases" / "s.toml").write_text(SUITE.format(extra=""))
    (shared / "evalctl.toml").write_text('plugins = ["evil"]\n')
    (shared / "evil.py").write_text(MARKING_PLUGIN.format(mark="planted"))
    shared.chmod(0o1777)
    monkeypatch.chdir(shared)
    refused = run_cli(capsys, "cases", "list", "cases")
    assert refused.code == 2, refused.out
    message = _flat(refused.err)
    assert "detected dubious ownership" in message
    assert f"{shared} is writable by every user (mode 1777)" in message
    assert f"export EVALCTL_SAFE_DIRECTORIES={shared}" in message
    assert not (shared / "IMPORTED").exists()
    monkeypatch.setenv("EVALCTL_SAFE_DIRECTORIES", f"/nonexistent{os.pathsep}{tmp_path}")
    allowed = evalctl(shared, "cases", "list", "cases")
    assert allowed.returncode == 0, allowed.stderr
    assert (shared / "IMPORTED").read_text() == "planted"


def test_the_check_climbs_to_the_project_root_and_no_higher(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    above = tmp_path / "open"
    project = above / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "sub").mkdir()
    (project / "sub" / "evalctl.toml").write_text("min_pass_rate = 0.5\n")
    (project / "sub" / "s.toml").write_text(SUITE.format(extra=""))
    above.chmod(0o777)  # above the repository: not the project's
    monkeypatch.chdir(project / "sub")
    assert run_cli(capsys, "cases", "list", "s.toml").code == 0
    project.chmod(0o777)  # the repository's root: another user could replace sub/
    refused = run_cli(capsys, "cases", "list", "s.toml")
    assert refused.code == 2
    assert f"{project} is writable by every user" in _flat(refused.err)
    project.chmod(0o755)
    above.chmod(0o755)


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user takes root")
def test_an_evalctl_toml_another_user_owns_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "evalctl.toml"
    config.write_text("min_pass_rate = 0.5\n")
    os.chown(config, 4242, 4242)
    (tmp_path / "s.toml").write_text(SUITE.format(extra=""))
    monkeypatch.chdir(tmp_path)
    refused = run_cli(capsys, "cases", "validate", "s.toml")
    assert refused.code == 2
    assert f"{config} is owned by uid 4242, not by you (uid 0) or root" in _flat(refused.err)
    monkeypatch.setenv("EVALCTL_SAFE_DIRECTORIES", "*")
    assert run_cli(capsys, "cases", "validate", "s.toml").code == 0


# ------------------------------------------------------------------ ${VAR}


class _Collector(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []  # one list per test: the fixture resets it

    def do_POST(self) -> None:
        self.seen.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"text": "hi"}')

    do_GET = do_POST

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    """A URL on 127.0.0.1 that records every request it gets (`_Collector.seen`)."""
    _Collector.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _http_suite(url: str, headers: str = "{}", requires: str = "[]") -> str:
    return SUITE.format(
        extra=f'requires = {requires}\n[[suite.target]]\ntype = "http"\nurl = "{url}"\n'
        f"headers = {headers}\n"
    )


@pytest.mark.parametrize(
    ("where", "url", "headers", "requires"),
    [
        ("suite.target[1].url", "{app}/steal?key=${{ANTHROPIC_API_KEY}}", "{{}}", "[]"),
        (
            "suite.target[1].headers.X-Key",
            "${{APP_URL}}/answer",
            '{{ "X-Key" = "${{ANTHROPIC_API_KEY}}" }}',
            "[]",
        ),
        ("suite.requires[1]", "${{APP_URL}}/a", "{{}}", '["http:{app}/${{ANTHROPIC_API_KEY}}"]'),
    ],
)
def test_under_no_tools_exec_a_suite_reads_only_the_variables_evalctl_toml_allows(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    collector: str,
    where: str,
    url: str,
    headers: str,
    requires: str,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-never-sent")
    monkeypatch.setenv("APP_URL", collector)
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "s.toml").write_text(
        _http_suite(url.format(app=collector), headers.format(), requires.format(app=collector))
    )
    (tmp_path / "evalctl.toml").write_text('[security]\nallow_env = ["APP_URL"]\n')
    monkeypatch.chdir(tmp_path)
    # Where code may run, a suite reads the environment as before.
    assert run_cli(capsys, "cases", "validate", "cases").code == 0
    checked = run_cli(capsys, "cases", "validate", "cases", "--no-tools-exec")
    ran = run_cli(capsys, "run", "--cases", "cases", "--no-tools-exec", "--out", "out")
    for result in (checked, ran):
        assert result.code == 2, (result.out, result.err)
        message = _flat(result.err)
        assert f"field '{where}'" in message
        assert "${ANTHROPIC_API_KEY} names an environment variable" in message
        assert 'allow_env = ["ANTHROPIC_API_KEY"]' in message
    assert _Collector.seen == []
    assert not (tmp_path / "out" / "results.json").exists()


def test_an_allowed_variable_runs_and_a_discovered_allowance_counts_for_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    collector: str,
) -> None:
    monkeypatch.setenv("APP_URL", collector)
    monkeypatch.setenv("EVALCTL_NO_TOOLS_EXEC", "1")
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    cases = tmp_path / "pr" / "cases"
    cases.mkdir(parents=True)
    (cases / "s.toml").write_text(_http_suite("${APP_URL}/answer"))
    (cases / "evalctl.toml").write_text('[security]\nallow_env = ["APP_URL"]\n')
    monkeypatch.chdir(work)
    refused = run_cli(capsys, "run", "--cases", str(cases / "s.toml"), "--out", "out")
    assert refused.code == 2 and "field 'suite.target[1].url'" in _flat(refused.err)
    assert "ignored: security" in _flat(refused.err)
    assert _Collector.seen == []
    (work / "evalctl.toml").write_text('[security]\nallow_env = ["APP_URL"]\n')
    ran = run_cli(capsys, "run", "--cases", str(cases / "s.toml"), "--out", "out")
    assert ran.code == 0, ran.err
    assert _Collector.seen == ["/answer"]


def test_env_refusal_is_the_one_rule_for_every_expansion() -> None:
    assert env_refusal("${A}/x/${B}", {"A", "B"}, file="f", field="x") is None
    assert env_refusal("no variables, $HOME stays text", (), file="f", field="x") is None
    refused = env_refusal("${A}${SECRET}", {"A"}, file="s.toml", field="mcp.headers.auth")
    assert refused is not None
    assert refused.file == "s.toml" and refused.field == "mcp.headers.auth"
    assert "${SECRET}" in refused.message


def test_allow_env_takes_only_variable_names(tmp_path: Path) -> None:
    (tmp_path / "evalctl.toml").write_text('[security]\nallow_env = ["A B"]\n')
    with pytest.raises(Exception, match="not an environment variable name"):
        load_settings(tmp_path, env={})


# ------------------------------------------------------------------ gating


def test_the_gate_uses_the_settings_passed_down_not_the_working_directorys_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    baseline = write_baseline(f.baseline({"s/a": "pass"}), tmp_path / "base.json")
    results = write_run(f.run([f.case("s/a")]), tmp_path / "now")
    (tmp_path / "evalctl.toml").write_text('compare_gate = "lenient"\n')  # unreadable
    monkeypatch.chdir(tmp_path)
    for gate in ("strict", "statistical"):
        cmp = gate_one(
            load_document(baseline),
            read_results(results),
            GateOptions(),
            Settings(compare_gate=gate),  # type: ignore[arg-type]
        )
        assert cmp.gate == gate


# ------------------------------------------------------------------ the recipe


def _recipe() -> dict[str, object]:
    text = (REPO / "docs" / "security.md").read_text()
    section = text.partition("## Running suites from an untrusted pull request")[2]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None
    loaded = yaml.safe_load(block.group(1))
    assert isinstance(loaded, dict)
    return loaded


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_pull_request_recipe_pins_evalctl_toml_and_its_plugins_as_written(
    tmp_path: Path,
) -> None:
    recipe = _recipe()
    # `on:` is YAML 1.1's true.
    assert recipe.get("on", recipe.get(True)) == "pull_request"  # type: ignore[call-overload]
    job = recipe["jobs"]["suites"]  # type: ignore[index]
    assert job["permissions"] == {"contents": "read"}
    assert tools_exec_refused(job["env"])
    steps = job["steps"]
    runs = [str(step.get("run", "")) for step in steps]
    pin = next(i for i, step in enumerate(steps) if "Pin" in str(step.get("name", "")))
    first_evalctl = next(i for i, run in enumerate(runs) if run.startswith("evalctl"))
    assert pin < first_evalctl
    assert not any("pip install -e" in run for run in runs)  # the PR's build runs code

    # A base branch whose plugin marks "base"; a pull request that changes the plugin, adds
    # a package of the same name (Python prefers it) and a plugin of its own.
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "cases").mkdir()
    (repo / "cases" / "s.toml").write_text(SUITE.format(extra=""))
    (repo / "evalctl.toml").write_text('plugins = ["plug"]\n')
    (repo / "plug.py").write_text(MARKING_PLUGIN.format(mark="base"))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    _git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    _git(repo, "checkout", "-q", "-b", "pr")
    (repo / "evalctl.toml").write_text('plugins = ["plug", "evil"]\n')
    (repo / "plug.py").write_text(MARKING_PLUGIN.format(mark="pull request"))
    (repo / "plug").mkdir()
    (repo / "plug" / "__init__.py").write_text(MARKING_PLUGIN.format(mark="pr package"))
    (repo / "evil.py").write_text(MARKING_PLUGIN.format(mark="pr plugin"))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "pr")

    step = steps[pin]
    env = {
        **os.environ,
        **{k: str(v).replace("${{ github.base_ref }}", "main") for k, v in step["env"].items()},
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    subprocess.run(["bash", "-e", "-c", step["run"]], cwd=repo, env=env, check=True)
    checked = evalctl(repo, "cases", "validate")
    assert checked.returncode == 0, checked.stderr
    assert (repo / "IMPORTED").read_text() == "base"
    assert not (repo / "plug").exists()
    assert (repo / "evalctl.toml").read_text() == 'plugins = ["plug"]\n'

    # A base without evalctl.toml: the one the pull request adds is removed.
    _git(repo, "checkout", "-q", "-f", "pr")
    _git(repo, "rm", "-q", "evalctl.toml")
    _git(repo, "commit", "-q", "-m", "base without settings")
    _git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    (repo / "evalctl.toml").write_text('plugins = ["evil"]\n')
    subprocess.run(["bash", "-e", "-c", step["run"]], cwd=repo, env=env, check=True)
    assert not (repo / "evalctl.toml").exists()
