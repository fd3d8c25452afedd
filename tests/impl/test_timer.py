"""SystemTimer: exact firing order (the scenario contract's Time rules) and wheel mechanics."""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgc.impl.clock import MonotonicClock, VirtualClock
from kgc.impl.timer import SystemTimer, TimerTask

HOUR = 3_600_000
DAY = 24 * HOUR


class Rec(TimerTask):
    """Records (name, clock reading) when it runs and then calls ``then`` (if any)."""

    def __init__(self, delay_ms, name, log, clock, then=None):
        super().__init__(delay_ms)
        self.name = name
        self.log = log
        self.clock = clock
        self.then = then

    def run(self):
        self.log.append((self.name, self.clock.now_ms()))
        if self.then is not None:
            self.then()


def world(start=0, tick_ms=1, wheel_size=20):
    clock = VirtualClock(start)
    return clock, SystemTimer(clock, tick_ms, wheel_size), []


# --------------------------------------------------------------------------- clocks


def test_virtual_clock_never_goes_backwards():
    c = VirtualClock(5)
    c.set_ms(5)
    c.set_ms(9)
    assert c.now_ms() == 9
    with pytest.raises(ValueError):
        c.set_ms(8)


def test_monotonic_clock_moves_forward():
    c = MonotonicClock()
    a = c.now_ms()
    time.sleep(0.005)
    assert c.now_ms() >= a + 4


# --------------------------------------------------------------------------- order


def test_deadline_order_and_clock_reads_deadline():
    clock, timer, log = world()
    for d, name in [(30, "c"), (10, "a"), (20, "b"), (25, "b2")]:
        timer.add(Rec(d, name, log, clock))
    assert timer.size() == 4
    assert timer.advance_to(100) == 4
    assert log == [("a", 10), ("b", 20), ("b2", 25), ("c", 30)]
    assert clock.now_ms() == 100
    assert timer.size() == 0


def test_same_deadline_runs_in_add_order():
    clock, timer, log = world()
    names = [f"t{i}" for i in range(50)]
    for n in names:
        timer.add(Rec(7, n, log, clock))
    timer.advance_to(7)
    assert [n for n, _ in log] == names
    assert {t for _, t in log} == {7}


def test_only_due_tasks_run_and_boundary_is_inclusive():
    clock, timer, log = world()
    timer.add(Rec(10, "a", log, clock))
    timer.add(Rec(11, "b", log, clock))
    assert timer.advance_to(9) == 0
    assert timer.advance_to(10) == 1
    assert log == [("a", 10)]
    assert timer.next_deadline_ms() == 11


def test_task_added_by_running_task_counts_from_deadline_and_fires_in_same_advance():
    clock, timer, log = world()

    def spawn():
        timer.add(Rec(0, "zero", log, clock))  # deadline 10, after "b" (added later)
        timer.add(Rec(5, "five", log, clock))  # deadline 15 <= 20: same advance
        timer.add(Rec(11, "eleven", log, clock))  # deadline 21 > 20: not yet

    timer.add(Rec(10, "a", log, clock, spawn))
    timer.add(Rec(10, "b", log, clock))
    timer.add(Rec(15, "c", log, clock))  # deadline 15, added before "five"
    assert timer.advance_to(20) == 5
    assert log == [("a", 10), ("b", 10), ("zero", 10), ("c", 15), ("five", 15)]
    assert clock.now_ms() == 20
    assert timer.next_deadline_ms() == 21
    timer.advance_to(21)
    assert log[-1] == ("eleven", 21)


def test_zero_delay_task_waits_for_the_next_advance():
    clock, timer, log = world(start=40)
    timer.add(Rec(0, "now", log, clock))
    timer.add(Rec(-3, "negative", log, clock))  # already expired: due now, like Kafka
    assert log == []
    assert timer.next_deadline_ms() == 40
    assert timer.advance_to(40) == 2  # the contract's tick 0
    assert log == [("now", 40), ("negative", 40)]


def test_advance_backwards_is_an_error():
    clock, timer, _ = world(start=100)
    with pytest.raises(ValueError):
        timer.advance_to(99)
    timer.advance_to(100)
    assert clock.now_ms() == 100


def test_advance_from_a_running_task_is_refused():
    clock, timer, _ = world()
    errors = []

    class Nested(TimerTask):
        def run(self):
            try:
                timer.advance_to(50)
            except RuntimeError as e:
                errors.append(e)

    timer.add(Nested(5))
    timer.advance_to(10)
    assert len(errors) == 1
    assert clock.now_ms() == 10


def test_exception_in_task_leaves_timer_usable():
    clock, timer, log = world()

    class Boom(TimerTask):
        def run(self):
            raise KeyError("boom")

    timer.add(Boom(5))
    timer.add(Rec(6, "after", log, clock))
    with pytest.raises(KeyError):
        timer.advance_to(10)
    assert clock.now_ms() == 5
    assert timer.size() == 1
    timer.advance_to(10)
    assert log == [("after", 6)]


# --------------------------------------------------------------------------- cancel


def test_cancel_before_expiry():
    clock, timer, log = world()
    a = Rec(10, "a", log, clock)
    b = Rec(10, "b", log, clock)
    timer.add(a)
    timer.add(b)
    a.cancel()
    a.cancel()  # idempotent
    assert timer.size() == 1
    timer.advance_to(10)
    assert log == [("b", 10)]


def test_cancel_after_expiry_is_a_noop():
    clock, timer, log = world()
    a = Rec(10, "a", log, clock)
    timer.add(a)
    timer.advance_to(10)
    a.cancel()
    assert timer.size() == 0
    assert log == [("a", 10)]


def test_cancel_in_overflow_wheel_and_current_slot():
    clock, timer, log = world()
    far = Rec(DAY, "far", log, clock)
    here = Rec(0, "here", log, clock)
    timer.add(far)
    timer.add(here)
    far.cancel()
    here.cancel()
    assert timer.size() == 0
    assert timer.next_deadline_ms() is None
    timer.advance_to(2 * DAY)
    assert log == []


def test_task_cancelled_by_an_earlier_task_in_the_same_advance_does_not_run():
    clock, timer, log = world()
    victim = Rec(10, "victim", log, clock)
    timer.add(Rec(10, "killer", log, clock, victim.cancel))
    timer.add(victim)
    timer.advance_to(10)
    assert log == [("killer", 10)]


def test_readd_moves_the_task_and_gives_it_a_new_add_order():
    clock, timer, log = world()
    a = Rec(10, "a", log, clock)
    timer.add(a)
    timer.add(Rec(10, "b", log, clock))
    timer.add(a)  # same delay: now after b
    assert timer.size() == 2
    timer.advance_to(10)
    assert log == [("b", 10), ("a", 10)]


# --------------------------------------------------------------------------- overflow wheels


@pytest.mark.parametrize(
    "delay", [19, 20, 399, 400, 401, 7_999, 8_000, HOUR, HOUR + 1, DAY, 3 * DAY + 17, 400 * DAY + 3]
)
def test_long_timeouts_fire_at_the_exact_millisecond(delay):
    clock, timer, log = world(start=12_345)
    timer.add(Rec(delay, "t", log, clock))
    d = 12_345 + delay
    assert timer.next_deadline_ms() == d
    timer.advance_to(d - 1)
    assert log == []
    assert timer.next_deadline_ms() == d
    timer.advance_to(d)
    assert log == [("t", d)]


def test_overflow_wheels_are_created_on_demand():
    clock, timer, log = world()
    assert len(timer._ticks) == 1
    timer.add(Rec(19, "a", log, clock))
    assert len(timer._ticks) == 1
    timer.add(Rec(HOUR, "h", log, clock))  # interval 20**(k+1) > 3.6e6 needs k = 5
    assert timer._ticks == [1, 20, 400, 8_000, 160_000, 3_200_000]
    timer.add(Rec(3 * DAY, "d", log, clock))  # 2.592e8 needs k = 6 (20**7 = 1.28e9)
    assert len(timer._ticks) == 7
    timer.advance_to(4 * DAY)
    assert log == [("a", 19), ("h", HOUR), ("d", 3 * DAY)]


def test_cascaded_task_keeps_add_order_against_a_later_direct_add():
    # "early" is added while its deadline is beyond the lowest wheel and comes down by
    # cascade; "late" is added for the same ms once the lowest wheel covers it.
    clock, timer, log = world()
    timer.add(Rec(1_000, "early", log, clock))
    timer.advance_to(990)
    timer.add(Rec(10, "late", log, clock))
    timer.advance_to(1_000)
    assert log == [("early", 1_000), ("late", 1_000)]


def test_cascade_into_a_later_lowest_wheel_bucket_keeps_add_order():
    # At 1000 the level-1 bucket [1000, 1020) cascades "early" into the lowest wheel's bucket
    # for 1005, which already holds "late" (added at 990): the bucket must be re-sorted.
    clock, timer, log = world()
    timer.add(Rec(1_005, "early", log, clock))
    timer.advance_to(990)
    timer.add(Rec(15, "late", log, clock))
    timer.add(Rec(18, "later", log, clock))
    timer.advance_to(1_010)
    assert log == [("early", 1_005), ("late", 1_005), ("later", 1_008)]


def test_next_deadline_looks_past_an_earlier_overflow_bucket():
    clock, timer, log = world()
    timer.advance_to(10)
    timer.add(Rec(29, "in-level-1", log, clock))  # 39: level 1 bucket [20, 40)
    timer.add(Rec(15, "in-level-0", log, clock))  # 25: level 0
    assert timer.next_deadline_ms() == 25
    assert timer.fire_next()
    assert log == [("in-level-0", 25)]
    assert timer.next_deadline_ms() == 39


def test_coarse_tick_is_still_exact():
    clock, timer, log = world(tick_ms=10, wheel_size=4)

    def spawn():
        timer.add(Rec(1, "child", log, clock))  # 4 < 7: runs before "b"

    timer.add(Rec(3, "a", log, clock, spawn))
    timer.add(Rec(7, "b", log, clock))
    timer.add(Rec(5, "mid", log, clock))
    assert timer.advance_to(4) == 2  # b (7) and mid (5) share a's tick
    assert log == [("a", 3), ("child", 4)]
    assert clock.now_ms() == 4
    timer.add(Rec(1, "new", log, clock))  # 5, added after mid
    assert timer.advance_to(1_000) == 3
    assert log[2:] == [("mid", 5), ("new", 5), ("b", 7)]


# --------------------------------------------------------------------------- fire_next / poll


def test_fire_next_runs_exactly_one_task():
    clock, timer, log = world()
    assert timer.fire_next() is False
    timer.add(Rec(HOUR, "h1", log, clock, lambda: timer.add(Rec(0, "child", log, clock))))
    timer.add(Rec(HOUR, "h2", log, clock))
    assert timer.fire_next() is True
    assert log == [("h1", HOUR)]
    assert clock.now_ms() == HOUR
    assert timer.fire_next() is True
    assert timer.fire_next() is True
    assert log == [("h1", HOUR), ("h2", HOUR), ("child", HOUR)]
    assert timer.fire_next() is False
    assert clock.now_ms() == HOUR


def test_fire_next_skips_cancelled_tasks():
    clock, timer, log = world()
    a = Rec(5, "a", log, clock)
    timer.add(a)
    timer.add(Rec(9, "b", log, clock))
    a.cancel()
    assert timer.next_deadline_ms() == 9
    assert timer.fire_next()
    assert log == [("b", 9)]


def test_poll_on_a_real_clock():
    clock = MonotonicClock()
    timer = SystemTimer(clock)
    ran = []

    class T(TimerTask):
        def __init__(self, d, name):
            super().__init__(d)
            self.name = name

        def run(self):
            ran.append(self.name)

    timer.add(T(0, "now"))
    timer.add(T(30, "soon"))
    timer.add(T(HOUR, "later"))
    assert timer.poll() == 1
    assert ran == ["now"]
    time.sleep(0.05)
    assert timer.poll() == 1
    assert ran == ["now", "soon"]
    assert timer.size() == 1
    with pytest.raises(TypeError):
        timer.advance_to(clock.now_ms() + 10)
    with pytest.raises(TypeError):
        timer.fire_next()


# --------------------------------------------------------------------------- against a reference


class RefTimer:
    """The Time rules written directly: repeatedly run the minimum (deadline, seq)."""

    def __init__(self, start):
        self.now = start
        self.seq = 0
        self.pending = {}  # key -> (deadline, seq)

    def add(self, key, delay):
        self.pending[key] = (self.now + max(delay, 0), self.seq)
        self.seq += 1

    def cancel(self, key):
        self.pending.pop(key, None)

    def next_deadline(self):
        return min(self.pending.values())[0] if self.pending else None

    def advance(self, target, run, limit=None):
        ran = 0
        while self.pending and (limit is None or ran < limit):
            key, (d, _) = min(self.pending.items(), key=lambda kv: kv[1])
            if d > target:
                break
            del self.pending[key]
            self.now = max(self.now, d)
            run(key)
            ran += 1
        if limit is None:
            self.now = target
        return ran


class Program:
    """Runs one generated program on SystemTimer and on RefTimer and compares them."""

    def __init__(self, start, tick, wheel, steps):
        self.start = start
        self.clock = VirtualClock(start)
        self.timer = SystemTimer(self.clock, tick, wheel)
        self.ref = RefTimer(start)
        self.steps = steps
        self.specs = {}  # key -> (delay, children delays, cancel index or None)
        self.tasks = {}  # key -> SystemTimer task
        self.keys = []  # creation order
        self.log = []
        self.ref_log = []

    def new_key(self, delay, children=(), cancel=None):
        key = len(self.keys)
        self.keys.append(key)
        self.specs[key] = (delay, tuple(children), cancel)
        prog = self

        class Task(TimerTask):
            def run(self):
                prog.log.append((key, prog.clock.now_ms()))
                prog.on_run(key, real=True)

        self.tasks[key] = Task(delay)
        return key

    def on_run(self, key, real):
        _, children, cancel = self.specs[key]
        for i, cd in enumerate(children):
            ck = self._child_key(key, i, cd)
            if real:
                self.timer.add(self.tasks[ck])
            else:
                self.ref.add(ck, cd)
        if cancel is not None and self.keys:
            victim = self.keys[cancel % len(self.keys)]
            if real:
                self.tasks[victim].cancel()
            else:
                self.ref.cancel(victim)

    def _child_key(self, key, i, cd):
        # children are created once per (parent, index) and shared by both runs
        ck = ("child", key, i)
        if ck not in self.specs:
            self.specs[ck] = (cd, (), None)
            prog = self

            class Task(TimerTask):
                def run(self):
                    prog.log.append((ck, prog.clock.now_ms()))

            self.tasks[ck] = Task(cd)
        return ck

    def ref_run(self, key):
        self.ref_log.append((key, self.ref.now))
        self.on_run(key, real=False)

    def check(self):
        assert self.log == self.ref_log
        assert self.clock.now_ms() == self.ref.now
        assert self.timer.size() == len(self.ref.pending)
        assert self.timer.next_deadline_ms() == self.ref.next_deadline()

    def run(self):
        for step in self.steps:
            kind = step[0]
            if kind == "add":
                _, delay, children, cancel = step
                key = self.new_key(delay, children, cancel)
                self.timer.add(self.tasks[key])
                self.ref.add(key, delay)
            elif kind == "add_at":
                _, at, children = step
                delay = max(0, self.start + at - self.clock.now_ms())
                key = self.new_key(delay, children)
                self.timer.add(self.tasks[key])
                self.ref.add(key, delay)
            elif kind == "cancel" and self.keys:
                key = self.keys[step[1] % len(self.keys)]
                self.tasks[key].cancel()
                self.ref.cancel(key)
            elif kind == "readd" and self.keys:
                key = self.keys[step[1] % len(self.keys)]
                self.timer.add(self.tasks[key])
                self.ref.add(key, self.specs[key][0])
            elif kind == "advance":
                target = self.clock.now_ms() + step[1]
                n = self.timer.advance_to(target)
                assert n == self.ref.advance(target, self.ref_run)
            elif kind == "advance_at":
                target = max(self.clock.now_ms(), self.start + step[1])
                n = self.timer.advance_to(target)
                assert n == self.ref.advance(target, self.ref_run)
            elif kind == "fire":
                fired = self.timer.fire_next()
                assert fired == (self.ref.advance(self.ref.next_deadline() or 0, self.ref_run, 1) == 1)
            self.check()
        # drain everything left
        while self.ref.pending:
            target = self.ref.next_deadline()
            self.timer.advance_to(target)
            self.ref.advance(target, self.ref_run)
            self.check()


delays = st.one_of(st.integers(-3, 40), st.integers(0, 3_000), st.integers(0, 10**8))
steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), delays, st.lists(delays, max_size=3), st.one_of(st.none(), st.integers(0, 1_000))),
        # absolute deadlines from a small pool: the same ms reached by direct adds and cascades
        st.tuples(
            st.just("add_at"),
            st.sampled_from([50, 97, 400, 405, 1_000, 1_005, 8_000, 8_003, 160_017]),
            st.lists(delays, max_size=2),
        ),
        st.tuples(st.just("advance_at"), st.sampled_from([40, 90, 390, 398, 990, 995, 7_990, 8_001, 160_000])),
        st.tuples(st.just("cancel"), st.integers(0, 1_000)),
        st.tuples(st.just("readd"), st.integers(0, 1_000)),
        st.tuples(
            st.just("advance"),
            st.one_of(st.integers(0, 40), st.integers(0, 5_000), st.integers(0, 200_000), st.integers(0, 10**8)),
        ),
        st.tuples(st.just("fire")),
    ),
    max_size=150,
)


@settings(database=None, max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=st.one_of(st.just(0), st.integers(0, 10**9)),
    shape=st.sampled_from([(1, 20), (1, 2), (1, 3), (3, 4), (10, 20), (7, 5), (1, 64)]),
    steps=steps,
)
def test_random_schedules_match_the_reference(start, shape, steps):
    Program(start, shape[0], shape[1], steps).run()


@pytest.mark.parametrize("seed,tick,wheel", [(1, 1, 20), (2, 1, 8), (3, 5, 20)])
def test_large_random_schedule_matches_sorted_order(seed, tick, wheel):
    rng = random.Random(seed)
    clock, timer, log = world(start=rng.randrange(10**6), tick_ms=tick, wheel_size=wheel)
    start = clock.now_ms()
    tasks = []
    for i in range(20_000):
        d = rng.choice([rng.randrange(0, 50), rng.randrange(0, 10_000), rng.randrange(0, 10**9)])
        t = Rec(d, i, log, clock)
        tasks.append((start + d, i, t))
        timer.add(t)
    cancelled = set(rng.sample(range(20_000), 5_000))
    for i in cancelled:
        tasks[i][2].cancel()
    expected = sorted((d, i) for d, i, _ in tasks if i not in cancelled)
    target = start
    while timer.size():
        target += rng.choice([1, 17, 1_000, 10**6, 10**8])
        timer.advance_to(target)
    assert [(i, d) for d, i in expected] == log


POOL_AT = [50, 97, 400, 405, 1_000, 1_005, 8_000, 8_003, 160_017]
POOL_ADVANCE_AT = [40, 90, 390, 398, 990, 995, 7_990, 8_001, 160_000]


def random_steps(rng, n):
    def delay():
        return rng.choice([rng.randint(-3, 40), rng.randint(0, 3_000), rng.randint(0, 10**8)])

    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.3:
            out.append(
                (
                    "add",
                    delay(),
                    [delay() for _ in range(rng.randint(0, 3))],
                    rng.choice([None, None, rng.randint(0, 1_000)]),
                )
            )
        elif r < 0.5:
            out.append(("add_at", rng.choice(POOL_AT), [delay() for _ in range(rng.randint(0, 2))]))
        elif r < 0.6:
            out.append(("cancel", rng.randint(0, 1_000)))
        elif r < 0.65:
            out.append(("readd", rng.randint(0, 1_000)))
        elif r < 0.75:
            out.append(
                (
                    "advance",
                    rng.choice(
                        [rng.randint(0, 40), rng.randint(0, 5_000), rng.randint(0, 200_000), rng.randint(0, 10**8)]
                    ),
                )
            )
        elif r < 0.9:
            out.append(("advance_at", rng.choice(POOL_ADVANCE_AT)))
        else:
            out.append(("fire",))
    return out


@pytest.mark.parametrize("shape", [(1, 20), (1, 2), (1, 3), (3, 4), (10, 20), (7, 5)])
def test_seeded_random_programs_match_the_reference(shape):
    for seed in range(150):
        rng = random.Random(seed * 7919 + shape[0] * 31 + shape[1])
        start = rng.choice([0, rng.randrange(10**9)])
        Program(start, shape[0], shape[1], random_steps(rng, 150)).run()
