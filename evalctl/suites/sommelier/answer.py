"""Read a sommelier answer: its `[WINE: name]` and `[NO MATCH]` markers, its prose, and the
catalog it is checked against (names, producers, the generic vocabulary).

The format (docs/sommelier.md): each recommended wine on its own line as
`[WINE: <catalog name>] why ...`, and `[NO MATCH]` when the catalog has nothing that fits the
request. Matching names is evalctl.scoring.grounding's job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from evalctl.suites.sommelier.catalog_db import CatalogDb, CatalogError, Wine, load_wines

_WINE_MARK = re.compile(r"\[\s*WINE\s*:\s*([^\]\n]*?)\s*\]", re.IGNORECASE)
_NO_MATCH = re.compile(r"\[\s*NO[\s_-]*MATCH\s*\]", re.IGNORECASE)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def strip_markdown(text: str) -> str:
    """Drop emphasis, code and escape characters so `**[WINE: X]**` reads as `[WINE: X]`."""
    text = re.sub(r"\\([\\\[\]*_`~#])", r"\1", text)
    return re.sub(r"[*_`~]", "", text)


@dataclass(frozen=True)
class Recommendation:
    text: str  # the marker as written (after markdown stripping), quoted in reports
    name: str  # the name inside the marker


# Quotes, brackets and dashes around a name ("«Tignanello»", "Tignanello —") are not part of it.
_NAME_EDGES = " \t\"'()[]:;,.-\u00ab\u00bb\u201c\u201d\u201e\u2013\u2014"


def _clean_name(raw: str) -> str:
    name = _LINK.sub(r"\1", raw)
    return name.strip(_NAME_EDGES)


def recommendations(answer: str) -> list[Recommendation]:
    """The `[WINE: name]` markers of an answer, in order."""
    plain = strip_markdown(answer)
    return [
        Recommendation(mark.group(0), _clean_name(mark.group(1)))
        for mark in _WINE_MARK.finditer(plain)
    ]


def without_markers(answer: str) -> str:
    """The answer's prose: markers removed, so a marked name is not also read as prose."""
    return _NO_MATCH.sub(" ", _WINE_MARK.sub(" ", strip_markdown(answer)))


def says_no_match(answer: str) -> bool:
    return _NO_MATCH.search(strip_markdown(answer)) is not None


# --- which catalog ----------------------------------------------------------------------------

# For answers given without any tool call and scored outside a run (no suite directory to
# look in): this checkout's committed catalog. Never the working directory's.
CHECKOUT_SOURCE = Path(__file__).resolve().parents[3] / "cases" / "fixtures" / "wines.json"


@lru_cache(maxsize=8)
def _wines_in_db(path: str, mtime_ns: int) -> tuple[Wine, ...]:
    db = CatalogDb(Path(path))
    rows, _ = db.filter([], max(1, db.count()))
    return tuple(r.wine for r in rows)


@lru_cache(maxsize=8)
def _wines_in_json(path: str, mtime_ns: int) -> tuple[Wine, ...]:
    wines, _ = load_wines(Path(path))
    return tuple(wines)


def catalog_wines(db_paths: list[str], suite_source: Path | None = None) -> tuple[Wine, ...]:
    """The catalog the tools searched (first recorded database), else the suite's catalog
    JSON (`suite_source`); scored outside a run, this checkout's."""
    for raw in db_paths:
        path = Path(raw)
        if path.is_file():
            return _wines_in_db(str(path), path.stat().st_mtime_ns)
    source = suite_source or CHECKOUT_SOURCE
    if source.is_file():
        return _wines_in_json(str(source), source.stat().st_mtime_ns)
    raise CatalogError(f"cannot find the wine catalog {source} to check the answer against")


# Words that name a kind of wine, not one wine: styles, classifications and appellations a
# catalog name may contain ("Taylor's 20 Year Old Tawny Port", "Vietti Barolo Castiglione").
# With the catalog's own grapes, regions, countries and colours they make the generic
# vocabulary: "[WINE: Port]" or "[WINE: Barolo]" names no wine.
STYLE_TERMS = [
    "wine",
    "red",
    "white",
    "rose",
    "rosado",
    "rosato",
    "sparkling",
    "still",
    "dessert",
    "fortified",
    "orange",
    "brut",
    "extra",
    "sec",
    "demi",
    "doux",
    "dry",
    "sweet",
    "off",
    "semi",
    "amabile",
    "reserve",
    "reserva",
    "riserva",
    "gran",
    "crianza",
    "classico",
    "superiore",
    "kabinett",
    "spatlese",
    "auslese",
    "grand",
    "cru",
    "premier",
    "village",
    "villages",
    "port",
    "tawny",
    "ruby",
    "vintage",
    "madeira",
    "sherry",
    "fino",
    "champagne",
    "prosecco",
    "cava",
    "cremant",
    "lambrusco",
    "moscato",
    "asti",
    "barolo",
    "barbaresco",
    "chianti",
    "amarone",
    "valpolicella",
    "rioja",
    "sauternes",
    "chablis",
    "beaujolais",
    "sancerre",
    "vouvray",
    "margaux",
    "tokaji",
    "aszu",
    "puttonyos",
    "vinho",
    "verde",
    "tinto",
    "rouge",
    "blanc",
    "bianco",
    "rosso",
    "old",
    "vine",
    "vines",
    "year",
    "years",
    "estate",
]


def generic_terms(wines: tuple[Wine, ...]) -> list[str]:
    terms = list(STYLE_TERMS)
    for wine in wines:
        terms += [wine.country, wine.region, wine.color, wine.sweetness]
        terms += [g for g in wine.grape.split(",") if g.strip()]
    return terms
