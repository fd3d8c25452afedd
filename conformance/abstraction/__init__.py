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
    staticMembers   each instance (the spec's Instances; a static client sends the
                    group.instance.id "instance-<its clients>") -> id of
                    G.static_members[instance id], 0 when unmapped or G absent
    minstance       every spec id -> the instance its member was first seen with in G
                    (kept after the member is gone, as the spec keeps it), {} if none
    storeStatic     each instance -> id of the stored member with that instance id (kept
                    as `store` is: only when MaxFailovers > 0)
    replacement     GroupMetadata.replaceStaticMember (a static JoinGroup with member id ""
                    for a known instance): the old id's heartbeat is an orphan; in Stable the
                    plan, genMembers and the clients' lists/assignments name the new id
                    (World.renamed), and leaderLog/genLeaders of that generation too
    leaderLog       with MaxFailovers > 0: <<generation, member>> of every such response, across
                    every incarnation of the group (failovers); otherwise {}
    ackLog          with MaxFailovers > 0: <<generation, leader>> of G each time G went
                    CompletingRebalance -> Stable (the leader's SyncGroup answered as stored:
                    doSyncGroup's store callback with NONE on the live group), across every
                    incarnation, relabelled as leaderLog is; otherwise {}
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

from kgc.conformance.abstraction.actions import (  # noqa: F401
    StepResult,
    apply_action,
    apply_spec_step,
    normalized_last_action,
    not_enabled,
    prefer_leader,
    response_error,
    tie_to_fire,
)
from kgc.conformance.abstraction.constants import (  # noqa: F401
    CLIENT_HOST,
    GROUP_ID,
    NO_GEN,
    NO_MEMBER,
    PLAN_PREFIX,
    PROTOCOL_NAME,
    PROTOCOL_TYPE,
    SPEC_VARIABLES,
    TIMER_STEPS,
    AbstractionError,
    SpecConstants,
    UnknownAction,
    cfg_constants,
)
from kgc.conformance.abstraction.ids import IdMap, decode_plan, encode_plan  # noqa: F401
from kgc.conformance.abstraction.state import abstract_state, is_orphan, leader_log, timer_record  # noqa: F401
from kgc.conformance.abstraction.world import DELIVER, ClientView, Produced, World  # noqa: F401

__all__ = [
    "AbstractionError",
    "ClientView",
    "GROUP_ID",
    "PROTOCOL_NAME",
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
