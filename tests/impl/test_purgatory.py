"""DelayedOperation / DelayedOperationPurgatory: Kafka's DelayedOperationTest and the races."""

from __future__ import annotations

import copy
import pickle
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgc.impl.clock import VirtualClock
from kgc.impl.purgatory import DelayedOperation, DelayedOperationPurgatory, GroupJoinKey, GroupSyncKey, MemberKey
from kgc.impl.timer import SystemTimer


class MockOp(DelayedOperation):
    """Kafka's MockDelayedOperation plus a log of callbacks."""

    def __init__(self, delay_ms, name="op", log=None, on_expire=None):
        super().__init__(delay_ms)
        self.name = name
        self.completable = False
        self.log = log if log is not None else []
        self.on_expire = on_expire
        self.completions = 0
        self.expirations = 0

    def try_complete(self):
        return self.force_complete() if self.completable else False

    def on_complete(self):
        self.completions += 1
        self.log.append(("complete", self.name))

    def on_expiration(self):
        self.expirations += 1
        self.log.append(("expire", self.name))
        if self.on_expire is not None:
            self.on_expire()


@pytest.fixture
def env():
    clock = VirtualClock(0)
    timer = SystemTimer(clock)
    return clock, timer, DelayedOperationPurgatory("mock", timer)


def test_request_satisfaction(env):
    _, _, purgatory = env
    r1, r2 = MockOp(100_000), MockOp(100_000)
    assert purgatory.check_and_complete("test1") == 0
    assert purgatory.try_complete_else_watch(r1, ["test1"]) is False
    assert purgatory.check_and_complete("test1") == 0
    assert purgatory.try_complete_else_watch(r2, ["test2"]) is False
    assert purgatory.check_and_complete("test2") == 0
    r1.completable = True
    assert purgatory.check_and_complete("test1") == 1
    assert purgatory.check_and_complete("test1") == 0
    r2.completable = True
    assert purgatory.check_and_complete("test2") == 1
    assert purgatory.check_and_complete("test2") == 0
    assert (r1.completions, r1.expirations, r2.completions, r2.expirations) == (1, 0, 1, 0)
    assert purgatory.num_delayed() == 0
    assert purgatory.watched() == 0


def test_immediately_completable_is_neither_watched_nor_timed(env):
    _, timer, purgatory = env
    op = MockOp(100)
    op.completable = True
    assert purgatory.try_complete_else_watch(op, [GroupJoinKey("g")]) is True
    assert op.is_completed() and op.completions == 1
    assert purgatory.watched() == 0
    assert purgatory.num_delayed() == 0
    assert timer.size() == 0


def test_empty_watch_keys_rejected(env):
    with pytest.raises(ValueError):
        env[2].try_complete_else_watch(MockOp(10), [])


def test_request_expiry_runs_on_complete_then_on_expiration(env):
    clock, timer, purgatory = env
    log = []
    r1, r2 = MockOp(20, "r1", log), MockOp(200_000, "r2", log)
    purgatory.try_complete_else_watch(r1, ["test1"])
    purgatory.try_complete_else_watch(r2, ["test2"])
    timer.advance_to(19)
    assert not r1.is_completed()
    timer.advance_to(20)
    assert log == [("complete", "r1"), ("expire", "r1")]
    assert r1.is_completed() and not r2.is_completed()
    assert purgatory.num_delayed() == 1
    # the expired op is still on its watcher list until checked or purged (as in Kafka)
    assert purgatory.watched() == 2
    assert purgatory.check_and_complete("test1") == 0
    assert purgatory.watched() == 1


def test_request_purge_counts(env):
    _, _, purgatory = env
    r1, r2, r3 = MockOp(100_000), MockOp(100_000), MockOp(100_000)
    purgatory.try_complete_else_watch(r1, ["test1"])
    purgatory.try_complete_else_watch(r2, ["test1", "test2"])
    purgatory.try_complete_else_watch(r3, ["test1", "test2", "test3"])
    assert purgatory.num_delayed() == 3
    assert purgatory.watched() == 6
    r2.completable = True
    r2.try_complete()
    assert purgatory.num_delayed() == 2
    r3.completable = True
    r3.try_complete()
    assert purgatory.num_delayed() == 1
    purgatory.check_and_complete("test1")
    assert purgatory.watched() == 4
    purgatory.check_and_complete("test2")
    assert purgatory.watched() == 2
    purgatory.check_and_complete("test3")
    assert purgatory.watched() == 1


def test_cancel_for_key_returns_cancelled_operations(env):
    clock, timer, purgatory = env
    a, b, c = MockOp(10_000), MockOp(10_000), MockOp(10_000)
    purgatory.try_complete_else_watch(a, ["key"])
    purgatory.try_complete_else_watch(b, ["key"])
    purgatory.try_complete_else_watch(c, ["key2"])
    cancelled = purgatory.cancel_for_key("key")
    assert cancelled == [a, b]
    assert purgatory.num_delayed() == 1
    assert purgatory.watched() == 1
    assert purgatory.cancel_for_key("key") == []
    assert purgatory.cancel_for_key("nope") == []
    timer.advance_to(20_000)
    # cancelled operations are not completed and never expire
    assert (a.completions, a.expirations, a.is_completed()) == (0, 0, False)
    assert (c.completions, c.expirations) == (1, 1)


def test_cancel_for_key_leaves_out_completed_operations(env):
    _, _, purgatory = env
    a, b = MockOp(10_000), MockOp(10_000)
    purgatory.try_complete_else_watch(a, ["key", "other"])
    purgatory.try_complete_else_watch(b, ["key"])
    a.completable = True
    assert purgatory.check_and_complete("other") == 1
    assert purgatory.cancel_for_key("key") == [b]


def test_force_complete_wins_once(env):
    _, timer, purgatory = env
    op = MockOp(50)
    purgatory.try_complete_else_watch(op, ["k"])
    assert op.force_complete() is True
    assert op.force_complete() is False
    assert timer.size() == 0
    op.run()  # a late expiry must not fire callbacks again
    assert (op.completions, op.expirations) == (1, 0)


def test_completed_by_check_in_the_same_advance_never_expires(env):
    # X and Y both expire at 10; X's expiration makes Y completable and checks Y's key,
    # so Y completes through check_and_complete: on_complete once, on_expiration never.
    clock, timer, purgatory = env
    log = []
    y = MockOp(10, "y", log)

    def complete_y():
        y.completable = True
        assert purgatory.check_and_complete(MemberKey("g", "y")) == 1

    x = MockOp(10, "x", log, on_expire=complete_y)
    purgatory.try_complete_else_watch(x, [MemberKey("g", "x")])
    purgatory.try_complete_else_watch(y, [MemberKey("g", "y")])
    assert timer.advance_to(10) == 1  # y's timer entry was cancelled by force_complete
    assert log == [("complete", "x"), ("expire", "x"), ("complete", "y")]
    assert (y.completions, y.expirations) == (1, 0)
    assert purgatory.num_delayed() == 0


def test_expiry_wins_over_a_later_check(env):
    clock, timer, purgatory = env
    op = MockOp(10, "op")
    purgatory.try_complete_else_watch(op, [GroupSyncKey("g")])
    timer.advance_to(10)
    op.completable = True
    assert purgatory.check_and_complete(GroupSyncKey("g")) == 0
    assert (op.completions, op.expirations) == (1, 1)


def test_operation_completing_between_the_two_checks_is_not_timed(env):
    # Kafka's second tryComplete after watching: the op completes there and is not armed.
    _, timer, purgatory = env

    class SecondTime(MockOp):
        calls = 0

        def try_complete(self):
            self.calls += 1
            return self.force_complete() if self.calls == 2 else False

    op = SecondTime(100)
    assert purgatory.try_complete_else_watch(op, ["k"]) is True
    assert timer.size() == 0
    assert purgatory.num_delayed() == 0
    assert purgatory.watched() == 1  # watched, completed; dropped on check/purge
    purgatory.check_and_complete("k")
    assert purgatory.watched() == 0


def test_multi_key_operation_is_dropped_from_the_checked_key_only(env):
    _, _, purgatory = env
    op = MockOp(1_000)
    purgatory.try_complete_else_watch(op, ["a", "b"])
    op.completable = True
    assert purgatory.check_and_complete("a") == 1
    assert purgatory.watch_keys() == ["b"]
    assert purgatory.check_and_complete("b") == 0
    assert purgatory.watched() == 0
    assert purgatory.watch_keys() == []


def test_watch_added_during_check_of_the_same_key_survives(env):
    _, _, purgatory = env
    late = MockOp(1_000, "late")

    class Chain(MockOp):
        def on_complete(self):
            super().on_complete()
            purgatory.try_complete_else_watch(late, ["k"])

    first = Chain(1_000, "first")
    purgatory.try_complete_else_watch(first, ["k"])
    first.completable = True
    assert purgatory.check_and_complete("k") == 1
    assert purgatory.watched() == 1
    late.completable = True
    assert purgatory.check_and_complete("k") == 1


def test_watchers_are_purged_after_many_completions():
    clock = VirtualClock(0)
    timer = SystemTimer(clock)
    purgatory = DelayedOperationPurgatory("heartbeat", timer, purge_interval=100)
    ops = [MockOp(10 + i % 7) for i in range(1_000)]
    for i, op in enumerate(ops):
        purgatory.try_complete_else_watch(op, [MemberKey("g", f"m{i}")])
    assert purgatory.watched() == 1_000 and purgatory.num_delayed() == 1_000
    timer.advance_to(100)  # all expire; the lists still hold them
    assert purgatory.num_delayed() == 0
    assert purgatory.watched() == 1_000
    fresh = MockOp(10_000)
    purgatory.try_complete_else_watch(fresh, [MemberKey("g", "fresh")])
    assert purgatory.watched() == 1
    assert purgatory.watch_keys() == [MemberKey("g", "fresh")]


def test_purge_waits_for_purge_interval():
    clock = VirtualClock(0)
    timer = SystemTimer(clock)
    purgatory = DelayedOperationPurgatory("p", timer, purge_interval=50)
    for i in range(50):
        purgatory.try_complete_else_watch(MockOp(5), [i])
    timer.advance_to(5)
    purgatory.try_complete_else_watch(MockOp(5_000), ["x"])
    assert purgatory.watched() == 51  # 50 completed is not more than 50
    op = MockOp(5)
    purgatory.try_complete_else_watch(op, ["y"])
    op.force_complete()
    purgatory.try_complete_else_watch(MockOp(5_000), ["z"])
    assert purgatory.watched() == 2


def test_watched_stays_proportional_to_live_operations_under_churn():
    clock = VirtualClock(0)
    timer = SystemTimer(clock)
    purgatory = DelayedOperationPurgatory("p", timer, purge_interval=200)
    rng = random.Random(7)
    live = []
    peak_ratio = 0.0
    for step in range(20_000):
        op = MockOp(rng.randrange(1, 3_000))
        purgatory.try_complete_else_watch(op, [rng.randrange(5_000), rng.randrange(5_000)])
        live.append(op)
        if rng.random() < 0.3:
            live.pop(rng.randrange(len(live))).force_complete()
        if step % 10 == 0:
            timer.advance_to(clock.now_ms() + 1)
        if step % 37 == 0:  # watched() is O(keys): sample it
            pending = purgatory.num_delayed()
            assert pending == timer.size()
            peak_ratio = max(peak_ratio, purgatory.watched() / (2 * pending + 2 * 200 + 2))
    assert peak_ratio <= 1.3


def test_purgatories_sharing_a_timer_count_their_own_operations():
    clock = VirtualClock(0)
    timer = SystemTimer(clock)
    join = DelayedOperationPurgatory("join", timer)
    heartbeat = DelayedOperationPurgatory("heartbeat", timer)
    join.try_complete_else_watch(MockOp(100), [GroupJoinKey("g")])
    for m in ("a", "b"):
        heartbeat.try_complete_else_watch(MockOp(50), [MemberKey("g", m)])
    assert (join.num_delayed(), heartbeat.num_delayed(), timer.size()) == (1, 2, 3)
    timer.advance_to(50)
    assert (join.num_delayed(), heartbeat.num_delayed(), timer.size()) == (1, 0, 1)


def test_keys_are_value_objects():
    assert MemberKey("g", "m") == MemberKey(group_id="g", member_id="m")
    assert MemberKey("g", "m") != MemberKey("g", "n")
    assert (MemberKey("g", "m").group_id, MemberKey("g", "m").member_id) == ("g", "m")
    assert len({GroupJoinKey("g"), GroupJoinKey("g"), GroupSyncKey("g")}) == 2
    assert GroupJoinKey("g") != GroupSyncKey("g")
    assert repr(GroupSyncKey("g")) == "GroupSyncKey(group_id='g')"
    assert copy.deepcopy(MemberKey("g", "m")) == MemberKey("g", "m")
    assert pickle.loads(pickle.dumps(GroupJoinKey("g"))) == GroupJoinKey("g")
    with pytest.raises(AttributeError):
        GroupJoinKey("g").group_id = "h"


@settings(database=None, max_examples=200, deadline=None)
@given(
    script=st.lists(
        st.one_of(
            st.tuples(st.just("watch"), st.integers(0, 60), st.lists(st.integers(0, 4), min_size=1, max_size=3)),
            st.tuples(st.just("check"), st.integers(0, 4), st.integers(0, 50)),
            st.tuples(st.just("force"), st.integers(0, 50)),
            st.tuples(st.just("cancel_key"), st.integers(0, 4)),
            st.tuples(st.just("advance"), st.integers(0, 30)),
        ),
        max_size=80,
    ),
    purge_interval=st.integers(0, 5),
)
def test_exactly_once_invariants(script, purge_interval):
    clock = VirtualClock(0)
    timer = SystemTimer(clock)
    purgatory = DelayedOperationPurgatory("p", timer, purge_interval=purge_interval)
    ops: list[MockOp] = []
    cancelled: set[int] = set()
    for step in script:
        kind = step[0]
        if kind == "watch":
            op = MockOp(step[1], name=len(ops))
            ops.append(op)
            purgatory.try_complete_else_watch(op, step[2])
        elif kind == "check" and ops:
            ops[step[2] % len(ops)].completable = True
            purgatory.check_and_complete(step[1])
        elif kind == "force" and ops:
            ops[step[1] % len(ops)].force_complete()
        elif kind == "cancel_key":
            cancelled.update(op.name for op in purgatory.cancel_for_key(step[1]))
        elif kind == "advance":
            timer.advance_to(clock.now_ms() + step[1])
        for op in ops:
            assert op.completions == (1 if op.is_completed() else 0)
            assert op.expirations <= op.completions
            assert op.log[:1] in ([], [("complete", op.name)])
        in_timer = [op for op in ops if op.deadline_ms() is not None]
        assert purgatory.num_delayed() == len(in_timer) == timer.size()
        assert all(not op.is_completed() and op.name not in cancelled for op in in_timer)
    # everything not cancelled ends completed once the clock passes every deadline
    timer.advance_to(clock.now_ms() + 61)
    for op in ops:
        assert op.is_completed() or op.name in cancelled


def test_rewatching_a_key_replaces_its_expired_operation(env):
    # the heartbeat pattern: the old DelayedHeartbeat expired, a new one is watched on the key
    _, timer, purgatory = env
    key = MemberKey("g", "m")
    old = MockOp(10)
    purgatory.try_complete_else_watch(old, [key])
    timer.advance_to(10)
    assert purgatory.watched() == 1 and old.is_completed()
    new = MockOp(10)
    purgatory.try_complete_else_watch(new, [key])
    assert purgatory.watched() == 1
    new.completable = True
    assert purgatory.check_and_complete(key) == 1
    assert purgatory.watched() == 0
