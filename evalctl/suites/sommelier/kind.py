"""Suite kind "catalog-qa": a shop assistant answering from the wine catalog through tools.

Checks, all judged on what the tool spy recorded as executed (not on what the model typed):

- `tool_selection`: the expected tool ran successfully at least once.
- `filters`: one successful call of that tool carried every expected filter with the expected
  value after normalisation (search_wines), or a query sharing at least one expected term
  (semantic_search, lexical_search).
- `min_results`: a call of that tool returned at least `min_results` wines that match the
  request; rows from a broadened search do not count, they match a different request. `n/a`
  for a request the catalog cannot satisfy (nothing to count).
- `grounding`: every wine the final answer names, marked `[WINE: ...]` or in prose, is one a
  successful tool call returned during this case (matched on whole normalised names, see
  evalctl.scoring.grounding); an answerable request names at least one. `n/a` when an
  unanswerable request is answered without naming any wine.
- `format`: the documented answer format: `[WINE: name]` markers for an answerable request,
  `[NO MATCH]` for one the catalog cannot satisfy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalctl.cases.schema import Case, SuiteTable
from evalctl.errors import EvalctlError
from evalctl.results.models import CheckResult, ToolCallRecord, not_applicable, pass_or_fail
from evalctl.scoring.check import Check, NamedCheck, ScoringContext, Transcript, named_checks
from evalctl.scoring.grounding import Names
from evalctl.scoring.kinds import RequestShape, SuiteKind
from evalctl.suites.sommelier.answer import (
    catalog_wines,
    generic_terms,
    recommendations,
    says_no_match,
    without_markers,
)
from evalctl.suites.sommelier.catalog_words import grape_match_key, terms_overlap, word_key
from evalctl.suites.sommelier.tools import (
    MAX_LIMIT,
    PRICE_FILTERS,
    TEXT_FILTERS,
    parse_search_arguments,
)
from evalctl.tools.base import ToolContext, ToolInputError

SEARCH = "search_wines"
SEMANTIC = "semantic_search"
LEXICAL = "lexical_search"
# The free-text tools: a case expecting one names query terms, not filters.
FREE_TEXT = (SEMANTIC, LEXICAL)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CatalogQaInput(_Strict):
    query: str = Field(min_length=1)


class CatalogQaExpected(_Strict):
    tool: Literal["search_wines", "semantic_search", "lexical_search"]
    # search_wines: filter -> value, in the catalog's canonical spelling (what the spy records).
    filters: dict[str, str | float] = Field(default_factory=dict)
    # semantic_search, lexical_search: English terms; the query the tool ran must share one.
    query_terms: list[str] = Field(default_factory=list)
    min_results: int = Field(ge=0, le=MAX_LIMIT)
    # False: the catalog has no wine for this request, and the answer must say [NO MATCH].
    available: bool = True

    @model_validator(mode="after")
    def _consistent(self) -> CatalogQaExpected:
        if self.tool in FREE_TEXT and self.filters:
            raise ValueError(f"filters belong to search_wines; {self.tool} uses query_terms")
        if self.tool in FREE_TEXT and not self.query_terms:
            raise ValueError(f"{self.tool} needs at least one query term")
        if self.tool == SEARCH and self.query_terms:
            raise ValueError("query_terms belong to semantic_search; search_wines uses filters")
        if self.available and self.min_results < 1:
            raise ValueError("an available request needs min_results >= 1 (else available=false)")
        if not self.available and self.min_results != 0:
            raise ValueError("a request the catalog cannot satisfy has min_results = 0")
        self._check_canonical()
        return self

    def _check_canonical(self) -> None:
        # Ground truth must be spelled the way the tool records it, or no run could ever match.
        allowed = (*TEXT_FILTERS, *PRICE_FILTERS)
        unknown = sorted(set(self.filters) - set(allowed))
        if unknown:
            raise ValueError(f"unknown filter(s) {unknown}; known: {', '.join(allowed)}")
        try:
            normalized, notes = parse_search_arguments(dict(self.filters))
        except ToolInputError as exc:
            raise ValueError(f"filters: {exc}") from None
        if notes:
            raise ValueError(f"filters: {'; '.join(notes)}")
        for name, value in self.filters.items():
            if normalized[name] != value:
                raise ValueError(
                    f"filters.{name} = {value!r} is not the catalog's spelling; "
                    f"use {normalized[name]!r}"
                )


def _expected(case: Case) -> CatalogQaExpected:
    if not isinstance(case.expected, CatalogQaExpected):
        raise TypeError(f"case {case.key} was not loaded as a catalog-qa case")
    return case.expected


def _successful(transcript: Transcript, tool: str) -> list[ToolCallRecord]:
    return [r for r in transcript.tool_calls if r.name == tool and not r.is_error]


def _call_label(record: ToolCallRecord) -> str:
    return f"{record.name} (error)" if record.is_error else record.name


# --- tool_selection ---------------------------------------------------------------------------


def check_tool_selection(expected: CatalogQaExpected, ctx: ScoringContext) -> CheckResult:
    calls = ctx.transcript.tool_calls
    ok = _successful(ctx.transcript, expected.tool)
    actual = [_call_label(r) for r in calls]
    if ok:
        message = f"{expected.tool} ran {len(ok)} time(s)"
    elif any(r.name == expected.tool for r in calls):
        first = next(r for r in calls if r.name == expected.tool)
        message = f"{expected.tool} was called but every call was rejected: {first.result}"
    elif calls:
        message = f"expected {expected.tool}, the model called {', '.join(actual)}"
    else:
        message = "no tool was called: the answer cannot come from the catalog"
    return CheckResult(
        name="tool_selection", status=pass_or_fail(bool(ok)), expected=expected.tool, actual=actual,
        message=message,
    )  # fmt: skip


# --- filters --------------------------------------------------------------------------------


def _contains_either_way(a: str, b: str) -> bool:
    pa, pb = f" {a} ", f" {b} "
    return bool(a and b) and (pa in pb or pb in pa)


def filter_matches(name: str, expected: Any, actual: Any) -> bool:
    """Whether a recorded (normalised) filter value satisfies the expected one."""
    if actual is None:
        return False
    if name in PRICE_FILTERS:
        return isinstance(actual, int | float) and abs(float(actual) - float(expected)) < 0.005
    if not isinstance(actual, str):
        return False
    if name == "grape":
        # The tool matches grapes by containment, so "Cabernet" and "Cabernet Sauvignon"
        # run the same search; the check agrees with the tool.
        return _contains_either_way(grape_match_key(expected), grape_match_key(actual))
    if name == "region":
        return _contains_either_way(word_key(expected), word_key(actual))
    return word_key(expected) == word_key(actual)


def _filter_problems(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    problems = []
    for name, want in expected.items():
        got = actual.get(name)
        if got is None:
            problems.append(f"{name}: missing (expected {want!r})")
        elif not filter_matches(name, want, got):
            problems.append(f"{name}: expected {want!r}, got {got!r}")
    return problems


def check_filters(expected: CatalogQaExpected, ctx: ScoringContext) -> CheckResult:
    calls = _successful(ctx.transcript, expected.tool)
    if expected.tool in FREE_TEXT:
        return _check_query_terms(expected, calls)
    want = dict(expected.filters)
    recorded = [r.normalized_arguments or r.arguments for r in calls]
    if not recorded:
        return CheckResult(
            name="filters", status="fail", expected=want, actual=None,
            message=f"{SEARCH} never ran successfully, so no filter was applied",
        )  # fmt: skip
    # The closest call is reported: fewest problems, earliest on ties.
    scored = [(len(_filter_problems(want, args)), i, args) for i, args in enumerate(recorded)]
    _, index, best = min(scored, key=lambda item: (item[0], item[1]))
    problems = _filter_problems(want, best)
    if not problems:
        message = f"call {index + 1} of {len(recorded)} applied every expected filter"
    else:
        message = "no call applied every expected filter; closest: " + "; ".join(problems)
    return CheckResult(
        name="filters",
        status=pass_or_fail(not problems),
        expected=want,
        actual=best,
        message=message,
    )


def _check_query_terms(expected: CatalogQaExpected, calls: list[ToolCallRecord]) -> CheckResult:
    queries = [str((r.normalized_arguments or r.arguments).get("query", "")) for r in calls]
    if not queries:
        return CheckResult(
            name="filters", status="fail", expected=expected.query_terms, actual=None,
            message=f"{expected.tool} never ran successfully",
        )  # fmt: skip
    for query in queries:
        hits = terms_overlap(expected.query_terms, query.split())
        if hits:
            return CheckResult(
                name="filters", status="pass", expected=expected.query_terms, actual=query,
                message=f"query covers {', '.join(hits)}",
            )  # fmt: skip
    return CheckResult(
        name="filters", status="fail", expected=expected.query_terms, actual=queries,
        message="no query shared a term with the expected ones",
    )  # fmt: skip


# --- min_results ----------------------------------------------------------------------------


def matching_rows(record: ToolCallRecord) -> int:
    """Rows a call returned that match its request; a broadened search matched none."""
    if record.data.get("broadened"):
        return 0
    count = record.data.get("row_count", 0)
    return count if isinstance(count, int) else 0


def check_min_results(expected: CatalogQaExpected, ctx: ScoringContext) -> CheckResult:
    if expected.min_results == 0:
        # Nothing to count: passing it would score a request with no tool call as a success.
        return not_applicable(
            "min_results",
            "no rows required: the catalog has no wine for this request",
            expected=0,
        )
    calls = _successful(ctx.transcript, expected.tool)
    best = max((matching_rows(r) for r in calls), default=0)
    passed = best >= expected.min_results
    if not calls:
        message = f"{expected.tool} never ran successfully"
    else:
        broadened = [r for r in calls if r.data.get("broadened")]
        message = f"best call returned {best} matching wine(s)"
        if broadened:
            dropped = broadened[0].data.get("dropped_filters", [])
            message += (
                f"; {len(broadened)} search(es) broadened (dropped {', '.join(map(str, dropped))})"
                " and their rows do not count"
            )
    return CheckResult(
        name="min_results", status=pass_or_fail(passed), expected=expected.min_results, actual=best,
        message=message,
    )  # fmt: skip


# --- grounding ------------------------------------------------------------------------------


def returned_rows(transcript: Transcript) -> list[str]:
    """Names of the wines successful tool calls returned during this case, in order."""
    rows: list[str] = []
    for record in transcript.tool_calls:
        names = record.data.get("rows") if not record.is_error else None
        if isinstance(names, list):
            rows += [n for n in names if isinstance(n, str)]
    return list(dict.fromkeys(rows))


def check_grounding(expected: CatalogQaExpected, ctx: ScoringContext) -> CheckResult:
    """Every wine the answer names, marked or in prose, is one a successful tool call of this
    case returned; an answerable request gets at least one (evalctl.scoring.grounding)."""
    answer = ctx.answer.text
    recorded = [r.data.get("catalog_db") for r in ctx.transcript.tool_calls]
    databases = [db for db in recorded if isinstance(db, str)]
    try:
        tools = ctx.tools
        wines = catalog_wines(databases, tools.fixtures_dir / "wines.json" if tools else None)
    except EvalctlError as exc:
        return CheckResult(name="grounding", status="fail", message=str(exc))
    generic = generic_terms(wines)
    producers = {w.name: w.producer for w in wines}
    returned = Names(returned_rows(ctx.transcript), generic=generic, extras=producers)
    catalog = Names([w.name for w in wines], generic=generic, extras=producers)

    named: list[dict[str, Any]] = []
    problems: list[str] = []
    for rec in recommendations(answer):
        citation = returned.cite(rec.name, what="wine")
        named.append({"text": rec.text, "returned": citation.name})
        if citation.name is not None:
            continue
        in_catalog = catalog.lookup(rec.name)
        if in_catalog is not None:
            problems.append(
                f"{rec.text!r} is in the catalog ({in_catalog!r}) but no successful tool call "
                "returned it in this case"
            )
        elif catalog.is_generic(rec.name):
            problems.append(f"{rec.text!r} is a generic term, not a wine")
        else:
            problems.append(f"hallucination: {rec.text!r} matches no wine a tool call returned")
    marked = {n["returned"] for n in named}
    for name in catalog.named_in(without_markers(answer)):
        if name in marked:
            continue
        grounded = name in returned.names
        named.append({"text": name, "returned": name if grounded else None, "prose": True})
        if not grounded:
            problems.append(
                f"{name!r} (named in prose) is in the catalog but no successful tool call "
                "returned it in this case"
            )
    grounded_count = sum(1 for n in named if n["returned"] is not None)
    actual = {"named": named, "returned": len(returned)}
    if not named:
        if not expected.available:
            return not_applicable(
                "grounding",
                "the answer names no wine, and the catalog has none for this request",
                expected="only wines a tool call returned",
            )
        problems.append(
            "the answer names no wine although the catalog has wines for this request"
            + ("" if len(returned) else " (and no tool call returned any)")
        )
    if problems:
        message = "; ".join(problems)
    else:
        message = f"{grounded_count} wine(s) named, each returned by a tool call in this case"
    want = "only wines a tool call returned" + (", one or more" if expected.available else "")
    return CheckResult(
        name="grounding",
        status=pass_or_fail(not problems),
        expected=want,
        actual=actual,
        message=message,
    )


# --- format ---------------------------------------------------------------------------------


def check_format(expected: CatalogQaExpected, ctx: ScoringContext) -> CheckResult:
    """The documented answer format (docs/sommelier.md): recommended wines as `[WINE: name]`
    lines, `[NO MATCH]` when the catalog has nothing for the request. Apart from grounding:
    a correct answer in prose is grounded and fails only this check."""
    answer = ctx.answer.text
    recs = recommendations(answer)
    no_match = says_no_match(answer)
    actual = {"wine_markers": [r.text for r in recs], "no_match": no_match}
    if expected.available:
        passed = bool(recs)
        want = "each recommended wine as [WINE: <name>]"
        message = (
            f"{len(recs)} [WINE: ...] marker(s)"
            if passed
            else "no [WINE: <name>] marker: the answer is not in the documented format"
        )
    else:
        passed = no_match
        want = "[NO MATCH], then any alternatives as [WINE: <name>]"
        message = (
            "the answer says [NO MATCH]"
            if passed
            else "the catalog has no wine for this request but the answer does not say [NO MATCH]"
            + (f"; it presents {len(recs)} wine(s) as if they matched" if recs else "")
        )
    return CheckResult(
        name="format", status=pass_or_fail(passed), expected=want, actual=actual, message=message
    )


def _named(
    name: str, judge: Callable[[CatalogQaExpected, ScoringContext], CheckResult]
) -> NamedCheck:
    return NamedCheck(name, lambda ctx: judge(_expected(ctx.case), ctx))


CHECKS: Mapping[str, Check[Any]] = named_checks(
    _named("tool_selection", check_tool_selection),
    _named("filters", check_filters),
    _named("min_results", check_min_results),
    _named("grounding", check_grounding),
    _named("format", check_format),
)


class CatalogQaKind(SuiteKind):
    name = "catalog-qa"
    input_model = CatalogQaInput
    expected_model = CatalogQaExpected
    checks = CHECKS

    def build_prompt(self, suite: SuiteTable, case: Case, ctx: ToolContext) -> str:
        if not isinstance(case.input, CatalogQaInput):
            raise TypeError(f"case {case.key} was not loaded as a catalog-qa case")
        return case.input.query

    def request_shape(self, suite: SuiteTable, case: Case) -> RequestShape:
        # "required" on the first turn: a tool must be called, but choosing *which* one is
        # still the model's job (that is what tool_selection scores); later turns are free
        # to answer in text.
        return RequestShape(tool_choice="auto", first_turn_tool_choice="required")


KIND = CatalogQaKind()
