"""JUnit XML: one testcase per case, parsed back with xml.etree."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from evalctl.reports.junit import to_junit, write_junit
from evalctl.results.models import Attempt, CheckResult, RunResult
from tests import factories as f
from tests.cli_helpers import run_cli


def sample_run() -> RunResult:
    failed = f.case("alpha/wrong", "fail", latency_ms=1500.0).model_copy(
        update={
            "checks": [
                CheckResult(name="tool", passed=True, expected="search", actual="search"),
                CheckResult(
                    name="filters",
                    passed=False,
                    expected={"color": "red"},
                    actual={"color": "white"},
                    message="color differs",
                ),
                CheckResult(name="answer", passed=False, expected="<b>yes</b>", actual="no\x00"),
            ]
        }
    )
    flaky = f.case("beta/sometimes", "flaky").model_copy(
        update={
            "attempts": [Attempt(status=s, latency_ms=5.0) for s in ("pass", "fail", "pass")],
            "pass_rate": 0.6667,
            "pass_ci_low": 0.2077,
            "pass_ci_high": 0.9385,
        }
    )
    return f.run(
        [
            f.case("alpha/right", "pass", latency_ms=250.0),
            failed,
            f.case("alpha/boom", "error", error="daemon died\nwith details"),
            f.case("beta/skip", "skipped", skip_reason="needs capability 'tools'"),
            flaky,
        ]
    )


def parse(text: str) -> ET.Element:
    return ET.fromstring(text.encode("utf-8"))


def test_one_testcase_per_case_grouped_by_suite() -> None:
    root = parse(to_junit(sample_run()))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "1", "1")
    # junit-10.xsd has no `skipped` on <testsuites>; each <testsuite> counts its own.
    assert root.get("skipped") is None
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"alpha", "beta"}
    assert (suites["alpha"].get("skipped"), suites["beta"].get("skipped")) == ("0", "1")
    alpha = suites["alpha"]
    assert [tc.get("name") for tc in alpha.iter("testcase")] == ["right", "wrong", "boom"]
    assert {tc.get("classname") for tc in root.iter("testcase")} == {"alpha", "beta"}
    right = alpha.find("testcase[@name='right']")
    assert right is not None and right.get("time") == "0.250"
    assert list(right) == []  # a pass carries nothing
    props = {p.get("name"): p.get("value") for p in alpha.iter("property")}
    assert props["provider"] == "scripted" and props["run_id"] == sample_run().run_id


def test_failure_lists_failed_checks_with_expected_and_actual() -> None:
    root = parse(to_junit(sample_run()))
    failure = root.find(".//testcase[@name='wrong']/failure")
    assert failure is not None
    assert failure.get("message") == "failed: filters, answer"
    body = failure.text or ""
    lines = body.splitlines()
    assert lines[0] == 'filters: expected {"color": "red"}, actual {"color": "white"}'
    assert lines[1] == "  reason: color differs"
    # Markup in values is escaped by the writer and comes back intact; the NUL, which XML
    # cannot carry, is replaced rather than making the file unparseable.
    assert lines[2] == "answer: expected <b>yes</b>, actual no\ufffd"
    assert "tool" not in body  # the passing check is not listed


def test_error_and_skipped_elements() -> None:
    root = parse(to_junit(sample_run()))
    error = root.find(".//testcase[@name='boom']/error")
    assert error is not None
    assert error.get("message") == "daemon died"
    assert error.text == "daemon died\nwith details"
    skipped = root.find(".//testcase[@name='skip']/skipped")
    assert skipped is not None and skipped.get("message") == "needs capability 'tools'"


def test_flaky_case_passes_with_its_rate() -> None:
    root = parse(to_junit(sample_run()))
    case = root.find(".//testcase[@name='sometimes']")
    assert case is not None
    assert case.find("failure") is None and case.find("error") is None
    # The repeat details sit in <system-out>: junit-10.xsd allows no <properties> here.
    assert case.find("properties") is None
    assert case.findtext("system-out") == "flaky: passed 2 of 3 runs (95% CI 21%-94%)"


def test_na_checks_are_listed_with_their_reason_in_system_out() -> None:
    case = f.case("alpha/na", "pass").model_copy(
        update={
            "checks": [
                CheckResult(name="tool", passed=True),
                CheckResult(name="min_results", status="n/a", message="nothing to return"),
            ]
        }
    )
    root = parse(to_junit(f.run([case])))
    testcase = root.find(".//testcase[@name='na']")
    assert testcase is not None and testcase.find("failure") is None
    assert testcase.findtext("system-out") == "n/a min_results: nothing to return"


def test_output_validates_against_jenkins_xunit_junit_10_xsd(tmp_path: Path) -> None:
    # The schema the Jenkins xUnit plugin validates with before reading a report; a file that
    # fails it is skipped by the plugin. tests/data/junit-10.xsd notes its source.
    import xmlschema

    schema = xmlschema.XMLSchema(str(Path(__file__).parent / "data" / "junit-10.xsd"))
    run = sample_run()
    repeated = f.case("beta/repeated", "pass").model_copy(
        update={
            "attempts": [Attempt(status="pass", latency_ms=5.0) for _ in range(3)],
            "checks": [CheckResult(name="x", status="n/a", message="why")],
        }
    )
    run = run.model_copy(update={"cases": [*run.cases, repeated]})
    path = write_junit(run, tmp_path / "junit.xml")
    errors = list(schema.iter_errors(str(path)))
    assert errors == []
    # The schema itself is not vacuous: the former shape of the file fails it.
    bad = path.read_text().replace("<testsuites ", '<testsuites skipped="1" ', 1)
    assert not schema.is_valid(bad)


def test_run_writes_junit(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "script.toml"
    script.write_text(
        '[[cases."echo/hello"]]\ncontent = "bye"\n\n'
        '[[cases."echo/shout"]]\ntool_calls = [{ name = "upper", arguments = { text = "hi" } }]\n\n'
        '[[cases."echo/shout"]]\ncontent = "HI"\n'
    )
    junit = tmp_path / "reports" / "junit.xml"
    done = run_cli(
        capsys, "run", "--provider", "scripted", "--script", str(script), "--cases",
        str(echo_suite), "--out", str(tmp_path / "out"), "--junit", str(junit), "--json",
    )  # fmt: skip
    assert done.code == 0, done.err
    assert json.loads(done.out)["junit_path"] == str(junit)
    root = ET.parse(junit).getroot()
    failure = root.find(".//testcase[@name='hello']/failure")
    assert failure is not None
    assert "answer: expected hello, actual bye" in (failure.text or "")
    assert root.find(".//testcase[@name='shout']/failure") is None


def test_write_junit_creates_the_directory(tmp_path: Path) -> None:
    path = write_junit(sample_run(), tmp_path / "a" / "b" / "junit.xml")
    assert parse(path.read_text()).tag == "testsuites"
