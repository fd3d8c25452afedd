"""Spec traces and random client programs as scenarios, for `kgc diff --traces / --random`.

A program is made on kgc's side: a RunRecorder drives kgc's coordinator through a spec trace
(the steps conform takes, steered to the spec's choices) or through a random run (recorder.random_run's
choice of enabled spec steps), and `RequestLog` keeps every request as it reaches the coordinator,
every timer expiry (an `Expire` of the delayed operation, program_steps.py), the time between (`Advance`)
and every store completion. `as_scenario` turns
that log into a scenario: the member ids kgc gave become `@join` references (the id text is never
compared: Kafka's are random UUIDs), so the same program runs on Kafka's coordinator through
diff.diff_scenario, step by step.

Kafka's NewMemberJoinTimeoutMs is a constant (300 s, GroupCoordinator.NewMemberJoinTimeoutMs), not a
setting: a program's clock unit is chosen so that the model's NewMemberTimeout is 300 s on both sides.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgc.conformance.abstraction import GROUP_ID, SpecConstants
from kgc.conformance.recorder import RANDOM_RUN_CONSTANTS, RunRecorder, enabled_actions
from kgc.conformance.reference.program_steps import KAFKA_OPERATION, Advance, Expire, PreferLeader, send_on_kgc
from kgc.conformance.scenario import (
    Commit,
    Heartbeat,
    Join,
    Leave,
    Load,
    LoadBegin,
    MemberRef,
    Ref,
    Scenario,
    ScenarioConfig,
    Step,
    Store,
    Sync,
    Unload,
)

__all__ = [
    "KAFKA_NEW_MEMBER_JOIN_TIMEOUT_MS",
    "ProgramError",
    "RequestLog",
    "as_scenario",
    "kafka_clock",
    "random_program",
    "trace_program",
]

#: GroupCoordinator.NewMemberJoinTimeoutMs in Kafka 3.9 (core/.../group/GroupCoordinator.scala).
KAFKA_NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


class ProgramError(ValueError):
    """A trace kgc's side cannot turn into a program (its model's clock cannot match Kafka's)."""


def kafka_clock(constants: SpecConstants) -> SpecConstants:
    """`constants` with the clock unit that makes NewMemberTimeout Kafka's 300 s."""
    if KAFKA_NEW_MEMBER_JOIN_TIMEOUT_MS % constants.new_member_timeout:
        raise ProgramError(
            f"NewMemberTimeout = {constants.new_member_timeout} units: no whole ms unit makes it "
            f"Kafka's {KAFKA_NEW_MEMBER_JOIN_TIMEOUT_MS} ms"
        )
    return dataclasses.replace(constants, ms_per_unit=KAFKA_NEW_MEMBER_JOIN_TIMEOUT_MS // constants.new_member_timeout)


class RequestLog:
    """Coordinator listener: the requests as they reach kgc's coordinator, as scenario steps with
    kgc's literal member ids; time as `Advance` steps, and every timer expiry as an `Expire` of
    the delayed operation that fired, in the order kgc's timer ran them (program_steps.py). So the
    two coordinators are compared after each expiry, also between two timers of one instant,
    and a request sent while a timer is already due is a step like any other."""

    def __init__(self) -> None:
        self.steps: list[Step | Advance | Expire] = []
        self.clock: Any = None
        self._last_ms = 0
        self._count = 0

    def attach(self, clock: Any) -> None:
        self.clock = clock
        self._last_ms = clock.now_ms()

    def _id(self, kind: str) -> str:
        self._count += 1
        return f"{kind[0]}{self._count}"

    def catch_up(self) -> None:
        """The time that passed since the last logged step, as one Advance."""
        if self.clock is None:
            return
        now = self.clock.now_ms()
        if now > self._last_ms:
            self.steps.append(Advance(now - self._last_ms))
            self._last_ms = now

    def store(self, group_id: str, error: str) -> None:
        self.catch_up()
        self.steps.append(Store(group_id, error))

    def on_request(self, kind: str, group_id: str, args: dict[str, Any]) -> None:
        self.catch_up()
        if kind == "join":
            self.steps.append(
                Join(
                    self._id("join"),
                    group_id,
                    args["member_id"],
                    args["client_id"],
                    args["group_instance_id"],
                    args["session_timeout_ms"],
                    args["rebalance_timeout_ms"],
                    args["protocol_type"],
                    tuple((str(n), str(m)) for n, m in args["protocols"]),
                    args["require_known_member"],
                )
            )
        elif kind == "sync":
            assignment = tuple((str(k), str(v)) for k, v in args["group_assignment"].items())
            self.steps.append(
                Sync(
                    self._id("sync"),
                    group_id,
                    args["member_id"],
                    args["generation"],
                    assignment,
                    args["group_instance_id"],
                    args["protocol_type"],
                    args["protocol_name"],
                )
            )
        elif kind == "heartbeat":
            self.steps.append(
                Heartbeat(
                    self._id("heartbeat"), group_id, args["member_id"], args["generation_id"], args["group_instance_id"]
                )
            )
        elif kind == "leave":
            for m in args["leaving_members"]:
                self.steps.append(Leave(self._id("leave"), group_id, m.member_id, m.group_instance_id))
        elif kind == "commit":
            offsets = tuple((str(p), int(o)) for p, o in args["offsets"].items())
            self.steps.append(
                Commit(
                    self._id("commit"),
                    group_id,
                    args["member_id"],
                    args["generation_id"],
                    args["group_instance_id"],
                    offsets,
                )
            )
        elif kind == "unload":
            self.steps.append(Unload(group_id))
        elif kind == "load":
            self.steps.append(Load(group_id))
        elif kind == "load_begin":
            self.steps.append(LoadBegin(group_id))

    def on_timer(self, kind: str, group_id: str, member_id: str | None) -> None:
        """A delayed operation of a hosted group expires (kgc's timer has moved the clock to its
        deadline): the time up to it, then its Expire."""
        self.catch_up()
        self.steps.append(Expire(KAFKA_OPERATION[kind], group_id, member_id))

    def on_response(self, kind: str, group_id: str, result: object) -> None:
        pass

    def on_transition(self, group_id: str, old: Any, new: Any) -> None:
        pass


def _scenario_config(constants: SpecConstants) -> ScenarioConfig:
    cfg = constants.group_config()
    return ScenarioConfig(
        min_session_timeout_ms=cfg.min_session_timeout_ms,
        max_session_timeout_ms=cfg.max_session_timeout_ms,
        initial_rebalance_delay_ms=cfg.initial_rebalance_delay_ms,
        max_group_size=cfg.max_group_size,
        store="deferred" if constants.store_async else "immediate",
    )


def as_scenario(name: str, source: str, steps: list[Any], config: ScenarioConfig) -> Scenario:
    """The logged steps with kgc's member ids replaced by the join that gave them (`@j3`). The
    steps are replayed on kgc's coordinator (member-id seed 0, as the recorder's, so the same ids
    come back) to see which join answered which id. An expiring member no delivered response has
    named yet (its JoinGroup is parked) becomes an `unanswered` Expire. A spec trace's program
    carries the recorder's leader steering (PreferLeader), so this replay is the recorded run."""
    return _with_refs(name, source, steps, config)[0]


def _with_refs(
    name: str, source: str, steps: list[Any], config: ScenarioConfig
) -> tuple[Scenario, list[dict[str, Ref]]]:
    """as_scenario, and after each step the kgc member ids named so far (id -> its join)."""
    from kgc.conformance.replay import World

    world = World(Scenario(name, source, config, (), f"<{name}>"))
    names: dict[str, Ref] = {}
    named: list[dict[str, Ref]] = []

    def ref(member: MemberRef) -> MemberRef:
        return names.get(member, member) if isinstance(member, str) else member

    out: list[Step] = []
    try:
        for index, step in enumerate(steps):
            if isinstance(step, (Join, Heartbeat, Leave, Commit)):
                step = dataclasses.replace(step, member=ref(step.member))
            elif isinstance(step, Expire) and step.member is not None:
                known = ref(step.member)
                step = dataclasses.replace(step, member=known if isinstance(known, Ref) else None)
                step = dataclasses.replace(step, unanswered=not isinstance(known, Ref))
            elif isinstance(step, Sync):
                assignment = tuple((ref(k), v) for k, v in step.assignment)
                step = dataclasses.replace(step, member=ref(step.member), assignment=assignment)
            send_on_kgc(world, index, step)
            out.append(step)
            for rid, delivered in world.responses.items():
                if isinstance(world.requests[rid], Join) and delivered and delivered[0].member_id:
                    names.setdefault(delivered[0].member_id, Ref(rid))
            named.append(dict(names))
    finally:
        world.close()
    return Scenario(name, source, config, tuple(out), f"<{name}>"), named


def _recorder(constants: SpecConstants, name: str, source: str) -> tuple[RunRecorder, RequestLog]:
    log = RequestLog()
    rec = RunRecorder(constants, name=name, source=source, observer=log)
    log.attach(rec.world.clock)
    return rec, log


def random_program(seed: int, steps: int = 40, constants: SpecConstants | None = None) -> Scenario:
    """A random client program (recorder.random_run's choice among the enabled spec steps, seeded)
    as a scenario. The default constants: random_run's small model (three consumers, a group
    bounded at two, one failover) on a clock where NewMemberTimeout is Kafka's 300 s."""
    k = (
        constants
        if constants is not None
        else kafka_clock(dataclasses.replace(RANDOM_RUN_CONSTANTS, new_member_timeout=3000))
    )
    name = f"random-{seed}"
    rec, log = _recorder(k, name, f"random_run(seed={seed})")
    rng = random.Random(seed)
    unit = k.ms_per_unit
    weights = {"fire": 1.5, "advance": 1.0, "GroupUnload": 0.05, "GroupLoad": 2.0, "ClientCrash": 0.05}
    weights.update({"SyncGroupLeader": 3.0, "SyncGroupFollower": 3.0, "Heartbeat": 1.5, "LeaveGroup": 0.15})
    while len(rec.states) <= steps and rec.stopped is None:
        options = enabled_actions(rec)
        if not options:
            break
        action, client, flag = rng.choices(options, [weights.get(o[0], 1.0) for o in options])[0]
        head = rec.world.timer.live_tasks()[0].deadline_ms() if rec.world.timer.live_tasks() else 0
        if action == "fire":  # every timer due by the head's deadline, one Expire each
            rec.tick(head - rec.world.clock.now_ms())
        elif action == "advance":
            room = (head - rec.world.clock.now_ms()) // unit - 1
            rec.tick(rng.randint(1, room) * unit if room >= 1 else head - rec.world.clock.now_ms())
        else:
            rec.step(action, client, flag)
    log.catch_up()
    return as_scenario(name, f"random_run(seed={seed})", log.steps, _scenario_config(k))


@dataclass(frozen=True)
class SpecMark:
    """Where spec step `step` of a trace ends in its program: after `length` program steps, with
    the spec's state after it and the kgc member id of each spec member id at that point."""

    step: int
    length: int
    state: Mapping[str, Any]
    kgc_ids: Mapping[int, str]


@dataclass(frozen=True)
class TraceProgram:
    scenario: Scenario
    marks: tuple[SpecMark, ...]
    named: tuple[Mapping[str, Ref], ...]  # after each program step: kgc member id -> its join
    spec_steps: int  # in the trace; more than the marks only when kgc's side stopped following it


def trace_program(path: Path) -> Scenario:
    """A spec trace (ITF, from kgc simulate) as the requests conform sends kgc's coordinator
    following it, steered to the spec's choices where Kafka leaves them to HashMap order."""
    return marked_trace_program(path).scenario


def marked_trace_program(path: Path) -> TraceProgram:
    """trace_program, with where each spec step ends in the program (kgc conform --reference)."""
    from kgc.conformance.mbt import describe_action, load_trace

    constants, states, _ = load_trace(path)
    if constants.normalize:
        raise ProgramError(f"{path}: a Normalize model's trace has a relative clock; simulate default or faults")
    k = kafka_clock(constants)
    name = Path(path).name.removesuffix(".itf.json")
    rec, log = _recorder(k, name, f"spec trace {path}")
    marks: list[SpecMark] = []
    for n in range(1, len(states)):
        la: Mapping[str, Any] = states[n]["lastAction"]
        if str(la["name"]) == "StoreCallback":
            log.store(GROUP_ID, str(la.get("append", "NONE")))
        leader = states[n]["leader"]
        if leader != states[n - 1]["leader"] and rec.world.ids.impl_or_none(leader):
            log.steps.append(PreferLeader(GROUP_ID, rec.world.ids.impl(leader)))  # as spec_step steers
        rec.spec_step(states[n - 1], states[n], f"spec step {n} {describe_action(la)}")
        if rec.stopped is not None:
            break
        log.catch_up()
        ids = {i: rec.world.ids.impl(i) for i in states[n]["members"] if rec.world.ids.impl_or_none(i)}
        leader = states[n]["leader"]
        if rec.world.ids.impl_or_none(leader):
            ids[leader] = rec.world.ids.impl(leader)
        marks.append(SpecMark(n, len(log.steps), states[n], ids))
    log.catch_up()
    scenario, named = _with_refs(name, f"spec trace {path}", log.steps, _scenario_config(k))
    return TraceProgram(scenario, tuple(marks), tuple(named), len(states) - 1)
