"""seeded_timer.InsertFirstTimer, the implementation twin of the spec's `timer_inserted_first`:
it must be the defect it names (fires out of (deadline, add order) and leaves due tasks
behind) and nothing else (what it does fire runs as the real timer runs it), and the
coordinator built on it must hand the harness that timer."""

from __future__ import annotations

from kgc.conformance.driver import Driver
from kgc.conformance.recorder import RANDOM_RUN_CONSTANTS
from kgc.conformance.seeded_bugs import coordinator_class
from kgc.conformance.seeded_timer import InsertFirstTimer
from kgc.impl.clock import VirtualClock
from kgc.impl.timer import SystemTimer, TimerTask


class _Note(TimerTask):
    def __init__(self, delay_ms: int, name: str, fired: list[tuple[str, int]], clock: VirtualClock) -> None:
        super().__init__(delay_ms)
        self.name, self.fired, self.clock = name, fired, clock

    def run(self) -> None:
        self.fired.append((self.name, self.clock.now_ms()))


def _fire(timer_class: type, delays: list[int], until: int) -> tuple[list[tuple[str, int]], list[str]]:
    clock = VirtualClock(0)
    timer = timer_class(clock)
    fired: list[tuple[str, int]] = []
    for n, d in enumerate(delays):
        timer.add(_Note(d, f"t{n}", fired, clock))
    timer.advance_to(until)
    return fired, [t.name for t in timer.live_tasks()]


def test_the_real_timer_fires_in_deadline_then_add_order() -> None:
    fired, left = _fire(SystemTimer, [5, 2, 5, 9], 6)
    assert fired == [("t1", 2), ("t0", 5), ("t2", 5)] and left == ["t3"]


def test_the_seeded_timer_fires_the_newest_first_and_strands_what_is_behind_a_later_one() -> None:
    fired, left = _fire(InsertFirstTimer, [5, 2, 5, 9], 6)
    # t3 (due 9) is in front: nothing runs at 6, and t1, due at 2, is overdue
    assert fired == [] and left == ["t3", "t2", "t1", "t0"]
    fired, left = _fire(InsertFirstTimer, [5, 2, 5], 6)
    assert fired == [("t2", 5), ("t1", 5), ("t0", 5)] and left == []


def test_a_cancelled_or_completed_task_leaves_the_seeded_timer() -> None:
    clock = VirtualClock(0)
    timer = InsertFirstTimer(clock)
    fired: list[tuple[str, int]] = []
    a, b = _Note(3, "a", fired, clock), _Note(4, "b", fired, clock)
    timer.add(a)
    timer.add(b)
    b.cancel()
    assert timer.size() == 1 and timer.live_tasks() == [a] and timer.next_deadline_ms() == 3
    assert timer.fire_next() and fired == [("a", 3)] and timer.size() == 0 and not timer.fire_next()


def test_the_seeded_coordinator_runs_on_the_seeded_timer_and_the_driver_drives_it() -> None:
    k = RANDOM_RUN_CONSTANTS
    faulty = Driver(k.group_config(), coordinator_class("timer_inserted_first"))
    assert isinstance(faulty.timer, InsertFirstTimer) and faulty.coordinator.timer is faulty.timer
    real = Driver(k.group_config(), coordinator_class("none"))
    assert isinstance(real.timer, SystemTimer)
