"""Kafka's FakeOperation (TestPurgatoryPerformance.scala, the purgatory benchmark's operation):
it completes once the outside event it waits for has happened, and records its expiry.
`kgc bench purgatory` drives the purgatory with it.

Why here, compiled with the purgatory: Kafka's benchmark runs its FakeOperation compiled, like
the purgatory it sits in, and kgc's own operations (delayed.py's DelayedJoin, DelayedHeartbeat,
DelayedSync) are compiled with timer.py and purgatory.py. An operation defined in the benchmark
was interpreted: every try_complete, on_complete and on_expiration was a Python frame called
from compiled code, so the benchmark timed the interpreter's method calls more than the
purgatory (2026-12-02, 100k outstanding, one run: 1.64x the heap's rate with it, 1.75-2.17x
with this one). Pure Python where no native build is present, like the rest of kgc.impl;
nothing imports it but the benchmark (kgc.impl's __init__ does not).
"""

from __future__ import annotations

from kgc.impl.purgatory import DelayedOperation

__all__ = ["FakeFlags", "FakeOperation"]


class FakeFlags:
    """The flags every operation of one benchmark pass shares: ``satisfied[op_id]`` is the
    outside event, ``expired[op_id]`` what on_expiration records. One object per pass, so an
    operation holds one reference for both."""

    __slots__ = ("satisfied", "expired")

    def __init__(self, satisfied: bytearray, expired: bytearray) -> None:
        self.satisfied = satisfied
        self.expired = expired


class FakeOperation(DelayedOperation):
    """Completes when its flag is set (Kafka's FakeOperation completes on its latch)."""

    __slots__ = ("op_id", "_flags")

    def __init__(self, delay_ms: int, op_id: int, flags: FakeFlags) -> None:
        # DelayedOperation.__init__ inlined: one call less per operation, as there
        self.delay_ms = delay_ms
        self._bucket = None
        self._completed = False
        self._delayed_in = None
        self.op_id = op_id
        self._flags = flags

    def try_complete(self) -> bool:
        if self._flags.satisfied[self.op_id]:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self._flags.expired[self.op_id] = 1
