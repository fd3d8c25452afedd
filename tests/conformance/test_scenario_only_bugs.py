"""Seeded implementation bugs in the areas the spec does not model yet (offset commits, static
membership fencing, the asynchronous store, the loading window): each is caught by the format-2
scenario named here, which the real coordinator passes, and `kgc replay --bug` reports it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kgc.conformance.bugs import all_bugs
from kgc.conformance.replay import run_scenario
from kgc.conformance.scenario import load_scenario, shipped_scenarios
from kgc.conformance.seeded_bugs import BUGS, SCENARIO_ONLY_BUGS, coordinator_class

KGC = Path(sys.executable).with_name("kgc")

CAUGHT_BY = {
    "commit_from_old_generation_accepted": "commit-fencing-by-generation-and-member",
    "commit_in_completing_rebalance_accepted": "commit-in-completing-rebalance-is-rebalance-in-progress",
    "fenced_instance_not_checked": "static-old-member-id-heartbeat-is-fenced",
    "store_failure_treated_as_success": "store-sync-append-not-enough-replicas-answers-coordinator-not-available",
    "static_rejoin_not_reverted": "static-rejoin-store-failure-reverts-to-the-old-member-id",
    "loading_window_ignored": "load-window-answers-load-in-progress",
}


def test_every_scenario_only_bug_has_its_scenario() -> None:
    assert set(CAUGHT_BY) == set(SCENARIO_ONLY_BUGS)
    assert not set(SCENARIO_ONLY_BUGS) & set(BUGS)
    for name in SCENARIO_ONLY_BUGS:
        assert all_bugs()[name].layers == ["implementation"]


@pytest.mark.parametrize("bug", sorted(CAUGHT_BY))
def test_the_scenario_catches_the_bug(bug: str) -> None:
    scenario = load_scenario(shipped_scenarios() / f"{CAUGHT_BY[bug]}.json")
    assert run_scenario(scenario).passed
    failed = run_scenario(scenario, coordinator_class=coordinator_class(bug))
    assert not failed.passed and failed.failure is not None


def test_kgc_replay_bug_fails_the_suite() -> None:
    files = sorted(str(p) for p in shipped_scenarios().glob("*.json"))
    done = subprocess.run(
        [str(KGC), "replay", "--bug", "fenced_instance_not_checked", *files],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    failed = {line.split()[1].rstrip(":") for line in done.stdout.splitlines() if line.startswith("FAIL")}
    assert "static-old-member-id-heartbeat-is-fenced" in failed
