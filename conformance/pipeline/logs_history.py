"""Per-group history rebuilt from coordinator log events and checked against what the protocol
allows at this level of observation.

Why two severities: a log excerpt is a partial observation (grep-filtered, rotated, pasted from
the middle of an incident), so only what no run of the protocol can log is a `violation`; the
known failure patterns of real deployments (rebalance storms as in KAFKA-8653, a stabilised
generation whose metadata write failed, a group stuck in CompletingRebalance past its rebalance
timeout, members expiring over and over) are `warning`s. An unknown start is never a finding.

What the protocol guarantees here (GroupCoordinator.scala, GroupMetadata.initNextGeneration):
generations of one group incarnation never go backwards and each one completes (Stabilized or
now-empty) at most once; a new incarnation (after Dead, or the group moving between brokers:
unload / load) may start over. A Stabilized group has members (a group without members goes
Empty instead).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any

__all__ = [
    "CheckConfig",
    "Event",
    "Finding",
    "GroupHistory",
    "check_group",
    "parse_ts_ms",
    "state_sequence",
]

VIOLATION = "violation"
WARNING = "warning"

#: The generation-carrying events that take part in the "never backwards" rule. Store errors and
#: late expirations are excluded: their callbacks can run after the group moved on.
_GENERATION_KINDS = frozenset({"prepare", "stabilized", "empty", "assignment"})
#: Events after which the group's generation may legitimately start over.
_RESET_KINDS = frozenset({"dead", "unloaded", "loaded"})


@dataclass(frozen=True)
class CheckConfig:
    """Thresholds for the warning rules (the broker and client defaults where there is one)."""

    storm_rebalances: int = 10  # completed or started rebalances within storm_window_ms
    storm_window_ms: int = 300_000
    burst_rebalances: int = 3  # rebalances within burst_window_ms: KAFKA-8653's instant loop
    burst_window_ms: int = 1_000
    rebalance_timeout_ms: int = 300_000  # max.poll.interval.ms's default, the usual rebalance timeout
    expiry_repeats: int = 5  # member expirations within expiry_window_ms
    expiry_window_ms: int = 600_000


class _ParsedTime:
    """Event.ts_ms: functools.cached_property without the lock Python 3.11 takes on every first
    read (a seventh of the history check's time); the value lands in the event's __dict__,
    which is read from then on."""

    def __get__(self, event: Event | None, owner: type | None = None) -> Any:
        if event is None:
            return self
        value = event.__dict__["ts_ms"] = parse_ts_ms(event.ts)
        return value


@dataclass(frozen=True)
class Event:
    """One coordinator log entry the parser understood (fields empty when the wording lacks them)."""

    file: str
    line: int
    ts: str
    broker: str
    kind: str
    group: str
    generation: int | None = None
    member: str = ""
    state: str = ""
    reason: str = ""
    members: int | None = None
    error: str = ""
    text: str = ""

    #: The time in ms (parse_ts_ms), parsed once per event: the window rules read every event's
    #: time again for each later event in their window (~4.6 reads an event on generated logs).
    ts_ms = _ParsedTime()

    @classmethod
    def of(cls, *values: object) -> Event:
        """An Event from its fields' values in declaration order (logs_pipeline's rows), its time
        parsed. Why not the constructor: a frozen dataclass's __init__ sets each field through
        object.__setattr__, which was a quarter of the history check's time."""
        event = object.__new__(cls)
        state = event.__dict__
        state.update(zip(_EVENT_FIELDS, values))
        state["ts_ms"] = parse_ts_ms(state["ts"])
        return event


_EVENT_FIELDS = tuple(f.name for f in fields(Event))


@dataclass(frozen=True)
class Finding:
    file: str
    line: int
    group: str
    kind: str  # violation | warning
    rule: str
    message: str
    lines: tuple[str, ...] = ()

    def as_row(self) -> dict:
        row = asdict(self)
        row["lines"] = list(self.lines)
        return row


@dataclass
class GroupHistory:
    """One row of the `groups` table."""

    group: str
    events: int = 0
    generations: list[int] = field(default_factory=list)
    rebalances: int = 0
    brokers: list[str] = field(default_factory=list)
    first_ts: str = ""
    last_ts: str = ""
    state_ms: dict[str, int] = field(default_factory=dict)
    timeline: list[tuple[str, str, int | None]] = field(default_factory=list)  # (ts, state, generation)


#: What `strptime` accepted with "%Y-%m-%d %H:%M:%S.%f" or "%Y-%m-%d %H:%M:%S" after "T" -> " " and
#: "," -> ".": read with one regex and datetime's constructor (strptime was ~85 % of the history
#: check's CPU: ~30 us a call against ~2 us).
_TS_RE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})[\sT]+(\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]([0-9]{1,6}))?")


#: Seconds since the epoch of each whole second seen (the timestamp up to its fraction), None
#: for an impossible date: events share their second, and datetime's constructor and
#: timestamp() were half of parse_ts_ms. Emptied when full (a log spans few distinct seconds).
_SECONDS: dict[str, float | None] = {}
_SECONDS_KEPT = 1 << 17


def parse_ts_ms(ts: str) -> int | None:
    """Kafka's log4j timestamp ("2021-06-09 10:00:00,123"; ISO 'T' and '.' seen too) in ms, local
    time (as strptime + timestamp() read it). The whole seconds are cached: datetime's
    timestamp() is the second's float plus microseconds / 1e6, so adding the fraction to the
    cached second gives the very same float."""
    if not ts:
        return None
    found = _TS_RE.fullmatch(ts)
    if found is None:
        return None
    fraction = found.group(7)
    second = ts if fraction is None else ts[: found.start(7)]
    if second in _SECONDS:
        seconds = _SECONDS[second]
    else:
        seconds = _whole_seconds(found.groups())
        if len(_SECONDS) >= _SECONDS_KEPT:
            _SECONDS.clear()
        _SECONDS[second] = seconds
    if seconds is None:
        return None
    micros = int(fraction.ljust(6, "0")) if fraction else 0
    return int((seconds + micros / 1e6) * 1000)


def _whole_seconds(parts: Sequence[str]) -> float | None:
    year, month, day, hour, minute, second = map(int, parts[:6])
    try:
        return datetime(year, month, day, hour, minute, second).timestamp()
    except ValueError:
        return None


def _state_after(event: Event) -> str | None:
    """The group state an event shows the group entering (None: no state change visible)."""
    return {
        "prepare": "PreparingRebalance",
        "stabilized": "CompletingRebalance",
        "assignment": "Stable",
        "empty": "Empty",
        "dead": "Dead",
        "unloaded": "Dead",
    }.get(event.kind)


def state_sequence(events: Sequence[Event]) -> list[tuple[str, int | None]]:
    """The (state, generation) changes the events show, in order: what the round trip compares
    with the coordinator's own transitions. Kafka logs no line when a group becomes Stable: the
    leader's assignment counts as Stable unless the same generation's failed write follows. (A
    write still in flight when the group moves on -- a new join, an unload -- reads as Stable too:
    the log cannot tell.)"""
    seq: list[tuple[str, int | None]] = []
    for event in events:
        if event.kind == "store_error":
            if seq and seq[-1][0] == "Stable" and event.generation in (None, seq[-1][1]):
                seq.pop()  # the write failed: the group never became Stable
            continue
        state = _state_after(event)
        if event.kind == "loaded":
            state = "Loaded"
        if state is None:
            continue
        generation = event.generation  # prepare: the old generation (it does not bump it)
        if not seq or seq[-1] != (state, generation):
            seq.append((state, generation))
    return seq


def _finding(event: Event, kind: str, rule: str, message: str, *context: Event) -> Finding:
    lines = tuple(e.text for e in (*context, event) if e.text)
    return Finding(event.file, event.line, event.group, kind, rule, message, lines)


def check_group(
    group: str, events: Iterable[Event], config: CheckConfig = CheckConfig()
) -> tuple[list[Finding], GroupHistory]:
    """The findings for one group's events (already in time order) and its summary row."""
    ordered = list(events)
    findings: list[Finding] = []
    history = GroupHistory(group=group, events=len(ordered))
    highest: Event | None = None  # the event with the highest generation in this incarnation
    completed: dict[int, Event] = {}  # generation -> the Stabilized/empty event that completed it
    broker = ""
    last_stabilized: Event | None = None
    stuck_reported = False
    starts: list[Event] = []
    storm_reported_until = -1
    expiries: list[Event] = []
    expiry_reported_until = -1
    state: str | None = None
    state_since: int | None = None
    generations: set[int] = set()
    previous_kind: str | None = None  # the last rebalance-related event's kind

    last_prepare: Event | None = None  # the last rebalance start (its generation is the old one)

    def reset() -> None:
        nonlocal highest, last_stabilized, last_prepare
        highest = None
        completed.clear()
        last_stabilized = None
        last_prepare = None

    for event in ordered:
        now = event.ts_ms
        if event.broker and event.broker != broker:
            if broker:
                reset()  # the group moved: the new coordinator starts from what it loaded
            broker = event.broker
            if broker not in history.brokers:
                history.brokers.append(broker)
        if event.ts and not history.first_ts:
            history.first_ts = event.ts
        if event.ts:
            history.last_ts = event.ts
        if event.generation is not None:
            generations.add(event.generation)

        # ---- violations --------------------------------------------------------------------
        if event.kind in _GENERATION_KINDS and event.generation is not None and highest is not None:
            top = highest.generation
            assert top is not None
            if event.generation < top:
                findings.append(
                    _finding(
                        event,
                        VIOLATION,
                        "generation_backwards",
                        f"generation {event.generation} after generation {top} (line {highest.line}) "
                        "with no Dead, unload or load in between",
                        highest,
                    )
                )
        if event.kind in ("stabilized", "empty") and event.generation is not None:
            earlier = completed.get(event.generation)
            if earlier is not None:
                findings.append(
                    _finding(
                        event,
                        VIOLATION,
                        "generation_completed_twice",
                        f"generation {event.generation} completed again (first at line {earlier.line}) "
                        "with no Dead, unload or load in between",
                        earlier,
                    )
                )
            completed[event.generation] = event
        if event.kind in ("stabilized", "empty") and event.generation is not None:
            floor = last_prepare.generation if last_prepare is not None else None
            if event.generation <= 0 or (floor is not None and event.generation <= floor):
                context = [last_prepare] if last_prepare is not None else []
                findings.append(
                    _finding(
                        event,
                        VIOLATION,
                        "generation_not_incremented",
                        f"a rebalance completed into generation {event.generation}"
                        + (f" after starting from generation {floor}" if floor is not None else "")
                        + ": every completed rebalance starts the next generation (initNextGeneration)",
                        *context,
                    )
                )
        if event.kind == "prepare" and event.generation is not None:
            last_prepare = event
        if event.kind == "stabilized" and event.members == 0:
            findings.append(
                _finding(
                    event, VIOLATION, "stabilized_without_members", "a group without members goes Empty, not Stable"
                )
            )
        if event.kind in _GENERATION_KINDS and event.generation is not None:
            if highest is None or highest.generation is None or event.generation >= highest.generation:
                highest = event

        # ---- warnings ----------------------------------------------------------------------
        unannounced = event.kind == "stabilized" and previous_kind not in ("prepare", None)
        if event.kind == "stabilized" and previous_kind is None:
            unannounced = True  # the history starts with a completion: its start was not logged
        if event.kind == "prepare" or unannounced:
            history.rebalances += 1
            if now is not None:
                starts.append(event)
                window = [e for e in starts if e.ts_ms is not None and now - e.ts_ms <= config.storm_window_ms]
                starts[:] = window
                burst = [e for e in window if e.ts_ms is not None and now - e.ts_ms <= config.burst_window_ms]
                if len(burst) >= config.burst_rebalances and now > storm_reported_until:
                    findings.append(
                        _finding(
                            event,
                            WARNING,
                            "rebalance_storm",
                            f"{len(burst)} rebalances within {config.burst_window_ms} ms: each completes at once "
                            "and starts again (KAFKA-8653's loop: a rebalance timeout of 0 from JoinGroup v0 on 2.3.0)",
                            burst[0],
                        )
                    )
                    storm_reported_until = now + config.storm_window_ms
                elif len(window) >= config.storm_rebalances and now > storm_reported_until:
                    findings.append(
                        _finding(
                            event,
                            WARNING,
                            "rebalance_storm",
                            f"{len(window)} rebalances within {config.storm_window_ms // 1000} s "
                            "(a rebalance storm, as in KAFKA-8653)",
                            window[0],
                        )
                    )
                    storm_reported_until = now + config.storm_window_ms
            # Since 2.1 the line says "in state PreparingRebalance" whatever the state before (it is
            # logged after the transition), so a rebalance start with no assignment since the last
            # Stabilized is what shows a group leaving CompletingRebalance.
            if (
                last_stabilized is not None
                and now is not None
                and last_stabilized.ts_ms is not None
                and now - last_stabilized.ts_ms > config.rebalance_timeout_ms
                and not stuck_reported
            ):
                stuck_reported = True
                findings.append(
                    _finding(
                        event,
                        WARNING,
                        "stuck_completing_rebalance",
                        f"in CompletingRebalance for {(now - last_stabilized.ts_ms) // 1000} s "
                        f"(longer than the rebalance timeout, {config.rebalance_timeout_ms // 1000} s): "
                        "the leader's SyncGroup never came",
                        last_stabilized,
                    )
                )
        if event.kind == "stabilized":
            last_stabilized = event
            stuck_reported = False
        if event.kind in ("assignment", "prepare", "empty", "dead", "unloaded"):
            last_stabilized = None
        if event.kind == "store_error":
            context = [last_stabilized] if last_stabilized is not None else []
            gen = f" generation {event.generation}" if event.generation is not None else ""
            findings.append(
                _finding(
                    event,
                    WARNING,
                    "metadata_write_failed",
                    f"the group's metadata write for{gen} failed ({event.error or 'error'}): members keep "
                    "an assignment the log does not have",
                    *context,
                )
            )
        if event.kind in ("member_expired", "pending_expired") and now is not None:
            expiries.append(event)
            window = [e for e in expiries if e.ts_ms is not None and now - e.ts_ms <= config.expiry_window_ms]
            expiries[:] = window
            if len(window) >= config.expiry_repeats and now > expiry_reported_until:
                findings.append(
                    _finding(
                        event,
                        WARNING,
                        "repeated_member_expiry",
                        f"{len(window)} members expired within {config.expiry_window_ms // 1000} s "
                        "(members missing heartbeats over and over)",
                        window[0],
                    )
                )
                expiry_reported_until = now + config.expiry_window_ms
        if event.kind == "no_rejoin":
            findings.append(
                _finding(event, WARNING, "no_member_rejoined", "the rebalance could not complete: no member rejoined")
            )
        if event.kind == "unexpected_state":
            findings.append(
                _finding(event, WARNING, "rejoin_in_unexpected_state", f"a member rejoined in state {event.state}")
            )
        if event.kind == "empty_assignment":
            findings.append(
                _finding(event, WARNING, "empty_assignment", "the leader's assignment left members without partitions")
            )

        # ---- state timeline ----------------------------------------------------------------
        new_state = _state_after(event)
        if event.kind == "loaded":
            new_state = "Loaded"
        if new_state is not None and new_state != state:
            if state is not None and state_since is not None and now is not None:
                history.state_ms[state] = history.state_ms.get(state, 0) + max(0, now - state_since)
            state, state_since = new_state, now
            history.timeline.append((event.ts, new_state, event.generation))
        if event.kind in _RESET_KINDS:
            reset()
        if event.kind in ("prepare", "stabilized", "empty", "assignment", "dead", "unloaded", "loaded"):
            previous_kind = event.kind

    last_ms = parse_ts_ms(history.last_ts)
    if state is not None and state_since is not None and last_ms is not None:
        history.state_ms[state] = history.state_ms.get(state, 0) + max(0, last_ms - state_since)
    if (
        last_stabilized is not None
        and not stuck_reported
        and last_ms is not None
        and last_stabilized.ts_ms is not None
        and last_ms - last_stabilized.ts_ms > config.rebalance_timeout_ms
    ):
        findings.append(
            _finding(
                last_stabilized,
                WARNING,
                "stuck_completing_rebalance",
                f"no assignment for generation {last_stabilized.generation} in the "
                f"{(last_ms - last_stabilized.ts_ms) // 1000} s the log goes on",
            )
        )
    history.generations = sorted(generations)
    return findings, history
