"""The `evalctl` entry point. Subcommands live one per module; only the module of the command
being run is imported (evalctl.cli.commands), and each keeps its vendor imports inside
functions, so `evalctl --help` imports typer and rich and little else. The output helpers
(pydantic, the Rich console) are imported when a command or an error needs them."""

from __future__ import annotations

import errno
import os
import sys
from typing import Annotated, NoReturn

import typer

from evalctl import __version__
from evalctl.cli.crashlog import save_traceback
from evalctl.cli.help_format import TidyGroup
from evalctl.errors import BadInputError, EvalctlError, ExitCode, Outcome
from evalctl.secrets import redact
from evalctl.userfiles import environment_error
from evalctl.userpaths import NO_TOOLS_EXEC_ENV, tools_exec_refused
from evalctl.userpaths import reset as reset_path_rule

app = typer.Typer(
    name="evalctl",
    help="Golden-case regression testing for LLM-powered features.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Help paragraphs rewrapped to the terminal, flags without a `<bool>` placeholder.
    cls=TidyGroup,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"evalctl {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Run golden cases against a provider, score them, and gate CI on a committed baseline."""


def _register(argv: list[str]) -> None:
    from evalctl.cli import commands

    commands.register(app, argv)


def _normalize_no_tools_exec() -> None:
    """EVALCTL_NO_TOOLS_EXEC as `1` or `0`, by the one documented answer (any value but empty,
    `0`, `false`, `no`, `off`: evalctl.userpaths): the `--no-tools-exec` flag reads it as a
    boolean, which would refuse `2` or `yes please` as a bad value (exit 2) instead."""
    if NO_TOOLS_EXEC_ENV in os.environ:
        os.environ[NO_TOOLS_EXEC_ENV] = "1" if tools_exec_refused() else "0"


def main() -> None:
    _register(sys.argv[1:])
    # The path rule's opt-ins are per command: an earlier in-process call's are forgotten.
    reset_path_rule()
    _normalize_no_tools_exec()
    as_json = "--json" in sys.argv[1:]
    output = sys.modules.get("evalctl.cli.output")
    if output is not None:
        # Loaded by the command's module: forget what an earlier in-process call printed.
        output.reset_emitted()
    try:
        # Without standalone mode Typer returns what the command returned (an `Outcome`, or
        # None for plain success), and the code of a `typer.Exit` (--help, --version).
        result = app(standalone_mode=False)
    except EvalctlError as exc:
        _fail(exc, as_json)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        if as_json:
            from evalctl.cli.output import error_object, print_error_json

            print_error_json(error_object(int(ExitCode.INTERRUPTED), "interrupted"))
        sys.exit(int(ExitCode.INTERRUPTED))
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(int(ExitCode.INTERRUPTED))
    except typer.TyperException as exc:
        # Usage errors (unknown option, bad value) from Typer's bundled click.
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            sys.stderr.write(f"error: {exc.format_message()}\n")
        if as_json:
            from evalctl.cli.output import error_object, print_error_json

            print_error_json(error_object(int(ExitCode.BAD_INPUT), exc.format_message()))
        sys.exit(int(ExitCode.BAD_INPUT))
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            _fail(_name_too_long(exc, sys.argv[1:]), as_json)
        # A full disk, a read-only mount or missing permissions that surfaced somewhere no
        # library code anticipated: still the machine's to fix (exit 3), not a bug.
        error = environment_error(exc, "use")
        if error is None:
            _internal(exc, as_json)
        _fail(error, as_json)
    except RecursionError as exc:
        # Input nested deeply enough to defeat recursive code: `userfiles` stops that at the
        # door, so reaching here is a bug, saved like any other.
        _internal(exc, as_json)
    except Exception as exc:
        _internal(exc, as_json)
    if isinstance(result, Outcome):
        _end(result, as_json)
    sys.exit(result if isinstance(result, int) else int(ExitCode.OK))


# Flags whose value is a path: a name too long under one of them is named by its flag.
_PATH_FLAGS = frozenset(
    {"--out", "-o", "--script", "--cases", "--junit", "--markdown", "--html", "--baseline"}
    | {"--resume", "--from"}
)


def _name_too_long(exc: OSError, argv: list[str]) -> BadInputError:
    """A name longer than the file system takes is always one the user gave (on the command
    line, or in a file naming files): bad input, with the flag that gave it where the name is
    (or lies under) a path flag's value."""
    name = os.fsdecode(exc.filename) if exc.filename is not None else None
    field = None
    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        option, given = (flag, value) if eq else (argv[i - 1] if i else "", arg)
        if name is None or option not in _PATH_FLAGS or not given:
            continue
        if name == given or name.startswith(given.rstrip("/") + "/") or name.endswith(given):
            field = option
            break
    return BadInputError(
        "file name too long: a file system takes at most 255 bytes a name and 4,095 a path",
        file=name,
        field=field,
    )


def _end(outcome: Outcome, as_json: bool) -> NoReturn:
    """A command that ran to its end: its verdict's one line (if any) on stderr, its code."""
    if outcome.summary and outcome.exit_code != ExitCode.OK:
        from evalctl.cli.output import error_object, print_error, print_error_json

        print_error(outcome.summary, outcome.hint)
        if as_json:
            print_error_json(
                error_object(int(outcome.exit_code), outcome.summary, hint=outcome.hint)
            )
    sys.exit(int(outcome.exit_code))


def _fail(exc: EvalctlError, as_json: bool) -> NoReturn:
    from evalctl.cli.output import error_payload, print_error, print_error_json

    print_error(exc.message, exc.hint)
    if as_json:
        print_error_json(error_payload(exc))
    sys.exit(int(exc.code))


def _internal(exc: BaseException, as_json: bool) -> NoReturn:
    """The last resort: a bug. One line naming it, the traceback in a file, exit 4."""
    saved = save_traceback(exc)
    message = f"internal error: {type(exc).__name__}: {exc}"
    sys.stderr.write(redact(message) + "\n")
    where = f"traceback saved to {saved}" if saved else "the traceback could not be saved"
    sys.stderr.write(f"{where}; please report it with that file\n")
    if as_json:
        from evalctl.cli.output import error_object, print_error_json

        hint = f"traceback: {saved}" if saved else None
        print_error_json(error_object(int(ExitCode.INTERNAL), message, file=saved, hint=hint))
    sys.exit(int(ExitCode.INTERNAL))
