"""The wine-shop tools over the SQLite catalog: `search_wines` (filters), `semantic_search`
(embeddings, evalctl.suites.sommelier.vectors) and `lexical_search` (FTS5 bm25).

Each records, through the runner's spy, what they actually did: the arguments after
normalisation (`normalized_arguments`) and the rows they returned (`data`), so the scorer
judges the search that ran rather than the words the model typed. See docs/sommelier.md.
"""

from __future__ import annotations

import math
import re
import threading
import time
from pathlib import Path
from typing import Any

from evalctl.cases.schema import Suite
from evalctl.chat import ToolDef
from evalctl.config import Settings, ensure_private_dir
from evalctl.embeddings import cosine
from evalctl.errors import EvalctlError, ExitCode
from evalctl.suites.sommelier.catalog_db import (
    FILTER_SQL,
    CatalogDb,
    CatalogError,
    Clause,
    Row,
    Wine,
    db_source_sha,
    ensure_db,
    fts5_problem,
    like_contains,
    load_wines,
)
from evalctl.suites.sommelier.catalog_words import (
    COLORS,
    SWEETNESS,
    WordError,
    grape_match_key,
    normalize_color,
    normalize_country,
    normalize_grape,
    normalize_region,
    normalize_sweetness,
    query_terms,
    stem,
    word_key,
)
from evalctl.suites.sommelier.settings import CATALOG_DB
from evalctl.suites.sommelier.vectors import VectorsError, catalog_vectors
from evalctl.tools.base import Tool, ToolContext, ToolInputError, ToolOutput, to_json

CATALOG_FILE = "wines.json"
DEFAULT_LIMIT = 5
MAX_LIMIT = 20
# Bounds on string arguments: a constrained decoder enforces them, so a small model cannot
# run away inside one value. A country, region or grape name fits in 40 characters.
MAX_TERM = 40
MAX_QUERY = 120
MAX_TEXT = 100  # longer filter values are not names of anything in a wine shop
MAX_QUERY = 300

# When nothing matches, filters are dropped one at a time in this order until something does.
# Colour goes last because it decides what kind of wine the customer is holding; country and
# price are the usual intent behind a request; region, grape and sweetness refine it.
BROADEN_ORDER = ("region", "grape", "sweetness", "price", "country", "color")
TEXT_FILTERS = ("color", "country", "region", "grape", "sweetness")
PRICE_FILTERS = ("min_price", "max_price")
SEARCH_ARGUMENTS = (*TEXT_FILTERS, *PRICE_FILTERS, "limit")

_open_lock = threading.Lock()


# --- locating and opening the catalog -------------------------------------------------------


def catalog_db_setting(settings: Settings) -> Path | None:
    """`catalog_db` of `evalctl.toml` (declared by this plugin), None when unset."""
    value = CATALOG_DB.get(settings)
    return value if isinstance(value, Path) else None


def suite_source(suite: Suite) -> Path:
    """The catalog JSON of a suite: `fixtures/wines.json` next to the suite file, so a run
    from any working directory finds it."""
    return suite.path.parent / "fixtures" / CATALOG_FILE


def open_catalog(settings: Settings, source: Path) -> CatalogDb:
    """Build (if needed) and open the database for the catalog JSON at `source`.

    The database goes to the `catalog_db` setting when set, else to a file under
    `$EVALCTL_HOME/catalog/` named by the JSON's hash. If the JSON is absent but a configured
    `catalog_db` holds a current build, that database is used as it is.
    """
    problem = fts5_problem()
    if problem is not None:
        raise CatalogError(problem, hint="use a Python whose SQLite is built with FTS5")
    configured = catalog_db_setting(settings)
    if source.is_file():
        wines, sha = load_wines(source)
        if configured is not None:
            target = configured
        else:
            home = settings.private_home()
            target = ensure_private_dir(home / "catalog") / f"wines-{sha[:12]}.sqlite"
        return CatalogDb(ensure_db(wines, sha, target))
    if configured is not None and db_source_sha(configured) is not None:
        return CatalogDb(configured)
    raise CatalogError(
        f"wine catalog {source} not found",
        hint="the suite's fixtures/wines.json is missing; or set catalog_db in evalctl.toml",
    )


def open_suite_catalog(settings: Settings, suite: Suite) -> CatalogDb:
    """The `catalog` resource's opener: the suite's catalog, built once per run."""
    return open_catalog(settings, suite_source(suite))


def catalog_for(ctx: ToolContext) -> CatalogDb:
    """The run's catalog: the one the runner opened for the suite (`requires = ["catalog"]`),
    else opened here once and shared by every case through `ctx.resources`."""
    opened = ctx.resources.get("catalog")
    if isinstance(opened, CatalogDb):
        return opened
    source = ctx.fixtures_dir / CATALOG_FILE
    key = f"catalog:{source.resolve()}"
    with _open_lock:
        catalog = ctx.resources.get(key)
        if not isinstance(catalog, CatalogDb):
            catalog = open_catalog(ctx.settings, source)
            ctx.resources[key] = catalog
    return catalog


def check_catalog(settings: Settings, suite: Suite) -> str | None:
    """Resource check for suites that `require = ["catalog"]`: None when usable, else why.

    Run before the suite's cases, so it also builds the database at the start of the run.
    """
    try:
        open_suite_catalog(settings, suite)
    except CatalogError as exc:
        return exc.message
    return None


# --- argument parsing -----------------------------------------------------------------------


def _reject_unknown(arguments: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(arguments) - set(allowed))
    if unknown:
        raise ToolInputError(
            f"unknown argument(s) {', '.join(unknown)}; this tool takes: {', '.join(allowed)}"
        )


def _text(name: str, value: Any) -> str | None:
    """A text filter's value, or None when the model left it open ("", "any", null)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ToolInputError(f"{name} must be a string, got {type(value).__name__}")
    text = value.strip()
    if text.casefold() in {"", "any", "all", "none", "null", "любое", "любой", "все"}:
        return None
    if len(text) > MAX_TEXT:
        raise ToolInputError(f"{name} is longer than {MAX_TEXT} characters")
    return text


_PRICE = re.compile(
    r"^\s*(?:\$|usd)?\s*(\d+(?:[.,]\d{1,2})?)\s*(?:\$|usd|dollars?|долл\w*|\$us)?\s*$",
    re.IGNORECASE,
)


def _price(name: str, value: Any) -> float | None:
    """A price bound in US dollars; numbers or strings such as "$25" or "25 USD"."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ToolInputError(f"{name} must be a number of US dollars")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str) and (match := _PRICE.match(value)):
        number = float(match.group(1).replace(",", "."))
    else:
        raise ToolInputError(f"{name} must be a number of US dollars, got {value!r}")
    if not math.isfinite(number) or number < 0:
        raise ToolInputError(f"{name} must be a non-negative number of US dollars")
    return round(number, 2)


def _limit(value: Any) -> int:
    if value is None:
        return DEFAULT_LIMIT
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ToolInputError("limit must be an integer")
    try:
        number = int(float(value))
    except ValueError:
        raise ToolInputError(f"limit must be an integer, got {value!r}") from None
    # Clamped rather than rejected: asking for 50 wines is a harmless excess, not an error.
    return max(1, min(MAX_LIMIT, number))


_NORMALIZERS = {
    "color": normalize_color,
    "country": normalize_country,
    "region": normalize_region,
    "grape": normalize_grape,
    "sweetness": normalize_sweetness,
}


def parse_search_arguments(arguments: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Normalised filters (+ limit) as the search will run them, and notes on what changed."""
    _reject_unknown(arguments, SEARCH_ARGUMENTS)
    filters: dict[str, Any] = {}
    notes: list[str] = []
    for name in TEXT_FILTERS:
        value = _text(name, arguments.get(name))
        if value is not None:
            try:
                filters[name] = _NORMALIZERS[name](value)
            except WordError as exc:
                raise ToolInputError(str(exc)) from None
    low = _price("min_price", arguments.get("min_price"))
    high = _price("max_price", arguments.get("max_price"))
    # Reversed bounds are swapped, not rejected: {20, 50} names one range either way round,
    # so swapping guesses nothing. The swap is recorded and told to the model.
    if low is not None and high is not None and low > high:
        low, high = high, low
        notes.append(f"min_price was above max_price; swapped to {low:g}..{high:g}")
    if low is not None:
        filters["min_price"] = low
    if high is not None:
        filters["max_price"] = high
    filters["limit"] = _limit(arguments.get("limit"))
    return filters, notes


def _clauses(filters: dict[str, Any]) -> list[Clause]:
    clauses = []
    for name, value in filters.items():
        if name == "limit":
            continue
        if name == "country":
            param: Any = word_key(value)
        elif name == "region":
            param = like_contains(word_key(value))
        elif name == "grape":
            param = like_contains(grape_match_key(value))
        else:
            param = value
        clauses.append(Clause(FILTER_SQL[name], param))
    return clauses


def _wine_json(row: Row) -> dict[str, Any]:
    return row.wine.model_dump()


# --- search_wines ---------------------------------------------------------------------------

_FILTER_HELP = (
    f"color: one of {', '.join(COLORS)}; sweetness: one of {', '.join(SWEETNESS)}; "
    "country, region and grape in English (Russian is understood too); prices in US dollars."
)


class SearchWines(Tool):
    """Structured search: every given filter must hold; broadens when nothing matches."""

    # Reads its arguments leniently itself and says what it made of them; its baselines
    # were recorded so (evalctl.tools.base).
    lenient_arguments = True

    definition = ToolDef(
        name="search_wines",
        description=(
            "Search the shop's wine catalog by concrete attributes: colour, country, region, "
            "grape, sweetness and price range (US dollars). Use it whenever the customer names "
            "any of these. All given filters must match; omit a filter to leave it open. "
            "If nothing matches, the tool drops filters (region, grape, sweetness, price, "
            "country, colour, in that order) and says so in `broadened` and `dropped_filters`: "
            "those wines do NOT match the full request. " + _FILTER_HELP
        ),
        parameters={
            "type": "object",
            "properties": {
                "color": {"type": "string", "enum": list(COLORS)},
                "country": {
                    "type": "string",
                    "maxLength": MAX_TERM,
                    "description": "e.g. Italy, France, USA",
                },
                "region": {
                    "type": "string",
                    "maxLength": MAX_TERM,
                    "description": "e.g. Tuscany, Bordeaux, Rioja",
                },
                "grape": {
                    "type": "string",
                    "maxLength": MAX_TERM,
                    "description": "one grape, e.g. Pinot Noir",
                },
                "sweetness": {"type": "string", "enum": list(SWEETNESS)},
                "min_price": {"type": "number", "description": "lowest price, US dollars"},
                "max_price": {"type": "number", "description": "highest price, US dollars"},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "description": f"how many wines to return (default {DEFAULT_LIMIT})",
                },
            },
            "additionalProperties": False,
        },
    )

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        filters, notes = parse_search_arguments(arguments)
        catalog = catalog_for(ctx)
        limit = filters["limit"]
        rows, matched = catalog.filter(_clauses(filters), limit)
        dropped: list[str] = []
        if matched == 0:
            rows, dropped = _broaden(catalog, filters, limit)
        broadened = bool(dropped)
        payload: dict[str, Any] = {
            "filters": filters,
            "matched": matched,
            "broadened": broadened,
            "wines": [_wine_json(r) for r in rows],
        }
        if broadened:
            payload["dropped_filters"] = dropped
            payload["message"] = (
                "No wine matches all the filters. To find the closest wines these filters "
                f"were dropped: {', '.join(dropped)}. The wines below do NOT match the full "
                "request; tell the customer so."
            )
        elif not rows:
            payload["message"] = "No wine in the catalog matches."
        if notes:
            payload["notes"] = notes
        return ToolOutput(
            content=to_json(payload),
            normalized_arguments=filters,
            data={
                "catalog_db": str(catalog.path),
                "matched": matched,
                "rows": [r.wine.name for r in rows],
                "row_count": len(rows),
                "broadened": broadened,
                "dropped_filters": dropped,
                "notes": notes,
            },
        )


def _broaden(
    catalog: CatalogDb, filters: dict[str, Any], limit: int
) -> tuple[list[Row], list[str]]:
    """Drop filters in BROADEN_ORDER until some wine matches; the rows and what was dropped."""
    remaining = {k: v for k, v in filters.items() if k != "limit"}
    dropped: list[str] = []
    for name in BROADEN_ORDER:
        keys = PRICE_FILTERS if name == "price" else (name,)
        present = [k for k in keys if k in remaining]
        if not present:
            continue
        for key in present:
            del remaining[key]
        dropped.extend(present)
        rows, _ = catalog.filter(_clauses(remaining), limit)
        if rows:
            return rows, dropped
    return [], dropped


# --- free text: semantic_search (embeddings) and lexical_search (FTS5 bm25) -------------------

_QUERY_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "maxLength": MAX_QUERY,
            "description": "descriptive words",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "description": f"how many wines to return (default {DEFAULT_LIMIT})",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}


def _free_text(arguments: dict[str, Any]) -> tuple[str, list[str], int]:
    """The query as given, its searchable English terms (Russian translated) and the limit."""
    _reject_unknown(arguments, ("query", "limit"))
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolInputError("query must be a non-empty string")
    if len(query) > MAX_QUERY:
        raise ToolInputError(f"query is longer than {MAX_QUERY} characters")
    return query.strip(), query_terms(query), _limit(arguments.get("limit"))


class NoEmbedderError(EvalctlError):
    """semantic_search ran where no embedding provider was given (outside a run)."""

    code = ExitCode.INFRA


# How long embedding the query and, on a cold cache, the catalog may take in one call; the
# case's time left caps it (ToolContext.call_timeout).
EMBED_TIMEOUT_S = 300.0


class SemanticSearch(Tool):
    """Free-text search ranked by cosine similarity of embeddings: the query's against each
    wine's (evalctl.suites.sommelier.vectors), computed with the run's embedding provider."""

    # Reads its arguments leniently itself and says what it made of them; its baselines
    # were recorded so (evalctl.tools.base).
    lenient_arguments = True

    definition = ToolDef(
        name="semantic_search",
        description=(
            "Free-text search over wine names and tasting descriptions, for requests about "
            "taste, aroma, style, food pairing or occasion (e.g. 'something fruity for fish'). "
            "Ranking is by meaning: the query's embedding is compared with each wine's (its "
            "name, grape, region and tasting notes), and every wine returned carries its "
            "`similarity` (cosine, higher is closer), best first. Russian taste and food words "
            "are translated to English first. For colour, country, grape or price use "
            "search_wines."
        ),
        parameters=_QUERY_PARAMETERS,
    )

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        query, terms, limit = _free_text(arguments)
        embedder = ctx.embedder
        if embedder is None:
            raise NoEmbedderError(
                "semantic_search needs an embedding provider and none was given",
                hint="run it inside `evalctl run`, which gives the run's (docs/sommelier.md)",
            )
        # The English terms, as lexical_search would search them, when the query has any:
        # the embedded model's notes are English and a small model embeds Russian poorly.
        text = " ".join(terms) if terms else query
        timeout = ctx.call_timeout(EMBED_TIMEOUT_S)
        started = time.monotonic()
        asked = embedder.embed([text], timeout=timeout)
        if len(asked.vectors) != 1:
            raise VectorsError(
                f"the embedding provider returned {len(asked.vectors)} vectors for 1 text"
            )
        catalog = catalog_for(ctx)
        wines = catalog.wines()
        left = max(0.001, timeout - (time.monotonic() - started))
        home = ctx.settings.private_home()
        vectors = catalog_vectors(embedder, wines, asked, home, timeout=left)
        ranked = rank(asked.vectors[0], wines, vectors.by_name)[:limit]
        rows = [{**w.model_dump(), "similarity": round(s, 4)} for w, s in ranked]
        similarities = [row["similarity"] for row in rows]
        model = asked.model_sha256 and f"{asked.model} (sha256 {asked.model_sha256[:12]})"
        # `wines` is the one list: a retrieval suite reads the rows as the object's only list
        # field (docs/writing-suites.md, "Retrieval suites").
        payload: dict[str, Any] = {
            "query": text,
            "matched": len(rows),
            "ranking": "cosine similarity of embeddings, best first",
            "wines": rows,
        }
        return ToolOutput(
            content=to_json(payload),
            normalized_arguments={"query": text, "limit": limit},
            data={
                "catalog_db": str(catalog.path),
                "terms": terms,
                "embedding_model": model or asked.model,
                "embeddings_cache": str(vectors.path),
                "matched": len(rows),
                "rows": [w.name for w, _ in ranked],
                "row_count": len(rows),
                "similarities": similarities,
                "broadened": False,
            },
        )


def rank(
    query: list[float], wines: list[Wine], by_name: dict[str, list[float]]
) -> list[tuple[Wine, float]]:
    """Every wine with its cosine similarity to `query`, highest first, by name on ties."""
    try:
        scored = [(w, cosine(query, by_name[w.name])) for w in wines]
    except (KeyError, ValueError) as exc:
        raise VectorsError(f"the catalog's cached vectors do not fit the query's: {exc}") from None
    return sorted(scored, key=lambda pair: (-pair[1], pair[0].name))


def fts_query(terms: list[str]) -> str:
    """An FTS5 MATCH expression: any of the terms, each as a quoted prefix.

    Quoting makes every term a plain string to FTS5 (no operators, columns or NEAR from user
    text); the terms are letters and digits only anyway. The prefix lets 'spic' find both
    'spice' and 'spicy'.
    """
    return " OR ".join(f'"{stem(t)}"*' for t in terms)


class LexicalSearch(Tool):
    """Free-text search ranked by SQLite FTS5 bm25: shared words, no embeddings."""

    lenient_arguments = True

    definition = ToolDef(
        name="lexical_search",
        description=(
            "Free-text search over wine names and tasting descriptions, for requests about "
            "taste, aroma, style, food pairing or occasion (e.g. 'something fruity for fish'). "
            "Ranking is lexical (SQLite FTS5 bm25 over words), NOT embeddings: it finds wines "
            "whose descriptions share words with the query, so use plain descriptive words. "
            "Russian taste and food words are translated to English first. For colour, "
            "country, grape or price use search_wines."
        ),
        parameters=_QUERY_PARAMETERS,
    )

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        _, terms, limit = _free_text(arguments)
        if not terms:
            raise ToolInputError(
                "query has no searchable words; describe taste, aroma, food or occasion"
            )
        match = fts_query(terms)
        catalog = catalog_for(ctx)
        rows = catalog.full_text(match, limit)
        normalized = {"query": " ".join(terms), "limit": limit}
        payload: dict[str, Any] = {
            "query_terms": terms,
            "matched": len(rows),
            "ranking": "lexical full-text (SQLite FTS5 bm25), not embeddings",
            "wines": [_wine_json(r) for r in rows],
        }
        if not rows:
            payload["message"] = (
                "No wine description shares a word with the query; try other words or search_wines."
            )
        return ToolOutput(
            content=to_json(payload),
            normalized_arguments=normalized,
            data={
                "catalog_db": str(catalog.path),
                "terms": terms,
                "fts_query": match,
                "matched": len(rows),
                "rows": [r.wine.name for r in rows],
                "row_count": len(rows),
                "scores": [r.score for r in rows],
                "broadened": False,
            },
        )


SEARCH_WINES = SearchWines()
SEMANTIC_SEARCH = SemanticSearch()
LEXICAL_SEARCH = LexicalSearch()
