"""`python -m evalctl.server ...`: how the lifecycle manager spawns the daemon."""

from __future__ import annotations

import os
import sys

# llama_cpp first, before anything imports grpc: it loads llama.cpp's native libraries. On
# a CUDA build of llama-cpp-python (0.3.36, measured), a process that imported grpc first
# segfaults as soon as it loads a model, with or without a gRPC server running; the other
# order works on the CPU and with every layer on the GPU. tests/test_daemon_entry.py pins
# this order.
import llama_cpp  # noqa: F401  (imported for its side effect, before grpc)

from evalctl.server.daemon import Daemon
from evalctl.server.options import DaemonOptions, parse_argv


def run(options: DaemonOptions) -> None:
    """Serve, then exit the process with the daemon's status."""
    code = Daemon(options).run()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: the socket, lock and log are already closed, and
    # finalizers of gRPC's and llama.cpp's native threads can hang or crash at exit.
    os._exit(code)


if __name__ == "__main__":
    run(parse_argv(sys.argv[1:]))
