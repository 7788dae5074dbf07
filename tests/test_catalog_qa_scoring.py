"""The catalog-qa checks on hand-made passing and failing conversations. Tool calls in them are
executed by the real tools through the runner's spy, so the checks see real records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evalctl.cases.loader import load_suite
from evalctl.cases.schema import Case
from evalctl.errors import BadInputError
from evalctl.plugin_loader import get_kind
from evalctl.results.models import CheckResult
from evalctl.scoring.check import Transcript
from evalctl.scoring.grounding import Names
from evalctl.suites.sommelier.answer import generic_terms, recommendations, says_no_match
from evalctl.suites.sommelier.catalog_db import load_wines
from evalctl.suites.sommelier.kind import KIND, CatalogQaExpected
from tests.catalog_support import FIXTURES, converse, make_case, make_ctx
from tests.scoring_helpers import score_kind

ITALIAN_RED = {"tool": "search_wines", "filters": {"color": "red", "country": "Italy"}}
CHILE = {"tool": "search_wines", "filters": {"country": "Chile"}, "available": False}
FISH = {"tool": "semantic_search", "query_terms": ["fish", "light", "seafood"]}
GOOD_ITALIAN_ANSWER = (
    "Here are three Italian reds:\n"
    "[WINE: Tignanello] a Super Tuscan for steak.\n"
    "**[WINE: Castello di Ama Chianti Classico]** for pasta.\n"
    "[WINE: vietti barolo castiglione] for braised beef."
)


def score(
    home: Path,
    expected: dict[str, Any],
    calls: list[tuple[str, dict[str, Any]]],
    answer: str,
    min_results: int = 3,
) -> dict[str, CheckResult]:
    case = make_case(**{"min_results": min_results, **expected})
    transcript = converse(make_ctx(home, case), calls, answer)
    return {c.name: c for c in score_kind(KIND, case, transcript)}


def failed(results: dict[str, CheckResult]) -> set[str]:
    return {name for name, check in results.items() if check.failed}


def test_kind_is_registered() -> None:
    kind = get_kind("catalog-qa")
    assert kind is not None and kind.name == KIND.name
    assert tuple(kind.checks) == ("tool_selection", "filters", "min_results", "grounding", "format")


# --- a fully correct conversation ------------------------------------------------------------


def test_correct_search_and_grounded_answer_pass_every_check(evalctl_home: Path) -> None:
    results = score(
        evalctl_home,
        ITALIAN_RED,
        [("search_wines", {"color": "красное", "country": "Италия"})],
        GOOD_ITALIAN_ANSWER,
    )
    assert failed(results) == set()
    assert results["filters"].actual == {"color": "red", "country": "Italy", "limit": 5}
    assert results["min_results"].actual == 5
    grounding = results["grounding"].actual
    assert [r["returned"] for r in grounding["named"]] == [
        "Tignanello",
        "Castello di Ama Chianti Classico",
        "Vietti Barolo Castiglione",
    ]


# --- a hallucinated wine ---------------------------------------------------------------------


def test_a_hallucinated_wine_fails_grounding_and_is_quoted(evalctl_home: Path) -> None:
    answer = GOOD_ITALIAN_ANSWER + "\n[WINE: Sassicaia 2019] the famous one."
    results = score(
        evalctl_home, ITALIAN_RED, [("search_wines", {"color": "red", "country": "Italy"})], answer
    )
    assert failed(results) == {"grounding"}
    message = results["grounding"].message
    assert message == (
        "hallucination: '[WINE: Sassicaia 2019]' matches no wine a tool call returned"
    )  # only the offending text is reported


def test_an_answer_without_any_tool_call_is_still_checked_against_the_catalog(
    evalctl_home: Path,
) -> None:
    results = score(evalctl_home, ITALIAN_RED, [], "[WINE: Opus One] is great.\n[WINE: Tignanello]")
    assert failed(results) == {"tool_selection", "filters", "min_results", "grounding"}
    assert results["tool_selection"].message == (
        "no tool was called: the answer cannot come from the catalog"
    )
    message = results["grounding"].message
    assert "'[WINE: Opus One]' matches no wine a tool call returned" in message
    # A real catalog wine still counts only if a tool call of this case returned it.
    assert "'[WINE: Tignanello]' is in the catalog ('Tignanello') but no successful" in message
    assert results["grounding"].actual["named"][1]["returned"] is None


def test_a_grounded_answer_in_prose_fails_only_the_format(evalctl_home: Path) -> None:
    results = score(
        evalctl_home,
        ITALIAN_RED,
        [("search_wines", {"color": "red", "country": "Italy"})],
        "Try the Tignanello, it is a classic.",
    )
    assert failed(results) == {"format"}
    assert results["grounding"].message == (
        "1 wine(s) named, each returned by a tool call in this case"
    )
    assert "not in the documented format" in results["format"].message


def test_an_answer_that_names_nothing_fails_grounding_with_the_reason(evalctl_home: Path) -> None:
    results = score(
        evalctl_home,
        ITALIAN_RED,
        [("search_wines", {"color": "red", "country": "Italy"})],
        "We have lovely Italian reds, come and taste them.",
    )
    assert failed(results) == {"grounding", "format"}
    assert results["grounding"].message == (
        "the answer names no wine although the catalog has wines for this request"
    )


# --- a wrong filter --------------------------------------------------------------------------


def test_a_wrong_filter_fails_with_expected_and_actual(evalctl_home: Path) -> None:
    results = score(
        evalctl_home,
        ITALIAN_RED,
        [("search_wines", {"color": "white", "country": "Italy"})],
        "[WINE: Santa Margherita Pinot Grigio]",
    )
    assert "filters" in failed(results)
    assert "color: expected 'red', got 'white'" in results["filters"].message
    assert results["tool_selection"].passed  # the tool itself was right


def test_a_missing_filter_is_named(evalctl_home: Path) -> None:
    results = score(
        evalctl_home, ITALIAN_RED, [("search_wines", {"color": "red"})], GOOD_ITALIAN_ANSWER
    )
    # The five cheapest reds are not these Italians: naming them is not grounded either.
    assert failed(results) == {"filters", "grounding"}
    assert "country: missing (expected 'Italy')" in results["filters"].message


def test_any_one_call_with_every_filter_passes(evalctl_home: Path) -> None:
    results = score(
        evalctl_home,
        ITALIAN_RED,
        [
            ("search_wines", {"color": "red"}),
            ("search_wines", {"color": "red", "country": "italian", "max_price": 200}),
        ],
        GOOD_ITALIAN_ANSWER,
    )
    assert failed(results) == set()
    assert results["filters"].message == "call 2 of 2 applied every expected filter"


def test_price_filters_compare_as_recorded_after_the_swap(evalctl_home: Path) -> None:
    expected = {
        "tool": "search_wines",
        "filters": {"color": "white", "min_price": 25, "max_price": 40},
    }
    swapped = [("search_wines", {"color": "white", "min_price": 40, "max_price": "$25"})]
    answer = "[WINE: Pascal Jolivet Sancerre]"
    assert failed(score(evalctl_home, expected, swapped, answer)) == set()
    wrong = [("search_wines", {"color": "white", "min_price": 25, "max_price": 45})]
    results = score(evalctl_home, expected, wrong, answer)
    assert failed(results) == {"filters"}
    assert "max_price: expected 40.0, got 45.0" in results["filters"].message


def test_grape_and_region_match_by_containment_like_the_tool(evalctl_home: Path) -> None:
    expected = {"tool": "search_wines", "filters": {"grape": "Cabernet Sauvignon"}}
    calls = [("search_wines", {"grape": "каберне совиньон"})]
    answer = "[WINE: Stag's Leap Artemis Cabernet Sauvignon]"
    assert failed(score(evalctl_home, expected, calls, answer)) == set()
    other = score(evalctl_home, expected, [("search_wines", {"grape": "Merlot"})], answer, 1)
    # The Merlot search did not return that Cabernet, so the answer is not grounded either.
    assert failed(other) == {"filters", "grounding"}


# --- a wrong tool ----------------------------------------------------------------------------


def test_the_wrong_tool_fails_tool_selection(evalctl_home: Path) -> None:
    results = score(
        evalctl_home,
        ITALIAN_RED,
        [("semantic_search", {"query": "italian red wine"})],
        "[WINE: Tignanello]",
    )
    assert {"tool_selection", "filters", "min_results"} <= failed(results)
    assert results["tool_selection"].message == (
        "expected search_wines, the model called semantic_search"
    )
    assert results["tool_selection"].actual == ["semantic_search"]


def test_a_vague_request_expects_semantic_search(evalctl_home: Path) -> None:
    calls = [("search_wines", {"color": "white"})]
    results = score(evalctl_home, FISH, calls, "[WINE: William Fèvre Chablis]")
    assert {"tool_selection", "filters"} <= failed(results)
    good = score(
        evalctl_home,
        FISH,
        [("semantic_search", {"query": "что-нибудь лёгкое к рыбе"})],
        "[WINE: William Fèvre Chablis] — fresh and light.",
    )
    assert failed(good) == set()
    assert good["filters"].message == "query covers fish, light"


def test_a_query_about_something_else_fails_filters(evalctl_home: Path) -> None:
    results = score(
        evalctl_home,
        FISH,
        [("semantic_search", {"query": "bold tannic steak"})],
        "[WINE: Catena Malbec]",
    )
    assert failed(results) == {"filters"}


def test_a_rejected_call_does_not_count_as_using_the_tool(evalctl_home: Path) -> None:
    results = score(evalctl_home, ITALIAN_RED, [("search_wines", {"color": "blue"})], "")
    assert "tool_selection" in failed(results)
    assert "every call was rejected: error: unknown color 'blue'" in (
        results["tool_selection"].message
    )
    assert results["tool_selection"].actual == ["search_wines (error)"]


# --- a broadened search ----------------------------------------------------------------------


def test_broadened_rows_do_not_count_as_results(evalctl_home: Path) -> None:
    # Right filters plus a price nobody can meet: the tool broadened, so nothing matched.
    results = score(
        evalctl_home,
        ITALIAN_RED,
        [("search_wines", {"color": "red", "country": "Italy", "max_price": 5})],
        "[NO MATCH]\n[WINE: Tignanello] is the closest.",
    )
    assert failed(results) == {"min_results"}
    message = results["min_results"].message
    assert "best call returned 0 matching wine(s)" in message
    assert "broadened (dropped max_price)" in message


def test_unavailable_request_answered_with_no_match_and_real_alternatives_passes(
    evalctl_home: Path,
) -> None:
    results = score(
        evalctl_home,
        CHILE,
        [("search_wines", {"country": "чилийское", "grape": "Карменер"})],
        "[NO MATCH] We have no Chilean wine.\nClosest: [WINE: Yellow Tail Shiraz] from Australia.",
        min_results=0,
    )
    assert failed(results) == set()
    assert results["format"].message == "the answer says [NO MATCH]"
    # Nothing to count for a request the catalog cannot satisfy: n/a, not a free pass.
    assert results["min_results"].status == "n/a"
    assert "no rows required" in results["min_results"].message


def test_unavailable_request_answered_without_naming_a_wine_has_na_grounding(
    evalctl_home: Path,
) -> None:
    results = score(
        evalctl_home, CHILE, [("search_wines", {"country": "Chile"})], "[NO MATCH]", min_results=0
    )
    assert failed(results) == set()
    assert results["grounding"].status == "n/a"
    assert results["grounding"].message == (
        "the answer names no wine, and the catalog has none for this request"
    )


def test_broadened_alternatives_presented_as_matches_fail_grounding(evalctl_home: Path) -> None:
    results = score(
        evalctl_home,
        CHILE,
        [("search_wines", {"country": "Chile"})],
        "Sure! Try [WINE: Yellow Tail Shiraz].",
        min_results=0,
    )
    assert failed(results) == {"format"}
    assert "does not say [NO MATCH]; it presents 1 wine(s) as if they matched" in (
        results["format"].message
    )


def test_an_invented_wine_for_an_unavailable_request_is_a_hallucination(
    evalctl_home: Path,
) -> None:
    results = score(
        evalctl_home,
        CHILE,
        [("search_wines", {"country": "Chile"})],
        "[NO MATCH]\n[WINE: Montes Alpha Carmenère] is what I would get elsewhere.",
        min_results=0,
    )
    assert failed(results) == {"grounding"}
    assert "'[WINE: Montes Alpha Carmenère]' matches no wine a tool call returned" in (
        results["grounding"].message
    )


# --- answer parsing ----------------------------------------------------------------------------


def names() -> Names:
    wines, _ = load_wines(FIXTURES / "wines.json")
    producers = {w.name: w.producer for w in wines}
    return Names([w.name for w in wines], generic=generic_terms(tuple(wines)), extras=producers)


@pytest.mark.parametrize(
    ("text", "catalog"),
    [
        ("[WINE: Tignanello]", "Tignanello"),
        ("**[WINE: tignanello]**", "Tignanello"),
        ("\\[WINE: Tignanello\\]", "Tignanello"),
        ("[wine: «Tignanello»]", "Tignanello"),
        ("[WINE: Antinori Tignanello 2019]", "Tignanello"),  # producer and vintage added
        ("[WINE: Fake Estate Tignanello Reserve]", None),  # other added words: another name
        ("[WINE: Nero d'Avola Planeta]", "Planeta Nero d'Avola"),  # reordered
        ("[WINE: Planeta Nero d\u2019Avola]", "Planeta Nero d'Avola"),  # typographic apostrophe
        ("[WINE: Castello Ama Chianti Classico]", "Castello di Ama Chianti Classico"),
        ("[WINE: Port]", None),  # generic: a style, not a wine
        ("[WINE: Barolo]", None),
        ("[WINE: Brut]", None),
        ("[WINE: Chateau Cantenac-Brown Margaux]", "Château Cantenac Brown Margaux"),
        ("[WINE: Taylor\u2019s 20 Year Old Tawny Port]", "Taylor's 20 Year Old Tawny Port"),
        ("[WINE: Kindzmarauli]", "Tbilvino Kindzmarauli"),  # shortened name
        ("[WINE: [Catena Malbec](https://example.com)]", "Catena Malbec"),
        ("[WINE: _Cloudy Bay Sauvignon Blanc_ —]", "Cloudy Bay Sauvignon Blanc"),
        ("[WINE: Opus One]", None),
        ("[WINE: Red]", None),  # a colour, not a wine
        ("[WINE: Тиньянелло]", None),  # transliterated: the format asks for the catalog name
    ],
)
def test_recommendations_are_matched_to_catalog_names(text: str, catalog: str | None) -> None:
    recs = recommendations(f"Intro.\n{text} because.")
    assert len(recs) == 1
    assert names().lookup(recs[0].name) == catalog


def test_a_partial_word_is_not_a_match() -> None:
    assert names().lookup("Tigna") is None  # whole words only
    assert names().lookup("Tawny Port") is None  # generic words name no wine
    assert names().lookup("Taylor 20 Year Old Tawny Port") == "Taylor's 20 Year Old Tawny Port"


def test_wines_named_in_prose_are_found_by_their_distinctive_words() -> None:
    text = "For under $20 I would pick the Planeta Nero d'Avola, or Whispering Angel."
    assert names().named_in(text) == ["Whispering Angel", "Planeta Nero d'Avola"]
    assert names().named_in("A fruity red from Sicily, or a Port.") == []


@pytest.mark.parametrize("text", ["[NO MATCH]", "**[no match]**", "[NO_MATCH]", "[ No-Match ]"])
def test_no_match_marker_variants(text: str) -> None:
    assert says_no_match(f"Sorry.\n{text}\n")


def test_score_runs_only_the_checks_a_case_lists(evalctl_home: Path) -> None:
    case = make_case(min_results=1, tool="search_wines", filters={"color": "red"})
    only: Case = case.model_copy(update={"checks": ["grounding"]})
    transcript = Transcript(messages=[], responses=[], tool_calls=[])
    assert [c.name for c in score_kind(KIND, only, transcript)] == ["grounding"]


# --- expected-value validation ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "message"),
    [
        ({"filters": {"color": "красное"}}, "not the catalog's spelling; use 'red'"),
        ({"filters": {"country": "Italian"}}, "use 'Italy'"),
        ({"filters": {"color": "blue"}}, "unknown color"),
        ({"filters": {"vintage": 2019}}, "unknown filter"),
        ({"filters": {"min_price": 50, "max_price": 20}}, "swapped"),
        ({"filters": {"color": "red"}, "min_results": 0}, "needs min_results >= 1"),
        ({"filters": {"color": "red"}, "available": False}, "min_results = 0"),
        ({"filters": {"color": "red"}, "query_terms": ["oak"]}, "query_terms belong"),
        ({"tool": "semantic_search", "filters": {"color": "red"}}, "filters belong"),
        ({"tool": "semantic_search"}, "at least one query term"),
        ({"tool": "web_search"}, "search_wines"),
    ],
)
def test_ground_truth_must_be_consistent(expected: dict[str, Any], message: str) -> None:
    data = {"tool": "search_wines", "min_results": 1, **expected}
    with pytest.raises(ValidationError, match=message.replace("[", r"\[")):
        CatalogQaExpected.model_validate(data)


def test_the_loader_names_case_and_field_for_bad_ground_truth(tmp_path: Path) -> None:
    suite = (FIXTURES.parent / "sommelier.toml").read_text()
    bad = suite.replace(
        'filters = { color = "red", country = "Italy" }, min_results = 3',
        'filters = { color = "красное", country = "Italy" }, min_results = 3',
    )
    assert bad != suite
    path = tmp_path / "sommelier.toml"
    path.write_text(bad)
    with pytest.raises(BadInputError) as info:
        load_suite(path)
    assert info.value.case_id == "en-italian-red"
    assert info.value.field == "case.expected"
    assert "use 'red'" in info.value.message
