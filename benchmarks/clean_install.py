"""A clean install without extras runs a templated suite (issue 32, item 9).

Copies the package's sources (pyproject.toml, README.md, evalctl/) into a temporary
directory, creates a fresh virtual environment there (no `--system-site-packages`), installs
the project into it with a plain `pip install` (no extras: no llama-cpp-python, no openai,
no dev tools; dependencies come from pip's configured index), then runs the templated
`examples/tickets` suite (a CSV of rows through `[suite.case_template]`, Jinja2) on the
scripted provider with its committed reply script. Exits 0 when the run exits 0 and every
case passed; prints how long each step took.

Not a pytest test: the install alone takes about a minute on the project's 2-core machine
(54 s measured), too long for `make test`. Run it with `make install-check`, or

    python benchmarks/clean_install.py [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUITE_DIR = REPO / "examples" / "tickets"
SUITE = "tickets.toml"
SCRIPT = Path("scripts") / "replies.toml"
# Present only with an extra: a clean install must not have them.
EXTRAS_ONLY = ("llama_cpp", "openai", "pytest")


def _step(what: str, argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout[-4000:])
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"FAIL: {what} exited {proc.returncode}")
    print(f"{what:<44} {took:6.1f} s")
    return took


def _copy_sources(dest: Path) -> None:
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, dest / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "evalctl", dest / "evalctl", ignore=ignore)


def check(work: Path) -> None:
    src, venv, home, out = work / "src", work / "venv", work / "home", work / "out"
    _copy_sources(src)
    shutil.copytree(SUITE_DIR, work / "suite")
    python = venv / "bin" / "python"
    _step(
        "python -m venv (fresh, no system packages)",
        [sys.executable, "-m", "venv", str(venv)],
        work,
    )
    _step(
        "pip install <project> (no extras)",
        [str(python), "-m", "pip", "install", "-q", str(src)],
        work,
    )
    probe = (
        "import importlib.util, sys; "
        f"present = [m for m in {EXTRAS_ONLY!r} if importlib.util.find_spec(m)]; "
        "sys.exit(f'extras present in a clean install: {present}' if present else 0)"
    )
    _step("no extra's package installed", [str(python), "-c", probe], work)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALCTL_", "PYTHON"))}
    env.update(EVALCTL_HOME=str(home), NO_COLOR="1")
    run = [
        str(venv / "bin" / "evalctl"), "run", "--provider", "scripted",
        "--script", str(SCRIPT), "--cases", SUITE, "--out", str(out), "--no-progress",
    ]  # fmt: skip
    _step("evalctl run: templated suite, scripted", run, work / "suite", env)
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    cases = results["cases"]
    statuses = {c["status"] for c in cases}
    # Rendered by the template: a row's description names its channel and queue.
    rendered = [c for c in cases if "{{" not in json.dumps(c.get("input"))]
    if not cases or statuses != {"pass"} or len(rendered) != len(cases):
        raise SystemExit(f"FAIL: {len(cases)} cases, statuses {sorted(statuses)}")
    print(f"templated suite: {len(cases)} cases, all pass")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="evalctl-clean-install-"))
    try:
        check(work)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("OK: a clean install without extras runs a templated suite")


if __name__ == "__main__":
    main()
