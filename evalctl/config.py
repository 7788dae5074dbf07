"""Settings: `evalctl.toml` (optional), then environment variables.

`evalctl.toml` is looked for in the working directory, then in each directory above it up to
the repository's root (the first holding `.git`), as git finds its own directory: a command
run from a subdirectory of the project reads the project's settings. When there is none, the
same search starts from the suite files named on the command line (`config_for`). The
directory holding it is the project directory: the `plugins` it names are imported from there
first (`evalctl.plugin_loader.configure`), and its relative paths (`cases_dir`, ...) start
there.

Trust (docs/security.md, "Which evalctl.toml is trusted"). Only the file found from the
working directory is trusted (`Settings.trusted`). One discovered from a suite's directory
came with the suites, perhaps from a pull request: where no code may run (--no-tools-exec,
EVALCTL_NO_TOOLS_EXEC, and the read-only commands) it gives only `SUITE_LEVEL` settings and
the rest is ignored (`Settings.ignored`, which the CLI prints); elsewhere its `results_dir`
and `baselines_dir` must stay inside its project. Either file is refused when another user
could have written it (`check_safe`), as git refuses a repository it does not own, unless
EVALCTL_SAFE_DIRECTORIES allows its directory."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from evalctl import secrets, template_budget, userfiles, userpaths
from evalctl.errors import BadInputError, InfraError

CONFIG_FILE = "evalctl.toml"
# Directories whose evalctl.toml is read whoever owns it and whoever may write there, as
# git's safe.directory: separated by os.pathsep; `*` allows every one (docs/security.md).
SAFE_DIRECTORIES_ENV = "EVALCTL_SAFE_DIRECTORIES"
# What an evalctl.toml discovered from a suite's directory may still set where no code may
# run: settings that import nothing, open no file, send nothing anywhere and choose no place
# to write. A setting added later is left out until someone decides it belongs here.
SUITE_LEVEL = frozenset(
    {
        "default_suites",
        "case_timeout_s",
        "min_pass_rate",
        "baseline_samples",
        "compare_gate",
        "compare_alpha",
        "prices",
        "judge",
        "redact_env",
        "tool_output_limit",
    }
)
# Where a discovered file may set them, these still stay inside its project.
OUTPUT_DIRS = ("results_dir", "baselines_dir")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# `${VAR}` in a suite's text, as every place that expands one reads it.
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
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
    timeout_s: float = Field(default=120.0, gt=0, le=userfiles.MAX_TIMEOUT_S)


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


class SecuritySettings(BaseModel):
    """`[security]`: what suites may do where their files are not trusted (docs/security.md)."""

    model_config = ConfigDict(extra="forbid")

    # The environment variables a suite's `${VAR}` (an http target's URL and headers, a
    # `requires` condition) may name under --no-tools-exec; any other is refused, so a pull
    # request cannot send a key it finds in the environment to a URL of its own. Honoured
    # only from the trusted evalctl.toml (`Settings.allowed_env`).
    allow_env: list[str] = Field(default_factory=list)

    @field_validator("allow_env")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not ENV_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return names


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
    case_timeout_s: float = Field(default=120.0, gt=0, le=userfiles.MAX_TIMEOUT_S)
    min_pass_rate: float = 0.5
    # Samples per case `evalctl baseline` takes when it runs the cases itself and no
    # --samples is given (docs/gating.md, "Sampled baselines"); 1: not sampled.
    baseline_samples: int = Field(default=1, ge=1, le=userfiles.MAX_SAMPLES)
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
    security: SecuritySettings = Field(default_factory=SecuritySettings)

    # False when the evalctl.toml was discovered from a suite's directory, not found from the
    # working directory (`load_settings`); no file at all is trusted: defaults are evalctl's.
    _trusted: bool = PrivateAttr(default=True)
    # The keys of a discovered file that were ignored, in the file's order.
    _ignored: tuple[str, ...] = PrivateAttr(default=())

    @property
    def config_file(self) -> Path | None:
        return self._config_file

    @property
    def trusted(self) -> bool:
        """Whether every value here is the user's own: evalctl's defaults, the environment,
        or the evalctl.toml found from the working directory. False for one discovered from
        a suite's directory, which came with the suites (and may come from a pull request)."""
        return self._trusted

    @property
    def ignored(self) -> tuple[str, ...]:
        """Keys of a discovered evalctl.toml that were not applied, since no code may run
        here (`SUITE_LEVEL` lists what such a file may set); the command says so on stderr."""
        return self._ignored

    @property
    def allowed_env(self) -> frozenset[str]:
        """The variables a suite's `${VAR}` may name where no code may run
        (`[security] allow_env`, from the trusted file only): see `env_refusal`."""
        return frozenset(self.security.allow_env) if self._trusted else frozenset()

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
    *,
    code_may_run: bool = False,
) -> Settings:
    """Read `evalctl.toml` (if present) and apply environment overrides. `suite_paths`: the
    suite files and directories named on the command line, where the file is looked for
    when the working directory has none (`config_for`). `code_may_run`: True only where the
    suites' code may run (`run`, `baseline` without --no-tools-exec); elsewhere a discovered
    file gives only its `SUITE_LEVEL` settings. EVALCTL_NO_TOOLS_EXEC counts too, whatever
    the caller says."""
    env = os.environ if env is None else env
    base = cwd or Path.cwd()
    data: dict[str, object] = {}
    located = locate_config(base, suite_paths)
    path, trusted = located if located is not None else (base / CONFIG_FILE, True)
    restricted = not code_may_run or userpaths.tools_exec_refused(env)
    ignored: tuple[str, ...] = ()
    if path.exists():
        check_safe(path, env)
        data = userfiles.read_toml(path, what="settings file")
        if not trusted and restricted:
            ignored = tuple(key for key in data if key not in SUITE_LEVEL)
            data = {key: value for key, value in data.items() if key in SUITE_LEVEL}
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise userfiles.validation_error(exc.errors(), file=path) from None
    if path.is_file():
        settings._config_file = path
        settings._trusted = trusted
        settings._ignored = ignored
        # A discovered file that may set no directory leaves them where the command runs.
        if path.parent != base and (trusted or not restricted):
            _rebase(settings, path.parent)
        if not trusted and not restricted:
            _confine_outputs(settings, path, data)
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


def _confine_outputs(settings: Settings, config: Path, data: Mapping[str, object]) -> None:
    """A discovered file's `results_dir` and `baselines_dir` stay inside its project: a
    suite's directory must not choose where another project's baselines are replaced."""
    project = config_project(config).resolve()
    for name in OUTPUT_DIRS:
        if name not in data:
            continue
        value: Path = getattr(settings, name)
        where = (config.parent / value).resolve()
        if where != project and project not in where.parents:
            raise BadInputError(
                f"{value} is outside the project {project} of this evalctl.toml, which was "
                "found from a suite's directory, not from the working directory",
                file=str(config),
                field=name,
                hint="name a directory inside the project, or run evalctl from the project "
                "directory (the evalctl.toml found from there is trusted)",
            )


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
    located = locate_config(cwd, suite_paths)
    return located[0] if located is not None else None


def locate_config(cwd: Path, suite_paths: Sequence[Path] = ()) -> tuple[Path, bool] | None:
    """`config_for`'s file, and whether it is trusted: True when found from the working
    directory, False when discovered from a suite's."""
    found = find_config(cwd)
    if found is not None:
        return found, True
    for named in suite_paths:
        # Normalized: `../pr/cases` must not be searched upward through the working directory.
        target = Path(os.path.abspath(named if named.is_absolute() else cwd / named))
        found = find_config(target if target.is_dir() else target.parent)
        if found is not None:
            return found, False
    return None


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


def config_project(config: Path) -> Path:
    """The project an evalctl.toml belongs to: the nearest directory at or above its own
    holding `.git`, else its own directory."""
    own = config.resolve().parent
    for directory in (own, *own.parents):
        if (directory / ".git").exists():
            return directory
    return own


def check_safe(config: Path, env: Mapping[str, str] | None = None) -> None:
    """Refuse (exit 2) an evalctl.toml another user could have written, as git refuses a
    repository another user owns (`safe.directory`): the file, and each directory from its
    own up to its project (`config_project`), must be owned by this user or root, and none
    writable by every user. EVALCTL_SAFE_DIRECTORIES lists directories whose files are read
    anyway (each one and what lies below it; `*`: all)."""
    env = os.environ if env is None else env
    config = config.resolve()
    if _allowed_anyway(config.parent, env.get(SAFE_DIRECTORIES_ENV, "")):
        return
    uid = os.getuid()
    project = config_project(config)
    chain = [config.parent, *config.parent.parents]
    for path in [config, *chain[: chain.index(project) + 1]]:
        try:
            info = os.stat(path)
        except OSError:
            continue  # a file that cannot be read is refused by the reader, with its reason
        reason = None
        if info.st_uid not in (uid, 0):
            reason = f"{path} is owned by uid {info.st_uid}, not by you (uid {uid}) or root"
        elif info.st_mode & stat.S_IWOTH:
            mode = stat.S_IMODE(info.st_mode)
            reason = f"{path} is writable by every user (mode {mode:o})"
        if reason is not None:
            raise BadInputError(
                f"detected dubious ownership: {reason}, so another user could have written "
                "these settings (and the plugins they import)",
                file=str(config),
                hint=f"if you trust it, add its directory to {SAFE_DIRECTORIES_ENV}: "
                f"export {SAFE_DIRECTORIES_ENV}={config.parent} (several: separated by "
                f"'{os.pathsep}'; '*' trusts every directory); docs/security.md",
            )


def _allowed_anyway(directory: Path, listed: str) -> bool:
    entries = [entry for entry in listed.split(os.pathsep) if entry]
    if "*" in entries:
        return True
    here = directory.resolve()
    for entry in entries:
        allowed = Path(entry).expanduser().resolve()
        if here == allowed or allowed in here.parents:
            return True
    return False


def env_refusal(
    text: str, allowed: Collection[str], *, file: str | None, field: str
) -> BadInputError | None:
    """Where no code may run, the `${VAR}` in `text` (a suite's URL, header, condition...)
    may name only the `allowed` variables (`Settings.allowed_env`): the error naming the
    first other one, else None. Use it wherever evalctl expands a suite's `${VAR}`."""
    for match in ENV_REFERENCE.finditer(text):
        name = match.group(1)
        if name not in allowed:
            return BadInputError(
                f"${{{name}}} names an environment variable that suites may not read here "
                "(--no-tools-exec or EVALCTL_NO_TOOLS_EXEC)",
                file=file,
                field=field,
                hint=f"allow it by name in the working directory's evalctl.toml: [security] "
                f'allow_env = ["{name}"] (docs/security.md)',
            )
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
