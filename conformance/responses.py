"""Response properties: every answer the coordinator gives is one Kafka 3.9 allows for that
request in the state it arrived in.

The state properties (properties.py) and timed liveness (timed_liveness.py) look at the group;
a wrong error code, a stale generation accepted or a follower's SyncGroup installing its
assignment leave a group the spec allows and are seen only in the answers. So the Hypothesis
machine runs a `response_checked` subclass of the coordinator under test: each request's
situation is read from the coordinator's group before the handler runs (group state, who the
member is, whether its generation is current), its answer is matched to it through the
callback, and the answer is checked against RESPONSE_TABLE, an explicit table (request kind x
group state x member situation -> error codes allowed at once, and allowed later when the
request is parked). The table is written from Kafka 3.9's GroupCoordinator.scala, each row
naming the branch of handleJoinGroup / handleSyncGroup / handleHeartbeat / handleLeaveGroup /
handleCommitOffsets it transcribes; it is read from Kafka's code, not from impl/coordinator.py, so a change to the
implementation cannot move the oracle with it.

Properties (names as reported):
- ResponseAllowed: the answer's error code is in the table's row (at once or, parked, later).
- StaleGenerationRejected: a SyncGroup, Heartbeat or OffsetCommit of a member with a generation
  other than the group's is answered ILLEGAL_GENERATION (doSyncGroup, handleHeartbeat,
  validateOffsetCommit).
- AssignmentFromCurrentLeader: a member's assignment changes to a non-empty one only to what
  the leader of the group's current generation sent in its SyncGroup in CompletingRebalance
  (doSyncGroup: only `group.isLeader(memberId)` stores an assignment), and a SyncGroup
  answered NONE carries that leader's assignment for the member.
- JoinAnsweredBeforeRemoval: a parked JoinGroup is answered before its member leaves the group
  (removeMemberAndUpdateGroup: maybeInvokeJoinCallback before group.remove).
- GenerationMembersJoined: every dynamic member the leader's JoinGroup response lists for a
  generation got its own JoinGroup answer for that generation (onCompleteJoin removes the
  members that did not rejoin and answers the rest); static members are kept without one.
- FailedStaticReplacementReverted: a static member's JoinGroup that replaced the instance's
  member in Stable and is answered with its store's error leaves the instance mapped to the
  member id it had before (updateStaticMemberAndRebalance's callback: "Failed to persist
  member.id of the given static member, revert the update", replaceStaticMember back).
- LeftMemberRemoved: a member (or pending member) whose own LeaveGroup is answered NONE for it
  is no longer in the group after the step (handleLeaveGroup: removeCurrentMemberFromGroup,
  removePendingMemberAndUpdateGroup), nor is the member an admin's LeaveGroup named by its
  group.instance.id alone (the same branch, with currentStaticMemberId).
- JoinParkedOnlyInRebalance: after a step, no member of a Stable, CompletingRebalance or Empty
  group has a JoinGroup parked unless an append of the group to the store is still pending
  (a JoinGroup waits in the join purgatory, which only PreparingRebalance has and onCompleteJoin
  empties; the one exception is a static member replaced in Stable, answered by storeGroup's
  callback in updateStaticMemberAndRebalance).
- JoinCompletedOnceAllJoined: after a step, a group in a PreparingRebalance that did not begin
  from Empty is not left with every member's JoinGroup parked and no pending member: the step
  that made it so completes the join (hasAllMembersJoined -> DelayedJoin.tryComplete ->
  onCompleteJoin, through checkAndComplete in handleJoinGroup, removeMemberAndUpdateGroup and
  removePendingMemberAndUpdateGroup). A rebalance begun from Empty waits in InitialDelayedJoin,
  whose tryComplete is false.
- LoadedAsStored: a group the coordinator takes over (onGroupLoaded; GroupMetadataManager's
  loadGroup) is the last stored record: its generation, protocol type and name, leader and
  members (id, group.instance.id, timeouts, the record's protocol type, the chosen protocol's
  subscription, assignment), Stable with members and Empty without; no group when none was
  stored; a group already hosted is kept as it is.

Which groups are loading or not hosted here is what the coordinator was told (its
onGroupLoadBegin, onGroupUnloaded, onGroupLoaded calls), not its own bookkeeping, so a
coordinator that forgets a loading window is judged by the window it was given.

Requests carrying a group.instance.id have their own situations (`static_who`): Kafka 3.9's
validateCurrentMember (FENCED_INSTANCE_ID when the instance maps to another member id,
UNKNOWN_MEMBER_ID when it maps to none) before the dynamic checks, and a static JoinGroup with
no member id replacing the instance's member (updateStaticMemberAndRebalance). A static
member's parked JoinGroup or SyncGroup may also end FENCED_INSTANCE_ID (replaceStaticMember
fences the old member's callbacks). Batch LeaveGroups (several members) are not judged.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kgc.impl.coordinator import GroupCoordinator, JoinGroupResult, LeaveGroupResult, SyncGroupResult
from kgc.impl.errors import Errors
from kgc.impl.store import APPEND_ERROR_TO_COORDINATOR_ERROR

__all__ = [
    "RESPONSE_PROPERTIES",
    "RESPONSE_TABLE",
    "ResponseOracle",
    "Row",
    "response_checked",
]

RESPONSE_PROPERTIES = (
    "ResponseAllowed",
    "StaleGenerationRejected",
    "AssignmentFromCurrentLeader",
    "JoinAnsweredBeforeRemoval",
    "GenerationMembersJoined",
    "FailedStaticReplacementReverted",
    "LeftMemberRemoved",
    "JoinParkedOnlyInRebalance",
    "JoinCompletedOnceAllJoined",
    "LoadedAsStored",
)

UNKNOWN_MEMBER_ID = ""  # JoinGroupRequest.UNKNOWN_MEMBER_ID


@dataclass(frozen=True)
class Row:
    """Allowed error names: `now` in the handler's own call, `later` once parked (empty: the
    request must not be parked); `cite` is the Kafka branch the row transcribes."""

    now: frozenset[str]
    later: frozenset[str] = frozenset()
    cite: str = ""


def _row(now: str, later: str = "", cite: str = "") -> Row:
    return Row(frozenset(now.split()), frozenset(later.split()), cite)


#: A parked JoinGroup ends answered by onCompleteJoin (NONE), by removeMemberAndUpdateGroup
#: when its member times out or leaves (UNKNOWN_MEMBER_ID), or by onGroupUnloaded
#: (NOT_COORDINATOR).
_JOIN_LATER = "NONE UNKNOWN_MEMBER_ID NOT_COORDINATOR"
#: A parked SyncGroup ends answered by setAndPropagateAssignment (NONE), by
#: resetAndPropagateAssignmentError from prepareRebalance (REBALANCE_IN_PROGRESS) or with the
#: store's error (GroupMetadataManager.storeGroup maps append errors to
#: COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR / REBALANCE_IN_PROGRESS / UNKNOWN_SERVER_ERROR),
#: or by onGroupUnloaded (NOT_COORDINATOR).
_SYNC_LATER = "NONE REBALANCE_IN_PROGRESS COORDINATOR_NOT_AVAILABLE NOT_COORDINATOR UNKNOWN_SERVER_ERROR"
_LIVE = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable")
#: What GroupMetadataManager.storeGroup's callback can carry after a failed append (the append
#: error mapped: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, REBALANCE_IN_PROGRESS for a timeout,
#: UNKNOWN_SERVER_ERROR for the rest).
_STORE_ERRORS = "COORDINATOR_NOT_AVAILABLE NOT_COORDINATOR REBALANCE_IN_PROGRESS UNKNOWN_SERVER_ERROR"

#: (kind, where, who) -> Row. `where`: the group's state, or NotCoordinator / Loading /
#: NoGroup (validateGroupStatus, groupManager.getGroup None). `who`: for join "new" (unknown
#: member id), "new-rk" (the same with requireKnownMemberId), "pending", "member",
#: "stranger" (an id the group does not know), "bad-session", "full" (acceptJoiningMember
#: refuses it); for sync and heartbeat
#: "leader" / "follower" (a member with the group's generation), "stale" (a member with
#: another generation), "stranger" (anyone else, pending members included), for sync
#: "inconsistent" (a current member naming a protocol type or name not the group's); for commit the
#: same, and "unversioned" (generation -1, the admin client or a consumer without group
#: management) when there is no group or it is Empty; for leave "member", "pending",
#: "stranger". "*" matches any. A request with a group.instance.id adds (static_who):
#: "fenced" (the instance maps to another member id), "unknown-instance" (it maps to none), for
#: join "static-replace" (no member id, the instance maps to a member) and "static-pending" (a
#: pending member's id with an instance id); otherwise it is classified as a dynamic request.
#: A join "new" or "pending" in Stable while every member has a JoinGroup parked is
#: "new-all-joined" / "pending-all-joined".
RESPONSE_TABLE: dict[tuple[str, str, str], Row] = {
    # -- validateGroupStatus, first in every handler ---------------------------------------
    ("*", "NotCoordinator", "*"): _row("NOT_COORDINATOR", cite="validateGroupStatus: !isCoordinatorForGroup"),
    ("join", "Loading", "*"): _row("COORDINATOR_LOAD_IN_PROGRESS", cite="handleJoinGroup: validateGroupStatus"),
    ("sync", "Loading", "*"): _row(
        "REBALANCE_IN_PROGRESS", cite="handleSyncGroup: COORDINATOR_LOAD_IN_PROGRESS -> REBALANCE_IN_PROGRESS"
    ),
    ("heartbeat", "Loading", "*"): _row("NONE", cite='handleHeartbeat: "the group is still loading, respond blindly"'),
    ("leave", "Loading", "*"): _row("COORDINATOR_LOAD_IN_PROGRESS", cite="handleLeaveGroup: validateGroupStatus"),
    ("commit", "Loading", "*"): _row("COORDINATOR_LOAD_IN_PROGRESS", cite="handleCommitOffsets: validateGroupStatus"),
    ("*", "Dead", "*"): _row(
        "COORDINATOR_NOT_AVAILABLE", cite="doJoinGroup / doSyncGroup / handleHeartbeat: group.is(Dead)"
    ),
    # -- handleJoinGroup -------------------------------------------------------------------
    ("join", "*", "bad-session"): _row(
        "INVALID_SESSION_TIMEOUT", cite="handleJoinGroup: sessionTimeoutMs outside group.min/max.session.timeout.ms"
    ),
    ("join", "*", "full"): _row(
        "GROUP_MAX_SIZE_REACHED",
        cite="handleJoinGroup: !acceptJoiningMember (PreparingRebalance: not awaiting and numAwaiting >= "
        "group.max.size; CompletingRebalance, Stable: not a member and size >= group.max.size)",
    ),
    ("join", "NoGroup", "member"): _row("UNKNOWN_MEMBER_ID", cite="handleJoinGroup: getGroup None, member id known"),
    ("join", "NoGroup", "pending"): _row("UNKNOWN_MEMBER_ID", cite="handleJoinGroup: getGroup None, member id known"),
    ("join", "NoGroup", "stranger"): _row("UNKNOWN_MEMBER_ID", cite="handleJoinGroup: getGroup None, member id known"),
    ("join", "NoGroup", "new"): _row(
        "INCONSISTENT_GROUP_PROTOCOL", _JOIN_LATER, "handleJoinGroup: addGroup(Empty), doUnknownJoinGroup"
    ),
    ("join", "NoGroup", "new-rk"): _row(
        "MEMBER_ID_REQUIRED INCONSISTENT_GROUP_PROTOCOL", cite="doUnknownJoinGroup: requireKnownMemberId"
    ),
    ("join", "Empty", "new-rk"): _row(
        "MEMBER_ID_REQUIRED INCONSISTENT_GROUP_PROTOCOL",
        cite="doUnknownJoinGroup: requireKnownMemberId -> addPendingMember, MEMBER_ID_REQUIRED",
    ),
    ("join", "Empty", "new"): _row(
        "INCONSISTENT_GROUP_PROTOCOL",
        _JOIN_LATER,
        "doUnknownJoinGroup -> addMemberAndRebalance: InitialDelayedJoin (tryComplete false: always parked)",
    ),
    ("join", "Empty", "pending"): _row(
        "INCONSISTENT_GROUP_PROTOCOL", _JOIN_LATER, "doJoinGroup: isPendingMember -> addMemberAndRebalance"
    ),
    ("join", "Empty", "member"): _row("UNKNOWN_MEMBER_ID", cite="doJoinGroup: case Empty | Dead"),
    ("join", "Empty", "stranger"): _row(
        "UNKNOWN_MEMBER_ID INCONSISTENT_GROUP_PROTOCOL", cite="doJoinGroup: !group.has"
    ),
    ("join", "PreparingRebalance", "new-rk"): _row(
        "MEMBER_ID_REQUIRED INCONSISTENT_GROUP_PROTOCOL",
        cite="handleJoinGroup: acceptJoiningMember; doUnknownJoinGroup: requireKnownMemberId",
    ),
    ("join", "PreparingRebalance", "new"): _row(
        "NONE INCONSISTENT_GROUP_PROTOCOL",
        _JOIN_LATER,
        "addMemberAndRebalance; handleJoinGroup: joinPurgatory.checkAndComplete may complete the join at once",
    ),
    ("join", "PreparingRebalance", "pending"): _row(
        "NONE INCONSISTENT_GROUP_PROTOCOL",
        _JOIN_LATER,
        "doJoinGroup: isPendingMember -> addMemberAndRebalance; checkAndComplete",
    ),
    ("join", "PreparingRebalance", "member"): _row(
        "NONE INCONSISTENT_GROUP_PROTOCOL",
        _JOIN_LATER,
        "doJoinGroup: case PreparingRebalance -> updateMemberAndRebalance; acceptJoiningMember sheds the last",
    ),
    ("join", "PreparingRebalance", "stranger"): _row(
        "UNKNOWN_MEMBER_ID INCONSISTENT_GROUP_PROTOCOL", cite="doJoinGroup: !group.has"
    ),
    **{
        ("join", state, who): row
        for state in ("CompletingRebalance", "Stable")
        for who, row in (
            (
                "new-rk",
                _row(
                    "MEMBER_ID_REQUIRED INCONSISTENT_GROUP_PROTOCOL",
                    cite="handleJoinGroup: acceptJoiningMember; doUnknownJoinGroup: requireKnownMemberId",
                ),
            ),
            (
                "new",
                _row(
                    "INCONSISTENT_GROUP_PROTOCOL",
                    _JOIN_LATER,
                    "addMemberAndRebalance -> prepareRebalance: the others have not rejoined, so parked",
                ),
            ),
            (
                "pending",
                _row(
                    "INCONSISTENT_GROUP_PROTOCOL",
                    _JOIN_LATER,
                    "doJoinGroup: isPendingMember -> addMemberAndRebalance",
                ),
            ),
            (
                "member",
                _row(
                    "NONE INCONSISTENT_GROUP_PROTOCOL",
                    _JOIN_LATER,
                    f"doJoinGroup: case {state}: same metadata -> current generation at once, else "
                    "updateMemberAndRebalance (complete at once when it is the only member)",
                ),
            ),
            (
                "stranger",
                _row(
                    "UNKNOWN_MEMBER_ID INCONSISTENT_GROUP_PROTOCOL",
                    cite="doJoinGroup: !group.has",
                ),
            ),
        )
    },
    **{
        ("join", "Stable", f"{who}-all-joined"): _row(
            "NONE INCONSISTENT_GROUP_PROTOCOL",
            _JOIN_LATER,
            "addMemberAndRebalance -> prepareRebalance: DelayedJoin.tryComplete, hasAllMembersJoined (every member "
            "has a JoinGroup parked: a static member replaced in Stable waits for its store, "
            "updateStaticMemberAndRebalance), so completed at once",
        )
        for who in ("new", "pending")
    },
    # -- handleSyncGroup / doSyncGroup -----------------------------------------------------
    ("sync", "NoGroup", "*"): _row("UNKNOWN_MEMBER_ID", cite="handleSyncGroup: getGroup None"),
    **{("sync", s, "stranger"): _row("UNKNOWN_MEMBER_ID", cite="doSyncGroup: !group.has(memberId)") for s in _LIVE},
    **{
        ("sync", s, "stale"): _row("ILLEGAL_GENERATION", cite="doSyncGroup: generationId != group.generationId")
        for s in _LIVE
    },
    **{
        ("sync", "Empty", who): _row("UNKNOWN_MEMBER_ID", cite="doSyncGroup: case Empty")
        for who in ("leader", "follower")
    },
    **{
        ("sync", "PreparingRebalance", who): _row("REBALANCE_IN_PROGRESS", cite="doSyncGroup: case PreparingRebalance")
        for who in ("leader", "follower")
    },
    ("sync", "CompletingRebalance", "leader"): _row(
        "NONE COORDINATOR_NOT_AVAILABLE NOT_COORDINATOR INCONSISTENT_GROUP_PROTOCOL",
        _SYNC_LATER,
        "doSyncGroup: case CompletingRebalance, isLeader -> storeGroup -> setAndPropagateAssignment",
    ),
    ("sync", "CompletingRebalance", "follower"): _row(
        "INCONSISTENT_GROUP_PROTOCOL",
        _SYNC_LATER,
        "doSyncGroup: case CompletingRebalance -> awaitingSyncCallback (parked until the leader's)",
    ),
    **{
        ("sync", "Stable", who): _row(
            "NONE INCONSISTENT_GROUP_PROTOCOL", cite="doSyncGroup: case Stable -> the member's assignment"
        )
        for who in ("leader", "follower")
    },
    **{
        ("sync", s, "inconsistent"): _row(
            "INCONSISTENT_GROUP_PROTOCOL",
            cite="doSyncGroup -> validateSyncGroup: a protocolType / protocolName (SyncGroup v5) not the group's",
        )
        for s in _LIVE
    },
    # -- handleHeartbeat -------------------------------------------------------------------
    ("heartbeat", "NoGroup", "*"): _row("UNKNOWN_MEMBER_ID", cite="handleHeartbeat: getGroup None"),
    **{("heartbeat", s, "stranger"): _row("UNKNOWN_MEMBER_ID", cite="handleHeartbeat: !group.has") for s in _LIVE},
    **{
        ("heartbeat", s, "stale"): _row(
            "ILLEGAL_GENERATION", cite="handleHeartbeat: generationId != group.generationId"
        )
        for s in _LIVE
    },
    **{
        ("heartbeat", s, who): row
        for who in ("leader", "follower")
        for s, row in (
            ("Empty", _row("UNKNOWN_MEMBER_ID", cite="handleHeartbeat: case Empty")),
            ("PreparingRebalance", _row("REBALANCE_IN_PROGRESS", cite="handleHeartbeat: case PreparingRebalance")),
            ("CompletingRebalance", _row("NONE", cite="handleHeartbeat: case CompletingRebalance (3.x: NONE)")),
            ("Stable", _row("NONE", cite="handleHeartbeat: case Stable")),
        )
    },
    # -- handleLeaveGroup (per leaving member; the top-level error is NONE) ------------------
    ("leave", "NoGroup", "*"): _row(
        "UNKNOWN_MEMBER_ID", cite="handleLeaveGroup: getGroup None -> UNKNOWN_MEMBER_ID each"
    ),
    **{("leave", s, "pending"): _row("NONE", cite="handleLeaveGroup: isPendingMember") for s in _LIVE},
    **{("leave", s, "member"): _row("NONE", cite="handleLeaveGroup: removeMemberAndUpdateGroup") for s in _LIVE},
    **{("leave", s, "stranger"): _row("UNKNOWN_MEMBER_ID", cite="handleLeaveGroup: !group.has") for s in _LIVE},
    # -- handleCommitOffsets / doCommitOffsets / validateOffsetCommit -----------------------
    ("commit", "NoGroup", "unversioned"): _row(
        "NONE", cite="handleCommitOffsets: getGroup None, generationId < 0 -> addGroup(Empty), doCommitOffsets"
    ),
    ("commit", "NoGroup", "*"): _row(
        "ILLEGAL_GENERATION", cite='handleCommitOffsets: getGroup None, "a request coming from an older generation"'
    ),
    ("commit", "Empty", "unversioned"): _row(
        "NONE", cite="validateOffsetCommit: generationId < 0 && group.is(Empty) -> storeOffsets"
    ),
    **{
        ("commit", s, "stranger"): _row(
            "UNKNOWN_MEMBER_ID", cite="validateOffsetCommit -> validateCurrentMember: !group.has(memberId)"
        )
        for s in _LIVE
    },
    **{
        ("commit", s, "stale"): _row(
            "ILLEGAL_GENERATION", cite="validateOffsetCommit: generationId != group.generationId"
        )
        for s in _LIVE
    },
    **{
        ("commit", "Empty", who): _row("UNKNOWN_MEMBER_ID", cite="validateCurrentMember: an Empty group has no member")
        for who in ("leader", "follower")
    },
    **{
        ("commit", s, who): _row(
            "NONE", cite=f"doCommitOffsets: case {s} -> completeAndScheduleNextHeartbeatExpiration, storeOffsets"
        )
        for s in ("PreparingRebalance", "Stable")
        for who in ("leader", "follower")
    },
    **{
        ("commit", "CompletingRebalance", who): _row(
            "REBALANCE_IN_PROGRESS", cite="doCommitOffsets: case CompletingRebalance"
        )
        for who in ("leader", "follower")
    },
    # -- requests with a group.instance.id (static membership, KIP-345) ----------------------
    **{
        (kind, s, "fenced"): _row(
            "FENCED_INSTANCE_ID",
            cite=f"{handler}: validateCurrentMember: currentStaticMemberId(instanceId) != memberId",
        )
        for kind, handler in (
            ("sync", "doSyncGroup"),
            ("heartbeat", "handleHeartbeat"),
            ("leave", "handleLeaveGroup"),
            ("commit", "validateOffsetCommit"),
        )
        for s in _LIVE
    },
    **{
        (kind, s, "unknown-instance"): _row(
            "UNKNOWN_MEMBER_ID",
            cite=f"{handler}: validateCurrentMember: currentStaticMemberId(instanceId) is None",
        )
        for kind, handler in (
            ("sync", "doSyncGroup"),
            ("heartbeat", "handleHeartbeat"),
            ("leave", "handleLeaveGroup (a member id; with none, the admin removal: currentStaticMemberId None)"),
            ("commit", "validateOffsetCommit"),
        )
        for s in _LIVE
    },
    **{
        ("join", s, "fenced"): _row(
            "FENCED_INSTANCE_ID INCONSISTENT_GROUP_PROTOCOL",
            cite="doCurrentMemberJoinGroup: supportsProtocols, then validateCurrentMember: another member id",
        )
        for s in _LIVE
    },
    **{
        ("join", s, "unknown-instance"): _row(
            "UNKNOWN_MEMBER_ID INCONSISTENT_GROUP_PROTOCOL",
            cite="doCurrentMemberJoinGroup: supportsProtocols, then validateCurrentMember: instance maps to none",
        )
        for s in _LIVE
    },
    **{
        ("join", s, "static-pending"): _row(
            "UNKNOWN_SERVER_ERROR INCONSISTENT_GROUP_PROTOCOL",
            cite="doCurrentMemberJoinGroup: isPendingMember with an instance id throws IllegalStateException "
            "(KafkaApis answers UNKNOWN_SERVER_ERROR)",
        )
        for s in _LIVE
    },
    ("join", "PreparingRebalance", "static-replace"): _row(
        "NONE INCONSISTENT_GROUP_PROTOCOL",
        _JOIN_LATER,
        "doStaticNewMemberJoinGroup -> updateStaticMemberAndRebalance: case PreparingRebalance (the join "
        "waits in the rebalance; handleJoinGroup's checkAndComplete may complete it at once)",
    ),
    ("join", "CompletingRebalance", "static-replace"): _row(
        "NONE INCONSISTENT_GROUP_PROTOCOL",
        _JOIN_LATER,
        "updateStaticMemberAndRebalance: case CompletingRebalance -> prepareRebalance (complete at once "
        "when the static member is the only one)",
    ),
    ("join", "Stable", "static-replace"): _row(
        f"NONE INCONSISTENT_GROUP_PROTOCOL {_STORE_ERRORS}",
        f"{_JOIN_LATER} {_STORE_ERRORS}",
        "updateStaticMemberAndRebalance: case Stable, same selected protocol -> storeGroup: NONE with the "
        "current generation, or the store's error (the replacement reverted); a protocol change -> "
        "maybePrepareRebalance",
    ),
}


def row_for(kind: str, where: str, who: str) -> Row | None:
    """The table's row, the most specific first (None: the situation is not in the table)."""
    for key in ((kind, where, who), (kind, where, "*"), (kind, "*", who), ("*", where, "*")):
        row = RESPONSE_TABLE.get(key)
        if row is not None:
            return row
    return None


#: What a static replacement's JoinGroup is answered when its store fails (storeGroup's
#: translation of the append error, impl/store.py)
_STORE_ERRORS = frozenset(e.name for e in APPEND_ERROR_TO_COORDINATOR_ERROR.values())


def _error_name(result: Any) -> str:
    if isinstance(result, Mapping):
        # an OffsetCommit's answer: one error per partition, all alike in the classic coordinator
        result = next(iter(result.values()), None)
    error = result if isinstance(result, Errors) else getattr(result, "error", None)
    return error.name if isinstance(error, Errors) else repr(error)


@dataclass
class _Request:
    """One request as it arrived: its situation, and what became of it."""

    n: int
    kind: str
    member: str
    where: str
    who: str
    generation: int | None = None
    assignment: dict[str, str] | None = None
    instance: str | None = None
    replaced: str | None = None  # static-replace, admin leave: the member id the instance mapped to
    leader: str | None = None  # static-replace: the group's leader when it arrived
    leader_rejoin_of: int | None = None  # a dynamic leader's JoinGroup in Stable: the generation then
    returned: bool = False  # the handler's call is over
    answered: bool = False

    def text(self) -> str:
        gen = f", generation {self.generation}" if self.generation is not None else ""
        inst = f", instance {self.instance}" if self.instance is not None else ""
        return f"{self.kind} #{self.n} ({self.member or 'no member id'}{gen}{inst}; {self.where}, {self.who})"


@dataclass
class ResponseOracle:
    """Situations of requests, their answers, and the findings (by property name) not yet
    collected. One per coordinator instance (`response_checked`)."""

    group_id: str | None = None  # the one group the assignment and join checks follow
    findings: dict[str, list[str]] = field(default_factory=dict)
    _count: int = 0
    _parked_joins: dict[str, _Request] = field(default_factory=dict)  # member id -> parked join
    _leader_assignment: dict[int, dict[str, str]] = field(default_factory=dict)  # generation -> filled
    _joined: dict[int, set[str]] = field(default_factory=dict)  # generation -> members answered NONE
    _listed: dict[int, set[str]] = field(default_factory=dict)  # generation -> dynamic members listed
    _assignments: dict[str, str] = field(default_factory=dict)  # last seen, hosted group
    _store_outcome: str | None = None  # what storeGroup hands the callback of the append completing now
    _owners: dict[str, str] = field(default_factory=dict)  # group.instance.id -> member id, last seen
    _reverts: list[_Request] = field(default_factory=list)  # failed static replacements to judge
    _left: list[tuple[_Request, str]] = field(default_factory=list)  # LeaveGroups answered NONE, the member
    _last_state: str = "NoGroup"  # the followed group's state when last seen
    _initial_rebalance: bool = False  # its PreparingRebalance began from Empty (InitialDelayedJoin)
    _unhosted: dict[str, str] = field(default_factory=dict)  # group -> Loading / NotCoordinator, as told

    def store_completing(self, error: str | None) -> None:
        """A group-metadata append is being acknowledged (None: no longer) and storeGroup hands
        its callback `error`: a parked SyncGroup answered meanwhile gets exactly that (doSyncGroup's
        callback: setAndPropagateAssignment on NONE, else resetAndPropagateAssignmentError(error))."""
        self._store_outcome = error

    def store_completed(self, c: GroupCoordinator) -> None:
        """The append's callback has run: the assignments it installed (doSyncGroup's
        setAndPropagateAssignment) or moved back (a static member's revert after a failed store,
        updateStaticMemberAndRebalance) are judged now, as a handler's are at its end. A callback
        is no handler call, and one rule of the machine may run it and then a static member's
        replacement (replaceStaticMember, which hands the assignment to the new id): judged only
        after both, the hand-over would look like an assignment no leader sent."""
        self._store_outcome = None
        self._check_assignments(c)
        self._check_reverts(c)

    def _find(self, name: str, what: str) -> None:
        self.findings.setdefault(name, []).append(what)

    def take(self) -> dict[str, list[str]]:
        """The findings since the last take."""
        out, self.findings = self.findings, {}
        return out

    # -- situations ----------------------------------------------------------------------------
    @staticmethod
    def where(c: GroupCoordinator, group_id: str) -> str:
        if group_id in c._loading:
            return "Loading"
        if group_id in c._not_coordinator:
            return "NotCoordinator"
        group = c._groups.get(group_id)
        return "NoGroup" if group is None else group.state.value

    @staticmethod
    def who(c: GroupCoordinator, group_id: str, kind: str, member: str, generation: int | None = None) -> str:
        group = c._groups.get(group_id)
        known = group is not None and member in group.members
        pending = group is not None and member in group.pending_members
        if kind in ("join", "leave"):
            if member == UNKNOWN_MEMBER_ID and kind == "join":
                return "new"
            return "member" if known else "pending" if pending else "stranger"
        if kind == "commit" and generation is not None and generation < 0:
            if group is None or group.state.value == "Empty":
                return "unversioned"
        if not known or group is None:
            return "stranger"
        if generation != group.generation_id:
            return "stale"
        return "leader" if group.leader_id == member else "follower"

    @staticmethod
    def static_who(c: GroupCoordinator, group_id: str, kind: str, member: str, instance: str, dynamic: str) -> str:
        """The situation of a request carrying group.instance.id `instance` (`dynamic`: the
        one it would have without). Kafka 3.9 checks the instance before the member id:
        validateCurrentMember for a known member id (FENCED_INSTANCE_ID when the instance maps
        to another id, UNKNOWN_MEMBER_ID when to none); a JoinGroup with no member id replaces
        the instance's member (doStaticNewMemberJoinGroup); a LeaveGroup with none removes it
        (the admin's removal by instance id); a pending member is never static."""
        group = c._groups.get(group_id)
        if group is None or dynamic == "unversioned":
            # getGroup None: answered before any member check; validateOffsetCommit accepts a
            # generation -1 commit to an Empty group before it looks at the member or instance
            return dynamic
        owner = group.current_static_member_id(instance)
        if member == UNKNOWN_MEMBER_ID and kind == "join":
            return "static-replace" if owner is not None else "new"
        if member == UNKNOWN_MEMBER_ID and kind == "leave":
            return "member" if owner is not None else "unknown-instance"
        if member in group.pending_members and kind in ("join", "leave"):
            # doCurrentMemberJoinGroup throws; handleLeaveGroup removes the pending member first
            return "static-pending" if kind == "join" else "pending"
        if owner is None:
            return "unknown-instance"
        return "fenced" if owner != member else dynamic

    @staticmethod
    def _room(c: GroupCoordinator, group_id: str, member: str) -> bool:
        """Kafka's acceptJoiningMember, counted from the members themselves."""
        group = c._groups.get(group_id)
        most = c.config.max_group_size
        if group is None or most is None:
            return True
        if group.state.value == "PreparingRebalance":
            awaiting = sum(1 for m in group.members.values() if m.awaiting_join_callback is not None)
            known = group.members.get(member)
            return (known is not None and known.awaiting_join_callback is not None) or awaiting < most
        if group.state.value in ("CompletingRebalance", "Stable"):
            return member in group.members or len(group.members) < most
        return True

    @staticmethod
    def _all_joined(c: GroupCoordinator, group_id: str) -> bool:
        """Every member has a JoinGroup parked (in Stable only while a static member's
        replacement waits for its store): a newcomer's rebalance then completes at once."""
        group = c._groups.get(group_id)
        return group is not None and all(m.awaiting_join_callback is not None for m in group.members.values())

    def arrive(
        self,
        c: GroupCoordinator,
        kind: str,
        group_id: str,
        member: str,
        *,
        generation: int | None = None,
        assignment: Mapping[str, str] | None = None,
        rk: bool = False,
        session_ok: bool = True,
        instance: str | None = None,
        protocol: tuple[str | None, str | None] = (None, None),
    ) -> _Request:
        self._count += 1
        self.observe(c, group_id)
        where = self._unhosted.get(group_id) or self.where(c, group_id)
        who = self.who(c, group_id, kind, member, generation)
        if instance is not None:
            who = self.static_who(c, group_id, kind, member, instance, who)
        if kind == "sync" and who in ("leader", "follower") and not self._consistent(c, group_id, protocol):
            who = "inconsistent"
        if kind == "join" and where not in ("NotCoordinator", "Loading", "Dead"):
            if not session_ok:
                who = "bad-session"
            elif not self._room(c, group_id, member):
                who = "full"
            elif who == "new" and rk and instance is None:
                who = "new-rk"
            if who in ("new", "pending") and where == "Stable" and self._all_joined(c, group_id):
                who = f"{who}-all-joined"
        req = _Request(
            self._count, kind, member, where, who, generation, dict(assignment or {}) or None, instance=instance
        )
        if kind == "join" and where == "Stable" and who == "member" and instance is None:
            group = c._groups[group_id]
            if group.leader_id == member:
                req.leader_rejoin_of = group.generation_id
        if who == "static-replace" and instance is not None:
            req.replaced = c._groups[group_id].current_static_member_id(instance)
            req.leader = c._groups[group_id].leader_id
        if kind == "leave" and member == UNKNOWN_MEMBER_ID and who == "member" and instance is not None:
            req.replaced = c._groups[group_id].current_static_member_id(instance)  # the admin's removal
        if kind == "sync" and where == "CompletingRebalance" and who == "leader" and generation is not None:
            group = c._groups[group_id]
            filled = {m: "" for m in group.members}
            filled.update(req.assignment or {})
            self._leader_assignment[generation] = filled
        return req

    @staticmethod
    def _consistent(c: GroupCoordinator, group_id: str, protocol: tuple[str | None, str | None]) -> bool:
        """A SyncGroup's protocol type and name (v5; None: not sent) are the group's."""
        group = c._groups.get(group_id)
        kind, name = protocol
        return group is None or (kind in (None, group.protocol_type) and name in (None, group.protocol_name))

    def observe(self, c: GroupCoordinator, group_id: str) -> None:
        """Follow the group's state, to know whether its PreparingRebalance began from Empty
        (prepareRebalance: InitialDelayedJoin when group.is(Empty), else DelayedJoin). A step
        may pass through states unseen (timers firing in one tick): a PreparingRebalance
        seen after PreparingRebalance keeps what was known, so an unseen new one begun from
        CompletingRebalance may be taken as initial, which only leaves it unchecked."""
        if group_id != self.group_id or group_id in c._loading or group_id in c._not_coordinator:
            return
        if group_id in self._unhosted:
            return
        state = self.where(c, group_id)
        if state == "PreparingRebalance" and self._last_state != "PreparingRebalance":
            self._initial_rebalance = self._last_state in ("Empty", "NoGroup")
        self._last_state = state

    # -- the group moving between coordinators --------------------------------------------------
    def unloaded(self, group_id: str) -> None:
        """onGroupUnloaded: NOT_COORDINATOR until a load (a load in progress ends too)."""
        self._unhosted[group_id] = "NotCoordinator"

    def load_begun(self, group_id: str) -> None:
        """onGroupLoadBegin: COORDINATOR_LOAD_IN_PROGRESS (validateGroupStatus) until loaded."""
        self._unhosted[group_id] = "Loading"

    def loaded(self, c: GroupCoordinator, group_id: str, record: Any, hosted: bool) -> None:
        """onGroupLoaded with the store's `record` (read before the load; `hosted`: the group
        was hosted already, and Kafka keeps its cached copy): LoadedAsStored."""
        self._unhosted.pop(group_id, None)
        if hosted:
            return
        group = c._groups.get(group_id)
        if record is None or group is None:
            if (record is None) != (group is None):
                self._find(
                    "LoadedAsStored",
                    f"{group_id} loaded: the store holds {'no record' if record is None else 'a record'}, the "
                    f"coordinator {'hosts no group' if group is None else 'hosts a group'} (loadGroup adds the stored one)",
                )
            return
        state = "Stable" if record.members else "Empty"
        seen = (group.generation_id, group.protocol_type, group.protocol_name, group.leader_id, group.state.value)
        want = (record.generation_id, record.protocol_type, record.protocol_name, record.leader_id, state)
        diffs = [] if seen == want else [f"(generation, protocol type, name, leader, state) {seen} not {want}"]
        members = {m.member_id: m for m in record.members}
        if set(group.members) != set(members):
            diffs.append(f"members {sorted(group.members)} not {sorted(members)}")
        for member_id, stored in sorted(members.items()):
            md = group.members.get(member_id)
            if md is None:
                continue
            got = (
                md.group_instance_id,
                md.rebalance_timeout_ms,
                md.session_timeout_ms,
                md.protocol_type,
                md.metadata(record.protocol_name) if record.protocol_name is not None else stored.subscription,
                md.assignment,
            )
            stored_as = (
                stored.group_instance_id,
                stored.rebalance_timeout_ms,
                stored.session_timeout_ms,
                record.protocol_type,
                stored.subscription,
                stored.assignment,
            )
            if got != stored_as:
                diffs.append(
                    f"{member_id} (instance, timeouts, protocol type, subscription, assignment) {got} not {stored_as}"
                )
        if diffs:
            self._find("LoadedAsStored", f"{group_id} loaded not as stored: {'; '.join(diffs)}")

    def members_before(self, c: GroupCoordinator, group_id: str) -> set[str]:
        group = c._groups.get(group_id)
        return set(group.members) if group is not None else set()

    def returned(self, c: GroupCoordinator, req: _Request, group_id: str, before: set[str]) -> None:
        """The handler's call is over: an unanswered request is parked, which its row must
        allow; a parked join is kept under its member (a new member's id is the one the call
        added)."""
        req.returned = True
        self.observe(c, group_id)
        self._check_assignments(c)
        if req.answered or req.who == "batch":
            return
        row = row_for(req.kind, req.where, req.who)
        if row is not None and not row.later:
            self._find(
                "ResponseAllowed",
                f"{req.text()} was parked; Kafka ({row.cite}) answers {' or '.join(sorted(row.now))} at once",
            )
        if req.kind != "join":
            return
        member = req.member
        if member == UNKNOWN_MEMBER_ID:
            added = sorted(self.members_before(c, group_id) - before)
            member = added[0] if len(added) == 1 else ""
        if member:
            # a second JoinGroup for one member id replaces the first's callback
            # (GroupMetadata.updateMember), which is then never answered: Kafka's behaviour
            self._parked_joins[member] = req
            req.member = member

    # -- answers -------------------------------------------------------------------------------
    def answered(self, req: _Request, result: Any) -> None:
        req.answered = True
        if req.who == "batch":
            return
        if req.kind == "leave" and isinstance(result, LeaveGroupResult):
            self._check_leave(req, result)
            return
        name = _error_name(result)
        row = row_for(req.kind, req.where, req.who)
        if row is None:
            self._find("ResponseAllowed", f"{req.text()} answered {name}: no row allows this situation")
            return
        allowed = row.later if req.returned else row.now
        if req.kind == "sync" and req.returned and self._store_outcome is not None:
            allowed = frozenset({self._store_outcome}) & row.later
        if req.returned and req.instance is not None and req.kind in ("join", "sync"):
            # GroupMetadata.replaceStaticMember answers the replaced member's parked JoinGroup and
            # SyncGroup FENCED_INSTANCE_ID
            allowed = allowed | {"FENCED_INSTANCE_ID"}
        if name not in allowed:
            prop = "StaleGenerationRejected" if req.who == "stale" else "ResponseAllowed"
            when = "after it was parked" if req.returned else "at once"
            park = "" if row.later else ", never parked"
            self._find(
                prop,
                f"{req.text()} answered {name} {when}; Kafka ({row.cite}) answers "
                f"{' or '.join(sorted(allowed)) or 'nothing'} {when}{park}",
            )
        skip = req.kind == "join" and bool(getattr(result, "skip_assignment", False))
        if skip and not (req.who == "static-replace" and req.where == "Stable"):
            self._find(
                "ResponseAllowed",
                f"{req.text()} answered with skipAssignment; Kafka sets it only for a static leader "
                "rejoining a Stable group (updateStaticMemberAndRebalance, KIP-814)",
            )
        if req.leader_rejoin_of is not None and name == "NONE" and isinstance(result, JoinGroupResult):
            self._check_leader_rejoin(req, result)
        if req.kind == "join" and isinstance(result, JoinGroupResult) and name == "NONE" and not skip:
            self._joined.setdefault(result.generation_id, set()).add(result.member_id)
            if result.members:
                listed = {m.member_id for m in result.members if m.group_instance_id is None}
                self._listed.setdefault(result.generation_id, set()).update(listed)
        if req.kind == "join" and self._parked_joins.get(req.member) is req:
            del self._parked_joins[req.member]
        if req.who == "static-replace" and req.where == "Stable" and req.returned and name in _STORE_ERRORS:
            self._reverts.append(req)
            self._check_revert_leader(req, result)
        if req.kind == "sync" and isinstance(result, SyncGroupResult) and name == "NONE":
            self._check_sync_assignment(req, result)

    def _check_leader_rejoin(self, req: _Request, result: JoinGroupResult) -> None:
        """doCurrentMemberJoinGroup in Stable forces a rebalance when the leader rejoins, even
        with unchanged metadata (group.isLeader(memberId) -> updateMemberAndRebalance: the way a
        leader asks for a new assignment after a topic metadata change); only a follower with
        unchanged metadata is told the current generation. So the leader's answer, at once (a
        lone leader's rebalance completes in the call) or later, names a later generation."""
        if result.generation_id == req.leader_rejoin_of:
            self._find(
                "ResponseAllowed",
                f"{req.text()}: the leader's JoinGroup was answered generation {result.generation_id}, the "
                "current one; Kafka (doCurrentMemberJoinGroup: case Stable, group.isLeader(memberId) -> "
                "updateMemberAndRebalance) starts a rebalance for it",
            )

    def _check_revert_leader(self, req: _Request, result: Any) -> None:
        """updateStaticMemberAndRebalance's answer to a failed store names the leader as it was
        before the replacement (leaderId = currentLeader), so a leader that was replaced learns
        it still leads under its old id."""
        leader = getattr(result, "leader_id", None)
        if leader != (req.leader or ""):
            self._find(
                "ResponseAllowed",
                f"{req.text()} answered {_error_name(result)} with leader {leader!r}; Kafka "
                f"(updateStaticMemberAndRebalance: leaderId = currentLeader) names {req.leader or ''!r}",
            )

    def _check_leave(self, req: _Request, result: LeaveGroupResult) -> None:
        name = result.error.name
        if req.where in ("NotCoordinator", "Loading", "Dead"):
            row = row_for("leave", req.where, req.who)
            assert row is not None
            if name not in row.now:
                self._find(
                    "ResponseAllowed", f"{req.text()} answered {name}; Kafka ({row.cite}) answers {sorted(row.now)}"
                )
            return
        if name != "NONE":
            self._find("ResponseAllowed", f"{req.text()} answered {name}; Kafka (handleLeaveGroup) answers NONE")
            return
        row = row_for("leave", req.where, req.who)
        for member, _, error in result.member_responses:
            if member == req.member and error.name == "NONE" and (member or req.replaced):
                self._left.append((req, member or req.replaced or ""))
            if member == req.member and row is not None and error.name not in row.now:
                self._find(
                    "ResponseAllowed",
                    f"{req.text()} answered {error.name} for the member; Kafka ({row.cite}) answers {sorted(row.now)}",
                )

    def _check_sync_assignment(self, req: _Request, result: SyncGroupResult) -> None:
        if req.generation is None:
            return
        sent = self._leader_assignment.get(req.generation)
        if sent is None:
            if req.where == "CompletingRebalance":
                self._find(
                    "AssignmentFromCurrentLeader",
                    f"{req.text()} answered NONE with {result.member_assignment!r} before the leader of "
                    f"generation {req.generation} sent its SyncGroup",
                )
            return
        expected = sent.get(req.member, "")
        if result.member_assignment != expected:
            self._find(
                "AssignmentFromCurrentLeader",
                f"{req.text()} answered NONE with {result.member_assignment!r}; the leader of generation "
                f"{req.generation} assigned it {expected!r}",
            )

    # -- after every step ----------------------------------------------------------------------
    def after_step(self, c: GroupCoordinator) -> None:
        """The checks on what a whole step did (a request, or timers firing)."""
        if self.group_id is None:
            return
        group = c._groups.get(self.group_id)
        hosted = group is not None and self.group_id not in c._not_coordinator
        members = set(group.members) if group is not None and hosted else set()
        for member, req in list(self._parked_joins.items()):
            if member not in members:
                del self._parked_joins[member]
                self._find(
                    "JoinAnsweredBeforeRemoval",
                    f"{req.text()} was parked and is still unanswered, but {member} is no longer a member "
                    "(Kafka: removeMemberAndUpdateGroup answers UNKNOWN_MEMBER_ID first, onGroupUnloaded NOT_COORDINATOR)",
                )
        for generation, listed in list(self._listed.items()):
            missing = listed - self._joined.get(generation, set())
            if missing:
                self._find(
                    "GenerationMembersJoined",
                    f"the leader's JoinGroup response for generation {generation} lists "
                    f"{', '.join(sorted(missing))}, which got no JoinGroup answer for it "
                    "(onCompleteJoin removes the dynamic members that did not rejoin)",
                )
            del self._listed[generation]
        self._check_assignments(c)
        self._check_reverts(c)
        self._check_left(group if hosted else None)
        self.observe(c, self.group_id)
        if hosted and group is not None:
            self._check_parked_joins(c, group)

    def _check_left(self, group: Any) -> None:
        """Members whose LeaveGroup was answered NONE for them are gone."""
        left, self._left = self._left, []
        for req, member in left:
            if group is not None and (member in group.members or member in group.pending_members):
                self._find(
                    "LeftMemberRemoved",
                    f"{req.text()} was answered NONE for {member}, which is still in the group "
                    "(handleLeaveGroup: removeCurrentMemberFromGroup)",
                )

    def _check_parked_joins(self, c: GroupCoordinator, group: Any) -> None:
        """JoinParkedOnlyInRebalance and JoinCompletedOnceAllJoined, on the members' parked
        JoinGroups (awaitingJoinCallback) at the end of a step."""
        state = group.state.value
        parked = sorted(m for m, md in group.members.items() if md.awaiting_join_callback is not None)
        if state == "PreparingRebalance":
            if not self._initial_rebalance and len(parked) == len(group.members) and not group.pending_members:
                self._find(
                    "JoinCompletedOnceAllJoined",
                    f"generation {group.generation_id}: every member ({', '.join(parked) or 'none'}) has its "
                    "JoinGroup parked and no member is pending, yet the group is still PreparingRebalance "
                    "(hasAllMembersJoined: DelayedJoin.tryComplete completes the join in the step that makes it so)",
                )
            return
        pending = getattr(c.store, "pending_for", None)
        if parked and state != "Dead" and not (pending is not None and pending(group.group_id)):
            self._find(
                "JoinParkedOnlyInRebalance",
                f"{', '.join(parked)} still {'has' if len(parked) == 1 else 'have'} a JoinGroup parked in {state} "
                "with no store append pending (only PreparingRebalance parks a JoinGroup, onCompleteJoin answers "
                "them all; a static member replaced in Stable waits for storeGroup's callback)",
            )

    def _check_reverts(self, c: GroupCoordinator) -> None:
        """Static replacements answered with their store's error: the instance maps to the
        replaced member id again (judged once the callback that answered has run)."""
        reverts, self._reverts = self._reverts, []
        group = c._groups.get(self.group_id or "")
        if group is None or self.group_id in c._not_coordinator:
            return
        for req in reverts:
            now = group.current_static_member_id(req.instance or "")
            if req.replaced is not None and now == req.member and req.replaced not in group.members:
                self._find(
                    "FailedStaticReplacementReverted",
                    f"{req.text()} was answered with its store's error, yet {req.instance} still maps to "
                    f"{req.member}, not back to {req.replaced} (updateStaticMemberAndRebalance reverts)",
                )

    def _check_assignments(self, c: GroupCoordinator) -> None:
        """Assignments that changed since the last look (at the end of every handler call and
        of every step, so a change is judged against the generation it was made in)."""
        if self.group_id is None:
            return
        group = c._groups.get(self.group_id)
        if group is None or self.group_id in c._not_coordinator:
            self._assignments = {}
            return
        now = {m: md.assignment for m, md in group.members.items()}
        changed = {m: a for m, a in now.items() if a and self._assignments.get(m) != a}
        seen, self._assignments = self._assignments, now
        owners, self._owners = self._owners, dict(group.static_members)
        if not changed:
            return
        sent = self._leader_assignment.get(group.generation_id)
        for member, assignment in sorted(changed.items()):
            instance = group.members[member].group_instance_id
            previous = owners.get(instance) if instance is not None else None
            if previous not in (None, member) and seen.get(previous or "") == assignment:
                # replaceStaticMember: the new member id takes over the replaced one's assignment
                # (in any state: a rebalance keeps assignments until CompletingRebalance resets them)
                if sent is not None and sent.get(previous or "", "") == assignment:
                    sent[member] = assignment
                continue
            if sent is None or sent.get(member, "") != assignment:
                origin = (
                    f"the leader of generation {group.generation_id} sent {sent.get(member, '')!r}"
                    if sent is not None
                    else f"the leader of generation {group.generation_id} sent no SyncGroup in CompletingRebalance"
                )
                self._find(
                    "AssignmentFromCurrentLeader",
                    f"{member}'s assignment became {assignment!r}; {origin}",
                )


def _answer(oracle: ResponseOracle, req: _Request, callback: Callable[[Any], None]) -> Callable[[Any], None]:
    def answer(result: Any) -> None:
        oracle.answered(req, result)
        callback(result)

    return answer


@functools.cache
def response_checked(coordinator_class: type[GroupCoordinator]) -> type[GroupCoordinator]:
    """`coordinator_class` with every JoinGroup, SyncGroup, Heartbeat, LeaveGroup and OffsetCommit answer
    checked by a ResponseOracle (`instance.response_oracle`); the coordinator's behaviour is
    its own (the subclass only reads the group before the call and wraps the callback)."""

    class Checked(coordinator_class):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.response_oracle = ResponseOracle()

        def handle_join_group(  # type: ignore[override]
            self,
            group_id: str,
            member_id: str,
            group_instance_id: str | None,
            require_known_member: bool,
            client_id: str,
            client_host: str,
            rebalance_timeout_ms: int,
            session_timeout_ms: int,
            protocol_type: str,
            protocols: list[tuple[str, str]],
            response_callback: Callable[[JoinGroupResult], None],
            supports_skip_assignment: bool = False,
        ) -> None:
            oracle = self.response_oracle
            session_ok = self.config.min_session_timeout_ms <= session_timeout_ms <= self.config.max_session_timeout_ms
            req = oracle.arrive(
                self,
                "join",
                group_id,
                member_id or "",
                rk=require_known_member,
                session_ok=session_ok,
                instance=group_instance_id,
            )
            before = oracle.members_before(self, group_id)
            super().handle_join_group(
                group_id,
                member_id,
                group_instance_id,
                require_known_member,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
                _answer(oracle, req, response_callback),
                supports_skip_assignment,
            )
            oracle.returned(self, req, group_id, before)

        def handle_sync_group(  # type: ignore[override]
            self,
            group_id: str,
            generation: int,
            member_id: str,
            protocol_type: str | None,
            protocol_name: str | None,
            group_instance_id: str | None,
            group_assignment: dict[str, str],
            response_callback: Callable[[SyncGroupResult], None],
        ) -> None:
            oracle = self.response_oracle
            req = oracle.arrive(
                self,
                "sync",
                group_id,
                member_id,
                generation=generation,
                assignment=group_assignment or {},
                instance=group_instance_id,
                protocol=(protocol_type, protocol_name),
            )
            super().handle_sync_group(
                group_id,
                generation,
                member_id,
                protocol_type,
                protocol_name,
                group_instance_id,
                group_assignment,
                _answer(oracle, req, response_callback),
            )
            oracle.returned(self, req, group_id, set())

        def handle_heartbeat(  # type: ignore[override]
            self,
            group_id: str,
            member_id: str,
            group_instance_id: str | None,
            generation_id: int,
            response_callback: Callable[[Errors], None],
        ) -> None:
            oracle = self.response_oracle
            req = oracle.arrive(
                self, "heartbeat", group_id, member_id, generation=generation_id, instance=group_instance_id
            )
            super().handle_heartbeat(
                group_id, member_id, group_instance_id, generation_id, _answer(oracle, req, response_callback)
            )
            oracle.returned(self, req, group_id, set())

        def handle_commit_offsets(  # type: ignore[override]
            self,
            group_id: str,
            member_id: str,
            group_instance_id: str | None,
            generation_id: int,
            offsets: dict[str, int],
            response_callback: Callable[[dict[str, Errors]], None],
        ) -> None:
            oracle = self.response_oracle
            req = oracle.arrive(
                self, "commit", group_id, member_id, generation=generation_id, instance=group_instance_id
            )
            super().handle_commit_offsets(
                group_id, member_id, group_instance_id, generation_id, offsets, _answer(oracle, req, response_callback)
            )
            oracle.returned(self, req, group_id, set())

        def handle_leave_group(  # type: ignore[override]
            self,
            group_id: str,
            leaving_members: list[Any],
            response_callback: Callable[[LeaveGroupResult], None],
        ) -> None:
            oracle = self.response_oracle
            members = list(leaving_members or [])
            if len(members) == 1:
                req = oracle.arrive(
                    self, "leave", group_id, members[0].member_id, instance=members[0].group_instance_id
                )
            else:
                req = oracle.arrive(self, "leave", group_id, "")
                req.who = "batch"  # several members in one request: not in the table
            super().handle_leave_group(group_id, members, _answer(oracle, req, response_callback))
            oracle.returned(self, req, group_id, set())

        def on_group_unloaded(self, group_id: str) -> None:
            super().on_group_unloaded(group_id)
            self.response_oracle.unloaded(group_id)

        def on_group_load_begin(self, group_id: str) -> None:
            super().on_group_load_begin(group_id)
            self.response_oracle.load_begun(group_id)

        def on_group_loaded(self, group_id: str) -> None:
            hosted = group_id in self._groups
            record = self.store.load_group(group_id)
            super().on_group_loaded(group_id)
            self.response_oracle.loaded(self, group_id, record, hosted)

    Checked.__name__ = Checked.__qualname__ = coordinator_class.__name__
    return Checked
