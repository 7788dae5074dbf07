"""What a suite's `target` table may say: one model per target type, unknown keys refused."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalctl.userfiles import MAX_TIMEOUT_S

# The sampling settings evalctl passes a keyword-called python target (`call = "keywords"`)
# that declares them: a case's input field of the same name would override what the function
# is sent while the results record the run's sampling, so the loader refuses such a field.
SAMPLING_KEYWORDS = ("temperature", "top_p", "seed")

# `module:function`, or `module:Class.method` (a spy's function may be a method).
FUNCTION_PATTERN = r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)?$"
# A reply larger than this (4 MB) is refused unless the target raises `max_reply_bytes`: an
# answer is text a check reads, and a run keeps it several times over (results, journal).
DEFAULT_REPLY_LIMIT = 4_000_000


class _Target(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # At most this long per request; the case's own time left still bounds it.
    timeout_s: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S)
    # The application answers the same input the same way every time: `compare` judges its
    # cases exactly (any pass -> fail gates, whatever the baseline's K) and `run --baseline`
    # never re-samples them. evalctl cannot know this of an application: the team says it.
    deterministic: bool = False
    # The names of the tool calls the application reports in its reply: assertions may name
    # them, as they may name a spied function.
    tools: list[str] = Field(default_factory=list)
    # The most one reply may be, in bytes (an http body, a command's stdout, a python
    # function's text): past it the request is stopped and the case ends in `error`.
    max_reply_bytes: int = Field(default=DEFAULT_REPLY_LIMIT, ge=1)


class PythonTarget(_Target):
    """`module:function`, imported from the suite's folder first, then sys.path."""

    type: Literal["python"]
    function: str = Field(pattern=FUNCTION_PATTERN)
    # How the function is called: with the input document (a dict), or with the case's input
    # fields as keyword arguments (`answer(question="...")`), plus the sampling settings
    # (`temperature`, `top_p`, `seed`) it declares as parameters of its own.
    call: Literal["document", "keywords"] = "document"


class HttpTarget(_Target):
    """One request per turn to `url`; `${VAR}` in the URL and header values comes from the
    environment and is redacted by value wherever evalctl writes."""

    type: Literal["http"]
    url: str = Field(min_length=1)
    method: Literal["POST", "PUT", "PATCH", "GET"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    # A JSON template: a string that is exactly `{{name}}` becomes that input value, `{{name}}`
    # inside a longer string its text. None: the whole input document is sent.
    body: Any = None
    # Where the reply keeps the answer, its usage and the tool calls the application made:
    # a dotted path (`choices.0.text`) or a JSONPath (`$.choices[0].text`).
    answer: str = "text"
    usage: dict[Literal["input_tokens", "output_tokens"], str] = Field(default_factory=dict)
    tool_calls: str | None = None


class CommandTarget(_Target):
    """`argv` run once per turn: the input JSON on stdin, the reply JSON (or text) on stdout."""

    type: Literal["command"]
    argv: list[str] = Field(min_length=1)


TargetConfig = Annotated[PythonTarget | HttpTarget | CommandTarget, Field(discriminator="type")]
TARGET_TYPES = ("python", "http", "command")


def describe(target: PythonTarget | HttpTarget | CommandTarget) -> str:
    """What the results record as the model: the function, the URL or the program."""
    if isinstance(target, PythonTarget):
        return target.function
    if isinstance(target, HttpTarget):
        return f"{target.method} {target.url}"
    return " ".join(target.argv)
