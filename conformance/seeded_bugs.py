"""Implementations with one seeded defect each, for testing that conformance catches defects.

Each is a GroupCoordinator subclass overriding one method, so kgc.impl itself carries no bug
switches. Select one by name: `coordinator_class(name)`, or the KGC_IMPL_BUG environment
variable (`coordinator_class_from_env()`), which `kgc conform --bug` / `kgc replay-cex --bug`
and the Hypothesis machine read. Names that match a spec `Bug` value seed the same defect as
that spec model, as far as the implementation's code allows.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from kgc.conformance.seeded_timer import InsertFirstTimer
from kgc.impl.clock import Clock, VirtualClock
from kgc.impl.coordinator import (
    UNKNOWN_MEMBER_ID,
    GroupConfig,
    GroupCoordinator,
    JoinGroupResponseMember,
    JoinGroupResult,
    LeaveGroupResult,
    LeaveMemberIdentity,
    SyncGroupResult,
)
from kgc.impl.delayed import DelayedJoin, GroupJoinKey, InitialDelayedJoin
from kgc.impl.errors import Errors
from kgc.impl.group import CompletingRebalance, Dead, Empty, GroupMetadata, MemberMetadata, PreparingRebalance, Stable
from kgc.impl.store import StoredGroup
from kgc.impl.timer import SystemTimer

__all__ = [
    "BUGS",
    "ENV_VAR",
    "INTERNAL_ERROR_BUGS",
    "LIVENESS_BUGS",
    "SCENARIO_ONLY_BUGS",
    "coordinator_class",
    "coordinator_class_from_env",
]

ENV_VAR = "KGC_IMPL_BUG"


def _valid_sync_in_preparing_rebalance(
    coordinator: GroupCoordinator,
    group_id: str,
    generation: int,
    member_id: str,
    protocol_type: str | None,
    protocol_name: str | None,
    group_instance_id: str | None,
) -> GroupMetadata | None:
    """The group, when this SyncGroup passes Kafka's checks and the group prepares a rebalance
    (the case doSyncGroup answers REBALANCE_IN_PROGRESS, which the two sync bugs change)."""
    group = coordinator._groups.get(group_id)
    if (
        group is not None
        and group.is_(PreparingRebalance)
        and coordinator._validate_group_status(group_id) is None
        and coordinator._validate_sync_group(
            group, generation, member_id, protocol_type, protocol_name, group_instance_id
        )
        is None
    ):
        return group
    return None


class SyncInPreparingRebalance(GroupCoordinator):
    """A SyncGroup that arrives while the group prepares a rebalance is parked, as if the
    group were CompletingRebalance, instead of answered REBALANCE_IN_PROGRESS."""

    def _sync_group(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        protocol_type: str | None,
        protocol_name: str | None,
        group_instance_id: str | None,
        assignment: dict[str, str],
        respond: Callable,
    ) -> None:
        group = _valid_sync_in_preparing_rebalance(
            self, group_id, generation, member_id, protocol_type, protocol_name, group_instance_id
        )
        if group is not None:
            group.get(member_id).awaiting_sync_callback = respond
            return
        super()._sync_group(
            group_id, generation, member_id, protocol_type, protocol_name, group_instance_id, assignment, respond
        )


class SyncAnsweredInPreparingRebalance(GroupCoordinator):
    """A SyncGroup that arrives while the group prepares a rebalance is answered NONE with the
    member's current assignment, instead of REBALANCE_IN_PROGRESS."""

    def _sync_group(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        protocol_type: str | None,
        protocol_name: str | None,
        group_instance_id: str | None,
        assignment: dict[str, str],
        respond: Callable,
    ) -> None:
        group = _valid_sync_in_preparing_rebalance(
            self, group_id, generation, member_id, protocol_type, protocol_name, group_instance_id
        )
        if group is not None:
            member = group.get(member_id)
            respond(SyncGroupResult(Errors.NONE, group.protocol_type, group.protocol_name, member.assignment))
            return
        super()._sync_group(
            group_id, generation, member_id, protocol_type, protocol_name, group_instance_id, assignment, respond
        )


class HeartbeatRebalancesStable(GroupCoordinator):
    """A Heartbeat of a current member in Stable starts a rebalance (and is answered
    REBALANCE_IN_PROGRESS), although Kafka rebalances a Stable group only on a join, a leave, a
    session expiry or a DelayedSync expiry."""

    def _heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int) -> Errors:
        error = super()._heartbeat(group_id, member_id, group_instance_id, generation_id)
        group = self._groups.get(group_id)
        if error is Errors.NONE and group is not None and group.is_(Stable) and group.has(member_id):
            self._maybe_prepare_rebalance(group)
            return Errors.REBALANCE_IN_PROGRESS
        return error


class StableHeartbeatRebalanceInProgress(GroupCoordinator):
    """A Heartbeat of a current member in Stable is answered REBALANCE_IN_PROGRESS (the session
    timer restarted, the group left as it is), the spec's `stable_heartbeat_rebalance_in_progress`:
    a prompt leader rejoins, the group rebalances, and the next heartbeat starts it over."""

    def _heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int) -> Errors:
        error = super()._heartbeat(group_id, member_id, group_instance_id, generation_id)
        group = self._groups.get(group_id)
        if error is Errors.NONE and group is not None and group.is_(Stable) and group.has(member_id):
            return Errors.REBALANCE_IN_PROGRESS
        return error


class EmptyGenerationReset(GroupCoordinator):
    """A rebalance that ends with no member left sets the generation to NoGeneration (-1)
    instead of starting the next one (initNextGeneration to Empty)."""

    def on_complete_join(self, group: GroupMetadata) -> None:
        super().on_complete_join(group)
        if group.is_(Empty):
            group.generation_id = -1


class NoMaxSizeCheck(GroupCoordinator):
    """acceptJoiningMember ignores group.max.size: every joining member is accepted."""

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        return True


class RemoveWithoutJoinCallback(GroupCoordinator):
    """removeMemberAndUpdateGroup drops a member with a parked JoinGroup without answering it
    (Kafka answers UNKNOWN_MEMBER_ID first, so the client retries)."""

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata) -> None:
        member.awaiting_join_callback = None
        super()._remove_member_and_update_group(group, member)


class LeaveKeepsSessionTimer(GroupCoordinator):
    """LeaveGroup removes the member but does not complete its heartbeat: the session timer
    of a member that is gone stays armed."""

    def _remove_current_member_from_group(self, group: GroupMetadata, member_id: str) -> None:
        self._remove_member_and_update_group(group, group.get(member_id))


class LastLeaveNoRebalance(GroupCoordinator):
    """The last member leaving (or expiring from) a Stable or CompletingRebalance group leaves
    it in that state with no member, instead of rebalancing it to Empty."""

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str = "") -> None:
        if group.state in (Stable, CompletingRebalance) and not group.members:
            return
        super()._maybe_prepare_rebalance(group, reason)


class RebalanceRollback(GroupCoordinator):
    """A rebalance started from CompletingRebalance rolls the generation back by one."""

    def _prepare_rebalance(self, group: GroupMetadata, reason: str = "") -> None:
        rolled = group.is_(CompletingRebalance)
        super()._prepare_rebalance(group, reason)
        if rolled:
            group.generation_id -= 1


class GenerationNotBumped(GroupCoordinator):
    """Completing a join starts the next generation without incrementing generationId."""

    def on_complete_join(self, group: GroupMetadata) -> None:
        if not group.is_(Dead):
            group.generation_id -= 1  # init_next_generation's += 1 brings it back
        super().on_complete_join(group)


class LeaderNotReassigned(GroupCoordinator):
    """When the leader leaves (LeaveGroup, session or join timeout), leaderId keeps naming it."""

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata) -> None:
        group.maybe_invoke_join_callback(
            member, JoinGroupResult.error_result(UNKNOWN_MEMBER_ID, Errors.UNKNOWN_MEMBER_ID)
        )
        leader = group.leader_id
        group.remove(member.member_id)
        if leader == member.member_id:
            group.leader_id = leader  # the seeded defect
        state = group.state
        if state in (Stable, CompletingRebalance):
            self._maybe_prepare_rebalance(group)
        elif state is PreparingRebalance:
            self.rebalance_purgatory.check_and_complete(GroupJoinKey(group.group_id))


class SessionExpiryKeepsMember(GroupCoordinator):
    """A member whose session timeout expires stays in the group (pending members still go)."""

    def on_expire_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool) -> None:
        if is_pending:
            super().on_expire_heartbeat(group, member_id, is_pending)


class RebalanceTimeoutKeepsMember(GroupCoordinator):
    """When the join phase ends, members that did not rejoin are kept in the next generation
    instead of being removed (onCompleteJoin without its removal loop)."""

    def on_complete_join(self, group: GroupMetadata) -> None:
        # GroupCoordinator.on_complete_join without its first loop (removing the members
        # that did not rejoin); the rest as it is.
        if group.is_(Dead):
            return
        group.maybe_elect_new_joined_leader()
        group.init_next_generation()
        if group.is_(Empty):
            self.store.store_group(StoredGroup.of(group, {}), lambda error: None)
            return
        for member in group.all_member_metadata():
            result = self._current_join_result(group, member.member_id, with_members=group.is_leader(member.member_id))
            group.maybe_invoke_join_callback(member, result)
            self._complete_and_schedule_next_heartbeat_expiration(group, member)
            member.is_new = False
            group.add_pending_sync_member(member.member_id)
        self._schedule_pending_sync(group)


class TwoLeaders(GroupCoordinator):
    """A known member rejoining in CompletingRebalance with unchanged metadata is told that it
    leads the generation (and given the member list), whoever the leader is."""

    _rejoining: str | None = None

    def _do_current_member_join_group(self, group: GroupMetadata, member_id: str, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        self._rejoining = member_id
        try:
            super()._do_current_member_join_group(group, member_id, *args, **kwargs)
        finally:
            self._rejoining = None

    def _current_join_result(
        self, group: GroupMetadata, member_id: str, with_members: bool, leader_id: str | None = None
    ) -> JoinGroupResult:
        if group.is_(CompletingRebalance) and member_id == self._rejoining:
            return super()._current_join_result(group, member_id, True, member_id)
        return super()._current_join_result(group, member_id, with_members, leader_id)


class LeaderGivenStaleMembers(GroupCoordinator):
    """onCompleteJoin hands the leader the member list from before the members that did not
    rejoin were removed, so it assigns partitions to members outside the generation."""

    _stale: list[MemberMetadata] | None = None

    def on_complete_join(self, group: GroupMetadata) -> None:
        self._stale = list(group.all_member_metadata())
        try:
            super().on_complete_join(group)
        finally:
            self._stale = None

    def _current_join_result(
        self, group: GroupMetadata, member_id: str, with_members: bool, leader_id: str | None = None
    ) -> JoinGroupResult:
        result = super()._current_join_result(group, member_id, with_members, leader_id)
        if not with_members or self._stale is None:
            return result
        listed = {m.member_id for m in result.members}
        gone = [
            JoinGroupResponseMember(
                m.member_id, m.group_instance_id, dict(m.protocols).get(group.protocol_name or "", "")
            )
            for m in self._stale
            if m.member_id not in listed
        ]
        return replace(result, members=list(result.members) + gone)


class PendingLeaveRebalances(GroupCoordinator):
    """A pending member's LeaveGroup rebalances the group (maybePrepareRebalance) instead of
    only re-checking a join in progress."""

    _leaving = False

    def _leave_group(self, group_id: str, leaving_members: Sequence[LeaveMemberIdentity]) -> LeaveGroupResult:
        self._leaving = True
        try:
            return super()._leave_group(group_id, leaving_members)
        finally:
            self._leaving = False

    def _remove_pending_member_and_update_group(self, group: GroupMetadata, member_id: str) -> None:
        super()._remove_pending_member_and_update_group(group, member_id)
        if self._leaving:
            self._maybe_prepare_rebalance(group)


class _AcknowledgeWithoutWriting:
    """A group store that acknowledges a write (callback NONE) without making it."""

    def __init__(self, store: object) -> None:
        self._store = store

    def store_group(self, record: StoredGroup, callback: Callable[[Errors], None]) -> None:
        callback(Errors.NONE)

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)


@contextmanager
def _acknowledging_without_writing(coordinator: GroupCoordinator) -> Iterator[None]:
    """The coordinator's store acknowledges every write without making it, for one handler."""
    real = coordinator.store
    coordinator.store = _AcknowledgeWithoutWriting(real)  # type: ignore[assignment]
    try:
        yield
    finally:
        coordinator.store = real


class StaticReplaceNotStored(GroupCoordinator):
    """updateStaticMemberAndRebalance in Stable answers the rejoining static member with its new
    member id without storing the group (the spec's bug_static_replace_not_stored): a reload
    brings back the old id, so the id the client holds is unknown after a failover."""

    def _update_static_member_and_rebalance(self, *args: object, **kwargs: object) -> None:
        with _acknowledging_without_writing(self):
            super()._update_static_member_and_rebalance(*args, **kwargs)  # type: ignore[arg-type]


class SyncAcknowledgedNotStored(GroupCoordinator):
    """The leader's SyncGroup is answered as stored without storing the group (the spec's
    bug_sync_acknowledged_not_stored): every member gets NONE and the group goes Stable, but
    a reload comes back without the generation and forms its number again with another
    leader (AcknowledgedGenerationLeaderUnique)."""

    def _sync_group(self, *args: object, **kwargs: object) -> None:
        with _acknowledging_without_writing(self):
            super()._sync_group(*args, **kwargs)  # type: ignore[arg-type]


class StaticRevertDropped(GroupCoordinator):
    """updateStaticMemberAndRebalance's storeGroup callback answers a failed append with the
    error but drops the revert (the spec's bug_static_revert_dropped): the group keeps the new
    member id, which no client was told, instead of renaming the member back to the old one."""

    def _on_static_member_stored(self, group: GroupMetadata, *args: object) -> None:
        # (member, old id, new id, instance id, old protocols, old timeouts x2, leader, respond, error)
        current_leader, respond, error = args[-3:]
        if error is Errors.NONE:
            super()._on_static_member_stored(group, *args)  # type: ignore[arg-type]
            return
        leader = current_leader or ""
        result = JoinGroupResult(
            [], UNKNOWN_MEMBER_ID, group.generation_id, group.protocol_type, group.protocol_name, leader, error
        )
        respond.answer_if_unanswered(result)  # type: ignore[attr-defined]


class StaticReplaceKeepsOldMember(GroupCoordinator):
    """replaceStaticMember moves the MemberMetadata to the new member id but leaves the old id
    in the group beside it (the spec's bug_static_replace_keeps_old_member): two members carry
    one group.instance.id, the old one a zombie whose session timer still runs
    (OneOwnerPerInstanceId)."""

    def _update_static_member_and_rebalance(
        self, group: GroupMetadata, old_member_id: str, new_member_id: str, group_instance_id: str, *rest: object
    ) -> None:
        old = group.get(old_member_id)
        super()._update_static_member_and_rebalance(
            group,
            old_member_id,
            new_member_id,
            group_instance_id,
            *rest,  # type: ignore[arg-type]
        )
        if group.has(new_member_id) and not group.has(old_member_id):
            zombie = MemberMetadata(
                old_member_id,
                group_instance_id,
                old.client_id,
                old.client_host,
                old.rebalance_timeout_ms,
                old.session_timeout_ms,
                old.protocol_type,
                old.protocols,
                old.assignment,
            )
            zombie.is_new = old.is_new
            group.members[old_member_id] = zombie  # the seeded defect: the old id stays
            group._inc_supported_protocols(zombie)


class CommitFromUnknownMemberAccepted(GroupCoordinator):
    """doCommitOffsets without the member check (group.has(memberId)): a consumer that was
    removed (its session expired) commits with the generation the group still has while it
    prepares a rebalance, and its offsets are stored (the spec's
    bug_commit_from_unknown_member_accepted; NoCommitOutsideCurrentGeneration)."""

    def _commit_offsets(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int, offsets: dict[str, int]
    ) -> Errors:
        group = self._groups.get(group_id)
        if (
            group is not None
            and group.state in (Stable, PreparingRebalance)
            and self._validate_group_status(group_id, allow_empty_id=True) is None
            and group_instance_id is None
            and member_id
            and not group.has(member_id)
            and generation_id == group.generation_id
        ):
            self.offsets.setdefault(group_id, {}).update(offsets)  # no MemberMetadata to heartbeat
            return Errors.NONE
        return super()._commit_offsets(group_id, member_id, group_instance_id, generation_id, offsets)


# -- the areas the spec does not model yet (static membership, the asynchronous store, the
# -- loading window) and commit bugs no random client run reaches: caught by the format-2
# -- scenarios (`kgc replay --bug`), not by conform / validate, which is why they are kept
# -- apart from BUGS. `kgc fuzz` finds most through its response table and properties
# -- (tests/conformance/test_fuzz_time_to_find.py names those it does not; `kgc bench fuzz`).


class CommitFromOldGenerationAccepted(GroupCoordinator):
    """An OffsetCommit from a current member is accepted whatever its generation (the check
    generations exist for, GroupCoordinator.validateOffsetCommit, is skipped)."""

    def _validate_offset_commit(
        self, group: GroupMetadata, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> Errors | None:
        error = super()._validate_offset_commit(group, generation_id, member_id, group_instance_id)
        return None if error is Errors.ILLEGAL_GENERATION else error


class CommitInCompletingRebalanceAccepted(GroupCoordinator):
    """An OffsetCommit in CompletingRebalance is stored instead of answered
    REBALANCE_IN_PROGRESS (the member has its generation but not yet its assignment)."""

    def _commit_offsets(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int, offsets: dict[str, int]
    ) -> Errors:
        group = self._groups.get(group_id)
        if group is not None and group.is_(CompletingRebalance) and self._validate_group_status(group_id) is None:
            if self._validate_offset_commit(group, generation_id, member_id, group_instance_id) is None:
                self.offsets.setdefault(group_id, {}).update(offsets)
                return Errors.NONE
        return super()._commit_offsets(group_id, member_id, group_instance_id, generation_id, offsets)


class FencedInstanceNotChecked(GroupCoordinator):
    """Requests carrying a group.instance.id are checked by member id alone, so a replaced
    static member is told UNKNOWN_MEMBER_ID instead of FENCED_INSTANCE_ID (and a current
    member id sent with another member's instance id passes)."""

    def _validate_current_member(
        self, group: GroupMetadata, member_id: str, group_instance_id: str | None
    ) -> Errors | None:
        return super()._validate_current_member(group, member_id, None)


class StoreFailureTreatedAsSuccess(GroupCoordinator):
    """The leader's SyncGroup store callback ignores the append's error: the assignment is
    sent and the group becomes Stable although the generation was never written."""

    def _on_assignment_stored(
        self, group: GroupMetadata, generation_id: int, assignment: dict[str, str], error: Errors
    ) -> None:
        super()._on_assignment_stored(group, generation_id, assignment, Errors.NONE)


class StaticRejoinNotReverted(GroupCoordinator):
    """When storing a static member's replaced member id fails, the new id is kept (the join
    is still answered with the error), so the instance maps to an id no client holds."""

    def _on_static_member_stored(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        old_member_id: str,
        new_member_id: str,
        group_instance_id: str,
        *rest: object,
    ) -> None:
        super()._on_static_member_stored(
            group,
            member,
            old_member_id,
            new_member_id,
            group_instance_id,
            *rest,  # type: ignore[arg-type]
        )
        error = rest[-1]
        if error is not Errors.NONE and group.current_static_member_id(group_instance_id) == old_member_id:
            group.replace_static_member(group_instance_id, old_member_id, new_member_id)  # the seeded defect


class LoadingWindowIgnored(GroupCoordinator):
    """While a group's partition loads, requests are answered as if the coordinator did not
    own it (NOT_COORDINATOR) instead of COORDINATOR_LOAD_IN_PROGRESS / NONE /
    REBALANCE_IN_PROGRESS."""

    def _validate_group_status(self, group_id: str, allow_empty_id: bool = False) -> Errors | None:
        error = super()._validate_group_status(group_id, allow_empty_id)
        return Errors.NOT_COORDINATOR if error is Errors.COORDINATOR_LOAD_IN_PROGRESS else error


class _FirstChoiceMember(MemberMetadata):
    """Reads as empty metadata for a protocol it does not support, where Kafka's
    MemberMetadata.metadata would throw."""

    def metadata(self, protocol: str) -> str:
        return dict(self.protocols).get(protocol, "")


class _FirstChoiceGroup(GroupMetadata):
    """Votes each member's first choice while `first_choice_vote` is set (initNextGeneration)."""

    first_choice_vote = False

    def select_protocol(self) -> str:
        if not self.first_choice_vote:
            return super().select_protocol()
        votes = Counter(m.protocols[0][0] for m in self.members.values())
        most = max(votes.values())
        return min(name for name, n in votes.items() if n == most)


class VoteIgnoresCandidates(GroupCoordinator):
    """initNextGeneration's vote counts each member's first choice, whether every member
    supports it or not (MemberMetadata.vote without the candidates): a group whose members
    prefer different protocols may select one a member cannot decode. The spec's twin is
    Bug = "vote_ignores_candidates" (NextGenerationProtocol); ties go to the least name. A
    member without the selected protocol reads as empty metadata wherever the coordinator
    asks for it (Kafka's MemberMetadata.metadata would throw: the defect shows in the group,
    not as an internal error). Interpreted subclasses of the group and member carry the
    defect: kgc.impl.group may be compiled, and compiled callers do not see a method patched
    onto an instance."""

    group_metadata_class = _FirstChoiceGroup
    member_metadata_class = _FirstChoiceMember

    def on_complete_join(self, group: GroupMetadata) -> None:
        assert isinstance(group, _FirstChoiceGroup)
        group.first_choice_vote = True
        try:
            super().on_complete_join(group)
        finally:
            group.first_choice_vote = False


class TimerInsertedFirst(GroupCoordinator):
    """Runs on a timer that puts each new task in front of the live ones and fires from the
    front (seeded_timer.InsertFirstTimer), the spec's `timer_inserted_first`: the coordinator's
    code is Kafka's, its DelayedHeartbeats, DelayedJoins and DelayedSyncs fire out of order."""

    def __init__(self, config: GroupConfig, clock: Clock, timer: SystemTimer, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, clock, timer, *args, **kwargs)
        if not isinstance(clock, VirtualClock):
            raise TypeError("timer_inserted_first runs on a VirtualClock")
        faulty = InsertFirstTimer(clock)
        self.timer = faulty  # type: ignore[assignment]
        for purgatory in (self.heartbeat_purgatory, self.rebalance_purgatory):
            purgatory._add = faulty.add


#: bugs in areas the spec does not model yet -> the scenario that catches each
SCENARIO_ONLY_BUGS: dict[str, type[GroupCoordinator]] = {
    "commit_from_old_generation_accepted": CommitFromOldGenerationAccepted,
    "commit_in_completing_rebalance_accepted": CommitInCompletingRebalanceAccepted,
    "fenced_instance_not_checked": FencedInstanceNotChecked,
    "store_failure_treated_as_success": StoreFailureTreatedAsSuccess,
    "static_rejoin_not_reverted": StaticRejoinNotReverted,
    "loading_window_ignored": LoadingWindowIgnored,
}

# -- faults the protocol cannot see: the coordinator behaves as Kafka's does, but records an
# -- internal error (or answers a request twice). Every detector reads the coordinator's fault
# -- counters (conformance/faults.py); no state or response differs, so nothing else finds them.


class SwallowedRemovalError(GroupCoordinator):
    """Removing a member (LeaveGroup, session or join expiry) raises after the removal is done,
    and the coordinator's guard swallows it into `internal_errors`: every state and response is
    Kafka's, only the fault counter tells."""

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata) -> None:
        super()._remove_member_and_update_group(group, member)
        try:
            raise RuntimeError(f"seeded: bookkeeping after removing {member.member_id} failed")
        except RuntimeError:
            self._record_internal_error("_remove_member_and_update_group")


# -- implementation twins of the spec's liveness bugs (spec/models/bug_NAME.cfg): each makes a
# -- wait unbounded, which the timed liveness of the Hypothesis machine
# -- (conformance/timed_liveness.py) checks on the implementation; conform and validate see the
# -- step where the wait should have ended (or the timer it should have set) differ from the spec.


class RebalanceTimeoutWaitsForAll(GroupCoordinator):
    """At the rebalance timeout, a join phase with a member that has not rejoined waits another
    rebalance timeout instead of completing without it (DelayedJoin.onComplete after
    forceComplete): a crashed member keeps the group in PreparingRebalance."""

    _initial = False

    def on_complete_initial_join(self, op: InitialDelayedJoin) -> None:
        self._initial = True
        try:
            super().on_complete_initial_join(op)
        finally:
            self._initial = False

    def on_complete_join(self, group: GroupMetadata) -> None:
        # (with no member the rebalance timeout is 0: waiting again would never end a tick)
        if (
            not self._initial
            and group.is_(PreparingRebalance)
            and group.members
            and group.rebalance_timeout_ms > 0
            and not group.has_all_members_joined
        ):
            self.rebalance_purgatory.try_complete_else_watch(
                DelayedJoin(self, group, group.rebalance_timeout_ms), [GroupJoinKey(group.group_id)]
            )
            return
        super().on_complete_join(group)


class NoDelayedSync(GroupCoordinator):
    """onCompleteJoin schedules no DelayedSync: a group whose leader never sends its SyncGroup
    stays in CompletingRebalance."""

    def _schedule_pending_sync(self, group: GroupMetadata) -> None:
        return


class PropagateNoHeartbeatReschedule(GroupCoordinator):
    """propagateAssignment answers the parked SyncGroups without restarting the members'
    session timers: a member whose timer expired while it waited (excused then) is never
    timed out again."""

    def _propagate_assignment(self, group: GroupMetadata, error: Errors) -> None:
        ok = error is Errors.NONE
        for member in group.all_member_metadata():
            result = SyncGroupResult(
                error, group.protocol_type if ok else None, group.protocol_name if ok else None, member.assignment
            )
            group.maybe_invoke_sync_callback(member, result)


#: implementation twins of the spec's liveness bugs: each also moves a timer or a state away from
#: the spec's (a DelayedJoin that should have completed, a DelayedSync never scheduled, a session
#: timer not restarted), so conform and validate catch them as a step mismatch, fuzz as a
#: timed-liveness violation
LIVENESS_BUGS: dict[str, type[GroupCoordinator]] = {
    "rebalance_timeout_waits_for_all": RebalanceTimeoutWaitsForAll,
    "no_delayed_sync": NoDelayedSync,
    "propagate_no_heartbeat_reschedule": PropagateNoHeartbeatReschedule,
}

#: name -> coordinator class with that one defect ("none": the real one)
BUGS: dict[str, type[GroupCoordinator]] = {
    "none": GroupCoordinator,
    "sync_in_preparing_rebalance": SyncInPreparingRebalance,
    "sync_answered_in_preparing_rebalance": SyncAnsweredInPreparingRebalance,
    "heartbeat_rebalances_stable": HeartbeatRebalancesStable,
    "stable_heartbeat_rebalance_in_progress": StableHeartbeatRebalanceInProgress,
    "empty_generation_reset": EmptyGenerationReset,
    "no_max_size_check": NoMaxSizeCheck,
    "remove_without_join_callback": RemoveWithoutJoinCallback,
    "leave_keeps_session_timer": LeaveKeepsSessionTimer,
    "last_leave_no_rebalance": LastLeaveNoRebalance,
    "rebalance_rollback": RebalanceRollback,
    "generation_not_bumped": GenerationNotBumped,
    "leader_not_reassigned": LeaderNotReassigned,
    "session_expiry_keeps_member": SessionExpiryKeepsMember,
    "rebalance_timeout_keeps_member": RebalanceTimeoutKeepsMember,
    "two_leaders": TwoLeaders,
    "leader_given_stale_members": LeaderGivenStaleMembers,
    "pending_leave_rebalances": PendingLeaveRebalances,
    "static_replace_not_stored": StaticReplaceNotStored,
    "sync_acknowledged_not_stored": SyncAcknowledgedNotStored,
    "static_replace_keeps_old_member": StaticReplaceKeepsOldMember,
    "static_revert_dropped": StaticRevertDropped,
    "commit_from_unknown_member_accepted": CommitFromUnknownMemberAccepted,
    "vote_ignores_candidates": VoteIgnoresCandidates,
    "timer_inserted_first": TimerInsertedFirst,
    **LIVENESS_BUGS,
}

#: bugs that only the coordinator's fault counters show
INTERNAL_ERROR_BUGS: dict[str, type[GroupCoordinator]] = {
    "swallowed_removal_error": SwallowedRemovalError,
}


def coordinator_class(name: str | None) -> type[GroupCoordinator]:
    """The coordinator with seeded defect `name` (None or "" or "none": the real one)."""
    key = name or "none"
    known = {**BUGS, **SCENARIO_ONLY_BUGS, **INTERNAL_ERROR_BUGS, **LIVENESS_BUGS}
    if key not in known:
        raise KeyError(
            f"no seeded implementation bug {key!r}; known: {', '.join(sorted(known))} (`kgc bugs` lists every seeded bug and its layers)"
        )
    return known[key]


def coordinator_class_from_env() -> type[GroupCoordinator]:
    return coordinator_class(os.environ.get(ENV_VAR))
