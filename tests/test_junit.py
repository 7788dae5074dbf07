"""JUnit XML: one testcase per case, parsed back with xml.etree."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from evalctl.results.junit import to_junit, write_junit
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
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "5",
        "1",
        "1",
        "1",
    )
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"alpha", "beta"}
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
    assert (
        lines[0] == 'filters: expected {"color": "red"}, actual {"color": "white"} (color differs)'
    )
    # Markup in values is escaped by the writer and comes back intact; the NUL, which XML
    # cannot carry, is replaced rather than making the file unparseable.
    assert lines[1] == "answer: expected <b>yes</b>, actual no\ufffd"
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
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["status"] == "flaky"
    assert props["passed_runs"] == "2/3"
    assert props["pass_rate_ci95"] == "0.2077-0.9385"
    assert "passed 2 of 3 runs" in (case.findtext("system-out") or "")


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
