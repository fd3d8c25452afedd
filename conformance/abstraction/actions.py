"""Spec steps as requests, responses and clock moves on the implementation: apply_action maps
a spec step's lastAction to what performs it, the deliver functions update the client views as
the spec's DeliverJoin / DeliverSync / ReplyHeartbeat do, and tie_to_fire / prefer_leader steer
the choices Kafka leaves to HashMap order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kgc.conformance.abstraction.constants import (
    CLIENT_HOST,
    GROUP_ID,
    NO_GEN,
    NO_MEMBER,
    PROTOCOL_TYPE,
    TIMER_STEPS,
    UnknownAction,
)
from kgc.conformance.abstraction.ids import decode_plan, encode_plan
from kgc.conformance.abstraction.state import timer_record
from kgc.conformance.abstraction.world import DELIVER, ClientView, World
from kgc.impl.coordinator import (
    JoinGroupResult,
    LeaveGroupResult,
    LeaveMemberIdentity,
    SyncGroupResult,
)
from kgc.impl.errors import Errors
from kgc.impl.group import GroupState
from kgc.impl.store import APPEND_ERROR_TO_COORDINATOR_ERROR, coordinator_error_for_append
from kgc.spec.values import ModelValue, Record


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
    elif err in (Errors.GROUP_MAX_SIZE_REACHED, Errors.FENCED_INSTANCE_ID):
        view.reset("Down")  # fatal to the consumer (FencedInstanceIdException for a static one)
    else:
        view.rejoins()


def _deliver_sync(world: World, view: ClientView, r: SyncGroupResult) -> None:
    err = r.error
    if err is Errors.NONE:
        assign = frozenset(world.current_id(m) for m in decode_plan(r.member_assignment))
        view.phase, view.assign, view.wait = "Stable", assign, ""
    elif err is Errors.UNKNOWN_MEMBER_ID:
        view.reset("Unjoined")
    elif err is Errors.ILLEGAL_GENERATION:
        view.loses_generation()
    elif err is Errors.FENCED_INSTANCE_ID:
        view.reset("Down")
    else:
        view.rejoins()


def _deliver_sync_protocol(world: World, view: ClientView, r: SyncGroupResult) -> None:
    """The spec's SyncGroupInconsistentProtocol: its INCONSISTENT_GROUP_PROTOCOL answer
    leaves the client as it was; an error found before the protocol check is delivered as
    any SyncGroup's."""
    if r.error is not Errors.INCONSISTENT_GROUP_PROTOCOL:
        _deliver_sync(world, view, r)


def _deliver_heartbeat(world: World, view: ClientView, err: Errors) -> None:
    if err is Errors.REBALANCE_IN_PROGRESS:
        if view.phase == "Stable":
            view.rejoins()
    elif err is Errors.UNKNOWN_MEMBER_ID:
        view.reset("Unjoined")
    elif err is Errors.ILLEGAL_GENERATION:
        view.loses_generation()
    elif err is Errors.FENCED_INSTANCE_ID:
        view.reset("Down")


def _deliver_leave(world: World, view: ClientView, r: LeaveGroupResult) -> None:
    pass  # the consumer closed before sending it


def _deliver_commit(world: World, view: ClientView, errors: Mapping[str, Errors]) -> None:
    """The spec's ReplyCommit (ConsumerCoordinator.OffsetCommitResponseHandler): as a
    heartbeat's answer, except that REBALANCE_IN_PROGRESS always asks for a rejoin."""
    err = commit_error(errors)
    if err is Errors.REBALANCE_IN_PROGRESS:
        view.rejoins()
    else:
        _deliver_heartbeat(world, view, err)


def commit_error(errors: Mapping[str, Errors]) -> Errors:
    """An OffsetCommit's answer as one error: the driver commits one partition, and the
    coordinator answers every partition of a commit alike."""
    return next(iter(errors.values()), Errors.NONE)


DELIVER.update(
    join=_deliver_join,
    sync=_deliver_sync,
    sync_protocol=_deliver_sync_protocol,
    heartbeat=_deliver_heartbeat,
    leave=_deliver_leave,
    commit=_deliver_commit,
)

#: The partition the driver's consumers commit (one is enough: answers are per request).
COMMIT_PARTITION = "t-0"


NOT_A_RESPONSE = "NOT_A_RESPONSE"


def response_error(result: Any) -> str:
    """The error name the spec records as lastAction.resp for a response. A coordinator defect
    (a handler answering None, a bare value, an OffsetCommit or LeaveGroup answer with None in
    place of an error) is recorded as a response no spec action has, so conform diverges and
    fuzz's ResponseAllowed reports it, instead of the harness failing with an AttributeError."""
    if isinstance(result, dict):
        result = commit_error(result)
    elif isinstance(result, LeaveGroupResult):
        if result.error is Errors.NONE and result.member_responses:
            result = result.member_responses[0][2]
        else:
            result = result.error
    error = result if isinstance(result, Errors) else getattr(result, "error", None)
    return error.name if isinstance(error, Errors) else NOT_A_RESPONSE


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


def client_name(la: Mapping[str, Any]) -> str:
    c = la.get("client")
    return c.name if isinstance(c, ModelValue) else str(c)


def _protocols(world: World, view: ClientView, changed: bool) -> list[tuple[str, str]]:
    """The subscription sent: the client's protocol names (the spec's ProtocolsOf). `changed`
    (the spec's chg) must make member.matches fail and its absence make it hold on the bytes,
    so an unchanged join resends the metadata the coordinator stored for the member (it may
    have kept an older version, e.g. after a failover). A reloaded member holds only the
    group's protocol: then the names differ, matches fails as in the spec, and the current
    version is sent."""
    names = world.k.protocols_of(view.name)
    if changed:
        view.subscription += 1
    else:
        group = world.group
        member = group.members.get(view.member) if group is not None and view.member else None
        if member is not None and tuple(n for n, _ in member.protocols) == names:
            return list(member.protocols)
    return [(name, f"{view.name}-v{view.subscription}") for name in names]


def _join(world: World, c: str, rk: bool, changed: bool, res: StepResult) -> None:
    view = world.clients[c]
    member_id = view.member
    protocols = _protocols(world, view, changed)
    token = world._request(view)
    instance = world.k.instance_id_of(c)
    # A static client's flag is supportsSkippingAssignment (JoinGroup v9+); KafkaApis asks a
    # known member id only of dynamic clients (requireKnownMemberId: v4+ and no instance id).
    skip = rk and instance is not None
    rk = rk and instance is None
    res.requests.append(
        f"JoinGroup(member={member_id!r}, instance={instance!r}, requireKnownMemberId={rk}, "
        f"skipAssignment={skip}, metadata={protocols[0][1]})"
    )
    group = world.group
    replaced = group.static_members.get(instance) if group is not None and instance and not member_id else None
    generation = group.generation_id if group is not None else NO_GEN
    world.coordinator.handle_join_group(
        GROUP_ID,
        member_id,
        instance,
        rk,
        c,
        CLIENT_HOST,
        world.k.ms(world.k.timeouts_of(c)[1]),
        world.k.ms(world.k.timeouts_of(c)[0]),
        PROTOCOL_TYPE,
        protocols,
        world._callback(c, token, "join"),
        supports_skip_assignment=skip,
    )
    if replaced is not None and group is not None and group.static_members.get(instance) not in (None, replaced):
        world.replaced_static_member(group, generation, replaced, group.static_members[instance])
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
        GROUP_ID,
        view.gen,
        view.member,
        None,
        None,
        world.k.instance_id_of(c),
        assignment,
        world._callback(c, token, "sync"),
    )
    if world._parks(view, token):
        view.phase, view.wait = "SyncWait", view.member


def _sync_inconsistent_protocol(world: World, c: str, res: StepResult) -> None:
    """The spec's SyncGroupInconsistentProtocol: a SyncGroup v5 with a protocol type or name
    the group does not have (the spec does not say which field differs): the type on even
    generations, the name (the group's type) on odd ones, so that runs reach both of
    validateSyncGroup's tests."""
    view = world.clients[c]
    token = world._request(view)
    wrong = "name" if view.gen % 2 else "type"
    res.requests.append(f"SyncGroup(member={view.member!r}, generation={view.gen}, protocol {wrong} not the group's)")
    group = world.group
    world.coordinator.handle_sync_group(
        GROUP_ID,
        view.gen,
        view.member,
        PROTOCOL_TYPE if wrong == "name" else "not-" + PROTOCOL_TYPE,
        "not-" + (group.protocol_name or "") if wrong == "name" and group is not None else None,
        world.k.instance_id_of(c),
        {},
        world._callback(c, token, "sync_protocol"),
    )
    view.calling = 0


def _heartbeat(world: World, c: str, res: StepResult) -> None:
    view = world.clients[c]
    token = world._request(view)
    res.requests.append(f"Heartbeat(member={view.member!r}, generation={view.gen})")
    world.coordinator.handle_heartbeat(
        GROUP_ID, view.member, world.k.instance_id_of(c), view.gen, world._callback(c, token, "heartbeat")
    )
    view.calling = 0


def _commit(world: World, c: str, res: StepResult) -> None:
    """The spec's HandleCommitOffsets: the consumer commits with its member id and generation."""
    view = world.clients[c]
    token = world._request(view)
    res.requests.append(f"OffsetCommit(member={view.member!r}, generation={view.gen})")
    world.coordinator.handle_commit_offsets(
        GROUP_ID,
        view.member,
        world.k.instance_id_of(c),
        view.gen,
        {COMMIT_PARTITION: world.step},
        world._callback(c, token, "commit"),
    )
    view.calling = 0


def stale_generation(world: World, cur: bool) -> int:
    """The generation a StaleHeartbeat(c, cur) carries: the group's, or the one before it
    (handleHeartbeat answers every older generation alike)."""
    group = world.group
    current = group.generation_id if group is not None else 0
    return current if cur else current - 1


def _stale_heartbeat(world: World, c: str, cur: bool, res: StepResult) -> None:
    """The spec's StaleHeartbeat: a heartbeat the client sent before it dropped its
    generation for a rejoin; the client no longer listens (its response is ignored)."""
    view = world.clients[c]
    gen = stale_generation(world, cur)
    token = world._request(None)  # not delivered: the client no longer waits for it
    res.requests.append(f"Heartbeat(member={view.member!r}, generation={gen}) sent before the rejoin")
    world.coordinator.handle_heartbeat(GROUP_ID, view.member, None, gen, world._callback(c, token, "heartbeat"))


def _static_member_of(world: World, c: str) -> str | None:
    """The member id client c's group.instance.id maps to in the loaded group (None: none)."""
    group = world.group
    instance = world.k.instance_id_of(c)
    if group is None or instance is None or not world.coordinator.is_coordinator_for(GROUP_ID):
        return None
    return group.static_members.get(instance)


def _leave_by_instance_id(world: World, c: str, res: StepResult) -> None:
    """The spec's LeaveGroupByInstanceId: an admin client removes c's instance's member by
    group.instance.id alone (member id ""); c's consumer is not told."""
    instance = world.k.instance_id_of(c)
    token = world._request(None)  # the admin's request: no consumer waits for the answer
    res.requests.append(f"LeaveGroup(member='', instance={instance!r}) from an admin client")
    world.coordinator.handle_leave_group(
        GROUP_ID, [LeaveMemberIdentity("", instance)], world._callback(c, token, "leave")
    )


def _leave(world: World, c: str, res: StepResult) -> None:
    view = world.clients[c]
    member_id = view.member
    view.reset("Down")
    token = world._request(None)  # nobody is listening: the consumer has closed
    res.requests.append(f"LeaveGroup(member={member_id!r})")
    world.coordinator.handle_leave_group(
        GROUP_ID,
        [LeaveMemberIdentity(member_id, world.k.instance_id_of(c))],
        world._callback(c, token, "leave"),
    )


def _fire(world: World, res: StepResult, chosen: Any = None, head: Record | None = None) -> None:
    """Fire the earliest timer task, or `chosen`, one that ties with it (see `tie_to_fire`).
    `head`: the earliest task's timer record, when the caller has it."""
    if chosen is not None:
        res.fired = timer_record(world, chosen)
        deadline = chosen.deadline_ms()
        res.requests.append(f"{type(chosen).__name__}.run() at {deadline} (a tie: HashMap order)")
        world.clock.set_ms(deadline)
        chosen.run()
        res.ran = 1
        return
    if head is not None:
        res.fired = head
    else:
        tasks = world.timer.live_tasks()
        if tasks:
            res.fired = timer_record(world, tasks[0])
    res.requests.append("SystemTimer.fire_next()")
    res.ran = 1 if world.timer.fire_next() else 0


#: apply_spec_step's `tie` when the caller has not looked: it asks tie_to_fire itself.
UNKNOWN_TIE: Any = object()


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


def apply_spec_step(
    world: World,
    spec_before: Mapping[str, Any],
    spec_after: Mapping[str, Any],
    tie: Any = UNKNOWN_TIE,
    head: Record | None = None,
) -> StepResult:
    """apply_action for one step of a spec trace, steered to the choices the spec made where
    Kafka leaves them to HashMap order (prefer_leader, tie_to_fire). `tie`: tie_to_fire's
    answer for this step when the caller has it, `head` the timer record of the earliest live
    task (conform reads the head against the abstraction's own record first: the head's record
    rebuilt twice more per timer step was waste)."""
    la = spec_after["lastAction"]
    if tie is UNKNOWN_TIE:
        tie = None
        if str(la["name"]) in TIMER_STEPS and spec_before["timers"]:
            tie = tie_to_fire(world, spec_before["timers"][0])
    if spec_after["leader"] != spec_before["leader"]:
        prefer_leader(world, spec_after["leader"])
    return apply_action(world, la, tie, head)


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


def apply_action(world: World, la: Mapping[str, Any], fire: Any = None, head: Record | None = None) -> StepResult:
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
    if name in VIEW_ONLY_ACTIONS:
        return apply_client_event(world, name, client_name(la))
    world.step += 1
    world.step_response = None
    world._step_token = -1
    res = StepResult(name)
    c = client_name(la)
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
    elif name == "SyncGroupInconsistentProtocol":
        _sync_inconsistent_protocol(world, c, res)
    elif name == "Heartbeat":
        _heartbeat(world, c, res)
    elif name == "StaleHeartbeat":
        _stale_heartbeat(world, c, flag, res)
    elif name == "HandleCommitOffsets":
        _commit(world, c, res)
    elif name == "LeaveGroup":
        _leave(world, c, res)
    elif name == "LeaveGroupByInstanceId":
        _leave_by_instance_id(world, c, res)
    elif name in TIMER_STEPS:
        _fire(world, res, fire, head)
    elif name == "AdvanceTime":
        _advance(world, int(la.get("dt", 1)), res)
    elif name == "GroupUnload":
        res.requests.append("on_group_unloaded")
        world.unload()
    elif name == "GroupLoad":
        res.requests.append("on_group_loaded")
        world.load()
    elif name == "LoadBegin":
        res.requests.append("on_group_load_begin")
        world.coordinator.on_group_load_begin(GROUP_ID)
    elif name == "GroupUnloadDuringLoad":
        res.requests.append("on_group_unloaded")
        world.coordinator.on_group_unloaded(GROUP_ID)
    elif name == "StoreCallback":
        store_gen = _head_write_gen(world)
        append = _append_error(la)
        res.requests.append(f"DeferredGroupStore.complete_next({append.name})")
        group = world.group
        statics = dict(group.static_members) if group is not None else {}
        world.complete_write(append)
        # a static rejoin's failed append renames the member back (replaceStaticMember)
        for instance, before in statics.items():
            after = group.static_members.get(instance) if group is not None else None
            if group is not None and after not in (None, before):
                world.replaced_static_member(group, group.generation_id, before, after)
        res.response = coordinator_error_for_append(append).name
    else:
        raise UnknownAction(f"no implementation mapping for spec action {name!r}")
    if world.step_response is not None:
        res.response = response_error(world.step_response)
    world.observe()
    if name in TIMER_STEPS and res.fired is not None:
        pre_member, pre_gen = res.fired["member"], res.fired["gen"]
    if name == "StoreCallback":
        pre_gen = store_gen
    if name == "StaleHeartbeat":
        pre_gen = world.gen(stale_generation(world, flag))
    new_ids = world.ids.seen - ids_before
    newest = (world.ids.peek(world.ids.newest(1)[0]) or NO_MEMBER) if new_ids == 1 else NO_MEMBER
    res.last_action = Record.of_fields(
        {
            "name": name,
            "client": ModelValue(c) if view is not None else ModelValue("NoClient"),
            "member": pre_member,
            "gen": pre_gen,
            "flag": flag if name in ("JoinGroupUnknownMember", "JoinGroupKnownMember", "StaleHeartbeat") else False,
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


def apply_client_event(world: World, name: str, client: str) -> StepResult:
    """apply_action for a VIEW_ONLY_ACTIONS step: the client's view changes and nothing else
    (no request, no clock move, no id handed out, so no observe). About two thirds of a
    simulated trace's steps are these, so their lastAction record, which depends on the
    action, the client and the member and gen its view had, comes from a memo
    (_CLIENT_EVENT_ACTIONS): conform compares it with the spec's in one dict comparison."""
    world.step += 1
    world.step_response = None
    world._step_token = -1
    view = world.clients[client]
    ids_before = world.ids.seen
    member, gen = _action_member_gen(world, name, view)
    if name == "ClientRestart":
        view.phase = "Unjoined"
    elif name in ("ClientAbandon", "ClientRejoin"):
        view.rejoins()
    else:
        view.reset("Down")  # ClientCrash; NoIdLeft: the model ran out of ids, the client gives up
    # _action_member_gen registers the view's ids: one never seen before is this step's newMember
    newest = (world.ids.peek(world.ids.newest(1)[0]) or NO_MEMBER) if world.ids.seen - ids_before == 1 else NO_MEMBER
    key = (name, client, member, gen, newest, world.k.normalize)
    la = _CLIENT_EVENT_ACTIONS.get(key)
    if la is None:
        if len(_CLIENT_EVENT_ACTIONS) >= _CLIENT_EVENT_MEMO_LIMIT:
            _CLIENT_EVENT_ACTIONS.clear()
        la = Record(
            {
                "name": name,
                "client": ModelValue(client),
                "member": member,
                "gen": gen,
                "flag": False,
                "newMember": newest,
                "resp": "NONE",
                "dt": 0,
            }
        )
        _CLIENT_EVENT_ACTIONS[key] = la = normalized_last_action(la) if world.k.normalize else la
    res = StepResult(name)
    res.last_action = la
    return res


#: (action, client, member, gen, newMember, Normalize) -> a client event's lastAction record
_CLIENT_EVENT_ACTIONS: dict[tuple[Any, ...], Record] = {}
_CLIENT_EVENT_MEMO_LIMIT = 50_000


def _head_write_gen(world: World) -> int:
    from kgc.conformance.abstraction.state import writes_of

    writes = writes_of(world)
    return int(writes[0]["gen"]) if writes else NO_GEN


def _append_error(la: Mapping[str, Any]) -> Errors:
    """The append error a StoreCallback step completes the write with: `append` when the
    driver names it (a scenario's `store` step), else one whose storeGroup translation is the
    step's resp (a spec step: every append error with the same translation acts alike)."""
    if "append" in la:
        return Errors[str(la["append"])]
    resp = str(la.get("resp", "NONE"))
    if resp == "NONE":
        return Errors.NONE
    for append, coordinator in APPEND_ERROR_TO_COORDINATOR_ERROR.items():
        if coordinator.name == resp:
            return append
    return Errors[resp]


def normalized_last_action(la: Record) -> Record:
    """The spec's LA(...) under Normalize: the liveness models keep only what their formulas
    read (who acted, on which member, which id was handed out, whether time moved), so that
    lastAction splits as few states as possible."""
    return Record({**la, "gen": NO_GEN, "resp": "", "dt": 1 if la["dt"] > 0 else 0})


#: The spec actions apply_action performs on the acting client's view alone: no request, no
#: clock move (the incremental abstraction reuses the coordinator's variables after them).
VIEW_ONLY_ACTIONS = frozenset({"ClientCrash", "NoIdLeft", "ClientRestart", "ClientAbandon", "ClientRejoin"})

_NOT_REQUESTS = TIMER_STEPS | {
    "AdvanceTime",
    "GroupUnload",
    "GroupLoad",
    "StoreCallback",
    "LoadBegin",
    "GroupUnloadDuringLoad",
}


def _action_member_gen(world: World, name: str, view: ClientView | None) -> tuple[int, int]:
    """The member and gen parameters the spec's LA(...) gives each action."""
    if view is None:
        return NO_MEMBER, NO_GEN
    if name == "LeaveGroupByInstanceId":  # the member the instance maps to, not the client's
        current = _static_member_of(world, view.name)
        return (world.ids.spec(current) if current else NO_MEMBER), NO_GEN
    member = world.ids.spec(view.member)
    if name in (
        "SyncGroupLeader",
        "SyncGroupFollower",
        "SyncGroupInconsistentProtocol",
        "Heartbeat",
        "ClientRejoin",
        "HandleCommitOffsets",
    ):
        return member, world.gen(view.gen)
    if name == "ClientAbandon":
        return world.ids.spec(view.wait), NO_GEN
    if name == "StaleHeartbeat":
        return member, NO_GEN  # apply_action fills in the generation the heartbeat carried
    if name in ("JoinGroupUnknownMember", "ClientRestart", "NoIdLeft"):
        return NO_MEMBER, NO_GEN
    return member, NO_GEN


def not_enabled(world: World, la: Mapping[str, Any]) -> str | None:
    """Why the spec step `la` could not happen in the implementation's current state (the
    spec's enabling conditions read on the client views and the timer), or None if it can.
    After a divergence the views may no longer allow what the spec does next."""
    name = str(la["name"])
    view = world.clients.get(client_name(la))
    group = world.group
    loaded = world.coordinator.is_coordinator_for(GROUP_ID)
    if view is not None:
        phase = view.phase
        pending = loaded and group is not None and view.member in group.pending_members
        ok = {
            "JoinGroupUnknownMember": phase == "Unjoined" and not view.member,
            "JoinGroupPendingMember": phase == "Unjoined" and bool(view.member) and pending,
            "JoinGroupKnownMember": phase == "Unjoined" and bool(view.member) and not pending,
            "SyncGroupLeader": phase in ("Joined", "Stable") and view.leader,
            "SyncGroupFollower": phase in ("Joined", "Stable") and not view.leader,
            "SyncGroupInconsistentProtocol": phase in ("Joined", "Stable"),
            "Heartbeat": phase in ("Joined", "SyncWait", "Stable"),
            "HandleCommitOffsets": phase in ("Joined", "Stable"),
            "LeaveGroup": phase != "Down" and bool(view.member),
            "ClientCrash": phase != "Down",
            "ClientRestart": phase == "Down",
            "ClientAbandon": phase in ("JoinWait", "SyncWait"),
            "ClientRejoin": phase in ("Joined", "Stable"),
            "StaleHeartbeat": phase == "Unjoined"
            and bool(view.member)
            and group is not None
            and group.generation_id >= 1,
            "NoIdLeft": (phase == "Unjoined" and not view.member and len(world.ids) >= world.k.num_ids),
            "LeaveGroupByInstanceId": _static_member_of(world, view.name) is not None
            and group is not None
            and not group.is_(GroupState.Dead),
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
    loading = world.coordinator.is_loading(GROUP_ID)
    if name == "LoadBegin" and (loaded or loading):
        return "the group is loaded or loading"
    if name == "GroupUnloadDuringLoad" and not loading:
        return "the group is not loading"
    if name == "StoreCallback":
        store = world.deferred_store()
        if store is None or not store.pending_for(GROUP_ID):
            return "no group-metadata append in flight"
    return None
