"""The finite-run EventuallyStable (conformance/eventually_stable.py), on its own: the prompt
phase run on a recorder with no response checks, so only this property can see the twin of
`stable_heartbeat_rebalance_in_progress` (under `kgc fuzz`, ResponseAllowed sees it too)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from kgc.conformance.eventually_stable import PromptPhase, PromptWindow
from kgc.conformance.recorder import RANDOM_RUN_CONSTANTS, RunRecorder, enabled_actions
from kgc.conformance.seeded_bugs import coordinator_class
from kgc.conformance.stateful import DEFAULT_CONSTANTS, SLOW_CLOCK_CONSTANTS


def _prompt(
    bug: str, constants=DEFAULT_CONSTANTS, disturb: int = 0, seed: int = 0
) -> tuple[PromptWindow, RunRecorder, PromptPhase]:
    """`disturb` random steps (crashes, leaves, rejoins, time) first, then the prompt phase."""
    rng = random.Random(seed)
    rec = RunRecorder(constants, coordinator_class(bug), name="prompt", lenient=True)
    for _ in range(disturb):
        options = enabled_actions(rec, allow_failover=False)
        name, client, flag = rng.choice(options)
        if name == "fire":
            rec.fire()
        elif name == "advance":
            rec.tick(constants.ms_per_unit)
        else:
            rec.step(name, client, flag)
    window = PromptWindow()
    phase = PromptPhase(rec, lambda units: rec.tick(units * constants.ms_per_unit), lambda: 0, lambda: None)
    phase.run(window)
    return window, rec, phase


@pytest.mark.parametrize("constants", [DEFAULT_CONSTANTS, SLOW_CLOCK_CONSTANTS, RANDOM_RUN_CONSTANTS])
def test_a_prompt_group_of_the_real_coordinator_settles(constants) -> None:
    claimed = 0
    for seed in range(8):
        window, rec, phase = _prompt("none", constants, disturb=20, seed=seed)
        assert not window.verdicts, (seed, window.verdicts)
        if not phase.no_claim:
            claimed += 1
            assert str(rec.states[-1]["gstate"]) == "Stable"
        else:
            assert phase.no_claim.endswith("has no member id left to join with"), phase.no_claim
    assert claimed >= 6


def test_a_heartbeat_answered_rebalance_in_progress_in_stable_never_settles() -> None:
    window, rec, _ = _prompt("stable_heartbeat_rebalance_in_progress")
    [(index, text)] = window.verdicts.items()
    assert index == len(rec.states) - 1
    assert text.startswith("never Stable for 6 time units in the 41 after every client turned prompt")
    # the group did reach Stable, again and again: each time a prompt heartbeat undid it
    assert sum(1 for s in rec.states if str(s["gstate"]) == "Stable") > 5


def test_the_verdict_is_reported_with_its_state() -> None:
    window = PromptWindow({7: "never Stable"})
    assert window.observe(6) == {}
    assert window.observe(7) == {"EventuallyStable": ["never Stable"]}
    assert window.observe(7) == {}


def test_no_claim_when_a_client_is_left_without_a_member_id() -> None:
    # one id for three clients: the spec's NoIdLeft, outside the property's premise
    window, _, phase = _prompt("stable_heartbeat_rebalance_in_progress", replace(DEFAULT_CONSTANTS, num_ids=1))
    assert not window.verdicts and phase.no_claim == "c2 has no member id left to join with"
