"""Timed liveness on finite runs (conformance/timed_liveness.py): each property fails a state
sequence that overstays its deadline by one unit and passes one that leaves in time, and the
real coordinator's random runs break none of them."""

from __future__ import annotations

from typing import Any

import pytest

from kgc.conformance.recorder import RANDOM_RUN_CONSTANTS, random_run
from kgc.conformance.timed_liveness import Deadlines, TimedLiveness
from kgc.spec.values import ModelValue

D = Deadlines(session=4, rebalance=2, initial_delay=1, new_member_timeout=6)
C1 = ModelValue("c1")


def _state(now: int, gstate: str = "Stable", **over: Any) -> dict[str, Any]:
    s: dict[str, Any] = {
        "now": now,
        "loaded": True,
        "gstate": gstate,
        "generation": 1,
        "members": frozenset(),
        "pending": frozenset(),
        "awaitingJoin": frozenset(),
        "awaitingSync": frozenset(),
        "newMembers": frozenset(),
        "cphase": {C1: "Stable"},
        "lastAction": {"name": "AdvanceTime", "member": 0, "newMember": 0},
    }
    s.update(over)
    return s


def _run(states: list[dict[str, Any]]) -> dict[str, list[str]]:
    checker, found = TimedLiveness(D), {}
    for s in states:
        found.update(checker.observe(s))
    return found


@pytest.mark.parametrize(
    ("gstate", "prop", "bound"),
    [("PreparingRebalance", "RebalanceCompletes", 3), ("CompletingRebalance", "SyncCompletes", 2)],
)
def test_a_rebalance_phase_must_end_by_its_timeout(gstate: str, prop: str, bound: int) -> None:
    inside = [_state(0)] + [_state(t, gstate, generation=2) for t in range(1, 2 + bound)]
    assert prop not in _run(inside)
    assert prop in _run(inside + [_state(2 + bound, gstate, generation=2)])
    # unloaded: not the coordinator's group any more, no deadline
    assert _run(inside + [_state(2 + bound, "Dead", loaded=False)]) == {}


def test_a_silent_member_must_be_gone_by_its_session_timeout() -> None:
    m = frozenset({1})
    states = [_state(t, members=m) for t in range(0, 5)]
    assert "SilentMemberRemoved" not in _run(states)
    assert "SilentMemberRemoved" in _run(states + [_state(5, members=m)])
    # a heartbeat at 3 moves the deadline
    spoke = _state(3, members=m, lastAction={"name": "Heartbeat", "member": 1, "newMember": 0})
    assert "SilentMemberRemoved" not in _run(states[:3] + [spoke] + [_state(t, members=m) for t in range(4, 8)])
    # a member awaiting its join is excused; a new one only up to the new-member timeout
    waiting = dict(members=m, awaitingJoin=m, gstate="PreparingRebalance")
    assert "SilentMemberRemoved" not in _run([_state(t, **waiting) for t in range(0, 10)])
    new = [_state(t, newMembers=m, **waiting) for t in range(0, 8)]
    assert "new member 1" in " ".join(_run(new)["SilentMemberRemoved"])


def test_a_new_static_member_may_stay_until_its_session_timeout() -> None:
    """updateStaticMemberAndRebalance hands a new static member a new id and reschedules its
    DelayedHeartbeat with the session timeout while it stays new: its bound is the longer of
    the two timeouts (here the new-member timeout is 2, the session 4)."""
    d = Deadlines(session=4, rebalance=2, initial_delay=1, new_member_timeout=2)
    m = frozenset({1})
    waiting = dict(members=m, awaitingJoin=m, newMembers=m, gstate="PreparingRebalance")

    def run(minstance: tuple[Any, ...], until: int) -> dict[str, list[str]]:
        checker, found = TimedLiveness(d), {}
        for t in range(0, until):
            found.update(checker.observe(_state(t, minstance=minstance, **waiting)))
        return found

    static, dynamic = (frozenset({C1}),), (frozenset(),)
    assert "new member 1" in " ".join(run(dynamic, 4)["SilentMemberRemoved"])
    assert "SilentMemberRemoved" not in run(static, 5)
    assert "new static member 1" in " ".join(run(static, 6)["SilentMemberRemoved"])


def test_a_parked_request_must_be_answered_by_its_deadline() -> None:
    parked = [_state(t, cphase={C1: "JoinWait"}) for t in range(0, 4)]
    assert "ParkedRequestAnswered" not in _run(parked)
    assert "ParkedRequestAnswered" in _run(parked + [_state(4, cphase={C1: "JoinWait"})])
    sync = [_state(t, cphase={C1: "SyncWait"}) for t in range(0, 4)]
    assert "SyncGroup" in _run(sync)["ParkedRequestAnswered"][0]


def test_an_append_in_flight_holds_the_sync_phase_without_a_deadline() -> None:
    """doSyncGroup's storeGroup: the leader's SyncGroup, its followers' and CompletingRebalance
    wait for the append's callback, which no coordinator timer bounds; once it is acknowledged
    the deadlines count again from then."""
    write = ({"gen": 2},)
    held = [_state(0)] + [
        _state(t, "CompletingRebalance", generation=2, writes=write, cphase={C1: "SyncWait"}) for t in range(1, 9)
    ]
    assert _run(held) == {}
    after = [_state(t, "CompletingRebalance", generation=2, writes=(), cphase={C1: "SyncWait"}) for t in range(9, 11)]
    assert _run(held + after) == {}
    late = _run(held + after + [_state(11, "CompletingRebalance", generation=2, writes=(), cphase={C1: "SyncWait"})])
    assert "SyncCompletes" in late and "ParkedRequestAnswered" in late


def test_states_without_a_clock_are_skipped() -> None:
    assert TimedLiveness(D).observe({"gstate": "PreparingRebalance"}) == {}


@pytest.mark.parametrize("seed", range(8))
def test_the_real_coordinator_keeps_every_deadline(seed: int) -> None:
    trace = random_run(RANDOM_RUN_CONSTANTS, 60, seed)
    checker = TimedLiveness(Deadlines.of(RANDOM_RUN_CONSTANTS))
    for n, s in enumerate(trace.states):
        assert checker.observe(s) == {}, (n, trace.origins[n])


def _initial(now: int, gstate: str, members: set[int], generation: int = 0) -> dict[str, Any]:
    return _state(now, gstate, generation=generation, members=frozenset(members), mtimeouts=((4, 2),) * 4)


def test_the_initial_rebalance_ends_when_kafkas_initial_delayed_join_does() -> None:
    """Delay 1, rebalance 2: alone the first member's rebalance ends at 1; a second member
    joining the generation-0 group extends it once (newMemberAdded), to 2, and no further."""
    alone = [_state(0, "Empty", generation=0), _initial(0, "PreparingRebalance", {1})]
    assert _run(alone + [_initial(1, "CompletingRebalance", {1}, 1)]) == {}
    assert "InitialDelayedJoinOnTime" in _run(
        alone + [_initial(1, "PreparingRebalance", {1}), _initial(2, "PreparingRebalance", {1})]
    )
    two = alone + [_initial(0, "PreparingRebalance", {1, 2})]
    assert _run(two + [_initial(1, "PreparingRebalance", {1, 2}), _initial(2, "CompletingRebalance", {1, 2}, 1)]) == {}
    early = _run(two + [_initial(1, "CompletingRebalance", {1, 2}, 1)])
    assert "before Kafka's InitialDelayedJoin expires" in early["InitialDelayedJoinOnTime"][0]
    # from no group at all (getOrMaybeCreateGroup), and a member joining a later generation's
    # rebalance from Empty does not extend it (addMemberAndRebalance: generationId == 0 only)
    created = [
        _state(0, "Dead", generation=0),
        _initial(0, "PreparingRebalance", {1}),
        _initial(0, "PreparingRebalance", {1, 2}),
    ]
    assert "InitialDelayedJoinOnTime" in _run(created + [_initial(1, "CompletingRebalance", {1, 2}, 1)])
    later = [
        _state(0, "Empty", generation=3),
        _initial(0, "PreparingRebalance", {1}, 3),
        _initial(0, "PreparingRebalance", {1, 2}, 3),
    ]
    assert _run(later + [_initial(1, "CompletingRebalance", {1, 2}, 4)]) == {}
