"""Assertions on a JSON answer: json-valid, json-schema, json-field.

All three judge the one JSON reading of the answer (evalctl.scoring.answer): the whole
answer, else its one fenced block, else the object or array embedded in prose.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from evalctl.assertions import pattern as patterns
from evalctl.assertions.base import Params, json_equal, outcome, value_at
from evalctl.json_schema import schema_problem
from evalctl.results.models import CheckResult
from evalctl.scoring.check import Check, ScoringContext
from evalctl.scoring.score import schema_result


class JsonValidParams(Params):
    # False: JSON embedded in prose counts too (the reading the other JSON checks use).
    strict: bool = True


class JsonValid(Check[JsonValidParams]):
    """The answer is JSON: the whole answer or its one fenced block; with `strict = false`,
    also an object or array with prose around it."""

    type_name = "json-valid"
    params_model = JsonValidParams

    def evaluate(self, params: JsonValidParams, ctx: ScoringContext) -> CheckResult:
        answer = ctx.answer
        why = answer.json_error
        passed = answer.has_json
        if passed and params.strict and answer.json_from == "embedded":
            passed, why = False, "the JSON has prose around it (strict = false accepts that)"
        return outcome(self.type_name, passed, "valid JSON", answer.text, why)


class JsonSchemaParams(Params):
    # `schema` on the TOML side; renamed here because BaseModel has a `schema` attribute.
    schema_: dict[str, Any] = Field(alias="schema")

    @field_validator("schema_")
    @classmethod
    def _valid_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        problem = schema_problem(schema)
        if problem:
            raise ValueError(problem)
        return schema


class JsonSchema(Check[JsonSchemaParams]):
    """The answer's JSON matches the inline JSON Schema `schema`."""

    type_name = "json-schema"
    params_model = JsonSchemaParams

    def evaluate(self, params: JsonSchemaParams, ctx: ScoringContext) -> CheckResult:
        return schema_result(params.schema_, ctx.answer, self.type_name)


class JsonFieldParams(Params):
    path: str = ""
    equals: Any = None
    one_of: list[Any] | None = None
    regex: str | None = None
    min: float | None = None
    max: float | None = None

    @field_validator("regex")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        problem = None if pattern is None else patterns.compile_problem(pattern)
        if problem:
            raise ValueError(problem)
        return pattern

    @model_validator(mode="after")
    def _one_test(self) -> JsonFieldParams:
        tests: list[str] = [t for t in ("equals", "one_of", "regex") if t in self.model_fields_set]
        ranged: list[str] = [t for t in ("min", "max") if t in self.model_fields_set]
        if len(tests) + (1 if ranged else 0) != 1:
            raise ValueError(
                "give exactly one of equals, one_of, regex, or min and/or max"
                + (f" (found: {', '.join(tests + ranged)})" if tests or ranged else "")
            )
        return self

    def expected(self) -> Any:
        if "equals" in self.model_fields_set:
            return self.equals
        if self.one_of is not None:
            return {"one_of": self.one_of}
        if self.regex is not None:
            return {"regex": self.regex}
        return {k: v for k, v in (("min", self.min), ("max", self.max)) if v is not None}

    def judge(self, value: Any) -> tuple[bool, str]:
        if "equals" in self.model_fields_set:
            same = json_equal(value, self.equals)
            return same, f"expected {self.equals!r}, got {value!r}"
        if self.one_of is not None:
            ok = any(json_equal(value, option) for option in self.one_of)
            return ok, f"{value!r} is not one of {self.one_of!r}"
        if self.regex is not None:
            if not isinstance(value, str):
                return False, f"expected a string to match, got {type(value).__name__}"
            ok = patterns.search(self.regex, value)
            return ok, f"/{self.regex}/ does not match {value!r}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False, f"expected a number, got {type(value).__name__}"
        if self.min is not None and value < self.min:
            return False, f"{value} is below the minimum {self.min:g}"
        if self.max is not None and value > self.max:
            return False, f"{value} is above the maximum {self.max:g}"
        return True, ""


class JsonField(Check[JsonFieldParams]):
    """The value at dotted `path` of the answer's JSON: `equals`, is `one_of`, matches
    `regex`, or lies within `min`/`max`."""

    type_name = "json-field"
    params_model = JsonFieldParams

    def default_name(self, params: JsonFieldParams) -> str:
        return f"json-field:{params.path or '(root)'}"

    def evaluate(self, params: JsonFieldParams, ctx: ScoringContext) -> CheckResult:
        expected, answer = params.expected(), ctx.answer
        if not answer.has_json:
            return outcome(self.type_name, False, expected, answer.text, answer.json_error)
        found, value = value_at(answer.json, params.path)
        if not found:
            return outcome(
                self.type_name, False, expected, None, f"no field at path {params.path!r}"
            )
        try:
            passed, why = params.judge(value)
        except patterns.PatternTimeoutError as exc:
            return CheckResult(
                name=self.type_name, status="error", expected=expected, actual=value,
                message=str(exc),
            )  # fmt: skip
        return outcome(self.type_name, passed, expected, value, why)


CHECKS = (JsonValid(), JsonSchema(), JsonField())
