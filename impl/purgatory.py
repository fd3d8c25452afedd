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

from collections.abc import Hashable, Sequence
from typing import Any

from mypy_extensions import mypyc_attr

from kgc.impl.timer import COMPACT_MIN_DEAD, SystemTimer, TimerTask

# The watch keys are tuples, which a compiled (mypyc) class cannot subclass: they live in a
# module that is never compiled, and are re-exported here where they have always been.
from kgc.impl.watch_keys import GroupJoinKey, GroupSyncKey, MemberKey

__all__ = [
    "DelayedOperation",
    "DelayedOperationPurgatory",
    "GroupJoinKey",
    "GroupSyncKey",
    "MemberKey",
]


@mypyc_attr(allow_interpreted_subclasses=True)
class DelayedOperation(TimerTask):
    """An operation completed at most once, by whoever gets to ``force_complete`` first.

    The purgatory calls ``try_complete``, ``on_complete`` and ``on_expiration`` (and the timer
    calls ``run``); those are the points to override. ``force_complete`` and ``run`` do their
    own unlinking from the timer instead of going through ``cancel()``, and the purgatory calls
    ``try_complete`` directly (``safe_try_complete`` is Kafka's locked wrapper, the same thing
    single-threaded): every completion would otherwise cost four or five nested calls.

    Completion leaves the operation's entry in its timer bucket, dead (kgc.impl.timer's
    ``task_completed``, inlined): no other entry is touched, and the bucket compacts itself
    once mostly dead. An operation is completed once and never added to a timer again.
    """

    # _delayed_in: the account (the purgatory, or its multi-key account) that counts this
    # operation in num_delayed() while it waits in the timer, so the count is exact even when
    # several purgatories share one SystemTimer. Once the operation completes it stays set and
    # then means "that purgatory counts me as garbage still sitting in its watcher lists"; it is
    # cleared when the purgatory drops the operation, or by cancel().
    __slots__ = ("_completed", "_delayed_in")

    def __init__(self, delay_ms: int) -> None:
        # TimerTask.__init__ inlined, and only what is read before the timer adds the task
        # (_deadline is written by SystemTimer.add before any read).
        self.delay_ms = delay_ms
        self._bucket = None
        self._completed = False
        self._delayed_in: Any = None  # the purgatory, its _MultiKeyAccount, or None

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
        account = self._delayed_in
        if account is not None:  # it was waiting in the timer: now it is garbage
            # the purgatory typed: the compiled module writes its fields directly, where writes
            # through Any were generic attribute lookups (a third of check_and_complete's time)
            p: DelayedOperationPurgatory = (
                account if account.__class__ is DelayedOperationPurgatory else account._purgatory
            )
            p._delayed -= 1
            p._garbage += 1
        b = self._bucket
        if b is not None:  # kgc.impl.timer.task_completed, inlined: a dead entry now
            self._bucket = None
            n = b.dead + 1
            b.dead = n
            if n > COMPACT_MIN_DEAD and n * 4 > 3 * len(b.entries):
                b.compact()
        self.on_complete()
        return True

    def cancel(self) -> None:
        """Take the operation out of the timer (it is not completed)."""
        if not self._completed:
            account = self._delayed_in
            if account is not None:
                self._delayed_in = None
                p: DelayedOperationPurgatory = (
                    account if account.__class__ is DelayedOperationPurgatory else account._purgatory
                )
                p._delayed -= 1
        b = self._bucket
        if b is not None:  # TimerTask.cancel: removed at once, it may be added again
            self._bucket = None
            b.remove(self)

    def is_completed(self) -> bool:
        return self._completed

    def safe_try_complete(self) -> bool:
        """Kafka takes the operation's lock here; single-threaded, it is try_complete()."""
        return self.try_complete()

    def run(self) -> None:
        """Timer expiry: on_complete then on_expiration, unless someone completed it first.

        ``if self.force_complete(): self.on_expiration()``, inlined: one call less per expiry.
        """
        if self._completed:
            return
        self._completed = True
        account = self._delayed_in
        if account is not None:
            p: DelayedOperationPurgatory = (
                account if account.__class__ is DelayedOperationPurgatory else account._purgatory
            )
            p._delayed -= 1
            p._garbage += 1
        b = self._bucket
        if b is not None:  # only when run() is called outside the timer
            self._bucket = None
            n = b.dead + 1
            b.dead = n
            if n > COMPACT_MIN_DEAD and n * 4 > 3 * len(b.entries):
                b.compact()
        self.on_complete()
        self.on_expiration()


class _MultiKeyAccount:
    """Where an operation watched under several keys is counted: into its purgatory's totals.

    Dropping a completed operation from one key's list does not say whether it is still on
    another, so a multi-key operation, once completed, stays counted as garbage until the next
    purge (as every operation is in Kafka); single-key operations are uncounted as soon as
    they are dropped. The account's identity is what tells the two apart (``op._delayed_in is
    purgatory``); the per-operation code writes the counts on the purgatory either way, typed,
    so the compiled module writes them as fields rather than through generic attribute lookups.
    """

    __slots__ = ("_purgatory",)

    def __init__(self, purgatory: DelayedOperationPurgatory) -> None:
        self._purgatory = purgatory


class DelayedOperationPurgatory:
    """Watcher lists per key plus a timer: Kafka's DelayedOperationPurgatory.

    Completed operations are dropped from the list of the key being checked at once; on other
    keys (and after expiry) they linger until a purge. Kafka purges every watcher list once
    more than ``purge_interval`` operations have left the timer since the last purge, counting
    those that checkAndComplete already dropped. Here the purge counts only completed
    operations still sitting in a watcher list (``_garbage``), and also waits until they reach
    a quarter of the operations in the timer: scanning every list costs O(watched), so this
    keeps the amortised cost O(1) per operation and the watcher lists within 1.25x the live
    operations plus ``purge_interval``.

    A key watched by a single operation (a member's heartbeat, a group's join) maps to the
    operation itself rather than to a one-element list: one container less per key.
    """

    __slots__ = ("name", "_timer", "_add", "_purge_interval", "_watchers", "_delayed", "_garbage", "_multi")

    def __init__(self, name: str, timer: SystemTimer, purge_interval: int = 1000) -> None:
        self.name = name
        self._timer = timer
        self._add = timer.add
        self._purge_interval = purge_interval
        # key -> DelayedOperation | list[DelayedOperation] (a list holds two or more)
        # Any: an op or a list, told apart by `v.__class__ is list` on the hot path (mypy does
        # not narrow on that)
        self._watchers: dict[Hashable, Any] = {}
        self._delayed = 0  # operations of this purgatory waiting in the timer
        self._garbage = 0  # completed operations still in watcher lists (see the class doc)
        self._multi = _MultiKeyAccount(self)

    def try_complete_else_watch(self, op: DelayedOperation, watch_keys: Sequence[Hashable]) -> bool:
        """Complete ``op`` now if it can; otherwise watch it under every key and arm its timer.

        Returns True iff this call completed the operation.
        """
        if not watch_keys:
            raise ValueError("The watch key list can't be empty")
        if op.try_complete():
            return True
        watchers = self._watchers
        if len(watch_keys) == 1:
            account: Any = self
            key = watch_keys[0]
            v = watchers.get(key)
            if v is None:
                watchers[key] = op
            else:
                self._watch_existing(key, v, op)
        else:
            account = self._multi
            for key in watch_keys:
                v = watchers.get(key)
                if v is None:
                    watchers[key] = op
                else:
                    self._watch_existing(key, v, op)
        if op.try_complete():
            done = True
        else:
            done = False
            if not op._completed:
                # SystemTimer.add never runs a task, so Kafka's re-check of isCompleted after
                # arming the timer cannot fire here.
                self._add(op)
                op._delayed_in = account
                self._delayed += 1
        if op._completed and op._delayed_in is None:
            # completed between the two checks: watched, never armed, so garbage now
            op._delayed_in = account
            self._garbage += 1
        garbage = self._garbage
        if garbage > self._purge_interval and garbage * 4 >= self._delayed:
            self._purge()
        return done

    def _watch_existing(self, key: Hashable, v: Any, op: DelayedOperation) -> None:
        """Add ``op`` to the non-empty watcher entry ``v`` of ``key``."""
        if v.__class__ is list:
            v.append(op)
        elif v._completed:
            self._watchers[key] = op  # a purge of this key for free: the one op there is done
            if v._delayed_in is self:
                v._delayed_in = None
                self._garbage -= 1
        else:
            self._watchers[key] = [v, op]

    def check_and_complete(self, key: Hashable) -> int:
        """Try to complete every operation watched under ``key``; returns how many completed.

        Operations watched under ``key`` while this runs (from a callback) are tried too, as
        Kafka's iterator over its concurrent queue would; lists are replaced, never edited in
        place, so a nested check of the same key cannot disturb this loop.
        """
        watchers = self._watchers
        v: Any = watchers.get(key)
        if v is None:
            return 0
        if v.__class__ is not list:
            # one operation on this key (the common case): no list to rebuild. Typed, so the
            # compiled module reads and writes its fields directly (through Any each was a
            # generic attribute lookup)
            one: DelayedOperation = v
            if one._completed:
                completed = 0
            else:
                completed = 1 if one.try_complete() else 0
            if one._completed:
                if watchers.get(key) is one:
                    del watchers[key]
                    if one._delayed_in is self:
                        one._delayed_in = None
                        self._garbage -= 1
                else:
                    self._drop_completed(key)
            elif watchers.get(key) is not one:
                self._drop_completed(key)
        else:
            completed = 0
            i = 0
            while i < len(v):
                op: DelayedOperation = v[i]
                i += 1
                if not op._completed and op.try_complete():
                    completed += 1
            self._drop_completed(key)
        garbage = self._garbage
        if garbage > self._purge_interval and garbage * 4 >= self._delayed:
            self._purge()
        return completed

    def cancel_for_key(self, key: Hashable) -> list[DelayedOperation]:
        """Stop watching ``key`` and take its operations out of the timer, without completing them.

        Returns the operations that were still pending. Kafka returns every entry of the
        list, including completed ones not yet purged, which depends on purge timing; those
        are left out here so the result is deterministic.
        """
        v = self._watchers.pop(key, None)
        if v is None:
            return []
        cancelled = []
        for op in v if type(v) is list else (v,):
            if not op._completed:
                op.cancel()
                cancelled.append(op)
            elif op._delayed_in is self:
                op._delayed_in = None
                self._garbage -= 1
        self._maybe_purge()
        return cancelled

    def watched(self) -> int:
        """Entries in all watcher lists (an operation counts once per key it is watched on)."""
        return sum(len(v) if type(v) is list else 1 for v in self._watchers.values())

    def num_delayed(self) -> int:
        """Operations of this purgatory waiting in the timer."""
        return self._delayed

    def watch_keys(self) -> list[Hashable]:
        """Keys that currently have a watcher list (for tests and diagnostics)."""
        return list(self._watchers)

    def _drop_completed(self, key: Hashable) -> None:
        watchers = self._watchers
        v = watchers.get(key)
        if v is None:
            return
        if type(v) is list:
            live = []
            for op in v:
                if not op._completed:
                    live.append(op)
                elif op._delayed_in is self:
                    op._delayed_in = None
                    self._garbage -= 1
            n = len(live)
            if n == 0:
                del watchers[key]
            elif n == 1:
                watchers[key] = live[0]
            elif n != len(v):
                watchers[key] = live
        elif v._completed:
            del watchers[key]
            if v._delayed_in is self:
                v._delayed_in = None
                self._garbage -= 1

    def _maybe_purge(self) -> None:
        garbage = self._garbage
        if garbage > self._purge_interval and garbage * 4 >= self._delayed:
            self._purge()

    def _purge(self) -> int:
        """Drop completed operations from every watcher list (Kafka's purgeCompleted)."""
        self._garbage = 0
        watchers = self._watchers
        dirty = []
        for key, v in watchers.items():
            if type(v) is list:
                for op in v:
                    if op._completed:
                        dirty.append(key)
                        break
            elif v._completed:
                dirty.append(key)
        mine = (self, self._multi)
        purged = 0
        for key in dirty:
            v = watchers[key]
            if type(v) is list:
                live = []
                for op in v:
                    if not op._completed:
                        live.append(op)
                    elif op._delayed_in in mine:
                        op._delayed_in = None
                purged += len(v) - len(live)
                if not live:
                    del watchers[key]
                else:
                    watchers[key] = live if len(live) > 1 else live[0]
            else:
                if v._delayed_in in mine:
                    v._delayed_in = None
                purged += 1
                del watchers[key]
        return purged

    def __repr__(self) -> str:
        return f"DelayedOperationPurgatory({self.name!r}, watched={self.watched()}, delayed={self._delayed})"
