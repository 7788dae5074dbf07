"""The wine tools on the real SQLite catalog: normalisation, price sanity, broadening,
parameterised SQL and FTS5 ranking. No mocks: every call builds and queries a real database."""

# Russian test data: Cyrillic letters here are words, not look-alikes.
# ruff: noqa: RUF001

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from evalctl.chat import ToolCall
from evalctl.config import Settings
from evalctl.plugin_loader import registry
from evalctl.suites.sommelier.catalog_db import (
    FILTER_SQL,
    CatalogDb,
    CatalogError,
    Clause,
    like_contains,
)
from evalctl.suites.sommelier.tools import (
    LEXICAL_SEARCH,
    SEARCH_WINES,
    catalog_for,
    check_catalog,
    open_catalog,
)
from evalctl.tools.base import ToolContext, ToolInputError, ToolOutput, ToolSpy
from tests.catalog_support import CASES_DIR, FIXTURES, make_ctx, settings_for


@pytest.fixture
def ctx(evalctl_home: Path) -> ToolContext:
    return make_ctx(evalctl_home)


def search(ctx: ToolContext, **arguments: Any) -> ToolOutput:
    return SEARCH_WINES.run(arguments, ctx)


def wines_in(output: ToolOutput) -> list[dict[str, Any]]:
    wines: list[dict[str, Any]] = json.loads(output.content)["wines"]
    return wines


def table_count(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        count: int = conn.execute("SELECT count(*) FROM wines").fetchone()[0]
    return count


# --- building the database -----------------------------------------------------------------


def test_database_is_built_under_home_once_and_reused(evalctl_home: Path) -> None:
    settings = settings_for(evalctl_home)
    first = open_catalog(settings, FIXTURES / "wines.json")
    assert first.path.parent == evalctl_home / "catalog"
    assert first.path.name.startswith("wines-") and first.path.suffix == ".sqlite"
    assert table_count(first.path) == 50 == len(first.names)
    mtime = first.path.stat().st_mtime_ns
    again = open_catalog(settings, FIXTURES / "wines.json")
    assert again.path == first.path
    assert again.path.stat().st_mtime_ns == mtime  # same data: not rebuilt


def test_configured_catalog_db_is_rebuilt_when_the_data_changes(
    evalctl_home: Path, tmp_path: Path
) -> None:
    wines = json.loads((FIXTURES / "wines.json").read_text())
    source = tmp_path / "wines.json"
    source.write_text(json.dumps(wines[:3]))
    target = tmp_path / "db" / "catalog.sqlite"
    settings = settings_for(evalctl_home, catalog_db=target)
    assert open_catalog(settings, source).names == tuple(w["name"] for w in wines[:3])
    source.write_text(json.dumps(wines[3:5]))
    assert open_catalog(settings, source).names == tuple(w["name"] for w in wines[3:5])
    # Without its JSON, a configured database that holds a current build is used as is.
    source.unlink()
    assert open_catalog(settings, source).path == target


def test_invalid_catalog_data_is_refused(evalctl_home: Path, tmp_path: Path) -> None:
    wines = json.loads((FIXTURES / "wines.json").read_text())
    wines[0]["colour"] = wines[0].pop("color")  # unknown key: extra="forbid"
    source = tmp_path / "wines.json"
    source.write_text(json.dumps(wines))
    with pytest.raises(Exception, match="invalid wine catalog"):
        open_catalog(settings_for(evalctl_home), source)


def test_the_run_opens_the_catalog_once(ctx: ToolContext) -> None:
    assert catalog_for(ctx) is catalog_for(ctx)
    assert len(ctx.resources) == 1


# --- the "catalog" resource check ----------------------------------------------------------


def test_resource_check_passes_with_the_committed_catalog(evalctl_home: Path) -> None:
    from evalctl.cases.loader import load_suite

    suite = load_suite(FIXTURES.parent / "sommelier.toml")
    assert check_catalog(settings_for(evalctl_home), suite) is None
    # Registered through the plugin API under the name suites require, with an opener.
    resource = registry().resource("catalog")
    assert resource is not None
    check, opener = resource
    assert check(settings_for(evalctl_home), suite) is None
    assert opener is not None and opener(settings_for(evalctl_home), suite).names


def test_resource_check_explains_a_missing_catalog(evalctl_home: Path, tmp_path: Path) -> None:
    from evalctl.cases.loader import load_suite

    # The catalog is looked up next to the suite file, whatever cases_dir or the cwd are.
    copy = tmp_path / "sommelier.toml"
    copy.write_text((FIXTURES.parent / "sommelier.toml").read_text())
    resource = registry().resource("catalog")
    assert resource is not None
    reason = resource[0](Settings(home=evalctl_home, cases_dir=CASES_DIR), load_suite(copy))
    assert reason is not None and "not found" in reason and str(tmp_path / "fixtures") in reason


# --- normalisation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "recorded"),
    [
        ({"color": "красное"}, {"color": "red"}),
        ({"color": "Red wine"}, {"color": "red"}),
        ({"color": "белого"}, {"color": "white"}),
        ({"color": "Rosé"}, {"color": "rose"}),
        ({"color": "игристое"}, {"color": "sparkling"}),
        ({"color": "сухое красное"}, {"color": "red"}),
        ({"sweetness": "сухое"}, {"sweetness": "dry"}),
        ({"sweetness": "полусухое"}, {"sweetness": "off-dry"}),
        ({"sweetness": "полусладкое"}, {"sweetness": "semi-sweet"}),
        ({"sweetness": "Off-dry"}, {"sweetness": "off-dry"}),
        ({"sweetness": "брют"}, {"sweetness": "dry"}),
        ({"country": "Италия"}, {"country": "Italy"}),
        ({"country": "из Италии"}, {"country": "Italy"}),
        ({"country": "итальянское"}, {"country": "Italy"}),
        ({"country": "Italian"}, {"country": "Italy"}),
        ({"country": "Новой Зеландии"}, {"country": "New Zealand"}),
        ({"country": "австрийское"}, {"country": "Austria"}),
        ({"country": "австралийское"}, {"country": "Australia"}),
        ({"country": "США"}, {"country": "USA"}),
        ({"region": "Тоскана"}, {"region": "Tuscany"}),
        ({"region": "Chianti"}, {"region": "Tuscany"}),
        ({"region": "бордо"}, {"region": "Bordeaux"}),
        ({"grape": "Пино Нуар"}, {"grape": "Pinot Noir"}),
        ({"grape": "каберне совиньон"}, {"grape": "Cabernet Sauvignon"}),
        ({"grape": "shiraz"}, {"grape": "Syrah"}),
        ({"grape": "Рислинга"}, {"grape": "Riesling"}),
        ({"color": "", "country": "any", "grape": None}, {}),
    ],
)
def test_user_words_are_normalised_and_recorded(
    ctx: ToolContext, arguments: dict[str, Any], recorded: dict[str, Any]
) -> None:
    output = search(ctx, **arguments)
    assert output.normalized_arguments == {**recorded, "limit": 5}


def test_normalised_values_reach_the_query(ctx: ToolContext) -> None:
    reds = wines_in(search(ctx, color="красное", country="Италия", limit=20))
    assert reds and all(w["color"] == "red" and w["country"] == "Italy" for w in reds)
    # Synonyms are resolved on the catalog side too: "Syrah" finds wines labelled Shiraz.
    names = {w["name"] for w in wines_in(search(ctx, grape="Syrah", limit=20))}
    assert {"Yellow Tail Shiraz", "Guigal Côtes du Rhône Rouge"} <= names
    # A region filter also matches the broader area a region belongs to.
    californian = wines_in(search(ctx, region="California", limit=20))
    assert {w["region"] for w in californian} == {"Napa Valley", "Sonoma County", "Carneros"}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"color": "blue"}, "unknown color 'blue'; use one of: red, white, rose, sparkling"),
        ({"color": "orange"}, "unknown color"),
        ({"color": "red or white"}, "several color values"),
        ({"sweetness": "medium"}, "unknown sweetness"),
        ({"grape": "Merlot, Malbec"}, "one grape at a time"),
        ({"color": 3}, "color must be a string"),
        ({"vintage": 2019}, "unknown argument(s) vintage"),
        ({"max_price": -5}, "non-negative"),
        ({"max_price": "cheap"}, "must be a number of US dollars"),
        ({"min_price": True}, "must be a number of US dollars"),
        ({"limit": "many"}, "limit must be an integer"),
        ({"region": "x" * 101}, "longer than 100"),
    ],
)
def test_unusable_arguments_are_rejected_for_the_model(
    ctx: ToolContext, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(ToolInputError) as info:
        search(ctx, **arguments)
    assert message in str(info.value)


def test_the_spy_records_a_rejected_call_as_an_error(ctx: ToolContext) -> None:
    spy = ToolSpy({"search_wines": SEARCH_WINES}, ctx)
    result = spy.execute(ToolCall(id="1", name="search_wines", arguments={"color": "blue"}), 1)
    assert result.is_error and "unknown color" in result.content
    record = spy.records[0]
    assert record.is_error and record.normalized_arguments is None
    assert record.arguments == {"color": "blue"}


def test_the_spy_records_normalised_arguments_and_rows(ctx: ToolContext) -> None:
    spy = ToolSpy({"search_wines": SEARCH_WINES}, ctx)
    call = ToolCall(id="1", name="search_wines", arguments={"color": "красное", "max_price": "$20"})
    spy.execute(call, 1)
    record = spy.records[0]
    assert record.arguments == {"color": "красное", "max_price": "$20"}  # as the model sent it
    assert record.normalized_arguments == {"color": "red", "max_price": 20.0, "limit": 5}
    assert record.data["matched"] == 6 and record.data["row_count"] == 5
    assert record.data["rows"][0] == "Yellow Tail Shiraz"  # cheapest first
    assert record.data["broadened"] is False


# --- prices ----------------------------------------------------------------------------------


def test_min_above_max_is_swapped_and_said(ctx: ToolContext) -> None:
    output = search(ctx, color="white", min_price=35, max_price=20, limit=20)
    assert output.normalized_arguments == {
        "color": "white", "min_price": 20.0, "max_price": 35.0, "limit": 20,
    }  # fmt: skip
    assert output.data["notes"] == ["min_price was above max_price; swapped to 20..35"]
    assert json.loads(output.content)["notes"] == output.data["notes"]
    assert all(20 <= w["price"] <= 35 for w in wines_in(output))
    assert output.data["matched"] == 9


def test_prices_accept_currency_strings(ctx: ToolContext) -> None:
    output = search(ctx, min_price="$25", max_price="40 USD")
    assert output.normalized_arguments == {"min_price": 25.0, "max_price": 40.0, "limit": 5}
    assert search(ctx, max_price="30 долларов").normalized_arguments == {
        "max_price": 30.0,
        "limit": 5,
    }


def test_limit_is_clamped(ctx: ToolContext) -> None:
    assert search(ctx, limit=500).normalized_arguments == {"limit": 20}
    assert len(wines_in(search(ctx, limit=500))) == 20
    assert search(ctx, limit="3").normalized_arguments == {"limit": 3}
    assert search(ctx, limit=0).normalized_arguments == {"limit": 1}


# --- broadening ------------------------------------------------------------------------------


def test_no_match_broadens_and_records_what_was_dropped(ctx: ToolContext) -> None:
    output = search(ctx, color="red", country="Chile")
    assert output.normalized_arguments == {"color": "red", "country": "Chile", "limit": 5}
    assert output.data["matched"] == 0
    assert output.data["broadened"] is True
    assert output.data["dropped_filters"] == ["country"]
    wines = wines_in(output)
    assert wines and all(w["color"] == "red" for w in wines)  # colour outlives country
    payload = json.loads(output.content)
    assert payload["broadened"] is True and "do NOT match" in payload["message"]


def test_broadening_follows_the_documented_order(ctx: ToolContext) -> None:
    # Region and grape go first, price before country, colour last.
    output = search(ctx, color="white", country="France", grape="Malbec", region="Mosel")
    assert output.data["dropped_filters"] == ["region", "grape"]
    assert all(w["country"] == "France" and w["color"] == "white" for w in wines_in(output))
    cheap_rose = search(ctx, color="rose", max_price=10)
    assert cheap_rose.data["dropped_filters"] == ["max_price"]
    assert {w["color"] for w in wines_in(cheap_rose)} == {"rose"}
    both = search(ctx, color="rose", min_price=1, max_price=2, country="Chile")
    assert both.data["dropped_filters"] == ["min_price", "max_price", "country"]


def test_an_exact_match_is_not_broadened(ctx: ToolContext) -> None:
    output = search(ctx, color="red", sweetness="semi-sweet")
    assert output.data["broadened"] is False and output.data["dropped_filters"] == []
    assert output.data["rows"] == ["Tbilvino Kindzmarauli"]


# --- SQL metacharacters ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "matched"),
    [
        ({"country": "'; DROP TABLE wines; --"}, 0),
        ({"grape": "x') UNION SELECT name FROM sqlite_master --"}, 0),
        ({"producer": "x"}, None),  # not a filter at all: refused before any SQL
        # The normaliser finds the one real word; the rest cannot widen the query: an
        # injected OR 1=1 would have matched all 50 wines.
        ({"region": "Tuscany' OR '1'='1"}, 2),
        ({"country": 'Italy" OR 1=1 --'}, 10),
    ],
)
def test_sql_metacharacters_are_plain_data(
    ctx: ToolContext, arguments: dict[str, Any], matched: int | None
) -> None:
    if matched is None:
        with pytest.raises(ToolInputError):
            search(ctx, **arguments)
    else:
        output = search(ctx, **arguments)
        assert output.data["matched"] == matched
        assert output.data["broadened"] is (matched == 0)
    assert table_count(catalog_for(ctx).path) == 50  # nothing dropped, nothing injected


def test_like_wildcards_in_values_match_literally(ctx: ToolContext) -> None:
    # "%" and "_" are stripped from keys, and the LIKE layer escapes them besides: a value
    # made only of wildcards is refused, and wildcards inside a value match nothing extra.
    with pytest.raises(ToolInputError, match="no searchable letters"):
        search(ctx, region="%")
    with pytest.raises(ToolInputError, match="no searchable letters"):
        search(ctx, grape="_")
    assert search(ctx, region="T%y").data["matched"] == 0  # a wildcard would find Tuscany
    assert search(ctx, region="T_scany").data["matched"] == 0  # "_" would be any one letter
    db: CatalogDb = catalog_for(ctx)
    assert like_contains("50%_off") == "%50\\%\\_off%"
    for raw in ("%", "_", "%%", "\\"):
        rows, total = db.filter([Clause(FILTER_SQL["region"], like_contains(raw))], 50)
        assert (rows, total) == ([], 0)


def test_filter_refuses_sql_that_is_not_whitelisted(ctx: ToolContext) -> None:
    with pytest.raises(ValueError, match="whitelisted"):
        catalog_for(ctx).filter([Clause("1=1) OR (1=1", None)], 5)


def test_fts_syntax_in_a_query_is_plain_words(ctx: ToolContext) -> None:
    for query in ['oak" OR name:*', "NEAR(oak vanilla) AND -cherry", "'; DROP TABLE wines; --"]:
        output = LEXICAL_SEARCH.run({"query": query}, ctx)
        assert output.data["fts_query"].count('"') == 2 * len(output.data["terms"])
    assert table_count(catalog_for(ctx).path) == 50


# --- lexical_search (FTS5) --------------------------------------------------------------------


def test_fts_ranks_wines_sharing_more_query_words_first(ctx: ToolContext) -> None:
    output = LEXICAL_SEARCH.run({"query": "vanilla oak buttery"}, ctx)
    assert output.normalized_arguments == {"query": "vanilla oak buttery", "limit": 5}
    assert output.data["fts_query"] == '"vanilla"* OR "oak"* OR "butter"*'
    # Rombauer's notes have all three words; every other wine has at most two.
    assert output.data["rows"][0] == "Rombauer Chardonnay"
    scores = output.data["scores"]
    assert scores == sorted(scores) and scores[0] < scores[1]  # bm25: lower is better


def test_fts_prefixes_catch_inflections(ctx: ToolContext) -> None:
    spicy = LEXICAL_SEARCH.run({"query": "spicy", "limit": 20}, ctx)
    descriptions = [w["description"].casefold() for w in wines_in(spicy)]
    assert any("spice" in d and "spicy" not in d for d in descriptions)
    assert any("spicy" in d for d in descriptions)


def test_russian_taste_words_are_translated(ctx: ToolContext) -> None:
    output = LEXICAL_SEARCH.run({"query": "Посоветуй что-нибудь лёгкое и свежее к рыбе"}, ctx)
    assert output.normalized_arguments == {"query": "light fresh fish", "limit": 5}
    assert output.data["row_count"] == 5
    assert all("fish" in w["description"] or "light" in w["description"] for w in wines_in(output))


def test_query_without_searchable_words_is_rejected(ctx: ToolContext) -> None:
    with pytest.raises(ToolInputError, match="no searchable words"):
        LEXICAL_SEARCH.run({"query": "something nice please"}, ctx)
    with pytest.raises(ToolInputError, match="non-empty string"):
        LEXICAL_SEARCH.run({"query": "  "}, ctx)
    with pytest.raises(ToolInputError, match="unknown argument"):
        LEXICAL_SEARCH.run({"query": "oak", "color": "red"}, ctx)


def test_query_nothing_shares_a_word_with(ctx: ToolContext) -> None:
    output = LEXICAL_SEARCH.run({"query": "bubblegum marshmallow"}, ctx)
    assert output.data["row_count"] == 0 and output.data["rows"] == []
    assert "No wine description" in json.loads(output.content)["message"]


def test_lexical_search_says_it_is_lexical() -> None:
    description = LEXICAL_SEARCH.definition.description
    assert "FTS5" in description and "NOT embeddings" in description


def test_a_foreign_database_is_an_infrastructure_error(evalctl_home: Path, tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.sqlite"
    with contextlib.closing(sqlite3.connect(foreign)) as conn:
        conn.execute("CREATE TABLE other (x)")
    with pytest.raises(CatalogError, match="catalog query failed"):
        CatalogDb(foreign)
    # A configured database that is not a catalog build is not used in place of the JSON.
    settings = settings_for(evalctl_home, catalog_db=foreign)
    with pytest.raises(CatalogError, match="not found"):
        open_catalog(settings, tmp_path / "missing.json")
