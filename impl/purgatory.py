"""Kafka's DelayedOperation and DelayedOperationPurgatory (core/.../server/DelayedOperation.scala).

A delayed operation waits, watched under one or more keys, until either something makes it
completable (``check_and_complete(key)`` by whoever changed the state behind that key) or its
timer expires. Completion happens exactly once: ``force_complete`` flips ``completed``, cancels
the timer entry and calls ``on_complete``; an expiring operation runs ``force_complete`` and,
only if that call won, ``on_expiration`` -- Kafka's ``run()``.

Python runs this single-threaded, so Kafka's per-operation lock and the read/write lock on the
watcher map are not needed; the ordering of checks in ``try_complete_else_watch``
(tryComplete, watch every key, tryComplete again, then arm the timer) is kept as in Kafka
3.x's ``safeTryCompleteOrElse`` so callbacks see the same sequence of states.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

from kgc.impl.timer import SystemTimer, TimerTask

__all__ = [
    "DelayedOperation",
    "DelayedOperationPurgatory",
    "GroupJoinKey",
    "GroupSyncKey",
    "MemberKey",
]


@dataclass(frozen=True, slots=True)
class GroupJoinKey:
    """Watch key of a group's DelayedJoin (Kafka's GroupJoinKey)."""

    group_id: str


@dataclass(frozen=True, slots=True)
class GroupSyncKey:
    """Watch key of a group's DelayedSync (Kafka's GroupSyncKey)."""

    group_id: str


@dataclass(frozen=True, slots=True)
class MemberKey:
    """Watch key of a member's DelayedHeartbeat (Kafka's MemberKey)."""

    group_id: str
    member_id: str


class DelayedOperation(TimerTask):
    """An operation completed at most once, by whoever gets to ``force_complete`` first."""

    # _delayed_in: the purgatory that counts this operation in num_delayed() while it waits
    # in the timer; cleared when it leaves the timer, so the count is exact even when
    # several purgatories share one SystemTimer.
    __slots__ = ("_completed", "_delayed_in")

    def __init__(self, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self._completed = False
        self._delayed_in: DelayedOperationPurgatory | None = None

    def try_complete(self) -> bool:
        """If the operation can complete now, return ``self.force_complete()``; else False."""
        raise NotImplementedError

    def on_complete(self) -> None:
        raise NotImplementedError

    def on_expiration(self) -> None:
        raise NotImplementedError

    def force_complete(self) -> bool:
        """Complete now; True only for the one caller that actually completed it."""
        if self._completed:
            return False
        self._completed = True
        self.cancel()
        self.on_complete()
        return True

    def cancel(self) -> None:
        """Take the operation out of the timer (it is not completed)."""
        p = self._delayed_in
        if p is not None:
            self._delayed_in = None
            p._delayed -= 1
        TimerTask.cancel(self)

    def is_completed(self) -> bool:
        return self._completed

    def safe_try_complete(self) -> bool:
        """Kafka takes the operation's lock here; single-threaded, it is try_complete()."""
        return self.try_complete()

    def run(self) -> None:
        """Timer expiry: on_complete then on_expiration, unless someone completed it first."""
        if self.force_complete():
            self.on_expiration()


class DelayedOperationPurgatory:
    """Watcher lists per key plus a timer: Kafka's DelayedOperationPurgatory.

    Completed operations are dropped from the list of the key being checked at once; on other
    keys (and after expiry) they linger until a purge. Kafka purges every watcher list once
    more than ``purge_interval`` operations have left the timer since the last purge
    (``estimatedTotalOperations - delayed``). Scanning every list costs O(watched), so with a
    million live operations that rule alone would rescan a million entries every
    ``purge_interval`` completions; here the purge also waits until the completed-but-watched
    count reaches a quarter of the live count, which keeps the amortised cost O(1) per
    operation and the watcher lists within 1.25x the live operations plus ``purge_interval``.
    """

    __slots__ = ("name", "_timer", "_purge_interval", "_watchers", "_estimated", "_delayed")

    def __init__(self, name: str, timer: SystemTimer, purge_interval: int = 1000) -> None:
        self.name = name
        self._timer = timer
        self._purge_interval = purge_interval
        self._watchers: dict[Hashable, list[DelayedOperation]] = {}
        self._estimated = 0     # Kafka's estimatedTotalOperations
        self._delayed = 0       # operations of this purgatory waiting in the timer

    def try_complete_else_watch(self, op: DelayedOperation,
                                watch_keys: Sequence[Hashable]) -> bool:
        """Complete ``op`` now if it can; otherwise watch it under every key and arm its timer.

        Returns True iff this call completed the operation.
        """
        if not watch_keys:
            raise ValueError("The watch key list can't be empty")
        if op.try_complete():
            return True
        watchers = self._watchers
        for key in watch_keys:
            ops = watchers.get(key)
            if ops is None:
                watchers[key] = [op]
            else:
                ops.append(op)
        self._estimated += 1
        if op.try_complete():
            self._maybe_purge()
            return True
        if not op._completed:
            self._timer.add(op)
            op._delayed_in = self
            self._delayed += 1
            if op._completed:       # Kafka's re-check after arming the timer
                op.cancel()
        self._maybe_purge()
        return False

    def check_and_complete(self, key: Hashable) -> int:
        """Try to complete every operation watched under ``key``; returns how many completed.

        Operations watched under ``key`` while this runs (from a callback) are tried too, as
        Kafka's iterator over its concurrent queue would; the list is replaced, never edited
        in place, so a nested check of the same key cannot disturb this loop.
        """
        watchers = self._watchers
        ops = watchers.get(key)
        if ops is None:
            return 0
        completed = 0
        i = 0
        while i < len(ops):
            op = ops[i]
            i += 1
            if not op._completed and op.safe_try_complete():
                completed += 1
        current = watchers.get(key)
        if current is not None:
            live = [op for op in current if not op._completed]
            if live:
                if len(live) != len(current):
                    watchers[key] = live
            else:
                del watchers[key]
        self._maybe_purge()
        return completed

    def cancel_for_key(self, key: Hashable) -> list[DelayedOperation]:
        """Stop watching ``key`` and take its operations out of the timer, without completing them.

        Returns the operations that were still pending. Kafka returns every entry of the
        list, including completed ones not yet purged, which depends on purge timing; those
        are left out here so the result is deterministic.
        """
        ops = self._watchers.pop(key, None)
        if ops is None:
            return []
        cancelled = []
        for op in ops:
            if not op._completed:
                op.cancel()
                cancelled.append(op)
        self._maybe_purge()
        return cancelled

    def watched(self) -> int:
        """Entries in all watcher lists (an operation counts once per key it is watched on)."""
        return sum(len(ops) for ops in self._watchers.values())

    def num_delayed(self) -> int:
        """Operations of this purgatory waiting in the timer."""
        return self._delayed

    def watch_keys(self) -> list[Hashable]:
        """Keys that currently have a watcher list (for tests and diagnostics)."""
        return list(self._watchers)

    def _maybe_purge(self) -> None:
        garbage = self._estimated - self._delayed
        if garbage > self._purge_interval and garbage * 4 >= self._delayed:
            self._purge()

    def _purge(self) -> int:
        """Drop completed operations from every watcher list (Kafka's purgeCompleted)."""
        self._estimated = self._delayed
        watchers = self._watchers
        purged = 0
        for key, ops in list(watchers.items()):
            live = [op for op in ops if not op._completed]
            if len(live) != len(ops):
                purged += len(ops) - len(live)
                if live:
                    watchers[key] = live
                else:
                    del watchers[key]
        return purged

    def __repr__(self) -> str:
        return (f"DelayedOperationPurgatory({self.name!r}, watched={self.watched()}, "
                f"delayed={self._delayed})")
