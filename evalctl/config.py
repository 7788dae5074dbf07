"""Settings: `evalctl.toml` (optional), then environment variables.

`evalctl.toml` is looked for in the working directory, then in each directory above it up to
the repository's root (the first holding `.git`), as git finds its own directory: a command
run from a subdirectory of the project reads the project's settings. When there is none, the
same search starts from the suite files named on the command line (`config_for`). The
directory holding it is the project directory: the `plugins` it names are imported from there
first (`evalctl.plugin_loader.configure`), and its relative paths (`cases_dir`, ...) start
there."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from evalctl import secrets, template_budget, userfiles, userpaths
from evalctl.errors import BadInputError, InfraError

CONFIG_FILE = "evalctl.toml"
# 1 MB: far above any useful tool result, far below what would strain memory or the results.
DEFAULT_TOOL_OUTPUT_LIMIT = 1_000_000


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
    # The models `embed()` asks for (suites that require `embeddings`, `evalctl embed`).
    # OpenAI: None means text-embedding-3-small on OpenAI itself and, on a compatible server,
    # the model it serves. Gemini: gemini-embedding-001, Google's current text embedding model.
    openai_embedding_model: str | None = None
    gemini_embedding_model: str = "gemini-embedding-001"


class ModelPrice(BaseModel):
    """USD per million tokens; defaults live in `evalctl.cost`, `[prices."<model>"]` overrides."""

    model_config = ConfigDict(extra="forbid")

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


class GateSettings(BaseModel):
    """`[gate]`: path globs (from the repository root; `**` spans directories) whose changes
    make `evalctl gate` ask for the quality job. Setting a group replaces its defaults."""

    model_config = ConfigDict(extra="forbid")

    # What the model is told and how it is scored: kinds build prompts (the built-in suites'
    # packages hold kinds, tools and scoring), `assert` suites score through the assertions
    # and the judge, the runner assembles the conversation.
    prompts: list[str] = Field(
        default_factory=lambda: [
            "evalctl/scoring/**",
            "evalctl/suites/**",
            "evalctl/assertions/**",
            "evalctl/judge/**",
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


class PromptFile(BaseModel):
    """`{ file = "prompts.txt" }` in `[matrix] prompts`: the variant's template is the file's
    text (relative to evalctl.toml's directory)."""

    model_config = ConfigDict(extra="forbid")

    file: str = Field(min_length=1)


class MatrixSettings(BaseModel):
    """`[matrix]`: the cells `evalctl run` runs when no --provider or --model is given, one
    per provider x model x prompt variant (docs/writing-suites.md, "A matrix of providers,
    models and prompts"). `models` entries are bare names, tried on every provider, or
    `provider:model`, tried on that provider only; a provider none names runs its default.
    `prompts` maps a variant's name to a template over each case's prompt (`{{ prompt }}`)
    and its values (a data-file row's columns), given inline or as `{ file = "..." }`."""

    model_config = ConfigDict(extra="forbid")

    providers: list[str] = Field(min_length=1)
    models: list[str] = Field(default_factory=list)
    prompts: dict[str, str | PromptFile] = Field(default_factory=dict)


class HistorySettings(BaseModel):
    """`[history]`: the run store every run and verdict is recorded in (docs/history.md)."""

    model_config = ConfigDict(extra="forbid")

    # A file path, sqlite:///PATH or postgresql://...; "off" records nothing. None: an
    # SQLite file under EVALCTL_HOME. Honoured only from the trusted evalctl.toml: a file
    # that came with the suites must not choose where their runs are sent.
    store: str | None = None
    # Where `evalctl view` is served, for links from report.html (None: no links).
    view_url: str | None = None


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
    # llama.cpp threads for the local daemon's generation; default: the physical cores this
    # process may use, less busy ones. EVALCTL_LOCAL_THREADS overrides it.
    local_threads: int | None = Field(default=None, ge=1)
    # Its threads for prompt evaluation; default: as many as generation gets.
    # EVALCTL_LOCAL_THREADS_BATCH overrides it (docs/hardware.md, "Threads").
    local_threads_batch: int | None = Field(default=None, ge=1)
    # Layers of the local model to offload to a GPU: -1 every one, 0 none. Default: every
    # one where the llama.cpp build can offload (CUDA, Metal), else none.
    # EVALCTL_LOCAL_GPU_LAYERS overrides it.
    local_gpu_layers: int | None = Field(default=None, ge=-1)
    # Requests the local daemon serves at once, each on its own context and its share of
    # the threads; default: the run's -j. EVALCTL_LOCAL_PARALLEL overrides it.
    local_parallel: int | None = Field(default=None, ge=1)
    # The GGUF (a manifest name or a path) the local daemon embeds with; default: the served
    # model. Verified by SHA256 like it. EVALCTL_LOCAL_EMBEDDING_MODEL overrides it.
    local_embedding_model: str | None = None
    # Suites `evalctl run` runs when no --suite is given; empty means every suite found.
    default_suites: list[str] = Field(default_factory=list)
    # A case's time limit when neither --timeout nor the suite or case sets one; on the
    # local provider only a floor, raised to fit the measured speed (runner.timelimit).
    case_timeout_s: float = 120.0
    min_pass_rate: float = 0.5
    # Samples per case `evalctl baseline` takes when it runs the cases itself and no
    # --samples is given (docs/gating.md, "Sampled baselines"); 1: not sampled.
    baseline_samples: int = Field(default=1, ge=1)
    # How `evalctl compare` gates when no --gate / --alpha is given (docs/gating.md,
    # "Gating with `compare`"): `strict` suits one machine and one build, where decoding is
    # deterministic.
    compare_gate: Literal["statistical", "strict"] = "statistical"
    compare_alpha: float = Field(default=0.05, gt=0, lt=1)
    # Plugin modules to load, from the directory holding evalctl.toml first, then sys.path.
    plugins: list[str] = Field(default_factory=list)
    providers: ProviderDefaults = Field(default_factory=ProviderDefaults)
    # Model name (or name prefix) -> price; merged over evalctl.cost.DEFAULT_PRICES.
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    gate: GateSettings = Field(default_factory=GateSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    # `[matrix]`: several providers, models or prompt variants in one run; None: one cell.
    matrix: MatrixSettings | None = None
    # Environment variables whose values are redacted from every file written and every
    # line printed, beyond those whose names look secret (evalctl.secrets).
    redact_env: list[str] = Field(default_factory=list)
    # The most a tool may return (command stdout, a python tool's JSON), in bytes, unless its
    # declaration sets `max_output_bytes`; past it the call is a tool error.
    tool_output_limit: int = Field(default=DEFAULT_TOOL_OUTPUT_LIMIT, ge=1)
    # Files a suite names (`cases_from`, `fixture`) may lie outside its project; not honoured
    # under --no-tools-exec / EVALCTL_NO_TOOLS_EXEC (evalctl.userpaths, docs/security.md).
    allow_outside_paths: bool = False
    # The most evalctl reads of any one file, in bytes; EVALCTL_MAX_FILE_BYTES overrides it.
    max_file_bytes: int = Field(default=userfiles.DEFAULT_MAX_FILE_BYTES, ge=1)
    # The budget of one `{{ var }}` template's render: seconds, and characters of output (and
    # of any one string or list it builds); past it `validate` and `run` refuse the template
    # (evalctl.template_budget, docs/security.md).
    template_time_s: float = Field(default=template_budget.DEFAULT.time_s, gt=0)
    template_max_chars: int = Field(default=template_budget.DEFAULT.max_chars, ge=1)
    history: HistorySettings = Field(default_factory=HistorySettings)

    @property
    def config_file(self) -> Path | None:
        return self._config_file

    _private_home: Path | None = PrivateAttr(default=None)

    def private_home(self) -> Path:
        """The directory evalctl keeps its state in (created on first use): see
        `private_home_for`. Cached, so one process settles on one directory."""
        if self._private_home is None:
            self._private_home = private_home_for(self.home)
        return self._private_home

    @property
    def run_dir(self) -> Path:
        return self.private_home() / "run"

    @property
    def logs_dir(self) -> Path:
        return self.private_home() / "logs"


def load_settings(
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    suite_paths: Sequence[Path] = (),
) -> Settings:
    """Read `evalctl.toml` (if present) and apply environment overrides. `suite_paths`: the
    suite files and directories named on the command line, where the file is looked for
    when the working directory has none (`config_for`)."""
    env = os.environ if env is None else env
    base = cwd or Path.cwd()
    data: dict[str, object] = {}
    path = config_for(base, suite_paths) or base / CONFIG_FILE
    if path.exists():
        data = userfiles.read_toml(path, what="settings file")
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise userfiles.validation_error(exc.errors(), file=path) from None
    if path.is_file():
        settings._config_file = path
        if path.parent != base:
            _rebase(settings, path.parent)
    secrets.configure(settings.redact_env)
    template_budget.configure(settings.template_time_s, settings.template_max_chars)
    if env.get("EVALCTL_MAX_FILE_BYTES"):
        variable = "EVALCTL_MAX_FILE_BYTES"
        settings.max_file_bytes = _positive_int(env[variable], variable)
    userfiles.set_max_file_bytes(settings.max_file_bytes)
    userpaths.allow_from_config(settings.allow_outside_paths)
    if env.get("EVALCTL_HOME"):
        settings.home = Path(env["EVALCTL_HOME"]).expanduser()
    if env.get("EVALCTL_LOCAL_MODEL"):
        settings.local_model = env["EVALCTL_LOCAL_MODEL"]
    if env.get("EVALCTL_GEMINI_BASE_URL"):
        settings.providers.gemini_base_url = env["EVALCTL_GEMINI_BASE_URL"]
    return settings


def _positive_int(value: str, name: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise BadInputError(f"{value!r} is not a whole number above 0", field=name)
    return number


def config_for(cwd: Path, suite_paths: Sequence[Path] = ()) -> Path | None:
    """The one rule: the `evalctl.toml` found from the working directory (`find_config`);
    when there is none, the one found from the first suite file or directory named on the
    command line that has one (from a file's own directory, upward likewise)."""
    found = find_config(cwd)
    for named in suite_paths:
        if found is not None:
            break
        target = named if named.is_absolute() else cwd / named
        found = find_config(target if target.is_dir() else target.parent)
    return found


def find_config(start: Path) -> Path | None:
    """The `evalctl.toml` nearest above `start` (itself included), searching no higher than
    the repository's root, so a stray file above a checkout is never read."""
    for directory in (start, *start.absolute().parents):
        candidate = directory / CONFIG_FILE
        if candidate.is_file():
            return candidate if directory == start else candidate.absolute()
        if (directory / ".git").exists():
            return None
    return None


def _rebase(settings: Settings, project_dir: Path) -> None:
    """Relative paths in a project's evalctl.toml name places in the project, wherever in it
    the command runs."""
    for name in ("cases_dir", "baselines_dir", "results_dir", "home"):
        value = getattr(settings, name)
        if not value.is_absolute():
            setattr(settings, name, project_dir / value)


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) with mode 0700 if missing. An existing directory keeps its
    mode: evalctl never loosens or tightens a directory it did not create (the private home
    above these subdirectories is what keeps other users out)."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise _home_error(path, exc) from None
    return path


HOME_HINT = "set EVALCTL_HOME to a directory you can write (it is created 0700 if missing)"


def private_home_for(configured: Path) -> Path:
    """Where evalctl keeps its state, given EVALCTL_HOME (or ~/.evalctl).

    - Missing: evalctl creates it, mode 0700, and uses it.
    - An existing directory of this user with mode 0700: used as it is.
    - Any other existing directory (another owner, or other permission bits, such as a
      1777 /tmp): a private `evalctl-<uid>/` inside it (0700) is used instead. The
      directory's own mode is never changed: as root, chmod'ing EVALCTL_HOME=/tmp to 0700
      would break /tmp for everyone.
    - Not a directory, or not creatable (read-only, no permission): InfraError, exit 3.
    """
    uid = os.getuid()
    try:
        info = os.stat(configured)
    except FileNotFoundError:
        return _create_private(configured, parents=True)
    except OSError as exc:
        raise _home_error(configured, exc) from None
    if not stat.S_ISDIR(info.st_mode):
        raise InfraError(
            f"EVALCTL_HOME {configured} exists but is not a directory",
            hint=f"remove that file, or {HOME_HINT}",
        )
    if info.st_uid == uid and stat.S_IMODE(info.st_mode) == 0o700:
        return configured
    sub = configured / f"evalctl-{uid}"
    try:
        sub_info = os.lstat(sub)
    except FileNotFoundError:
        return _create_private(sub, parents=False)
    except OSError as exc:
        raise _home_error(sub, exc) from None
    if (
        stat.S_ISDIR(sub_info.st_mode)
        and sub_info.st_uid == uid
        and stat.S_IMODE(sub_info.st_mode) == 0o700
    ):
        return sub
    raise InfraError(
        f"{sub} exists but is not a private (0700) directory of yours",
        hint=f"remove it, or {HOME_HINT}",
    )


def _create_private(path: Path, *, parents: bool) -> Path:
    if parents:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _home_error(path.parent, exc) from None
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        # Another evalctl created it a moment ago: judge it like any existing directory.
        return private_home_for(path) if parents else _check_existing_sub(path)
    except OSError as exc:
        raise _home_error(path, exc) from None
    return path


def _check_existing_sub(sub: Path) -> Path:
    info = os.lstat(sub)
    if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
        return sub
    raise InfraError(f"{sub} exists but is not a directory of yours", hint=HOME_HINT)


def _home_error(path: Path, exc: OSError) -> InfraError:
    return InfraError(f"cannot create {path}: {exc.strerror or exc}", hint=HOME_HINT)
