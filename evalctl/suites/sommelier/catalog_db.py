"""The wine catalog as a real SQLite database, built from the committed JSON.

The JSON (`cases/fixtures/wines.json`) is the source of truth; the database is a derived file,
keyed by the JSON's sha256 so a changed catalog is rebuilt and an unchanged one reused. It is
written to a temporary file and renamed into place, so concurrent runs never see half a build.

Every query is parameterised: column names come from a fixed whitelist in this module, values
only ever travel as `?` parameters. Each query opens its own read-only connection, which keeps
the catalog safe to share between the runner's worker threads without a lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from evalctl import userfiles
from evalctl.errors import EvalctlError, ExitCode
from evalctl.suites.sommelier.catalog_words import (
    grape_index_key,
    region_index_key,
    word_key,
)

# Bumped whenever the table layout changes, so an old build is rebuilt rather than misread.
SCHEMA_VERSION = "1"
# FTS5 column weights for bm25(), in FTS column order: a hit in the name or grape says more
# about a wine than the same word somewhere in a long description.
FTS_COLUMNS = (
    "name",
    "producer",
    "country",
    "region",
    "grape",
    "color",
    "sweetness",
    "description",
)
FTS_WEIGHTS = (3.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 1.0)


class CatalogError(EvalctlError):
    """The catalog cannot be loaded or built: an infrastructure problem, not the model's."""

    code = ExitCode.INFRA


class Wine(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    producer: str = Field(min_length=1)
    country: str = Field(min_length=1)
    region: str = Field(min_length=1)
    grape: str = Field(min_length=1)
    color: Literal["red", "white", "rose", "sparkling"]
    sweetness: Literal["dry", "off-dry", "semi-sweet", "sweet"]
    price: float = Field(gt=0)  # US dollars
    vintage: int | None = Field(default=None, ge=1900, le=2100)  # None: non-vintage
    description: str = Field(min_length=1)


_WINES = TypeAdapter(list[Wine])
WINE_FIELDS = tuple(Wine.model_fields)


def load_wines(path: Path) -> tuple[list[Wine], str]:
    """Validated wines and the sha256 of the file they came from."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CatalogError(
            f"cannot read the wine catalog {path}: {exc.strerror}",
            hint="the catalog-qa suite needs cases/fixtures/wines.json",
        ) from None
    try:
        wines = _WINES.validate_python(userfiles.parse_json(userfiles.decode_text(raw, path), path))
    except ValidationError as exc:
        where = userfiles.validation_error(exc.errors(), file=path).message
        raise CatalogError(f"invalid wine catalog {where}", code=ExitCode.BAD_INPUT) from None
    names = [w.name.casefold() for w in wines]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise CatalogError(
            f"invalid wine catalog {path}: duplicate names {duplicates}", code=ExitCode.BAD_INPUT
        )
    return wines, hashlib.sha256(raw).hexdigest()


def fts5_problem() -> str | None:
    """None when this Python's SQLite has FTS5, else why not."""
    with contextlib.closing(sqlite3.connect(":memory:")) as conn:
        try:
            conn.execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
        except sqlite3.OperationalError as exc:
            return f"SQLite {sqlite3.sqlite_version} lacks FTS5 ({exc})"
    return None


_SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE wines (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    producer TEXT NOT NULL,
    country TEXT NOT NULL,
    region TEXT NOT NULL,
    grape TEXT NOT NULL,
    color TEXT NOT NULL,
    sweetness TEXT NOT NULL,
    price REAL NOT NULL,
    vintage INTEGER,
    description TEXT NOT NULL,
    -- Folded search keys (case, accents, synonyms resolved) the filters compare against.
    country_key TEXT NOT NULL,
    region_key TEXT NOT NULL,
    grape_key TEXT NOT NULL
);
CREATE VIRTUAL TABLE wines_fts USING fts5(
    {", ".join(FTS_COLUMNS)}, tokenize = 'unicode61 remove_diacritics 2'
);
"""


def build_db(wines: Sequence[Wine], source_sha256: str, target: Path) -> None:
    """Write a fresh catalog database to `target` atomically."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".wines-", suffix=".sqlite", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        with contextlib.closing(sqlite3.connect(tmp)) as conn:
            conn.executescript(_SCHEMA)
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [("schema_version", SCHEMA_VERSION), ("source_sha256", source_sha256)],
            )
            for wine_id, wine in enumerate(wines, start=1):
                conn.execute(
                    "INSERT INTO wines (id, name, producer, country, region, grape, color,"
                    " sweetness, price, vintage, description, country_key, region_key,"
                    " grape_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        wine_id, wine.name, wine.producer, wine.country, wine.region,
                        wine.grape, wine.color, wine.sweetness, wine.price, wine.vintage,
                        wine.description, word_key(wine.country), region_index_key(wine.region),
                        grape_index_key(wine.grape),
                    ),
                )  # fmt: skip
                # The grape column also carries canonical names, so "syrah" finds a Shiraz.
                conn.execute(
                    f"INSERT INTO wines_fts (rowid, {', '.join(FTS_COLUMNS)})"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        wine_id, wine.name, wine.producer, wine.country, wine.region,
                        f"{wine.grape} | {grape_index_key(wine.grape)}", wine.color,
                        wine.sweetness, wine.description,
                    ),
                )  # fmt: skip
            conn.commit()
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def db_source_sha(path: Path) -> str | None:
    """The source sha256 a database was built from, or None if it is not a current build."""
    try:
        with _connect(path) as conn:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except (sqlite3.Error, CatalogError):
        return None
    if meta.get("schema_version") != SCHEMA_VERSION:
        return None
    value = meta.get("source_sha256")
    return value if isinstance(value, str) else None


def ensure_db(wines: Sequence[Wine], sha: str, target: Path) -> Path:
    """Build `target` from `wines` unless it already holds this exact catalog."""
    if db_source_sha(target) != sha:
        try:
            build_db(wines, sha, target)
        except (OSError, sqlite3.Error) as exc:
            raise CatalogError(f"cannot build the catalog database {target}: {exc}") from None
    return target


@contextlib.contextmanager
def _connect(path: Path) -> Iterator[sqlite3.Connection]:
    if not path.is_file():
        raise CatalogError(f"catalog database {path} does not exist")
    # Read-only: no tool call can change the catalog, whatever arguments it was given.
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise CatalogError(f"cannot open the catalog database {path}: {exc}") from None
    try:
        conn.row_factory = sqlite3.Row
        yield conn
    except sqlite3.Error as exc:
        # A broken or foreign database is an infrastructure error for the case, not a crash.
        raise CatalogError(f"catalog query failed on {path}: {exc}") from None
    finally:
        conn.close()


@dataclass(frozen=True)
class Clause:
    """One WHERE condition: SQL text from the whitelist below, and its parameter."""

    sql: str
    param: Any


# Filter name -> SQL condition. The only place column names enter SQL.
FILTER_SQL = {
    "color": "color = ?",
    "sweetness": "sweetness = ?",
    "country": "country_key = ?",
    "region": "region_key LIKE ? ESCAPE '\\'",
    "grape": "grape_key LIKE ? ESCAPE '\\'",
    "min_price": "price >= ?",
    "max_price": "price <= ?",
}


def like_contains(key: str) -> str:
    """A LIKE pattern for 'contains `key`', with LIKE's own metacharacters escaped.

    Keys are made of letters and digits already; escaping anyway keeps a future change to
    the key format from turning user text into wildcards.
    """
    escaped = key.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


@dataclass(frozen=True)
class Row:
    wine: Wine
    score: float | None = None  # bm25 rank for full-text hits (lower is better)


class CatalogDb:
    """Queries against one built catalog file."""

    def __init__(self, path: Path):
        self.path = path
        with _connect(path) as conn:
            self.names: tuple[str, ...] = tuple(
                r["name"] for r in conn.execute("SELECT name FROM wines ORDER BY id")
            )

    def count(self) -> int:
        return len(self.names)

    def filter(self, clauses: Sequence[Clause], limit: int) -> tuple[list[Row], int]:
        """Wines matching every clause, cheapest first, and how many matched in total."""
        for clause in clauses:
            if clause.sql not in FILTER_SQL.values():
                raise ValueError(f"not a whitelisted clause: {clause.sql!r}")
        where = " AND ".join(c.sql for c in clauses) or "1"
        params = [c.param for c in clauses]
        with _connect(self.path) as conn:
            total = conn.execute(f"SELECT count(*) FROM wines WHERE {where}", params).fetchone()[0]
            rows = conn.execute(
                f"SELECT {', '.join(WINE_FIELDS)} FROM wines WHERE {where}"
                " ORDER BY price, name LIMIT ?",
                [*params, limit],
            ).fetchall()
        return [Row(_wine(r)) for r in rows], int(total)

    def wines(self) -> list[Wine]:
        """Every wine, in catalog order."""
        with _connect(self.path) as conn:
            rows = conn.execute(f"SELECT {', '.join(WINE_FIELDS)} FROM wines ORDER BY id")
            return [_wine(r) for r in rows.fetchall()]

    def full_text(self, fts_query: str, limit: int) -> list[Row]:
        """Wines ranked by FTS5 bm25 for `fts_query` (an FTS5 MATCH expression)."""
        weights = ", ".join(str(w) for w in FTS_WEIGHTS)
        columns = ", ".join(f"w.{f}" for f in WINE_FIELDS)
        with _connect(self.path) as conn:
            rows = conn.execute(
                f"SELECT {columns}, bm25(wines_fts, {weights}) AS score"
                " FROM wines_fts JOIN wines AS w ON w.id = wines_fts.rowid"
                " WHERE wines_fts MATCH ? ORDER BY score, w.name LIMIT ?",
                (fts_query, limit),
            ).fetchall()
        return [Row(_wine(r), round(float(r["score"]), 4)) for r in rows]


def _wine(row: sqlite3.Row) -> Wine:
    return Wine.model_validate({f: row[f] for f in WINE_FIELDS})
