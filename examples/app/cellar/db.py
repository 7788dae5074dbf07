"""The SQLite catalog: `wines.db` next to this file, built from catalog.sql the first time it
is needed, or by `python -m cellar.db` (run from examples/app), which prints its path."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DB = HERE / "wines.db"


def build() -> Path:
    """wines.db, built from catalog.sql unless it is there already."""
    if not DB.exists():
        # Built aside and renamed into place: two processes starting at once both succeed.
        fd, tmp = tempfile.mkstemp(dir=HERE, suffix=".db")
        os.close(fd)
        with sqlite3.connect(tmp) as conn:
            conn.executescript((HERE / "catalog.sql").read_text(encoding="utf-8"))
        conn.close()
        os.replace(tmp, DB)
    return DB


def connect() -> sqlite3.Connection:
    conn = sqlite3.connect(build())
    conn.row_factory = sqlite3.Row
    return conn


if __name__ == "__main__":
    print(build())
