"""The default llama.cpp thread count: physical cores among the CPUs this process may use."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalctl.server import threads


def _cpu(root: Path, cpu: int, package: int, core: int) -> None:
    topology = root / f"cpu{cpu}" / "topology"
    topology.mkdir(parents=True)
    (topology / "physical_package_id").write_text(f"{package}\n")
    (topology / "core_id").write_text(f"{core}\n")


def test_smt_siblings_count_as_one_core(tmp_path: Path) -> None:
    # Two cores with two hardware threads each, on one package.
    for cpu, core in enumerate([0, 1, 0, 1]):
        _cpu(tmp_path, cpu, 0, core)
    assert threads.physical_cores({0, 1, 2, 3}, tmp_path) == 2
    # Only the CPUs in the affinity mask count: 0 and 2 are siblings on core 0.
    assert threads.physical_cores({0, 2}, tmp_path) == 1


def test_cores_on_two_packages_are_distinct(tmp_path: Path) -> None:
    _cpu(tmp_path, 0, 0, 0)
    _cpu(tmp_path, 1, 1, 0)
    assert threads.physical_cores({0, 1}, tmp_path) == 2


def test_unknown_topology_is_none(tmp_path: Path) -> None:
    assert threads.physical_cores({0, 1}, tmp_path) is None


def test_default_uses_the_allowed_cpus_when_topology_is_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # CPUs the kernel does not describe (no such sysfs entries): count them as they are.
    monkeypatch.setattr(threads, "allowed_cpus", lambda: {1001, 1003, 1005})
    monkeypatch.setattr(threads, "busy_cores", lambda: 0)
    assert threads.default_threads() == 3


def test_busy_cores_are_left_to_the_work_keeping_them_busy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(threads, "available_cores", lambda: 4)
    for load, expected in ((0.3, 4), (1.7, 3), (3.2, 1), (9.0, 1)):
        monkeypatch.setattr(threads.os, "getloadavg", lambda load=load: (load, 0.0, 0.0))
        assert threads.default_threads() == expected


def test_default_never_exceeds_the_allowed_cpus() -> None:
    assert 1 <= threads.default_threads() <= len(threads.allowed_cpus())
