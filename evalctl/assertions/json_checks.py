"""Assertions on a JSON answer: json-valid, json-schema, json-field."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator, model_validator

from evalctl.assertions.base import Assertion, Evidence, Outcome, json_equal, value_at
from evalctl.json_schema import schema_problem, validation_errors


class JsonValid(Assertion):
    """The answer is JSON (or exactly one ```json fenced block)."""

    def default_name(self) -> str:
        return "json-valid"

    def evaluate(self, evidence: Evidence) -> Outcome:
        ok, _, why = evidence.parsed_json
        return Outcome(ok, "valid JSON", evidence.answer, why)


class JsonSchema(Assertion):
    """The answer is JSON matching the inline JSON Schema `schema`."""

    # `schema` on the TOML side; renamed here because BaseModel has a `schema` attribute.
    schema_: dict[str, Any] = Field(alias="schema")

    @field_validator("schema_")
    @classmethod
    def _valid_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        problem = schema_problem(schema)
        if problem:
            raise ValueError(problem)
        return schema

    def default_name(self) -> str:
        return "json-schema"

    def evaluate(self, evidence: Evidence) -> Outcome:
        return check_schema(self.schema_, evidence)


def check_schema(schema: dict[str, Any], evidence: Evidence) -> Outcome:
    """Shared by `json-schema` and a suite's `output_schema`."""
    ok, value, why = evidence.parsed_json
    if not ok:
        return Outcome(False, "JSON matching the schema", evidence.answer, why)
    errors = validation_errors(schema, value)
    return Outcome(not errors, "JSON matching the schema", value, "; ".join(errors))


class JsonField(Assertion):
    """The value at dotted `path` of a JSON answer: `equals`, is `one_of`, matches `regex`,
    or lies within `min`/`max`."""

    path: str = ""
    equals: Any = None
    one_of: list[Any] | None = None
    regex: str | None = None
    min: float | None = None
    max: float | None = None

    @field_validator("regex")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"invalid regular expression: {exc}") from None
        return pattern

    @model_validator(mode="after")
    def _one_test(self) -> JsonField:
        tests: list[str] = [t for t in ("equals", "one_of", "regex") if t in self.model_fields_set]
        ranged: list[str] = [t for t in ("min", "max") if t in self.model_fields_set]
        if len(tests) + (1 if ranged else 0) != 1:
            raise ValueError(
                "give exactly one of equals, one_of, regex, or min and/or max"
                + (f" (found: {', '.join(tests + ranged)})" if tests or ranged else "")
            )
        return self

    def default_name(self) -> str:
        return f"json-field:{self.path or '(root)'}"

    def _expected(self) -> Any:
        if "equals" in self.model_fields_set:
            return self.equals
        if self.one_of is not None:
            return {"one_of": self.one_of}
        if self.regex is not None:
            return {"regex": self.regex}
        return {k: v for k, v in (("min", self.min), ("max", self.max)) if v is not None}

    def evaluate(self, evidence: Evidence) -> Outcome:
        expected = self._expected()
        ok, data, why = evidence.parsed_json
        if not ok:
            return Outcome(False, expected, evidence.answer, why)
        found, value = value_at(data, self.path)
        if not found:
            return Outcome(False, expected, None, f"no field at path {self.path!r}")
        passed, reason = self._judge(value)
        return Outcome(passed, expected, value, reason)

    def _judge(self, value: Any) -> tuple[bool, str]:
        if "equals" in self.model_fields_set:
            same = json_equal(value, self.equals)
            return same, "" if same else f"expected {self.equals!r}, got {value!r}"
        if self.one_of is not None:
            ok = any(json_equal(value, option) for option in self.one_of)
            return ok, "" if ok else f"{value!r} is not one of {self.one_of!r}"
        if self.regex is not None:
            if not isinstance(value, str):
                return False, f"expected a string to match, got {type(value).__name__}"
            ok = re.search(self.regex, value) is not None
            return ok, "" if ok else f"/{self.regex}/ does not match {value!r}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False, f"expected a number, got {type(value).__name__}"
        if self.min is not None and value < self.min:
            return False, f"{value} is below the minimum {self.min:g}"
        if self.max is not None and value > self.max:
            return False, f"{value} is above the maximum {self.max:g}"
        return True, ""


ASSERTIONS: dict[str, type[Assertion]] = {
    "json-valid": JsonValid,
    "json-schema": JsonSchema,
    "json-field": JsonField,
}
