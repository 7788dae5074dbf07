"""Confirming drops by re-sampling (`run --baseline B --confirm R|auto|0`), end to end through
the runner and the gate: a provider whose true pass rate per case is known answers each
sample by its seed, so a broken always-passing case, an unchanged run and a greedy run can
be set up exactly."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest

from evalctl.baselines.gate import compare_baseline
from evalctl.baselines.write import build_baseline
from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.cli.confirm_option import parse_confirm, plan_from
from evalctl.config import Settings
from evalctl.errors import BadInputError, ExitCode
from evalctl.providers.scripted import Script, ScriptedProvider
from evalctl.results.io import read_run
from evalctl.results.models import RunResult
from evalctl.retry import RetryPolicy
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from tests import echo_kind

NO_SLEEP = RetryPolicy(max_attempts=2, sleep=lambda _s: None, rng=random.Random(0))
CASES = 14


class KnownRates(ScriptedProvider):
    """Answers `hello` (a pass) with a known probability per case: sampled requests draw by
    their seed, greedy ones pass when the case's rate is at least one half. Not registered
    as deterministic: it stands for a model."""

    name = "known-rates"

    def __init__(self, rates: dict[str, float]):
        super().__init__(Script())
        self.rates = rates
        self.seeds: dict[str, list[int | None]] = {}

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        rate = self.rates[request.tag]
        self.seeds.setdefault(request.tag, []).append(request.seed)
        if request.temperature == 0:
            passed = rate >= 0.5
        else:
            digest = hashlib.sha256(f"{request.tag}:{request.seed}".encode()).digest()
            passed = int.from_bytes(digest[:8], "big") / 2**64 < rate
        return CompletionResponse(content="hello" if passed else "nope")


def _suite(tmp_path: Path) -> Path:
    echo_kind.install()
    lines = ['[suite]\nname = "echo"\nkind = "echo"\nsystem_prompt = "Answer exactly."\n']
    for i in range(1, CASES + 1):
        lines.append(
            f'[[case]]\nid = "c{i:02d}"\ninput = {{ prompt = "say hello" }}\n'
            'expected = { answer = "hello" }\n'
        )
    path = tmp_path / "echo.toml"
    path.write_text("\n".join(lines))
    return path


def _run(
    suite: Path,
    out: Path,
    provider: KnownRates,
    *,
    samples: int = 1,
    confirm: object = None,
    seed_base: int = 0,
) -> RunResult:
    request = RunRequest(
        paths=[suite],
        out_dir=out,
        show_progress=False,
        repeats=samples,
        sampled=samples > 1,
        seed_base=seed_base,
        confirm=confirm,  # type: ignore[arg-type]
    )
    return execute_run(request, Settings(), {}, provider_override=provider, retry=NO_SLEEP).result


def _keys() -> list[str]:
    return [f"echo/c{i:02d}" for i in range(1, CASES + 1)]


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, object]:
    """A K = 5 baseline of a suite whose every case always passes."""
    suite = _suite(tmp_path)
    run = _run(suite, tmp_path / "base", KnownRates(dict.fromkeys(_keys(), 1.0)), samples=5)
    return suite, build_baseline(run, min_pass_rate=0)


def _plan(baseline: object, samples: int | None = None) -> object:
    from evalctl.baselines.budget import Budget

    return plan_from(baseline, "baselines/b.json", samples, Budget())  # type: ignore[arg-type]


def test_one_broken_stable_case_is_confirmed_and_gates(
    recorded: tuple[Path, object], tmp_path: Path
) -> None:
    suite, baseline = recorded
    rates = dict.fromkeys(_keys(), 1.0)
    rates["echo/c07"] = 0.0  # broken: it always fails now
    provider = KnownRates(rates)
    run = _run(suite, tmp_path / "run", provider, confirm=_plan(baseline))
    confirm = run.settings.confirm
    assert confirm is not None and confirm.auto and confirm.tested_cases == CASES
    assert confirm.samples == 4  # K = 5, 14 cases: the table
    assert confirm.confirmed == ["echo/c07"]
    # Only the case that dropped cost anything: one run sample each, plus 4 for c07.
    assert sum(len(s) for s in provider.seeds.values()) == CASES + 4
    # Stored as attempts marked confirmation, with fresh seeds from the baseline's K on.
    written = read_run(tmp_path / "run" / "results.json")
    broken = next(c for c in written.cases if c.key == "echo/c07")
    extra = [a for a in broken.attempts if a.confirmation]
    assert [a.sampling.seed for a in extra if a.sampling] == [5, 6, 7, 8]
    assert broken.pass_counts() == (0, 1) and broken.confirmation_counts() == (0, 4)
    cmp = compare_baseline(baseline, written)  # type: ignore[arg-type]
    assert cmp.exit_code == ExitCode.GATE_FAILED
    assert [r.key for r in cmp.regressions] == ["echo/c07"]
    assert cmp.regressions[0].confirmation == "confirmed"
    assert cmp.confirmation is not None and cmp.confirmation.confirmed == ["echo/c07"]
    assert cmp.rules == {"echo": "statistical"}


def test_nothing_changed_costs_nothing_and_passes(
    recorded: tuple[Path, object], tmp_path: Path
) -> None:
    suite, baseline = recorded
    provider = KnownRates(dict.fromkeys(_keys(), 1.0))
    run = _run(suite, tmp_path / "run", provider, confirm=_plan(baseline))
    assert run.settings.confirm is not None and run.settings.confirm.confirmed == []
    assert sum(len(s) for s in provider.seeds.values()) == CASES
    assert compare_baseline(baseline, run).exit_code == ExitCode.OK  # type: ignore[arg-type]


def test_a_noise_drop_is_resampled_and_not_confirmed(
    recorded: tuple[Path, object], tmp_path: Path
) -> None:
    suite, baseline = recorded
    rates = dict.fromkeys(_keys(), 1.0)
    provider = KnownRates(rates)
    # The first sample of c03 fails by chance; its confirmation samples pass as always.
    first = {"done": False}
    original = provider.complete

    def once_wrong(request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        if request.tag == "echo/c03" and not first["done"]:
            first["done"] = True
            return CompletionResponse(content="nope")
        return original(request, timeout=timeout)

    provider.complete = once_wrong  # type: ignore[method-assign]
    run = _run(suite, tmp_path / "run", provider, confirm=_plan(baseline))
    cmp = compare_baseline(baseline, run)  # type: ignore[arg-type]
    assert cmp.exit_code == ExitCode.OK
    assert [c.key for c in cmp.within_noise] == ["echo/c03"]
    assert cmp.within_noise[0].confirmation == "not confirmed"


def test_a_greedy_run_confirms_at_the_baselines_sampling(
    recorded: tuple[Path, object], tmp_path: Path
) -> None:
    suite, baseline = recorded
    rates = dict.fromkeys(_keys(), 1.0)
    rates["echo/c01"] = 0.0
    provider = KnownRates(rates)
    run = _run(suite, tmp_path / "run", provider, confirm=_plan(baseline, samples=5))
    assert run.settings.confirm is not None
    assert run.settings.confirm.first_like_baseline == {"echo": False}
    case = next(c for c in run.cases if c.key == "echo/c01")
    extra = [a.sampling for a in case.attempts if a.confirmation]
    # The baseline's perturbed temperature, seeds 5..9; the run's own sample was greedy.
    assert [(s.temperature, s.seed) for s in extra if s] == [(0.3, s) for s in range(5, 10)]
    cmp = compare_baseline(baseline, run)  # type: ignore[arg-type]
    assert [r.key for r in cmp.regressions] == ["echo/c01"]


def test_a_sampled_run_enters_the_test_with_its_own_samples(
    recorded: tuple[Path, object], tmp_path: Path
) -> None:
    suite, baseline = recorded
    rates = dict.fromkeys(_keys(), 1.0)
    rates["echo/c02"] = 0.0
    provider = KnownRates(rates)
    run = _run(
        suite, tmp_path / "run", provider, samples=2, confirm=_plan(baseline), seed_base=10**6
    )
    confirm = run.settings.confirm
    # Drawn like the baseline (its temperature, fresh seeds): the run's samples are evidence.
    assert confirm is not None and confirm.first_like_baseline == {"echo": True}
    assert confirm.confirmed == ["echo/c02"]
    cmp = compare_baseline(baseline, run)  # type: ignore[arg-type]
    assert [r.key for r in cmp.regressions] == ["echo/c02"]
    assert cmp.exit_code == ExitCode.GATE_FAILED


def test_confirm_zero_turns_it_off(recorded: tuple[Path, object], tmp_path: Path) -> None:
    suite, baseline = recorded
    rates = dict.fromkeys(_keys(), 1.0)
    rates["echo/c07"] = 0.0
    run = _run(suite, tmp_path / "run", KnownRates(rates), confirm=_plan(baseline, samples=0))
    assert run.settings.confirm is not None and run.settings.confirm.samples == 0
    assert not any(a.confirmation for c in run.cases for a in c.attempts)


def test_confirm_flag_values() -> None:
    assert parse_confirm(None) is None and parse_confirm("auto") is None
    assert parse_confirm("0") == 0 and parse_confirm("7") == 7
    for bad in ("-1", "many", "2.5"):
        with pytest.raises(BadInputError) as caught:
            parse_confirm(bad)
        assert caught.value.field == "--confirm"
