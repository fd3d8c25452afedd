"""Each seeded implementation bug (but the NOT_HELD ones, named with the reason) is found by
`kgc fuzz` alone within a budget of examples on one of three fixed example sequences (Hypothesis
seeds, tried in order), and the unmodified coordinator passes all three,
each run a fresh `kgc fuzz --bug B --seed S --no-shrink` process (kgc.tools.bench.fuzz_bench.run_fuzz,
what `kgc bench fuzz` times).

A fresh process because what Hypothesis draws depends on the process it runs in: it mixes the
literal constants of every local module imported so far into its draws, so the same hunt inside
the whole suite's process saw other examples than alone (static_replace_keeps_old_member: found
alone, not in 1,000 examples in the suite). In its own process a seed's examples are the same
on every run, so the count to the first failing example is a property of the code.

The budget is a number of examples, not wall clock: the seconds depend on the machine's load
(`kgc bench fuzz` prints them with the load, README "Fuzz alone"); BUDGET_EXAMPLES is what a
minute runs at the worst load measured there."""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor

import pytest

from kgc.tools.bench.fuzz_bench import FuzzRun, hunted_bugs, run_fuzz

pytestmark = pytest.mark.slow

#: about a minute of examples at load 20 on this 2-core machine (119-310 examples ran in a
#: minute there, README "Fuzz alone")
BUDGET_EXAMPLES = 300
#: Hypothesis seeds: fixed example sequences, tried in this order until one finds the bug (the
#: ones `kgc bench fuzz` runs). Most bugs are found on seed 0, so the test runs ~30 `kgc fuzz`
#: processes; a bug seed 0 misses costs one or two more. Which seed finds a bug moves whenever a
#: local module's literals change (Hypothesis mixes them into its draws), so holding a bug on one
#: seed made the test fail on unrelated edits: measured on 1d37bd6, seed 0 missed the two failed
#: static stores, fenced_instance_not_checked, commit_from_old_generation_accepted and
#: sync_acknowledged_not_stored in 300 examples, seeds 1 and 2 found each within 9-151.
SEEDS = (0, 1, 2)
#: Not held, each with the reason (`kgc bench fuzz` still runs them; README "Fuzz alone").
NOT_HELD: dict[str, str] = {}
#: every other seeded bug with an implementation layer (`kgc bugs`)
HUNTED = tuple(bug for bug in hunted_bugs() if bug not in NOT_HELD)
#: two processes at a time (each is its own `kgc fuzz`)
JOBS = 2


#: a cap on a run's own wall clock, far above the budget's minute at any load seen
WALL_CAP_S = 3600.0


def _run(bug: str, seed: int) -> FuzzRun:
    return run_fuzz(bug, seed, BUDGET_EXAMPLES, timeout=WALL_CAP_S)


@functools.cache
def _first_finding(bug: str) -> list[FuzzRun]:
    """The bug's runs on SEEDS in order, up to the first that finds it."""
    runs: list[FuzzRun] = []
    for seed in SEEDS:
        runs.append(_run(bug, seed))
        if runs[-1].found or runs[-1].error is not None:
            break
    return runs


@functools.cache
def _clean_runs() -> list[FuzzRun]:
    """The unmodified coordinator on every seed a bug may be held on, JOBS at a time."""
    with ThreadPoolExecutor(max_workers=JOBS) as pool:
        return list(pool.map(lambda seed: _run("none", seed), SEEDS))


def test_every_implementation_bug_is_hunted() -> None:
    from kgc.conformance import seeded_bugs

    every = {
        *seeded_bugs.BUGS,
        *seeded_bugs.SCENARIO_ONLY_BUGS,
        *seeded_bugs.INTERNAL_ERROR_BUGS,
        *seeded_bugs.LIVENESS_BUGS,
    } - {"none"}
    assert set(HUNTED) | set(NOT_HELD) == every and not set(HUNTED) & set(NOT_HELD)


@pytest.mark.parametrize("bug", HUNTED)
def test_fuzz_alone_finds_the_bug_within_the_budget(bug: str) -> None:
    runs = _first_finding(bug)
    run = runs[-1]
    assert run.error is None, run.error
    assert run.found, f"{bug}: not found in {BUDGET_EXAMPLES} examples on any of seeds {SEEDS}"
    assert run.examples is not None and run.examples <= BUDGET_EXAMPLES and run.violated
    assert run.exit_code == 10  # kgc fuzz: a property violated


@pytest.mark.parametrize("seed", SEEDS)
def test_the_real_coordinator_survives_the_same_runs(seed: int) -> None:
    run = next(r for r in _clean_runs() if r.seed == seed)
    assert run.error is None and not run.found, (run.error, run.violated)
    assert run.exit_code == 0
