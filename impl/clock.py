"""Clocks the timer and the coordinator read.

The coordinator never calls ``time`` directly: replay, conformance and the tests need the
same code to run on a clock that only moves when the scenario says so (``VirtualClock``),
while real use reads the monotonic clock (``MonotonicClock``), as Kafka's ``Time.SYSTEM``
``hiResClockMs`` does.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "VirtualClock", "MonotonicClock"]


@runtime_checkable
class Clock(Protocol):
    """Anything that reads whole milliseconds on a clock that never goes backwards."""

    def now_ms(self) -> int: ...


class VirtualClock:
    """A clock that moves only when the timer moves it.

    The timer sets it to each task's deadline while that task runs, so that a task scheduled
    by a running task counts from the firing deadline (the scenario contract's Time rules).
    Going backwards would break that ordering argument, so it is refused.
    """

    __slots__ = ("_now",)

    def __init__(self, start_ms: int = 0) -> None:
        self._now = int(start_ms)

    def now_ms(self) -> int:
        return self._now

    def set_ms(self, t: int) -> None:
        if t < self._now:
            raise ValueError(f"VirtualClock cannot go backwards: {t} < {self._now}")
        self._now = t

    def __repr__(self) -> str:
        return f"VirtualClock({self._now})"


class MonotonicClock:
    """Real time in whole milliseconds; immune to wall-clock jumps, like hiResClockMs."""

    __slots__ = ()

    def now_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000

    def __repr__(self) -> str:
        return "MonotonicClock()"
