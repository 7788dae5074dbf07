"""A prompt x provider x model matrix (issue 22 item 3): `run` with several providers and
models writes one results file per cell and one report; `baseline --from` writes each cell's
baseline; `compare` gates each cell on its own and names the cell and case of a regression.

The cells are the scripted provider and the openai provider against the fake
OpenAI-compatible server on 127.0.0.1, each with two models."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalctl.config import load_settings
from evalctl.fakes.llm_server import FakeLLMServer, RecordedRequest, Step
from evalctl.runner.matrix import plan_cells
from evalctl.runner.resume import Overrides, resume_request
from tests.cli_helpers import run_cli
from tests.conftest import REPO

# The echo suite's cases answered right: `hello`, and `shout` through the `upper` tool.
SCRIPT = """
[[cases."echo/hello"]]
content = "hello"

[[cases."echo/shout"]]
tool_calls = [{ name = "upper", arguments = { text = "hi" } }]

[[cases."echo/shout"]]
content = "HI"
"""
CELLS = {"scripted-m1", "scripted-m2", "openai-m1", "openai-m2"}


class EchoModels:
    """Answers the echo suite on the fake server; `wrong` maps a model to its wrong answer
    for `echo/hello` (a regression planted in that model's cell)."""

    def __init__(self) -> None:
        self.wrong: dict[str, str] = {}

    def __call__(self, req: RecordedRequest) -> Step:
        messages = req.body["messages"]
        if messages[-1]["role"] == "tool":
            return Step.reply("HI")
        if "shout" in req.first_user_text():
            return Step.tool("upper", {"text": "hi"})
        return Step.reply(self.wrong.get(req.model, "hello"), output_tokens=3)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeLLMServer, EchoModels]]:
    models = EchoModels()
    with FakeLLMServer() as server:
        server.set_responder(models)
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        yield server, models


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.toml"
    path.write_text(SCRIPT)
    return path


def _matrix(
    capsys: pytest.CaptureFixture[str], suite: Path, script: Path, out: Path, *extra: str
) -> dict[str, object]:
    result = run_cli(
        capsys,
        "run",
        *("--provider", "scripted", "--provider", "openai"),
        *("--model", "m1", "--model", "m2"),
        *("--script", str(script), "--cases", str(suite), "--out", str(out)),
        *("--json", "--no-progress", *extra),
    )
    assert result.code == 0, result.err
    data: dict[str, object] = json.loads(result.out)
    return data


def test_two_by_two_matrix_writes_a_results_file_per_cell_and_one_report(
    echo_suite: Path,
    script: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fake: tuple[FakeLLMServer, EchoModels],
) -> None:
    server, models = fake
    models.wrong["m2"] = "goodbye"
    out = tmp_path / "matrix"
    data = _matrix(capsys, echo_suite, script, out)

    cells = {c["cell"]: c for c in data["cells"]}  # type: ignore[attr-defined]
    assert set(cells) == CELLS
    for cell_id, cell in cells.items():
        results = json.loads((out / cell_id / "results.json").read_text())
        assert results["provider"]["model"] == cell_id.split("-", 1)[1]
        assert cell["summary"]["total"] == 2
    assert cells["openai-m2"]["summary"]["passed"] == 1
    assert cells["openai-m1"]["summary"]["passed"] == 2
    # Each openai cell asked the server for its own model.
    assert {r.model for r in server.requests if r.method == "POST"} == {"m1", "m2"}

    index = json.loads((out / "matrix.json").read_text())
    assert index["kind"] == "matrix"
    assert {c["id"]: c["results"] for c in index["cells"]}["openai-m2"] == "openai-m2/results.json"

    html = (out / "matrix.html").read_text()
    root = ET.fromstring(html.removeprefix("<!DOCTYPE html>\n"))
    ns = {"h": "http://www.w3.org/1999/xhtml"}
    every = root.find(".//h:section[@id='all']/h:table", ns)
    assert every is not None
    header = ["".join(th.itertext()) for th in every.findall("h:thead/h:tr/h:th", ns)]
    assert header[0] == "case"
    assert [h.split("scripted ·")[0].split("openai ·")[0] for h in header[1:]] == [
        "scripted-m1",
        "scripted-m2",
        "openai-m1",
        "openai-m2",
    ]
    assert "pass rate" in header[4] and "50% (1/2)" in header[4]
    assert "tokens in/out" in header[1] and "latency p50/p95" in header[1]
    rows = {
        "".join(tr.find("h:td/h:code", ns).itertext()): [  # type: ignore[union-attr]
            "".join(td.itertext()) for td in tr.findall("h:td", ns)[1:]
        ]
        for tr in every.findall("h:tbody/h:tr", ns)
    }
    assert len(rows) == 2
    # The rows where the cells disagree come first, in a section of their own.
    disagree = root.findall(".//h:section[@id='disagree']/h:table/h:tbody/h:tr", ns)
    assert ["".join(tr.find("h:td", ns).itertext()) for tr in disagree] == ["echo/hello"]  # type: ignore[union-attr]
    # Side by side: the hello row holds each cell's answer, the planted one in its column.
    # (Each cell then shows the prompt it sent, "say hello": the answer is what comes before.)
    answers = [cell.split("prompt sent")[0].rstrip() for cell in rows["echo/hello"]]
    assert [a.endswith("hello") for a in answers] == [True, True, True, False]
    assert "goodbye" in rows["echo/hello"][3] and "fail" in rows["echo/hello"][3]
    assert "http://" not in html.replace("http://www.w3.org/", "")  # self-contained

    markdown = (out / "matrix.md").read_text()
    disagree, every = markdown.split("<details>")
    hello = next(line for line in disagree.splitlines() if line.startswith("| echo/hello"))
    assert hello.count("hello") == 4 and "goodbye" in hello and "❌ fail (answer)" in hello
    assert "| echo/shout |" in every and "| echo/shout |" not in disagree


def test_each_cell_is_gated_on_its_own_baseline_and_a_regression_names_cell_and_case(
    echo_suite: Path,
    script: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fake: tuple[FakeLLMServer, EchoModels],
) -> None:
    _, models = fake
    baselines = tmp_path / "baselines"
    first = tmp_path / "first"
    _matrix(capsys, echo_suite, script, first)
    written = run_cli(capsys, "baseline", "--from", str(first), "--out", str(baselines), "--json")
    assert written.code == 0, written.err
    assert {b["cell"] for b in json.loads(written.out)["baselines"]} == CELLS
    assert {p.name for p in baselines.glob("*.json")} == {f"{c}.json" for c in CELLS}

    # The index file stands for its directory.
    clean = run_cli(
        capsys, "compare", str(baselines), str(first / "matrix.json"), "--gate", "strict", "--json"
    )
    assert clean.code == 0, clean.err + clean.out
    assert {c["outcome"] for c in json.loads(clean.out)["cells"]} == {"gated"}

    models.wrong["m2"] = "goodbye"
    second = tmp_path / "second"
    _matrix(capsys, echo_suite, script, second)
    gated = run_cli(capsys, "compare", str(baselines), str(second), "--gate", "strict", "--json")
    assert gated.code == 1
    verdict = json.loads(gated.out)
    by_cell = {c["cell"]: c for c in verdict["cells"]}
    assert verdict["exit_code"] == 1
    assert {c: by_cell[c]["exit_code"] for c in CELLS} == {
        "scripted-m1": 0,
        "scripted-m2": 0,
        "openai-m1": 0,
        "openai-m2": 1,
    }
    regressions = by_cell["openai-m2"]["comparison"]["regressions"]
    assert [r["key"] for r in regressions] == ["echo/hello"]
    # The verdict line names the cell and the case.
    assert "cell openai-m2" in gated.err and "echo/hello" in gated.err

    # Without --json: each cell's comparison, then the table of cells.
    text = run_cli(capsys, "compare", str(baselines), str(second), "--gate", "strict")
    assert text.code == 1
    assert "cell openai-m2" in text.out and "echo/hello" in text.out


def test_a_cell_without_a_baseline_is_new_and_a_matrix_with_none_is_bad_input(
    echo_suite: Path,
    script: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fake: tuple[FakeLLMServer, EchoModels],
) -> None:
    out = tmp_path / "run"
    _matrix(capsys, echo_suite, script, out)
    baselines = tmp_path / "baselines"
    baselines.mkdir()
    nothing = run_cli(capsys, "compare", str(baselines), str(out))
    assert nothing.code == 2
    assert "no cell of the matrix has a baseline" in nothing.err
    assert "evalctl baseline --from" in nothing.err

    one = run_cli(
        capsys, "baseline", "--from", str(out), "--cell", "openai-m1", "--out", str(baselines)
    )
    assert one.code == 0, one.err
    assert [p.name for p in baselines.glob("*.json")] == ["openai-m1.json"]
    partial = run_cli(capsys, "compare", str(baselines), str(out), "--json")
    assert partial.code == 0, partial.err
    outcomes = {c["cell"]: c["outcome"] for c in json.loads(partial.out)["cells"]}
    assert outcomes == {
        "openai-m1": "gated",
        "openai-m2": "new",
        "scripted-m1": "new",
        "scripted-m2": "new",
    }


def test_a_matrix_in_evalctl_toml_with_prompt_variants(
    echo_suite: Path,
    script: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fake: tuple[FakeLLMServer, EchoModels],
) -> None:
    server, _ = fake
    project = tmp_path / "project"
    project.mkdir()
    (project / "evalctl.toml").write_text(
        """
[matrix]
providers = ["openai"]
models = ["openai:m1"]
prompts = { plain = "{{ prompt }}", polite = "Please, {{ prompt }}. Thank you." }

[prices.m1]
input_per_mtok = 1000.0
output_per_mtok = 2000.0
"""
    )
    monkeypatch.chdir(project)
    out = tmp_path / "out"
    result = run_cli(
        capsys, "run", "--cases", str(echo_suite), "--out", str(out), "--json", "--no-progress"
    )
    assert result.code == 0, result.err
    cells = [c["cell"] for c in json.loads(result.out)["cells"]]
    assert cells == ["openai-m1-plain", "openai-m1-polite"]
    sent = {r.first_user_text() for r in server.requests if r.method == "POST" and r.model == "m1"}
    assert {"say hello", "Please, say hello. Thank you."} <= sent
    # The transcript records the prompt as sent.
    polite = json.loads((out / "openai-m1-polite" / "results.json").read_text())
    first_turn = polite["cases"][0]["transcript"][0]["sent"]
    assert first_turn[-1]["content"] == "Please, say hello. Thank you."
    # ... and the cell's results name their variant on their own, without matrix.json.
    assert polite["settings"]["prompt_template"] == "Please, {{ prompt }}. Thank you."
    index = json.loads((out / "matrix.json").read_text())
    assert index["cells"][1]["prompt_template"] == "Please, {{ prompt }}. Thank you."
    # A priced model's cost, to two significant digits however small.
    costs = [c["summary"]["estimated_cost_usd"] for c in json.loads(result.out)["cells"]]
    assert all(cost and cost < 0.5 for cost in costs)
    figures = (out / "matrix.md").read_text()
    assert f"${costs[0]:.2g}".rstrip("0") in figures
    # A cell resumed on its own keeps its variant.
    resumed = resume_request(out / "openai-m1-polite", Overrides())
    assert resumed.prompt_template == "Please, {{ prompt }}. Thank you."

    # `evalctl report` draws the matrix again, here after a cell's results changed.
    results = out / "openai-m1-plain" / "results.json"
    edited = json.loads(results.read_text())
    edited["cases"][0]["output"] = "hello, edited"
    results.write_text(json.dumps(edited))
    html = tmp_path / "again.html"
    again = run_cli(capsys, "report", str(out), "--html", str(html), "--markdown", "-")
    assert again.code == 0, again.err
    assert "openai-m1-polite" in again.out and "openai-m1-plain" in again.out
    assert "hello, edited" in html.read_text() and "hello, edited" in again.out


@pytest.mark.parametrize(
    ("toml", "field", "message"),
    [
        (
            'providers = ["openai"]\nprompts = { bad = "no placeholder" }',
            "matrix.prompts.bad",
            "{{ prompt }}",
        ),
        (
            'providers = ["openai"]\nprompts = { bad = "{{ promt }}" }',
            "matrix.prompts.bad",
            "promt",
        ),
        ('providers = ["nope"]', "matrix.providers", "unknown provider 'nope'"),
        ('providers = ["openai"]\nmodel = ["x"]', "matrix.model", "unknown key"),
    ],
)
def test_a_bad_matrix_is_bad_input_naming_the_file_and_field(
    echo_suite: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    toml: str,
    field: str,
    message: str,
) -> None:
    (tmp_path / "evalctl.toml").write_text(f"[matrix]\n{toml}\n")
    monkeypatch.chdir(tmp_path)
    result = run_cli(capsys, "run", "--cases", str(echo_suite), "--no-progress")
    assert result.code == 2
    assert "evalctl.toml" in result.err and field in result.err and message in result.err


def test_model_pairs_apply_to_their_provider_and_clashing_cells_are_refused(
    echo_suite: Path,
    script: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fake: tuple[FakeLLMServer, EchoModels],
) -> None:
    out = tmp_path / "pairs"
    result = run_cli(
        capsys,
        "run",
        *("--provider", "scripted", "--provider", "openai"),
        *("--model", "openai:m1", "--model", "openai:llama3.1:8b"),
        *("--script", str(script), "--cases", str(echo_suite), "--out", str(out)),
        *("--json", "--no-progress"),
    )
    assert result.code == 0, result.err
    cells = {c["cell"]: c["model"] for c in json.loads(result.out)["cells"]}
    # The scripted cell runs the script's own model; an Ollama-style colon is kept.
    assert cells == {"scripted": "scripted", "openai-m1": "m1", "openai-llama3.1_8b": "llama3.1:8b"}

    clash = run_cli(
        capsys,
        "run",
        *("--provider", "openai", "--model", "a/b", "--model", "a_b"),
        *("--cases", str(echo_suite), "--no-progress"),
    )
    assert clash.code == 2
    assert "--model" in clash.err and "'openai-a_b'" in clash.err


def test_a_matrix_refuses_one_run_flags_and_an_unavailable_provider_before_running(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit = run_cli(
        capsys,
        "run",
        *("--provider", "openai", "--model", "m1", "--model", "m2"),
        *("--cases", str(echo_suite), "--junit", str(tmp_path / "j.xml")),
    )
    assert junit.code == 2 and "--junit" in junit.err
    # No OPENAI_BASE_URL or key: refused before any cell runs, naming the cell.
    out = tmp_path / "none"
    missing = run_cli(
        capsys,
        "run",
        *("--provider", "openai", "--model", "m1", "--model", "m2"),
        *("--cases", str(echo_suite), "--out", str(out), "--no-progress"),
    )
    assert missing.code == 3
    assert "cell openai-m1" in missing.err
    assert not out.exists()
    # The scripted provider without its script is a missing flag, as in one run.
    no_script = run_cli(
        capsys,
        *("run", "--provider", "scripted", "--provider", "openai"),
        *("--cases", str(echo_suite), "--out", str(out), "--no-progress"),
    )
    assert no_script.code == 2
    assert "--script" in no_script.err and "cell scripted" in no_script.err
    # The flags every run checks hold for a matrix too (they were once skipped for one).
    both = run_cli(
        capsys,
        *("run", "--provider", "scripted", "--provider", "openai"),
        *("--cases", str(echo_suite), "--samples", "3", "--repeats", "2", "--no-progress"),
    )
    assert both.code == 2 and "--samples" in both.err


def test_the_documented_two_model_matrix_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/writing-suites.md's matrix stays true: its evalctl.toml is a valid [matrix] of
    four cells, and its no-key command runs the 200 tickets on two models."""
    doc = (REPO / "docs" / "writing-suites.md").read_text()
    section = doc.split("### A matrix of providers, models and prompts", 1)[1]
    toml = section.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "evalctl.toml").write_text(toml)
    monkeypatch.chdir(tmp_path)
    matrix = load_settings().matrix
    assert matrix is not None
    cells = plan_cells(matrix.providers, matrix.models, matrix.prompts)
    assert [c.id for c in cells][:2] == ["scripted-small-plain", "scripted-small-terse"]
    assert len(cells) == 8

    assert "--provider scripted --model small --model large" in section
    out = tmp_path / "tickets"
    result = run_cli(
        capsys,
        *("run", "--provider", "scripted", "--model", "small", "--model", "large"),
        *("--script", str(REPO / "examples/tickets/scripts/replies.toml")),
        *("--cases", str(REPO / "examples/tickets/tickets.toml")),
        *("--out", str(out), "--json", "--no-progress"),
    )
    assert result.code == 0, result.err
    summaries = {c["cell"]: c["summary"] for c in json.loads(result.out)["cells"]}
    # The flags replace the matrix's providers and models, never its prompt variants.
    assert {cell: (s["passed"], s["total"]) for cell, s in summaries.items()} == {
        "scripted-small-plain": (201, 201),
        "scripted-small-terse": (201, 201),
        "scripted-large-plain": (201, 201),
        "scripted-large-terse": (201, 201),
    }
    assert "prompt variants from [matrix]" in result.err and "plain, terse" in result.err


def test_provider_all_is_a_matrix_whose_skipped_providers_are_listed(
    echo_suite: Path,
    script: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EVALCTL_LOCAL_MODEL", str(tmp_path / "missing.gguf"))
    out = tmp_path / "all"
    ran = run_cli(
        capsys,
        *("run", "--provider", "all", "--script", str(script), "--cases", str(echo_suite)),
        *("--out", str(out), "--json", "--no-progress"),
    )
    assert ran.code == 0, ran.err
    index = {c["id"]: c for c in json.loads((out / "matrix.json").read_text())["cells"]}
    assert index["scripted"]["results"] == "scripted/results.json"
    assert index["anthropic"]["results"] is None
    assert "ANTHROPIC_API_KEY" in index["anthropic"]["skip_reason"]
    assert (out / "matrix.html").is_file()

    baselines = tmp_path / "baselines"
    written = run_cli(capsys, "baseline", "--from", str(out), "--out", str(baselines))
    assert written.code == 0, written.err
    # A cell on its provider's default model is named as a plain run's baseline is.
    assert [p.name for p in baselines.glob("*.json")] == ["scripted.json"]
    gated = run_cli(capsys, "compare", str(baselines), str(out), "--json")
    assert gated.code == 0, gated.err
    outcomes = {c["cell"]: c["outcome"] for c in json.loads(gated.out)["cells"]}
    assert outcomes["scripted"] == "gated" and outcomes["anthropic"] == "skipped"


# A plugin's provider, as a user would write one, that is stopped by Ctrl-C at its first
# request: the matrix is interrupted in its second cell.
HALT_PLUGIN = """
from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.plugin import ProviderOptions, ProviderTraits, Registry


class Halt:
    name = "halt"
    capabilities = frozenset()
    model_sha256 = None

    def __init__(self, options: ProviderOptions) -> None:
        self.model = options.model or "halt-1"

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        raise KeyboardInterrupt

    def close(self) -> None:
        pass


def register(registry: Registry) -> None:
    registry.add_provider("halt", Halt, ProviderTraits("stops at once"))
"""


def test_an_interrupted_matrix_indexes_and_reports_the_cells_so_far(
    echo_suite: Path,
    script: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "halt_plugin.py").write_text(HALT_PLUGIN)
    (project / "evalctl.toml").write_text(
        'plugins = ["halt_plugin"]\n\n[matrix]\nproviders = ["scripted", "halt", "openai"]\n'
    )
    monkeypatch.chdir(project)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never reached
    out = tmp_path / "out"
    result = run_cli(
        capsys,
        *("run", "--script", str(script), "--cases", str(echo_suite)),
        *("--out", str(out), "--no-progress"),
    )
    assert result.code == 130, result.err
    index = json.loads((out / "matrix.json").read_text())
    assert [(c["id"], c["results"]) for c in index["cells"]] == [
        ("scripted", "scripted/results.json"),
        ("halt", "halt/results.json"),
    ]
    assert json.loads((out / "halt" / "results.json").read_text())["interrupted"] is True
    assert not (out / "openai").exists()
    report = (out / "matrix.md").read_text()
    assert "**scripted**" in report and "**halt**" in report
