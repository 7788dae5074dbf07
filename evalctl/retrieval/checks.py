"""The retrieval assertions: `min-score` (relevance), `ordered` (ordering), `distinct-from`
(differentiation) and `contains-row` (recall@k where a team has labels).

Each judges the case's own call, the first the spy recorded, read as scored rows
(evalctl.retrieval.rows). A result that is not scored rows, or a failed call, fails the
assertion: the tool is what is under test.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from evalctl.results.models import CheckResult, ToolCallRecord, not_applicable, pass_or_fail
from evalctl.retrieval.kind import DISTINCT_FROM, RetrievalInput
from evalctl.retrieval.rows import Row, RowsError, row_score, rows_of, top_ids
from evalctl.scoring.check import Check, ScoringContext


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    # Which field of a row holds its id; settable per assertion, or for a whole suite in
    # `[suite.defaults]` assertions.
    id_field: str = Field(default="id", min_length=1)


class _ScoredParams(_Params):
    score_field: str = Field(default="score", min_length=1)


class MinScoreParams(_ScoredParams):
    threshold: float = Field(allow_inf_nan=False)
    # Only the first k rows; every row when unset.
    k: int | None = Field(default=None, ge=1)


class OrderedParams(_ScoredParams):
    pass


class DistinctFromParams(_Params):
    case: str = Field(min_length=1)
    k: int = Field(default=3, ge=1)
    # The issue's `m`: how many of this case's top k must be missing from the other's.
    min_different: int = Field(default=1, ge=1, validation_alias=AliasChoices("min_different", "m"))

    @model_validator(mode="after")
    def _reachable(self) -> DistinctFromParams:
        if self.min_different > self.k:
            raise ValueError(f"min_different ({self.min_different}) cannot exceed k ({self.k})")
        return self


class ContainsRowParams(_Params):
    id: Any = None
    ids: list[Any] | None = Field(default=None, min_length=1)
    # The first k rows; every row when unset.
    k: int | None = Field(default=None, ge=1)
    # The share of the expected ids that must be found (recall@k); all of them by default.
    min_recall: float = Field(default=1.0, gt=0, le=1)

    @model_validator(mode="after")
    def _one_form(self) -> ContainsRowParams:
        if (self.id is None) == (self.ids is None):
            raise ValueError("give exactly one of id, ids")
        return self

    @property
    def expected_ids(self) -> list[Any]:
        return [self.id] if self.ids is None else list(self.ids)


def _result(name: str, passed: bool, expected: Any, actual: Any, reason: str) -> CheckResult:
    return CheckResult(
        name=name,
        status=pass_or_fail(passed),
        expected=expected,
        actual=actual,
        message="" if passed else reason,
    )


def _own_rows(ctx: ScoringContext) -> list[Row]:
    if not ctx.transcript.tool_calls:
        raise RowsError("no tool call was made")
    return rows_of(ctx.transcript.tool_calls[0])


def _label(row: Row, index: int, id_field: str) -> str:
    return f"row {index} ({id_field}={row[id_field]!r})" if id_field in row else f"row {index}"


def _key(value: Any) -> str:
    """An id as comparable text: 7 and 7.0 are one id, "7" and true are others."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, sort_keys=True)


def _differing(mine: list[Any], theirs: list[Any]) -> list[Any]:
    """The ids of `mine` missing from `theirs`."""
    other = {_key(v) for v in theirs}
    return [v for v in mine if _key(v) not in other]


class MinScore(Check[MinScoreParams]):
    """Relevance: every row (or the top k) scores at least `threshold`."""

    type_name = "min-score"
    params_model = MinScoreParams

    def evaluate(self, params: MinScoreParams, ctx: ScoringContext) -> CheckResult:
        expected = {"threshold": params.threshold, "k": params.k}
        try:
            rows = _own_rows(ctx)[: params.k]
            scores = [row_score(r, i, params.score_field) for i, r in enumerate(rows, start=1)]
        except RowsError as exc:
            return _result(self.type_name, False, expected, None, str(exc))
        if not rows:
            return _result(self.type_name, False, expected, [], "no results")
        below = next((i for i, s in enumerate(scores) if s < params.threshold), None)
        reason = ""
        if below is not None:
            row = _label(rows[below], below + 1, params.id_field)
            reason = f"{row} scored {scores[below]:g}, below {params.threshold:g}"
        return _result(self.type_name, below is None, expected, scores, reason)


class Ordered(Check[OrderedParams]):
    """Ordering: the rows come sorted by falling score (ties allowed)."""

    type_name = "ordered"
    params_model = OrderedParams

    def evaluate(self, params: OrderedParams, ctx: ScoringContext) -> CheckResult:
        expected = f"{params.score_field} falling"
        try:
            rows = _own_rows(ctx)
            scores = [row_score(r, i, params.score_field) for i, r in enumerate(rows, start=1)]
        except RowsError as exc:
            return _result(self.type_name, False, expected, None, str(exc))
        if not rows:
            return not_applicable(self.type_name, "no rows to order", expected)
        rise = next((i for i in range(1, len(scores)) if scores[i] > scores[i - 1]), None)
        reason = ""
        if rise is not None:
            above = _label(rows[rise - 1], rise, params.id_field)
            below = _label(rows[rise], rise + 1, params.id_field)
            reason = (
                f"{above} scored {scores[rise - 1]:g} but ranks above {below}, "
                f"which scored {scores[rise]:g}"
            )
        return _result(self.type_name, rise is None, expected, scores, reason)


class DistinctFrom(Check[DistinctFromParams]):
    """Differentiation: this case's top k differ from another case's top k in at least
    `min_different` ids. The other case's call is made again in this case (see
    evalctl.retrieval.kind) and recorded beside this case's own."""

    type_name = DISTINCT_FROM
    params_model = DistinctFromParams

    def default_name(self, params: DistinctFromParams) -> str:
        return f"{self.type_name}:{params.case}"

    def cases_named(self, params: DistinctFromParams) -> list[tuple[str, str]]:
        """(key, case id): the loader checks that the suite has such another case."""
        return [("case", params.case)]

    def evaluate(self, params: DistinctFromParams, ctx: ScoringContext) -> CheckResult:
        expected = {"case": params.case, "k": params.k, "min_different": params.min_different}
        other_call = _other_call(ctx, params.case)
        if other_call is None:
            return _result(
                self.type_name, False, expected, None,
                f"case {params.case!r}'s call was not made: distinct-from compares the cases "
                "of a retrieval suite",
            )  # fmt: skip
        try:
            mine = top_ids(_own_rows(ctx), params.k, params.id_field)
            theirs = top_ids(rows_of(other_call), params.k, params.id_field)
        except RowsError as exc:
            return _result(self.type_name, False, expected, None, str(exc))
        different = _differing(mine, theirs)
        actual = {"top_k": mine, "other_top_k": theirs, "different": len(different)}
        if not mine:
            return _result(self.type_name, False, expected, actual, "no results")
        reason = (
            f"top {params.k} {mine} differ from case {params.case!r}'s {theirs} in "
            f"{len(different)} id{'s' * (len(different) != 1)}, fewer than "
            f"{params.min_different}"
        )
        return _result(
            self.type_name, len(different) >= params.min_different, expected, actual, reason
        )


def _other_call(ctx: ScoringContext, case_id: str) -> ToolCallRecord | None:
    """The re-made call of case `case_id`: after the case's own, the tool and arguments of
    that case's input."""
    if not isinstance(ctx.case.input, RetrievalInput):
        return None
    other = ctx.case.input.other(case_id)
    if other is None:
        return None
    wanted = (other.tool, _key(other.args))
    return next(
        (c for c in ctx.transcript.tool_calls[1:] if (c.name, _key(c.arguments)) == wanted),
        None,
    )


class ContainsRow(Check[ContainsRowParams]):
    """Recall@k: the expected id (or ids) among the top k rows."""

    type_name = "contains-row"
    params_model = ContainsRowParams

    def default_name(self, params: ContainsRowParams) -> str:
        shown = ",".join(str(v) for v in params.expected_ids)
        return f"{self.type_name}:{shown}"

    def evaluate(self, params: ContainsRowParams, ctx: ScoringContext) -> CheckResult:
        wanted = params.expected_ids
        expected = {"ids": wanted, "k": params.k, "min_recall": params.min_recall}
        try:
            rows = _own_rows(ctx)
            seen = top_ids(rows, params.k or len(rows), params.id_field)
        except RowsError as exc:
            return _result(self.type_name, False, expected, None, str(exc))
        missing = _differing(wanted, seen)
        recall = (len(wanted) - len(missing)) / len(wanted)
        actual = {"top_k": seen, "missing": missing, "recall": round(recall, 4)}
        where = f"the top {params.k}" if params.k else "the rows"
        reason = f"{', '.join(map(repr, missing))} not in {where}: {seen}"
        if recall < 1:
            reason += f" (recall {recall:.2f}, at least {params.min_recall:g} needed)"
        return _result(self.type_name, recall >= params.min_recall, expected, actual, reason)


CHECKS = (MinScore(), Ordered(), DistinctFrom(), ContainsRow())
