"""Z3 proofs (`kgc prove`): the correct encoding proves every invariant inductive;
every seeded bug fails with a counterexample to induction that names the action, and the
counterexample is genuine (its pre-state satisfies the invariants, the buggy action leads to a
post-state that breaks one, the correct encoding has no such step)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import z3

from kgc.conformance.proofs.abstraction import (
    accepts,
    from_tla_values,
    violated_invariants,
    violated_step_properties,
)
from kgc.conformance.proofs.invariants import INVARIANTS
from kgc.conformance.proofs.prove import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_UNKNOWN,
    INIT,
    NOT_INDUCTIVE,
    PROVED,
    UNKNOWN,
    CheckResult,
    ProofReport,
    prove,
)
from kgc.conformance.proofs.step_properties import STEP_PROPERTIES, STEP_PROPERTIES_BY_NAME, TRIGGER_ACTIONS
from kgc.conformance.proofs.transitions import ACTIONS, ACTIONS_BY_NAME, BUGS

KGC = Path(sys.executable).with_name("kgc")

# the actions that can move a group to PreparingRebalance (maybePrepareRebalance / prepareRebalance)
REBALANCING = set(TRIGGER_ACTIONS)

# bug -> (actions that must fail, invariants that must fail under them)
EXPECTED = {
    "sync_answered_in_preparing_rebalance": ({"SyncGroupLeader", "SyncGroupFollower"}, {"NoSyncInPreparingRebalance"}),
    "leader_replaced_without_rebalance": ({"LeaveGroup", "SessionTimeoutExpiry"}, {"NamedLeaderIsCurrentLeader"}),
    "generation_not_bumped": ({"CompleteJoin", "RebalanceTimeout"}, {"SingleLeaderPerGeneration"}),
    "leader_not_reassigned": ({"LeaveGroup", "SessionTimeoutExpiry", "DelayedSyncExpiry"}, {"LeaderIsMember"}),
    "last_leave_no_rebalance": ({"LeaveGroup", "SessionTimeoutExpiry"}, {"EmptyIffNoMembers"}),
    "rebalance_rollback": (
        REBALANCING,
        {"GenerationMonotonic"},
    ),
    "heartbeat_rebalances_stable": ({"Heartbeat"}, {"StableRebalanceOnlyByTrigger"}),
    "pending_leave_rebalances": ({"LeaveGroup"}, {"StableRebalanceOnlyByTrigger"}),
}


@pytest.fixture(scope="module")
def correct() -> ProofReport:
    return prove()


def test_correct_encoding_proves_every_invariant_under_every_action(correct) -> None:
    report = correct
    assert report.exit_code == EXIT_OK, [(c.invariant, c.action, c.status) for c in report.failures()]
    assert len(report.checks) == len(INVARIANTS) * (len(ACTIONS) + 1) + len(STEP_PROPERTIES) * len(ACTIONS)
    assert {c.status for c in report.checks} == {PROVED}


def test_every_action_is_enabled_somewhere_so_no_proof_is_vacuous(correct) -> None:
    report = correct
    assert report.enabled == {a.name: "sat" for a in ACTIONS}


def test_the_safety_properties_alone_are_not_inductive() -> None:
    """The strengthening invariants are needed: without them a leader may already be named for
    the generation a rebalance is about to hand out."""
    main = tuple(i for i in INVARIANTS if i.main)
    report = prove(invariants=main, actions=(ACTIONS_BY_NAME["CompleteJoin"],))
    failed = {(c.invariant, c.action): c for c in report.failures()}
    assert report.exit_code == EXIT_FAILED
    cell = failed[("SingleLeaderPerGeneration", "CompleteJoin")]
    assert cell.status == NOT_INDUCTIVE and cell.counterexample is not None
    assert report.checks[0].action == INIT and report.checks[0].status == PROVED


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_seeded_bug_gives_a_counterexample_to_induction_naming_the_action(bug: str) -> None:
    actions, invariants = EXPECTED[bug]
    report = prove([bug])
    assert report.exit_code == EXIT_FAILED
    failures = report.failures()
    assert {c.action for c in failures} == actions
    assert invariants <= {c.invariant for c in failures}
    for c in failures:
        assert c.status == NOT_INDUCTIVE and c.counterexample is not None, (c.invariant, c.action, c.status, c.reason)
        cex = c.counterexample
        assert cex.action == c.action and cex.members == ["m1", "m2", "m3"]
        assert c.invariant in cex.broken
        pre, post = from_tla_values(cex.pre), from_tla_values(cex.post)
        assert violated_invariants(pre) == []
        if c.invariant in STEP_PROPERTIES_BY_NAME:
            assert c.invariant in violated_step_properties(pre, post, c.action, cex.args)
            assert violated_step_properties(pre, pre, c.action, cex.args) == []  # the step, not the state
        else:
            assert c.invariant in violated_invariants(post)
        only = (ACTIONS_BY_NAME[c.action],)
        assert accepts(pre, post, [bug], max_steps=1, actions=only).accepted
        assert not accepts(pre, post, [], max_steps=1).accepted  # the correct protocol has no such step
        text = "\n".join(cex.lines())
        assert f"action: {c.action}(" in text and "pre-state:" in text and "post-state:" in text


def test_exit_code_precedence() -> None:
    def rep(*statuses: str) -> ProofReport:
        return ProofReport(bugs=[], checks=[CheckResult("I", INIT, s, 1.0) for s in statuses])

    assert rep(PROVED).exit_code == EXIT_OK
    assert rep(PROVED, UNKNOWN).exit_code == EXIT_UNKNOWN
    assert rep(UNKNOWN, NOT_INDUCTIVE).exit_code == EXIT_FAILED


def test_unknown_bug_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown bug"):
        prove(["no-such-bug"])


def _kgc(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([str(KGC), "prove", *args], capture_output=True, text=True, timeout=120, env=env)


def test_kgc_prove_json_last_line_and_exit_0() -> None:
    run = _kgc("--json")
    assert run.returncode == 0, run.stdout + run.stderr
    last = json.loads(run.stdout.strip().splitlines()[-1])
    assert last["ok"] is True and last["exit_code"] == 0 and last["counterexamples"] == []
    assert {c["status"] for c in last["checks"]} == {"proved"}
    assert "SingleLeaderPerGeneration" in run.stdout and "proved" not in run.stdout.splitlines()[0]


def test_kgc_prove_with_a_bug_exits_10_with_the_counterexample() -> None:
    run = _kgc("--bug", "generation_not_bumped", "--json")
    assert run.returncode == 10, run.stdout + run.stderr
    assert "counterexample to induction: CompleteJoin breaks SingleLeaderPerGeneration" in run.stdout
    last = json.loads(run.stdout.strip().splitlines()[-1])
    assert last["ok"] is False and last["bugs"] == ["generation_not_bumped"]
    assert {c["action"] for c in last["counterexamples"]} == {"CompleteJoin", "RebalanceTimeout"}


def test_kgc_prove_unknown_bug_exits_1() -> None:
    run = _kgc("--bug", "no-such-bug")
    assert run.returncode == 1
    assert "unknown bug" in run.stdout + run.stderr


def test_every_listed_trigger_is_taken_by_the_correct_encoding() -> None:
    """StableRebalanceOnlyByTrigger is not proved by triggers nobody pulls: "Stable is never
    left for PreparingRebalance" fails under exactly the actions it lists (a Heartbeat, a
    pending member's leave, a sync... never do it)."""
    from kgc.conformance.proofs.step_properties import StepProperty

    def never(sig, pre, post, action, a, v):  # type: ignore[no-untyped-def]
        return z3.Not(z3.And(pre.group_state == sig.st("Stable"), post.group_state == sig.st("PreparingRebalance")))

    report = prove(invariants=INVARIANTS, step_properties=(StepProperty("NeverRebalanceStable", "", (), never),))
    failed = {c.action for c in report.failures() if c.invariant == "NeverRebalanceStable"}
    assert failed == REBALANCING
    assert {c.invariant for c in report.failures()} == {"NeverRebalanceStable"}
