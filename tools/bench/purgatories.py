"""Three purgatories behind one small interface, so one operation stream can drive them all.

Each adapter keeps operations by key, expires them when the virtual clock passes their deadline
and can be told that the outside event an operation waits for has happened (`complete`):

- `WheelPurgatory`: the project's purgatory, kgc.impl.purgatory.DelayedOperationPurgatory over
  kgc.impl.timer.SystemTimer (Kafka's hierarchical timing wheel, tick 1 ms, wheel size 20).
- `HeapPurgatory`: what asyncio does with `call_later` handles (base_events.BaseEventLoop):
  a heapq of (deadline, seq, handle), lazy cancellation, and the `_run_once` rule that rebuilds
  the heap once cancelled entries exceed half of it (and more than 100 entries are scheduled).
- `SchedPurgatory`: the standard library's sched.scheduler, cancelling by event.

Every adapter records expirations in a caller-supplied bytearray indexed by operation id (the
harness allocates it before memory tracing starts, so it is not charged to any purgatory), and
the wheel's operations (kgc.impl.fake_operation.FakeOperation, Kafka's FakeOperation, compiled
with the purgatory as Kafka's is: that module says why) read the caller's `satisfied` flags in
`try_complete`, which is how Kafka's operations learn that their condition holds.
"""

from __future__ import annotations

import heapq
import itertools
import sched
from typing import Any, Protocol


class PurgatoryAdapter(Protocol):
    name: str
    expired: bytearray

    def arrive(self, op_id: int, timeout_ms: int) -> None: ...

    def complete(self, op_id: int) -> None: ...

    def advance(self, now_ms: int) -> None: ...

    def outstanding(self) -> int: ...


class WheelPurgatory:
    """kgc.impl's timing-wheel purgatory; the operation's id is its only watch key.

    Used as Kafka's TestPurgatoryPerformance uses its purgatory: a new operation per request,
    ``try_complete_else_watch`` (tryComplete, watch, tryComplete, arm the timer), expiry by
    the timer. Kafka's benchmark completes an operation by calling ``forceComplete`` on the
    reference its completion queue holds; here the outside event reaches the purgatory the
    way it does in a broker or this coordinator, through the operation's key
    (``check_and_complete``), so the purgatory's own watcher map is the id-to-operation index
    and the adapter keeps none (the heap adapter needs its own dict for that).
    """

    name = "wheel"

    def __init__(self, expired: bytearray, satisfied: bytearray) -> None:
        from kgc.impl.clock import VirtualClock
        from kgc.impl.fake_operation import FakeFlags, FakeOperation
        from kgc.impl.purgatory import DelayedOperationPurgatory
        from kgc.impl.timer import SystemTimer

        self.expired = expired
        self._satisfied = satisfied
        self._flags = FakeFlags(satisfied, expired)
        self._operation = FakeOperation
        self._clock = VirtualClock()
        self._timer = SystemTimer(self._clock)
        self._purgatory = DelayedOperationPurgatory("bench", self._timer)
        self._watch = self._purgatory.try_complete_else_watch
        self._check = self._purgatory.check_and_complete

    def arrive(self, op_id: int, timeout_ms: int) -> None:
        self._watch(self._operation(timeout_ms, op_id, self._flags), (op_id,))

    def complete(self, op_id: int) -> None:
        self._satisfied[op_id] = 1
        self._check(op_id)

    def advance(self, now_ms: int) -> None:
        self._timer.advance_to(now_ms)

    def outstanding(self) -> int:
        return self._purgatory.num_delayed()


class _TimerHandle:
    """The parts of asyncio.TimerHandle the heap logic reads."""

    __slots__ = ("op_id", "cancelled", "scheduled")

    def __init__(self, op_id: int) -> None:
        self.op_id = op_id
        self.cancelled = False
        self.scheduled = True


# asyncio.base_events: compact the heap when more than this fraction of it is cancelled
# and it holds more than this many handles.
_MIN_CANCELLED_TIMER_HANDLES_FRACTION = 0.5
_MIN_SCHEDULED_TIMER_HANDLES = 100


class HeapPurgatory:
    """asyncio's timer heap as a purgatory: handles by key, lazily cancelled, compacted in bulk.

    One deliberate difference from asyncio: a cancelled handle that reaches its deadline is
    counted out of the cancelled tally (asyncio leaves the tally high, which only makes it
    compact a little earlier).
    """

    name = "heap"

    def __init__(self, expired: bytearray, satisfied: bytearray) -> None:
        self.expired = expired
        self._scheduled: list[tuple[int, int, _TimerHandle]] = []
        self._cancelled_count = 0
        self._handles: dict[int, _TimerHandle] = {}
        self._seq = itertools.count()
        self._now = 0

    def arrive(self, op_id: int, timeout_ms: int) -> None:
        handle = _TimerHandle(op_id)
        heapq.heappush(self._scheduled, (self._now + timeout_ms, next(self._seq), handle))
        self._handles[op_id] = handle

    def complete(self, op_id: int) -> None:
        handle = self._handles.pop(op_id, None)
        if handle is not None and not handle.cancelled:
            handle.cancelled = True  # TimerHandle.cancel -> loop._timer_handle_cancelled
            if handle.scheduled:
                self._cancelled_count += 1

    def advance(self, now_ms: int) -> None:
        self._now = now_ms
        scheduled = self._scheduled
        count = len(scheduled)
        if (
            count > _MIN_SCHEDULED_TIMER_HANDLES
            and self._cancelled_count / count > _MIN_CANCELLED_TIMER_HANDLES_FRACTION
        ):
            kept = []
            for entry in scheduled:
                if entry[2].cancelled:
                    entry[2].scheduled = False
                else:
                    kept.append(entry)
            heapq.heapify(kept)
            self._scheduled = scheduled = kept
            self._cancelled_count = 0
        else:
            while scheduled and scheduled[0][2].cancelled:
                self._cancelled_count -= 1
                heapq.heappop(scheduled)[2].scheduled = False
        heappop, expired, handles = heapq.heappop, self.expired, self._handles
        while scheduled and scheduled[0][0] <= now_ms:
            handle = heappop(scheduled)[2]
            handle.scheduled = False
            if handle.cancelled:
                self._cancelled_count -= 1
                continue
            del handles[handle.op_id]
            expired[handle.op_id] = 1

    def outstanding(self) -> int:
        return len(self._handles)


def _no_sleep(_seconds: float) -> None:
    """sched's delayfunc: virtual time never sleeps."""


class SchedPurgatory:
    """sched.scheduler as a purgatory: enterabs per operation, cancel(event) on completion.

    sched.scheduler.cancel is list.remove plus heapify, O(outstanding) per completion, so this
    adapter is expected to be run under a time budget at large sizes.
    """

    name = "sched"

    def __init__(self, expired: bytearray, satisfied: bytearray) -> None:
        self.expired = expired
        self._now = 0
        self._scheduler = sched.scheduler(timefunc=self._time, delayfunc=_no_sleep)
        self._events: dict[int, Any] = {}

    def _time(self) -> int:
        return self._now

    def _expire(self, op_id: int) -> None:
        del self._events[op_id]
        self.expired[op_id] = 1

    def arrive(self, op_id: int, timeout_ms: int) -> None:
        self._events[op_id] = self._scheduler.enterabs(self._now + timeout_ms, 0, self._expire, (op_id,))

    def complete(self, op_id: int) -> None:
        event = self._events.pop(op_id, None)
        if event is not None:
            self._scheduler.cancel(event)

    def advance(self, now_ms: int) -> None:
        self._now = now_ms
        self._scheduler.run(blocking=False)

    def outstanding(self) -> int:
        return len(self._events)


class NullPurgatory:
    """Does nothing: measures what the harness itself costs per operation."""

    name = "null"

    def __init__(self, expired: bytearray, satisfied: bytearray) -> None:
        self.expired = expired

    def arrive(self, op_id: int, timeout_ms: int) -> None:
        pass

    def complete(self, op_id: int) -> None:
        pass

    def advance(self, now_ms: int) -> None:
        pass

    def outstanding(self) -> int:
        return 0


PURGATORIES: dict[str, type] = {
    "wheel": WheelPurgatory,
    "heap": HeapPurgatory,
    "sched": SchedPurgatory,
}
