"""Sampled baselines (`--samples K`): what each sample is sent, what the run and the baseline
keep of the K samples, merging them, and writers of one baseline file taking turns."""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.synchronize
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalctl.baselines.model import (
    BASELINE_SCHEMA_VERSION,
    Baseline,
    BaselineSampling,
    PassCount,
    SuiteMetrics,
    baseline_from_document,
    read_baseline,
)
from evalctl.baselines.write import build_baseline, merge_baseline, write_baseline
from evalctl.chat import CompletionRequest, CompletionResponse, Sampling
from evalctl.config import ModelPrice, Settings
from evalctl.errors import BadInputError
from evalctl.providers.local import LocalProvider
from evalctl.providers.scripted import ScriptedProvider, load_script
from evalctl.results.document import Document
from evalctl.results.io import read_run
from evalctl.results.models import Attempt
from evalctl.results.platform import Platform
from evalctl.retry import RetryPolicy
from evalctl.runner.api import RunOutcome, RunRequest
from evalctl.runner.execute import execute_run
from evalctl.runner.sampling import PERTURB_TEMPERATURE, sample_sampling, sample_settings
from tests import factories as f
from tests.local_helpers import make_provider, reap_daemons  # noqa: F401  (fixture)
from tests.test_sampling import echo_cli

NO_SLEEP = RetryPolicy(max_attempts=2, sleep=lambda _s: None, rng=random.Random(0))

# `hello` answers right on even seeds only; `shout` always calls the tool, then answers.
SCRIPT = """
[[cases."echo/hello"]]
content = "hello"

[[cases."echo/shout"]]
tool_calls = [{ name = "upper", arguments = { text = "hi" } }]

[[cases."echo/shout"]]
content = "HI"
"""


class SeedDependent(ScriptedProvider):
    """The scripted replies, but `echo/hello` is answered wrong on odd seeds: a case whose
    samples disagree, with every request kept in `calls`."""

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        response = super().complete(request, timeout=timeout)
        if request.tag == "echo/hello" and (request.seed or 0) % 2:
            return response.model_copy(update={"content": "goodbye"})
        return response


def _provider(tmp_path: Path) -> SeedDependent:
    script = tmp_path / "script.toml"
    script.write_text(SCRIPT)
    return SeedDependent(load_script(script))


def _sampled(
    suite: Path, tmp_path: Path, provider: ScriptedProvider, samples: int, **request_args: object
) -> RunOutcome:
    request = RunRequest(
        paths=[suite],
        out_dir=tmp_path / "out",
        show_progress=False,
        repeats=samples,
        sampled=samples > 1,
        **request_args,  # type: ignore[arg-type]
    )
    return execute_run(request, Settings(), {}, provider_override=provider, retry=NO_SLEEP)


def _first_turns(provider: ScriptedProvider, tag: str) -> list[CompletionRequest]:
    # The first request of each sample: the one with no assistant turn yet.
    return [c for c in provider.calls if c.tag == tag and len(c.messages) == 2]


def test_sample_r_is_sent_seed_r_and_a_greedy_suite_the_perturbed_temperature(
    echo_suite: Path, tmp_path: Path
) -> None:
    provider = _provider(tmp_path)
    run = _sampled(echo_suite, tmp_path, provider, 4).result
    for tag in ("echo/hello", "echo/shout"):
        sent = [(c.seed, c.temperature, c.top_p) for c in _first_turns(provider, tag)]
        assert sent == [(r, PERTURB_TEMPERATURE, 1.0) for r in range(4)]
    # Every turn of a sample is sent that sample's seed (shout has two turns per sample).
    assert [c.seed for c in provider.calls if c.tag == "echo/shout"] == [0, 0, 1, 1, 2, 2, 3, 3]
    hello = run.cases[0]
    assert [a.sampling for a in hello.attempts] == [
        Sampling(temperature=PERTURB_TEMPERATURE, top_p=1.0, seed=r) for r in range(4)
    ]
    assert hello.sampling == hello.attempts[-1].sampling
    assert run.settings.repeats == 4
    assert run.settings.sampled == {
        "echo": BaselineSampling(
            samples=4,
            seeds=[0, 1, 2, 3],
            temperature=PERTURB_TEMPERATURE,
            top_p=1.0,
            perturbed=True,
            perturbation="greedy suite sampled at temperature 0.3, top_p 1, seeds 0..3",
        )
    }


def test_the_counts_of_each_case_and_check(echo_suite: Path, tmp_path: Path) -> None:
    run = _sampled(echo_suite, tmp_path, _provider(tmp_path), 5).result
    hello, shout = run.cases
    assert hello.status == "flaky" and hello.pass_counts() == (3, 5)  # seeds 0, 2, 4
    assert hello.check_counts == {"answer": PassCount(passed=3, runs=5)}
    assert shout.status == "pass"
    assert shout.check_counts == {
        "answer": PassCount(passed=5, runs=5),
        "tool": PassCount(passed=5, runs=5),
    }
    # And they survive the file.
    again = read_run(tmp_path / "out" / "results.json")
    assert again.cases[0].check_counts == hello.check_counts
    assert again.settings.sampled == run.settings.sampled


def test_a_suite_that_samples_already_keeps_its_temperature(
    echo_suite: Path, tmp_path: Path
) -> None:
    echo_suite.write_text(
        echo_suite.read_text().replace("max_turns = 3", "max_turns = 3\ntemperature = 0.7")
    )
    provider = _provider(tmp_path)
    run = _sampled(echo_suite, tmp_path, provider, 3).result
    sent = [(c.seed, c.temperature) for c in _first_turns(provider, "echo/hello")]
    assert sent == [(0, 0.7), (1, 0.7), (2, 0.7)]
    plan = run.settings.sampled["echo"]
    assert (plan.perturbed, plan.temperature, plan.seeds) == (False, 0.7, [0, 1, 2])


def test_an_unsampled_run_is_as_before(echo_suite: Path, tmp_path: Path) -> None:
    provider = _provider(tmp_path)
    run = _sampled(echo_suite, tmp_path, provider, 1).result
    assert {(c.seed, c.temperature) for c in provider.calls} == {(0, 0.0)}
    assert run.settings.sampled == {}
    assert all(c.check_counts == {} and a.sampling is None for c in run.cases for a in c.attempts)
    # Repeats without --samples: each repeat sent what the case resolves to, no counts per
    # sample recorded as samples, but the checks are counted over the repeats.
    provider = _provider(tmp_path)
    request = RunRequest(paths=[echo_suite], out_dir=tmp_path / "r", show_progress=False, repeats=2)
    repeated = execute_run(request, Settings(), {}, provider_override=provider).result
    assert {c.seed for c in provider.calls} == {0}
    assert repeated.settings.sampled == {}
    assert repeated.cases[0].check_counts == {"answer": PassCount(passed=2, runs=2)}


def test_sampling_helpers() -> None:
    greedy = Sampling(temperature=0.0, top_p=0.9, seed=7)
    assert sample_sampling(greedy, 2) == Sampling(
        temperature=PERTURB_TEMPERATURE, top_p=0.9, seed=2
    )
    warm = Sampling(temperature=1.1, top_p=1.0, seed=7)
    assert sample_sampling(warm, 0) == Sampling(temperature=1.1, top_p=1.0, seed=0)
    # A provider that takes no sampling: nothing is claimed.
    none = Sampling(temperature=None, top_p=None, seed=None)
    plan = sample_settings(greedy, 3, none)
    assert (plan.seeds, plan.temperature, plan.top_p, plan.perturbed) == ([], None, None, False)
    assert "no seed" in plan.perturbation


def test_a_sampled_baseline(echo_suite: Path, tmp_path: Path) -> None:
    run = _sampled(echo_suite, tmp_path, _provider(tmp_path), 5).result
    run.platform = Platform(provider="scripted", model="scripted", cpu="test-cpu")
    baseline = build_baseline(run, 0.0)
    assert baseline.schema_version == BASELINE_SCHEMA_VERSION == 3
    assert baseline.baselines == {"echo/hello": "flaky", "echo/shout": "pass"}
    assert baseline.pass_counts == {
        "echo/hello": PassCount(passed=3, runs=5),
        "echo/shout": PassCount(passed=5, runs=5),
    }
    assert baseline.check_counts["echo/hello"] == {"answer": PassCount(passed=3, runs=5)}
    assert set(baseline.check_counts["echo/shout"]) == {"answer", "tool"}
    # The last sample (seed 4) passed: `checks` keeps its statuses, as in version 2.
    assert baseline.checks["echo/hello"] == {"answer": "pass"}
    assert baseline.sampling == run.settings.sampled
    assert baseline.platform == run.platform
    metrics = baseline.metrics["echo"]
    assert len(metrics.output_tokens) == len(metrics.latency_p50_ms) == 5
    # Sample r of each case: hello answers one word, shout one ("HI"); the scripted
    # provider counts words as tokens.
    assert metrics.output_tokens == [1.0] * 5
    assert metrics.cost_usd is None  # scripted is not billed
    path = write_baseline(baseline, tmp_path / "b.json")
    assert read_baseline(path) == baseline
    # The familiar shape stays readable: `baselines` maps keys to pass/fail/flaky.
    assert json.loads(path.read_text())["baselines"]["echo/hello"] == "flaky"


def test_a_flaky_case_counts_against_the_minimum_pass_rate(
    echo_suite: Path, tmp_path: Path
) -> None:
    run = _sampled(echo_suite, tmp_path, _provider(tmp_path), 3).result
    with pytest.raises(Exception, match="only 1 of 2 scored cases passed"):
        build_baseline(run, 0.6)


def _attempt(status: str, latency: float, tokens_out: int) -> Attempt:
    from evalctl.chat import Usage

    return Attempt(
        status=status,
        latency_ms=latency,
        usage=Usage(input_tokens=1000, output_tokens=tokens_out),
    )


def test_metrics_per_sample_leave_out_crash_retries_and_price_billed_runs() -> None:
    a = f.case("s/a", "pass")
    a.attempts = [
        _attempt("pass", 100, 10),
        _attempt("error", 5, 0),  # a crash retry of sample 1: not a sample
        _attempt("pass", 300, 30),
    ]
    b = f.case("s/b", "fail")
    b.attempts = [_attempt("fail", 200, 20), _attempt("fail", 400, 50)]
    run = f.run([a, b], provider="openai", model="gpt-test")
    run.summary.estimated_cost_usd = 0.01  # what summarize gives a billed run with a price
    prices = {"gpt-test": ModelPrice(input_per_mtok=1.0, output_per_mtok=10.0)}
    metrics = build_baseline(run, 0.0, prices).metrics["s"]
    assert metrics == SuiteMetrics(
        output_tokens=[15.0, 40.0],
        latency_p50_ms=[150.0, 350.0],
        latency_p95_ms=[195.0, 395.0],
        # Sample 0: 2,000 tokens in at $1/M and 30 out at $10/M.
        cost_usd=[0.0023, 0.0028],
    )
    # Unsampled, from a file that kept no attempts: one value, the case itself.
    c = f.case("s/c", "pass", latency_ms=50.0)
    one = build_baseline(f.run([c]), 0.0).metrics["s"]
    assert (one.latency_p50_ms, one.cost_usd) == ([50.0], None)


def _doc(data: dict[str, object]) -> Document:
    return Document(data=data, path=Path("b.json"))


def test_version_2_baselines_still_read_and_newer_fields_need_version_3() -> None:
    v2 = {
        "schema_version": 2,
        "kind": "baseline",
        "provider": "local",
        "model": "m",
        "baselines": {"s/a": "pass", "s/b": "flaky"},
        "pass_counts": {"s/b": {"passed": 2, "runs": 3}},
        "checks": {"s/a": {"x": "pass"}},
    }
    old = baseline_from_document(_doc(v2))
    # Upgraded when read (evalctl.results.versions); the version it was written at is kept.
    assert old.schema_version == 3 and old.written_as == 2
    assert old.check_counts == {} and old.sampling == {}
    assert old.pass_counts["s/b"].as_tuple() == (2, 3)
    counts = {"s/a": {"x": {"passed": 1, "runs": 1}}}
    with pytest.raises(BadInputError, match="needs schema_version 3"):
        baseline_from_document(_doc({**v2, "check_counts": counts}))
    assert baseline_from_document(_doc({**v2, "schema_version": 3, "check_counts": counts}))


def _sampled_baseline(counts: dict[str, tuple[int, int]], suite_samples: int) -> Baseline:
    statuses = {
        k: ("pass" if p == n else "fail" if p == 0 else "flaky") for k, (p, n) in counts.items()
    }
    suites = {k.partition("/")[0] for k in counts}
    return Baseline(
        provider="scripted",
        model="script",
        baselines=statuses,
        pass_counts={k: PassCount(passed=p, runs=n) for k, (p, n) in counts.items()},
        check_counts={k: {"c": PassCount(passed=p, runs=n)} for k, (p, n) in counts.items()},
        sampling={
            s: sample_settings(Sampling(temperature=0.0), suite_samples) for s in sorted(suites)
        },
        metrics={
            s: SuiteMetrics(
                output_tokens=[1.0] * suite_samples,
                latency_p50_ms=[1.0] * suite_samples,
                latency_p95_ms=[2.0] * suite_samples,
            )
            for s in sorted(suites)
        },
    )


def test_merge_keeps_the_counts_sampling_and_metrics_outside_the_selection() -> None:
    existing = _sampled_baseline({"a/x": (5, 5), "b/y": (2, 5)}, 5)
    fresh = _sampled_baseline({"b/y": (7, 7), "b/z": (0, 7)}, 7)
    narrowed = f.run([f.case("b/y", "pass"), f.case("b/z", "fail")], suite_filter=["b"])
    merged, kept = merge_baseline(existing, fresh, narrowed)
    assert kept == 1
    assert merged.check_counts == {
        "a/x": {"c": PassCount(passed=5, runs=5)},
        "b/y": {"c": PassCount(passed=7, runs=7)},
        "b/z": {"c": PassCount(passed=0, runs=7)},
    }
    assert merged.pass_counts["a/x"].as_tuple() == (5, 5)
    assert {s: p.samples for s, p in merged.sampling.items()} == {"a": 5, "b": 7}
    assert {s: len(m.output_tokens) for s, m in merged.metrics.items()} == {"a": 5, "b": 7}
    # A suite whose entries are all gone takes its sampling and metrics with it.
    gone = f.run([f.case("b/y", "pass")], suite_filter=["a", "b"])
    only_b = _sampled_baseline({"b/y": (7, 7)}, 7)
    merged, _ = merge_baseline(existing, only_b, gone)
    assert set(merged.sampling) == set(merged.metrics) == {"b"}


# --- the command line ---------------------------------------------------------------


def _cli_args(tmp_path: Path, suite: Path) -> list[str]:
    script = tmp_path / "script.toml"
    script.write_text(SCRIPT)
    return ["--provider", "scripted", "--script", str(script), "--cases", str(suite)]


def test_cli_samples_run_then_baseline_from_it(echo_suite: Path, tmp_path: Path) -> None:
    common = _cli_args(tmp_path, echo_suite)
    out = tmp_path / "run"
    done = echo_cli(tmp_path, "run", *common, "--samples", "3", "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads((out / "results.json").read_text())
    assert data["settings"]["repeats"] == 3
    seeds = [a["sampling"]["seed"] for a in data["cases"][0]["attempts"]]
    # A run's samples draw afresh: consecutive seeds from its own high seed_base, never the
    # 0..K-1 a baseline recorded with `baseline --samples K` used.
    base = data["settings"]["seed_base"]
    assert base >= 1_000_000 and seeds == [base, base + 1, base + 2]

    # --from with the same K is only a check; another K is bad input naming the flag.
    b = tmp_path / "b.json"
    ok = echo_cli(tmp_path, "baseline", "--from", str(out), "--samples", "3", "--out", str(b))
    assert ok.returncode == 0, ok.stderr
    assert "3 samples per case" in ok.stdout
    assert read_baseline(b).sampling["echo"].samples == 3
    wrong = echo_cli(tmp_path, "baseline", "--from", str(out), "--samples", "5", "--out", str(b))
    assert wrong.returncode == 2
    assert "--samples" in wrong.stderr and "hold 3 sample" in wrong.stderr


def test_cli_resume_keeps_the_samples(echo_suite: Path, tmp_path: Path) -> None:
    common = _cli_args(tmp_path, echo_suite)
    out = tmp_path / "run"
    done = echo_cli(tmp_path, "run", *common, "--samples", "3", "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    # As if killed after the first case: its journal line stays, the second case's goes.
    journal = out / "journal.jsonl"
    journal.write_text(journal.read_text().splitlines(keepends=True)[0])
    (out / "results.json").unlink()
    refused = echo_cli(tmp_path, "run", "--resume", str(out), "--samples", "5", "--json")
    assert refused.returncode == 2
    assert "--samples" in refused.stdout + refused.stderr
    resumed = echo_cli(tmp_path, "run", "--resume", str(out), "--json")
    assert resumed.returncode == 0, resumed.stderr
    data = json.loads((out / "results.json").read_text())
    shout = data["cases"][1]
    assert shout["key"] == "echo/shout"
    # The resumed case is sampled from the run's own seed_base, as the first case was.
    base = data["settings"]["seed_base"]
    assert [a["sampling"]["seed"] for a in data["cases"][0]["attempts"]] == [
        base,
        base + 1,
        base + 2,
    ]
    assert [a["sampling"]["seed"] for a in shout["attempts"]] == [base, base + 1, base + 2]


def test_cli_baseline_takes_its_samples_from_evalctl_toml(echo_suite: Path, tmp_path: Path) -> None:
    (tmp_path / "evalctl.toml").write_text("baseline_samples = 2\n")
    common = _cli_args(tmp_path, echo_suite)
    b = tmp_path / "b.json"
    done = echo_cli(tmp_path, "baseline", *common, "--out", str(b), "--min-pass-rate", "0")
    assert done.returncode == 0, done.stderr
    assert read_baseline(b).pass_counts["echo/hello"].runs == 2
    # The flag wins; and --seed is refused, naming where the samples came from.
    done = echo_cli(tmp_path, "baseline", *common, "--out", str(b), "--samples", "1")
    assert done.returncode == 0, done.stderr
    assert read_baseline(b).sampling == {}
    refused = echo_cli(tmp_path, "baseline", *common, "--out", str(b), "--seed", "3")
    assert refused.returncode == 2 and "baseline_samples" in refused.stderr


@pytest.mark.parametrize(
    ("extra", "flag"),
    [(["--repeats", "2"], "--samples"), (["--seed", "4"], "--seed")],
)
def test_cli_samples_refuse_repeats_and_seed(
    echo_suite: Path, tmp_path: Path, extra: list[str], flag: str
) -> None:
    common = _cli_args(tmp_path, echo_suite)
    done = echo_cli(tmp_path, "run", *common, "--samples", "3", *extra)
    assert done.returncode == 2
    assert flag in done.stderr


# --- writers of one baseline file -----------------------------------------------------

TWO_SUITES = """
[suite]
name = "{name}"
kind = "echo"
system_prompt = "Answer exactly."
max_turns = 1

[[case]]
id = "hello"
input = {{ prompt = "say hello" }}
expected = {{ answer = "hello" }}
"""


def _narrowed_runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Results of the full selection (every answer wrong) and of each suite alone (right)."""
    from tests import echo_kind

    echo_kind.install()
    cases = tmp_path / "cases"
    cases.mkdir()
    for name in ("one", "two"):
        (cases / f"{name}.toml").write_text(TWO_SUITES.format(name=name))
    outs = []
    for answer, suites in (("nope", []), ("hello", ["one"]), ("hello", ["two"])):
        script = tmp_path / f"{answer}.toml"
        script.write_text(f'[[default]]\ncontent = "{answer}"\n')
        out = tmp_path / f"run-{answer}-{'-'.join(suites) or 'all'}"
        request = RunRequest(
            provider="scripted",
            script=script,
            paths=[cases],
            suites=suites,
            out_dir=out,
            show_progress=False,
        )
        execute_run(request, Settings(), {})
        outs.append(out)
    return outs[0], outs[1], outs[2]


ROUNDS = 20  # issue 20: two concurrent narrowed baselines keep both updates in 20 of 20


def _write_from(results: Path, base: Path, start: multiprocessing.synchronize.Barrier) -> None:
    from evalctl.cli.baseline import baseline

    for attempt in range(ROUNDS):
        start.wait()  # the parent has written this round's full baseline
        baseline(
            from_results=results, out=base / f"b{attempt}.json", min_pass_rate=0.0, as_json=True
        )
        start.wait()  # both writers are done: the parent reads the file


def test_two_writers_of_one_baseline_both_keep_their_update(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    full, one, two = _narrowed_runs(tmp_path)
    # Spawned, not forked: a fork of a test process that has run threads may deadlock. The
    # two writers are started once and meet the parent at a barrier every round, so their
    # reads of each round's file fall together unless the lock makes the second wait for the
    # first (without it, checked: one suite's update was lost in the first round).
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(3, timeout=120)
    writers = [ctx.Process(target=_write_from, args=(r, tmp_path, start)) for r in (one, two)]
    for w in writers:
        w.start()
    try:
        for attempt in range(ROUNDS):
            out = tmp_path / f"b{attempt}.json"
            write_baseline(build_baseline(read_run(full / "results.json"), 0.0), out)
            assert set(read_baseline(out).baselines.values()) == {"fail"}
            start.wait()
            start.wait()
            assert read_baseline(out).baselines == {"one/hello": "pass", "two/hello": "pass"}
            # No lock file is left beside the baseline for a repository to commit; a writer
            # that waited on the deleted file locks the path's new one (flock.held).
            assert not (tmp_path / f"b{attempt}.json.lock").exists()
    finally:
        for w in writers:
            w.join(60)
    assert [w.exitcode for w in writers] == [0, 0]


# --- the real model --------------------------------------------------------------------

SEA = """
[suite]
name = "sea"
kind = "echo"
system_prompt = "You are a poet."
max_turns = 1
max_tokens = 24

[[case]]
id = "sentence"
input = { prompt = "Write one sentence about the sea." }
expected = { answer = "-" }
"""


class Recording:
    """The local provider, with what each request was sent and what came back kept."""

    def __init__(self, inner: LocalProvider) -> None:
        self.inner = inner
        self.seen: list[tuple[int | None, float, str]] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        response = self.inner.complete(request, timeout=timeout)
        self.seen.append((request.seed, request.temperature, response.content))
        return response


@pytest.fixture
def local(reap_daemons: None) -> Iterator[LocalProvider]:  # noqa: F811  (the fixture's name)
    p = make_provider()
    yield p
    p.stop_daemon(grace_s=2)
    p.close()


@pytest.mark.model
def test_three_samples_on_the_real_model_are_three_seeded_draws(
    local: LocalProvider, tmp_path: Path
) -> None:
    from tests import echo_kind

    echo_kind.install()
    suite = tmp_path / "sea.toml"
    suite.write_text(SEA)
    recording = Recording(local)
    request = RunRequest(
        paths=[suite], out_dir=tmp_path / "out", show_progress=False, repeats=3, sampled=True
    )
    run = execute_run(request, Settings(), {}, provider_override=recording).result  # type: ignore[arg-type]
    assert [(seed, temp) for seed, temp, _ in recording.seen] == [
        (r, PERTURB_TEMPERATURE) for r in range(3)
    ]
    # The engine took the seeds: at 0.3 this open prompt gives another sentence per seed
    # (measured: five seeds, five sentences), where greedy would give one three times.
    assert len({text for _, _, text in recording.seen}) >= 2, recording.seen
    sent = [a.sampling for a in run.cases[0].attempts]
    assert sent == [Sampling(temperature=PERTURB_TEMPERATURE, top_p=1.0, seed=r) for r in range(3)]
    assert run.settings.sampled["sea"].perturbed
