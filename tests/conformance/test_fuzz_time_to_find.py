"""Each seeded implementation bug (but the NOT_HELD ones, named with the reason) is found by
`kgc fuzz` alone on a fixed example sequence (a Hypothesis seed), within a budget of examples,
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
#: Hypothesis seeds: fixed example sequences (`kgc bench fuzz` runs seeds 0, 1 and 2; one here
#: keeps the test's time down: ~30 `kgc fuzz` processes, most finding within 30 examples)
SEEDS = (0,)
#: Not held: missed on seed 0 within the budget, each with what was measured (`kgc bench fuzz`
#: still runs them; the other detectors catch them, `kgc bugs`; README "Fuzz alone").
NOT_HELD = {
    "static_rejoin_not_reverted": "a failed static store: missed seed 0 in 300 (f325b53)",
    "static_revert_dropped": "a failed static store: missed seed 0 in 300 (f325b53)",
    "commit_from_old_generation_accepted": "missed seed 0 in 300 since 7829fe7 (77 before it)",
    "fenced_instance_not_checked": "missed seed 0 in 300 since 7829fe7 (113 before it)",
    "sync_acknowledged_not_stored": "missed seed 0 in 300 since 7829fe7 (44 before it); 36 / 151 on seeds 1 / 2",
}
#: every other seeded bug with an implementation layer (`kgc bugs`)
HUNTED = tuple(bug for bug in hunted_bugs() if bug not in NOT_HELD)
#: two processes at a time (each is its own `kgc fuzz`)
JOBS = 2


#: a cap on a run's own wall clock, far above the budget's minute at any load seen
WALL_CAP_S = 3600.0


@functools.cache
def _runs(bug: str) -> dict[int, FuzzRun]:
    """The bug's runs on every seed, JOBS processes at a time (cached: one test per seed)."""
    with ThreadPoolExecutor(max_workers=JOBS) as pool:
        done = list(pool.map(lambda seed: run_fuzz(bug, seed, BUDGET_EXAMPLES, timeout=WALL_CAP_S), SEEDS))
    return {run.seed: run for run in done}


def test_every_implementation_bug_is_hunted() -> None:
    from kgc.conformance import seeded_bugs

    every = {
        *seeded_bugs.BUGS,
        *seeded_bugs.SCENARIO_ONLY_BUGS,
        *seeded_bugs.INTERNAL_ERROR_BUGS,
        *seeded_bugs.LIVENESS_BUGS,
    } - {"none"}
    assert set(HUNTED) | set(NOT_HELD) == every and not set(HUNTED) & set(NOT_HELD)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("bug", HUNTED)
def test_fuzz_alone_finds_the_bug_within_the_budget(bug: str, seed: int) -> None:
    run = _runs(bug)[seed]
    assert run.error is None, run.error
    assert run.found, f"{bug}, seed {seed}: not found in {BUDGET_EXAMPLES} examples"
    assert run.examples is not None and run.examples <= BUDGET_EXAMPLES and run.violated
    assert run.exit_code == 10  # kgc fuzz: a property violated


@pytest.mark.parametrize("seed", SEEDS)
def test_the_real_coordinator_survives_the_same_runs(seed: int) -> None:
    run = _runs("none")[seed]
    assert run.error is None and not run.found, (run.error, run.violated)
    assert run.exit_code == 0
