"""`make setup LLAMA_BACKEND=cpu|cuda|metal`: each backend's CMAKE_ARGS, a llama.cpp wheel that
pip's cache (keyed by the sdist alone) can never hand back, the project's own wheel folder keyed
by everything a build comes from, and a rebuild of llama.cpp exactly when that changes. The
Makefile runs in a copy, with a fake `python` that logs what it was asked (and leaves an empty
wheel where `pip wheel` was asked for one) instead of installing anything."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")

FAKE_PYTHON = """#!/bin/sh
echo "CMAKE_ARGS=$CMAKE_ARGS $*" >> "$(dirname "$0")/../calls.log"
if [ "$3" = wheel ]; then
    while [ $# -gt 0 ]; do
        [ "$1" = -w ] && touch "$2/llama_cpp_python-0.3.36-cp311-cp311-linux_x86_64.whl"
        shift
    done
fi
"""
NO_AMX = "-DCMAKE_C_FLAGS=-U__AMX_INT8__ -DCMAKE_CXX_FLAGS=-U__AMX_INT8__"
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
        ["make", "-n", "setup", "VENV=venv", f"LLAMA_WHEELS={project / 'wheels'}", *args],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )


def _llama_line(output: str) -> str:
    # `make -n` prints a recipe line continued with backslashes as it is written.
    joined = output.replace("\\\n", " ")
    lines = [line for line in joined.splitlines() if "pip wheel" in line and "llama-cpp" in line]
    assert len(lines) == 1, output
    return lines[0]


def test_cpu_builds_without_amx_and_never_through_pips_cache(project: Path) -> None:
    line = _llama_line(_dry(project).stdout)
    assert f'CMAKE_ARGS="-DLLAVA_BUILD=OFF {NO_AMX}"' in line
    # A wheel pip cached from other flags (with AMX in it) must not come back.
    assert "--no-cache-dir" in line and "--no-binary llama-cpp-python" in line


@pytest.mark.parametrize(("backend", "flag"), [("cuda", "GGML_CUDA"), ("metal", "GGML_METAL")])
def test_a_gpu_backend_builds_without_amx_and_without_the_cache(
    project: Path, backend: str, flag: str
) -> None:
    out = _dry(project, f"LLAMA_BACKEND={backend}").stdout
    line = _llama_line(out)
    assert f'CMAKE_ARGS="-DLLAVA_BUILD=OFF {NO_AMX} -D{flag}=on"' in line
    assert "--no-cache-dir" in line and "--no-binary llama-cpp-python" in line
    install = [x for x in out.splitlines() if "install" in x and "llama_cpp_python-" in x]
    assert len(install) == 1 and "--force-reinstall" in install[0]  # a CPU build is replaced


def _wheel_dir(output: str) -> str:
    match = re.search(r"-w (\S+)\.tmp ", _llama_line(output))
    assert match, output
    return match.group(1)


def test_each_set_of_flags_has_its_own_wheel_folder(project: Path) -> None:
    cpu = _wheel_dir(_dry(project).stdout)
    assert cpu.startswith(str(project / "wheels"))
    assert _wheel_dir(_dry(project).stdout) == cpu
    assert _wheel_dir(_dry(project, "LLAMA_BACKEND=cuda").stdout) != cpu
    # The flags of the build before the AMX fix would land elsewhere than today's.
    assert _wheel_dir(_dry(project, "LLAMA_NO_AMX=").stdout) != cpu


def test_an_unknown_backend_is_refused(project: Path) -> None:
    proc = _dry(project, "LLAMA_BACKEND=rocm")
    assert proc.returncode != 0
    assert "LLAMA_BACKEND must be cpu, cuda or metal, not 'rocm'" in proc.stderr


def test_llama_cpp_is_rebuilt_when_the_backend_changes_and_only_then(project: Path) -> None:
    log = project / "venv" / "calls.log"

    def setup(step: int, backend: str) -> tuple[list[str], list[str]]:
        log.write_text("")
        proc = subprocess.run(
            [
                "make",
                "setup",
                "VENV=venv",
                f"LLAMA_WHEELS={project / 'wheels'}",
                f"LLAMA_BACKEND={backend}",
            ],
            cwd=project,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        for path in (project / "venv").iterdir():
            if path.is_file():
                os.utime(path, (OLD + 10 * step, OLD + 10 * step))
        calls = log.read_text().splitlines()
        built = [line for line in calls if "pip wheel" in line and "llama-cpp-python==" in line]
        installed = [line for line in calls if "install" in line and "llama_cpp_python-" in line]
        return built, installed

    built, installed = setup(1, "cpu")
    assert len(built) == 1 and "-DGGML" not in built[0] and len(installed) == 1
    assert setup(2, "cpu") == ([], [])  # the same backend: nothing to rebuild
    built, _ = setup(3, "cuda")
    assert len(built) == 1 and "-DGGML_CUDA=on" in built[0]
    assert setup(4, "cuda") == ([], [])
    # Back to the CPU: its wheel, kept in its folder, is installed again without a compile.
    built, installed = setup(5, "cpu")
    assert built == [] and len(installed) == 1 and "--force-reinstall" in installed[0]


def test_setup_ends_with_the_native_self_check(project: Path) -> None:
    lines = _dry(project).stdout.splitlines()
    check = [i for i, line in enumerate(lines) if "-m evalctl.lifecycle.selfcheck" in line]
    touch = [i for i, line in enumerate(lines) if line.startswith("touch venv/.setup-stamp")]
    assert len(check) == 1 and touch and check[0] < touch[0]
