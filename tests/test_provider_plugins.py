"""Plugins add providers (`Registry.add_provider`): through evalctl.toml and an entry point,
seen by `--provider NAME`, by detection and by `evalctl providers` with their origin; the
built-in providers register through the same call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalctl import plugin_loader
from evalctl.config import Settings
from evalctl.errors import BadInputError
from evalctl.plugin import Origin, ProviderOptions, ProviderTraits, Registry
from evalctl.providers import registry as providers
from evalctl.providers.registry import ProviderSpec
from tests.cli_helpers import evalctl

# A third-party provider as a user would write one: it answers every prompt in upper case.
PLUGIN = """
from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.plugin import Origin, ProviderOptions, ProviderTraits, Registry


class Shout:
    name = "shout"
    capabilities = frozenset()
    model_sha256 = None

    def __init__(self, options: ProviderOptions) -> None:
        self.model = options.model or "shout-1"

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        return CompletionResponse(content=request.messages[-1].content.upper(), model=self.model)

    def close(self) -> None:
        pass


def register(registry: Registry) -> None:
    registry.add_provider(
        "shout",
        Shout,
        ProviderTraits("answers in upper case", concurrent=True, detect_env=("SHOUT_ON",)),
    )
"""

SUITE = """
[suite]
name = "loud"
kind = "assert"

[[case]]
id = "hello"
input = { prompt = "say hello" }
[[case.assert]]
type = "contains"
value = "SAY HELLO"
"""


def _project(tmp_path: Path, config: str) -> Path:
    root = tmp_path / "proj"
    (root / "cases").mkdir(parents=True)
    (root / "cases" / "loud.toml").write_text(SUITE)
    (root / "shout_plugin.py").write_text(PLUGIN)
    if config:
        (root / "evalctl.toml").write_text(config)
    return root


def _providers(root: Path) -> tuple[str, dict[str, dict[str, Any]]]:
    """`evalctl providers --json`: the default provider, and each row by name."""
    proc = evalctl(root, "providers", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    return report["default"], {row["name"]: row for row in report["providers"]}


def test_an_evalctl_toml_provider_runs_a_suite_and_is_listed_with_its_origin(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path, 'plugins = ["shout_plugin"]\n')
    _, listed = _providers(root)
    assert listed["shout"]["origin"] == "shout_plugin (evalctl.toml)"
    assert listed["shout"]["available"] and listed["shout"]["summary"] == "answers in upper case"
    assert listed["local"]["origin"] == "builtin"

    proc = evalctl(root, "run", "--provider", "shout", "--cases", "cases/loud.toml", "--out", "o")
    assert proc.returncode == 0, proc.stderr
    result = json.loads((root / "o" / "results.json").read_text())
    assert (result["provider"]["name"], result["provider"]["model"]) == ("shout", "shout-1")
    assert [c["status"] for c in result["cases"]] == ["pass"]


def test_detection_sees_a_plugin_provider_after_the_builtin_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, 'plugins = ["shout_plugin"]\n')
    monkeypatch.setenv("SHOUT_ON", "1")
    assert _providers(root)[0] == "shout"
    # A built-in provider's variable comes first in detection order.
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    assert _providers(root)[0] == "anthropic"


def test_an_entry_point_provider_is_listed_with_its_distribution_and_runs(tmp_path: Path) -> None:
    # An installed distribution's metadata, as pip writes it, beside its module in the
    # working directory, which `python -m` puts on sys.path.
    root = _project(tmp_path, "")
    info = root / "shout-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shout\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[evalctl.plugins]\nshout = shout_plugin\n")
    assert _providers(root)[1]["shout"]["origin"] == "shout (entry point)"
    proc = evalctl(root, "run", "--provider", "shout", "--cases", "cases/loud.toml", "--out", "o")
    assert proc.returncode == 0, proc.stderr
    result = json.loads((root / "o" / "results.json").read_text())
    assert [c["status"] for c in result["cases"]] == ["pass"]


def test_without_the_plugin_the_provider_is_unknown(tmp_path: Path) -> None:
    root = _project(tmp_path, "")
    proc = evalctl(root, "run", "--provider", "shout", "--cases", "cases/loud.toml")
    assert proc.returncode == 2
    assert "unknown provider 'shout'" in proc.stderr and "Traceback" not in proc.stderr


def test_the_builtin_providers_register_through_the_plugin_api() -> None:
    reg = Registry()
    providers.register(reg)
    names = [spec.name for spec in reg.providers()]
    assert names == [
        "local", "anthropic", "gemini", "openai", "scripted", "echo", "python", "http", "command"
    ]  # fmt: skip
    assert [e.name for e in reg.entries() if e.type == "provider"] == sorted(names)
    # The lookups read the same registrations.
    assert list(providers.SPECS) == names


def test_a_provider_name_is_registered_once() -> None:
    reg = Registry()
    providers.register(reg)
    with pytest.raises(BadInputError, match="already registered"):
        reg.add_provider("local", lambda options: None, ProviderTraits())  # type: ignore[arg-type,return-value]


def test_traits_must_be_traits() -> None:
    with pytest.raises(BadInputError, match="ProviderTraits"):
        Registry().add_provider("x", lambda o: None, {"billed": True})  # type: ignore[arg-type,return-value]


def test_a_plugin_provider_is_seen_by_the_lookups_below_the_plugin_layer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def register(reg: Registry) -> None:
        reg.add_provider("metered", lambda o: None, ProviderTraits(billed=True))  # type: ignore[arg-type,return-value]

    plugin_loader.reset()
    reg = plugin_loader.registry()
    reg.current = Origin("evalctl.toml", "metered_plugin")
    register(reg)
    try:
        assert providers.traits("metered").billed and not providers.traits("metered").concurrent
        opts = ProviderOptions(settings=Settings(), env={})
        rows = {a.name: a for a in providers.availability(opts)}
        assert rows["metered"].origin == "metered_plugin (evalctl.toml)"
    finally:
        plugin_loader.reset()
    assert not providers.traits("metered").billed


def _doc_provider() -> str:
    """The provider example of docs/plugins.md, "Providers"."""
    doc = (Path(__file__).parent.parent / "docs" / "plugins.md").read_text()
    start = doc.index("`shout_plugin.py` (with")
    body = doc.index("\n", doc.index("```", start)) + 1
    return doc[body : doc.index("```", body)]


def test_traits_given_as_data_become_the_class_every_lookup_reads() -> None:
    from evalctl.plugin import Provider

    def refuse(options: ProviderOptions) -> None:
        raise BadInputError("no such file", field="--script")

    reg = Registry()
    reg.add_provider(
        "old",
        lambda options: None,  # type: ignore[arg-type,return-value]
        ProviderTraits(
            "an old plugin",
            lambda options: None if options.env.get("OLD_KEY") else "set OLD_KEY",
            capabilities=frozenset({"tools"}),
            billed=True,
            describe=lambda options: "on the old API",
            check_given=refuse,
        ),
    )
    (spec,) = reg.providers()
    cls = spec.traits
    assert issubclass(cls, Provider) and cls.summary == "an old plugin"
    assert cls.billed and cls.capabilities == {"tools"} and not cls.concurrent and cls.real
    ready = ProviderOptions(settings=Settings(), env={"OLD_KEY": "1"})
    assert cls.unavailable_reason(ready) is None and cls.describe(ready) == "on the old API"
    assert cls.unavailable_reason(ProviderOptions(settings=Settings(), env={})) == "set OLD_KEY"
    with pytest.raises(BadInputError, match="no such file"):
        cls.check_given(ready)
    # A hook left out keeps the base class's default.
    (bare,) = [s for s in _registered("bare", ProviderTraits()) if s.name == "bare"]
    assert bare.traits.describe(ready) == "" and bare.traits.unavailable_reason(ready) is None


def _registered(name: str, traits: ProviderTraits) -> list[ProviderSpec]:
    reg = Registry()
    reg.add_provider(name, lambda options: None, traits)  # type: ignore[arg-type,return-value]
    return reg.providers()


def test_the_docs_provider_is_one_class_and_one_registration_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, 'plugins = ["shout_plugin"]\n')
    (root / "shout_plugin.py").write_text(_doc_provider())
    default, listed = _providers(root)
    assert listed["shout"]["summary"] == "answers in upper case" and default == "local"
    monkeypatch.setenv("SHOUT_ON", "1")
    assert _providers(root)[0] == "shout"  # its class's detect_env
    proc = evalctl(root, "run", "--provider", "shout", "--cases", "cases/loud.toml", "--out", "o")
    assert proc.returncode == 0, proc.stderr
    result = json.loads((root / "o" / "results.json").read_text())
    assert [c["status"] for c in result["cases"]] == ["pass"]


def test_the_registry_reads_traits_from_the_class_it_was_given() -> None:
    from evalctl.chat import CompletionRequest, CompletionResponse
    from evalctl.plugin import Provider

    class Metered(Provider):
        name = "metered"
        billed = True
        deterministic = True
        capabilities = frozenset({"tools"})

        def __init__(self, options: ProviderOptions) -> None:
            pass

        @property
        def model(self) -> str:
            return "m"

        def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
            return CompletionResponse(content="", model=self.model)

    loaded: list[str] = []

    def metered_class() -> type[Provider]:
        loaded.append("metered")
        return Metered

    reg = Registry()
    reg.add_provider("metered", Metered)
    reg.add_provider("lazy", lambda options: Metered(options), metered_class)
    assert loaded == []  # a function returning the class is called on the first lookup only
    specs = {spec.name: spec for spec in reg.providers()}
    for name in ("metered", "lazy"):
        traits = specs[name].traits
        assert traits.billed and traits.deterministic and not traits.concurrent
        assert traits.capabilities == {"tools"} and traits.real
    assert loaded == ["metered"]
    # A factory with no class to read traits from is refused.
    with pytest.raises(BadInputError, match="Provider class"):
        reg.add_provider("bare", lambda options: Metered(options))
