"""Read a sommelier answer in the documented format and match its wines against the catalog.

The format (docs/sommelier.md): each recommended wine on its own line as
`[WINE: <catalog name>] why ...`, and `[NO MATCH]` when the catalog has nothing that fits the
request. Only marked wines can be checked; free prose is not parsed, which is why the
grounding check also insists that an answerable request gets at least one marked wine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from evalctl.suites.sommelier.catalog_db import CatalogDb, CatalogError, load_wines
from evalctl.suites.sommelier.catalog_words import word_key

_WINE_MARK = re.compile(r"\[\s*WINE\s*:\s*([^\]\n]*?)\s*\]", re.IGNORECASE)
_NO_MATCH = re.compile(r"\[\s*NO[\s_-]*MATCH\s*\]", re.IGNORECASE)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
# A shortened name must still say something: "[WINE: Port]" yes, "[WINE: a]" no.
MIN_PARTIAL_KEY = 4


def strip_markdown(text: str) -> str:
    """Drop emphasis, code and escape characters so `**[WINE: X]**` reads as `[WINE: X]`."""
    text = re.sub(r"\\([\\\[\]*_`~#])", r"\1", text)
    return re.sub(r"[*_`~]", "", text)


@dataclass(frozen=True)
class Recommendation:
    text: str  # the marker as written (after markdown stripping), quoted in reports
    name: str  # the name inside the marker
    catalog_name: str | None  # the catalog wine it matched, None: not in the catalog


# Quotes, brackets and dashes around a name ("«Tignanello»", "Tignanello —") are not part of it.
_NAME_EDGES = " \t\"'()[]:;,.-\u00ab\u00bb\u201c\u201d\u201e\u2013\u2014"


def _clean_name(raw: str) -> str:
    name = _LINK.sub(r"\1", raw)
    return name.strip(_NAME_EDGES)


def match_name(name: str, catalog: tuple[str, ...]) -> str | None:
    """The catalog wine `name` refers to: case-, accent- and punctuation-insensitive, with
    either one containing the other on word boundaries (the answer may add a producer or
    vintage, or shorten the name). An exact match wins over a partial one."""
    key = word_key(name)
    if not key:
        return None
    padded = f" {key} "
    partial: str | None = None
    for candidate in catalog:
        ckey = word_key(candidate)
        if ckey == key:
            return candidate
        if partial is None and (
            f" {ckey} " in padded or (len(key) >= MIN_PARTIAL_KEY and padded in f" {ckey} ")
        ):
            partial = candidate
    return partial


def recommendations(answer: str, catalog: tuple[str, ...]) -> list[Recommendation]:
    plain = strip_markdown(answer)
    out = []
    for mark in _WINE_MARK.finditer(plain):
        name = _clean_name(mark.group(1))
        out.append(Recommendation(mark.group(0), name, match_name(name, catalog)))
    return out


def says_no_match(answer: str) -> bool:
    return _NO_MATCH.search(strip_markdown(answer)) is not None


# --- which catalog ----------------------------------------------------------------------------

# For answers given without any tool call and scored outside a run (no suite directory to
# look in): this checkout's committed catalog. Never the working directory's.
CHECKOUT_SOURCE = Path(__file__).resolve().parents[3] / "cases" / "fixtures" / "wines.json"


@lru_cache(maxsize=8)
def _names_in_db(path: str, mtime_ns: int) -> tuple[str, ...]:
    return CatalogDb(Path(path)).names


@lru_cache(maxsize=8)
def _names_in_json(path: str, mtime_ns: int) -> tuple[str, ...]:
    wines, _ = load_wines(Path(path))
    return tuple(w.name for w in wines)


def catalog_names(db_paths: list[str], suite_source: Path | None = None) -> tuple[str, ...]:
    """Names of the catalog the tools searched (first recorded database), else those of the
    suite's catalog JSON (`suite_source`); scored outside a run, this checkout's."""
    for raw in db_paths:
        path = Path(raw)
        if path.is_file():
            return _names_in_db(str(path), path.stat().st_mtime_ns)
    source = suite_source or CHECKOUT_SOURCE
    if source.is_file():
        return _names_in_json(str(source), source.stat().st_mtime_ns)
    raise CatalogError(f"cannot find the wine catalog {source} to check the answer against")
