"""Record an implementation run as a trace of the spec: abstract states and the spec action
that led to each, ready for `kgc validate` (validate.py) and for the properties (properties.py).

The coordinator is driven the way the spec's clients behave (abstraction.World and
apply_action: each consumer acts on its own view of the protocol), so every step the run takes
has a spec action name, client and flag, and the implementation alone decides what happens:
responses, timers, member ids. The recorder reads the result through abstraction.abstract_state
and its observer hook, and writes the step's lastAction as the spec would.

Three sources feed it:
- `record_scenario`: a scenario file (conformance/scenarios/), lifted step by step to spec actions. A
  request from a member whose client, in spec terms, could not send it (it waits on a parked
  request: ClientAbandon first; it is Stable: ClientRejoin first) gets the client event the spec
  needs inserted. A request the spec has no action for (an unknown literal member id, a wrong
  generation, another group, a timeout other than the model's) is sent as it is; if it left the
  abstract state as it was, it is a stuttering step and is skipped (noted in `skipped`);
  otherwise the recording stops there (`stopped` says why) and the states so far are the trace.
- `random_run`: consumers picking any action the spec allows them, and time passing.
- `RunRecorder` directly: any driver (the Hypothesis machine, a corpus) calls its step methods.

Time: a tick fires due timers one at a time (SystemTimer.fire_next(), one spec timer step each,
named after the op that ran), then the rest of the time is one AdvanceTime step while a timer
is live (validate lets the spec take as many unit steps as it needs; its lastAction.dt is 1 as
the spec's last unit step has it), or passes unobserved when none is (World.offset_ms).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kgc.conformance.abstraction import (
    GROUP_ID,
    PROTOCOL_NAME,
    AbstractionError,
    SpecConstants,
    StepResult,
    World,
    abstract_state,
    apply_action,
    apply_spec_step,
    not_enabled,
    timer_record,
)
from kgc.conformance.abstraction.incremental import IncrementalAbstraction
from kgc.conformance.faults import new_faults
from kgc.conformance.recorded_trace import RecordedTrace, TraceConstants
from kgc.impl.coordinator import GroupCoordinator, LeaveMemberIdentity
from kgc.impl.group import GroupState
from kgc.spec.values import ModelValue, Record

__all__ = [
    "CLIENT_ACTIONS",
    "RANDOM_RUN_CONSTANTS",
    "RecordingStopped",
    "RunRecorder",
    "enabled_actions",
    "random_run",
    "record_scenario",
    "record_scenario_file",
    "scenario_constants",
    "timer_action",
]

INIT_ACTION = Record(
    {
        "name": "Init",
        "client": ModelValue("NoClient"),
        "member": 0,
        "gen": -1,
        "flag": False,
        "newMember": 0,
        "resp": "NONE",
        "dt": 0,
    }
)

#: The spec's client actions, with whether they take a flag (rk / chg).
CLIENT_ACTIONS: dict[str, bool] = {
    "JoinGroupUnknownMember": True,
    "JoinGroupPendingMember": False,
    "JoinGroupKnownMember": True,
    "SyncGroupLeader": False,
    "SyncGroupFollower": False,
    "Heartbeat": False,
    "LeaveGroup": False,
    "ClientCrash": False,
    "ClientRestart": False,
    "ClientAbandon": False,
    "ClientRejoin": False,
    "HandleCommitOffsets": False,
    "SyncGroupInconsistentProtocol": False,
}

_TIMER_NAMES = {
    "Pending": "PendingMemberExpiry",
    "Join": "RebalanceTimeout",
    "InitialJoin": "InitialDelayedJoin",
    "Sync": "DelayedSyncExpiry",
}


class RecordingStopped(Exception):
    """The run did something the spec does not model and that changed the abstract state."""


def timer_action(record: Mapping[str, Any]) -> str:
    """The spec action that fires the head timer `record` (a spec timer record)."""
    if record["stale"]:
        return "StaleTimerExpiry"
    if record["kind"] == "Heartbeat":
        return "NewMemberJoinTimeout" if record["dur"] == "newMember" else "SessionTimeoutExpiry"
    return _TIMER_NAMES[record["kind"]]


class _Events:
    """Listener: remembers the group's state transitions in a step."""

    def __init__(self) -> None:
        self.transitions: list[tuple[GroupState, GroupState]] = []

    def on_transition(self, group_id: str, old: GroupState, new: GroupState) -> None:
        if group_id == GROUP_ID:
            self.transitions.append((old, new))


@dataclass
class RunRecorder:
    """Drives a World and keeps the trace. Every public step method records one spec step
    (or none, for a skipped stuttering request) and returns the abstract state after it."""

    constants: SpecConstants
    coordinator_class: type[GroupCoordinator] = GroupCoordinator
    name: str = "run"
    source: str = ""
    member_id_seed: int = 0
    observer: Any = None
    lenient: bool = False
    """Keep recording whatever happens (the Hypothesis machine, which checks properties, not
    spec steps): requests no spec client sends are recorded as pseudo-steps named
    "Outsider...", and timers fire in the implementation's order."""
    states: list[dict[str, Any]] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    stopped: str | None = None
    faults: list[tuple[int, str]] = field(default_factory=list)
    """(state index, what): the coordinator's internal errors and duplicate answers, by the
    state they appeared in (conformance/faults.py)."""

    def __post_init__(self) -> None:
        self._outsider_member: str | None = None
        self._ids_before = 0
        self.events = _Events()
        self.world = World(
            self.constants,
            self.coordinator_class,
            member_id_seed=self.member_id_seed,
            observers=(self.events, self.observer),
        )
        # one abstraction per step, shared with kgc conform --record (mbt._follow)
        self.abstraction = IncrementalAbstraction(self.world, failover_history=True)
        self._append(INIT_ACTION, "initial state")

    # -- recording ----------------------------------------------------------------------------
    @property
    def last(self) -> dict[str, Any]:
        return self.states[-1]

    def _append(self, la: Record, origin: str) -> dict[str, Any]:
        state = dict(self.abstraction.update(str(la["name"])))
        state["timers"] = tuple(t for _, t in self._spec_order())
        state["lastAction"] = la
        self.states.append(state)
        self.origins.append(origin)
        index = len(self.states) - 1
        self.faults.extend((index, what) for what in new_faults(self.world.coordinator, len(self.faults)))
        return state

    def _check_open(self) -> None:
        if self.stopped is not None:
            raise RecordingStopped(self.stopped)

    def step(
        self, name: str, client: str | None = None, flag: bool = False, origin: str = "", dt: int = 1
    ) -> StepResult:
        """Perform spec action `name` (for `client`, with `flag`) on the implementation."""
        self._check_open()
        la = {"name": name, "client": ModelValue(client or "NoClient"), "flag": flag, "dt": dt}
        why = not_enabled(self.world, la)
        if why is not None:
            raise ValueError(f"{name}({client}) is not enabled: {why}")
        self.events.transitions.clear()
        res = apply_action(self.world, la)
        self._append(self._last_action(res), origin or _describe(name, client, flag))
        return res

    def spec_step(self, spec_before: Mapping[str, Any], spec_after: Mapping[str, Any], origin: str) -> StepResult:
        """One step of a spec trace (kgc conform --record), steered to the spec's choices
        where Kafka leaves them open, so that the recording is the run conform compared."""
        self._check_open()
        self.events.transitions.clear()
        res = apply_spec_step(self.world, spec_before, spec_after)
        self._append(self._last_action(res), origin)
        return res

    def _last_action(self, res: StepResult) -> Record:
        """apply_action's lastAction, with two readings the spec makes differently: a request
        parked and completed in the same step (the join that completes the rebalance, the
        leader's SyncGroup) is PARKED in the spec, not its in-step answer; and a multi-unit
        AdvanceTime is the spec's last unit step (dt 1). (A request answered with an error in
        a step that also completed the rebalance, e.g. GROUP_MAX_SIZE_REACHED, was not parked.)"""
        la = dict(res.last_action)
        if res.action == "AdvanceTime":
            la["dt"] = 1
        completed = any(
            new in (GroupState.CompletingRebalance, GroupState.Stable) for _, new in self.events.transitions
        )
        if (
            res.action in CLIENT_ACTIONS
            and res.response == "NONE"
            and completed
            and res.action not in ("Heartbeat", "LeaveGroup")
        ):
            la["resp"] = "PARKED"
        return Record(la)

    def _spec_order(self) -> list[tuple[Any, Record]]:
        """Live ops with their spec timer records, in the spec's order. The implementation
        orders timers made together for several members (onCompleteJoin,
        propagateAssignment, onGroupLoaded) by join order, the spec by ascending id (Kafka:
        HashMap order); such a run (same deadline, made in the same step) is re-sorted."""
        world = self.world
        pairs = [(op, timer_record(world, op)) for op in world.timer.live_tasks()]
        out: list[tuple[Any, Record]] = []
        i = 0
        while i < len(pairs):
            j = i + 1
            if _batchable(pairs[i][1]) and not world.is_made_alone(pairs[i][0]):
                key = (pairs[i][1]["deadline"], world.born_step(pairs[i][0]))
                while (
                    j < len(pairs)
                    and _batchable(pairs[j][1])
                    and not world.is_made_alone(pairs[j][0])
                    and (pairs[j][1]["deadline"], world.born_step(pairs[j][0])) == key
                ):
                    j += 1
            out.extend(sorted(pairs[i:j], key=lambda p: p[1]["member"]))
            i = j
        return out

    def fire(self, origin: str = "") -> StepResult | None:
        """Fire the head timer (one spec timer step, named after what it is). When the
        implementation's next timer is not the one the spec fires first (simultaneous timers
        made together: HashMap order in Kafka) the spec cannot follow: the recording stops."""
        self._check_open()
        tasks = self.world.timer.live_tasks()
        if not tasks:
            raise ValueError("no live timer to fire")
        spec_head = self._spec_order()[0]
        head = timer_record(self.world, tasks[0])
        if spec_head[0] is not tasks[0] and not self.lenient:
            self.stop(
                f"{origin or 'timer'}: the implementation fires {_timer_text(head)} "
                f"before {_timer_text(spec_head[1])}, made together for several members "
                f"(Kafka: HashMap order; the spec: ascending member id)"
            )
            return None
        name = timer_action(head)
        return self.step(name, origin=origin or name)

    def tick(self, ms: int, origin: str = "") -> None:
        """Let `ms` pass: due timers fire one by one, then the clock moves on."""
        self._check_open()
        k = self.constants.ms_per_unit
        target = self.world.clock.now_ms() + ms
        while True:
            tasks = self.world.timer.live_tasks()
            if not tasks or tasks[0].deadline_ms() > target:
                break
            self.fire(origin=f"{origin}: {timer_action(timer_record(self.world, tasks[0]))}" if origin else "")
            if self.stopped is not None:
                return
        rest = target - self.world.clock.now_ms()
        if rest <= 0:
            return
        if rest % k:
            raise ValueError(f"{rest} ms is not a whole number of {k} ms spec units")
        if self.world.timer.live_tasks():
            self.step("AdvanceTime", origin=origin or f"advance {rest} ms", dt=rest // k)
        else:
            # no live timer: time passing is unobservable in the spec (offset_ms)
            self.world.offset_ms += rest
            self.world.timer.advance_to(target)

    def outsider(self, send: Callable[[GroupCoordinator, Callable[[Any], None]], None], origin: str) -> bool:
        """A request no spec client would send, made directly on the coordinator. If the
        abstract state is unchanged it is a stuttering step: skipped, True. Otherwise the
        recording stops (the spec cannot follow) and False is returned."""
        self._check_open()
        before = {k: v for k, v in self.last.items() if k != "lastAction"}
        answers: list[Any] = []
        send(self.world.coordinator, answers.append)
        try:
            after = abstract_state(self.world, failover_history=True)
        except AbstractionError as e:
            self.stopped = f"{origin}: the spec has no such request ({e})"
            return False
        if self.lenient:
            self._append(self._outsider_action(origin, answers), origin)
            return after == before
        if after == before:
            self.skipped.append(origin)
            return True
        changed = sorted(k for k in after if after[k] != before.get(k))
        self.stopped = f"{origin}: the spec has no such request, and it changed {', '.join(changed)}"
        return False

    def _outsider_action(self, origin: str, answers: list[Any]) -> Record:
        """A pseudo lastAction for a request no spec client sends (lenient recording): the
        member it named (if the run knows the id) and the id it was given, if any."""
        from kgc.conformance.abstraction import response_error

        member = self._outsider_member or ""
        known = self.world.ids.peek(member) if member else None
        newest = len(self.world.ids)
        return Record(
            {
                "name": "Outsider",
                "client": ModelValue("NoClient"),
                "member": known or 0,
                "gen": -1,
                "flag": False,
                "newMember": newest if newest > self._ids_before else 0,
                "resp": response_error(answers[0]) if answers else "PARKED",
                "dt": 0,
            }
        )

    def request(
        self, kind: str, send: Callable[[GroupCoordinator, Callable[[Any], None]], None], member: str, origin: str
    ) -> bool:
        """An outsider request naming `member` (see outsider)."""
        self._outsider_member = member
        self._ids_before = len(self.world.ids)
        try:
            return self.outsider(send, origin)
        finally:
            self._outsider_member = None

    def store_callback(self, append_error: str = "NONE", origin: str = "") -> StepResult:
        """The spec's StoreCallback: the oldest group-metadata append in flight is acknowledged
        with `append_error` (NONE: success), as a deferred store completes it."""
        self._check_open()
        la = {"name": "StoreCallback", "client": ModelValue("NoClient"), "flag": False, "append": append_error}
        why = not_enabled(self.world, la)
        if why is not None:
            raise ValueError(f"StoreCallback is not enabled: {why}")
        self.events.transitions.clear()
        res = apply_action(self.world, la)
        self._append(self._last_action(res), origin or f"StoreCallback({append_error})")
        return res

    def stop(self, reason: str) -> None:
        if self.stopped is None:
            self.stopped = reason

    # -- result -------------------------------------------------------------------------------
    def trace_constants(self) -> TraceConstants:
        k = self.constants
        cfg = self.world.coordinator.config
        unit = k.ms_per_unit
        return TraceConstants(
            client_timeouts=k.client_timeouts,
            min_session=-(-cfg.min_session_timeout_ms // unit),  # a session s units is valid iff
            max_session=cfg.max_session_timeout_ms // unit,  # min_ms <= s * unit <= max_ms
            session=k.session,
            rebalance=k.rebalance,
            initial_delay=k.initial_delay,
            new_member_timeout=k.new_member_timeout,
            max_group_size=k.max_group_size,
            num_ids=k.num_ids,
            clients=tuple(k.clients),
            failovers=self.world.failovers,
            ms_per_unit=k.ms_per_unit,
            store_async=k.store_async,
            instances=k.instances,
            client_protocols=k.client_protocols,
        )

    def trace(self) -> RecordedTrace:
        return RecordedTrace(
            self.name,
            self.trace_constants(),
            list(self.states),
            list(self.origins),
            self.stopped,
            list(self.skipped),
            self.source,
            list(self.faults),
        )


def _batchable(t: Mapping[str, Any]) -> bool:
    return t["kind"] == "Heartbeat"


def _timer_text(t: Mapping[str, Any]) -> str:
    return f"{t['kind']}(member {t['member']}, deadline {t['deadline']})"


def _describe(name: str, client: str | None, flag: bool) -> str:
    if client is None:
        return name
    return f"{name}({client}{', ' + str(flag).upper() if CLIENT_ACTIONS.get(name) else ''})"


# ---------------------------------------------------------------------------------------------
# Random runs: consumers doing whatever the spec lets them, and time passing
# ---------------------------------------------------------------------------------------------

#: Client actions worth asking not_enabled about, by the client's phase.
_BY_PHASE: dict[str, tuple[str, ...]] = {
    "Down": ("ClientRestart",),
    "Unjoined": (
        "JoinGroupUnknownMember",
        "JoinGroupPendingMember",
        "JoinGroupKnownMember",
        "LeaveGroup",
        "ClientCrash",
    ),
    "JoinWait": ("ClientAbandon", "LeaveGroup", "ClientCrash"),
    "SyncWait": ("Heartbeat", "ClientAbandon", "LeaveGroup", "ClientCrash"),
    "Joined": (
        "SyncGroupLeader",
        "SyncGroupFollower",
        "Heartbeat",
        "ClientRejoin",
        "LeaveGroup",
        "ClientCrash",
        "HandleCommitOffsets",
        "SyncGroupInconsistentProtocol",
    ),
    "Stable": (
        "Heartbeat",
        "ClientRejoin",
        "LeaveGroup",
        "ClientCrash",
        "SyncGroupLeader",
        "SyncGroupFollower",
        "HandleCommitOffsets",
        "SyncGroupInconsistentProtocol",
    ),
}


def enabled_actions(
    rec: RunRecorder,
    faults: Iterable[str] = ("crash", "abandon", "leave", "rejoin", "change", "resync", "early-rejoin"),
    join_flavours: Iterable[bool] = (True, False),
    allow_failover: bool = True,
) -> list[tuple[str, str | None, bool]]:
    """(name, client, flag) of every spec step the run may take now. OffsetCommits
    (HandleCommitOffsets) are drawn only when `faults` holds "commit", a SyncGroup v5 with a
    protocol not the group's (SyncGroupInconsistentProtocol) only when it holds "inconsistent"."""
    faults = set(faults)
    out: list[tuple[str, str | None, bool]] = []
    world = rec.world
    gated = {
        "ClientCrash": "crash",
        "ClientAbandon": "abandon",
        "LeaveGroup": "leave",
        "ClientRejoin": "rejoin",
        "HandleCommitOffsets": "commit",
        "SyncGroupInconsistentProtocol": "inconsistent",
    }
    for c in rec.constants.clients:
        phase = world.clients[c].phase
        for name in _BY_PHASE[phase]:
            if name in gated and gated[name] not in faults:
                continue
            if phase == "Stable" and name.startswith("SyncGroup") and "resync" not in faults:
                continue
            if phase == "Joined" and name == "ClientRejoin" and "early-rejoin" not in faults:
                continue
            flags: Sequence[bool] = (False,)
            if name == "JoinGroupUnknownMember":
                flags = tuple(join_flavours)
            elif name == "JoinGroupKnownMember":
                flags = (False, True) if "change" in faults else (False,)
            for flag in flags:
                la = {"name": name, "client": ModelValue(c), "flag": flag}
                if not_enabled(world, la) is None:
                    if name == "JoinGroupUnknownMember" and len(world.ids) >= rec.constants.num_ids:
                        continue  # the model's id bound
                    out.append((name, c, flag))
    if world.timer.size():
        out.append(("fire", None, False))
        out.append(("advance", None, False))
    if allow_failover:
        loaded = world.coordinator.is_coordinator_for(GROUP_ID)
        if loaded and world.failovers < rec.constants.max_failovers:
            out.append(("GroupUnload", None, False))
        if not loaded:
            out.append(("GroupLoad", None, False))
    return out


_RANDOM_FAULTS = ("crash", "abandon", "leave", "rejoin", "change", "resync", "early-rejoin")

#: A small model for random runs: three consumers, a group bounded at two, one failover.
RANDOM_RUN_CONSTANTS = SpecConstants(
    clients=("c1", "c2", "c3"),
    num_ids=8,
    session=4,
    rebalance=2,
    initial_delay=1,
    new_member_timeout=6,
    max_group_size=2,
    max_failovers=1,
    ms_per_unit=100,
)


def random_run(
    constants: SpecConstants,
    steps: int,
    seed: int,
    *,
    coordinator_class: type[GroupCoordinator] = GroupCoordinator,
    name: str | None = None,
    weights: Mapping[str, float] | None = None,
    commits: bool = False,
) -> RecordedTrace:
    """A run of `steps` spec steps chosen at random among those enabled (seeded); with
    `commits`, consumers holding a generation also commit offsets."""
    rng = random.Random(seed)
    rec = RunRecorder(constants, coordinator_class, name=name or f"random-{seed}", source=f"random_run(seed={seed})")
    w = {
        "fire": 1.5,
        "advance": 1.0,
        "GroupUnload": 0.05,
        "GroupLoad": 2.0,
        "ClientCrash": 0.05,
        "ClientAbandon": 0.1,
        "LeaveGroup": 0.15,
        "ClientRejoin": 0.2,
        "ClientRestart": 1.0,
        "SyncGroupLeader": 3.0,
        "SyncGroupFollower": 3.0,
        "Heartbeat": 1.5,
        "JoinGroupKnownMember": 1.5,
        "JoinGroupPendingMember": 2.0,
    }
    w.update(weights or {})
    k = constants.ms_per_unit
    while len(rec.states) <= steps and rec.stopped is None:
        options = enabled_actions(rec, faults=_RANDOM_FAULTS + (("commit",) if commits else ()))
        if not options:
            break
        action, client, flag = rng.choices(options, [w.get(o[0], 1.0) for o in options])[0]
        if action == "fire":
            rec.fire()
        elif action == "advance":
            head = rec.world.timer.live_tasks()[0].deadline_ms()
            room = (head - rec.world.clock.now_ms()) // k - 1
            if room >= 1:
                rec.tick(rng.randint(1, room) * k)
            else:
                rec.fire()
        else:
            rec.step(action, client, flag)
    return rec.trace()


# ---------------------------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------------------------


def _scenario_unit(scenario: Any, new_member_ms: int) -> int:
    """The largest unit every duration of the scenario is a whole number of (so that every
    deadline is, including those of joins the spec does not model)."""
    from kgc.conformance.scenario import Join, Tick

    values = [scenario.config.initial_rebalance_delay_ms, new_member_ms]
    values += [s.ms for s in scenario.steps if isinstance(s, Tick)]
    for s in scenario.steps:
        if isinstance(s, Join):
            values += [s.session_timeout_ms, s.rebalance_timeout_ms]
    unit = 0
    for v in values:
        unit = math.gcd(unit, v)
    return unit or 1


def scenario_clients(scenario: Any, group: str) -> list[tuple[str, Any]]:
    """(spec client, join) for each of the group's modelled JoinGroups with member id "", in
    order: c1, c2, ... Every one is a consumer of its own, a static one included: a static
    consumer that joins again with "" is a restarted process, and the one it replaces may
    still send with the old member id (the zombie FENCED_INSTANCE_ID is for), so clients of
    one group.instance.id form one of the spec's Instances."""
    from kgc.conformance.scenario import Join

    fresh = [
        s
        for s in scenario.steps
        if isinstance(s, Join) and s.member == "" and s.group == group and _join_unmodelled(s) is None
    ]
    return [(f"c{n}", j) for n, j in enumerate(fresh, start=1)]


def scenario_constants(scenario: Any) -> tuple[SpecConstants, str]:
    """The model a scenario runs under (from its first join), and its main group."""
    from kgc.conformance.scenario import Join, Unload
    from kgc.impl.coordinator import GroupConfig

    joins = [s for s in scenario.steps if isinstance(s, Join)]
    cfg = scenario.config
    valid = [j for j in joins if cfg.min_session_timeout_ms <= j.session_timeout_ms <= cfg.max_session_timeout_ms]
    # the main group is the first modelled join's (a join with another protocol type or no
    # protocols is answered INCONSISTENT_GROUP_PROTOCOL and may be a group of its own)
    modelled = [j for j in valid if _join_unmodelled(j) is None]
    first = modelled[0] if modelled else valid[0] if valid else joins[0] if joins else None
    group = first.group if first is not None else GROUP_ID
    session = first.session_timeout_ms if first else 10000
    rebalance = first.rebalance_timeout_ms if first else session
    new_member_ms = GroupConfig().new_member_join_timeout_ms
    unit = _scenario_unit(scenario, new_member_ms)
    unknown = sum(1 for j in joins if j.member == "" and j.group == group)
    unloads = sum(1 for s in scenario.steps if isinstance(s, Unload) and s.group == group)
    # The lifter hands c1, c2, ... to the group's modelled unknown-member joins in order; each
    # client keeps that join's timeouts (the spec's SessionOf / RebalanceOf).
    fresh = scenario_clients(scenario, group)
    client_timeouts = tuple(
        (c, j.session_timeout_ms // unit, j.rebalance_timeout_ms // unit)
        for c, j in fresh
        if (j.session_timeout_ms, j.rebalance_timeout_ms) != (session, rebalance)
    )
    # each client keeps that join's protocol names (the spec's ProtocolsOf)
    client_protocols = tuple(
        (c, names) for c, j in fresh for names in [tuple(p[0] for p in j.protocols)] if names != (PROTOCOL_NAME,)
    )
    by_instance: dict[str, list[str]] = {}
    for c, j in fresh:
        if j.instance is not None:
            by_instance.setdefault(j.instance, []).append(c)
    return SpecConstants(
        client_timeouts=client_timeouts,
        client_protocols=client_protocols,
        clients=tuple(c for c, _ in fresh) or ("c1",),
        num_ids=max(1, unknown),
        session=session // unit,
        rebalance=rebalance // unit,
        initial_delay=scenario.config.initial_rebalance_delay_ms // unit,
        new_member_timeout=new_member_ms // unit,
        max_group_size=scenario.config.max_group_size,
        max_failovers=max(1, unloads),
        ms_per_unit=unit,
        store_async=scenario.config.store == "deferred",
        instances=tuple(sorted(tuple(sorted(cs)) for cs in by_instance.values())),
    ), group


def record_scenario(scenario: Any, coordinator_class: type[GroupCoordinator] = GroupCoordinator) -> RecordedTrace:
    """A scenario (conformance.scenario.Scenario) lifted to spec steps and recorded."""
    constants, group = scenario_constants(scenario)
    rec = RunRecorder(constants, coordinator_class, name=scenario.name, source=scenario.file)
    # the scenario's session bounds (World sets wide ones) decide INVALID_SESSION_TIMEOUT
    cfg = rec.world.coordinator.config
    rec.world.coordinator.config = replace(
        cfg,
        min_session_timeout_ms=scenario.config.min_session_timeout_ms,
        max_session_timeout_ms=scenario.config.max_session_timeout_ms,
    )
    lifter = _ScenarioLifter(rec, scenario, group)
    # With config store "deferred" the world runs a DeferredGroupStore (the spec's StoreAsync):
    # writes wait for the scenario's `store` steps, each a StoreCallback.
    for index, step in enumerate(scenario.steps):
        if rec.stopped is not None:
            break
        lifter.run(index, step)
    return rec.trace()


def _join_unmodelled(step: Any) -> str | None:
    """Why the spec cannot take this JoinGroup whoever sends it, or None."""
    if step.protocol_type != "consumer":
        return "a protocol type other than consumer"
    if not step.protocols:
        return "a JoinGroup with no protocols"
    return None


class _ScenarioLifter:
    def __init__(self, rec: RunRecorder, scenario: Any, group: str) -> None:
        self.rec = rec
        self.scenario = scenario
        self.group = group
        self.tokens: dict[str, int] = {}  # scenario request id -> World token
        # the client each modelled JoinGroup with member id "" is (scenario_constants's order)
        self.fresh = {id(j): c for c, j in scenario_clients(scenario, group)}
        self.k = rec.constants
        # the scenario's group.instance.id values -> the spec instance ids the World sends
        self.instance_ids = {
            j.instance: self.k.instance_id_of(c) for c, j in scenario_clients(scenario, group) if j.instance is not None
        }
        self.sent: dict[str, list[tuple[str, str]]] = {}  # client -> protocols it last sent

    # member references ----------------------------------------------------------------------
    def resolve(self, ref: Any) -> str | None:
        from kgc.conformance.scenario import Ref

        if not isinstance(ref, Ref):
            return ref
        token = self.tokens.get(ref.request_id)
        for p in self.rec.world.produced:
            if p.token == token:
                return getattr(p.result, "member_id", "") or ""
        return None

    def client_of(self, member_id: str) -> str | None:
        for name, view in self.rec.world.clients.items():
            if member_id and view.member == member_id:
                return name
        return None

    # steps ----------------------------------------------------------------------------------
    def run(self, index: int, step: Any) -> None:
        from kgc.conformance.scenario import (
            Commit,
            Expect,
            ExpectState,
            Heartbeat,
            Join,
            Leave,
            Load,
            LoadBegin,
            Store,
            Sync,
            Tick,
            Unload,
        )

        rec = self.rec
        where = f"step {index}"
        if isinstance(step, (Expect, ExpectState)):
            return
        if isinstance(step, Store):
            if step.group != self.group:
                rec.skipped.append(f"{where} store {step.group}: another group")
                return
            rec.store_callback(step.error, origin=f"{where} store {step.error}")
            return
        if isinstance(step, LoadBegin):
            if step.group != self.group:
                rec.skipped.append(f"{where} load_begin {step.group}: another group")
                return
            coordinator = rec.world.coordinator
            if not coordinator.is_coordinator_for(GROUP_ID) and not coordinator.is_loading(GROUP_ID):
                rec.step("LoadBegin", origin=f"{where} load_begin")
            else:
                rec.outsider(
                    lambda c, _: c.on_group_load_begin(GROUP_ID), f"{where} load_begin of a group held or loading"
                )
            return
        if isinstance(step, Tick):
            rec.tick(step.ms, origin=f"{where} tick {step.ms}")
            return
        if isinstance(step, (Unload, Load)):
            if step.group != self.group:
                rec.skipped.append(f"{where} {type(step).__name__.lower()} {step.group}: another group")
                return
            loaded = rec.world.coordinator.is_coordinator_for(GROUP_ID)
            if isinstance(step, Unload) and loaded:
                rec.step("GroupUnload", origin=f"{where} unload")
            elif isinstance(step, Unload) and rec.world.coordinator.is_loading(GROUP_ID):
                rec.step("GroupUnloadDuringLoad", origin=f"{where} unload while loading")
            elif isinstance(step, Load) and not loaded:
                rec.step("GroupLoad", origin=f"{where} load")
            else:
                what = "unload" if isinstance(step, Unload) else "load"
                rec.outsider(
                    lambda c, _: getattr(c, "on_group_unloaded" if what == "unload" else "on_group_loaded")(GROUP_ID),
                    f"{where} {what} of a group already {what}ed",
                )
            return
        if step.group != self.group:
            rec.skipped.append(f"{where} {type(step).__name__.lower()} {step.id}: group {step.group!r}")
            return
        member = self.resolve(step.member)
        if member is None:
            rec.stop(f"{where}: {step.member} has no response yet")
            return
        if isinstance(step, Join):
            self.join(where, step, member)
        elif isinstance(step, Sync):
            self.client_request(where, step, member, "sync")
        elif isinstance(step, Heartbeat):
            self.client_request(where, step, member, "heartbeat")
        elif isinstance(step, Leave):
            self.client_request(where, step, member, "leave")
        elif isinstance(step, Commit):
            self.client_request(where, step, member, "commit")

    def _as_outsider(self, where: str, step: Any, member: str, why: str) -> None:
        from kgc.conformance.scenario import Commit, Heartbeat, Join, Leave, Sync

        origin = f"{where} {type(step).__name__.lower()} {step.id} ({why})"
        instance = self.instance_ids.get(step.instance, step.instance) if step.instance is not None else None

        def send(c: GroupCoordinator, answer: Callable[[Any], None]) -> None:
            if isinstance(step, Join):
                c.handle_join_group(
                    GROUP_ID,
                    member,
                    instance,
                    step.require_known_member,
                    step.client,
                    "localhost",
                    step.rebalance_timeout_ms,
                    step.session_timeout_ms,
                    step.protocol_type,
                    [tuple(p) for p in step.protocols],
                    answer,
                    supports_skip_assignment=step.supports_skip_assignment,
                )
            elif isinstance(step, Sync):
                c.handle_sync_group(
                    GROUP_ID, step.generation, member, step.protocol_type, step.protocol, instance, {}, answer
                )
            elif isinstance(step, Heartbeat):
                c.handle_heartbeat(GROUP_ID, member, instance, step.generation, answer)
            elif isinstance(step, Leave):
                c.handle_leave_group(GROUP_ID, [LeaveMemberIdentity(member, instance)], answer)
            elif isinstance(step, Commit):
                c.handle_commit_offsets(GROUP_ID, member, instance, step.generation, dict(step.offsets), answer)

        self.rec.outsider(send, origin)

    def leave_by_instance_id(self, where: str, step: Any) -> None:
        """A LeaveGroup naming only a group.instance.id (an admin's removal): the spec's
        LeaveGroupByInstanceId of a client of that instance when it maps to a member; otherwise
        (an unknown or unmapped instance id) it is answered UNKNOWN_MEMBER_ID and is a
        stuttering step."""
        sent = self.instance_ids.get(step.instance)
        clients = sorted(c for c in self.k.clients if sent is not None and self.k.instance_id_of(c) == sent)
        la = {"name": "LeaveGroupByInstanceId", "client": ModelValue(clients[0]) if clients else None}
        if not clients or not_enabled(self.rec.world, la) is not None:
            self._as_outsider(where, step, "", "a LeaveGroup by group.instance.id alone, of no member")
            return
        self.rec.step("LeaveGroupByInstanceId", clients[0], origin=f"{where} leave {step.id} (by instance id)")
        self.tokens[step.id] = self.rec.world._tokens

    def _instance_unmodelled(self, step: Any, client: str, member: str) -> str | None:
        """Why a request of `client` (holding `member`) with the scenario's group.instance.id
        is not the spec's request of that client, or None. A spec client sends its instance
        id, if it has one, in every request. A static member's request without one passes
        validateCurrentMember's instance half as the spec's does only while the instance
        still maps to that member id (otherwise Kafka goes on to the member checks where
        the spec answers FENCED_INSTANCE_ID)."""
        own = self.k.instance_id_of(client)
        sent = self.instance_ids.get(step.instance, step.instance) if step.instance is not None else None
        if sent == own:
            return None
        if own is None:
            return "a group.instance.id sent by a dynamic consumer"
        if sent is not None:
            return "a group.instance.id other than its consumer's"
        group = self.rec.world.group
        if group is not None and group.static_members.get(own) == member:
            return None
        return "a static member's request without its group.instance.id"

    def _timeouts_unmodelled(self, step: Any, client: str) -> str | None:
        k = self.k
        session, rebalance = k.timeouts_of(client)
        if (step.session_timeout_ms, step.rebalance_timeout_ms) != (k.ms(session), k.ms(rebalance)):
            return "a consumer changing its timeouts"
        return None

    def _protocols_unmodelled(self, step: Any, client: str) -> str | None:
        """A spec client sends the same protocol names in every JoinGroup (ProtocolsOf);
        only the metadata may change (the chg flag)."""
        if tuple(p[0] for p in step.protocols) != self.k.protocols_of(client):
            return "a consumer changing its protocol names"
        return None

    def join(self, where: str, step: Any, member: str) -> None:
        rec = self.rec
        why = _join_unmodelled(step)
        if why is not None:
            self._as_outsider(where, step, member, why)
            return
        if member == "":
            c = self.fresh.pop(id(step), None)
            if c is None:
                self._as_outsider(where, step, member, "no client left")
                return
            self.sent[c] = [tuple(p) for p in step.protocols]
            # a static client's flag is supportsSkippingAssignment (v9+), a dynamic one's
            # requireKnownMemberId (v4+)
            flag = step.supports_skip_assignment if step.instance is not None else step.require_known_member
            rec.step("JoinGroupUnknownMember", c, flag, origin=f"{where} join {step.id}")
            self.tokens[step.id] = rec.world._tokens
            return
        c = self.client_of(member)
        if c is None:
            self._as_outsider(where, step, member, "a member id no consumer holds")
            return
        why = self._instance_unmodelled(step, c, member)
        if why is not None:
            self._as_outsider(where, step, member, why)
            return
        why = self._timeouts_unmodelled(step, c) or self._protocols_unmodelled(step, c)
        if why is not None:
            self._as_outsider(where, step, member, why)
            return
        view = rec.world.clients[c]
        if view.phase in ("JoinWait", "SyncWait"):
            rec.step("ClientAbandon", c, origin=f"{where}: {c} gives up its parked request")
        elif view.phase in ("Joined", "Stable"):
            rec.step("ClientRejoin", c, origin=f"{where}: {c} decides to rejoin")
        elif view.phase != "Unjoined":
            self._as_outsider(where, step, member, f"its consumer is {view.phase}")
            return
        group = rec.world.group
        pending = (
            group is not None and member in group.pending_members and rec.world.coordinator.is_coordinator_for(GROUP_ID)
        )
        protocols = [tuple(p) for p in step.protocols]
        changed = self.sent.get(c) not in (None, protocols)
        self.sent[c] = protocols
        if pending:
            rec.step("JoinGroupPendingMember", c, origin=f"{where} join {step.id}")
        else:
            rec.step("JoinGroupKnownMember", c, changed, origin=f"{where} join {step.id}")
        self.tokens[step.id] = rec.world._tokens

    def _consistent_protocol(self, step: Any) -> bool:
        """A SyncGroup v5 protocol type and name the group has (what clients send) pass Kafka's
        isValidProtocolType/Name check and leave the request a plain SyncGroup; others are the
        spec's SyncGroupInconsistentProtocol."""
        if step.protocol_type is None and step.protocol is None:
            return True
        group = self.rec.world.group
        if group is None:
            return False
        return step.protocol_type in (None, group.protocol_type) and step.protocol in (None, group.protocol_name)

    def client_request(self, where: str, step: Any, member: str, kind: str) -> None:
        rec = self.rec
        inconsistent = kind == "sync" and not self._consistent_protocol(step)
        if kind == "leave" and member == "" and step.instance is not None:
            self.leave_by_instance_id(where, step)
            return
        c = self.client_of(member)
        if c is None:
            self._as_outsider(where, step, member, "a member id no consumer holds")
            return
        why = self._instance_unmodelled(step, c, member)
        if why is not None:
            self._as_outsider(where, step, member, why)
            return
        view = rec.world.clients[c]
        if kind == "leave":
            if view.phase == "Down":
                self._as_outsider(where, step, member, "its consumer is closed")
            else:
                rec.step("LeaveGroup", c, origin=f"{where} leave {step.id}")
            return
        if kind == "heartbeat" and step.generation != view.gen and self._stale_heartbeat(where, step, c):
            return
        if step.generation != view.gen:
            self._as_outsider(where, step, member, f"generation {step.generation}, its consumer has {view.gen}")
            return
        if kind == "commit":
            if view.phase not in ("Joined", "Stable"):
                self._as_outsider(where, step, member, f"its consumer is {view.phase}")
                return
            name = "HandleCommitOffsets"
        elif kind == "sync":
            group = rec.world.group
            resync = view.phase == "Stable" and group is not None and group.is_(GroupState.Stable)
            # A Stable consumer's second SyncGroup is the spec's resync only while the group is
            # Stable (answered with the assignment again); otherwise it is read as an outsider's
            # request, which keeps the consumer's generation for its next requests.
            if view.phase != "Joined" and not resync:
                self._as_outsider(where, step, member, f"its consumer is {view.phase}")
                return
            name = (
                "SyncGroupInconsistentProtocol"
                if inconsistent
                else "SyncGroupLeader"
                if view.leader
                else "SyncGroupFollower"
            )
        else:
            if view.phase not in ("Joined", "SyncWait", "Stable"):
                self._as_outsider(where, step, member, f"its consumer is {view.phase}")
                return
            name = "Heartbeat"
        rec.step(name, c, origin=f"{where} {kind} {step.id}")
        self.tokens[step.id] = rec.world._tokens

    def _stale_heartbeat(self, where: str, step: Any, c: str) -> bool:
        """A heartbeat with the generation a rejoining consumer held before (its own is -1
        now) is the spec's StaleHeartbeat fault; True once recorded as one. Its flag says
        whether that generation is still the group's (any older one is answered alike)."""
        from kgc.conformance.abstraction.actions import stale_generation

        world = self.rec.world
        if world.clients[c].phase != "Unjoined" or step.generation < 0:
            return False
        cur = step.generation == stale_generation(world, True)
        if not_enabled(world, {"name": "StaleHeartbeat", "client": ModelValue(c), "flag": cur}) is not None:
            return False
        self.rec.step("StaleHeartbeat", c, flag=cur, origin=f"{where} heartbeat {step.id} (sent before the rejoin)")
        self.tokens[step.id] = world._tokens
        return True


def record_scenario_file(path: Path, coordinator_class: type[GroupCoordinator] = GroupCoordinator) -> RecordedTrace:
    from kgc.conformance.scenario import load_scenario

    return record_scenario(load_scenario(Path(path)), coordinator_class)
