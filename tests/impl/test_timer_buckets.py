"""The wheel's list buckets: lazy removal of completed operations, compaction, and a randomized
differential test of firing order (wheel vs the Time rules written directly) with completions
mixed in, since completion is the path that leaves dead entries behind."""

from __future__ import annotations

import random

import pytest

from kgc.impl.clock import VirtualClock
from kgc.impl.purgatory import DelayedOperation
from kgc.impl.timer import COMPACT_MIN_DEAD, SystemTimer


class Op(DelayedOperation):
    """Never completable by itself: completed from outside (force_complete) or expired."""

    def __init__(self, delay_ms, key, log, clock, then=None):
        super().__init__(delay_ms)
        self.key = key
        self.log = log
        self.clock = clock
        self.then = then

    def try_complete(self):
        return False

    def on_complete(self):
        pass

    def on_expiration(self):
        self.log.append((self.key, self.clock.now_ms()))
        if self.then is not None:
            self.then()


def world(start=0, tick_ms=1, wheel_size=20):
    clock = VirtualClock(start)
    return clock, SystemTimer(clock, tick_ms, wheel_size), []


@pytest.mark.parametrize("delay", [5, 300, 50_000])  # the lowest wheel, and two overflow levels
def test_mostly_completed_bucket_is_compacted_and_the_rest_fire_in_add_order(delay):
    clock, timer, log = world()
    ops = [Op(delay, i, log, clock) for i in range(1_000)]
    for op in ops:
        timer.add(op)
    bucket = ops[0]._bucket
    assert all(op._bucket is bucket for op in ops) and len(bucket.entries) == 1_000
    done = {i for i in range(1_000) if i % 5 != 4}
    for i in sorted(done):
        assert ops[i].force_complete()
    # 800 dead entries: compacted at least once, and never more than three quarters dead after
    assert len(bucket.entries) < 1_000
    assert bucket.dead * 4 <= 3 * len(bucket.entries) or bucket.dead <= COMPACT_MIN_DEAD
    assert timer.size() == 200
    assert [t.key for t in timer.live_tasks()] == [i for i in range(1_000) if i not in done]
    timer.advance_to(delay)
    assert log == [(i, delay) for i in range(1_000) if i not in done]
    assert timer.size() == 0 and not any(op.force_complete() for op in ops)


def test_current_list_compacted_while_it_runs():
    """The first task to expire completes most of the others (same deadline): the current list
    compacts under the running loop, which must neither skip nor repeat anyone."""
    clock, timer, log = world()
    ops = []

    def complete_most():
        for op in ops[1:]:
            if op.key % 4:
                op.force_complete()

    ops.append(Op(7, 0, log, clock, complete_most))
    ops.extend(Op(7, i, log, clock) for i in range(1, 400))
    for op in ops:
        timer.add(op)
    timer.advance_to(6)
    assert timer.size() == 400
    timer.advance_to(7)
    assert log == [(0, 7)] + [(i, 7) for i in range(1, 400) if i % 4 == 0]
    assert timer.size() == 0


def test_cancelled_then_readded_operation_fires_once_at_its_new_place():
    clock, timer, log = world()
    a, b, c = (Op(10, k, log, clock) for k in "abc")
    for op in (a, b, c):
        timer.add(op)
    a.cancel()
    timer.add(a)  # same bucket, new add order: after c
    assert [t.key for t in timer.live_tasks()] == ["b", "c", "a"]
    timer.advance_to(10)
    assert log == [("b", 10), ("c", 10), ("a", 10)]


class Reference:
    """The Time rules directly: pending (deadline, add seq); completion removes silently."""

    def __init__(self, start):
        self.now = start
        self.seq = 0
        self.pending = {}

    def add(self, key, delay):
        self.pending[key] = (self.now + max(delay, 0), self.seq)
        self.seq += 1

    def order(self):
        return [k for k, _ in sorted(self.pending.items(), key=lambda kv: kv[1])]

    def advance(self, target, log, limit=None):
        ran = 0
        while self.pending and (limit is None or ran < limit):
            key = min(self.pending, key=self.pending.__getitem__)
            d = self.pending[key][0]
            if d > target:
                break
            del self.pending[key]
            self.now = max(self.now, d)
            log.append((key, self.now))
            ran += 1
        if limit is None:
            self.now = target
        return ran


def run_program(seed, tick, wheel):
    rng = random.Random(seed)
    start = rng.choice([0, rng.randrange(10**9)])
    clock, timer, log = world(start, tick, wheel)
    ref, ref_log = Reference(start), []
    ops = {}  # key -> Op, pending or not
    keys = []

    def delay():
        return rng.choice([rng.randint(-2, 30), rng.randint(0, 500), rng.randint(0, 20_000), rng.randint(0, 10**7)])

    def add(d):
        key = len(keys)
        keys.append(key)
        ops[key] = op = Op(d, key, log, clock)
        timer.add(op)
        ref.add(key, d)

    for _ in range(120):
        r = rng.random()
        if r < 0.25:
            add(delay())
        elif r < 0.4:
            # a burst sharing one deadline, most of it completed: compaction territory
            d = delay()
            first = len(keys)
            for _ in range(rng.randint(COMPACT_MIN_DEAD, 4 * COMPACT_MIN_DEAD)):
                add(d)
            for key in range(first, len(keys)):
                if rng.random() < 0.8:
                    ops[key].force_complete()
                    ref.pending.pop(key, None)
        elif r < 0.55 and keys:
            key = rng.choice(keys)  # complete any operation: pending, expired or completed
            ops[key].force_complete()
            ref.pending.pop(key, None)
        elif r < 0.62 and keys:
            key = rng.choice(keys)
            if not ops[key].is_completed():  # cancel and add again: a new place in add order
                ops[key].cancel()
                ref.pending.pop(key, None)
                timer.add(ops[key])
                ref.add(key, ops[key].delay_ms)
        elif r < 0.85:
            target = clock.now_ms() + rng.choice([0, 1, rng.randint(0, 40), rng.randint(0, 3_000), 10**6])
            assert timer.advance_to(target) == ref.advance(target, ref_log)
        else:
            d = ref.pending and min(ref.pending.values())[0]
            assert timer.fire_next() == (ref.advance(d or 0, ref_log, 1) == 1)
        assert log == ref_log
        assert clock.now_ms() == ref.now
        assert timer.size() == len(ref.pending)
        assert [t.key for t in timer.live_tasks()] == ref.order()
        assert timer.next_deadline_ms() == (min(ref.pending.values())[0] if ref.pending else None)
    while ref.pending:
        target = min(ref.pending.values())[0]
        timer.advance_to(target)
        ref.advance(target, ref_log)
        assert log == ref_log


@pytest.mark.parametrize("shape", [(1, 20), (1, 2), (1, 3), (3, 4), (10, 20)])
def test_random_programs_with_completions_match_the_reference(shape):
    for seed in range(60):
        run_program(seed * 1_000_003 + shape[0] * 101 + shape[1], *shape)
