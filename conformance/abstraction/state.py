"""The implementation's state as the spec's variables (abstract_state), timer by timer
(timer_record). The table of how each variable is computed is in the package docstring."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from itertools import compress
from operator import attrgetter, itemgetter
from typing import Any

from kgc.conformance.abstraction.constants import (
    GROUP_ID,
    NO_GEN,
    NO_MEMBER,
    PROTOCOL_NAME,
    SPEC_VARIABLES,
    AbstractionError,
    instance_id,
)
from kgc.conformance.abstraction.ids import decode_plan
from kgc.conformance.abstraction.world import World
from kgc.impl.delayed import DelayedHeartbeat, DelayedJoin, DelayedSync, InitialDelayedJoin
from kgc.impl.group import GroupMetadata, GroupState
from kgc.spec.values import ModelValue, Record, TlaFunction, TlaValue


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


def is_orphan(op: Any, group: GroupMetadata, orphaned: AbstractSet[str] | None = None) -> bool:
    """A heartbeat Kafka left behind on purpose: its member is gone, and it went on one of the
    spec's orphaning paths (`orphaned`, tracked by the world). A timer whose member is gone by
    any other path is not orphan: OneSessionTimerPerMember then reports it as a leak."""
    if isinstance(op, DelayedHeartbeat):
        gone = op.member_id not in (group.pending_members if op.is_pending else group.members)
        return gone and (orphaned is None or op.member_id in orphaned)
    return False


def timer_dur(world: World, op: Any, group: GroupMetadata | None) -> str:
    """A timer record's dur: which of the spec's durations a heartbeat was scheduled with."""
    if not isinstance(op, DelayedHeartbeat):
        return "none"
    if op.is_pending:
        return "session"
    member_timeouts = world.member_timeouts.get(op.member_id)
    k = world.k  # k.ms(units) written out: two frames less per live heartbeat and update
    session = member_timeouts[0] if member_timeouts is not None else k.session * k.ms_per_unit
    new_member = k.new_member_timeout * k.ms_per_unit
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
        orphan, olds, nma = is_orphan(op, group, world.orphaned), frozenset(), False
    deadline = op.deadline_ms()
    return Record.of_fields(
        {
            "kind": kind,
            "member": world.ids.spec(op.member_id) if heartbeat else NO_MEMBER,
            "deadline": _units(world, deadline, f"{kind} deadline"),
            "dur": timer_dur(world, op, group),
            "gen": world.gen(op.generation_id) if isinstance(op, DelayedSync) else NO_GEN,
            "delay": _duration(world, op.delay_ms, f"{kind} delay"),
            "remaining": (
                _duration(world, op.remaining_ms, "InitialJoin remaining") if isinstance(op, InitialDelayedJoin) else 0
            ),
            "stale": stale,
            "orphan": orphan,
            "olds": frozenset(map(world.ids.spec, olds)),  # C-level: no generator frame per record
            "nma": bool(nma),
        }
    )


def _plan_of(world: World, assignments: list[str], within: frozenset[str] = frozenset()) -> frozenset[int]:
    """The member ids an assignment plan names, renamed as replaceStaticMember renamed them
    since (World.renamed); a plan of a record holding members `within` keeps an id the
    record holds (an append made before the rename, or the record a static rejoin's
    append has not yet replaced, names the old id)."""
    plan: set[int] = set()
    if not world.renamed:  # no id renamed: each is its own current one (the members share one plan, read once)
        for a in dict.fromkeys(assignments):
            plan.update(map(world.ids.spec, decode_plan(a)))
        return frozenset(plan)
    for a in assignments:
        plan.update(world.ids.spec(world.current_id(m, within)) for m in decode_plan(a))
    return frozenset(plan)


def _record_plan(world: World, record: Any) -> frozenset[int]:
    return _plan_of(world, [m.assignment for m in record.members], frozenset(m.member_id for m in record.members))


#: The spec's store when nothing is stored (or MaxFailovers = 0: not kept).
NO_STORE = Record({"exists": False, "gen": 0, "leader": NO_MEMBER, "members": frozenset(), "plan": frozenset()})


def _store(world: World, history: bool) -> Record:
    if not history:
        return NO_STORE
    record = world.coordinator.store.load_group(GROUP_ID)
    if record is None:
        return NO_STORE
    return Record(
        {
            "exists": True,
            "gen": world.gen(record.generation_id),
            "leader": world.ids.spec(record.leader_id) if record.leader_id else NO_MEMBER,
            "members": frozenset(world.ids.spec(m.member_id) for m in record.members),
            "plan": _record_plan(world, record),
        }
    )


def _instance_value(instance: tuple[str, ...]) -> frozenset[ModelValue]:
    """An instance as the spec writes it: the set of its clients (NoInstance: {})."""
    return frozenset(ModelValue(c) for c in instance)


def _static_variables(world: World, history: bool, fresh: bool = False) -> dict[str, TlaValue]:
    """staticMembers, minstance and storeStatic. GroupMetadata.staticMembers of the loaded
    group (every instance unmapped while the group is not loaded, as GroupUnload leaves it);
    minstance: the group.instance.id every member id handed out was given, which the spec
    keeps after the member is gone (world.member_instances); storeStatic: the instance ids of
    the stored group's members, kept as `store` is (only when MaxFailovers > 0)."""
    k = world.k
    if not k.instances:  # no static members in the model: functions on the empty set, <<>> to TLC
        return {
            "staticMembers": (),
            "minstance": _per_id(world, "minstance", len(world.member_instances), _member_instances, fresh),
            "storeStatic": (),
        }
    group = world.group
    live = group.static_members if group is not None else {}
    stored: dict[str, str] = {}
    record = world.coordinator.store.load_group(GROUP_ID) if history else None
    if record is not None:
        stored = {m.group_instance_id: m.member_id for m in record.members if m.group_instance_id is not None}

    def per_instance(mapping: Mapping[str, str]) -> TlaValue:
        return TlaFunction(
            (_instance_value(i), world.ids.spec(mapping[instance_id(i)]) if instance_id(i) in mapping else NO_MEMBER)
            for i in k.instances
        )

    return {
        "staticMembers": per_instance(live),
        "minstance": _per_id(world, "minstance", len(world.member_instances), _member_instances, fresh),
        "storeStatic": per_instance(stored),
    }


def _member_instances(world: World) -> tuple[frozenset[ModelValue], ...]:
    """minstance: the instance every spec member id was handed out with ({}: none)."""
    if not world.k.instances:  # no member can have one; recomputed whenever an id is handed out
        return (frozenset(),) * world.k.num_ids
    by_id = {instance_id(i): i for i in world.k.instances}
    minstance = []
    for spec_id in range(1, world.k.num_ids + 1):
        member = world.ids.impl_or_none(spec_id)
        given = world.member_instances.get(member) if member is not None else None
        minstance.append(_instance_value(by_id[given]) if given in by_id else frozenset())
    return tuple(minstance)


def _per_id(world: World, name: str, version: int, compute: Callable[[World], Any], fresh: bool = False) -> Any:
    """A function on 1..NumIds of the world's per-member-id history (minstance, mtimeouts,
    mprotocols), kept in world.per_id_memo while the ids handed out and that history's
    `version` stay: they change on few steps, and rebuilding them was ~15 % of recomputing
    the coordinator variables. The previous object itself is returned, so that conform
    skips comparing it again. `fresh`: computed anew (the full abstract_state, which the
    incremental one is checked against)."""
    key = (world.ids.seen, version)  # seen is len(ids), read without IdMap.__len__'s frame
    hit = world.per_id_memo.get(name)
    if hit is not None and hit[0] == key and not fresh:
        return hit[1]
    value = compute(world)
    world.per_id_memo[name] = (key, value)
    return value


def _closure_var(callback: Any, name: str) -> Any:
    """A variable a storeGroup callback closes over (Kafka's lambdas hold `group`, and
    updateStaticMemberAndRebalance's the member and its ids), or None."""
    code = getattr(callback, "__code__", None)
    if code is None or name not in code.co_freevars or callback.__closure__ is None:
        return None
    return callback.__closure__[code.co_freevars.index(name)].cell_contents


def _callback_group(callback: Any) -> Any:
    """The GroupMetadata a storeGroup callback closes over (doSyncGroup's and onCompleteJoin's
    both do), or None."""
    return _closure_var(callback, "group")


def _static_write_fields(world: World, callback: Any) -> dict[str, Any]:
    """The fields of a Static write (updateStaticMemberAndRebalance's append): the new and
    old member ids, the member id its MemberMetadata has now in the callback's group
    (NoMember once renamed away or removed: the spec's obj), the JoinGroup's v9 flag, the
    leader when it came, and whether that JoinGroup is still unanswered."""
    new_member_id = _closure_var(callback, "new_member_id")
    if new_member_id is None:
        return {
            "member": NO_MEMBER,
            "old": NO_MEMBER,
            "obj": NO_MEMBER,
            "skip": False,
            "cleader": NO_MEMBER,
            "open": False,
        }
    group = _callback_group(callback)
    member = _closure_var(callback, "member")
    respond = _closure_var(callback, "respond")
    leader = _closure_var(callback, "current_leader")
    obj = member.member_id if group is not None and group.members.get(member.member_id) is member else None
    return {
        "member": world.ids.spec(new_member_id),
        "old": world.ids.spec(_closure_var(callback, "old_member_id")),
        "obj": world.ids.spec(obj) if obj is not None else NO_MEMBER,
        "skip": bool(respond.supports_skip_assignment),
        "cleader": world.ids.spec(leader) if leader else NO_MEMBER,
        "open": not respond.answered,
    }


def _member_timeouts(world: World) -> tuple[tuple[int, int], ...]:
    """mtimeouts: every spec member id's timeouts as last seen in the group, in spec units;
    <<Session, Rebalance>> for ids not handed out or never a member (a pending member's
    timeouts are not kept by Kafka, nor by the spec). A function on 1..NumIds is a tuple
    to TLC, so it is one here too."""
    k = world.k
    default = (k.session, k.rebalance)
    out = []
    for spec_id in range(1, k.num_ids + 1):
        member = world.ids.impl_or_none(spec_id)
        seen = world.member_timeouts.get(member) if member is not None else None
        out.append(
            (_duration(world, seen[0], "session timeout"), _duration(world, seen[1], "rebalance timeout"))
            if seen is not None
            else default
        )
    return tuple(out)


def _member_protocols(world: World) -> tuple[tuple[str, ...], ...]:
    """mprotocols: every spec member id's protocol names, most preferred first, as last seen
    in the group; <<PROTOCOL_NAME>> (the spec's DefaultProtocols) for ids not handed out or
    never a member. A function on 1..NumIds is a tuple to TLC, so it is one here too."""
    out = []
    for spec_id in range(1, world.k.num_ids + 1):
        member = world.ids.impl_or_none(spec_id)
        seen = world.member_protocols.get(member) if member is not None else None
        out.append(seen if seen is not None else (PROTOCOL_NAME,))
    return tuple(out)


def writes_of(world: World) -> tuple[Record, ...]:
    """The spec's `writes`: the group's appends in flight in the world's deferred store, oldest
    first; Empty for a record without members (onCompleteJoin's), else Sync (the leader's
    SyncGroup); stale when the callback's GroupMetadata is no longer the cached group."""
    store = world.deferred_store()
    if store is None:
        return ()
    out = []
    for record, callback in store.pending_writes(GROUP_ID):
        static = _static_write_fields(world, callback)
        out.append(
            Record(
                {
                    "kind": "Static" if static["member"] != NO_MEMBER else "Sync" if record.members else "Empty",
                    "gen": world.gen(record.generation_id),
                    "leader": world.ids.spec(record.leader_id) if record.leader_id else NO_MEMBER,
                    "members": frozenset(world.ids.spec(m.member_id) for m in record.members),
                    "plan": _record_plan(world, record),
                    "stale": _callback_group(callback) is not world.group,
                    **static,
                }
            )
        )
    return tuple(out)


#: The client variables: each is, per spec client, a function of one ClientView field (the
#: field's name, what the incremental abstraction keys its cache on) converted to spec values.
CLIENT_VARIABLES: dict[str, tuple[str, Callable[[World, Any], TlaValue]]] = {
    "cphase": ("phase", lambda w, x: x),
    "cmember": ("member", lambda w, x: w.ids.spec(x)),
    "cgen": ("gen", lambda w, x: w.gen(x)),
    "cleader": ("leader", lambda w, x: x),
    "cmembers": ("members", lambda w, x: frozenset(map(w.ids.spec, x))),  # C-level map: no generator frame
    "cassign": ("assign", lambda w, x: frozenset(map(w.ids.spec, x))),
    "cwait": ("wait", lambda w, x: w.ids.spec(x)),
}


def client_variable(world: World, name: str, raws: tuple[Any, ...] | None = None) -> TlaFunction:
    """One client variable (CLIENT_VARIABLES) as the spec's function of the clients;
    `raws`: the field of each client in world.k.clients order, when already read."""
    field, value = CLIENT_VARIABLES[name]
    if raws is None:
        raws = tuple(getattr(world.clients[c], field) for c in world.k.clients)
    return TlaFunction((ModelValue(c), value(world, x)) for c, x in zip(world.k.clients, raws))


def history_kept(world: World, failover_history: bool | None) -> bool:
    """Whether store and leaderLog are kept: as the spec keeps them only when MaxFailovers > 0
    (the default follows the world's constants; kgc validate's module always allows a
    failover, so recordings for it keep them)."""
    return world.k.max_failovers > 0 if failover_history is None else failover_history


def timer_records(world: World, ops: list[Any]) -> tuple[Record, ...]:
    """The spec's `timers`: one record per live op, in firing order."""
    return tuple(timer_record(world, op) for op in ops)


_FIRST = itemgetter(0)
#: The one empty set every empty set-valued coordinator variable is (`frozenset(...) or _NO_IDS`):
#: a variable that stays empty is then the very object it was, which conform does not compare
#: again (IncrementalAbstraction.changed); a new empty frozenset each step was compared each step.
_NO_IDS: frozenset[Any] = frozenset()
_MEMBER_ID = attrgetter("member_id")
_AWAITING_JOIN = attrgetter("is_awaiting_join")
_AWAITING_SYNC = attrgetter("is_awaiting_sync")
_IS_NEW = attrgetter("is_new")


def coordinator_variables(
    world: World,
    history: bool,
    timers: Callable[[World, list[Any]], tuple[Record, ...]] = timer_records,
    observed: bool = False,
    fresh: bool = False,
) -> dict[str, TlaValue]:
    """Every spec variable read from the coordinator, its clock and timer and the driver's
    ghost history: all but the client variables (CLIENT_VARIABLES) and lastAction.
    Registers new member ids first (world.observe), as the client variables need them;
    `observed`: the caller knows nothing changed since the last observe (conform, right
    after apply_action's own), so world.ops is current. `timers` computes the timer
    records (the incremental abstraction passes a memo of them); `fresh`: the per-id
    variables too are computed anew (_per_id)."""
    ops = world.ops if observed else world.observe()
    ids = world.ids
    group = world.group
    if group is not None:
        members = list(group.members.values())
        timeouts, protocols = world.member_timeouts, world.member_protocols
        for m in members:
            seen = (m.session_timeout_ms, m.rebalance_timeout_ms)
            names = tuple(map(_FIRST, m.protocols))  # (name, metadata) pairs, C-level
            if timeouts.get(m.member_id) != seen or protocols.get(m.member_id) != names:
                timeouts[m.member_id], protocols[m.member_id] = seen, names
                world.per_member_version += 1
        gen = group.generation_id
        spec = ids.spec
        leaders = (
            frozenset(map(spec, [m for g, g_gen, m in world.self_leaders if g is group and g_gen == gen])) or _NO_IDS
        )
        settled = group.state in (GroupState.CompletingRebalance, GroupState.Stable)
        formed = world.formed[1] if settled and world.formed[0] is group else _NO_IDS
        # the member sets by C-level map/compress over the members (a generator per set was
        # a Python frame per member and set, a tenth of recomputing these variables)
        member_ids = list(map(_MEMBER_ID, members))
        live = {
            "gstate": group.state._value_,  # what .value returns, without enum's Python-level descriptor
            "generation": world.gen(gen),
            "leader": spec(group.leader_id) if group.leader_id else NO_MEMBER,
            "members": frozenset(map(spec, member_ids)) or _NO_IDS,
            "pending": frozenset(map(spec, group.pending_members)) or _NO_IDS,
            "awaitingJoin": frozenset(map(spec, compress(member_ids, map(_AWAITING_JOIN, members)))) or _NO_IDS,
            "awaitingSync": frozenset(map(spec, compress(member_ids, map(_AWAITING_SYNC, members)))) or _NO_IDS,
            "newMembers": frozenset(map(spec, compress(member_ids, map(_IS_NEW, members)))) or _NO_IDS,
            "pendingSync": frozenset(map(spec, group.pending_sync_members)) or _NO_IDS,
            "plan": (
                _plan_of(world, [m.assignment for m in members], frozenset(member_ids)) or _NO_IDS
                if group.state is GroupState.Stable
                else _NO_IDS
            ),
            "newMemberAdded": bool(group.new_member_added),
            "genLeaders": leaders,
            "genMembers": frozenset(map(spec, formed)) or _NO_IDS,
        }
    else:
        empty = _NO_IDS
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
    return {
        "now": _units(world, world.clock.now_ms(), "the clock"),
        "timers": timers(world, ops),
        "loaded": world.coordinator.is_coordinator_for(GROUP_ID),
        **live,
        "mtimeouts": _per_id(world, "mtimeouts", world.per_member_version, _member_timeouts, fresh),
        "nextId": ids.seen + 1,
        "store": _store(world, history),
        "failovers": world.failovers,
        "leaderLog": leader_log(world) if history else _NO_IDS,
        "writes": writes_of(world),
        **_static_variables(world, history, fresh),
        "loading": world.coordinator.is_loading(GROUP_ID),
        "protocol": (group.protocol_name or "") if group is not None else "",
        "mprotocols": _per_id(world, "mprotocols", world.per_member_version, _member_protocols, fresh),
        "ackLog": acknowledged_log(world) if history else _NO_IDS,
    }


def abstract_state(world: World, failover_history: bool | None = None) -> dict[str, TlaValue]:
    """The spec variables (all but lastAction) of the implementation's current state, each
    computed in full (the reference the incremental abstraction, incremental.py, is checked
    against). `failover_history`: see history_kept."""
    state = coordinator_variables(world, history_kept(world, failover_history), fresh=True)
    for name in CLIENT_VARIABLES:
        state[name] = client_variable(world, name)
    return {name: state[name] for name in SPEC_VARIABLES}


# ----------------------------------------------------------------------------------------------
# Clients receiving responses (the spec's DeliverJoin / DeliverSync / ReplyHeartbeat)
# ----------------------------------------------------------------------------------------------


def acknowledged_log(world: World) -> frozenset[tuple[int, int]]:
    """<<generation, leader>> of every generation whose leader's SyncGroup was answered as
    stored, over every incarnation of the group (the spec's ackLog, kept when
    MaxFailovers > 0)."""
    return frozenset((gen, world.ids.spec(m)) for gen, m in world.acknowledged)


def leader_log(world: World) -> frozenset[tuple[int, int]]:
    """<<generation, member>> of every NONE JoinGroup response naming its own member leader,
    over every incarnation of the group (the spec's leaderLog, kept when MaxFailovers > 0)."""
    return frozenset((gen, world.ids.spec(m)) for _, gen, m in world.self_leaders)
