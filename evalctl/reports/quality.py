"""The quality table of a baseline: `evalctl report baselines/local.json --markdown -`.

Every figure comes from committed files, so a README that quotes the table can be checked
by anyone: the baseline (each case's status and each check's outcome, counted over its samples
where it was recorded with `--samples K`) and, when present,
the results it was written from, committed beside it as `<baseline stem>.results.json`
(`baselines/local.json` -> `baselines/local.results.json`), which add latency. A baseline
written suite by suite (`evalctl baseline --from` once per run, each merging its suites in)
has several source runs: they are committed as a directory instead, one results file per
run (`baselines/local.results/<suite>.json`). The results must be the baseline's source:
the run the baseline names among them, and the same case statuses; anything else is
refused, since a table mixing other runs would quote figures no file backs.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from evalctl.baselines.model import Baseline, baseline_from_document
from evalctl.errors import BadInputError
from evalctl.reports.markdown import cell
from evalctl.results.document import Document, load_document
from evalctl.results.io import run_from_document
from evalctl.results.models import RunResult
from evalctl.results.summary import percentile


def source_results_path(baseline_path: Path) -> Path:
    """Where the results a baseline was written from are committed: beside it."""
    return baseline_path.with_name(baseline_path.stem + ".results.json")


def source_results_dir(baseline_path: Path) -> Path:
    """Where the results of a baseline written from several runs are committed."""
    return baseline_path.with_name(baseline_path.stem + ".results")


def _source_name(doc: Document) -> str:
    if source_results_path(doc.path).is_file():
        return source_results_path(doc.path).name
    return source_results_dir(doc.path).name + "/"


def _source_results(doc: Document, baseline: Baseline) -> list[RunResult] | None:
    path = source_results_path(doc.path)
    if path.is_file():
        files = [path]
    elif source_results_dir(doc.path).is_dir():
        path = source_results_dir(doc.path)
        files = sorted(path.glob("*.json"))
    else:
        return None
    runs = [run_from_document(load_document(f)) for f in files]
    ids = [run.run_id for run in runs]
    if baseline.source_run_id is not None and baseline.source_run_id not in ids:
        raise BadInputError(
            f"holds run {', '.join(ids) or 'nothing'}, but the baseline {doc.path} was written "
            f"from run {baseline.source_run_id}; commit the results the baseline came from",
            file=str(path),
            field="run_id",
        )
    scored = {
        c.key: c.status for run in runs for c in run.cases if c.status in ("pass", "fail", "flaky")
    }
    differ = sorted(k for k, v in baseline.baselines.items() if scored.get(k) != v)
    if differ:
        raise BadInputError(
            f"case statuses differ from the baseline {doc.path} ({', '.join(differ[:5])}); "
            "commit the results the baseline came from",
            file=str(path),
            case_id=differ[0],
        )
    return runs


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.0%})" if whole else "0/0"


def _check_tallies(baseline: Baseline, key: str) -> dict[str, Counter[str]]:
    """Per check of one case: passes and failures over the baseline's samples where it
    counted them (a sampled baseline), else the one recorded outcome; n/a counted apart."""
    tallies: dict[str, Counter[str]] = {}
    counts = baseline.check_counts.get(key, {})
    for name, status in baseline.checks.get(key, {}).items():
        if name in counts:
            count = counts[name]
            tallies[name] = Counter(pass_=count.passed, fail=count.runs - count.passed)
        else:
            tallies[name] = Counter({"pass_" if status == "pass" else status: 1})
    return tallies


def _checks_cell(outcomes: list[dict[str, Counter[str]]]) -> tuple[str, str]:
    """(all checks passed / scored, per check name), n/a counted apart."""
    by_name: dict[str, Counter[str]] = {}
    for case in outcomes:
        for name, tally in case.items():
            by_name.setdefault(name, Counter()).update(tally)
    total = Counter[str]()
    parts = []
    for name, counts in by_name.items():
        total.update(counts)
        scored = counts["pass_"] + counts["fail"]
        text = f"{name} {counts['pass_']}/{scored}"
        if counts["n/a"]:
            text += f" ({counts['n/a']} n/a)"
        parts.append(text)
    overall = _pct(total["pass_"], total["pass_"] + total["fail"])
    if total["n/a"]:
        overall += f", {total['n/a']} n/a"
    return overall, " · ".join(parts) or "-"


def quality_markdown(doc: Document) -> str:
    """The quality table of the baseline in `doc` (see the module docstring)."""
    baseline = baseline_from_document(doc)
    runs = _source_results(doc, baseline)
    suites = sorted({key.split("/", 1)[0] for key in baseline.baselines})
    header = ["suite", "cases passed", "checks passed", "per check (passed/scored)"]
    if runs is not None:
        header.append("latency p50 per case")
    samples = sorted({s.samples for s in baseline.sampling.values()})
    lines = [
        f"Quality of {cell(baseline.model)} ({cell(baseline.provider)}), from "
        f"{cell(doc.path.name)}"
        + (f" and {cell(_source_name(doc))}" if runs is not None else "")
        + (f" (run {cell(baseline.source_run_id)})" if baseline.source_run_id else "")
        + (
            f"; checks counted over {'/'.join(map(str, samples))} samples per case"
            if samples and samples != [1]
            else ""
        )
        + ":",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    latency = {}
    if runs is not None:
        for suite in suites:
            values = [
                c.latency_ms
                for run in runs
                for c in run.cases
                if c.suite == suite and c.status in ("pass", "fail", "flaky")
            ]
            latency[suite] = f"{percentile(values, 50) / 1000:.1f} s" if values else "-"
    for suite in suites:
        keys = [k for k in baseline.baselines if k.split("/", 1)[0] == suite]
        passed = sum(baseline.baselines[k] == "pass" for k in keys)
        flaky = sum(baseline.baselines[k] == "flaky" for k in keys)
        cases = _pct(passed, len(keys)) + (f", {flaky} flaky" if flaky else "")
        overall, per_check = _checks_cell([_check_tallies(baseline, k) for k in keys])
        if not any(k in baseline.checks for k in keys):
            overall, per_check = "-", "no check outcomes (a schema_version 1 baseline)"
        row = [cell(suite), cases, overall, cell(per_check)]
        if runs is not None:
            row.append(latency[suite])
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    if baseline.min_pass_rate is not None and baseline.min_pass_rate < 0.5:
        lines += [
            f"Written with `--min-pass-rate {baseline.min_pass_rate:g}` (below the default "
            "0.5); the file records that bar.",
            "",
        ]
    return "\n".join(lines)
