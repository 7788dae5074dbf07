"""Pydantic models for `cases/<suite>.toml`. Unknown keys are errors everywhere.

`input` and `expected` are validated a second time by the suite's kind (see
`evalctl.scoring.kinds`), which knows their exact shape.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from evalctl.cases.tooldecl import McpDecl, ToolDecl
from evalctl.providers.targets.config import FUNCTION_PATTERN, TargetConfig
from evalctl.results.models import GateRuleName, SuiteGate
from evalctl.userfiles import MAX_TIMEOUT_S

CASE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
# `[suite] tool_choice`'s words; anything else names a tool.
TOOL_CHOICES = ("auto", "none", "required")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _SamplingFields(_Strict):
    """`temperature`, `top_p` and `seed`, in `[suite]` and in a `[[case]]`; unset here means
    the next level decides: --flag > case > suite > greedy (temperature 0, top_p 1, seed 0).
    docs/writing-suites.md, "Sampling"."""

    # 0: greedy, the most likely token every time. The APIs accept up to 2.
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    seed: int | None = Field(default=None, ge=0, le=2**31 - 1)


class CaseDefaults(_SamplingFields):
    """`[suite.defaults]`: what every case gets unless it sets its own. A case's own setting
    wins; a default assertion gives way to a case's assertion of the same check name."""

    assertions: list[dict[str, Any]] | None = Field(default=None, alias="assert")
    threshold: float | None = Field(default=None, ge=0, le=1)
    checks: list[str] | None = None
    timeout_s: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S)
    features: list[str] | None = None


class CaseTemplate(CaseDefaults):
    """`[suite.case_template]`: a case's tables with `{{ var }}` placeholders, filled in from
    each data-file row (and each inline case that sets `vars`)."""

    description: str | None = None
    input: dict[str, Any] | None = None
    expected: dict[str, Any] | None = None
    # A file (relative to the suite file) whose text, a template over the row, is each case's
    # `input.prompt`; the path may be a template too.
    prompt_file: str | None = None
    # A case's labels and tags from its row (`__metadata:*` columns, Inspect's metadata).
    metadata: dict[str, Any] | str | None = None
    # Keys written as a placeholder (`threshold = "{{ __threshold }}"`), kept aside as
    # written: a row's value fills them, and the case it makes is validated as any case.
    _placeholders: dict[str, str] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _typed_placeholders(cls, data: Any, handler: Any) -> Any:
        if not isinstance(data, dict):
            return handler(data)
        typed = ("threshold", "checks", "timeout_s", "features", "input", "expected")
        held = {
            key: value
            for key, value in data.items()
            if (key in typed or key in _SamplingFields.model_fields)
            and isinstance(value, str)
            and ("{{" in value or "{%" in value)
        }
        model = handler({k: v for k, v in data.items() if k not in held})
        model._placeholders = held
        return model

    @property
    def placeholders(self) -> dict[str, str]:
        """The keys given as one placeholder string, by key, as written."""
        return dict(self._placeholders)


class SpyDecl(_Strict):
    """`[[suite.spy]]`: one of the application's own functions, recorded as a tool call each
    time it runs during a case (evalctl.tools.spy_functions)."""

    # `module:function` or `module:Class.method`, found from the suite's folder first.
    function: str = Field(pattern=FUNCTION_PATTERN)
    # The tool name its calls are recorded under; the function's own name by default.
    name: str | None = Field(default=None, pattern=CASE_ID_PATTERN)

    @property
    def tool_name(self) -> str:
        return self.name or self.function.rsplit(".", 1)[-1].rsplit(":", 1)[-1]


class SuiteTable(_SamplingFields):
    """`[suite]`: the suite's name and kind, its prompt, the tools it offers and declares,
    where its cases come from, and what every case shares (docs/writing-suites.md)."""

    name: str = Field(pattern=CASE_ID_PATTERN)
    description: str = ""
    # Which scorer family the suite belongs to; it fixes the shape of input/expected.
    kind: str
    # Bumped when cases or prompts change meaning; shards of different versions do not merge.
    version: str = "1"
    system_prompt: str = ""
    # A file (relative to the suite file) whose text, a template over each case's values, is
    # the prompt of every case that has no input of its own.
    prompt_file: str | None = None
    # Tools offered to the model: declared below in [[suite.tool]], built in, or from a plugin.
    tools: list[str] = Field(default_factory=list)
    # Tools this suite declares itself (fixture, command, python or mock backed).
    tool: list[ToolDecl] = Field(default_factory=list)
    # MCP servers whose tools are offered too (`[[suite.mcp]]`, docs/mcp.md): their names are
    # known once a server answers, and checked then.
    mcp: list[McpDecl] = Field(default_factory=list)
    # `auto`, `none`, `required` or one of `tools`. `required` or a name forces the first turn
    # only: later turns are `auto`, so the model can answer once the tool has run. Read by the
    # `assert` kind; None leaves the choice to the kind (`auto` for `assert`).
    tool_choice: str | None = None
    # The answer must be JSON matching this schema: grammar-constrained on the local provider,
    # structured output on cloud providers.
    output_schema: dict[str, Any] | None = None
    # Names of checks run on every case unless a case lists its own.
    checks: list[str] | None = None
    max_turns: int = Field(default=4, ge=1, le=50)
    max_tokens: int = Field(default=512, ge=1)
    # Capabilities a provider must have, plus resources plugins register (`evalctl plugins`).
    requires: list[str] = Field(default_factory=list)
    timeout_s: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S)
    # Data files whose rows are cases (CSV, JSONL, JSON, TOML), relative to the suite file;
    # docs/writing-suites.md, "Cases from data files".
    cases_from: str | list[str] = Field(default_factory=list)
    # A row's case id when its file has no `id` column, e.g. "ticket-{{ number }}".
    id_template: str | None = None
    case_template: CaseTemplate | None = None
    defaults: CaseDefaults | None = None
    # `gate = "strict"` (or "statistical"): the rule `compare` judges this suite's cases by.
    # `[suite.gate]`, a table: metric gates this suite opts into (tokens out, latency, cost),
    # each a relative tolerance above the baseline, and the rule as its `rule` key.
    gate: GateRuleName | SuiteGate | None = None

    @property
    def metric_gate(self) -> SuiteGate | None:
        """The metric tolerances of `[suite.gate]`; None when it names none."""
        if not isinstance(self.gate, SuiteGate):
            return None
        metrics = self.gate.model_copy(update={"rule": None})
        return None if metrics == SuiteGate() else metrics

    @property
    def gate_rule(self) -> GateRuleName | None:
        """The gate rule this suite asked for; None: `compare`'s own."""
        return self.gate.rule if isinstance(self.gate, SuiteGate) else self.gate

    # The application under test (`target = {...}`, or several `[[suite.target]]`, one per
    # type): the first runs the suite when no --provider is given (docs/targets.md).
    target: list[TargetConfig] = Field(default_factory=list)
    # The application's own functions recorded as tool calls (`[[suite.spy]]`).
    spy: list[SpyDecl] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _tables_in_tools(cls, data: Any) -> Any:
        """`[[suite.tools]]` tables, a shorthand: each declares a tool (as `[[suite.tool]]`
        does) and offers it (as its name in `tools` does)."""
        if not isinstance(data, dict) or not isinstance(data.get("tools"), list):
            return data
        tables = [t for t in data["tools"] if isinstance(t, dict)]
        declared = data.get("tool", [])
        if not tables or not isinstance(declared, list):
            return data
        # A table without a usable name is reported once, as the declaration it becomes.
        names = [
            t.get("name") if isinstance(t, dict) else t
            for t in data["tools"]
            if not isinstance(t, dict) or isinstance(t.get("name"), str)
        ]
        return {**data, "tools": names, "tool": [*declared, *tables]}

    @field_validator("tool_choice")
    @classmethod
    def _choice_offered(cls, value: str | None, info: ValidationInfo) -> str | None:
        tools = info.data.get("tools")
        if value is None or value in TOOL_CHOICES[:2] or tools is None:
            return value  # `tools` itself invalid: said there
        if info.data.get("mcp"):
            return value  # an MCP server's tool: checked when the server answers
        if not tools:
            raise ValueError(f"{value!r} needs a tool to call, and suite.tools is empty")
        if value != "required" and value not in tools:
            raise ValueError(
                f"{value!r} is not one of the suite's tools ({', '.join(tools)}); "
                f"give one of them or {', '.join(TOOL_CHOICES)}"
            )
        return value

    @field_validator("mcp")
    @classmethod
    def _servers_named_once(cls, value: list[McpDecl]) -> list[McpDecl]:
        names = [m.name for m in value]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"MCP server {', '.join(twice)} is declared twice")
        return value

    @field_validator("target", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

    @field_validator("target")
    @classmethod
    def _one_per_type(cls, value: list[TargetConfig]) -> list[TargetConfig]:
        types = [t.type for t in value]
        twice = sorted({t for t in types if types.count(t) > 1})
        if twice:
            raise ValueError(f"one target per type: {', '.join(twice)} is declared twice")
        return value

    @property
    def data_files(self) -> list[str]:
        return [self.cases_from] if isinstance(self.cases_from, str) else list(self.cases_from)


class CaseEntry(_SamplingFields):
    """`[[case]]`: one case, its `input` (and `expected`) in the shape its suite's kind
    reads, and its `[[case.assert]]` checks."""

    # A number where text is expected is its text: a case from a row is filled by typed
    # placeholders (evalctl.cases.template), and `description = "{{ n }}"` reads as before.
    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)

    id: str = Field(pattern=CASE_ID_PATTERN)
    description: str = ""
    features: list[str] = Field(default_factory=list)
    # Free-form labels (`owner = "search"`), selected on with `--meta key=value`.
    metadata: dict[str, str] = Field(default_factory=dict)

    @field_validator("metadata", mode="before")
    @classmethod
    def _labels_as_text(cls, value: Any) -> Any:
        """A row's number or boolean label (`__metadata:priority = 1` in a JSON row) is its
        text, as `--meta priority=1` would name it."""
        if not isinstance(value, dict):
            return value
        return {
            k: (str(v).lower() if isinstance(v, bool) else str(v))
            if isinstance(v, int | float)
            else v
            for k, v in value.items()
        }

    input: dict[str, Any]
    expected: dict[str, Any] = Field(default_factory=dict)
    # `[[case.assert]]` tables; the suite's kind validates them (the `assert` kind does).
    assertions: list[dict[str, Any]] | None = Field(default=None, alias="assert")
    # Share of check weight that must pass for the case to pass; 1 = every check.
    threshold: float = Field(default=1.0, ge=0, le=1)
    checks: list[str] | None = None
    timeout_s: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S)
    # Values the case's `{{ var }}` placeholders are filled from (a data row's columns).
    vars: dict[str, Any] = Field(default_factory=dict)
    # The suite's MCP servers this case is offered (by `[[suite.mcp]]` name); None: all.
    mcp: list[str] | None = None


class AssertionSpec(BaseModel):
    """One parsed `[[case.assert]]`: its type, validated parameters, check name and weight."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    type: str
    params: BaseModel
    name: str
    weight: float = Field(default=1.0, gt=0, allow_inf_nan=False)


class Case(BaseModel):
    """A validated case, ready to run: kind-specific input/expected are parsed models."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    suite: str
    id: str
    description: str
    features: list[str]
    input: BaseModel
    expected: BaseModel
    checks: list[str]
    timeout_s: float | None
    threshold: float = 1.0
    # Checks declared in the suite file, scored after the kind's own.
    assertions: list[AssertionSpec] = Field(default_factory=list)
    # The case's own sampling, where it sets any (see _SamplingFields).
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    # The values its placeholders were filled from (a data row's columns), for reports.
    vars: dict[str, Any] = Field(default_factory=dict)
    # The case's `metadata` labels (`--meta key=value` selects on them).
    metadata: dict[str, str] = Field(default_factory=dict)
    # The suite's MCP servers the case is offered (`mcp = [...]`); None: every one.
    mcp: list[str] | None = None

    @property
    def key(self) -> str:
        return f"{self.suite}/{self.id}"


class Suite(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: Path
    table: SuiteTable
    cases: list[Case]

    @property
    def name(self) -> str:
        return self.table.name

    # Resolved when the suite is loaded: a later change of working directory must not move it.
    _directory: Path = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._directory = self.path.resolve().parent

    @property
    def directory(self) -> Path:
        """Where the suite's relative paths (fixtures, commands, modules) resolve from."""
        return self._directory


class SuiteFile(_Strict):
    """A whole suite file, `[suite]` and its `[[case]]` tables: the top level the loader
    reads (evalctl.cases.loader). Used for the published JSON Schema only; the loader checks
    the two tables itself, so each problem is located."""

    suite: SuiteTable
    case: list[CaseEntry] = Field(default_factory=list)


# A placeholder string (`threshold = "{{ row_threshold }}"`): a row's value fills it, and
# the case it makes is validated then.
_PLACEHOLDER: dict[str, Any] = {"type": "string", "pattern": r"\{\{|\{%"}


def suite_file_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of a suite file, from the models above, for editors
    (`evalctl schema`; docs/writing-suites.md, "Checking suite files in your editor").

    It accepts every file the loader's first phase accepts, so it is looser where the
    models are read leniently: `[[suite.tools]]` tables, a single `target` table, placeholder
    strings in the template and in inline cases, numbers where a case has text. What a
    kind or plugin checks in the second phase (a case's `input`, `expected` and each
    `[[case.assert]]`'s parameters, `output_schema`, a tool's `parameters`) is an open object
    here."""
    schema = SuiteFile.model_json_schema(by_alias=True, mode="validation")
    defs = schema["$defs"]
    suite = defs["SuiteTable"]["properties"]
    # `[[suite.tools]]` tables declare and offer a tool at once (SuiteTable._tables_in_tools).
    suite["tools"]["items"] = {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/ToolDecl"}]}
    # `target = { ... }`, one table, reads as a list of one (SuiteTable._one_or_many).
    suite["target"] = {"anyOf": [suite["target"], suite["target"]["items"]]}
    case = defs["CaseEntry"]
    # With `[suite.case_template]`, an inline case that sets `vars` gets its input there.
    case["required"] = [name for name in case["required"] if name != "input"]
    # `metadata` labels: a number or boolean is its text (CaseEntry._labels_as_text).
    case["properties"]["metadata"]["additionalProperties"] = {
        "type": ["string", "number", "boolean"]
    }
    # A row's value fills a placeholder written where a number, list or table goes; an
    # inline case that sets `vars` is filled the same way (evalctl.cases.datafiles).
    for model, fixed in (("CaseTemplate", ()), ("CaseEntry", ("id", "vars"))):
        props = defs[model]["properties"]
        for name, prop in props.items():
            if prop.get("type") == "string":
                if model == "CaseEntry":  # coerce_numbers_to_str: `description = 3` is "3"
                    props[name] = {"anyOf": [prop, {"type": "number"}]}
            elif name not in fixed:
                props[name] = {"anyOf": [prop, _PLACEHOLDER]}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
        "title": "evalctl suite file",
        "description": (
            "A suite file, cases/<suite>.toml: one [suite] table and its [[case]] tables. "
            "Generated from evalctl's models by `evalctl schema`; `evalctl cases validate` "
            "checks the rest (the kind's input and expected, each assertion's parameters)."
        ),
    }
