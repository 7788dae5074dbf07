"""`evalctl report --html`: one self-contained page, checked by a strict XML parser, for
references to anything outside the file, and (where a Chromium is installed) by rendering it
headless to a screenshot that must not be blank."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest

from evalctl.baselines.gate import compare_baseline
from evalctl.chat import CompletionResponse, Message, ToolCall, ToolResult
from evalctl.reports.histogram import bin_index, histogram
from evalctl.reports.kit.elements import SVG_NS, XHTML_NS, serialize
from evalctl.reports.run_page import run_page
from evalctl.results.io import write_run
from evalctl.results.models import (
    Attempt,
    CheckResult,
    RunResult,
    ToolCallRecord,
    TurnRecord,
    prompt_ref,
)
from evalctl.runner.attempt import FINAL_ANSWER_PROMPT
from tests import factories as f
from tests.cli_helpers import run_cli

H = f"{{{XHTML_NS}}}"
S = f"{{{SVG_NS}}}"
NASTY = '<script>alert("x")</script> & "quotes"'


def sample_run() -> RunResult:
    failed = f.case("alpha/wrong", "fail", latency_ms=900.0).model_copy(
        update={
            "checks": [
                CheckResult(
                    name="answer",
                    passed=False,
                    expected="yes",
                    actual=NASTY,
                    message="all 4 extract_pattern call(s) were rejected",
                ),
                CheckResult(name="rows", status="n/a", message="nothing to count"),
            ],
            "output": NASTY,
            "input": {"query": "red under $20"},
            "system_prompt": prompt_ref("You are a sommelier."),
            "tool_calls": [
                ToolCallRecord(
                    turn=1,
                    name="search_wines",
                    arguments={"color": "red"},
                    result="error: price_max must be a number",
                    is_error=True,
                    duration_ms=1.0,
                )
            ],
            "transcript": [
                TurnRecord(
                    turn=1,
                    sent=[Message.user("red under $20")],
                    tool_choice="required",
                    reply=CompletionResponse(
                        tool_calls=[ToolCall(id="c1", name="search_wines", arguments={})]
                    ),
                ),
                TurnRecord(
                    turn=2,
                    sent=[
                        Message.tool_result(
                            ToolResult(
                                tool_call_id="c1",
                                name="search_wines",
                                content="error: price_max must be a number",
                                is_error=True,
                            )
                        ),
                        Message.user(FINAL_ANSWER_PROMPT),
                    ],
                    tool_choice="none",
                    tools_offered=False,
                    final_answer_turn=True,
                    reply=CompletionResponse(content="I pick\x00 \x1b[31mthis\x1b[0m " + NASTY),
                ),
            ],
        }
    )
    flaky = f.case("beta/sometimes", "flaky", latency_ms=420.0).model_copy(
        update={
            "attempts": [Attempt(status=s, latency_ms=5.0) for s in ("pass", "fail", "pass")],
            "pass_ci_low": 0.2077,
            "pass_ci_high": 0.9385,
        }
    )
    cases = [f.case(f"alpha/ok{i}", latency_ms=100.0 + 37 * i) for i in range(12)]
    cases += [
        failed,
        flaky,
        f.case("alpha/boom", "error", error="daemon died"),
        f.case("beta/skip", "skipped", skip_reason="needs 'tools'"),
        f.case(f"beta/{NASTY}", "pass", latency_ms=300.0),
    ]
    run = f.run(cases)
    return run.model_copy(
        update={"system_prompts": {prompt_ref("You are a sommelier."): "You are a sommelier."}}
    )


def sample_page(with_baseline: bool = True) -> str:
    run = sample_run()
    cmp = None
    if with_baseline:
        baseline = f.baseline({"alpha/wrong": "pass", "alpha/ok0": "pass", "alpha/gone": "pass"})
        cmp = compare_baseline(baseline, run)
    return run_page(run, cmp)


def parse(page: str) -> ET.Element:
    # A strict XML parser: any unclosed tag, bad escape or stray `&` fails here.
    return ET.fromstring(page.encode("utf-8"))


def test_page_is_well_formed_and_has_every_part() -> None:
    root = parse(sample_page())
    assert root.tag == f"{H}html"
    assert root.findtext(f"{H}head/{H}title", "").startswith("evalctl · ")
    sections = {s.get("id") for s in root.iter(f"{H}section")}
    assert sections == {"summary", "baseline", "latency", "cases", "transcripts"}
    cases = root.find(f".//{H}section[@id='cases']//{H}tbody")
    assert cases is not None and len(cases) == len(sample_run().cases)
    # The histogram: one bar per bin, bars add up to every scored case.
    svg = root.find(f".//{H}section[@id='latency']/{S}svg")
    assert svg is not None
    bars = svg.findall(f"{S}rect")
    counts = [int((r.findtext(f"{S}title") or "").rsplit(": ", 1)[1]) for r in bars]
    scored = [c for c in sample_run().cases if c.status in ("pass", "fail", "flaky")]
    assert sum(counts) == len(scored)


def test_baseline_section_lists_the_diff() -> None:
    root = parse(sample_page())
    section = root.find(f".//{H}section[@id='baseline']")
    assert section is not None
    text = "".join(section.itertext())
    assert "FAILED (exit 1)" in text
    assert "alpha/wrong" in text  # the regression
    assert "alpha/gone" in text  # orphaned
    assert "baseline" not in {s.get("id") for s in parse(sample_page(False)).iter(f"{H}section")}


def test_text_from_results_cannot_inject_markup() -> None:
    page = sample_page()
    root = parse(page)
    assert not list(root.iter(f"{H}script"))
    assert "<script>" not in page
    assert any(NASTY in "".join(e.itertext()) for e in root.iter(f"{H}code"))


def test_nothing_is_fetched_from_outside_the_file() -> None:
    page = sample_page()
    root = parse(page)
    forbidden = {"script", "link", "img", "iframe", "object", "embed", "image", "use", "video"}
    for element in root.iter():
        local = str(element.tag).rsplit("}", 1)[-1]
        assert local not in forbidden, f"<{local}> could load something"
        for name, value in element.attrib.items():
            if name in ("href", "src", "srcset", "action", "poster") or name.endswith("}href"):
                pytest.fail(f"<{local} {name}={value!r}> references a resource")
            assert "url(" not in value
    css = "".join(e.text or "" for e in root.iter(f"{H}style"))
    assert "url(" not in css and "@import" not in css
    # Every URL-looking string in the file is a namespace name, which is never fetched.
    assert set(re.findall(r"[a-z]+://[^\s\"'<>]+", page)) <= {XHTML_NS, SVG_NS}


def test_failed_case_transcript_and_reasons_are_readable_without_results_json() -> None:
    root = parse(sample_page())
    cases = "".join(root.find(f".//{H}section[@id='cases']").itertext())  # type: ignore[union-attr]
    # The reason of a failed check is on the case row itself.
    assert "all 4 extract_pattern call(s) were rejected" in cases
    section = root.find(f".//{H}section[@id='transcripts']")
    assert section is not None
    blocks = section.findall(f"{H}details")
    # Every failed (and errored, and flaky) case, collapsed.
    assert [b.findtext(f"{H}summary", "").split(" · ")[0] for b in blocks] == [
        "alpha/wrong",
        "beta/sometimes",
        "alpha/boom",
    ]
    text = "".join(blocks[0].itertext())
    assert '"query": "red under $20"' in text  # the input
    assert "You are a sommelier." in text  # the system prompt, by reference
    assert "search_wines" in text and "price_max must be a number" in text  # call + result
    # The tool result sent back on turn 2 is the one shown under turn 1: shown once.
    assert text.count("price_max must be a number") == 1
    assert "tool (search_wines): the result shown above" in text
    assert "last answer turn (tools disabled" in text
    # Control characters from the model are shown as symbols, not passed through.
    assert "I pick␀ ␛[31mthis␛[0m" in text and "\x1b" not in text
    assert "nothing to count" in text  # n/a with its reason


def test_histogram_bins_values_on_an_edge_correctly() -> None:
    # (0.3 - 0.2) / 0.1 is 0.999... in binary floating point: 0.3 used to land in bin 0.
    assert int((0.3 - 0.2) / 0.1) == 0
    assert bin_index(0.3, 0.2, 0.4, 2) == 1
    assert bin_index(0.2, 0.2, 0.4, 2) == 0
    assert bin_index(0.4, 0.2, 0.4, 2) == 1  # the last bin is closed
    svg = histogram([0.2, 0.3, 0.4, 0.25])
    titles = [r.findtext("title") or "" for r in svg.findall("rect")]
    assert [t.rsplit(": ", 1)[1] for t in titles] == ["2", "2"]


def test_histogram_edge_cases() -> None:
    assert histogram([]).tag == "p"
    single = histogram([42.0, 42.0, 42.0])
    bars = single.findall("rect")
    assert len(bars) == 1 and "42" in (bars[0].findtext("title") or "")
    parse(serialize(single))


def test_report_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = write_run(sample_run(), tmp_path / "run")
    baseline = f.write_json(
        tmp_path / "baseline.json", f.baseline({"alpha/wrong": "pass"}).model_dump()
    )
    html = tmp_path / "out" / "report.html"
    done = run_cli(capsys, "report", str(results.parent), "--html", str(html), "-b", str(baseline))
    assert done.code == 0, done.err
    parse(html.read_text())
    assert "alpha/wrong" in html.read_text()

    wrong_kind = run_cli(capsys, "report", str(baseline), "--html", str(tmp_path / "x.html"))
    assert wrong_kind.code == 2
    assert "no HTML report for kind 'baseline'" in wrong_kind.err
    # A soak has a page of its own (tests/test_runbook_report.py); a hollow one is refused.
    soak = f.write_json(tmp_path / "soak.json", {"kind": "soak", "schema_version": 1})
    hollow = run_cli(capsys, "report", str(soak), "--html", str(tmp_path / "y.html"))
    assert hollow.code == 2 and "required key is missing" in hollow.err


# ---------------------------------------------------------------- headless Chromium


def find_browser() -> str | None:
    candidates = [os.environ.get("EVALCTL_CHROMIUM", "")]
    candidates += ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]
    return next((shutil.which(c) for c in candidates if c and shutil.which(c)), None)


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA PNG (what Chromium writes) into rows of pixel bytes."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        header = body if kind == b"IHDR" else header
        idat += body if kind == b"IDAT" else b""
        pos += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6), f"unexpected PNG format {depth}/{colour}"
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + b) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[x] = (line[x] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, rows


@pytest.mark.browser
@pytest.mark.skipif(
    find_browser() is None,
    reason="no Chromium found (apt-get install chromium, or set EVALCTL_CHROMIUM); the page "
    "is still checked by the strict-parser tests above",
)
def test_renders_in_headless_chromium_to_a_non_blank_screenshot(tmp_path: Path) -> None:
    browser = find_browser()
    assert browser is not None
    html = tmp_path / "report.html"
    # Without the baseline section, so the histogram is within the first screen.
    html.write_text(sample_page(with_baseline=False), encoding="utf-8")
    shot = tmp_path / "shot.png"
    proc = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",  # tests may run as root in a container
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=900,1200",
            f"--screenshot={shot}",
            html.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert shot.is_file(), proc.stderr[-2000:]
    width, height, rows = png_pixels(shot.read_bytes())
    assert (width, height) == (900, 1200)
    bpp = len(rows[0]) // width
    pixels = [row[i : i + 3] for row in rows[::8] for i in range(0, len(row), bpp * 8)]
    background = max(set(pixels), key=pixels.count)
    drawn = sum(p != background for p in pixels) / len(pixels)
    # Text, badges, tables and the histogram cover a good part of the page; an error page
    # or an unstyled render would lack the histogram's bar colour.
    assert drawn > 0.02, f"only {drawn:.1%} of the screenshot differs from the background"
    assert len(set(pixels)) > 20
    blue = bytes.fromhex("0969da")  # histogram bars
    assert blue in pixels


def test_a_huge_run_makes_a_bounded_page_that_says_what_it_left_out() -> None:
    from evalctl.reports import run_page as page_module

    n = page_module.MAX_CASE_ROWS + 100
    cases = [f.case(f"big/c{i:04d}", "pass") for i in range(n)]
    cases[-1] = f.case(f"big/c{n - 1:04d}", "fail", failed_checks=("os_mapping",))
    small = len(run_page(f.run(cases[:10])))
    page = run_page(f.run(cases))
    parse(page)
    assert "100 more cases (those not passing are listed first) not shown" in page
    # The failing case is listed although it is last in run order.
    assert f"big/c{n - 1:04d}" in page
    assert f"big/c{n - 2:04d}" not in page
    # The page grows with the rows it shows, not with the run.
    assert len(page) < small * page_module.MAX_CASE_ROWS / 5
