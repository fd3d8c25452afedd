"""Response properties (conformance/responses.py): the table covers every situation the
Hypothesis machine sends, and each property fails on a coordinator that breaks it (a seeded
bug, or a defect written here) and holds on the real coordinator driven the same way."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from kgc.conformance.abstraction import GROUP_ID
from kgc.conformance.recorder import RunRecorder
from kgc.conformance.responses import RESPONSE_PROPERTIES, RESPONSE_TABLE, ResponseOracle, response_checked, row_for
from kgc.conformance.seeded_bugs import coordinator_class
from kgc.conformance.stateful import DEFAULT_CONSTANTS, hunt
from kgc.impl.coordinator import GroupCoordinator, JoinGroupResult, LeaveMemberIdentity
from kgc.impl.errors import Errors
from kgc.impl.group import GroupMetadata, GroupState

K = DEFAULT_CONSTANTS
#: c1 static, c2 and c3 configured with one group.instance.id (a consumer and the process that
#: takes its instance over); room for a third member, since acceptJoiningMember counts a static
#: JoinGroup with no member id as a new member (at group.max.size: GROUP_MAX_SIZE_REACHED)
K_STATIC = replace(K, instances=(("c1",), ("c2", "c3")), max_group_size=3)


class StaleHeartbeatAccepted(GroupCoordinator):
    """A Heartbeat is judged as if it carried the group's generation, whatever it carried."""

    def _heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int) -> Errors:
        group = self._groups.get(group_id)
        current = group.generation_id if group is not None else generation_id
        return super()._heartbeat(group_id, member_id, group_instance_id, current)


class FollowerInstallsAssignment(GroupCoordinator):
    """A follower's SyncGroup that carries an assignment installs it, as a leader's would."""

    def _sync_group(self, group_id: str, generation: int, member_id: str, *rest: Any) -> None:
        assignment, respond = rest[-2], rest[-1]
        group: GroupMetadata | None = self._groups.get(group_id)
        if (
            group is not None
            and group.is_(GroupState.CompletingRebalance)
            and member_id in group.members
            and not group.is_leader(member_id)
            and assignment
        ):
            group.get(member_id).awaiting_sync_callback = respond
            self._set_and_propagate_assignment(group, dict(assignment))
            group.transition_to(GroupState.Stable)
            return
        super()._sync_group(group_id, generation, member_id, *rest)


class UnknownInstanceAccepted(GroupCoordinator):
    """validateCurrentMember without its UNKNOWN_MEMBER_ID for a group.instance.id that maps to
    no member (the mutant `coordinator:544` of README's mutation sample): a current member's
    request carrying an unknown instance id is accepted."""

    def _validate_current_member(
        self, group: GroupMetadata, member_id: str, group_instance_id: str | None
    ) -> Errors | None:
        if group_instance_id is not None and group.current_static_member_id(group_instance_id) is None:
            group_instance_id = None
        return super()._validate_current_member(group, member_id, group_instance_id)


class LeaderRejoinNotRebalanced(GroupCoordinator):
    """doCurrentMemberJoinGroup in Stable treats the leader as a follower: with unchanged
    metadata it is told the current generation (the mutant `coordinator:609` of README's
    mutation sample, `isLeader || !matches` made `isLeader && !matches`)."""

    def _do_current_member_join_group(self, group: GroupMetadata, member_id: str, *rest: Any) -> None:
        protocols, respond = rest[-2], rest[-1]
        member = group.members.get(member_id)
        if group.is_(GroupState.Stable) and member is not None and member.matches(protocols):
            respond(self._current_join_result(group, member_id, with_members=False))
            return
        super()._do_current_member_join_group(group, member_id, *rest)


def _recorder(cls: type[GroupCoordinator], k: Any = K) -> tuple[RunRecorder, ResponseOracle]:
    rec = RunRecorder(k, response_checked(cls), lenient=True)
    oracle: ResponseOracle = rec.world.coordinator.response_oracle  # type: ignore[attr-defined]
    oracle.group_id = GROUP_ID
    return rec, oracle


class FailedStoreKeepsNewMemberId(GroupCoordinator):
    """updateStaticMemberAndRebalance's callback answers a failed store's error but does not
    revert the static member to its old id."""

    def _on_static_member_stored(self, group: Any, member: Any, old: str, new: str, *rest: Any) -> None:
        failed = rest[-1] is not Errors.NONE
        super()._on_static_member_stored(group, member, old, "not-the-member" if failed else new, *rest)


class LeaveKeepsMember(GroupCoordinator):
    """handleLeaveGroup answers NONE for the member but does not remove it."""

    def _remove_member_with_reason(self, group: Any, member: Any, reason: str) -> None:
        if "on LeaveGroup" not in reason:
            super()._remove_member_with_reason(group, member, reason)


class RemovalLeavesJoinWaiting(GroupCoordinator):
    """removeMemberAndUpdateGroup in PreparingRebalance removes the member but does not try to
    complete the join (the mutant coordinator:1249): the others wait for the rebalance timeout."""

    def _remove_member_and_update_group(self, group: Any, member: Any) -> None:
        if group.state is not GroupState.PreparingRebalance:
            super()._remove_member_and_update_group(group, member)
            return
        group.maybe_invoke_join_callback(member, JoinGroupResult.error_result("", Errors.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)


class StaticStoreCallbackLost(GroupCoordinator):
    """updateStaticMemberAndRebalance's storeGroup callback never runs (the mutant
    coordinator:715 makes no store at all): the replacing JoinGroup stays parked in Stable."""

    def _on_static_member_stored(self, *args: Any) -> None:
        pass


class SyncProtocolNameUnchecked(GroupCoordinator):
    """validateSyncGroup ignores SyncGroup v5's protocol name (the mutant coordinator:1094)."""

    def _validate_sync_group(self, group: Any, generation: int, member: str, kind: Any, name: Any, inst: Any) -> Any:
        return super()._validate_sync_group(group, generation, member, kind, None, inst)


class LoadDropsProtocolType(GroupCoordinator):
    """The loaded members lose the record's protocol type (the mutant coordinator:1492:24)."""

    def _group_from_record(self, record: Any) -> GroupMetadata:
        group = super()._group_from_record(record)
        for member in group.members.values():
            member.protocol_type = ""
        return group


class LoadWindowForgotten(GroupCoordinator):
    """onGroupLoadBegin does not open the loading window (the mutant coordinator:1486)."""

    def on_group_load_begin(self, group_id: str) -> None:
        pass


def _findings(rec: RunRecorder, oracle: ResponseOracle) -> dict[str, list[str]]:
    oracle.after_step(rec.world.coordinator)
    return oracle.take()


def _completing(rec: RunRecorder) -> None:
    """c1 and c2 joined; the join phase over: CompletingRebalance, c1 leading."""
    rec.step("JoinGroupUnknownMember", "c1", False)
    rec.step("JoinGroupUnknownMember", "c2", False)
    rec.tick(K.ms(K.rebalance + K.initial_delay))
    assert rec.world.group is not None and rec.world.group.state is GroupState.CompletingRebalance


def _stable(rec: RunRecorder) -> None:
    _completing(rec)
    leader = next(c for c in ("c1", "c2") if rec.world.clients[c].leader)
    rec.step("SyncGroupLeader", leader)
    rec.step("SyncGroupFollower", "c2" if leader == "c1" else "c1")
    assert rec.world.group is not None and rec.world.group.state is GroupState.Stable


def _stable_stored(rec: RunRecorder, oracle: ResponseOracle) -> None:
    """As _stable, with a deferred store: the leader's append acknowledged, as the machine's
    store_callback does it."""
    _completing(rec)
    leader = next(c for c in ("c1", "c2") if rec.world.clients[c].leader)
    rec.step("SyncGroupLeader", leader)
    rec.step("SyncGroupFollower", "c2" if leader == "c1" else "c1")
    oracle.store_completing("NONE")
    rec.store_callback("NONE")
    oracle.store_completed(rec.world.coordinator)


def _member(rec: RunRecorder, client: str) -> str:
    group = rec.world.group
    assert group is not None
    return next(m for m in group.members if m.startswith(client + "-"))


def _send(rec: RunRecorder, kind: str, member: str, send: Callable[[GroupCoordinator, Any], None]) -> None:
    rec.request(kind, send, member, f"{kind}({member})")


def test_every_row_cites_kafka_and_every_situation_has_a_row() -> None:
    assert all(row.cite for row in RESPONSE_TABLE.values())
    wheres = ("NotCoordinator", "Loading", "NoGroup", "Empty", "PreparingRebalance", "CompletingRebalance", "Stable")
    whos = {
        "join": ("new", "new-rk", "pending", "member", "stranger", "bad-session", "full"),
        "sync": ("leader", "follower", "stale", "stranger"),
        "heartbeat": ("leader", "follower", "stale", "stranger"),
        "leave": ("member", "pending", "stranger"),
        "commit": ("leader", "follower", "stale", "stranger"),
    }
    missing = [(k, w, who) for k, ws in whos.items() for w in wheres for who in ws if row_for(k, w, who) is None]
    # a commit with generation -1 is "unversioned" only where there is no group or it is Empty
    missing += [
        ("commit", w, "unversioned") for w in ("NoGroup", "Empty") if row_for("commit", w, "unversioned") is None
    ]
    assert not missing
    # requests with a group.instance.id, in the states where the group has members
    static = {
        "join": ("fenced", "unknown-instance", "static-pending"),
        "sync": ("fenced", "unknown-instance"),
        "heartbeat": ("fenced", "unknown-instance"),
        "leave": ("fenced", "unknown-instance"),
    }
    live = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable")
    missing = [(k, w, who) for k, ws in static.items() for w in live for who in ws if row_for(k, w, who) is None]
    missing += [w for w in live[1:] if row_for("join", w, "static-replace") is None]
    assert not missing
    # a static member is never replaced in Empty (it has no members): Kafka throws there
    assert row_for("join", "Empty", "static-replace") is None


@pytest.mark.parametrize(
    ("cls", "expect"),
    [(GroupCoordinator, None), (coordinator_class("heartbeat_rebalances_stable"), "ResponseAllowed")],
)
def test_response_allowed_judges_a_stable_heartbeat(cls: type[GroupCoordinator], expect: str | None) -> None:
    rec, oracle = _recorder(cls)
    _stable(rec)
    assert _findings(rec, oracle) == {}
    rec.step("Heartbeat", "c2")
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found


@pytest.mark.parametrize(
    ("cls", "expect"),
    [
        (GroupCoordinator, None),
        (coordinator_class("sync_in_preparing_rebalance"), "ResponseAllowed"),
        (coordinator_class("sync_answered_in_preparing_rebalance"), "ResponseAllowed"),
    ],
)
def test_response_allowed_judges_a_sync_in_preparing_rebalance(cls: type[GroupCoordinator], expect: str | None) -> None:
    rec, oracle = _recorder(cls)
    _completing(rec)
    leader = next(c for c in ("c1", "c2") if rec.world.clients[c].leader)
    rec.step("LeaveGroup", "c2" if leader == "c1" else "c1")  # back to PreparingRebalance
    assert rec.world.group is not None and rec.world.group.state is GroupState.PreparingRebalance
    _findings(rec, oracle)
    rec.step("SyncGroupLeader", leader)  # sent before the leader heard of the rebalance
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found


@pytest.mark.parametrize(
    ("cls", "expect"), [(GroupCoordinator, None), (StaleHeartbeatAccepted, "StaleGenerationRejected")]
)
def test_stale_generation_rejected(cls: type[GroupCoordinator], expect: str | None) -> None:
    rec, oracle = _recorder(cls)
    _stable(rec)
    _findings(rec, oracle)
    member = _member(rec, "c2")
    stale = rec.world.group.generation_id - 1  # type: ignore[union-attr]
    _send(rec, "heartbeat", member, lambda c, answer: c.handle_heartbeat(GROUP_ID, member, None, stale, answer))
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found


@pytest.mark.parametrize(
    ("cls", "expect"), [(GroupCoordinator, None), (FollowerInstallsAssignment, "AssignmentFromCurrentLeader")]
)
def test_assignment_from_current_leader(cls: type[GroupCoordinator], expect: str | None) -> None:
    rec, oracle = _recorder(cls)
    _completing(rec)
    _findings(rec, oracle)
    group = rec.world.group
    assert group is not None
    follower = next(m for m in group.members if not group.is_leader(m))
    generation = group.generation_id
    assignment = {m: f"partition-of-{m}" for m in group.members}
    _send(
        rec,
        "sync",
        follower,
        lambda c, answer: c.handle_sync_group(GROUP_ID, generation, follower, None, None, None, assignment, answer),
    )
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found


@pytest.mark.parametrize(
    ("cls", "expect"),
    [(GroupCoordinator, None), (coordinator_class("remove_without_join_callback"), "JoinAnsweredBeforeRemoval")],
)
def test_join_answered_before_removal(cls: type[GroupCoordinator], expect: str | None) -> None:
    rec, oracle = _recorder(cls)
    rec.step("JoinGroupUnknownMember", "c1", False)  # parked: the initial delay
    member = _member(rec, "c1")
    _findings(rec, oracle)
    _send(
        rec,
        "leave",
        member,
        lambda c, answer: c.handle_leave_group(GROUP_ID, [LeaveMemberIdentity(member, None)], answer),
    )
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found


@pytest.mark.parametrize(
    ("cls", "expect"),
    [(GroupCoordinator, None), (coordinator_class("rebalance_timeout_keeps_member"), "GenerationMembersJoined")],
)
def test_generation_members_joined(cls: type[GroupCoordinator], expect: str | None) -> None:
    rec, oracle = _recorder(cls)
    _stable(rec)
    _findings(rec, oracle)
    rec.step("ClientRejoin", "c1")
    rec.step("JoinGroupKnownMember", "c1", False)  # c2 never rejoins
    rec.tick(K.ms(K.rebalance))
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found


@pytest.mark.parametrize(
    ("cls", "expect"),
    [
        (GroupCoordinator, None),
        (coordinator_class("commit_from_old_generation_accepted"), "StaleGenerationRejected"),
        (coordinator_class("commit_from_unknown_member_accepted"), "ResponseAllowed"),
    ],
)
def test_offset_commits_are_judged_by_validate_offset_commit(cls: type[GroupCoordinator], expect: str | None) -> None:
    rec, oracle = _recorder(cls)
    _stable(rec)
    _findings(rec, oracle)
    group = rec.world.group
    assert group is not None
    gen, member = group.generation_id, _member(rec, "c2")
    for who, generation in ((member, gen), (member, gen - 1), ("gone-member", gen), ("", -1)):
        _send(
            rec,
            "commit",
            who,
            lambda c, answer, who=who, generation=generation: c.handle_commit_offsets(
                GROUP_ID, who, None, generation, {"t-0": 1}, answer
            ),
        )
    rec.step("LeaveGroup", "c2")  # c2's member is gone; the group prepares a rebalance, same generation
    _send(
        rec,
        "commit",
        member,
        lambda c, answer: c.handle_commit_offsets(GROUP_ID, member, None, gen, {"t-0": 2}, answer),
    )
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found


@pytest.mark.parametrize(
    ("cls", "expect"),
    [(GroupCoordinator, None), (coordinator_class("store_failure_treated_as_success"), "ResponseAllowed")],
)
def test_a_failed_store_is_what_the_parked_syncs_are_told(cls: type[GroupCoordinator], expect: str | None) -> None:
    rec = RunRecorder(replace(K, store_async=True), response_checked(cls), lenient=True)
    oracle: ResponseOracle = rec.world.coordinator.response_oracle  # type: ignore[attr-defined]
    oracle.group_id = GROUP_ID
    _completing(rec)
    leader = next(c for c in ("c1", "c2") if rec.world.clients[c].leader)
    rec.step("SyncGroupLeader", leader)  # parked until its append is acknowledged
    rec.step("SyncGroupFollower", "c2" if leader == "c1" else "c1")
    assert _findings(rec, oracle) == {}
    oracle.store_completing("NOT_COORDINATOR")  # as the machine's store_callback does
    rec.store_callback("NOT_LEADER_OR_FOLLOWER")
    oracle.store_completed(rec.world.coordinator)
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found


def test_every_property_is_tested_here() -> None:
    tested = {"ResponseAllowed", "StaleGenerationRejected", "AssignmentFromCurrentLeader"}
    tested |= {"JoinAnsweredBeforeRemoval", "GenerationMembersJoined", "FailedStaticReplacementReverted"}
    tested |= {"LeftMemberRemoved", "JoinParkedOnlyInRebalance", "JoinCompletedOnceAllJoined", "LoadedAsStored"}
    assert tested == set(RESPONSE_PROPERTIES)


def test_the_machine_reports_a_response_property() -> None:
    """kgc fuzz's machine checks the answers after every step (derandomized examples, no
    shrinking; the budget of test_fuzz_time_to_find). The defect breaks no state property (the
    group stays Stable, as a follower's rejoin leaves it), so only an answer can show it; it
    was heartbeat_rebalances_stable, whose first violation is StableRebalanceOnlyByTrigger
    alone on some example sequences (on b3fc93d's)."""
    result = hunt(LeaderRejoinNotRebalanced, 300.0, max_examples=150)
    assert result.violation is not None, (result.examples, result.error)
    assert "ResponseAllowed" in result.violation.report.violations, result.violation


@pytest.mark.parametrize(
    ("cls", "expect"),
    [(GroupCoordinator, None), (UnknownInstanceAccepted, "ResponseAllowed")],
)
def test_an_unknown_instance_id_is_turned_away(cls: type[GroupCoordinator], expect: str | None) -> None:
    """A member's Heartbeat and SyncGroup carrying a group.instance.id that maps to no member:
    validateCurrentMember answers UNKNOWN_MEMBER_ID (the machine's stray requests send them)."""
    rec, oracle = _recorder(cls, K_STATIC)
    _stable(rec)
    assert _findings(rec, oracle) == {}
    member, generation = rec.world.clients["c1"].member, rec.world.clients["c1"].gen
    _send(rec, "heartbeat", member, lambda c, a: c.handle_heartbeat(GROUP_ID, member, "instance-x", generation, a))
    _send(
        rec,
        "sync",
        member,
        lambda c, a: c.handle_sync_group(GROUP_ID, generation, member, None, None, "instance-x", {}, a),
    )
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found


@pytest.mark.parametrize(
    ("cls", "expect"),
    [(GroupCoordinator, None), (coordinator_class("fenced_instance_not_checked"), "ResponseAllowed")],
)
def test_the_replaced_process_is_fenced(cls: type[GroupCoordinator], expect: str | None) -> None:
    """c3 takes over the instance c2 runs with (its JoinGroup with no member id replaces c2's
    member: updateStaticMemberAndRebalance, answered at once in Stable, skip_assignment when it
    replaces the leader); c2, not told, heartbeats: FENCED_INSTANCE_ID."""
    rec, oracle = _recorder(cls, K_STATIC)
    _stable(rec)
    leads = rec.world.clients["c2"].leader
    rec.step("JoinGroupUnknownMember", "c3", True)  # JoinGroup v9
    assert rec.world.clients["c3"].phase == "Joined"
    assert _findings(rec, oracle) == {}
    assert rec.world.clients["c3"].leader == leads
    rec.step("Heartbeat", "c2")
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found


def test_a_static_leader_rejoining_a_stable_group_may_skip_assignment() -> None:
    """KIP-814: the replaced static leader is answered with skipAssignment; only there."""
    rec, oracle = _recorder(GroupCoordinator, K_STATIC)
    _stable(rec)
    leader = next(c for c in ("c1", "c2") if rec.world.clients[c].leader)
    skipped: list[bool] = []
    original = oracle.answered

    def answered(req: Any, result: Any) -> None:
        skipped.append(bool(getattr(result, "skip_assignment", False)))
        original(req, result)

    oracle.answered = answered  # type: ignore[method-assign]
    rec.step("ClientCrash", leader)
    rec.step("ClientRestart", leader)
    rec.step("JoinGroupUnknownMember", leader, True)
    assert skipped == [True]
    assert _findings(rec, oracle) == {}


@pytest.mark.parametrize("error", ["NONE", "NOT_LEADER_OR_FOLLOWER"])
def test_a_static_member_replaced_while_the_store_is_deferred_keeps_its_assignment(error: str) -> None:
    """The machine's warm start and static opening in one rule, judged once at its end: the
    group's append is acknowledged (the assignment installed), c3 takes over c2's instance in
    Stable (replaceStaticMember hands the assignment to the new id) and that store completes with
    `error` (a failure reverts to the old id, assignment and all). Kafka's behaviour throughout:
    no finding. (Judged only at the end, the hand-over once looked like an assignment no leader
    sent: the false alarm that kept static members away from the deferred store.)"""
    rec, oracle = _recorder(GroupCoordinator, replace(K_STATIC, store_async=True))
    _stable_stored(rec, oracle)
    assert rec.world.group is not None and rec.world.group.state is GroupState.Stable
    c2_member = rec.world.clients["c2"].member
    rec.step("JoinGroupUnknownMember", "c3", True)
    assert c2_member not in rec.world.group.members
    oracle.store_completing(error)
    rec.store_callback(error)
    oracle.store_completed(rec.world.coordinator)
    assert (c2_member in rec.world.group.members) == (error != "NONE")
    assert all(m.assignment for m in rec.world.group.members.values())
    assert _findings(rec, oracle) == {}


def test_a_newcomer_joining_while_a_replaced_static_member_waits_for_its_store_is_answered_at_once() -> None:
    """c1 alone, Stable; bounced, its JoinGroup replaces its member and waits for the store
    (updateStaticMemberAndRebalance parks it); c2 joins: prepareRebalance's DelayedJoin finds
    every member joined (hasAllMembersJoined) and completes at once, answering both. Kafka's
    behaviour: no finding (the Stable row for a newcomer alone would call it parked)."""
    rec, oracle = _recorder(GroupCoordinator, replace(K_STATIC, store_async=True))
    rec.step("JoinGroupUnknownMember", "c1", False)
    rec.tick(K.ms(K.initial_delay))
    rec.step("SyncGroupLeader", "c1")
    oracle.store_completing("NONE")
    rec.store_callback("NONE")
    oracle.store_completed(rec.world.coordinator)
    rec.step("ClientCrash", "c1")
    rec.step("ClientRestart", "c1")
    rec.step("JoinGroupUnknownMember", "c1", True)
    assert rec.world.group is not None and rec.world.group.state is GroupState.Stable
    assert _findings(rec, oracle) == {}
    rec.step("JoinGroupUnknownMember", "c2", True)
    assert rec.world.clients["c2"].phase == "Joined"
    assert _findings(rec, oracle) == {}


@pytest.mark.parametrize(
    ("cls", "error", "expect"),
    [
        (GroupCoordinator, "NOT_LEADER_OR_FOLLOWER", None),
        (FailedStoreKeepsNewMemberId, "NONE", None),
        (FailedStoreKeepsNewMemberId, "NOT_LEADER_OR_FOLLOWER", "FailedStaticReplacementReverted"),
    ],
)
def test_a_failed_static_replacement_store_reverts_to_the_old_member_id(
    cls: type[GroupCoordinator], error: str, expect: str | None
) -> None:
    """c3 takes over c2's instance in Stable; its store fails: the JoinGroup is answered with
    the error and the instance maps to c2's member id again (Kafka's revert)."""
    rec, oracle = _recorder(cls, replace(K_STATIC, store_async=True))
    _stable_stored(rec, oracle)
    rec.step("JoinGroupUnknownMember", "c3", True)
    assert _findings(rec, oracle) == {}
    oracle.store_completing("NONE" if error == "NONE" else "NOT_COORDINATOR")  # storeGroup's translation
    rec.store_callback(error)
    oracle.store_completed(rec.world.coordinator)
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found


@pytest.mark.parametrize(("cls", "expect"), [(GroupCoordinator, None), (LeaveKeepsMember, "LeftMemberRemoved")])
def test_a_member_that_left_is_gone(cls: type[GroupCoordinator], expect: str | None) -> None:
    rec, oracle = _recorder(cls)
    _stable(rec)
    assert _findings(rec, oracle) == {}
    rec.step("LeaveGroup", "c2")
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found


def test_a_failed_static_replacement_is_answered_with_the_leader_it_found() -> None:
    """updateStaticMemberAndRebalance answers a failed store with leaderId = currentLeader (the
    leader before the replacement): NO_LEADER there is a finding, the old leader is not."""
    from kgc.conformance.responses import _Request
    from kgc.impl.coordinator import JoinGroupResult

    def answer(leader: str) -> dict[str, list[str]]:
        oracle = ResponseOracle(group_id=GROUP_ID)
        req = _Request(1, "join", "m-new", "Stable", "static-replace", instance="i1", leader="m-lead", returned=True)
        oracle.answered(req, JoinGroupResult([], "", 1, "consumer", "range", leader, Errors.COORDINATOR_NOT_AVAILABLE))
        return oracle.take()

    assert answer("m-lead") == {}
    assert "currentLeader" in answer("")["ResponseAllowed"][0]


@pytest.mark.parametrize(("cls", "expect"), [(GroupCoordinator, None), (LeaderRejoinNotRebalanced, "ResponseAllowed")])
def test_a_leader_rejoining_a_stable_group_starts_a_rebalance(cls: type[GroupCoordinator], expect: str | None) -> None:
    """The leader's JoinGroup in Stable with unchanged metadata rebalances (Kafka's way for a
    leader to ask for a new assignment); a follower's is told the current generation."""
    rec, oracle = _recorder(cls)
    _stable(rec)
    assert _findings(rec, oracle) == {}
    follower = next(c for c in ("c1", "c2") if not rec.world.clients[c].leader)
    rec.step("ClientRejoin", follower)
    rec.step("JoinGroupKnownMember", follower)
    assert _findings(rec, oracle) == {}
    assert rec.world.group is not None and rec.world.group.state is GroupState.Stable
    leader = next(c for c in ("c1", "c2") if rec.world.clients[c].leader)
    rec.step("ClientRejoin", leader)
    rec.step("JoinGroupKnownMember", leader)
    found = _findings(rec, oracle)
    assert (expect in found and "isLeader" in found[expect][0]) if expect else found == {}, found


@pytest.mark.parametrize(("cls", "expect"), [(GroupCoordinator, None), (LeaveKeepsMember, "LeftMemberRemoved")])
def test_a_member_an_admin_removed_by_instance_id_is_gone(cls: type[GroupCoordinator], expect: str | None) -> None:
    """A LeaveGroup naming only c1's group.instance.id (the admin client's removal, leave v3+)
    answered NONE for it: the member the instance mapped to is gone."""
    rec, oracle = _recorder(cls, K_STATIC)
    _stable(rec)
    assert _findings(rec, oracle) == {}
    instance = K_STATIC.instance_id_of("c1")
    _send(rec, "leave", "", lambda c, a: c.handle_leave_group(GROUP_ID, [LeaveMemberIdentity("", instance)], a))
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found


@pytest.mark.parametrize(
    ("cls", "expect"), [(GroupCoordinator, None), (RemovalLeavesJoinWaiting, "JoinCompletedOnceAllJoined")]
)
def test_a_rebalance_completes_once_every_remaining_member_has_joined(
    cls: type[GroupCoordinator], expect: str | None
) -> None:
    """c1 rejoins a Stable group with new metadata (PreparingRebalance, a DelayedJoin); c2
    leaves before rejoining: c1 is then every member and has joined, so the join completes in
    that step, not at the rebalance timeout."""
    rec, oracle = _recorder(cls)
    _stable(rec)
    rec.step("ClientRejoin", "c1")
    rec.step("JoinGroupKnownMember", "c1", True)
    assert rec.world.group is not None and rec.world.group.state is GroupState.PreparingRebalance
    assert _findings(rec, oracle) == {}
    rec.step("LeaveGroup", "c2")
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found


def test_the_initial_rebalance_waits_with_every_member_joined() -> None:
    """A group's first rebalance (from Empty) waits in InitialDelayedJoin even when every
    member has joined: not a finding."""
    rec, oracle = _recorder(GroupCoordinator)
    rec.step("JoinGroupUnknownMember", "c1", False)
    assert rec.world.group is not None and rec.world.group.state is GroupState.PreparingRebalance
    assert _findings(rec, oracle) == {}


@pytest.mark.parametrize(
    ("cls", "expect"), [(GroupCoordinator, None), (StaticStoreCallbackLost, "JoinParkedOnlyInRebalance")]
)
def test_a_join_is_parked_only_in_a_rebalance_or_for_the_store(cls: type[GroupCoordinator], expect: str | None) -> None:
    """c3 takes over c2's instance in Stable: its JoinGroup waits for the store's append
    (deferred here), then is answered; parked in Stable with no append pending is a finding."""
    rec, oracle = _recorder(cls, replace(K_STATIC, store_async=True))
    _stable_stored(rec, oracle)
    rec.step("JoinGroupUnknownMember", "c3", True)
    assert _findings(rec, oracle) == {}  # parked, its append pending
    oracle.store_completing("NONE")
    rec.store_callback("NONE")
    oracle.store_completed(rec.world.coordinator)
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found


@pytest.mark.parametrize(("cls", "expect"), [(GroupCoordinator, None), (SyncProtocolNameUnchecked, "ResponseAllowed")])
def test_a_sync_naming_another_protocol_is_inconsistent(cls: type[GroupCoordinator], expect: str | None) -> None:
    """A current member's SyncGroup v5 naming a protocol the group did not select:
    validateSyncGroup answers INCONSISTENT_GROUP_PROTOCOL (the spec's SyncGroupInconsistentProtocol
    sends the wrong name on odd generations)."""
    rec, oracle = _recorder(cls)
    _stable(rec)
    assert rec.world.clients["c2"].gen % 2 == 1
    rec.step("SyncGroupInconsistentProtocol", "c2")
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found


@pytest.mark.parametrize(("cls", "expect"), [(GroupCoordinator, None), (LoadDropsProtocolType, "LoadedAsStored")])
def test_a_loaded_group_is_the_stored_one(cls: type[GroupCoordinator], expect: str | None) -> None:
    """The Stable group moves away and back: the coordinator hosts the stored record again."""
    rec, oracle = _recorder(cls)
    _stable(rec)
    rec.step("GroupUnload")
    assert _findings(rec, oracle) == {}
    rec.step("GroupLoad")
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found


@pytest.mark.parametrize(("cls", "expect"), [(GroupCoordinator, None), (LoadWindowForgotten, "ResponseAllowed")])
def test_the_loading_window_is_the_one_the_coordinator_was_given(
    cls: type[GroupCoordinator], expect: str | None
) -> None:
    """A Heartbeat while the group's partition loads is answered NONE ("respond blindly"),
    judged by the load the coordinator was told of, not by its own loading set."""
    rec, oracle = _recorder(cls)
    _stable(rec)
    rec.step("GroupUnload")
    rec.step("LoadBegin")
    assert _findings(rec, oracle) == {}
    rec.step("Heartbeat", "c1")
    found = _findings(rec, oracle)
    assert (expect in found) if expect else found == {}, found
