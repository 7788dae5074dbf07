"""Sampling settings reach the application under test, and results record only what it
received: `temperature`, `top_p` and `seed` in a python target's input dict (or as the
keywords a keyword-called function declares), in a command target's stdin and `{{...}}` in its
argv, and in an http target's body where its template names them (a real loopback server).
Each run is end to end through the runner, with `--samples` or `--temperature`/`--seed`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from evalctl.chat import Sampling
from evalctl.config import Settings
from evalctl.providers.scripted import ScriptedProvider, load_script
from evalctl.results.models import RunResult
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from evalctl.runner.sampling import PERTURB_TEMPERATURE
from tests.target_helpers import NO_SLEEP, serving, unique, write

SAMPLES = 3


def _suite(tmp_path: Path, target: str) -> Path:
    return write(
        tmp_path / "suite.toml",
        f"""
        [suite]
        name = "app"
        kind = "assert"
        target = {target}

        [[case]]
        id = "one"
        input = {{ prompt = "hello" }}
        [[case.assert]]
        type = "regex"
        pattern = "."
        """,
    )


def _run(suite: Path, out: Path, env: dict[str, str] | None = None, **request: Any) -> RunResult:
    run = RunRequest(paths=[suite], out_dir=out, show_progress=False, **request)
    return execute_run(run, Settings(), env or {}, retry=NO_SLEEP).result


def _sampled(suite: Path, out: Path, env: dict[str, str] | None = None) -> RunResult:
    return _run(suite, out, env, repeats=SAMPLES, sampled=True)


def _recorded(result: RunResult) -> list[Sampling | None]:
    (case,) = result.cases
    assert case.status == "pass", (case.error, case.checks)
    return [a.sampling for a in case.attempts]


def _app(tmp_path: Path) -> str:
    """A module whose functions keep what each call received, and answer."""
    name = unique("samplingapp")
    write(
        tmp_path / f"{name}.py",
        """
        SEEN = []

        def as_dict(request):
            SEEN.append({k: request[k] for k in ("temperature", "top_p", "seed")})
            return "ok"

        def seed_only(prompt, seed):
            SEEN.append({"seed": seed})
            return "ok"

        def no_sampling(prompt):
            SEEN.append({})
            return "ok"
        """,
    )
    return name


def _seen(name: str) -> list[dict[str, Any]]:
    return list(sys.modules[name].SEEN)


def test_a_python_target_gets_each_sample_s_settings_in_its_input_dict(tmp_path: Path) -> None:
    name = _app(tmp_path)
    suite = _suite(tmp_path, f'{{ type = "python", function = "{name}:as_dict" }}')
    result = _sampled(suite, tmp_path / "out")
    # A greedy suite sampled: the perturbed temperature, seeds 0..K-1, each sent and received.
    sent = [Sampling(temperature=PERTURB_TEMPERATURE, top_p=1.0, seed=r) for r in range(SAMPLES)]
    assert _seen(name) == [s.model_dump() for s in sent]
    assert _recorded(result) == sent
    plan = result.settings.sampled["app"]
    assert (plan.seeds, plan.temperature, plan.perturbed) == (
        list(range(SAMPLES)),
        PERTURB_TEMPERATURE,
        True,
    )
    # A plain run with --temperature and --seed: those, once.
    result = _run(suite, tmp_path / "plain", temperature=0.7, seed=5)
    assert _seen(name)[-1] == {"temperature": 0.7, "top_p": 1.0, "seed": 5}
    assert result.cases[0].sampling == Sampling(temperature=0.7, top_p=1.0, seed=5)
    assert result.settings.sampling["app"] == Sampling(temperature=0.7, top_p=1.0, seed=5)


def test_a_keyword_called_function_gets_and_records_only_what_it_declares(
    tmp_path: Path,
) -> None:
    name = _app(tmp_path)
    target = f'{{ type = "python", function = "{name}:seed_only", call = "keywords" }}'
    result = _sampled(_suite(tmp_path, target), tmp_path / "out")
    assert _seen(name) == [{"seed": r} for r in range(SAMPLES)]
    # No temperature reached it: the record says so, and so does the suite's plan.
    assert _recorded(result) == [Sampling(temperature=None, top_p=None, seed=r) for r in range(3)]
    plan = result.settings.sampled["app"]
    assert (plan.temperature, plan.top_p, plan.perturbed) == (None, None, False)
    assert plan.seeds == list(range(SAMPLES))

    target = f'{{ type = "python", function = "{name}:no_sampling", call = "keywords" }}'
    result = _sampled(_suite(tmp_path, target), tmp_path / "none")
    assert _recorded(result) == [Sampling(temperature=None, top_p=None, seed=None)] * SAMPLES
    plan = result.settings.sampled["app"]
    assert plan.seeds == [] and "no seed" in plan.perturbation
    assert result.cases[0].sampling == Sampling(temperature=None, top_p=None, seed=None)


def test_a_command_target_gets_them_on_stdin_and_in_argv(tmp_path: Path) -> None:
    write(
        tmp_path / "app.py",
        """
        import json, sys
        doc = json.load(sys.stdin)
        flags = dict(zip(sys.argv[1::2], sys.argv[2::2]))
        print(json.dumps({"text": json.dumps({
            "stdin": {k: doc[k] for k in ("temperature", "top_p", "seed")},
            "argv": flags,
        })}))
        """,
    )
    argv = (
        f'["{sys.executable}", "app.py", "--temp", "{{{{temperature}}}}", "--seed", "{{{{seed}}}}"]'
    )
    suite = _suite(tmp_path, f'{{ type = "command", argv = {argv} }}')
    result = _run(suite, tmp_path / "out", temperature=0.7, seed=5)
    (case,) = result.cases
    assert case.status == "pass", (case.error, case.checks)
    assert json.loads(case.output) == {
        "stdin": {"temperature": 0.7, "top_p": 1.0, "seed": 5},
        "argv": {"--temp": "0.7", "--seed": "5"},
    }
    assert case.sampling == Sampling(temperature=0.7, top_p=1.0, seed=5)

    result = _sampled(suite, tmp_path / "sampled")
    assert _recorded(result) == [
        Sampling(temperature=PERTURB_TEMPERATURE, top_p=1.0, seed=r) for r in range(SAMPLES)
    ]


def test_a_run_of_a_target_suite_beside_a_model_suite_records_each_as_sent(
    tmp_path: Path,
) -> None:
    # The suite with a target is answered by it, the other by the model: the results'
    # per-suite records follow what answered each, not the run's provider.
    name = _app(tmp_path / "suites")
    target = f'{{ type = "python", function = "{name}:no_sampling", call = "keywords" }}'
    _suite(tmp_path / "suites", target)
    write(
        tmp_path / "suites" / "model.toml",
        """
        [suite]
        name = "model"
        kind = "assert"

        [[case]]
        id = "one"
        input = { prompt = "hello" }
        [[case.assert]]
        type = "regex"
        pattern = "."
        """,
    )
    script = write(tmp_path / "script.toml", '[[default]]\ncontent = "hello"\n')
    request = RunRequest(
        paths=[tmp_path / "suites"],
        out_dir=tmp_path / "out",
        show_progress=False,
        repeats=SAMPLES,
        sampled=True,
    )
    scripted = ScriptedProvider(load_script(script))
    result = execute_run(request, Settings(), {}, provider_override=scripted).result
    nothing = Sampling(temperature=None, top_p=None, seed=None)
    by_suite = {c.suite: c for c in result.cases}
    assert [a.sampling for a in by_suite["app"].attempts] == [nothing] * SAMPLES
    assert by_suite["model"].attempts[1].sampling == Sampling(
        temperature=PERTURB_TEMPERATURE, top_p=1.0, seed=1
    )
    assert result.settings.sampling["app"] == nothing
    assert result.settings.sampled["app"].seeds == []
    assert result.settings.sampled["model"].seeds == list(range(SAMPLES))


class _App(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.bodies: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _App

    def do_POST(self) -> None:
        self.server.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        data = json.dumps({"text": "ok"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def app() -> Iterator[_App]:
    with serving(_App()) as server:
        yield server


def test_an_http_target_sends_what_its_body_names_and_records_no_more(
    tmp_path: Path, app: _App
) -> None:
    env = {"APP_URL": app.url}
    body = '{ q = "{{prompt}}", temperature = "{{temperature}}", note = "seed {{seed}}" }'
    suite = _suite(tmp_path, f'{{ type = "http", url = "${{APP_URL}}/a", body = {body} }}')
    result = _sampled(suite, tmp_path / "out", env)
    assert app.bodies == [
        {"q": "hello", "temperature": PERTURB_TEMPERATURE, "note": f"seed {r}"}
        for r in range(SAMPLES)
    ]
    # top_p is in no placeholder: it never reached the application.
    assert _recorded(result) == [
        Sampling(temperature=PERTURB_TEMPERATURE, top_p=None, seed=r) for r in range(SAMPLES)
    ]

    # Without a body the whole input document is sent, sampling and all.
    app.bodies.clear()
    suite = _suite(tmp_path, '{ type = "http", url = "${APP_URL}/b" }')
    result = _run(suite, tmp_path / "whole", env, temperature=0.7, seed=5)
    (sent,) = app.bodies
    assert (sent["prompt"], sent["temperature"], sent["top_p"], sent["seed"]) == (
        "hello",
        0.7,
        1.0,
        5,
    )
    assert result.cases[0].sampling == Sampling(temperature=0.7, top_p=1.0, seed=5)

    # A body that names none of them: nothing is recorded as sent.
    suite = _suite(tmp_path, '{ type = "http", url = "${APP_URL}/c", body = { q = "{{prompt}}" } }')
    result = _run(suite, tmp_path / "none", env, temperature=0.7, seed=5)
    assert result.cases[0].sampling == Sampling(temperature=None, top_p=None, seed=None)
