"""`evalctl --help` must not import vendor SDKs (they cost seconds and may be missing)."""

from __future__ import annotations

import subprocess
import sys

VENDOR_MODULES = ("anthropic", "google.genai", "openai", "llama_cpp", "grpc", "mcp", "mcp_types")


def test_help_imports_no_vendor_sdk() -> None:
    probe = (
        "import sys\n"
        "from evalctl.cli import app\n"
        "sys.argv = ['evalctl', '--help']\n"
        "try:\n"
        "    app.main()\n"
        "except SystemExit:\n"
        "    pass\n"
        f"loaded = [m for m in {VENDOR_MODULES!r} if m in sys.modules]\n"
        "print('LOADED=' + ','.join(loaded))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert "Usage" in out
    assert out.strip().endswith("LOADED=")


def _help_with(registration: str) -> str:
    probe = (
        "import typer\n"
        "from typer.testing import CliRunner\n"
        "from evalctl.cli import app, commands\n"
        f"{registration}\n"
        "print(CliRunner().invoke(app.app, ['--help'], terminal_width=100).output)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout


def test_help_lists_the_real_commands_without_importing_them() -> None:
    lazy = _help_with("commands.register(app.app, ['--help'])")
    real = _help_with("commands.register_all(app.app)")
    assert "crash-test" in lazy and "server" in lazy
    # The stand-ins' one-line help is the real commands' help, in the same order.
    assert lazy == real


def test_help_imports_nothing_beyond_typer_and_rich() -> None:
    probe = (
        "import sys\n"
        "from evalctl.cli import app\n"
        "sys.argv = ['evalctl', '--help']\n"
        "try:\n"
        "    app.main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('pydantic', 'evalctl.config', 'evalctl.runner', 'evalctl.results')\n"
        "print('LOADED=' + ','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().endswith("LOADED=")


def test_a_named_command_gets_its_real_module() -> None:
    from evalctl.cli import commands

    assert commands.requested(["--version"]) is None
    assert commands.requested(["run", "--suite", "x"]) == "run"
    out = subprocess.run(
        [sys.executable, "-m", "evalctl.cli", "crash-test", "--help"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "--mid-generation" in out.stdout
