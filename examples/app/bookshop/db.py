"""The SQLite file behind the tools: built from catalogue.sql the first time it is needed,
at $BOOKSHOP_DB or next to this file."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def db_path() -> Path:
    return Path(os.environ.get("BOOKSHOP_DB") or HERE / "books.db")


def connect() -> sqlite3.Connection:
    path = db_path()
    if not path.exists():
        # Built aside and renamed into place: two processes starting at once both succeed.
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".db")
        os.close(fd)
        with sqlite3.connect(tmp) as conn:
            conn.executescript((HERE / "catalogue.sql").read_text())
        os.replace(tmp, path)
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    return conn
