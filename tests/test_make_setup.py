"""`make setup LLAMA_BACKEND=cpu|cuda|metal`: each backend's CMAKE_ARGS, a GPU build that pip's
wheel cache (which holds the CPU build) cannot satisfy, and a rebuild of llama.cpp exactly
when the backend changes. The Makefile runs in a copy, with a fake `python` that logs what
it was asked instead of installing anything."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")

FAKE_PYTHON = '#!/bin/sh\necho "CMAKE_ARGS=$CMAKE_ARGS $*" >> "$(dirname "$0")/../calls.log"\n'
# Long ago, so any file make writes now is newer; the venv's files are set to later instants
# step by step, so that no test depends on the file system's timestamp resolution.
OLD = 1_500_000_000


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(REPO / name, tmp_path / name)
        os.utime(tmp_path / name, (OLD, OLD))
    fake = tmp_path / "venv" / "bin" / "python"
    fake.parent.mkdir(parents=True)
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    return tmp_path


def _dry(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-n", "setup", "VENV=venv", *args],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )


def _llama_line(output: str) -> str:
    lines = [line for line in output.splitlines() if "install" in line and "llama-cpp" in line]
    assert len(lines) == 1, output
    return lines[0]


def test_cpu_is_the_default_and_may_use_the_wheel_cache(project: Path) -> None:
    line = _llama_line(_dry(project).stdout)
    assert 'CMAKE_ARGS="-DLLAVA_BUILD=OFF"' in line
    assert "--no-cache-dir" not in line and "--no-binary" not in line


@pytest.mark.parametrize(("backend", "flag"), [("cuda", "GGML_CUDA"), ("metal", "GGML_METAL")])
def test_a_gpu_backend_builds_from_source_without_the_cache(
    project: Path, backend: str, flag: str
) -> None:
    line = _llama_line(_dry(project, f"LLAMA_BACKEND={backend}").stdout)
    assert f'CMAKE_ARGS="-DLLAVA_BUILD=OFF -D{flag}=on"' in line
    assert "--no-cache-dir" in line and "--no-binary llama-cpp-python" in line
    assert "--force-reinstall" in line  # a CPU build already in the venv is replaced


def test_an_unknown_backend_is_refused(project: Path) -> None:
    proc = _dry(project, "LLAMA_BACKEND=rocm")
    assert proc.returncode != 0
    assert "LLAMA_BACKEND must be cpu, cuda or metal, not 'rocm'" in proc.stderr


def test_llama_cpp_is_rebuilt_when_the_backend_changes_and_only_then(project: Path) -> None:
    log = project / "venv" / "calls.log"

    def setup(step: int, backend: str) -> list[str]:
        log.write_text("")
        proc = subprocess.run(
            ["make", "setup", "VENV=venv", f"LLAMA_BACKEND={backend}"],
            cwd=project,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        for path in (project / "venv").iterdir():
            if path.is_file():
                os.utime(path, (OLD + 10 * step, OLD + 10 * step))
        return [line for line in log.read_text().splitlines() if "llama-cpp-python==" in line]

    first = setup(1, "cpu")
    assert len(first) == 1 and "-DGGML" not in first[0]
    assert setup(2, "cpu") == []  # the same backend: nothing to rebuild
    cuda = setup(3, "cuda")
    assert len(cuda) == 1 and "-DGGML_CUDA=on" in cuda[0]
    assert setup(4, "cuda") == []
    back = setup(5, "cpu")
    assert len(back) == 1 and "-DGGML" not in back[0] and "--force-reinstall" in back[0]
