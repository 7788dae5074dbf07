"""The `similar` assertion: the answer (or one JSON field of it) means nearly what a
reference text does, by the cosine similarity of their embeddings.

It embeds with the run's embedding provider (ScoringContext.embedder; evalctl.runner.embedding):
the run's provider when it embeds, else the local engine. Where there is none (outside a
run, or a local engine that cannot embed) the check ends in `error`, never in a pass.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from evalctl.assertions.base import Params, outcome, value_at
from evalctl.embeddings import cosine
from evalctl.errors import EvalctlError
from evalctl.results.models import CheckResult
from evalctl.scoring.check import Check, ScoringContext

# How long embedding the two texts may take; a case's remaining time caps it where known.
EMBED_TIMEOUT_S = 120.0
DEFAULT_THRESHOLD = 0.8


class SimilarParams(Params):
    # The reference text the answer is compared with.
    value: str = Field(min_length=1)
    threshold: float = Field(default=DEFAULT_THRESHOLD, ge=-1.0, le=1.0)
    # A dotted path into the answer's JSON (as json-field's `path`): compare that field
    # instead of the whole answer.
    field: str | None = Field(default=None, min_length=1)


class Similar(Check[SimilarParams]):
    """cosine(embed(answer or its `field`), embed(`value`)) >= `threshold`."""

    type_name = "similar"
    params_model = SimilarParams

    def default_name(self, params: SimilarParams) -> str:
        return f"similar:{params.field}" if params.field else self.type_name

    def evaluate(self, params: SimilarParams, ctx: ScoringContext) -> CheckResult:
        expected: dict[str, Any] = {"similar_to": params.value, "threshold": params.threshold}
        if params.field:
            expected["field"] = params.field
        text, problem = _compared_text(params, ctx)
        if text is None:
            return outcome(self.type_name, False, expected, None, problem)
        embedder = ctx.embedder
        if embedder is None:
            return _error(
                expected,
                "no embedding provider to compare with: `similar` runs inside `evalctl run`, "
                "which embeds with the run's provider or the local engine",
            )
        timeout = ctx.tools.call_timeout(EMBED_TIMEOUT_S) if ctx.tools else EMBED_TIMEOUT_S
        try:
            embedded = embedder.embed([text, params.value], timeout=timeout)
        except EvalctlError as exc:
            return _error(expected, f"embedding failed: {exc.message}")
        if len(embedded.vectors) != 2:
            return _error(expected, f"the embedding provider returned {len(embedded.vectors)} "
                          "vectors for 2 texts")  # fmt: skip
        try:
            similarity = round(cosine(*embedded.vectors), 4)
        except ValueError as exc:
            return _error(expected, f"the embedding provider's vectors differ: {exc}")
        passed = similarity >= params.threshold
        why = f"similarity {similarity} is below {params.threshold} (model {embedded.model})"
        return outcome(self.type_name, passed, expected, similarity, why)


def _compared_text(params: SimilarParams, ctx: ScoringContext) -> tuple[str | None, str]:
    """The text compared with the reference, or None and why there is none."""
    answer = ctx.answer
    if params.field is None:
        text = answer.text
    else:
        if not answer.has_json:
            return None, f"no JSON to read {params.field!r} from: {answer.json_error}"
        found, value = value_at(answer.json, params.field)
        if not found:
            return None, f"no field at path {params.field!r}"
        # A number or an object is compared as the JSON it is written as.
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if not text.strip():
        return None, "nothing to compare: the text is empty"
    return text, ""


def _error(expected: Any, message: str) -> CheckResult:
    return CheckResult(name=Similar.type_name, status="error", expected=expected, message=message)


CHECKS = (Similar(),)
