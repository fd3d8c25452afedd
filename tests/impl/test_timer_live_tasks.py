"""SystemTimer.live_tasks(): the read-only view conformance compares with the spec's `timers`."""

from __future__ import annotations

import random

import pytest

from kgc.impl.clock import VirtualClock
from kgc.impl.timer import SystemTimer, TimerTask


class Named(TimerTask):
    def __init__(self, delay_ms: int, name: int, ran: list[int]) -> None:
        super().__init__(delay_ms)
        self.name = name
        self.ran = ran

    def run(self) -> None:
        self.ran.append(self.name)


def test_live_tasks_is_firing_order_with_ties_in_add_order():
    clock = VirtualClock(0)
    timer = SystemTimer(clock)
    ran: list[int] = []
    tasks = [Named(d, i, ran) for i, d in enumerate([50, 5, 50, 100_000, 5, 0])]
    for t in tasks:
        timer.add(t)
    assert [t.name for t in timer.live_tasks()] == [5, 1, 4, 0, 2, 3]
    tasks[4].cancel()
    assert [t.name for t in timer.live_tasks()] == [5, 1, 0, 2, 3]
    assert timer.fire_next() and ran == [5]
    assert [t.name for t in timer.live_tasks()] == [1, 0, 2, 3]


@pytest.mark.parametrize("seed", range(20))
def test_live_tasks_matches_what_fires_afterwards(seed):
    """Whatever the wheel levels, live_tasks() lists exactly the tasks that will run, in the
    order fire_next() runs them."""
    rng = random.Random(seed)
    clock = VirtualClock(rng.randrange(0, 10_000))
    timer = SystemTimer(clock, tick_ms=rng.choice([1, 1, 3]), wheel_size=rng.choice([2, 5, 20]))
    ran: list[int] = []
    live: list[Named] = []
    for i in range(300):
        r = rng.random()
        if r < 0.55:
            t = Named(rng.choice([0, 1, 7, 40, 999, 86_400_000, rng.randrange(5000)]), i, ran)
            timer.add(t)
            live.append(t)
        elif r < 0.7 and live:
            live.pop(rng.randrange(len(live))).cancel()
        else:
            timer.advance_to(clock.now_ms() + rng.randrange(0, 3000))
        snapshot = timer.live_tasks()
        assert len(snapshot) == timer.size()
        keys = [(t.deadline_ms(), t._seq) for t in snapshot]
        assert keys == sorted(keys)
    expected = [t.name for t in timer.live_tasks()]
    ran.clear()
    while timer.fire_next():
        pass
    assert ran == expected
