"""The implementation seen as the spec: one abstraction function and one action mapping.

`abstract_state(world)` maps the state of the Python coordinator (kgc.impl) plus the client
views a driver keeps to the variables of spec/GroupCoordinator.tla. `apply_action(world, la)`
maps a spec step (its `lastAction` record) to the requests and clock moves that perform it on
the implementation. `World` is the driver both directions share: a coordinator on a
VirtualClock, one group ("g"), the spec's clients as Kafka consumers (the client half of the
spec: how AbstractCoordinator reacts to each response), and the history the spec keeps as
ghost variables. Both directions (kgc conform / replay-cex here, kgc validate / the Hypothesis
machine in validate.py and stateful.py) import these; the public names below are stable.

Units and ids. 1 spec time unit = `SpecConstants.ms_per_unit` ms (K). Member ids map to the
spec's 1..NumIds by order of first appearance (`IdMap`); "" is NoMember (0). Clients are
model values named as in the model (c1, c2, ...); the client id a consumer sends is its name.

How each spec variable is computed (G = coordinator.group("g"), None when not hosted;
"absent" = G is None; ops = timer.live_tasks(), all of them the coordinator's delayed
operations):

    variable        computed from the implementation
    --------------  ----------------------------------------------------------------------
    now             (clock.now_ms() - offset_ms) / K; offset_ms is 0 unless the driver let
                    time pass with no live timer (unobservable in the spec, see its header)
    timers          one record per op in ops order ((deadline, add order)):
                      kind       InitialDelayedJoin "InitialJoin", DelayedJoin "Join",
                                 DelayedSync "Sync", DelayedHeartbeat "Pending" if is_pending
                                 else "Heartbeat"
                      member     id of op.member_id (heartbeats), else 0
                      deadline   (op.deadline_ms() - offset_ms) / K
                      dur        Heartbeat: "newMember" if op.delay_ms is NewMemberTimeout,
                                 "session" if Session (equal durations: member.is_new
                                 decides); Pending: "session"; others "none"
                      gen        DelayedSync.generation_id, else -1
                      delay      op.delay_ms / K;  remaining: InitialJoin remaining_ms / K
                      stale      op.group is not G (its group was unloaded)
                      orphan     not stale: a Heartbeat whose member is not in G.members, a
                                 Pending whose id is not in G.pending_members (Kafka dropped
                                 the member without completing the op); stale: as it was
                                 at the unload
                      olds, nma  stale: G's member ids / new_member_added at the unload
                                 (snapshot the driver takes in GroupUnload; an op created on
                                 the Dead group later takes op.group.new_member_added);
                                 not stale: {} / FALSE
    loaded          coordinator.is_coordinator_for("g")
    gstate          G.state ("Dead" when absent)
    generation      G.generation_id (0 when absent)
    leader          id of G.leader_id (0 when None or absent)
    members         ids of G.members
    pending         ids of G.pending_members
    awaitingJoin    members with is_awaiting_join
    awaitingSync    members with is_awaiting_sync
    newMembers      members with is_new
    pendingSync     ids of G.pending_sync_members
    plan            Stable: the member set the installed assignment covers, the union of
                    the plans decoded from the members' assignments (a leader's SyncGroup
                    gives every listed member "plan:<id>,<id>..."); otherwise {} (Kafka
                    keeps the old per-member assignments from prepareRebalance until the
                    leader's SyncGroup, but never sends them: the spec drops them)
    newMemberAdded  G.new_member_added (FALSE when absent)
    nextId          1 + number of member ids the coordinator has handed out (seen so far)
    store           NoStore when MaxFailovers = 0 (the spec stores nothing then); else the
                    store's record for "g": exists, generation, leader, member ids, plan
                    decoded from the stored assignments
    failovers       GroupUnload steps so far (driver count)
    cphase .. cwait the client views (`ClientView`): phase, member id, generation, leader
                    flag, member list of a leader's JoinGroup response (until its SyncGroup
                    sends it), decoded assignment, member id its parked request waits under;
                    each response changes them as the spec's DeliverJoin / DeliverSync /
                    ReplyHeartbeat say
    genLeaders      members named leader in a NONE JoinGroup response to themselves, produced
                    by G for G.generation_id (every response the coordinator produced, also
                    those no client was waiting for any more)
    genMembers      CompletingRebalance / Stable: G.members when G formed the generation
                    (transition PreparingRebalance -> CompletingRebalance, seen by the
                    observer) or the members loaded by on_group_loaded; otherwise {}
    leaderLog       with MaxFailovers > 0: <<generation, member>> of every such response, across
                    every incarnation of the group (failovers); otherwise {}
    lastAction      not part of abstract_state: it is the driver's input; apply_action
                    returns the implementation's own (StepResult.last_action: the client's
                    member and generation, the fired op's member and gen, the id handed out,
                    the clock move), which conform compares with the spec's

Normalize = TRUE (the liveness models): the spec keeps `now` at 0 and deadlines relative to
it, writes the current generation 1 (0 before the first) and every older one 0, and keeps in
lastAction only what its liveness formulas read (gen NoGen, resp "", dt 0 or 1). The
abstraction does the same: now = 0, deadline = (op.deadline_ms() - clock) / K, generations
through `World.gen`, and `StepResult.last_action` reduced by `normalized_last_action`. Ids
are fresh in every model (the spec hands them out in order, as the implementation does).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgc.impl.clock import VirtualClock
from kgc.impl.coordinator import (
    GroupConfig,
    GroupCoordinator,
    JoinGroupResult,
    LeaveGroupResult,
    LeaveMemberIdentity,
    SyncGroupResult,
)
from kgc.impl.delayed import DelayedHeartbeat, DelayedJoin, DelayedSync, InitialDelayedJoin
from kgc.impl.errors import Errors
from kgc.impl.group import GroupMetadata, GroupState
from kgc.impl.timer import SystemTimer
from kgc.spec.values import ModelValue, Record, TlaFunction, TlaValue, parse_value

__all__ = [
    "AbstractionError",
    "ClientView",
    "GROUP_ID",
    "IdMap",
    "NO_GEN",
    "NO_MEMBER",
    "SPEC_VARIABLES",
    "SpecConstants",
    "StepResult",
    "TIMER_STEPS",
    "UnknownAction",
    "World",
    "abstract_state",
    "apply_action",
    "apply_spec_step",
    "decode_plan",
    "encode_plan",
    "leader_log",
    "normalized_last_action",
    "not_enabled",
    "prefer_leader",
    "tie_to_fire",
    "timer_record",
]

GROUP_ID = "g"
CLIENT_HOST = "localhost"
PROTOCOL_TYPE = "consumer"
PROTOCOL_NAME = "range"
NO_MEMBER = 0
NO_GEN = -1
PLAN_PREFIX = "plan:"

#: The spec's variables in its `vars` order, without lastAction (the action, not state).
SPEC_VARIABLES: tuple[str, ...] = (
    "now",
    "timers",
    "loaded",
    "gstate",
    "generation",
    "leader",
    "members",
    "pending",
    "awaitingJoin",
    "awaitingSync",
    "newMembers",
    "pendingSync",
    "plan",
    "newMemberAdded",
    "nextId",
    "store",
    "failovers",
    "cphase",
    "cmember",
    "cgen",
    "cleader",
    "cmembers",
    "cassign",
    "cwait",
    "genLeaders",
    "genMembers",
    "leaderLog",
)

#: Spec actions that are one timer firing (SystemTimer.fire_next()).
TIMER_STEPS = frozenset(
    {
        "SessionTimeoutExpiry",
        "NewMemberJoinTimeout",
        "PendingMemberExpiry",
        "RebalanceTimeout",
        "InitialDelayedJoin",
        "DelayedSyncExpiry",
        "StaleTimerExpiry",
    }
)


class AbstractionError(Exception):
    """The implementation state has no spec counterpart (e.g. a deadline that is not a whole
    number of spec units): a driver or set-up mistake, not a protocol divergence."""


class UnknownAction(AbstractionError):
    """A lastAction name this mapping does not know: the spec grew an action."""


# ----------------------------------------------------------------------------------------------
# Constants
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpecConstants:
    """The model constants the mapping needs. Durations are in spec units."""

    clients: tuple[str, ...]
    num_ids: int
    session: int
    rebalance: int
    initial_delay: int
    new_member_timeout: int
    max_group_size: int | None
    max_failovers: int
    normalize: bool = False
    bug: str = "none"
    ms_per_unit: int = 1000

    def ms(self, units: int) -> int:
        return units * self.ms_per_unit

    def group_config(self) -> GroupConfig:
        """Broker settings equal to the model's; session bounds wide enough for any model."""
        return GroupConfig(
            min_session_timeout_ms=1,
            max_session_timeout_ms=max(self.ms(self.session), 1800000),
            initial_rebalance_delay_ms=self.ms(self.initial_delay),
            max_group_size=self.max_group_size,
            new_member_join_timeout_ms=self.ms(self.new_member_timeout),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "clients": list(self.clients),
            "num_ids": self.num_ids,
            "session": self.session,
            "rebalance": self.rebalance,
            "initial_delay": self.initial_delay,
            "new_member_timeout": self.new_member_timeout,
            "max_group_size": self.max_group_size,
            "max_failovers": self.max_failovers,
            "normalize": self.normalize,
            "bug": self.bug,
            "ms_per_unit": self.ms_per_unit,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SpecConstants:
        return cls(**{**data, "clients": tuple(data["clients"])})

    @classmethod
    def from_cfg_text(cls, text: str, ms_per_unit: int = 1000) -> SpecConstants:
        """From a TLC model config's CONSTANTS section (the `Name = value` lines)."""
        values = cfg_constants(text)

        def need(name: str) -> Any:
            if name not in values:
                raise AbstractionError(f"the model does not set the constant {name}")
            return values[name]

        clients = need("Clients")
        return cls(
            clients=tuple(sorted(str(c) for c in clients)),
            num_ids=int(need("NumIds")),
            session=int(need("Session")),
            rebalance=int(need("Rebalance")),
            initial_delay=int(need("InitialDelay")),
            new_member_timeout=int(need("NewMemberTimeout")),
            max_group_size=int(need("MaxGroupSize")),
            max_failovers=int(need("MaxFailovers")),
            normalize=bool(values.get("Normalize", False)),
            bug=str(values.get("Bug", "none")),
            ms_per_unit=ms_per_unit,
        )

    @classmethod
    def from_cfg(cls, path: Path, ms_per_unit: int = 1000) -> SpecConstants:
        return cls.from_cfg_text(Path(path).read_text(encoding="utf-8"), ms_per_unit)

    @classmethod
    def from_model(cls, name: str, ms_per_unit: int = 1000) -> SpecConstants:
        from kgc.spec.catalog import resolve_model

        return cls.from_cfg(resolve_model(name).config, ms_per_unit)

    def properties_constants(self) -> Any:
        """The same constants for kgc.conformance.properties."""
        from kgc.conformance.properties import Constants

        return Constants(
            num_ids=self.num_ids,
            max_group_size=self.max_group_size,
            max_failovers=self.max_failovers,
            clients=frozenset(ModelValue(c) for c in self.clients),
        )


_CFG_KEYWORDS = re.compile(
    r"^\s*(SPECIFICATION|INIT|NEXT|INVARIANTS?|PROPERT(?:Y|IES)|CONSTRAINTS?|"
    r"ACTION_CONSTRAINTS?|SYMMETRY|VIEW|CHECK_DEADLOCK|ALIAS|POSTCONDITION|CONSTANTS?)\b"
)


def cfg_constants(text: str) -> dict[str, TlaValue]:
    """`Name = value` assignments of a .cfg's CONSTANT(S) sections (comments dropped)."""
    out: dict[str, TlaValue] = {}
    inside = False
    for raw in text.splitlines():
        line = raw.split("\\*", 1)[0].rstrip()
        keyword = _CFG_KEYWORDS.match(line)
        if keyword:
            inside = keyword.group(1).startswith("CONSTANT")
            line = line[keyword.end() :]
        if not inside or "=" not in line or "<-" in line:
            continue
        name, _, value = line.partition("=")
        if name.strip().isidentifier():
            out[name.strip()] = parse_value(value.strip())
    return out


# ----------------------------------------------------------------------------------------------
# Member ids and plans
# ----------------------------------------------------------------------------------------------


class IdMap:
    """Implementation member id <-> spec id (1, 2, ...) by order of first appearance."""

    def __init__(self) -> None:
        self._spec: dict[str, int] = {"": NO_MEMBER}
        self._impl: dict[int, str] = {NO_MEMBER: ""}
        self._seen = 0
        self._order: list[str] = []

    def spec(self, impl_id: str | None) -> int:
        """The spec id; an id never seen before is registered (gets the next number)."""
        if impl_id is None:
            return NO_MEMBER
        got = self._spec.get(impl_id)
        if got is None:
            got = len(self._spec)
            self._spec[impl_id] = got
            self._impl[got] = impl_id
            self._seen += 1
            self._order.append(impl_id)
        return got

    def peek(self, impl_id: str) -> int | None:
        return self._spec.get(impl_id)

    def impl(self, spec_id: int) -> str:
        return self._impl[spec_id]

    def impl_or_none(self, spec_id: int) -> str | None:
        return self._impl.get(spec_id)

    def newest(self, n: int) -> list[str]:
        """The implementation ids of the last `n` registrations still mapped."""
        return self._order[-n:] if n > 0 else []

    @property
    def seen(self) -> int:
        """How many distinct implementation ids were ever registered."""
        return self._seen

    def __len__(self) -> int:
        return len(self._spec) - 1

    def __repr__(self) -> str:
        return f"IdMap({ {v: k for k, v in self._spec.items() if v} })"


def encode_plan(member_ids: frozenset[str] | set[str]) -> str:
    """The assignment a leader gives each listed member: the whole plan, so that any member's
    assignment says which members the plan covered."""
    return PLAN_PREFIX + ",".join(sorted(member_ids))


def decode_plan(assignment: str) -> frozenset[str]:
    if not assignment.startswith(PLAN_PREFIX):
        return frozenset()
    body = assignment[len(PLAN_PREFIX) :]
    return frozenset(body.split(",")) if body else frozenset()


# ----------------------------------------------------------------------------------------------
# The driver's world
# ----------------------------------------------------------------------------------------------


@dataclass
class ClientView:
    """What a consumer (one spec client) knows: the spec's client variables, in impl ids."""

    name: str
    phase: str = "Unjoined"
    member: str = ""
    gen: int = NO_GEN
    leader: bool = False
    members: frozenset[str] = frozenset()
    assign: frozenset[str] = frozenset()
    wait: str = ""
    request: int = 0  # token of its parked JoinGroup/SyncGroup (0: none)
    calling: int = 0  # token of the request being handled right now
    answered: bool = False  # the request being handled has had its response
    subscription: int = 0  # version of its subscription metadata

    def reset(self, phase: str) -> None:
        """ResetClient: a new consumer, or one told its member id is unknown."""
        self.phase, self.member, self.gen, self.leader = phase, "", NO_GEN, False
        self.members, self.assign, self.wait, self.request = frozenset(), frozenset(), "", 0
        self.calling = 0

    def rejoins(self) -> None:
        """ClientRejoins (requestRejoin; also ILLEGAL_GENERATION): keep the member id only;
        generation, leadership, member list and assignment are not read again before the
        next JoinGroup response overwrites them."""
        self.phase, self.gen, self.leader, self.wait, self.request = ("Unjoined", NO_GEN, False, "", 0)
        self.members, self.assign = frozenset(), frozenset()

    def loses_generation(self) -> None:
        self.rejoins()


@dataclass(frozen=True)
class Produced:
    """One response the coordinator produced (callback fired), whether or not delivered."""

    step: int
    client: str
    kind: str  # "join" | "sync" | "heartbeat" | "leave"
    token: int
    result: Any
    delivered: bool


@dataclass
class _Snapshot:
    """A live op's bookkeeping fields as they were when its group was unloaded."""

    op: Any
    orphan: bool
    olds: frozenset[str]
    nma: bool


class _Watcher:
    """The coordinator's observer: notes when a generation is formed, then passes every
    call on to `chained` (e.g. the implementation -> spec recorder)."""

    def __init__(self, world: World, chained: Any = None) -> None:
        self.world = world
        self.chained = chained

    def on_request(self, kind: str, group_id: str, args: dict) -> None:
        if self.chained is not None:
            self.chained.on_request(kind, group_id, args)

    def on_response(self, kind: str, group_id: str, result: object) -> None:
        if self.chained is not None:
            self.chained.on_response(kind, group_id, result)

    def on_timer(self, kind: str, group_id: str, member_id: str | None) -> None:
        if self.chained is not None:
            self.chained.on_timer(kind, group_id, member_id)

    def on_transition(self, group_id: str, old: GroupState, new: GroupState) -> None:
        if old is GroupState.PreparingRebalance and new in (GroupState.CompletingRebalance, GroupState.Empty):
            group = self.world.coordinator.group(group_id)
            if group is not None:
                self.world.formed = (group, frozenset(group.members))
        if self.chained is not None:
            self.chained.on_transition(group_id, old, new)


class World:
    """One coordinator hosting group "g", its clock and timer, and the spec's clients.

    `coordinator_class` lets the tests run a seeded-bug subclass (seeded_bugs.py).
    """

    def __init__(
        self,
        constants: SpecConstants,
        coordinator_class: type[GroupCoordinator] = GroupCoordinator,
        observer: Any = None,
        member_id_seed: int = 0,
    ) -> None:
        self.k = constants
        self.clock = VirtualClock(0)
        self.timer = SystemTimer(self.clock)
        self.coordinator = coordinator_class(
            constants.group_config(),
            self.clock,
            self.timer,
            member_id_seed=member_id_seed,
            observer=_Watcher(self, observer),
        )
        self.clients: dict[str, ClientView] = {c: ClientView(c) for c in constants.clients}
        self.ids = IdMap()
        self.failovers = 0
        self.offset_ms = 0
        self.step = 0
        self.produced: list[Produced] = []
        self.formed: tuple[GroupMetadata | None, frozenset[str]] = (None, frozenset())
        self.self_leaders: list[tuple[GroupMetadata, int, str]] = []
        self.unloaded_ops: dict[int, _Snapshot] = {}
        self.unloaded_groups: dict[int, tuple[GroupMetadata, frozenset[str]]] = {}
        self.op_born: dict[int, tuple[Any, int]] = {}
        self.ops: list[Any] = []  # the live ops as of the last observe()
        self._tokens = 0
        self._step_token = 0
        self.step_response: Any = None  # the requester's own response, if it came in-step

    # -- views --------------------------------------------------------------------------------
    @property
    def group(self) -> GroupMetadata | None:
        return self.coordinator.group(GROUP_ID)

    def gen(self, generation: int) -> int:
        """A generation as the spec writes it: as is, or with Normalize 1 for the current
        one (0 before the first) and 0 for every older one; NoGen stays -1."""
        if not self.k.normalize or generation == NO_GEN:
            return generation
        group = self.group
        current = group.generation_id if group is not None else 0
        if generation >= current:
            return min(generation, 1)
        return 0

    def born_step(self, op: Any) -> int | None:
        """The step in which a live op was first seen (ops made in one step form a batch)."""
        entry = self.op_born.get(id(op))
        return entry[1] if entry is not None and entry[0] is op else None

    # -- responses ----------------------------------------------------------------------------
    def _request(self, view: ClientView | None) -> int:
        """A token for a request about to be sent; its response is delivered to `view` if it
        comes while the request is handled, or later while the request is parked."""
        self._tokens += 1
        self._step_token = self._tokens
        if view is not None:
            view.calling, view.answered = self._tokens, False
        return self._tokens

    def _callback(self, client: str, token: int, kind: str) -> Callable[[Any], None]:
        def respond(result: Any) -> None:
            view = self.clients[client]
            delivered = token in (view.request, view.calling)
            self.produced.append(Produced(self.step, client, kind, token, result, delivered))
            if kind == "join":
                self._note_join(result)
            if token == self._step_token:
                self.step_response = result
            if delivered:
                if view.request == token:
                    view.request = 0
                if view.calling == token:
                    view.answered = True
                _DELIVER[kind](self, view, result)

        return respond

    def _parks(self, view: ClientView, token: int) -> bool:
        """After the handler returned: True if the request is parked (no response yet)."""
        view.calling = 0
        if view.answered:
            return False
        view.request = token
        return True

    def _note_join(self, result: JoinGroupResult) -> None:
        """Register the id first, and keep the history genLeaders is made of."""
        if result.member_id:
            self.ids.spec(result.member_id)
        if result.error is Errors.NONE and result.member_id and result.leader_id == result.member_id:
            group = self.group
            if group is not None:
                self.self_leaders.append((group, result.generation_id, result.member_id))

    # -- failover and idle time ---------------------------------------------------------------
    def unload(self) -> None:
        """The spec's GroupUnload: the coordinator resigns the group's partition."""
        self.snapshot_unload()
        self.coordinator.on_group_unloaded(GROUP_ID)
        self.failovers += 1

    def load(self) -> None:
        """The spec's GroupLoad: the coordinator takes the group over from the store."""
        before = self.group
        self.coordinator.on_group_loaded(GROUP_ID)
        group = self.group
        if group is not None and group is not before:
            self.formed = (group, frozenset(group.members))

    def advance_idle(self, ms: int) -> None:
        """Let time pass while no timer task is live: invisible to the spec (its `now` only
        moves towards a live deadline), so the clock runs ahead of `now` by offset_ms."""
        if self.timer.size():
            raise AbstractionError("advance_idle with live timer tasks: use AdvanceTime")
        self.timer.advance_to(self.clock.now_ms() + ms)
        self.offset_ms += ms

    # -- bookkeeping after every step ---------------------------------------------------------
    def observe(self) -> list[Any]:
        """Register new member ids (order of first appearance) and note new timer ops;
        returns the live ops (also kept as `ops`)."""
        group = self.group
        if group is not None:
            for m in sorted(group.pending_members):
                self.ids.spec(m)
            for m in group.members:
                self.ids.spec(m)
        ops = self.timer.live_tasks()
        for op in ops:
            if id(op) not in self.op_born or self.op_born[id(op)][0] is not op:
                self.op_born[id(op)] = (op, self.step)
            member = getattr(op, "member_id", None)
            if member:
                self.ids.spec(member)
        self.ops = ops
        return ops

    def snapshot_unload(self) -> None:
        """Before an unload: what the spec's GroupUnload writes into the timers it makes
        stale (orphan as it stands, olds = members, nma = newMemberAdded)."""
        group = self.group
        if group is None:
            return
        olds = frozenset(group.members)
        self.unloaded_groups[id(group)] = (group, olds)
        for op in self.timer.live_tasks():
            if getattr(op, "group", None) is group:
                self.unloaded_ops[id(op)] = _Snapshot(op, _orphan(op, group), olds, group.new_member_added)


_DELIVER: dict[str, Callable[[World, ClientView, Any], None]] = {}


# ----------------------------------------------------------------------------------------------
# The abstraction function
# ----------------------------------------------------------------------------------------------


def _units(world: World, ms: int, what: str) -> int:
    """A clock reading or deadline in spec units; relative to the clock with Normalize."""
    base = world.clock.now_ms() if world.k.normalize else world.offset_ms
    q, r = divmod(ms - base, world.k.ms_per_unit)
    if r:
        raise AbstractionError(
            f"{what} {ms} ms is not a whole number of {world.k.ms_per_unit} ms spec units (offset {world.offset_ms})"
        )
    return q


def _duration(world: World, ms: int, what: str) -> int:
    q, r = divmod(ms, world.k.ms_per_unit)
    if r:
        raise AbstractionError(f"{what} {ms} ms is not a whole number of spec units")
    return q


def _kind(op: Any) -> str:
    if isinstance(op, InitialDelayedJoin):
        return "InitialJoin"
    if isinstance(op, DelayedJoin):
        return "Join"
    if isinstance(op, DelayedSync):
        return "Sync"
    if isinstance(op, DelayedHeartbeat):
        return "Pending" if op.is_pending else "Heartbeat"
    raise AbstractionError(f"a timer task the spec has no kind for: {op!r}")


def _orphan(op: Any, group: GroupMetadata) -> bool:
    if isinstance(op, DelayedHeartbeat):
        if op.is_pending:
            return op.member_id not in group.pending_members
        return op.member_id not in group.members
    return False


def _dur(world: World, op: Any, group: GroupMetadata | None) -> str:
    if not isinstance(op, DelayedHeartbeat):
        return "none"
    if op.is_pending:
        return "session"
    session, new_member = world.k.ms(world.k.session), world.k.ms(world.k.new_member_timeout)
    if op.delay_ms == new_member and op.delay_ms != session:
        return "newMember"
    if op.delay_ms == session and op.delay_ms != new_member:
        return "session"
    if op.delay_ms == session:
        member = op.group.members.get(op.member_id)
        return "newMember" if member is not None and member.is_new else "session"
    return f"<{op.delay_ms} ms: neither Session nor NewMemberTimeout>"


def timer_record(world: World, op: Any) -> Record:
    """One live delayed operation as the spec's timer record (see the module table)."""
    group = world.group
    kind = _kind(op)
    heartbeat = isinstance(op, DelayedHeartbeat)
    stale = op.group is not group
    if stale:
        snap = world.unloaded_ops.get(id(op))
        if snap is not None and snap.op is op:
            orphan, olds, nma = snap.orphan, snap.olds, snap.nma
        else:
            entry = world.unloaded_groups.get(id(op.group))
            olds = entry[1] if entry is not None and entry[0] is op.group else frozenset()
            orphan, nma = False, op.group.new_member_added
    else:
        orphan, olds, nma = _orphan(op, group), frozenset(), False
    deadline = op.deadline_ms()
    return Record(
        {
            "kind": kind,
            "member": world.ids.spec(op.member_id) if heartbeat else NO_MEMBER,
            "deadline": _units(world, deadline, f"{kind} deadline"),
            "dur": _dur(world, op, group),
            "gen": world.gen(op.generation_id) if isinstance(op, DelayedSync) else NO_GEN,
            "delay": _duration(world, op.delay_ms, f"{kind} delay"),
            "remaining": (
                _duration(world, op.remaining_ms, "InitialJoin remaining") if isinstance(op, InitialDelayedJoin) else 0
            ),
            "stale": stale,
            "orphan": orphan,
            "olds": frozenset(world.ids.spec(m) for m in olds),
            "nma": bool(nma),
        }
    )


def _plan_of(world: World, assignments: list[str]) -> frozenset[int]:
    plan: set[int] = set()
    for a in assignments:
        plan.update(world.ids.spec(m) for m in decode_plan(a))
    return frozenset(plan)


def _store(world: World, history: bool) -> Record:
    none = Record({"exists": False, "gen": 0, "leader": NO_MEMBER, "members": frozenset(), "plan": frozenset()})
    if not history:
        return none
    record = world.coordinator.store.load_group(GROUP_ID)
    if record is None:
        return none
    return Record(
        {
            "exists": True,
            "gen": world.gen(record.generation_id),
            "leader": world.ids.spec(record.leader_id) if record.leader_id else NO_MEMBER,
            "members": frozenset(world.ids.spec(m.member_id) for m in record.members),
            "plan": _plan_of(world, [m.assignment for m in record.members]),
        }
    )


def abstract_state(world: World, failover_history: bool | None = None) -> dict[str, TlaValue]:
    """The spec variables (all but lastAction) of the implementation's current state.

    `failover_history`: whether store and leaderLog are kept, as the spec keeps them only
    when MaxFailovers > 0 (the default follows the world's constants; kgc validate's module
    always allows a failover, so recordings for it keep them)."""
    history = world.k.max_failovers > 0 if failover_history is None else failover_history
    ops = world.observe()
    ids = world.ids
    group = world.group
    clients = [ModelValue(c) for c in world.k.clients]
    views = [world.clients[c] for c in world.k.clients]

    def per_client(get: Callable[[ClientView], Any]) -> TlaFunction:
        return TlaFunction((mv, get(v)) for mv, v in zip(clients, views))

    if group is not None:
        members = list(group.members.values())
        gen = group.generation_id
        leaders = frozenset(ids.spec(m) for g, g_gen, m in world.self_leaders if g is group and g_gen == gen)
        settled = group.state in (GroupState.CompletingRebalance, GroupState.Stable)
        formed = world.formed[1] if settled and world.formed[0] is group else frozenset()
        live = {
            "gstate": group.state.value,
            "generation": world.gen(gen),
            "leader": ids.spec(group.leader_id) if group.leader_id else NO_MEMBER,
            "members": frozenset(ids.spec(m.member_id) for m in members),
            "pending": frozenset(ids.spec(m) for m in group.pending_members),
            "awaitingJoin": frozenset(ids.spec(m.member_id) for m in members if m.is_awaiting_join),
            "awaitingSync": frozenset(ids.spec(m.member_id) for m in members if m.is_awaiting_sync),
            "newMembers": frozenset(ids.spec(m.member_id) for m in members if m.is_new),
            "pendingSync": frozenset(ids.spec(m) for m in group.pending_sync_members),
            "plan": (
                _plan_of(world, [m.assignment for m in members]) if group.state is GroupState.Stable else frozenset()
            ),
            "newMemberAdded": bool(group.new_member_added),
            "genLeaders": leaders,
            "genMembers": frozenset(ids.spec(m) for m in formed),
        }
    else:
        empty: frozenset[int] = frozenset()
        live = {
            "gstate": "Dead",
            "generation": 0,
            "leader": NO_MEMBER,
            "members": empty,
            "pending": empty,
            "awaitingJoin": empty,
            "awaitingSync": empty,
            "newMembers": empty,
            "pendingSync": empty,
            "plan": empty,
            "newMemberAdded": False,
            "genLeaders": empty,
            "genMembers": empty,
        }

    state: dict[str, TlaValue] = {
        "now": _units(world, world.clock.now_ms(), "the clock"),
        "timers": tuple(timer_record(world, op) for op in ops),
        "loaded": world.coordinator.is_coordinator_for(GROUP_ID),
        **live,
        "nextId": len(ids) + 1,
        "store": _store(world, history),
        "failovers": world.failovers,
        "cphase": per_client(lambda v: v.phase),
        "cmember": per_client(lambda v: ids.spec(v.member)),
        "cgen": per_client(lambda v: world.gen(v.gen)),
        "cleader": per_client(lambda v: v.leader),
        "cmembers": per_client(lambda v: frozenset(ids.spec(m) for m in v.members)),
        "cassign": per_client(lambda v: frozenset(ids.spec(m) for m in v.assign)),
        "cwait": per_client(lambda v: ids.spec(v.wait)),
        "leaderLog": leader_log(world) if history else frozenset(),
    }
    return {name: state[name] for name in SPEC_VARIABLES}


# ----------------------------------------------------------------------------------------------
# Clients receiving responses (the spec's DeliverJoin / DeliverSync / ReplyHeartbeat)
# ----------------------------------------------------------------------------------------------


def _deliver_join(world: World, view: ClientView, r: JoinGroupResult) -> None:
    err = r.error
    if err is Errors.NONE:
        view.phase, view.member, view.gen = "Joined", r.member_id, r.generation_id
        view.leader = r.leader_id == r.member_id
        view.members = frozenset(m.member_id for m in r.members)
        view.wait = ""
    elif err is Errors.MEMBER_ID_REQUIRED:
        view.phase, view.member, view.wait = "Unjoined", r.member_id, ""
    elif err is Errors.UNKNOWN_MEMBER_ID:
        view.reset("Unjoined")
    elif err is Errors.GROUP_MAX_SIZE_REACHED:
        view.reset("Down")  # fatal to the consumer
    else:
        view.rejoins()


def _deliver_sync(world: World, view: ClientView, r: SyncGroupResult) -> None:
    err = r.error
    if err is Errors.NONE:
        view.phase, view.assign, view.wait = "Stable", decode_plan(r.member_assignment), ""
    elif err is Errors.UNKNOWN_MEMBER_ID:
        view.reset("Unjoined")
    elif err is Errors.ILLEGAL_GENERATION:
        view.loses_generation()
    else:
        view.rejoins()


def _deliver_heartbeat(world: World, view: ClientView, err: Errors) -> None:
    if err is Errors.REBALANCE_IN_PROGRESS:
        if view.phase == "Stable":
            view.rejoins()
    elif err is Errors.UNKNOWN_MEMBER_ID:
        view.reset("Unjoined")
    elif err is Errors.ILLEGAL_GENERATION:
        view.loses_generation()


def _deliver_leave(world: World, view: ClientView, r: LeaveGroupResult) -> None:
    pass  # the consumer closed before sending it


_DELIVER.update(join=_deliver_join, sync=_deliver_sync, heartbeat=_deliver_heartbeat, leave=_deliver_leave)


def response_error(result: Any) -> str:
    """The error name the spec records as lastAction.resp for a response."""
    if isinstance(result, Errors):
        return result.name
    if isinstance(result, LeaveGroupResult):
        if result.error is Errors.NONE and result.member_responses:
            return result.member_responses[0][2].name
        return result.error.name
    return result.error.name


# ----------------------------------------------------------------------------------------------
# The action mapping
# ----------------------------------------------------------------------------------------------


@dataclass
class StepResult:
    """What performing one spec step did on the implementation."""

    action: str
    response: str | None = None  # requester's own response in this step (error name)
    fired: Record | None = None  # timer steps: the op that ran, as a spec timer record
    ran: int = 0  # timer tasks run
    requests: list[str] = field(default_factory=list)  # what was called, for reports
    last_action: Record | None = None
    """The spec's lastAction as the implementation step fills it in: client, member and gen
    as the client view (or the fired timer) had them before the step, newMember the id the
    step handed out, dt the clock move in units; resp is the requester's response if it came
    in the step, else "PARKED" (a request parked and answered in one step reads as answered,
    where the spec says PARKED)."""


def _client_name(la: Mapping[str, Any]) -> str:
    c = la.get("client")
    return c.name if isinstance(c, ModelValue) else str(c)


def _protocols(world: World, view: ClientView, changed: bool) -> list[tuple[str, str]]:
    """The subscription sent. `changed` (the spec's chg) must make member.matches fail and
    its absence make it hold, so an unchanged join resends what the coordinator stored for
    the member (it may have kept an older version, e.g. after a failover)."""
    if changed:
        view.subscription += 1
    else:
        group = world.group
        member = group.members.get(view.member) if group is not None and view.member else None
        if member is not None:
            return list(member.protocols)
    return [(PROTOCOL_NAME, f"{view.name}-v{view.subscription}")]


def _join(world: World, c: str, rk: bool, changed: bool, res: StepResult) -> None:
    view = world.clients[c]
    member_id = view.member
    protocols = _protocols(world, view, changed)
    token = world._request(view)
    res.requests.append(f"JoinGroup(member={member_id!r}, requireKnownMemberId={rk}, metadata={protocols[0][1]})")
    world.coordinator.handle_join_group(
        GROUP_ID,
        member_id,
        None,
        rk,
        c,
        CLIENT_HOST,
        world.k.ms(world.k.rebalance),
        world.k.ms(world.k.session),
        PROTOCOL_TYPE,
        protocols,
        world._callback(c, token, "join"),
    )
    if world._parks(view, token):
        if not member_id:
            group = world.group
            new = [m for m in (group.members if group is not None else ()) if world.ids.peek(m) is None]
            member_id = new[0] if new else ""
        view.phase, view.wait = "JoinWait", member_id


def _sync(world: World, c: str, leader: bool, res: StepResult) -> None:
    view = world.clients[c]
    assignment = {m: encode_plan(view.members) for m in view.members} if leader else {}
    view.members = frozenset()  # the list is used up by this request
    token = world._request(view)
    res.requests.append(
        f"SyncGroup(member={view.member!r}, generation={view.gen}, assignment={'plan' if leader else 'none'})"
    )
    world.coordinator.handle_sync_group(
        GROUP_ID, view.gen, view.member, None, None, None, assignment, world._callback(c, token, "sync")
    )
    if world._parks(view, token):
        view.phase, view.wait = "SyncWait", view.member


def _heartbeat(world: World, c: str, res: StepResult) -> None:
    view = world.clients[c]
    token = world._request(view)
    res.requests.append(f"Heartbeat(member={view.member!r}, generation={view.gen})")
    world.coordinator.handle_heartbeat(GROUP_ID, view.member, None, view.gen, world._callback(c, token, "heartbeat"))
    view.calling = 0


def _leave(world: World, c: str, res: StepResult) -> None:
    view = world.clients[c]
    member_id = view.member
    view.reset("Down")
    token = world._request(None)  # nobody is listening: the consumer has closed
    res.requests.append(f"LeaveGroup(member={member_id!r})")
    world.coordinator.handle_leave_group(
        GROUP_ID, [LeaveMemberIdentity(member_id, None)], world._callback(c, token, "leave")
    )


def _fire(world: World, res: StepResult, chosen: Any = None) -> None:
    """Fire the earliest timer task, or `chosen`, one that ties with it (see `tie_to_fire`)."""
    if chosen is not None:
        res.fired = timer_record(world, chosen)
        deadline = chosen.deadline_ms()
        res.requests.append(f"{type(chosen).__name__}.run() at {deadline} (a tie: HashMap order)")
        world.clock.set_ms(deadline)
        chosen.run()
        res.ran = 1
        return
    tasks = world.timer.live_tasks()
    if tasks:
        res.fired = timer_record(world, tasks[0])
    res.requests.append("SystemTimer.fire_next()")
    res.ran = 1 if world.timer.fire_next() else 0


def tie_to_fire(world: World, spec_head: Mapping[str, Any]) -> Any:
    """The live op to fire for the spec's head timer when the implementation's head is another
    timer made in the same step with the same deadline, else None.

    Kafka creates such timers while iterating a HashMap of member ids (onCompleteJoin,
    propagateAssignment, onGroupLoaded), so which of them fires first is unspecified: the
    spec creates them in ascending id, the implementation in join order. Firing the spec's
    one is what Kafka does for some HashMap order; timers not made together keep their order.
    """
    ops = world.ops
    if not ops or timer_record(world, ops[0]) == spec_head:
        return None
    head = ops[0]
    batch = world.born_step(head)
    for op in ops[1:]:
        if op.deadline_ms() != head.deadline_ms():
            break
        if world.born_step(op) == batch and timer_record(world, op) == spec_head:
            return op
    return None


def leader_log(world: World) -> frozenset[tuple[int, int]]:
    """<<generation, member>> of every NONE JoinGroup response naming its own member leader,
    over every incarnation of the group (the spec's leaderLog, kept when MaxFailovers > 0)."""
    return frozenset((gen, world.ids.spec(m)) for _, gen, m in world.self_leaders)


def apply_spec_step(world: World, spec_before: Mapping[str, Any], spec_after: Mapping[str, Any]) -> StepResult:
    """apply_action for one step of a spec trace, steered to the choices the spec made where
    Kafka leaves them to HashMap order (prefer_leader, tie_to_fire)."""
    la = spec_after["lastAction"]
    tie = None
    if str(la["name"]) in TIMER_STEPS and spec_before["timers"]:
        tie = tie_to_fire(world, spec_before["timers"][0])
    if spec_after["leader"] != spec_before["leader"]:
        prefer_leader(world, spec_after["leader"])
    return apply_action(world, la, tie)


def prefer_leader(world: World, spec_leader: int) -> None:
    """Put the spec's new leader first in the group's member order.

    Kafka elects a new leader as the first member of a HashMap (GroupMetadata.remove: any
    remaining member; maybeElectNewJoinedLeader: any member awaiting join), so the choice is
    unspecified and the spec lets any candidate lead. The implementation takes the first in
    its dict order; moving the spec's choice to the front makes it elect that one whenever it
    is a candidate, and changes nothing else the spec observes (timers made together are
    compared as a set). A member the implementation would not elect at all stays a divergence.
    """
    group = world.group
    if group is None or spec_leader == NO_MEMBER:
        return
    impl_id = world.ids.impl_or_none(spec_leader)
    members = group.members
    if impl_id is None or impl_id not in members or next(iter(members)) == impl_id:
        return
    first = members.pop(impl_id)
    rest = list(members.items())
    members.clear()
    members[impl_id] = first
    members.update(rest)


def _advance(world: World, units: int, res: StepResult) -> None:
    target = world.clock.now_ms() + world.k.ms(units)
    res.requests.append(f"SystemTimer.advance_to({target})")
    res.ran = world.timer.advance_to(target)


def apply_action(world: World, la: Mapping[str, Any], fire: Any = None) -> StepResult:
    """Perform the spec step `la` (a lastAction record: name, client, member, gen, flag,
    newMember, resp, dt) on the implementation, driving each client from its own view.

    Requests: JoinGroupUnknownMember(c, rk) -> handle_join_group("" , rk);
    JoinGroupPendingMember / JoinGroupKnownMember(c, chg) -> handle_join_group(member id,
    metadata changed iff chg); SyncGroupLeader / SyncGroupFollower -> handle_sync_group
    (the leader's assignment gives each member of its list the plan); Heartbeat ->
    handle_heartbeat; LeaveGroup -> handle_leave_group. Time: every timer step (TIMER_STEPS)
    -> SystemTimer.fire_next() (or `fire`, a live op tying with the head: `tie_to_fire`);
    AdvanceTime -> advance_to(now + dt * K). Failover:
    GroupUnload -> on_group_unloaded, GroupLoad -> on_group_loaded. Client events
    (ClientCrash, ClientRestart, ClientAbandon, ClientRejoin, NoIdLeft) only change the
    client view; a response to a request its client no longer waits for is lost, as in the
    spec.
    """
    name = str(la["name"])
    world.step += 1
    world.step_response = None
    world._step_token = -1
    res = StepResult(name)
    c = _client_name(la)
    view = world.clients.get(c)
    flag = bool(la.get("flag", False))
    ids_before = world.ids.seen
    clock_before = world.clock.now_ms()
    pre_member, pre_gen = _action_member_gen(world, name, view)
    if name == "Init":
        pass
    elif name == "JoinGroupUnknownMember":
        _join(world, c, flag, False, res)
    elif name == "JoinGroupPendingMember":
        _join(world, c, False, False, res)
    elif name == "JoinGroupKnownMember":
        _join(world, c, False, flag, res)
    elif name in ("SyncGroupLeader", "SyncGroupFollower"):
        _sync(world, c, name == "SyncGroupLeader", res)
    elif name == "Heartbeat":
        _heartbeat(world, c, res)
    elif name == "LeaveGroup":
        _leave(world, c, res)
    elif name in ("ClientCrash", "NoIdLeft"):
        view.reset("Down")  # NoIdLeft: the model ran out of ids; the client gives up
    elif name == "ClientRestart":
        view.phase = "Unjoined"
    elif name in ("ClientAbandon", "ClientRejoin"):
        view.rejoins()
    elif name in TIMER_STEPS:
        _fire(world, res, fire)
    elif name == "AdvanceTime":
        _advance(world, int(la.get("dt", 1)), res)
    elif name == "GroupUnload":
        res.requests.append("on_group_unloaded")
        world.unload()
    elif name == "GroupLoad":
        res.requests.append("on_group_loaded")
        world.load()
    else:
        raise UnknownAction(f"no implementation mapping for spec action {name!r}")
    if world.step_response is not None:
        res.response = response_error(world.step_response)
    world.observe()
    if name in TIMER_STEPS and res.fired is not None:
        pre_member, pre_gen = res.fired["member"], res.fired["gen"]
    new_ids = world.ids.seen - ids_before
    newest = (world.ids.peek(world.ids.newest(1)[0]) or NO_MEMBER) if new_ids == 1 else NO_MEMBER
    res.last_action = Record(
        {
            "name": name,
            "client": ModelValue(c) if view is not None else ModelValue("NoClient"),
            "member": pre_member,
            "gen": pre_gen,
            "flag": flag if name in ("JoinGroupUnknownMember", "JoinGroupKnownMember") else False,
            "newMember": newest,
            "resp": (
                res.response
                if res.response is not None
                else "PARKED"
                if res.requests and name not in _NOT_REQUESTS
                else "NONE"
            ),
            "dt": (world.clock.now_ms() - clock_before) // world.k.ms_per_unit,
        }
    )
    if world.k.normalize:
        res.last_action = normalized_last_action(res.last_action)
    return res


def normalized_last_action(la: Record) -> Record:
    """The spec's LA(...) under Normalize: the liveness models keep only what their formulas
    read (who acted, on which member, which id was handed out, whether time moved), so that
    lastAction splits as few states as possible."""
    return Record({**la, "gen": NO_GEN, "resp": "", "dt": 1 if la["dt"] > 0 else 0})


_NOT_REQUESTS = TIMER_STEPS | {"AdvanceTime", "GroupUnload", "GroupLoad"}


def _action_member_gen(world: World, name: str, view: ClientView | None) -> tuple[int, int]:
    """The member and gen parameters the spec's LA(...) gives each action."""
    if view is None:
        return NO_MEMBER, NO_GEN
    member = world.ids.spec(view.member)
    if name in ("SyncGroupLeader", "SyncGroupFollower", "Heartbeat", "ClientRejoin"):
        return member, world.gen(view.gen)
    if name == "ClientAbandon":
        return world.ids.spec(view.wait), NO_GEN
    if name in ("JoinGroupUnknownMember", "ClientRestart", "NoIdLeft"):
        return NO_MEMBER, NO_GEN
    return member, NO_GEN


def not_enabled(world: World, la: Mapping[str, Any]) -> str | None:
    """Why the spec step `la` could not happen in the implementation's current state (the
    spec's enabling conditions read on the client views and the timer), or None if it can.
    After a divergence the views may no longer allow what the spec does next."""
    name = str(la["name"])
    view = world.clients.get(_client_name(la))
    group = world.group
    loaded = world.coordinator.is_coordinator_for(GROUP_ID)
    if view is not None:
        phase = view.phase
        pending = loaded and group is not None and view.member in group.pending_members
        ok = {
            "JoinGroupUnknownMember": phase == "Unjoined" and not view.member,
            "JoinGroupPendingMember": phase == "Unjoined" and bool(view.member) and pending,
            "JoinGroupKnownMember": phase == "Unjoined" and bool(view.member) and not pending,
            "SyncGroupLeader": phase == "Joined" and view.leader,
            "SyncGroupFollower": phase == "Joined" and not view.leader,
            "Heartbeat": phase in ("Joined", "SyncWait", "Stable"),
            "LeaveGroup": phase != "Down" and bool(view.member),
            "ClientCrash": phase != "Down",
            "ClientRestart": phase == "Down",
            "ClientAbandon": phase in ("JoinWait", "SyncWait"),
            "ClientRejoin": phase == "Stable",
            "NoIdLeft": (phase == "Unjoined" and not view.member and len(world.ids) >= world.k.num_ids),
        }.get(name, True)
        if not ok:
            who = f"member {view.member!r}" if view.member else "no member id"
            return f"client {view.name} is {phase} with {who}" + (
                f", leader={view.leader}" if name.startswith("SyncGroup") else ""
            )
        return None
    tasks = world.timer.live_tasks()
    if name in TIMER_STEPS and not tasks:
        return "no live timer task"
    if name == "AdvanceTime":
        if not tasks:
            return "no live timer task"
        dt = int(la.get("dt", 1))
        if world.clock.now_ms() + world.k.ms(dt) >= tasks[0].deadline_ms():
            return "the next timer is due before that"
    if name == "GroupUnload" and not loaded:
        return "the group is not loaded"
    if name == "GroupLoad" and loaded:
        return "the group is loaded"
    return None
