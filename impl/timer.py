"""Kafka's hierarchical timing wheel (TimerTask, TimerTaskList, TimingWheel, SystemTimer).

Layout, as in server-common ``org.apache.kafka.server.util.timer``:

* a **bucket** (Kafka's ``TimerTaskList``) holds its tasks in a plain Python list, in add order;
  a task points back at its bucket (``_bucket``), and a task is in a bucket exactly when that
  pointer is the bucket, so removal can be lazy;
* **wheel** ``k`` has ``wheel_size`` buckets of ``tick_ms * wheel_size**k`` ms each; a task
  whose deadline is beyond a wheel's interval goes to the next (overflow) wheel, created on
  demand; when an overflow bucket comes due its tasks are re-inserted one level down;
* a heap of ``(expiration, bucket id, bucket)`` plays Kafka's ``DelayQueue<TimerTaskList>``:
  a bucket is pushed once each time its expiration changes, never once per task.

Why lists with lazy removal: adding a task is one ``list.append`` (no per-task container, no
links to write), and completing a DelayedOperation only drops its bucket pointer and counts a
dead entry (no neighbour touched: at a million outstanding tasks every neighbour is a cache
miss). An expiring bucket skips dead entries; a bucket whose entries are mostly dead is
compacted in place (``_Bucket.compact``), so dead tasks are freed within a constant factor of
the live ones. ``cancel()`` removes the entry at once (O(bucket)), because a cancelled task
may be added again and must then sit at its new place only; completion is final.

Where this differs from Kafka, it is to make firing exact rather than "roughly on time", as
the scenario contract's Time rules require: a task with deadline ``d`` runs only in an
``advance_to(target)`` with ``d <= target`` (never early because it shares a tick with an
earlier one, never on ``add``), all due tasks run in ``(deadline, add order)`` order, and the
virtual clock reads ``d`` while the task runs. No sequence number is needed for that, because
of one fact about the wheels: when an overflow bucket cascades into a lower bucket, every task
it brings was added before every task already there (a deadline reached the lower wheel
directly only once that wheel's interval had grown to cover it, which is later). So each
bucket's list is kept in add order by putting cascaded tasks *in front*, and

* the lowest wheel's bucket for the slot the clock is in becomes the *current* list (with
  ``tick_ms == 1`` it holds one deadline: a task added for it is appended, and a bucket coming
  due becomes the current list in O(1), without touching its tasks);
* when buckets come due, every bucket with that expiration (on any level) is drained before
  anything runs, lowest level first, each cascaded group going in front; with ``tick_ms > 1``
  the current list is then stably sorted by deadline.

Single-threaded: Kafka's locks are not needed in Python; ``add``/``cancel`` may be called from
inside a running task.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush
from itertools import islice
from operator import attrgetter
from typing import Any

from mypy_extensions import mypyc_attr

from kgc.impl.clock import Clock, VirtualClock

__all__ = ["TimerTask", "SystemTimer"]

_DEADLINE = attrgetter("_deadline")
# A bucket is compacted once it holds more than this many dead entries and they are more than
# three quarters of it: amortised O(1) per completion, and dead tasks stay within 3x the live
# ones. At half (2x) the wheel compacted twice as often, and each compaction scatters the live
# tasks' memory for the collector's walk: wheel/heap 1.49 -> 2.23-2.30 at 1M outstanding, 2.02 ->
# 2.75-2.93 at 100k (issue 18, docs/measurements.md "Purgatory"); peak memory 0.83 of the heap's at 1M.
COMPACT_MIN_DEAD = 32


@mypyc_attr(allow_interpreted_subclasses=True)
class TimerTask:
    """A task that runs once its delay has passed.

    Kafka keeps a separate ``TimerTaskEntry`` so a task can be re-added while another thread
    still holds the old entry; single-threaded, the bucket's list holds the task itself and the
    task its bucket, which saves one object per outstanding task. Re-adding a pending task
    first cancels it, as Kafka's ``setTimerTaskEntry`` does.
    """

    __slots__ = ("delay_ms", "_deadline", "_seq", "_bucket")

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self._deadline = 0
        self._seq = 0  # add order, for diagnostics: firing order is (_deadline, _seq)
        # The bucket whose list holds this task, or None when not pending. Typed exactly, so
        # the compiled module reads a bucket's fields without a dictionary lookup.
        self._bucket: _Bucket | None = None

    def cancel(self) -> None:
        """Take the task out of its bucket; a no-op when not pending."""
        b = self._bucket
        if b is not None:
            self._bucket = None
            b.remove(self)

    def run(self) -> None:
        raise NotImplementedError

    def deadline_ms(self) -> int | None:
        """The deadline of the pending task (None if not pending); for tests and diagnostics."""
        return self._deadline if self._bucket is not None else None


class _Bucket:
    """Kafka's TimerTaskList: tasks in add order; those whose ``_bucket`` is not this bucket
    are dead entries (completed), ``dead`` of them after ``pos``.

    ``pos`` is how far the current list has been run (0 for every other bucket).
    """

    __slots__ = ("entries", "pos", "dead", "exp", "uid", "level")

    def __init__(self, uid: int, level: int) -> None:
        self.entries: list[TimerTask] = []
        self.pos = 0
        self.dead = 0
        self.exp = -1
        self.uid = uid
        self.level = level

    def live(self) -> list[TimerTask]:
        """The pending tasks, in list order."""
        return [t for t in islice(self.entries, self.pos, None) if t._bucket is self]

    def count(self) -> int:
        return len(self.entries) - self.pos - self.dead

    def remove(self, task: TimerTask) -> None:
        """Eager removal (cancel): O(len), keeps the list object (``add`` caches its append)."""
        entries = self.entries
        del entries[entries.index(task, self.pos)]

    def compact(self) -> None:
        """Drop dead and already-run entries, in place (the list object stays the same)."""
        self.entries[:] = self.live()
        self.pos = 0
        self.dead = 0

    def reset(self, uid: int, level: int) -> None:
        self.entries = []
        self.pos = 0
        self.dead = 0
        self.exp = -1
        self.uid = uid
        self.level = level


def task_completed(task: TimerTask) -> None:
    """Lazy removal of a task that completed while pending (DelayedOperation.force_complete).

    The entry stays in its bucket's list, dead; the bucket is compacted when mostly dead.
    Inlined in kgc.impl.purgatory; kept here as the one definition of the protocol.
    """
    b = task._bucket
    if b is not None:
        task._bucket = None
        n = b.dead + 1
        b.dead = n
        if n > COMPACT_MIN_DEAD and n * 4 > 3 * len(b.entries):
            b.compact()


class SystemTimer:
    """Kafka's SystemTimer over a hierarchy of TimingWheels, driven by an explicit clock.

    ``advance_to``/``fire_next`` drive a ``VirtualClock`` (replay, conformance, tests);
    ``poll`` runs what is due on a real clock. Nothing runs on ``add``: a task whose deadline
    has already passed (a negative delay counts as zero) runs at the next advance/poll.
    """

    __slots__ = (
        "_clock",
        "_now_ms",
        "_set_ms",
        "_vclock",
        "_tick",
        "_wsize",
        "_ticks",
        "_curs",
        "_ends",
        "_wheels",
        "_w0",
        "_cur0",
        "_curvid0",
        "_end0",
        "_cur",
        "_queue",
        "_running",
        "_uids",
        "_last_d",
        "_last_b",
        "_last_append",
        "_last_seq",
        "_seq",
    )

    def __init__(self, clock: Clock, tick_ms: int = 1, wheel_size: int = 20) -> None:
        if tick_ms < 1 or wheel_size < 2:
            raise ValueError("tick_ms must be >= 1 and wheel_size >= 2")
        self._clock = clock
        self._now_ms: Callable[[], int] = clock.now_ms
        self._set_ms: Callable[[int], None] | None = getattr(clock, "set_ms", None)
        # Reading VirtualClock._now directly saves a call on the add hot path.
        self._vclock = clock if type(clock) is VirtualClock else None
        self._tick = tick_ms
        self._wsize = wheel_size
        start = clock.now_ms()
        self._uids = 0
        self._ticks: list[int] = []
        self._curs: list[int] = []
        self._ends: list[int] = []
        self._wheels: list[list[_Bucket | None]] = []  # overflow slots: None until used
        self._add_level(start - start % tick_ms)
        self._w0 = self._wheels[0]
        self._cur: _Bucket = self._new_bucket(0)  # the clock's slot of the lowest wheel
        self._queue: list[tuple[int, int, _Bucket]] = []
        self._running = False
        # The deadline, bucket and bound append of the latest run of adds, valid until a wheel
        # moves (see add); _last_d is None when there is nothing to reuse.
        self._last_d: int | None = None
        self._last_b: _Bucket | None = None
        self._last_append: Any = None
        self._last_seq = 0
        # Add order, kept for diagnostics and live_tasks (firing order needs no sequence
        # numbers; see the module doc). A run of adds with one deadline shares one number.
        self._seq = 0
        self._sync_level0()

    # ------------------------------------------------------------------ structure

    def _add_level(self, start: int) -> None:
        """Create the next overflow wheel (Kafka's addOverflowWheel), starting at ``start``."""
        level = len(self._ticks)
        tick = self._tick if level == 0 else self._ticks[-1] * self._wsize
        cur = start - start % tick
        # Buckets are made on first use (_overflow_bucket): a coordinator's long timeouts open
        # four or five levels, of which only a few buckets ever hold a task, and short-lived
        # coordinators (one per replayed scenario) paid for all of them.
        buckets: list[_Bucket | None] = [None] * self._wsize
        self._ticks.append(tick)
        self._curs.append(cur)
        self._ends.append(cur + tick * self._wsize)
        self._wheels.append(buckets)

    def _new_bucket(self, level: int) -> _Bucket:
        b = _Bucket(self._uids, level)
        self._uids += 1
        return b

    def _overflow_bucket(self, level: int, slot: int) -> _Bucket:
        """The bucket of a wheel's slot, made on first use."""
        wheel = self._wheels[level]
        b = wheel[slot]
        if b is None:
            b = wheel[slot] = self._new_bucket(level)
        return b

    def _buckets(self) -> list[_Bucket]:
        """Every bucket that may hold tasks: the current list and each wheel's."""
        return [self._cur, *(b for wheel in self._wheels for b in wheel if b is not None)]

    def _sync_level0(self) -> None:
        self._last_d = None  # the wheels moved: a deadline may map to another list now
        self._cur0 = self._curs[0]
        self._curvid0 = self._cur0 // self._tick
        self._end0 = self._ends[0]

    def _advance_wheels(self, t: int) -> None:
        """Kafka's TimingWheel.advanceClock, applied to every level at once.

        Only called once every bucket expiring at or before ``t`` has been drained, so no
        bucket ever holds a slot behind its wheel's clock.
        """
        ticks = self._ticks
        curs = self._curs
        ends = self._ends
        wsize = self._wsize
        for k in range(len(ticks)):
            tk = ticks[k]
            c = t - t % tk
            curs[k] = c
            ends[k] = c + tk * wsize
        self._sync_level0()

    # ------------------------------------------------------------------ add / place

    def add(self, task: TimerTask) -> None:
        """Schedule ``task`` at ``now + delay_ms``; O(number of wheels), usually O(1)."""
        if task._bucket is not None:
            task.cancel()
        vc = self._vclock
        d = vc._now if vc is not None else self._now_ms()
        delay = task.delay_ms
        if delay > 0:
            d += delay
        last = self._last_d
        if d == last:
            # The same deadline as the previous add and no wheel has moved since (a drain or an
            # advance clears _last_d): the same bucket, already queued, so just append. Tasks
            # added together usually share their deadline (a burst of requests with one
            # timeout), and sharing the int object saves an allocation per task.
            task._deadline = last
            task._seq = self._last_seq
            task._bucket = self._last_b
            self._last_append(task)
            return
        task._deadline = d
        seq = self._seq
        self._seq = seq + 1
        task._seq = seq
        if d < self._end0:
            tick = self._tick
            vid = d // tick
            if vid == self._curvid0:
                b = self._cur
                task._bucket = b
                if tick == 1:
                    # one deadline per slot: this and later adds for it are appends
                    b.entries.append(task)
                    self._last_d = d
                    self._last_b = b
                    self._last_append = b.entries.append
                    self._last_seq = seq
                else:
                    self._insert_current(b, task, d)
                return
            b = self._w0[vid % self._wsize] or self._overflow_bucket(0, vid % self._wsize)
            e = vid * tick
        else:
            # an overflow wheel, created on demand (most long timeouts land here)
            ends = self._ends
            k = 1
            n = len(ends)
            while True:
                if k == n:
                    self._add_level(self._curs[k - 1])
                    n += 1
                if d < ends[k]:
                    break
                k += 1
            tk = self._ticks[k]
            vid = d // tk
            b = self._wheels[k][vid % self._wsize] or self._overflow_bucket(k, vid % self._wsize)
            e = vid * tk
        task._bucket = b
        append = b.entries.append
        append(task)
        if b.exp != e:
            b.exp = e
            heappush(self._queue, (e, b.uid, b))
        self._last_d = d
        self._last_b = b
        self._last_append = append
        self._last_seq = seq

    @staticmethod
    def _insert_current(cur: _Bucket, task: TimerTask, d: int) -> None:
        """Insert a newly added task into the current list (sorted by deadline, then add order):
        after every entry with deadline <= d. Only with ``tick_ms > 1``."""
        entries = cur.entries
        i = len(entries)
        pos = cur.pos
        while i > pos and entries[i - 1]._deadline > d:
            i -= 1
        entries.insert(i, task)

    # ------------------------------------------------------------------ expiry

    def _drain(self, e: int) -> None:
        """Bring every bucket expiring at ``e`` down to the current list (Kafka's flush).

        Called only when the current list holds no pending task. The wheels' clocks move to
        ``e`` first; the lowest wheel's bucket for ``e`` becomes the current list (the old,
        empty one takes its slot), and each overflow bucket's tasks re-insert one or more
        levels down, in front of what their new bucket holds (they are older; see the module
        doc), lowest level first.
        """
        self._advance_wheels(e)
        queue = self._queue
        base = None
        over = []
        while queue and queue[0][0] == e:
            b = heappop(queue)[2]
            b.exp = -1
            if b.level == 0:
                base = b
            else:
                over.append(b)
        tick = self._tick
        wsize = self._wsize
        w0 = self._w0
        old = self._cur
        uid = self._uids
        self._uids = uid + 1
        if base is not None:
            old.reset(uid, 0)
            w0[(e // tick) % wsize] = old
            cur = base
            self._cur = cur
        else:
            cur = old
            cur.reset(uid, 0)
        if over:
            over.sort(key=attrgetter("level"))
            for b in over:
                self._cascade(b, cur)
        if tick != 1 and cur.entries:
            live = cur.live()
            live.sort(key=_DEADLINE)  # stable: add order within a deadline
            cur.entries = live
            cur.dead = 0

    def _cascade(self, src: _Bucket, cur: _Bucket) -> None:
        """Re-insert the pending tasks of the due overflow bucket ``src`` lower down; each
        target bucket gets its group in front of its own (newer) entries."""
        tick = self._tick
        wsize = self._wsize
        w0 = self._w0
        curvid0 = self._curvid0
        end0 = self._end0
        ends = self._ends
        ticks = self._ticks
        wheels = self._wheels
        queue = self._queue
        groups: dict[_Bucket, list[TimerTask]] = {}
        entries = src.entries
        src.entries = []
        src.dead = 0
        for t in entries:
            if t._bucket is not src:
                continue
            d = t._deadline
            if d < end0:
                vid = d // tick
                if vid == curvid0:
                    tb = cur
                else:
                    tb = w0[vid % wsize] or self._overflow_bucket(0, vid % wsize)
                    x = vid * tick
                    if tb.exp != x:
                        tb.exp = x
                        heappush(queue, (x, tb.uid, tb))
            else:
                k = 1
                while d >= ends[k]:
                    k += 1
                tk = ticks[k]
                vid = d // tk
                tb = wheels[k][vid % wsize] or self._overflow_bucket(k, vid % wsize)
                x = vid * tk
                if tb.exp != x:
                    tb.exp = x
                    heappush(queue, (x, tb.uid, tb))
            t._bucket = tb
            g = groups.get(tb)
            if g is None:
                groups[tb] = [t]
            else:
                g.append(t)
        for tb, g in groups.items():
            if tb.pos:
                del tb.entries[: tb.pos]
                tb.pos = 0
            if tb.entries:
                g.extend(tb.entries)
            tb.entries = g

    def _advance(self, target: int, limit: int) -> int:
        """Run due tasks in (deadline, add order) up to ``target``; at most ``limit`` (-1: all)."""
        if self._running:
            raise RuntimeError("SystemTimer is not re-entrant: advance called from a running task")
        self._running = True
        set_ms = self._set_ms
        queue = self._queue
        ran = 0
        # The clock only moves forwards: if something else moved it past a deadline, the
        # task still runs in order, with the clock left where it is.
        last = self._now_ms()
        try:
            while True:
                cur = self._cur
                entries = cur.entries
                p = cur.pos
                pending = False
                while p < len(entries):
                    t = entries[p]
                    if t._bucket is not cur:
                        p += 1
                        cur.pos = p
                        cur.dead -= 1
                        continue
                    d = t._deadline
                    if d > target:
                        pending = True
                        break
                    p += 1
                    cur.pos = p
                    t._bucket = None
                    if d > last:
                        if set_ms is not None:
                            set_ms(d)
                        last = d
                    t.run()
                    ran += 1
                    if ran == limit:
                        return ran
                    p = cur.pos  # a compaction (a completion inside run) may have moved it
                if pending:
                    break  # the rest of the current slot is after target
                if not queue or queue[0][0] > target:
                    break
                self._drain(queue[0][0])
        finally:
            self._running = False
        # Everything expiring by target has been drained, so the wheels may move up to it,
        # which keeps new short timers on the lowest wheel.
        self._advance_wheels(target)
        return ran

    # ------------------------------------------------------------------ public API

    def size(self) -> int:
        """Live tasks: added and neither cancelled, completed nor run (Kafka's taskCounter).
        O(buckets), not O(tasks)."""
        return sum(b.count() for b in self._buckets())

    def next_deadline_ms(self) -> int | None:
        """The earliest deadline among live tasks, or None when there are none."""
        cur = self._cur
        for t in islice(cur.entries, cur.pos, None):
            if t._bucket is cur:
                return t._deadline  # the current list is sorted
        best = None
        exact0 = self._tick == 1
        for e, _, b in sorted(self._queue):
            if best is not None and e >= best:
                break
            live = b.live()
            if not live:
                continue
            m = e if exact0 and b.level == 0 else min(t._deadline for t in live)
            if best is None or m < best:
                best = m
        return best

    def live_tasks(self) -> list[TimerTask]:
        """Live tasks in firing order, (deadline, add order): a read-only snapshot, so that
        conformance can compare the timer with the spec's ordered `timers`.

        Within one deadline, a task on a higher wheel was added before one on a lower wheel,
        and within a bucket the list is in add order. O(buckets + tasks log tasks)."""
        keyed = []
        for b in self._buckets():
            for i, t in enumerate(b.live()):
                keyed.append((t._deadline, -b.level, i, t))
        keyed.sort(key=lambda k: k[:3])
        return [k[3] for k in keyed]

    def advance_to(self, target_ms: int) -> int:
        """Run every task due at or before ``target_ms``; afterwards the clock reads it."""
        set_ms = self._require_virtual()
        now = self._now_ms()
        if target_ms < now:
            raise ValueError(f"advance_to({target_ms}) is before now ({now})")
        ran = self._advance(target_ms, -1)
        set_ms(target_ms)
        return ran

    def fire_next(self) -> bool:
        """Advance to the earliest live deadline and run exactly that one task."""
        self._require_virtual()
        d = self.next_deadline_ms()
        if d is None:
            return False
        self._advance(d, 1)
        return True

    def poll(self) -> int:
        """Run everything due at ``clock.now_ms()`` (the real-clock path)."""
        return self._advance(self._now_ms(), -1)

    def _require_virtual(self) -> Callable[[int], None]:
        if self._set_ms is None:
            raise TypeError("advance_to/fire_next need a clock with set_ms (VirtualClock); use poll()")
        return self._set_ms

    def __len__(self) -> int:
        return self.size()

    def __repr__(self) -> str:
        return f"SystemTimer(tick_ms={self._tick}, wheel_size={self._wsize}, levels={len(self._ticks)}, size={self.size()})"
