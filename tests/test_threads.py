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
    for busy, expected in ((0, 4), (1, 3), (3, 1), (9, 1)):
        monkeypatch.setattr(threads, "busy_cores", lambda busy=busy: busy)
        assert threads.default_threads() == expected


@pytest.mark.parametrize(
    ("idle_delta", "total_delta", "expected"),
    [(200, 200, 0), (100, 200, 1), (10, 200, 2), (95, 200, 1)],
)
def test_busy_cores_are_measured_now_not_from_the_load_average(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    idle_delta: int,
    total_delta: int,
    expected: int,
) -> None:
    # Two CPUs; between the two reads `total_delta` jiffies pass, `idle_delta` of them idle.
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 1 2 3 4\n")
    busy = total_delta - idle_delta

    def advance(_seconds: float) -> None:
        stat.write_text(f"cpu  {100 + busy} 0 100 {800 + idle_delta} 0 0 0 0 0 0\n")

    monkeypatch.setattr(threads.time, "sleep", advance)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)
    # A high 1-minute load average (work that already ended) must not count.
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (7.0, 7.0, 7.0), raising=False)
    assert threads.busy_cores(stat) == expected


def test_busy_cores_unknown_without_proc_stat(tmp_path: Path) -> None:
    assert threads.busy_cores(tmp_path / "missing") == 0


def test_default_never_exceeds_the_allowed_cpus() -> None:
    assert 1 <= threads.default_threads() <= len(threads.allowed_cpus())
