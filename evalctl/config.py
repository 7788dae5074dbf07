"""Settings: `evalctl.toml` in the working directory (optional), then environment variables.

The directory holding `evalctl.toml` is the project directory: the `plugins` it names are
imported from there first (`evalctl.plugin_loader.configure`)."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from evalctl.errors import BadInputError

CONFIG_FILE = "evalctl.toml"


class ProviderDefaults(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # claude-sonnet-4-5 reaches end of life on 2026-11-30 (per the SDK's deprecation table).
    anthropic_model: str = "claude-sonnet-4-6"
    gemini_model: str = "gemini-2.5-flash"
    # Teams behind a gateway point the SDKs elsewhere; ANTHROPIC_BASE_URL is read by the SDK itself.
    gemini_base_url: str | None = None
    # `--provider openai`: None asks a compatible server (OPENAI_BASE_URL) for the one model it
    # serves, and means gpt-4o-mini on OpenAI itself.
    openai_model: str | None = None


class ModelPrice(BaseModel):
    """USD per million tokens; defaults live in `evalctl.cost`, `[prices."<model>"]` overrides."""

    model_config = ConfigDict(extra="forbid")

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


class GateSettings(BaseModel):
    """`[gate]`: path globs (from the repository root; `**` spans directories) whose changes
    make `evalctl gate` ask for the quality job. Setting a group replaces its defaults."""

    model_config = ConfigDict(extra="forbid")

    # What the model is told: kinds build prompts (the built-in suites' packages hold kinds,
    # tools and scoring), the runner assembles the conversation.
    prompts: list[str] = Field(
        default_factory=lambda: [
            "evalctl/scoring/**",
            "evalctl/suites/**",
            "evalctl/runner/attempt.py",
            "prompts/**",
        ]
    )
    cases: list[str] = Field(default_factory=lambda: ["cases/**", "evalctl/cases/**"])
    baselines: list[str] = Field(default_factory=lambda: ["baselines/**"])
    # The local inference path, down to the llama.cpp pin in pyproject.toml.
    engine: list[str] = Field(
        default_factory=lambda: [
            "evalctl/server/**",
            "evalctl/lifecycle/**",
            "evalctl/providers/local.py",
            "evalctl/modelfiles/**",
            "proto/**",
            "pyproject.toml",
        ]
    )
    # What tool calls return shapes what the model does next.
    tools: list[str] = Field(default_factory=lambda: ["evalctl/tools/**"])
    # Settings that change what runs (default suites) and the job itself.
    config: list[str] = Field(default_factory=lambda: ["evalctl.toml", ".github/workflows/ci.yml"])


class JudgeSettings(BaseModel):
    """`[judge]`: the model that grades `judge` assertions when an assertion names none.
    Without `provider`, the run's own provider judges (with `model`, if given, else the
    run's model)."""

    model_config = ConfigDict(extra="forbid")

    provider: str | None = None
    model: str | None = None
    # One judgement's time budget, retries included.
    timeout_s: float = Field(default=120.0, gt=0)


class Settings(BaseModel):
    # Top-level keys other than these are settings declared by plugins (`add_setting`);
    # `evalctl.plugin_loader.configure` checks each against its plugin's declaration, so
    # unknown keys are still errors, as everywhere else in user files.
    model_config = ConfigDict(extra="allow")
    # The evalctl.toml these settings came from; its directory is the project directory.
    _config_file: Path | None = PrivateAttr(default=None)

    home: Path = Field(default_factory=lambda: Path("~/.evalctl").expanduser())
    cases_dir: Path = Path("cases")
    baselines_dir: Path = Path("baselines")
    results_dir: Path = Path("results")
    local_model: str | None = None
    # llama.cpp threads for the local daemon (generation and prompt evaluation); default:
    # the physical cores this process may use. EVALCTL_LOCAL_THREADS overrides it.
    local_threads: int | None = Field(default=None, ge=1)
    # Suites `evalctl run` runs when no --suite is given; empty means every suite found.
    default_suites: list[str] = Field(default_factory=list)
    case_timeout_s: float = 120.0
    min_pass_rate: float = 0.5
    # Plugin modules to load, from the directory holding evalctl.toml first, then sys.path.
    plugins: list[str] = Field(default_factory=list)
    providers: ProviderDefaults = Field(default_factory=ProviderDefaults)
    # Model name (or name prefix) -> price; merged over evalctl.cost.DEFAULT_PRICES.
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    gate: GateSettings = Field(default_factory=GateSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)

    @property
    def config_file(self) -> Path | None:
        return self._config_file

    @property
    def run_dir(self) -> Path:
        return self.home / "run"

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"


def load_settings(cwd: Path | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Read `evalctl.toml` (if present) and apply environment overrides."""
    env = os.environ if env is None else env
    base = cwd or Path.cwd()
    data: dict[str, object] = {}
    path = base / CONFIG_FILE
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise BadInputError(f"invalid TOML: {exc}", file=str(path)) from None
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise BadInputError(err["msg"], file=str(path), field=field) from None
    if path.is_file():
        settings._config_file = path
    if env.get("EVALCTL_HOME"):
        settings.home = Path(env["EVALCTL_HOME"]).expanduser()
    if env.get("EVALCTL_LOCAL_MODEL"):
        settings.local_model = env["EVALCTL_LOCAL_MODEL"]
    if env.get("EVALCTL_GEMINI_BASE_URL"):
        settings.providers.gemini_base_url = env["EVALCTL_GEMINI_BASE_URL"]
    return settings


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) with mode 0700, tightening it if it already exists."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.stat().st_mode & 0o777 != 0o700:
        path.chmod(0o700)
    return path
