"""The llama.cpp that `make setup` builds runs on the CPU it was built on, AMX or not.

ggml's AMX matmul (llama-cpp-python 0.3.36) dies with SIGILL on Intel CPUs with AMX, and
`-march=native` compiles it in on exactly those CPUs; `make setup` removes `__AMX_INT8__`, the
one macro that does. These tests hold on any machine: the compiler is asked what the build's
flags leave defined on a Sapphire Rapids target whatever this CPU is, and the installed
library and build are checked for AMX where one is installed. Also: the native-crash hint,
and the self-check that ends `make setup`.
"""

from __future__ import annotations

import re
import shlex
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from evalctl.lifecycle import native, selfcheck
from tests.conftest import REPO

AMX_TARGET = "sapphirerapids"
# Every AMX instruction's mnemonic starts with one of these (objdump's AT&T syntax).
TILE_MNEMONIC = re.compile(r"\t(tile\w+|tdp\w+|ldtilecfg|sttilecfg|tcmmi\w+|tcmmr\w+)\b")


def _cmake_args(*make_args: str) -> list[str]:
    out = subprocess.run(
        ["make", "-s", "--no-print-directory", "llama-cmake-args", *make_args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return shlex.split(out)


def _flags(args: list[str], variable: str) -> list[str]:
    prefix = f"-D{variable}="
    values = [a[len(prefix) :] for a in args if a.startswith(prefix)]
    assert len(values) == 1, args
    return shlex.split(values[0])


def _macros(compiler: str, flags: list[str], language: str) -> set[str]:
    out = subprocess.run(
        [compiler, f"-march={AMX_TARGET}", *flags, "-dM", "-E", "-x", language, "/dev/null"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {line.split()[1] for line in out.splitlines() if line.startswith("#define ")}


needs_gcc = pytest.mark.skipif(
    shutil.which("gcc") is None or shutil.which("g++") is None, reason="needs gcc and g++"
)


@needs_gcc
@pytest.mark.parametrize("backend", ["cpu", "cuda", "metal"])
def test_the_build_flags_leave_amx_out_and_keep_the_rest(backend: str) -> None:
    args = _cmake_args(f"LLAMA_BACKEND={backend}")
    for variable, compiler, language in (
        ("CMAKE_C_FLAGS", "gcc", "c"),
        ("CMAKE_CXX_FLAGS", "g++", "c++"),
    ):
        macros = _macros(compiler, _flags(args, variable), language)
        assert "__AMX_INT8__" not in macros, (backend, variable)
        # Every other native feature stays: the AVX-512 family, VNNI, BF16.
        assert {"__AVX512F__", "__AVX512VNNI__", "__AVX512BF16__", "__AVX2__"} <= macros


@needs_gcc
def test_the_check_sees_amx_where_the_flags_do_not_remove_it() -> None:
    # Without the build's flags the same target defines the macro that compiles ggml's AMX
    # path in: the test above would fail on a build that dropped them.
    assert "__AMX_INT8__" in _macros("gcc", [], "c")


def _installed_lib() -> Path | None:
    try:
        import llama_cpp
    except ImportError:
        return None
    lib = Path(llama_cpp.__file__).parent / "lib"
    found = sorted(lib.glob("libggml-cpu*.so")) if lib.is_dir() else []
    return found[0] if found else None


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump (binutils)")
def test_the_installed_cpu_backend_holds_no_tile_instruction() -> None:
    lib = _installed_lib()
    if lib is None:
        pytest.skip("llama-cpp-python is not installed with a separate CPU backend library")
    text = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", str(lib)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "ggml_" in text  # a real disassembly, not an empty one
    found = sorted({m.group(1) for m in TILE_MNEMONIC.finditer(text)})
    assert found == [], f"{lib} holds AMX tile instructions: {found}"


def test_the_tile_pattern_matches_objdumps_amx_mnemonics() -> None:
    for line in ("\ttilezero %tmm4", "\ttileloadd (%rax,%rbx,1),%tmm0", "\tldtilecfg (%rsp)"):
        assert TILE_MNEMONIC.search(line)
    assert not TILE_MNEMONIC.search("\tvpdpbusd %zmm1,%zmm2,%zmm3")


def test_the_installed_build_reports_no_amx() -> None:
    probe = native.probe_build()
    if probe is None:
        pytest.skip("llama-cpp-python is not installed")
    assert probe.died_of is None
    assert "AMX_INT8" not in probe.features


AVX512_CPU = frozenset({"pni", "ssse3", "avx", "avx2", "fma", "f16c", "avx512f", "avx512_vnni"})


def test_a_sigill_with_nothing_missing_is_not_blamed_on_another_cpu() -> None:
    build = native.BuildProbe(features=("SSE3", "AVX", "AVX2", "AVX512", "REPACK"))
    hint = native.explain(build, AVX512_CPU)
    assert "not an instruction-set mismatch" in hint
    assert "another CPU" not in hint
    assert "AVX512" in hint and "avx512f" in hint and "docs/hardware.md" in hint


def test_a_sigill_names_the_features_this_cpu_lacks() -> None:
    build = native.BuildProbe(features=("AVX", "AVX2", "AVX512", "AVX512_VNNI"))
    hint = native.explain(build, frozenset({"avx", "avx2", "fma"}))
    assert "built for another CPU" in hint
    assert "AVX512, AVX512_VNNI" in hint
    assert "make setup" in hint


def test_a_sigill_of_an_amx_build_on_an_amx_cpu_names_ggmls_amx_path() -> None:
    build = native.BuildProbe(features=("AVX2", "AVX512", "AMX_INT8"))
    hint = native.explain(build, AVX512_CPU | {"amx_int8", "amx_tile"})
    assert "AMX" in hint and "#26954" in hint and "another CPU" not in hint


def test_a_build_that_dies_being_loaded_was_built_elsewhere() -> None:
    hint = native.explain(native.BuildProbe(died_of=signal.SIGILL), AVX512_CPU)
    assert "SIGILL" in hint and "another CPU" in hint


def test_cpu_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 amx_int8\n\nprocessor\t: 1\n")
    assert native.cpu_flags(info) == frozenset({"fpu", "avx2", "amx_int8"})
    assert native.cpu_flags(tmp_path / "absent") is None


def test_a_self_check_that_dies_of_sigill_stops_with_the_signal_and_the_way_out() -> None:
    check = selfcheck.run_child(module="tests.sigill_child")
    assert check.signal == signal.SIGILL
    status, text = selfcheck.report(check)
    assert status == 1
    assert "SIGILL" in text and "loading the model or generating" in text
    assert "this CPU's flags that matter" in text
    assert "make setup" in text


@pytest.mark.model
def test_the_self_check_passes_on_the_embedded_model() -> None:
    status, text = selfcheck.report(selfcheck.run_child())
    assert status == 0, text
    assert "embedded a sentence" in text and "AMX_INT8" not in text
