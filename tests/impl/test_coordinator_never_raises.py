"""Property: whatever clients send, the coordinator never raises, answers every request with a
result carrying a known Errors value, answers each callback at most once, and keeps its group
metadata consistent.

Thousands of random request sequences: valid and invalid group ids and member ids (including
ids the coordinator handed out, pending ones and fenced ones), stale and future generations,
out-of-range session and rebalance timeouts, inconsistent protocols, static instance ids,
interleaved clock ticks, unload/load, and a store that may defer or fail its writes.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgc.impl.clock import VirtualClock
from kgc.impl.coordinator import (
    GroupConfig,
    GroupCoordinator,
    JoinGroupResult,
    LeaveGroupResult,
    LeaveMemberIdentity,
    SyncGroupResult,
)
from kgc.impl.errors import Errors
from kgc.impl.group import GroupState
from kgc.impl.store import InMemoryGroupStore
from kgc.impl.timer import SystemTimer

GROUPS = ["g", "g", "g", "g", "h", ""]
INSTANCES: list[str | None] = [None, None, None, None, "i1", "i2"]
STATIC_INSTANCES: list[str | None] = ["i1", "i2", "i3", None]
SESSIONS = [500, 500, 500, 2000, 100, 10, 5, 10**9]  # config accepts [10, 100000]
REBALANCES = [500, 500, 50, 3000, 0, -5]
PTYPES = ["consumer"] * 6 + ["connect", ""]
PROTOCOLS = [
    [("range", "")],
    [("range", "")],
    [("range", "")],
    [("range", "")],
    [("range", "x")],
    [("roundrobin", "")],
    [("range", ""), ("roundrobin", "")],
    [("roundrobin", ""), ("range", "")],
    [],
    [("range", ""), ("range", "dup")],
]
TICKS = [0, 1, 10, 49, 50, 50, 100, 100, 200, 499, 500, 3000, 100000]
STORE_FAILURES: list[Errors | None] = [None] * 6 + [Errors.NOT_COORDINATOR, Errors.UNKNOWN_SERVER_ERROR]

idx = st.integers(min_value=0, max_value=31)
# who: 0-11 a current member of the group (0 its leader), 12-13 a pending member, 14 "",
# 15 "bogus", 16+ any member id ever handed out (removed, fenced, other group ...)
who = st.integers(min_value=0, max_value=23)
gen = st.sampled_from([-2, -2, -2, -2, -2, -1, 0, 1, 2, 3])  # -2: the group's generation
op = st.one_of(
    st.tuples(st.just("join"), idx, who, idx, st.booleans(), idx, idx, idx, idx),
    st.tuples(st.just("join"), idx, st.just(14), idx, st.booleans(), idx, idx, idx, idx),
    st.tuples(st.just("sync"), idx, who, gen, st.booleans(), idx, idx, idx),
    st.tuples(st.just("sync"), idx, st.just(0), gen, st.just(True), st.just(0), st.just(0), idx),
    st.tuples(st.just("heartbeat"), idx, who, gen, idx),
    st.tuples(st.just("leave"), idx, st.lists(st.tuples(who, idx), min_size=0, max_size=3)),
    st.tuples(st.just("tick"), idx),
    st.tuples(st.just("tick"), idx),
    st.tuples(st.just("tick"), idx),
    st.tuples(st.just("unload"), idx),
    st.tuples(st.just("load"), idx),
    st.tuples(st.just("load"), idx),
    st.tuples(st.just("store"), idx, st.booleans()),
    # well-behaved clients, so that sequences also reach Stable and stay there a while
    st.tuples(st.just("sync_all"), idx),
    st.tuples(st.just("sync_all"), idx),
    st.tuples(st.just("sync_all"), idx),
    st.tuples(st.just("heartbeat_all"), idx),
    st.tuples(st.just("heartbeat_all"), idx),
)
scenario = st.tuples(
    st.booleans(),  # calm: only valid values, no store failures
    st.booleans(),  # mostly static members
    st.sampled_from([False, False, True]),  # store defers its acknowledgements
    st.sampled_from([None, 1, 2, 3]),  # group.max.size
    st.sampled_from([0, 50]),  # initial rebalance delay
    st.lists(op, min_size=15, max_size=80),
)


def pick(seq: list[Any], i: int) -> Any:
    return seq[i % len(seq)]


class Tracked:
    """A response callback that checks the result's type and counts its calls."""

    def __init__(self, kind: str, expected: type) -> None:
        self.kind = kind
        self.expected = expected
        self.calls: list[Any] = []

    def __call__(self, result: Any) -> None:
        self.calls.append(result)
        assert len(self.calls) == 1, f"{self.kind} answered twice: {self.calls}"
        assert isinstance(result, self.expected), result
        error = result if isinstance(result, Errors) else result.error
        assert isinstance(error, Errors), result
        if isinstance(result, LeaveGroupResult):
            assert all(isinstance(e, Errors) for _, _, e in result.member_responses)


FIRE_BUDGET = 100_000


def advance(timer: SystemTimer, clock: VirtualClock, ms: int) -> None:
    """Advance like `advance_to`, one timer at a time, failing instead of hanging when timers
    keep re-arming at the same instant (a loop a virtual clock never leaves)."""
    target = clock.now_ms() + ms
    fired = 0
    while True:
        deadline = timer.next_deadline_ms()
        if deadline is None or deadline > target:
            break
        timer.fire_next()
        fired += 1
        assert fired < FIRE_BUDGET, f"timers keep firing at {clock.now_ms()} ms"
    timer.advance_to(target)


def check_group_invariants(coordinator: GroupCoordinator) -> None:
    for group_id in coordinator.group_ids():
        g = coordinator.group(group_id)
        assert g is not None and g.state is not GroupState.Dead
        members = g.members
        assert g.num_members_awaiting_join == sum(m.is_awaiting_join for m in members.values())
        assert not (g.pending_members & set(members))
        assert g.pending_sync_members <= set(members)
        assert (g.leader_id is None) == (not members)
        assert g.leader_id is None or g.leader_id in members
        assert g.static_members == {
            m.group_instance_id: mid for mid, m in members.items() if m.group_instance_id is not None
        }
        assert all(m.member_id == mid for mid, m in members.items())
        if g.state is GroupState.Empty:
            assert not members
        if g.state in (GroupState.Stable, GroupState.CompletingRebalance):
            assert members and g.protocol_name is not None
            for m in members.values():
                m.metadata(g.protocol_name)  # every member supports the chosen protocol
                assert not m.is_awaiting_join or g.state is GroupState.Stable
        if g.state is not GroupState.CompletingRebalance:
            assert not any(m.is_awaiting_sync for m in members.values())


def run(calm: bool, static: bool, defer: bool, max_size: int | None, delay: int, ops: list[tuple]) -> None:
    instances = STATIC_INSTANCES if static else INSTANCES
    groups = GROUPS[:5] if calm else GROUPS
    sessions = SESSIONS[:5] if calm else SESSIONS
    rebalances = REBALANCES[:4] if calm else REBALANCES
    ptypes = PTYPES[:6] if calm else PTYPES
    protocols_choice = PROTOCOLS[:6] if calm else PROTOCOLS
    store_failures = [None] if calm else STORE_FAILURES
    clock = VirtualClock()
    timer = SystemTimer(clock)
    store = InMemoryGroupStore(defer=defer)
    coordinator = GroupCoordinator(
        GroupConfig(
            min_session_timeout_ms=10,
            max_session_timeout_ms=100000,
            initial_rebalance_delay_ms=delay,
            max_group_size=max_size,
            new_member_join_timeout_ms=5000,
        ),
        clock,
        timer,
        store,
        member_id_seed=1,
    )
    pool: list[str] = ["", "bogus"]
    callbacks: list[Tracked] = []
    unanswered_joins: list[Tracked] = []

    def track(kind: str, expected: type) -> Tracked:
        t = Tracked(kind, expected)
        callbacks.append(t)
        if kind == "join":
            unanswered_joins.append(t)
        return t

    def remember_member_ids() -> None:
        """Member ids handed out so far become ids later requests may use."""
        for t in [t for t in unanswered_joins if t.calls]:
            unanswered_joins.remove(t)
            member_id = t.calls[0].member_id
            if member_id and member_id not in pool:
                pool.append(member_id)

    def member(group_id: str, w: int) -> str:
        grp = coordinator.group(group_id)
        if w < 12 and grp is not None and grp.members:
            return grp.leader_id if w == 0 and grp.leader_id else pick(list(grp.members), w)
        if w < 14 and grp is not None and grp.pending_members:
            return pick(sorted(grp.pending_members), w)
        if w == 15:
            return "bogus"
        if w >= 16:
            return pick(pool, w)
        return ""

    def generation(group_id: str, g: int) -> int:
        grp = coordinator.group(group_id)
        if g == -2:
            return grp.generation_id if grp is not None else 0
        return g

    for o in ops:
        kind = o[0]
        if kind == "join":
            _, gi, mi, ii, req, si, ri, pti, pi = o
            t = track("join", JoinGroupResult)
            group_id = pick(groups, gi)
            member_id = member(group_id, mi)
            grp = coordinator.group(group_id)
            instance = pick(instances, ii)
            protocols = pick(protocols_choice, pi)
            if grp is not None and member_id in grp.members:
                if ii % 3 == 0:
                    instance = grp.members[member_id].group_instance_id  # its own instance
                if pi % 3 != 0:
                    protocols = grp.members[member_id].protocols  # unchanged metadata
            coordinator.handle_join_group(
                group_id,
                member_id,
                instance,
                req,
                "c",
                "host",
                pick(rebalances, ri),
                pick(sessions, si),
                pick(ptypes, pti),
                protocols,
                t,
            )
        elif kind == "sync":
            _, gi, mi, gen, full, pti, pni, ii = o
            group_id = pick(groups, gi)
            grp = coordinator.group(group_id)
            member_id = member(group_id, mi)
            assignment = {m: f"a-{m}" for m in grp.members} if full and grp is not None else {member_id: "x"}
            instance = pick(instances, ii)
            if grp is not None and member_id in grp.members and ii % 3 != 1:
                instance = grp.members[member_id].group_instance_id
            t = track("sync", SyncGroupResult)
            coordinator.handle_sync_group(
                group_id,
                generation(group_id, gen),
                member_id,
                pick([None, None, "consumer", "connect"], pti),
                pick([None, None, "range", "roundrobin"], pni),
                instance,
                assignment,
                t,
            )
        elif kind == "heartbeat":
            _, gi, mi, gen, ii = o
            group_id = pick(groups, gi)
            t = track("heartbeat", Errors)
            member_id = member(group_id, mi)
            grp = coordinator.group(group_id)
            instance = pick(instances, ii)
            if grp is not None and member_id in grp.members and ii % 3 != 1:
                instance = grp.members[member_id].group_instance_id
            coordinator.handle_heartbeat(group_id, member_id, instance, generation(group_id, gen), t)
        elif kind == "leave":
            _, gi, members = o
            group_id = pick(groups, gi)
            t = track("leave", LeaveGroupResult)
            coordinator.handle_leave_group(
                group_id, [LeaveMemberIdentity(member(group_id, mi), pick(instances, ii)) for mi, ii in members], t
            )
        elif kind in ("sync_all", "heartbeat_all"):
            group_id = pick(groups, o[1])
            grp = coordinator.group(group_id)
            if grp is not None:
                leader = grp.leader_id
                ids = [m for m in grp.members if m != leader] + ([leader] if leader else [])
                for m in ids:
                    if m not in grp.members:
                        continue
                    instance = grp.members[m].group_instance_id
                    if kind == "sync_all":
                        t = track("sync", SyncGroupResult)
                        coordinator.handle_sync_group(
                            group_id,
                            grp.generation_id,
                            m,
                            "consumer",
                            grp.protocol_name,
                            instance,
                            {x: f"a-{x}" for x in grp.members} if m == leader else {},
                            t,
                        )
                    else:
                        t = track("heartbeat", Errors)
                        coordinator.handle_heartbeat(group_id, m, instance, grp.generation_id, t)
        elif kind == "tick":
            advance(timer, clock, pick(TICKS, o[1]))
        elif kind == "unload":
            coordinator.on_group_unloaded(pick(groups, o[1]))
        elif kind == "load":
            coordinator.on_group_loaded(pick(groups, o[1]))
        elif kind == "store":
            store.fail_with = pick(store_failures, o[1])
            if o[2]:
                store.complete_pending()
        remember_member_ids()
        check_group_invariants(coordinator)
        assert coordinator.internal_errors == [], coordinator.internal_errors[0]
        assert coordinator.duplicate_answers == 0

    # Let every timer run out and every write complete; nothing may break on the way.
    store.fail_with = None
    for _ in range(3):
        store.complete_pending()
        advance(timer, clock, 10**6)
    check_group_invariants(coordinator)
    assert coordinator.internal_errors == [], coordinator.internal_errors[0]
    assert coordinator.duplicate_answers == 0
    assert coordinator.callback_errors == 0
    for t in callbacks:
        assert len(t.calls) <= 1


@settings(
    database=None,
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenario)
def test_coordinator_never_raises(case: tuple) -> None:
    run(*case)


def test_never_raises_on_a_long_fixed_sequence() -> None:
    """A deterministic smoke run mixing every request kind, so a failure here is reproducible
    without Hypothesis."""
    ops: list[tuple] = []
    for i in range(400):
        ops.append(("join", i % 2, i, i // 3, i % 5 == 0, 2 + i % 3, 3, 0, i % 6))
        ops.append(("sync", i % 2, i + 1, -2, True, 0, 0, i))
        ops.append(("heartbeat", i % 2, i + 2, -2, 0))
        if i % 7 == 0:
            ops.append(("leave", 0, [(i, 0), (i + 3, 3)]))
        if i % 11 == 0:
            ops.append(("unload", i))
            ops.append(("load", i + 1))
            ops.append(("load", i))
        ops.append(("tick", i))
    run(False, False, False, 3, 50, ops)
    run(False, True, True, None, 0, ops)
    run(True, True, False, None, 50, ops)
