"""A SystemTimer with one seeded defect, the implementation twin of the spec's
`timer_inserted_first` (Insert putting a new timer in front of every live one).

TimersOrdered is a property of the timer queue, not of the coordinator: a GroupCoordinator
subclass only chooses delays, and the real SystemTimer fires whatever it is given in
(deadline, add order). So the defect lives here, in a timer the seeded coordinator
(seeded_bugs.TimerInsertedFirst) runs on instead of the real one. It keeps its tasks in one
list, puts each new task first, and fires from the front while the front task is due, as the
spec's FireHead does: a task queued behind a later deadline is not run when its own passes.
`live_tasks()` is that list, its real firing order (not sorted), so the abstraction's
`timers` shows the disorder and the overdue tasks that TimersOrdered forbids.

The list is a kgc.impl.timer bucket (the compiled one when the timer is compiled), because
DelayedOperation unlinks itself from `_bucket` on completion and cancel.
"""

from __future__ import annotations

from kgc.impl.clock import VirtualClock
from kgc.impl.timer import TimerTask, _Bucket

__all__ = ["InsertFirstTimer"]


class InsertFirstTimer:
    """SystemTimer's interface (add, advance_to, fire_next, poll, live_tasks, size,
    next_deadline_ms) over one list whose new tasks go in front."""

    def __init__(self, clock: VirtualClock) -> None:
        self._clock = clock
        self._list = _Bucket(0, 0)

    def add(self, task: TimerTask) -> None:
        """Schedule ``task`` at ``now + delay_ms`` (a negative delay counts as zero), first."""
        if task._bucket is not None:
            task.cancel()
        task._deadline = self._clock.now_ms() + max(task.delay_ms, 0)
        task._bucket = self._list
        self._list.entries.insert(0, task)

    def _head(self) -> TimerTask | None:
        """The front live task; completed (dead) entries before it are dropped."""
        b = self._list
        while b.entries:
            t = b.entries[0]
            if t._bucket is b:
                return t
            del b.entries[0]
            b.dead -= 1
        return None

    def _run_head(self, target: int | None) -> bool:
        """Run the front task if it is due by ``target`` (None: whatever its deadline)."""
        t = self._head()
        if t is None or (target is not None and t._deadline > target):
            return False
        del self._list.entries[0]
        t._bucket = None
        if t._deadline > self._clock.now_ms():
            self._clock.set_ms(t._deadline)
        t.run()
        return True

    def advance_to(self, target_ms: int) -> int:
        """Run front tasks while the front one is due by ``target_ms``; the clock then reads it."""
        ran = 0
        while self._run_head(target_ms):
            ran += 1
        self._clock.set_ms(target_ms)
        return ran

    def fire_next(self) -> bool:
        """Run the front task, whatever its deadline (the timer takes it for the earliest)."""
        return self._run_head(None)

    def poll(self) -> int:
        ran = 0
        while self._run_head(self._clock.now_ms()):
            ran += 1
        return ran

    def next_deadline_ms(self) -> int | None:
        t = self._head()
        return None if t is None else t._deadline

    def live_tasks(self) -> list[TimerTask]:
        """The live tasks in the order this timer fires them."""
        return self._list.live()

    def size(self) -> int:
        return self._list.count()

    def __len__(self) -> int:
        return self.size()
