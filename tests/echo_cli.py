"""`python -m tests.echo_cli ARGS...`: the real `evalctl` entry point in a child process, with
the test-only echo kind and `upper` tool registered (as the `echo_suite` fixture does
in-process). For tests that must signal or kill a real evalctl process."""

from __future__ import annotations

from evalctl.cli.app import main
from tests import echo_kind

echo_kind.install()

if __name__ == "__main__":
    main()
