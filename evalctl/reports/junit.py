"""JUnit XML rendering of a run, for CI systems that show test reports.

One <testsuite> per suite and one <testcase> per case (`classname` = suite, `name` = case
id, `time` = latency in seconds). A `fail` carries a <failure> listing each failed check
with its expected and actual values; an `error` an <error> with the reason; a `skipped` a
<skipped> with the unmet requirement.

A `flaky` case is reported as passing, with its pass rate in <system-out>: flakiness is a
measured rate, not a failure, and `evalctl compare` decides whether it gates (docs/flaky.md).
Rendering it as a failure would turn every JUnit-reading CI red on the very noise the
interval rule exists to ignore.

The file validates against the Jenkins xUnit plugin's `junit-10.xsd` (tests/data), which is
stricter than most readers: no `skipped` count on <testsuites> and no <properties> inside a
<testcase>, so the details of repeats and `n/a` checks go to the testcase's <system-out>.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from evalctl.reports.write import write_report
from evalctl.results.models import CaseResult, CheckResult, RunResult
from evalctl.secrets import redact_before_cut

# XML 1.0 forbids most control characters, and model output can contain anything: replace
# them, or one stray \x00 in an answer makes the whole report unparseable.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_VALUE_LIMIT = 2000  # characters of an expected/actual value kept in a failure body


def xml_safe(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = redact_before_cut(text, _VALUE_LIMIT)
    if len(text) > _VALUE_LIMIT:
        text = text[:_VALUE_LIMIT] + f"... ({len(text) - _VALUE_LIMIT} more characters)"
    return text


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    element = ET.SubElement(parent, tag, {k: xml_safe(v) for k, v in attrs.items()})
    if text is not None:
        element.text = xml_safe(text)
    return element


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.3f}"


def _check_line(check: CheckResult) -> str:
    line = f"{check.name}: expected {_value(check.expected)}, actual {_value(check.actual)}"
    return line + (f"\n  reason: {check.message}" if check.message else "")


def _testcase(parent: ET.Element, case: CaseResult) -> None:
    element = _sub(
        parent, "testcase", name=case.id, classname=case.suite, time=_seconds(case.latency_ms)
    )
    if case.status == "fail":
        failed = [c for c in case.checks if c.failed]
        names = ", ".join(c.name for c in failed) or "no check named"
        body = "\n".join(_check_line(c) for c in failed)
        if not failed:
            body = "no check passed (every check was n/a)" if case.checks else ""
        _sub(element, "failure", body or "the case failed", message=f"failed: {names}", type="fail")
    elif case.status == "error":
        reason = case.error or "infrastructure error"
        if case.server_crashed:
            reason = f"server crashed: {reason}"
        _sub(element, "error", reason, message=reason.splitlines()[0], type="error")
    elif case.status == "skipped":
        _sub(element, "skipped", message=case.skip_reason or "skipped")
    out = _system_out(case)
    if out:
        _sub(element, "system-out", "\n".join(out))


def _system_out(case: CaseResult) -> list[str]:
    """Repeat details and n/a checks: what the schema leaves no attribute for."""
    lines = []
    passed, runs = case.pass_counts()
    if runs > 1 or case.status == "flaky":
        ci = ""
        if case.pass_ci_low is not None and case.pass_ci_high is not None:
            ci = f" (95% CI {case.pass_ci_low:.0%}-{case.pass_ci_high:.0%})"
        lines.append(f"{case.status}: passed {passed} of {runs} runs{ci}")
    for check in case.checks:
        if check.not_applicable:
            lines.append(f"n/a {check.name}: {check.message or 'nothing to test'}")
    return lines


def _counts(cases: list[CaseResult]) -> dict[str, str]:
    return {
        "tests": str(len(cases)),
        "failures": str(sum(c.status == "fail" for c in cases)),
        "errors": str(sum(c.status == "error" for c in cases)),
        "skipped": str(sum(c.status == "skipped" for c in cases)),
        "time": _seconds(sum(c.latency_ms for c in cases)),
    }


def _totals(cases: list[CaseResult]) -> dict[str, str]:
    # junit-10.xsd allows no `skipped` on <testsuites>; each <testsuite> carries its own.
    counts = _counts(cases)
    del counts["skipped"]
    return counts


def to_junit(run: RunResult) -> str:
    root = ET.Element(
        "testsuites", {"name": xml_safe(f"evalctl {run.run_id}"), **_totals(run.cases)}
    )
    by_suite: dict[str, list[CaseResult]] = {}
    for case in run.cases:
        by_suite.setdefault(case.suite, []).append(case)
    for suite, cases in by_suite.items():
        element = _sub(root, "testsuite", name=suite, timestamp=run.started_at, **_counts(cases))
        properties = _sub(element, "properties")
        for name, value in (
            ("run_id", run.run_id),
            ("provider", run.provider.name),
            ("model", run.provider.model),
            ("model_sha256", run.provider.model_sha256 or ""),
            ("suite_version", run.settings.suite_versions.get(suite, "")),
            ("repeats", str(run.settings.repeats)),
        ):
            _sub(properties, "property", name=name, value=value)
        for case in cases:
            _testcase(element, case)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(run: RunResult, path: Path) -> Path:
    return write_report(path, to_junit(run))
