"""What machine a run happened on: recorded in every result so numbers can be compared."""

from __future__ import annotations

import os
import platform
import socket
from importlib import metadata

import psutil

from evalctl import __version__
from evalctl.results.models import Environment
from evalctl.server.hardware import cpu_model


def llama_cpp_version() -> str | None:
    # Read from package metadata: importing llama_cpp would load the native library.
    try:
        return metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        return None


def capture() -> Environment:
    return Environment(
        host=socket.gethostname(),
        platform=platform.platform(),
        cpu=cpu_model(),
        cpu_count=os.cpu_count() or 1,
        ram_bytes=psutil.virtual_memory().total,
        python=platform.python_version(),
        evalctl=__version__,
        llama_cpp=llama_cpp_version(),
    )
