"""The tie between the Z3 encoding (conformance/proofs/) and the TLA+ spec: transitions TLC
takes in simulation of the `failover` model (both JoinGroup flavours, crashes, leaves, an
unload and a load) are mapped to the encoding's group-side fields (from_spec_state) and every
one must be accepted by Z3 as stuttering or a short chain of encoded actions. If either side
changes a handler and the other does not follow, a transition stops being accepted and this
test names it with the two states. The client-side fields of the encoding (what clients learnt,
the leader history) are left free: the spec keeps that knowledge per client instead.

The check can fail: the transitions of the spec's own seeded bugs `generation_not_bumped`,
`leader_not_reassigned`, `last_leave_no_rebalance`, `rebalance_rollback`,
`heartbeat_rebalances_stable` and `pending_leave_rebalances` are rejected by the correct
encoding and accepted by the encoding with the same bug.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from kgc.conformance.mbt import simulate
from kgc.conformance.proofs.abstraction import CLIENT_FIELDS, AbstractState, accepts, from_spec_state
from kgc.conformance.proofs.step_properties import TRIGGER_ACTIONS
from kgc.spec.itf import read_itf

pytestmark = pytest.mark.slow

#: Spec actions whose transitions must all be seen (every protocol step the encoding has).
PROTOCOL_ACTIONS = {
    "JoinGroupUnknownMember",
    "JoinGroupPendingMember",
    "JoinGroupKnownMember",
    "SyncGroupLeader",
    "SyncGroupFollower",
    "Heartbeat",
    "LeaveGroup",
    "SessionTimeoutExpiry",
    "PendingMemberExpiry",
    "RebalanceTimeout",
    "InitialDelayedJoin",
    "DelayedSyncExpiry",
    "GroupUnload",
    "GroupLoad",
}
#: The bug models have no failover, and the spec keeps its store only when a failover can
#: happen (StoreGroup): there the encoding's store fields are free as well.
NO_STORE = CLIENT_FIELDS + ("stored", "stored_generation", "stored_leader", "stored_members")
PER_ACTION = 12  # transitions checked per spec action (the first seen that change the group)


def _transitions(model: str, tmp: Path, traces: int, depth: int, seed: int) -> list[tuple[str, Any, Any]]:
    result = simulate(model, traces, depth, seed, tmp)
    files = list(result.files)
    if result.counterexample is not None:
        files.append(result.counterexample)
    out = []
    for f in files:
        _, states = read_itf(Path(f))
        for pre, post in zip(states, states[1:]):
            out.append((str(post["lastAction"]["name"]), pre, post))
    return out


def _sample(transitions: list[tuple[str, Any, Any]]) -> dict[str, list[tuple[AbstractState, AbstractState]]]:
    """Per action, the first PER_ACTION distinct group-side transitions (stuttering ones count
    once: they need no solver)."""
    picked: dict[str, list[tuple[AbstractState, AbstractState]]] = defaultdict(list)
    seen = set()
    for name, pre, post in transitions:
        pair = (from_spec_state(pre), from_spec_state(post))
        key = (name, repr(pair))  # the states hold dicts (the client fields): not hashable
        if key in seen or len(picked[name]) >= PER_ACTION:
            continue
        seen.add(key)
        picked[name].append(pair)
    return picked


@pytest.fixture(scope="module")
def failover_transitions(tmp_path_factory) -> dict[str, list[tuple[AbstractState, AbstractState]]]:
    return _sample(_transitions("failover", tmp_path_factory.mktemp("sim"), 300, 40, 2026))


def test_every_spec_transition_is_a_step_of_the_z3_encoding(failover_transitions) -> None:
    missing = PROTOCOL_ACTIONS - set(failover_transitions)
    assert not missing, f"the simulation never took {sorted(missing)}: raise traces/depth"
    rejected = []
    checked = 0
    for name, pairs in sorted(failover_transitions.items()):
        for before, after in pairs:
            verdict = accepts(before, after, free=CLIENT_FIELDS)
            checked += 1
            if not verdict.accepted:
                rejected.append(f"{name}: {before.diff(after)}\n  before {before}")
    print(f"{checked} spec transitions accepted, over {len(failover_transitions)} actions")
    assert checked >= 100
    assert not rejected, f"{len(rejected)} of {checked} spec transitions are no Z3 step:\n" + "\n".join(rejected[:5])


def test_a_spec_bug_is_no_step_of_the_correct_encoding(tmp_path) -> None:
    """generation_not_bumped in the spec (onCompleteJoin keeps the generation) against the
    encoding without and with its twin: the tie must see the difference."""
    picked = _sample(_transitions("bug_generation_not_bumped", tmp_path, 200, 30, 7))
    completions = [
        (b, a)
        for name in ("RebalanceTimeout", "InitialDelayedJoin", "JoinGroupKnownMember", "SyncGroupFollower")
        for b, a in picked.get(name, [])
        if b.group_state == "PreparingRebalance" and a.group_state in ("CompletingRebalance", "Empty")
    ]
    assert completions, "the bug model's simulation formed no generation"
    rejected = [p for p in completions if not accepts(*p, free=NO_STORE).accepted]
    assert rejected, "the correct encoding accepts every generation the buggy spec forms without a bump"
    for b, a in rejected:
        assert accepts(b, a, bugs=("generation_not_bumped",), free=NO_STORE).accepted, b.diff(a)


#: spec bug model's defect -> the spec actions that carry it (its Z3 twin has the same name)
TWINS = {
    "leader_not_reassigned": ("LeaveGroup", "SessionTimeoutExpiry", "DelayedSyncExpiry"),
    "last_leave_no_rebalance": ("LeaveGroup", "SessionTimeoutExpiry"),
    "rebalance_rollback": TRIGGER_ACTIONS,  # every prepareRebalance, from CompletingRebalance
    "heartbeat_rebalances_stable": ("Heartbeat",),
    "pending_leave_rebalances": ("LeaveGroup",),
}


def _by_shape(
    bug: str, transitions: list[tuple[str, Any, Any]], per_shape: int = 3
) -> list[tuple[AbstractState, AbstractState]]:
    """The first `per_shape` transitions of each action carrying the defect per shape (the
    set of group-side fields the step changes): a defect is one shape of its action (a pending
    member's leave, not a member's), which the first few transitions of the action may miss."""
    picked: dict[tuple[str, tuple[str, ...]], list[tuple[AbstractState, AbstractState]]] = defaultdict(list)
    for name, pre, post in transitions:
        a, b = from_spec_state(pre), from_spec_state(post)
        shape = (name, tuple(sorted(a.diff(b))))
        if name in TWINS[bug] and shape[1] and len(picked[shape]) < per_shape and (a, b) not in picked[shape]:
            picked[shape].append((a, b))
    return [p for pairs in picked.values() for p in pairs]


@pytest.mark.parametrize("bug", sorted(TWINS))
def test_a_spec_bug_is_a_step_of_its_z3_twin_only(tmp_path, bug: str) -> None:
    """Some transition of the spec's bug model is one step of the encoding with the same-named
    Z3 variant and of no correct action, and every one the correct encoding rejects (chains
    included) the twin accepts: one defect in both."""
    pairs = _by_shape(bug, _transitions(f"bug_{bug}", tmp_path, 200, 30, 7))
    # one step of the twin that no single correct step makes (a chain of correct steps may:
    # a pending member's join then its leave also takes an Empty group to PreparingRebalance)
    single = [
        p
        for p in pairs
        if accepts(*p, bugs=(bug,), free=NO_STORE, max_steps=1).accepted
        and not accepts(*p, free=NO_STORE, max_steps=1).accepted
    ]
    assert single, f"no {bug} transition of the spec is a step of the twin only ({len(pairs)} sampled)"
    for b, a in [p for p in pairs if not accepts(*p, free=NO_STORE).accepted]:
        assert accepts(b, a, bugs=(bug,), free=NO_STORE).accepted, (b.diff(a), b)
