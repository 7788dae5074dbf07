"""The progress line counts errors apart from passes and failures."""

from __future__ import annotations

import pytest

from evalctl.runner.progress import RunProgress
from tests import factories as f


def test_each_line_counts_pass_fail_and_error(capsys: pytest.CaptureFixture[str]) -> None:
    with RunProgress(3, enabled=True) as progress:
        progress.advance(f.case("s/a", "pass"))
        progress.advance(f.case("s/b", "error"))
        progress.advance(f.case("s/c", "fail"))
    err = capsys.readouterr().err
    # Without a terminal (a CI log), one line per case with the running counts.
    lines = [
        line for line in err.splitlines() if line.strip().startswith(("pass", "fail", "error"))
    ]
    assert [line.split()[:2] for line in lines] == [
        ["pass", "s/a"],
        ["error", "s/b"],
        ["fail", "s/c"],
    ]
    assert lines[1].endswith("(2/3: 1 pass · 0 fail · 1 error)")
    assert lines[2].endswith("(3/3: 1 pass · 1 fail · 1 error)")
