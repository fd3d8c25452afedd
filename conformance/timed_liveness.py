"""Timed liveness of the coordinator as properties of finite runs.

The spec's safety properties pass a group stuck in PreparingRebalance forever, or a crashed
member never removed: nothing bad happens, the good thing just never comes. Kafka bounds every
such wait with a timer, so on a finite run each liveness property becomes a deadline that a
checker can test after every step, given the clock (`now`, in spec units):

- RebalanceCompletes: PreparingRebalance is left within the rebalance timeout after it began,
  plus the initial delay (GroupCoordinator.prepareRebalance: DelayedJoin, or InitialDelayedJoin
  from Empty, which extends itself at most to the rebalance timeout).
- SyncCompletes: CompletingRebalance is left within the rebalance timeout (DelayedSync,
  scheduled by onCompleteJoin with the group's rebalance timeout).
- SilentMemberRemoved: a member or pending member that sends nothing is gone by its session
  timeout (DelayedHeartbeat; MemberMetadata.hasSatisfiedHeartbeat excuses a member awaiting a
  join or a sync), a new member awaiting its join by the new-member join timeout
  (addMemberAndRebalance's NewMemberJoinTimeoutMs).
- ParkedRequestAnswered: a consumer's parked JoinGroup is answered within the rebalance timeout
  plus the initial delay, a parked SyncGroup within the rebalance timeout (the deadlines of the
  operations that hold them).
- InitialDelayedJoinOnTime: a rebalance that began in Empty (InitialDelayedJoin) ends exactly
  when Kafka's ends it: after group.initial.rebalance.delay.ms, extended by the delay (at most
  the rebalance timeout less the delay in all) while new members keep joining a generation-0
  group (addMemberAndRebalance's newMemberAdded, which stays set on the GroupMetadata until an
  extension clears it; InitialDelayedJoin.onComplete). Never earlier (tryComplete is false), and
  not later unless a static member can postpone it (onCompleteJoin with no member rejoined).

A group-metadata append in flight (the spec's `writes`, an asynchronous store) holds
CompletingRebalance and the parked SyncGroups until its callback (doSyncGroup's storeGroup);
no coordinator timer bounds the log's latency, so those two clocks restart while one is in
flight.

The bounds are generous where Kafka's are intricate: any request of a member, any change of
the group's state or generation and a (re)load count as hearing from every member it concerns,
so a property never fails a run Kafka's timers allow. States are the spec's variables
(conformance.abstraction, ITF traces); a state without the variables a property needs skips it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LIVENESS_PROPERTIES", "Deadlines", "TimedLiveness"]

LIVENESS_PROPERTIES = (
    "RebalanceCompletes",
    "SyncCompletes",
    "SilentMemberRemoved",
    "ParkedRequestAnswered",
    "InitialDelayedJoinOnTime",
)


@dataclass(frozen=True)
class Deadlines:
    """The timeouts, in spec units (SpecConstants' fields of the same names)."""

    session: int
    rebalance: int
    initial_delay: int
    new_member_timeout: int

    @classmethod
    def of(cls, constants: Any) -> Deadlines:
        return cls(constants.session, constants.rebalance, constants.initial_delay, constants.new_member_timeout)


@dataclass
class TimedLiveness:
    """Feed it the states of one run in order (`observe`); it returns what is overdue."""

    deadlines: Deadlines
    _phase: tuple[Any, ...] | None = None  # (loaded, gstate, generation) of the last state
    _phase_since: int = 0
    _heard: dict[int, int] = field(default_factory=dict)  # member id -> when last heard
    _waits: dict[Any, tuple[str, int]] = field(default_factory=dict)  # client -> (phase, since)
    _initial: InitialDelayClock = field(default_factory=lambda: InitialDelayClock())

    def observe(self, s: Mapping[str, Any]) -> dict[str, list[str]]:
        """Violations by property name in state `s` (given after every earlier state)."""
        if "now" not in s or "gstate" not in s:
            return {}
        now, d = int(s["now"]), self.deadlines
        out: dict[str, list[str]] = {}
        phase = (s.get("loaded", True), s["gstate"], s.get("generation"))
        changed = phase != self._phase
        stored = bool(s.get("writes"))  # an append in flight: its callback ends the sync phase
        if changed or (stored and phase[1] == "CompletingRebalance"):
            self._phase, self._phase_since = phase, now
        loaded, gstate = phase[0], phase[1]
        waited = now - self._phase_since
        bound = d.rebalance + d.initial_delay
        if _has_static_member(s):
            # onCompleteJoin keeps static members that did not rejoin; with none rejoined it
            # postpones the rebalance (another DelayedJoin) until their sessions expire
            bound += d.session
        if loaded and gstate == "PreparingRebalance" and waited > bound:
            out["RebalanceCompletes"] = [
                f"PreparingRebalance since {self._phase_since}, now {now} (bound {bound}: rebalance timeout "
                f"{d.rebalance} + initial delay {d.initial_delay}, + session {d.session} with static members)"
            ]
        if loaded and gstate == "CompletingRebalance" and waited > d.rebalance:
            out["SyncCompletes"] = [
                f"CompletingRebalance since {self._phase_since}, now {now} (rebalance timeout {d.rebalance})"
            ]
        silent = self._silent(s, now, changed)
        if silent:
            out["SilentMemberRemoved"] = silent
        parked = self._parked(s, now, stored)
        if parked:
            out["ParkedRequestAnswered"] = parked
        early_or_late = self._initial.observe(s, d)
        if early_or_late:
            out["InitialDelayedJoinOnTime"] = early_or_late
        return out

    def _silent(self, s: Mapping[str, Any], now: int, changed: bool) -> list[str]:
        if "members" not in s:
            return []
        members, pending = set(s["members"]), set(s.get("pending", ()))
        waiting = set(s.get("awaitingJoin", ())) | set(s.get("awaitingSync", ()))
        new = set(s.get("newMembers", ()))
        minstance = s.get("minstance", {})
        static = {m for m in members if _instance_of(minstance, m)}
        la = s.get("lastAction") or {}
        spoke = {la.get("member", 0), la.get("newMember", 0)} if hasattr(la, "get") else set()
        present = members | pending
        self._heard = {m: t for m, t in self._heard.items() if m in present}
        bad = []
        for m in sorted(present):
            satisfied = m in members and m in waiting and m not in new
            if changed or satisfied or m in spoke or m not in self._heard:
                self._heard[m] = now
                continue
            if m in pending:
                bound, what = self.deadlines.session, "pending member"
            elif m in new and m in waiting and m in static:
                # updateStaticMemberAndRebalance moves a new static member to a new id and
                # reschedules its DelayedHeartbeat with the session timeout; it stays new
                bound, what = max(self.deadlines.new_member_timeout, self.deadlines.session), "new static member"
            elif m in new and m in waiting:
                bound, what = self.deadlines.new_member_timeout, "new member"
            else:
                bound, what = self.deadlines.session, "member"
            if now - self._heard[m] > bound:
                bad.append(f"{what} {m} silent since {self._heard[m]}, now {now} (timeout {bound})")
        return bad

    def _parked(self, s: Mapping[str, Any], now: int, stored: bool) -> list[str]:
        phases = s.get("cphase")
        if phases is None:
            return []
        d, bad = self.deadlines, []
        for c, ph in phases.items():
            if ph not in ("JoinWait", "SyncWait"):
                self._waits.pop(c, None)
                continue
            was = self._waits.get(c)
            if was is None or was[0] != ph or (stored and ph == "SyncWait"):
                self._waits[c] = (ph, now)
                continue
            bound = d.rebalance + d.initial_delay if ph == "JoinWait" else d.rebalance
            if now - was[1] > bound:
                kind = "JoinGroup" if ph == "JoinWait" else "SyncGroup"
                bad.append(f"client {c}'s {kind} parked since {was[1]}, now {now} (bound {bound})")
        return bad


@dataclass
class InitialDelayClock:
    """Kafka's InitialDelayedJoin replayed from the states: when it must end the rebalance.

    Fed every state; keeps the group's newMemberAdded flag as Kafka keeps it (set when a member
    is added to a generation-0 group in PreparingRebalance, cleared by an extension, new with
    each GroupMetadata: a (re)load or a group created again) and, while a rebalance begun in
    Empty is under way, the end of its current delay and the time left to extend it."""

    _prev: Mapping[str, Any] | None = None
    _flag: bool = False
    _window: tuple[int, int, int] | None = None  # (ends at, its delay, remaining) as InitialDelayedJoin's
    _done_at: int | None = None  # when Kafka completes the join (the window that did not extend)

    def observe(self, s: Mapping[str, Any], d: Deadlines) -> list[str]:
        prev, self._prev = self._prev, s
        if "members" not in s or "generation" not in s:
            return []
        now, gstate = int(s["now"]), s["gstate"]
        if prev is None or not s.get("loaded", True) or gstate == "Dead" or not prev.get("loaded", True):
            self._flag, self._window, self._done_at = False, None, None
            return []
        before, after = set(prev["members"]), set(s["members"])
        if prev["gstate"] == "PreparingRebalance" and prev["generation"] == 0 and len(after) > len(before):
            self._flag = True  # addMemberAndRebalance: newMemberAdded
        if prev["gstate"] in ("Empty", "Dead") and gstate == "PreparingRebalance":
            # from Empty, or from no group: getOrMaybeCreateGroup makes it Empty first
            rebalance = max((_rebalance_timeout(s, m) for m in after), default=d.rebalance)
            # prepareRebalance from Empty: InitialDelayedJoin(delay, delay, max(rebalance - delay, 0))
            self._window, self._done_at = (
                (now + d.initial_delay, d.initial_delay, max(rebalance - d.initial_delay, 0)),
                None,
            )
        while self._window is not None and self._window[0] <= now:
            ends, delay, remaining = self._window
            if self._flag and remaining != 0:
                # InitialDelayedJoin.onComplete: another delay, shorter if little remains
                self._flag = False
                longer = min(d.initial_delay, remaining)
                self._window = (ends + longer, longer, max(remaining - delay, 0))
            else:
                self._window, self._done_at = None, ends
        if prev["gstate"] == "PreparingRebalance" and gstate in ("CompletingRebalance", "Empty"):
            window, expected, self._window, self._done_at = self._window, self._done_at, None, None
            if window is not None:
                return [
                    f"the initial rebalance ended at {now}, before Kafka's InitialDelayedJoin expires ({window[0]})"
                ]
            if expected is not None and now != expected:
                return [f"the initial rebalance ended at {now}; Kafka's InitialDelayedJoin ends it at {expected}"]
        if gstate == "PreparingRebalance" and self._done_at is not None and self._done_at < now:
            if not _has_static_member(s):
                done, self._done_at = self._done_at, None
                return [
                    f"the initial rebalance still under way at {now}; Kafka's InitialDelayedJoin ended it at {done}"
                ]
        return []


def _rebalance_timeout(s: Mapping[str, Any], member: int) -> int:
    """The member's rebalance timeout in units (the spec's mtimeouts: member -> (session, rebalance))."""
    timeouts = s.get("mtimeouts", ())
    return int(timeouts[member - 1][1]) if 1 <= member <= len(timeouts) else 0


def _instance_of(minstance: Any, member: int) -> bool:
    """Whether `member` was handed out with a group.instance.id: the spec's minstance, a
    function on 1..N (a tuple in the abstraction and in ITF) to an instance, the set of its
    clients (NoInstance: the empty set)."""
    if isinstance(minstance, (tuple, list)):
        value = minstance[member - 1] if 1 <= member <= len(minstance) else None
    else:
        value = minstance.get(member) if hasattr(minstance, "get") else None
    return bool(value)


def _has_static_member(s: Mapping[str, Any]) -> bool:
    """Whether a member of state `s` has a group.instance.id."""
    minstance = s.get("minstance", ())
    return any(_instance_of(minstance, m) for m in s.get("members", ()))
