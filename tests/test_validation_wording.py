"""One wording of pydantic validation errors (issue 32, item 5): evalctl.toml, a plugin's
setting, a target's reply and a suite file all say a problem through
`userfiles.validation_message`, located by `userfiles.field_path` (dotted keys, list
positions numbered from 1, as the suite loader numbers tables)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalctl import userfiles
from evalctl.config import load_settings
from evalctl.errors import BadInputError, ProviderError
from evalctl.plugin import PluginSetting
from evalctl.providers.targets.reply import to_response


class _Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int


class _Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[_Inner]


def _errors(data: Any) -> list[Any]:
    with pytest.raises(ValidationError) as info:
        _Outer.model_validate(data)
    return list(info.value.errors())


def test_the_one_formatter_locates_words_and_counts() -> None:
    errors = _errors({"items": [{"n": 1}, {"n": "x", "m": 2}], "extra": True})
    error = userfiles.validation_error(errors, file=Path("f.toml"), case_id="c")
    assert error.file == "f.toml" and error.case_id == "c"
    assert error.field == "items[2].n"  # positions from 1
    assert error.detail.endswith(" (and 2 more problems)")
    assert userfiles.validation_message(errors[1]) == "unknown key"
    assert userfiles.validation_message(errors[2]) == "unknown key"
    missing = userfiles.validation_error(_errors({}), prefix=("table",))
    assert (missing.field, missing.detail) == ("table.items", "required key is missing")


def test_a_pattern_is_said_in_words_where_the_caller_has_them() -> None:
    class P(BaseModel):
        name: str = Field(pattern=r"^[a-z]+$")

    with pytest.raises(ValidationError) as info:
        P.model_validate({"name": "A B"})
    err = info.value.errors()[0]
    assert userfiles.validation_message(err) == "'A B' is not allowed: must match ^[a-z]+$"
    words = {r"^[a-z]+$": "lower-case letters only"}
    assert userfiles.validation_message(err, patterns=words) == (
        "'A B' is not allowed: lower-case letters only"
    )


def test_evalctl_toml_is_worded_as_a_suite_file_is(tmp_path: Path) -> None:
    (tmp_path / "evalctl.toml").write_text('default_suites = ["a", 3]\n', encoding="utf-8")
    with pytest.raises(BadInputError) as info:
        load_settings(tmp_path, env={})
    assert info.value.file == str(tmp_path / "evalctl.toml")
    assert info.value.field == "default_suites[2]"
    assert "valid string" in info.value.detail
    (tmp_path / "evalctl.toml").write_text(
        '[matrix]\nproviders = ["openai"]\nmodel = ["x"]\n', encoding="utf-8"
    )
    with pytest.raises(BadInputError) as info:
        load_settings(tmp_path, env={})
    assert (info.value.field, info.value.detail) == ("matrix.model", "unknown key")


def test_a_plugin_setting_is_worded_the_same_and_names_its_file() -> None:
    setting = PluginSetting("ports", list[int], [])
    with pytest.raises(BadInputError) as info:
        setting.validate([1, "x"], Path("evalctl.toml"))
    assert info.value.file == "evalctl.toml" and info.value.field == "ports[2]"
    assert "valid integer" in info.value.detail


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        ({"text": "ok", "tool_calls": [{"name": "t"}, {"name": "u", "args": {}}]},
         "tool_calls[2].args: unknown key"),
        ({"tool_calls": []}, "text: required key is missing"),
        ({"text": "ok", "tool_calls": [{"name": "t", "duration_ms": -1}]},
         "tool_calls[1].duration_ms: -1 is not a duration"),
    ],
)  # fmt: skip
def test_a_target_reply_is_worded_the_same(reply: dict[str, Any], said: str) -> None:
    with pytest.raises(ProviderError) as info:
        to_response(reply, what="the app", model="app", elapsed_ms=1.0)
    assert f"the app returned an unusable reply: {said}" in info.value.message


def test_the_wine_catalog_is_worded_the_same(tmp_path: Path) -> None:
    import json

    from evalctl.suites.sommelier.catalog_db import load_wines

    wines = json.loads((Path(__file__).parent.parent / "cases/fixtures/wines.json").read_text())
    wines[1]["colour"] = wines[1].pop("color")
    source = tmp_path / "wines.json"
    source.write_text(json.dumps(wines), encoding="utf-8")
    with pytest.raises(Exception, match="invalid wine catalog") as info:
        load_wines(source)
    assert f"{source}: field '[2].color': required key is missing (and 1 more problem)" in str(
        info.value
    )
