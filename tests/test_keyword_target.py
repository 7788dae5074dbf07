"""`call = "keywords"` on a python target: the case's input fields are the function's keyword
arguments (`answer(question="...")`), and the sampling settings reach it only as the keywords
it declares; input fields of the application's own are refused for any other suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalctl.cases.loader import load_suite
from evalctl.errors import BadInputError, ExitCode, ProviderError
from evalctl.providers.targets.python_target import keyword_arguments
from tests.cli_helpers import run_cli
from tests.target_helpers import run_suite, unique, write

APP = """
import json

def answer(question):
    return json.dumps({"question": question})

def sampled(question, *, temperature, seed=None):
    return json.dumps({"question": question, "temperature": temperature, "seed": seed})

def everything(**kwargs):
    return json.dumps(kwargs, sort_keys=True)

async def answer_async(question, top_p=None):
    return {"text": json.dumps({"question": question, "top_p": top_p})}
"""


def _suite(tmp_path: Path, function: str, inputs: str, call: str = 'call = "keywords"') -> Path:
    return write(
        tmp_path / "suite.toml",
        f"""
        [suite]
        name = "kw"
        kind = "assert"
        temperature = 0.7
        seed = 5
        target = {{ type = "python", function = "{function}", {call} }}

        [[case]]
        id = "one"
        input = {inputs}
        [[case.assert]]
        type = "json-valid"
        """,
    )


@pytest.fixture
def app(tmp_path: Path) -> str:
    name = unique("kwapp")
    write(tmp_path / f"{name}.py", APP)
    return name


def _output(tmp_path: Path, suite: Path) -> dict[str, object]:
    (case,) = run_suite(suite, tmp_path / "out").cases
    assert case.status == "pass", case
    parsed = json.loads(case.output)
    assert isinstance(parsed, dict)
    return parsed


def test_the_question_alone_reaches_a_function_that_declares_no_sampling(
    tmp_path: Path, app: str
) -> None:
    suite = _suite(tmp_path, f"{app}:answer", '{ question = "A red under 20?" }')
    assert _output(tmp_path, suite) == {"question": "A red under 20?"}


def test_sampling_settings_reach_only_the_keywords_declared(tmp_path: Path, app: str) -> None:
    suite = _suite(tmp_path, f"{app}:sampled", '{ question = "q" }')
    assert _output(tmp_path, suite) == {"question": "q", "temperature": 0.7, "seed": 5}
    # A **kwargs declares none of them: only the input's fields arrive.
    suite = _suite(tmp_path, f"{app}:everything", '{ question = "q", limit = 3 }')
    assert _output(tmp_path, suite) == {"limit": 3, "question": "q"}
    suite = _suite(tmp_path, f"{app}:answer_async", '{ question = "q" }')
    assert _output(tmp_path, suite) == {"question": "q", "top_p": 1.0}


def test_a_prompt_case_passes_prompt_as_the_keyword(tmp_path: Path, app: str) -> None:
    suite = _suite(tmp_path, f"{app}:everything", '{ prompt = "hello" }')
    assert _output(tmp_path, suite) == {"prompt": "hello"}


def test_fields_that_do_not_fit_the_signature_end_the_case_in_error(
    tmp_path: Path, app: str
) -> None:
    suite = _suite(tmp_path, f"{app}:answer", '{ query = "q" }')
    (case,) = run_suite(suite, tmp_path / "out").cases
    assert case.status == "error"
    assert "do not fit" in (case.error or "")
    assert "query" in (case.error or "")


def test_the_default_still_passes_the_input_document(tmp_path: Path, app: str) -> None:
    suite = _suite(tmp_path, f"{app}:everything", '{ prompt = "hello" }', call="timeout_s = 5")
    (case,) = run_suite(suite, tmp_path / "out").cases
    # `everything(**kwargs)` called with one positional dict is a TypeError: the document is
    # what it got.
    assert case.status == "error"
    assert "TypeError" in (case.error or "")


def test_fields_of_your_own_need_a_keyword_target(tmp_path: Path, app: str) -> None:
    suite = _suite(tmp_path, f"{app}:answer", '{ question = "q" }', call="timeout_s = 5")
    with pytest.raises(BadInputError) as info:
        load_suite(suite)
    assert info.value.code is ExitCode.BAD_INPUT
    assert (info.value.case_id, info.value.field) == ("one", "case.input.question")
    suite = _suite(tmp_path, f"{app}:answer", "{ }")
    with pytest.raises(BadInputError) as info:
        load_suite(suite)
    assert info.value.field == "case.input"


def test_a_bad_call_value_is_exit_2_naming_the_field(tmp_path: Path, app: str) -> None:
    suite = _suite(tmp_path, f"{app}:answer", '{ question = "q" }', call='call = "kwargs"')
    with pytest.raises(BadInputError) as info:
        load_suite(suite)
    assert info.value.field is not None and "call" in info.value.field


def test_keyword_arguments_reads_the_signature() -> None:
    def f(question: str, seed: int = 0) -> str:
        return question

    sampling = {"temperature": 0.2, "top_p": 0.9, "seed": 3}
    fields = {"prompt": None, "messages": None, "question": "q"}
    assert keyword_arguments(f, fields, sampling) == {"question": "q", "seed": 3}
    # An input field of the same name never replaces the sampling setting: it is refused
    # (the loader refuses it first; this is the run's own guard).
    with pytest.raises(ProviderError) as info:
        keyword_arguments(f, {"question": "q", "seed": 9}, sampling)
    assert "'seed'" in info.value.message
    # A field the kind's input model left None is not the case's: the sampling fills it.
    assert keyword_arguments(f, {"question": "q", "seed": None}, sampling) == {
        "question": "q",
        "seed": 3,
    }


APP_RECORDING = """
import json

CALLS = []

def answer(question, seed=None):
    CALLS.append({"question": question, "seed": seed})
    return json.dumps({"question": question, "seed": seed})
"""


@pytest.mark.parametrize("field", ["seed", "temperature", "top_p"])
def test_validate_refuses_an_input_field_named_like_a_sampling_keyword(
    tmp_path: Path, field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Importing the module would leave a mark: validate must refuse without importing it.
    name = unique("kwboom")
    marker = tmp_path / "imported"
    write(
        tmp_path / f"{name}.py",
        f"open({str(marker)!r}, 'w').close()\n\n\ndef answer(question, seed=None):\n"
        "    return question\n",
    )
    suite = _suite(tmp_path, f"{name}:answer", f'{{ question = "q", {field} = 1 }}')
    done = run_cli(capsys, "cases", "validate", str(suite))
    assert done.code == ExitCode.BAD_INPUT, done.out + done.err
    assert f"case.input.{field}" in done.err and "one" in done.err
    assert "Traceback" not in done.err
    assert not marker.exists()
    with pytest.raises(BadInputError) as info:
        load_suite(suite)
    assert (info.value.case_id, info.value.field) == ("one", f"case.input.{field}")


def test_run_refuses_it_before_calling_the_function(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = unique("kwrec")
    write(tmp_path / f"{name}.py", APP_RECORDING)
    suite = _suite(tmp_path, f"{name}:answer", '{ question = "q", seed = 9 }')
    done = run_cli(capsys, "run", "--cases", str(suite), "--out", str(tmp_path / "out"))
    assert done.code == ExitCode.BAD_INPUT, done.out + done.err
    assert "case.input.seed" in done.err
    assert not (tmp_path / "out" / "results.json").exists()


def test_results_record_only_the_sampling_the_function_was_passed(tmp_path: Path, app: str) -> None:
    import importlib

    # `answer(question)` declares no sampling: none was passed, so none is recorded.
    suite = _suite(tmp_path, f"{app}:answer", '{ question = "q" }')
    (case,) = run_suite(suite, tmp_path / "out").cases
    assert case.sampling is not None
    assert (case.sampling.temperature, case.sampling.top_p, case.sampling.seed) == (
        None,
        None,
        None,
    )
    # `answer(question, seed=None)` declares the seed: it gets the suite's, recorded as such.
    name = unique("kwrec")
    write(tmp_path / f"{name}.py", APP_RECORDING)
    suite = _suite(tmp_path, f"{name}:answer", '{ question = "q" }')
    (case,) = run_suite(suite, tmp_path / "out2").cases
    calls = importlib.import_module(name).CALLS
    assert calls == [{"question": "q", "seed": 5}]
    assert case.sampling is not None and case.sampling.seed == 5
    assert case.sampling.temperature is None
