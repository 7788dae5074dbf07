"""`evalctl --help` must not import vendor SDKs (they cost seconds and may be missing)."""

from __future__ import annotations

import subprocess
import sys

VENDOR_MODULES = ("anthropic", "google.genai", "openai", "llama_cpp", "grpc")


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
