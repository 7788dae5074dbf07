"""The `evalctl` entry point. Subcommands live one per module and are imported here; each
module keeps its vendor imports inside functions so `evalctl --help` stays fast."""

from __future__ import annotations

import sys

import typer

from evalctl import __version__
from evalctl.cli.output import print_error
from evalctl.errors import EvalctlError, ExitCode

app = typer.Typer(
    name="evalctl",
    help="Golden-case regression testing for LLM-powered features.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"evalctl {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Run golden cases against a provider, score them, and gate CI on a committed baseline."""


def _register() -> None:
    # Imported here, not at module top, to keep the registration list in one place.
    from evalctl.cli import commands

    commands.register(app)


def main() -> None:
    _register()
    try:
        # Without standalone mode Typer returns (not raises) the code of a `typer.Exit`.
        code = app(standalone_mode=False)
    except EvalctlError as exc:
        print_error(exc)
        sys.exit(int(exc.code))
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
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
        sys.exit(int(ExitCode.BAD_INPUT))
    sys.exit(code if isinstance(code, int) else 0)
