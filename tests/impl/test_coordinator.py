"""Behaviour of kgc.impl.coordinator against Kafka 3.7-3.9's classic group coordinator.

Each test names the Kafka test (core/src/test/scala/unit/kafka/coordinator/group/
GroupCoordinatorTest.scala) or code (GroupCoordinator.scala, GroupMetadata.scala) it mirrors.
The coordinator is driven directly: VirtualClock + SystemTimer + GroupCoordinator, with the
Kafka test's settings (min session 10 ms, initial rebalance delay 50 ms, default session and
rebalance timeouts 500 ms) unless a test says otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kgc.impl.clock import VirtualClock
from kgc.impl.coordinator import (
    GroupConfig,
    GroupCoordinator,
    JoinGroupResult,
    LeaveGroupResult,
    LeaveMemberIdentity,
    SyncGroupResult,
)
from kgc.impl.errors import Errors
from kgc.impl.group import GroupMetadata, GroupState, IllegalStateTransition
from kgc.impl.store import InMemoryGroupStore
from kgc.impl.timer import SystemTimer

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "contract-examples"

MIN_SESSION = 10
MAX_SESSION = 10 * 60 * 1000
INITIAL_DELAY = 50
SESSION = 500
REBALANCE = 500
RANGE = [("range", "")]
JOIN_WAIT = 2 * INITIAL_DELAY  # members joining together extend the initial delay once


class Box:
    """Captures the answers to one request."""

    def __init__(self) -> None:
        self.results: list[Any] = []

    def __call__(self, result: Any) -> None:
        self.results.append(result)

    @property
    def pending(self) -> bool:
        return not self.results

    @property
    def value(self) -> Any:
        assert len(self.results) == 1, f"expected one answer, got {self.results}"
        return self.results[0]

    @property
    def error(self) -> Errors:
        v = self.value
        if isinstance(v, Errors):
            return v
        if isinstance(v, LeaveGroupResult) and v.error is Errors.NONE and v.member_responses:
            return v.member_responses[0][2]
        return v.error


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def on_request(self, kind: str, group_id: str, args: dict) -> None:
        self.events.append(("request", kind, group_id))

    def on_response(self, kind: str, group_id: str, result: object) -> None:
        self.events.append(("response", kind, group_id))

    def on_timer(self, kind: str, group_id: str, member_id: str | None) -> None:
        self.events.append(("timer", kind, group_id, member_id))

    def on_transition(self, group_id: str, old: GroupState, new: GroupState) -> None:
        self.events.append(("transition", group_id, old.value, new.value))


class H:
    """A coordinator on a virtual clock, with one-line request helpers."""

    def __init__(self, store: InMemoryGroupStore | None = None, seed: int = 0, **config: Any) -> None:
        cfg = dict(
            min_session_timeout_ms=MIN_SESSION,
            max_session_timeout_ms=MAX_SESSION,
            initial_rebalance_delay_ms=INITIAL_DELAY,
        )
        cfg.update(config)
        self.clock = VirtualClock()
        self.timer = SystemTimer(self.clock)
        self.store = store if store is not None else InMemoryGroupStore()
        self.obs = Recorder()
        self.c = GroupCoordinator(
            GroupConfig(**cfg), self.clock, self.timer, self.store, member_id_seed=seed, observer=self.obs
        )

    def join(
        self,
        member: str = "",
        group: str = "g",
        client: str = "client",
        instance: str | None = None,
        session: int = SESSION,
        rebalance: int | None = None,
        ptype: str = "consumer",
        protocols: Any = RANGE,
        require_known: bool = False,
    ) -> Box:
        box = Box()
        self.c.handle_join_group(
            group,
            member,
            instance,
            require_known,
            client,
            "host",
            REBALANCE if rebalance is None else rebalance,
            session,
            ptype,
            list(protocols),
            box,
        )
        return box

    def sync(
        self,
        member: str,
        generation: int,
        assignment: dict | None = None,
        group: str = "g",
        ptype: str | None = None,
        pname: str | None = None,
        instance: str | None = None,
    ) -> Box:
        box = Box()
        self.c.handle_sync_group(group, generation, member, ptype, pname, instance, assignment or {}, box)
        return box

    def heartbeat(self, member: str, generation: int, group: str = "g", instance: str | None = None) -> Box:
        box = Box()
        self.c.handle_heartbeat(group, member, instance, generation, box)
        return box

    def leave(self, *members: Any, group: str = "g") -> Box:
        box = Box()
        ids = [LeaveMemberIdentity(m) if isinstance(m, str) else LeaveMemberIdentity(*m) for m in members]
        self.c.handle_leave_group(group, ids, box)
        return box

    def tick(self, ms: int) -> None:
        self.timer.advance_to(self.clock.now_ms() + ms)

    def group(self, group_id: str = "g") -> GroupMetadata:
        g = self.c.group(group_id)
        assert g is not None
        return g

    def state(self, group_id: str = "g") -> str:
        g = self.c.group(group_id)
        return "Dead" if g is None else g.state.value

    # -- common set-ups ------------------------------------------------------------------------
    def stable_group(
        self,
        n: int = 1,
        session: int = SESSION,
        rebalance: int = REBALANCE,
        instances: list[str] | None = None,
        protocols: Any = RANGE,
    ) -> list[str]:
        """n members join through the initial delayed join and sync; returns ids, leader first."""
        boxes = [
            self.join(
                client=f"c{i}",
                session=session,
                rebalance=rebalance,
                instance=instances[i] if instances else None,
                protocols=protocols,
            )
            for i in range(n)
        ]
        self.tick(JOIN_WAIT)
        ids = [b.value.member_id for b in boxes]
        leader = boxes[0].value.leader_id
        assert all(b.value.error is Errors.NONE for b in boxes)
        followers = [m for m in ids if m != leader]
        fboxes = [self.sync(m, 1) for m in followers]
        lbox = self.sync(leader, 1, {m: f"a-{m}" for m in ids})
        assert lbox.error is Errors.NONE and all(b.error is Errors.NONE for b in fboxes)
        assert self.state() == "Stable"
        return [leader] + followers

    def assert_clean(self) -> None:
        assert self.c.internal_errors == []
        assert self.c.duplicate_answers == 0


@pytest.fixture
def h() -> H:
    return H()


# ==============================================================================================
# The contract's example, driven by hand
# ==============================================================================================


def test_contract_example_two_members_rebalance() -> None:
    """docs/contract-examples/two-members-rebalance.json, step by step."""
    spec = json.loads((EXAMPLES / "two-members-rebalance.json").read_text())
    assert spec["config"] == {
        "min_session_timeout_ms": 10,
        "max_session_timeout_ms": 600000,
        "initial_rebalance_delay_ms": 100,
    }
    h = H(min_session_timeout_ms=10, max_session_timeout_ms=600000, initial_rebalance_delay_ms=100)
    a1 = h.join(client="a", session=1000, rebalance=1000)
    assert a1.pending
    b1 = h.join(client="b", session=1000, rebalance=1000)
    g = h.group()
    assert (g.state, g.generation_id, len(g.members)) == (GroupState.PreparingRebalance, 0, 2)
    h.tick(100)
    assert a1.pending  # InitialDelayedJoin extended: b arrived
    h.tick(100)
    a, b = a1.value.member_id, b1.value.member_id
    assert a1.error is Errors.NONE and a1.value.generation_id == 1
    assert a1.value.leader_id == a and a1.value.protocol_name == "range"
    assert {m.member_id for m in a1.value.members} == {a, b}
    assert b1.error is Errors.NONE and b1.value.generation_id == 1 and b1.value.leader_id == a
    g = h.group()
    assert (g.state, g.generation_id, set(g.members), g.leader_id) == (GroupState.CompletingRebalance, 1, {a, b}, a)
    sb = h.sync(b, 1)
    assert sb.pending
    sa = h.sync(a, 1, {a: "t-0", b: "t-1"})
    assert (sa.error, sa.value.member_assignment) == (Errors.NONE, "t-0")
    assert (sb.error, sb.value.member_assignment) == (Errors.NONE, "t-1")
    assert (h.state(), h.group().generation_id) == ("Stable", 1)
    assert h.heartbeat(b, 1).error is Errors.NONE
    assert h.heartbeat(b, 0).error is Errors.ILLEGAL_GENERATION
    assert h.leave(b).error is Errors.NONE
    g = h.group()
    assert (g.state, g.generation_id, set(g.members)) == (GroupState.PreparingRebalance, 1, {a})
    assert h.sync(a, 1, {a: "t-0,t-1"}).error is Errors.REBALANCE_IN_PROGRESS
    assert h.heartbeat(a, 1).error is Errors.REBALANCE_IN_PROGRESS
    a2 = h.join(a, client="a", session=1000, rebalance=1000)
    assert a2.error is Errors.NONE and a2.value.generation_id == 2
    assert a2.value.leader_id == a and [m.member_id for m in a2.value.members] == [a]
    g = h.group()
    assert (g.state, g.generation_id, len(g.members)) == (GroupState.CompletingRebalance, 2, 1)
    h.assert_clean()


# ==============================================================================================
# GroupState
# ==============================================================================================


def test_valid_previous_states_are_kafkas() -> None:
    """GroupMetadata.scala: each state's validPreviousStates."""
    S = GroupState
    assert S.PreparingRebalance.valid_previous_states == {S.Stable, S.CompletingRebalance, S.Empty}
    assert S.CompletingRebalance.valid_previous_states == {S.PreparingRebalance}
    assert S.Stable.valid_previous_states == {S.CompletingRebalance}
    assert S.Empty.valid_previous_states == {S.PreparingRebalance}
    assert S.Dead.valid_previous_states == set(S)


def test_transition_to_refuses_invalid_transitions() -> None:
    """GroupMetadata.assertValidTransition (GroupMetadataTest.testEmptyToStableIllegalTransition
    and friends)."""
    g = GroupMetadata("g")
    with pytest.raises(IllegalStateTransition):
        g.transition_to(GroupState.Stable)
    with pytest.raises(IllegalStateTransition):
        g.transition_to(GroupState.CompletingRebalance)
    g.transition_to(GroupState.PreparingRebalance)
    with pytest.raises(IllegalStateTransition):
        g.transition_to(GroupState.Stable)
    g.transition_to(GroupState.CompletingRebalance)
    g.transition_to(GroupState.Stable)
    g.transition_to(GroupState.Dead)
    g.transition_to(GroupState.Dead)
    with pytest.raises(IllegalStateTransition):
        g.transition_to(GroupState.PreparingRebalance)
    assert g.state is GroupState.Dead


# ==============================================================================================
# JoinGroup: validation
# ==============================================================================================


def test_invalid_group_id(h: H) -> None:
    """testInvalidGroupId; GroupCoordinator.isValidGroupId for JoinGroup/Sync/Heartbeat/Leave."""
    assert h.join(group="").error is Errors.INVALID_GROUP_ID
    assert h.sync("m", 1, group="").error is Errors.INVALID_GROUP_ID
    assert h.heartbeat("m", 1, group="").error is Errors.INVALID_GROUP_ID
    assert h.leave("m", group="").value == LeaveGroupResult(Errors.INVALID_GROUP_ID, [])
    assert h.c.group("") is None


@pytest.mark.parametrize(
    "session,error",
    [
        (MIN_SESSION - 1, Errors.INVALID_SESSION_TIMEOUT),  # testJoinGroupSessionTimeoutTooSmall
        (MAX_SESSION + 1, Errors.INVALID_SESSION_TIMEOUT),  # testJoinGroupSessionTimeoutTooLarge
        (MIN_SESSION, Errors.NONE),
        (MAX_SESSION, Errors.NONE),
    ],
)
def test_session_timeout_bounds(h: H, session: int, error: Errors) -> None:
    box = h.join(session=session)
    h.tick(JOIN_WAIT)
    assert box.error is error
    if error is not Errors.NONE:
        assert h.c.group("g") is None  # rejected before the group is created


def test_known_member_id_for_unknown_group_is_rejected(h: H) -> None:
    """testJoinGroupUnknownConsumerNewGroup: the group is only created for an unknown member."""
    assert h.join("memberId").error is Errors.UNKNOWN_MEMBER_ID
    assert h.join("memberId", instance="i").error is Errors.UNKNOWN_MEMBER_ID
    assert h.c.group("g") is None


def test_unknown_member_id_for_existing_group(h: H) -> None:
    """testJoinGroupUnknownConsumerExistingGroup."""
    h.stable_group(1)
    assert h.join("memberId").error is Errors.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("ptype,protocols", [("", RANGE), ("consumer", [])])
def test_empty_protocol_type_or_protocols(h: H, ptype: str, protocols: list) -> None:
    """testJoinGroupWithEmptyProtocolType, testJoinGroupWithEmptyGroupProtocol."""
    box = h.join(ptype=ptype, protocols=protocols)
    assert box.error is Errors.INCONSISTENT_GROUP_PROTOCOL
    assert box.value.member_id == ""
    assert h.state() == "Empty"  # the group was created, as Kafka's is


def test_inconsistent_protocol_type(h: H) -> None:
    """testJoinGroupInconsistentProtocolType."""
    h.stable_group(1)
    assert h.join(ptype="connect").error is Errors.INCONSISTENT_GROUP_PROTOCOL


def test_inconsistent_group_protocol(h: H) -> None:
    """testJoinGroupInconsistentGroupProtocol: no protocol in common with the group."""
    first = h.join(protocols=[("range", "")])
    other = h.join(protocols=[("roundrobin", "")])
    h.tick(JOIN_WAIT)
    assert first.error is Errors.NONE
    assert other.error is Errors.INCONSISTENT_GROUP_PROTOCOL


def test_member_ids_are_client_id_uuid_and_replayable() -> None:
    """GroupMetadata.generateMemberId: clientId + "-" + UUID, here from Random(seed)."""
    ids = []
    for _ in range(2):
        h = H(seed=7)
        boxes = [h.join(client="alice"), h.join(client="bob")]
        h.tick(JOIN_WAIT)
        ids.append([b.value.member_id for b in boxes])
    assert ids[0] == ids[1]
    assert ids[0][0].startswith("alice-") and ids[0][1].startswith("bob-")
    assert len(ids[0][0]) == len("alice-") + 36
    other = H(seed=8).join(client="alice", require_known=True)
    assert other.value.member_id.startswith("alice-") and other.value.member_id != ids[0][0]
    h = H()
    static = h.join(client="alice", instance="inst")
    h.tick(JOIN_WAIT)
    assert static.value.member_id.startswith("inst-")


def test_member_id_uuid_is_uuid4_text() -> None:
    """The uuid part is exactly str(uuid.UUID(int=draw, version=4)) for the seeded draw (it is
    formatted without building the UUID): ids, and so replays and stored groups, are unchanged."""
    import random
    import uuid

    rng, twin = random.Random(11), random.Random(11)
    for _ in range(2000):
        assert (
            GroupMetadata.generate_member_id("c", None, rng) == f"c-{uuid.UUID(int=twin.getrandbits(128), version=4)}"
        )
    all_ones = random.Random()
    all_ones.getrandbits = lambda k: (1 << k) - 1  # type: ignore[method-assign]
    assert GroupMetadata.generate_member_id("c", "i", all_ones) == f"i-{uuid.UUID(int=(1 << 128) - 1, version=4)}"


def test_protocol_selected_by_vote(h: H) -> None:
    """GroupMetadata.selectProtocol / candidateProtocols: only protocols every member supports
    are candidates; each member votes its first candidate; most votes wins."""
    a = h.join(client="a", protocols=[("roundrobin", ""), ("range", ""), ("sticky", "")])
    b = h.join(client="b", protocols=[("range", ""), ("roundrobin", "")])
    c = h.join(client="c", protocols=[("range", "x"), ("roundrobin", "y")])
    h.tick(JOIN_WAIT)
    assert {x.value.protocol_name for x in (a, b, c)} == {"range"}
    meta = {m.member_id: m.metadata for m in a.value.members}
    assert meta[c.value.member_id] == "x"  # the chosen protocol's metadata
    h2 = H()
    d = h2.join(client="d", protocols=[("sticky", ""), ("range", "")])
    h2.join(client="e", protocols=[("range", "")])
    h2.tick(JOIN_WAIT)
    assert d.value.protocol_name == "range"  # sticky is not a candidate


def test_protocol_vote_tie_goes_to_the_least_name_whoever_joined_first() -> None:
    """Kafka breaks a tie by HashMap order (unspecified); kgc, like the spec's SelectProtocol,
    by the least name, so the order the members joined in does not decide it."""
    for first, second in (("roundrobin", "range"), ("range", "roundrobin")):
        h = H()
        a = h.join(client="a", protocols=[(first, ""), (second, "")])
        h.join(client="b", protocols=[(second, ""), (first, "")])
        h.tick(JOIN_WAIT)
        assert a.value.protocol_name == "range", (first, second)


# ==============================================================================================
# JoinGroup: MEMBER_ID_REQUIRED and pending members (KIP-394)
# ==============================================================================================


def test_require_known_member_id(h: H) -> None:
    """testJoinGroupSecondJoinInconsistentProtocol / doDynamicNewMemberJoinGroup."""
    first = h.join(require_known=True)
    assert first.error is Errors.MEMBER_ID_REQUIRED
    member_id = first.value.member_id
    assert member_id.startswith("client-")
    g = h.group()
    assert g.state is GroupState.Empty and g.pending_members == {member_id} and not g.members
    assert h.join(member_id, protocols=[], require_known=True).error is Errors.INCONSISTENT_GROUP_PROTOCOL
    second = h.join(member_id, require_known=True)
    assert second.pending
    assert h.group().pending_members == set() and set(h.group().members) == {member_id}
    h.tick(JOIN_WAIT)
    assert second.error is Errors.NONE and second.value.member_id == member_id


def test_pending_member_expires_after_session_timeout(h: H) -> None:
    """addPendingMemberExpiration + onExpireHeartbeat(isPending): a MEMBER_ID_REQUIRED id that
    does not come back is dropped after the session timeout; joining with it then fails."""
    member_id = h.join(require_known=True, session=300).value.member_id
    h.tick(299)
    assert h.group().pending_members == {member_id}
    h.tick(1)
    assert h.group().pending_members == set()
    assert h.join(member_id).error is Errors.UNKNOWN_MEMBER_ID


def test_pending_member_holds_the_join_until_it_expires(h: H) -> None:
    """GroupMetadata.hasAllMembersJoined requires no pending member
    (testJoinGroupCompletionWhenPendingMemberTimesOut)."""
    [leader] = h.stable_group(1, session=1000, rebalance=1000)
    pending = h.join(require_known=True, session=300).value.member_id
    rejoin = h.join(leader, session=1000, rebalance=1000)  # leader rejoin: rebalance
    assert h.state() == "PreparingRebalance" and rejoin.pending
    h.tick(299)
    assert rejoin.pending
    h.tick(1)  # pending id expires
    assert rejoin.error is Errors.NONE and rejoin.value.generation_id == 2
    assert set(h.group().members) == {leader}
    assert pending not in h.group().pending_members


def test_pending_member_joining_completes_the_join(h: H) -> None:
    """testJoinGroupCompletionWhenPendingMemberJoins."""
    [leader] = h.stable_group(1, session=1000, rebalance=1000)
    pending = h.join(require_known=True).value.member_id
    rejoin = h.join(leader, session=1000, rebalance=1000)
    joined = h.join(pending)
    assert rejoin.error is Errors.NONE and joined.error is Errors.NONE
    assert rejoin.value.generation_id == 2 and len(rejoin.value.members) == 2


def test_pending_member_leaves(h: H) -> None:
    """handleLeaveGroup, isPendingMember branch: removed, answered NONE."""
    pending = h.join(require_known=True).value.member_id
    assert h.leave(pending).error is Errors.NONE
    assert h.group().pending_members == set()


def test_pending_member_with_instance_id_is_a_server_error(h: H) -> None:
    """doCurrentMemberJoinGroup throws IllegalStateException for a pending id that comes with
    a group.instance.id; KafkaApis answers UNKNOWN_SERVER_ERROR. Not an internal error here."""
    pending = h.join(require_known=True).value.member_id
    assert h.join(pending, instance="i").error is Errors.UNKNOWN_SERVER_ERROR
    assert h.group().pending_members == {pending}
    h.assert_clean()


# ==============================================================================================
# JoinGroup: group.max.size
# ==============================================================================================


def test_dynamic_members_join_group_with_max_size() -> None:
    """testDynamicMembersJoinGroupWithMaxSize: 5 joins, max 4; accepted members can rejoin
    while completing the rebalance, the others are still refused."""
    h = H(max_group_size=4)
    boxes = [h.join(client=f"c{i}") for i in range(5)]
    h.tick(INITIAL_DELAY + 1)
    h.tick(INITIAL_DELAY + 1)
    errors = [b.error for b in boxes]
    assert errors.count(Errors.NONE) == 4 and errors.count(Errors.GROUP_MAX_SIZE_REACHED) == 1
    rejoin = [h.join(b.value.member_id).error for b in boxes]
    assert rejoin == errors  # the refused one rejoins as a new member: still refused
    assert h.state() == "CompletingRebalance" and h.group().size == 4


def test_dynamic_members_join_group_with_max_size_and_required_known_member() -> None:
    """testDynamicMembersJoinGroupWithMaxSizeAndRequiredKnownMember: counting awaiting members
    in PreparingRebalance; the rejected pending id is dropped."""
    h = H(max_group_size=4)
    ids = [h.join(client=f"c{i}", require_known=True).value.member_id for i in range(5)]
    assert h.group().num_pending == 5
    boxes = [h.join(m, require_known=True) for m in ids]
    h.tick(INITIAL_DELAY + 1)
    h.tick(INITIAL_DELAY + 1)
    errors = [b.error for b in boxes]
    assert errors == [Errors.NONE] * 4 + [Errors.GROUP_MAX_SIZE_REACHED]
    assert h.group().num_pending == 0
    rejoin = [h.join(m, require_known=True).error for m in ids]
    assert rejoin == errors


def test_join_group_full_stable_group() -> None:
    """testJoinGroupShouldReceiveErrorIfGroupOverMaxSize: CompletingRebalance/Stable count the
    group size."""
    h = H(max_group_size=2)
    h.stable_group(2)
    box = h.join(client="late")
    assert box.error is Errors.GROUP_MAX_SIZE_REACHED and box.value.member_id == ""
    assert h.state() == "Stable" and h.group().size == 2


# ==============================================================================================
# JoinGroup: known members per state
# ==============================================================================================


def test_matching_rejoin_in_completing_rebalance_returns_current_generation(h: H) -> None:
    """doCurrentMemberJoinGroup, CompletingRebalance with matching metadata (a member that lost
    its JoinGroup response); the leader gets the member list again."""
    a = h.join(client="a")
    b = h.join(client="b")
    h.tick(JOIN_WAIT)
    leader, follower = a.value.member_id, b.value.member_id
    again = h.join(follower, client="b")
    assert again.error is Errors.NONE and again.value.generation_id == 1
    assert again.value.members == [] and again.value.leader_id == leader
    lead_again = h.join(leader, client="a")
    assert {m.member_id for m in lead_again.value.members} == {leader, follower}
    assert h.state() == "CompletingRebalance" and h.group().generation_id == 1


def test_changed_rejoin_in_completing_rebalance_rebalances(h: H) -> None:
    """doCurrentMemberJoinGroup, CompletingRebalance with new metadata -> prepareRebalance,
    which answers parked SyncGroups REBALANCE_IN_PROGRESS."""
    a = h.join(client="a")
    b = h.join(client="b")
    h.tick(JOIN_WAIT)
    leader, follower = a.value.member_id, b.value.member_id
    parked = h.sync(follower, 1)
    assert parked.pending
    changed = h.join(follower, protocols=[("range", "new")])
    assert parked.error is Errors.REBALANCE_IN_PROGRESS
    assert h.state() == "PreparingRebalance" and changed.pending
    lead = h.join(leader)
    assert lead.error is Errors.NONE and changed.error is Errors.NONE
    assert lead.value.generation_id == 2


def test_unchanged_follower_in_stable_does_not_rebalance(h: H) -> None:
    """testJoinGroupFromUnchangedFollowerDoesNotRebalance."""
    leader, follower = h.stable_group(2)
    box = h.join(follower)
    assert box.error is Errors.NONE and box.value.generation_id == 1
    assert box.value.leader_id == leader and box.value.members == []
    assert h.state() == "Stable"


def test_leader_rejoin_in_stable_rebalances(h: H) -> None:
    """testJoinGroupFromUnchangedLeaderShouldRebalance."""
    leader, follower = h.stable_group(2)
    lead = h.join(leader)
    assert lead.pending and h.state() == "PreparingRebalance"
    assert h.heartbeat(follower, 1).error is Errors.REBALANCE_IN_PROGRESS
    fol = h.join(follower)
    assert lead.value.generation_id == 2 and fol.value.generation_id == 2


def test_changed_follower_in_stable_rebalances(h: H) -> None:
    """doCurrentMemberJoinGroup, Stable, !member.matches(protocols)."""
    leader, follower = h.stable_group(2)
    box = h.join(follower, protocols=[("range", "v2")])
    assert box.pending and h.state() == "PreparingRebalance"


def test_known_member_of_empty_group_is_unknown(h: H) -> None:
    """doCurrentMemberJoinGroup, Empty | Dead -> UNKNOWN_MEMBER_ID (the id is gone with the
    generation that emptied the group)."""
    [m] = h.stable_group(1)
    assert h.leave(m).error is Errors.NONE
    assert h.state() == "Empty" and h.group().generation_id == 2
    assert h.join(m).error is Errors.UNKNOWN_MEMBER_ID


# ==============================================================================================
# Rebalance: InitialDelayedJoin, DelayedJoin, new-member timeout, DelayedSync
# ==============================================================================================


def test_initial_delay_is_not_extended_without_new_members() -> None:
    """testDelayInitialRebalanceByGroupInitialRebalanceDelayOnEmptyGroup."""
    h = H()
    box = h.join(rebalance=1000)
    h.tick(INITIAL_DELAY - 1)
    assert box.pending
    h.tick(1)
    assert box.error is Errors.NONE


def test_initial_delay_extended_up_to_rebalance_timeout() -> None:
    """testDelayRebalanceUptoRebalanceTimeout / InitialDelayedJoin.onComplete: delay 100 and
    rebalance timeout 250 give waits of 100, 100, 50 while members keep arriving."""
    h = H(initial_rebalance_delay_ms=100)
    first = h.join(client="a", rebalance=250)
    h.tick(90)
    h.join(client="b", rebalance=250)
    h.tick(10)  # t=100: b arrived -> wait 100 more
    h.tick(90)
    h.join(client="c", rebalance=250)
    h.tick(10)  # t=200: c arrived -> wait min(100, 50)
    h.tick(40)
    late = h.join(client="d", rebalance=250)  # t=240: no more extension (remaining 0)
    h.tick(9)
    assert first.pending
    h.tick(1)  # t=250 = rebalance timeout
    assert first.error is Errors.NONE and len(first.value.members) == 4
    assert late.error is Errors.NONE


def test_rebalance_timeout_is_the_largest_members(h: H) -> None:
    """GroupMetadata.rebalanceTimeoutMs: the DelayedJoin waits the largest member timeout."""
    leader, follower = h.stable_group(2, session=10000, rebalance=300)
    lead = h.join(leader, session=10000, rebalance=800)
    h.tick(799)
    assert lead.pending
    h.tick(1)
    assert lead.error is Errors.NONE and [m.member_id for m in lead.value.members] == [leader]
    assert follower not in h.group().members


def test_join_timeout_removes_dynamic_members_that_did_not_rejoin(h: H) -> None:
    """testRebalanceCompletesBeforeMemberJoins / onCompleteJoin: members that did not rejoin
    within the rebalance timeout are removed; the leader role moves to one that rejoined
    (maybeElectNewJoinedLeader)."""
    leader, follower = h.stable_group(2, session=10000, rebalance=500)
    fol = h.join(follower, session=10000, rebalance=500, protocols=[("range", "v2")])
    assert h.state() == "PreparingRebalance"
    h.tick(500)
    assert fol.error is Errors.NONE and fol.value.generation_id == 2
    assert fol.value.leader_id == follower
    assert set(h.group().members) == {follower}
    # the old leader is told UNKNOWN_MEMBER_ID from now on
    assert h.heartbeat(leader, 2).error is Errors.UNKNOWN_MEMBER_ID


def test_new_member_join_timeout() -> None:
    """testNewMemberJoinExpiration: a new member whose JoinGroup waits longer than the
    new-member join timeout is answered UNKNOWN_MEMBER_ID and removed."""
    h = H(new_member_join_timeout_ms=1000)
    first = h.join(client="a", session=2000, rebalance=4000)
    h.tick(JOIN_WAIT)
    a = first.value.member_id
    assert h.sync(a, 1, {a: "x"}).error is Errors.NONE
    newcomer = h.join(client="b", session=2000, rebalance=4000)
    assert newcomer.pending
    assert [m.is_new for m in h.group().members.values()] == [False, True]
    h.heartbeat(a, 1)
    h.tick(999)
    assert newcomer.pending
    h.tick(1)
    assert newcomer.error is Errors.UNKNOWN_MEMBER_ID and newcomer.value.member_id == ""
    assert list(h.group().members) == [a]


def test_new_member_timeout_does_not_apply_after_join() -> None:
    """testNewMemberTimeoutCompletion: once the join completes the member is no longer new and
    follows its session timeout."""
    hh = H(new_member_join_timeout_ms=1000)
    box = hh.join(session=3000)
    hh.tick(JOIN_WAIT)
    m = box.value.member_id
    assert not hh.group().members[m].is_new
    hh.sync(m, 1, {m: "x"})
    hh.tick(1500)
    assert m in hh.group().members
    hh.tick(1500)
    assert hh.state() == "Empty"


def test_group_becomes_empty_when_everyone_leaves_during_rebalance(h: H) -> None:
    """onCompleteJoin -> initNextGeneration with no members: Empty, generation + 1, no protocol,
    and the empty generation is stored."""
    leader, follower = h.stable_group(2)
    h.join(leader)
    assert h.leave(leader, follower).value.member_responses[1][2] is Errors.NONE
    g = h.group()
    assert (g.state, g.generation_id, g.protocol_name, g.leader_id) == (GroupState.Empty, 2, None, None)
    record = h.store.load_group("g")
    assert record is not None and record.generation_id == 2 and record.members == ()


def test_follower_that_never_syncs_is_removed() -> None:
    """Kafka 3.x DelayedSync (testRebalanceTimesOutWhenSyncRequestIsNotReceived): members that
    do not send SyncGroup within the rebalance timeout after the join are removed and a new
    rebalance starts."""
    h = H()
    a = h.join(client="a", session=10000, rebalance=500)
    b = h.join(client="b", session=10000, rebalance=500)
    h.tick(JOIN_WAIT)
    leader, follower = a.value.member_id, b.value.member_id
    assert h.sync(leader, 1, {leader: "x", follower: "y"}).error is Errors.NONE
    assert h.state() == "Stable"
    h.tick(499)
    assert follower in h.group().members
    h.tick(1)
    assert follower not in h.group().members
    assert h.state() == "PreparingRebalance"
    assert ("timer", "sync", "g", None) in h.obs.events


def test_leader_that_never_syncs_is_removed() -> None:
    """DelayedSync in CompletingRebalance: the waiting follower is told REBALANCE_IN_PROGRESS."""
    h = H()
    a = h.join(client="a", session=10000, rebalance=500)
    b = h.join(client="b", session=10000, rebalance=500)
    h.tick(JOIN_WAIT)
    _leader, follower = a.value.member_id, b.value.member_id
    parked = h.sync(follower, 1)
    h.tick(500)
    assert parked.error is Errors.REBALANCE_IN_PROGRESS
    assert set(h.group().members) == {follower} and h.state() == "PreparingRebalance"


def test_sync_from_everyone_cancels_the_sync_timeout() -> None:
    """testRebalanceDoesNotTimeOutWhenAllSyncAreReceived."""
    h = H()
    ids = h.stable_group(2, session=10000, rebalance=500)
    h.tick(600)
    assert h.state() == "Stable" and set(h.group().members) == set(ids)


# ==============================================================================================
# SyncGroup
# ==============================================================================================


def test_sync_unknown_group_and_member(h: H) -> None:
    """testSyncGroupFromUnknownGroup, testSyncGroupFromUnknownMember."""
    assert h.sync("m", 1).error is Errors.UNKNOWN_MEMBER_ID
    h.stable_group(1)
    assert h.sync("someone", 1).error is Errors.UNKNOWN_MEMBER_ID


def test_sync_illegal_generation(h: H) -> None:
    """testSyncGroupFromIllegalGeneration."""
    [m] = h.stable_group(1)
    assert h.sync(m, 2).error is Errors.ILLEGAL_GENERATION


def test_sync_during_preparing_rebalance(h: H) -> None:
    """doSyncGroup, PreparingRebalance -> REBALANCE_IN_PROGRESS."""
    leader, follower = h.stable_group(2)
    h.join(leader)
    assert h.sync(follower, 1).error is Errors.REBALANCE_IN_PROGRESS


def test_sync_protocol_type_and_name_checked_when_given(h: H) -> None:
    """validateSyncGroup: INCONSISTENT_GROUP_PROTOCOL when a given type/name differs."""
    [m] = h.stable_group(1)
    assert h.sync(m, 1, ptype="connect").error is Errors.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync(m, 1, pname="roundrobin").error is Errors.INCONSISTENT_GROUP_PROTOCOL
    ok = h.sync(m, 1, ptype="consumer", pname="range")
    assert ok.error is Errors.NONE
    assert (ok.value.protocol_type, ok.value.protocol_name) == ("consumer", "range")


def test_missing_members_get_an_empty_assignment(h: H) -> None:
    """doSyncGroup: "fill any missing members with an empty assignment"."""
    a = h.join(client="a")
    b = h.join(client="b")
    h.tick(JOIN_WAIT)
    leader, follower = a.value.member_id, b.value.member_id
    parked = h.sync(follower, 1)
    assert h.sync(leader, 1, {leader: "all", "stranger": "z"}).error is Errors.NONE
    assert parked.error is Errors.NONE and parked.value.member_assignment == ""
    assert h.group().members[follower].assignment == ""


def test_follower_syncing_after_the_leader_gets_its_assignment(h: H) -> None:
    """testSyncGroupFollowerAfterLeader: Stable returns the stored assignment."""
    a = h.join(client="a")
    b = h.join(client="b")
    h.tick(JOIN_WAIT)
    leader, follower = a.value.member_id, b.value.member_id
    h.sync(leader, 1, {leader: "L", follower: "F"})
    late = h.sync(follower, 1)
    assert (late.error, late.value.member_assignment) == (Errors.NONE, "F")


def test_store_failure_propagates_and_rebalances() -> None:
    """doSyncGroup store callback with an error: resetAndPropagateAssignmentError, then
    maybePrepareRebalance."""
    store = InMemoryGroupStore(fail_with=Errors.NOT_COORDINATOR)
    h = H(store=store)
    a = h.join(client="a")
    b = h.join(client="b")
    h.tick(JOIN_WAIT)
    leader, follower = a.value.member_id, b.value.member_id
    parked = h.sync(follower, 1)
    lead = h.sync(leader, 1, {leader: "L", follower: "F"})
    assert parked.error is Errors.NOT_COORDINATOR and lead.error is Errors.NOT_COORDINATOR
    assert parked.value.protocol_name is None
    assert h.state() == "PreparingRebalance"
    assert store.load_group("g") is None


def test_store_callback_after_the_group_moved_on_is_ignored() -> None:
    """doSyncGroup: "another member may have joined the group while we were awaiting this
    callback" -- the late acknowledgement changes nothing."""
    store = InMemoryGroupStore(defer=True)
    h = H(store=store)
    a = h.join(client="a")
    h.tick(JOIN_WAIT)
    leader = a.value.member_id
    lead = h.sync(leader, 1, {leader: "L"})
    assert lead.pending and store.pending() == 1
    newcomer = h.join(client="b")  # CompletingRebalance -> PreparingRebalance
    assert lead.error is Errors.REBALANCE_IN_PROGRESS
    store.complete_pending()
    assert h.state() == "PreparingRebalance" and newcomer.pending
    h.assert_clean()


# ==============================================================================================
# Heartbeat
# ==============================================================================================


def test_heartbeat_errors(h: H) -> None:
    """testHeartbeatUnknownGroup, testHeartbeatUnknownConsumerExistingGroup,
    testHeartbeatIllegalGeneration, testValidHeartbeat."""
    assert h.heartbeat("m", 1).error is Errors.UNKNOWN_MEMBER_ID
    [m] = h.stable_group(1)
    assert h.heartbeat("other", 1).error is Errors.UNKNOWN_MEMBER_ID
    assert h.heartbeat(m, 2).error is Errors.ILLEGAL_GENERATION
    assert h.heartbeat(m, 1).error is Errors.NONE


def test_heartbeat_during_rebalance(h: H) -> None:
    """testHeartbeatRebalanceInProgress (PreparingRebalance) and a heartbeat in
    CompletingRebalance, which is NONE."""
    a = h.join(client="a")
    b = h.join(client="b")
    h.tick(JOIN_WAIT)
    assert h.heartbeat(b.value.member_id, 1).error is Errors.NONE
    h.join(b.value.member_id, protocols=[("range", "v2")])
    assert h.heartbeat(a.value.member_id, 1).error is Errors.REBALANCE_IN_PROGRESS


def test_session_timeout(h: H) -> None:
    """testSessionTimeout: without heartbeats a member is removed after its session timeout."""
    [m] = h.stable_group(1, session=500)
    h.tick(499)
    assert m in h.group().members
    h.tick(1)
    assert h.state() == "Empty" and not h.group().members
    assert ("timer", "heartbeat", "g", m) in h.obs.events


def test_heartbeat_maintains_session(h: H) -> None:
    """testHeartbeatMaintainsSession."""
    [m] = h.stable_group(1, session=500)
    for _ in range(5):
        h.tick(400)
        assert h.heartbeat(m, 1).error is Errors.NONE
    assert h.state() == "Stable"
    h.tick(500)
    assert h.state() == "Empty"


def test_session_expiry_of_a_member_in_stable_starts_a_rebalance(h: H) -> None:
    """onExpireHeartbeat -> removeMemberAndUpdateGroup -> maybePrepareRebalance."""
    leader, follower = h.stable_group(2, session=500, rebalance=500)
    for _ in range(3):
        h.tick(200)
        h.heartbeat(leader, 1)
    assert follower not in h.group().members and h.state() == "PreparingRebalance"


# ==============================================================================================
# LeaveGroup
# ==============================================================================================


def test_leave_unknown_group(h: H) -> None:
    """testLeaveGroupUnknownGroup: top-level NONE, per member UNKNOWN_MEMBER_ID."""
    assert h.leave("m").value == LeaveGroupResult(Errors.NONE, [("m", None, Errors.UNKNOWN_MEMBER_ID)])
    assert h.c.group("g") is None


def test_leave_unknown_member(h: H) -> None:
    """testLeaveGroupUnknownConsumerExistingGroup."""
    h.stable_group(1)
    assert h.leave("other").error is Errors.UNKNOWN_MEMBER_ID
    assert h.state() == "Stable"


def test_valid_leave_rebalances(h: H) -> None:
    """testValidLeaveGroup."""
    leader, follower = h.stable_group(2)
    assert h.leave(follower).error is Errors.NONE
    assert h.state() == "PreparingRebalance" and follower not in h.group().members


def test_leave_batch_has_per_member_errors(h: H) -> None:
    """handleLeaveGroup over a batch: each member answered on its own."""
    leader, follower = h.stable_group(2)
    result = h.leave(follower, "ghost", follower).value
    assert result.error is Errors.NONE
    assert [e for _, _, e in result.member_responses] == [
        Errors.NONE,
        Errors.UNKNOWN_MEMBER_ID,
        Errors.UNKNOWN_MEMBER_ID,
    ]


def test_leave_during_preparing_rebalance_completes_the_join(h: H) -> None:
    """removeMemberAndUpdateGroup in PreparingRebalance: checkAndComplete the join."""
    leader, follower = h.stable_group(2)
    lead = h.join(leader)
    assert lead.pending
    h.leave(follower)
    assert lead.error is Errors.NONE and lead.value.generation_id == 2


def test_leave_of_a_member_with_a_parked_join(h: H) -> None:
    """removeMemberAndUpdateGroup answers the member's parked JoinGroup UNKNOWN_MEMBER_ID."""
    leader, follower = h.stable_group(2)
    lead = h.join(leader)
    assert h.leave(leader).error is Errors.NONE
    assert lead.error is Errors.UNKNOWN_MEMBER_ID


# ==============================================================================================
# Unload / load
# ==============================================================================================


def test_unload_answers_parked_joins_not_coordinator(h: H) -> None:
    """onGroupUnloaded from PreparingRebalance."""
    box = h.join()
    assert box.pending
    h.c.on_group_unloaded("g")
    assert box.error is Errors.NOT_COORDINATOR
    assert h.c.group("g") is None and h.state() == "Dead"
    assert h.join().error is Errors.NOT_COORDINATOR
    assert h.sync("m", 1).error is Errors.NOT_COORDINATOR
    assert h.heartbeat("m", 1).error is Errors.NOT_COORDINATOR
    assert h.leave("m").value == LeaveGroupResult(Errors.NOT_COORDINATOR, [])
    h.tick(10 * REBALANCE)  # old delayed operations fire harmlessly
    h.assert_clean()


def test_unload_answers_parked_syncs_not_coordinator(h: H) -> None:
    """onGroupUnloaded from CompletingRebalance."""
    h.join(client="a")
    b = h.join(client="b")
    h.tick(JOIN_WAIT)
    parked = h.sync(b.value.member_id, 1)
    h.c.on_group_unloaded("g")
    assert parked.error is Errors.NOT_COORDINATOR
    assert ("transition", "g", "CompletingRebalance", "Dead") in h.obs.events


def test_load_restores_the_last_stored_generation(h: H) -> None:
    """GroupMetadataManager.loadGroup + onGroupLoaded: Stable at the stored generation with its
    members, leader, protocol and assignments; fresh session timeouts."""
    leader, follower = h.stable_group(2, session=1000)
    h.c.on_group_unloaded("g")
    h.tick(700)
    h.c.on_group_loaded("g")
    g = h.group()
    assert (g.state, g.generation_id, g.leader_id, g.protocol_type, g.protocol_name) == (
        GroupState.Stable,
        1,
        leader,
        "consumer",
        "range",
    )
    assert set(g.members) == {leader, follower}
    assert g.members[follower].assignment == f"a-{follower}"
    got = h.sync(follower, 1)
    assert (got.error, got.value.member_assignment) == (Errors.NONE, f"a-{follower}")
    h.tick(500)
    assert h.heartbeat(follower, 1).error is Errors.NONE
    h.tick(499)  # the leader's session counts from the load
    assert leader in h.group().members
    h.tick(1)
    assert leader not in h.group().members and h.state() == "PreparingRebalance"


def test_load_of_a_group_never_stored(h: H) -> None:
    """A group never stored comes back as nothing; a new member can then create it."""
    box = h.join()
    h.c.on_group_unloaded("g")
    h.c.on_group_loaded("g")
    assert h.c.group("g") is None
    assert box.error is Errors.NOT_COORDINATOR
    again = h.join()
    h.tick(JOIN_WAIT)
    assert again.error is Errors.NONE and again.value.generation_id == 1


def test_load_of_an_empty_stored_group(h: H) -> None:
    [m] = h.stable_group(1)
    h.leave(m)
    h.c.on_group_unloaded("g")
    h.c.on_group_loaded("g")
    g = h.group()
    assert (g.state, g.generation_id, g.protocol_name) == (GroupState.Empty, 2, None)


def test_old_timers_do_not_touch_the_reloaded_group(h: H) -> None:
    """Delayed operations hold the old GroupMetadata object (Dead) after the reload."""
    leader, follower = h.stable_group(2, session=1000)
    h.join(leader)  # PreparingRebalance, DelayedJoin pending
    h.c.on_group_unloaded("g")
    h.c.on_group_loaded("g")
    assert h.state() == "Stable"
    h.heartbeat(leader, 1)
    h.heartbeat(follower, 1)
    h.tick(REBALANCE)  # the old DelayedJoin fires
    assert h.state() == "Stable" and h.group().generation_id == 1
    h.assert_clean()


def test_load_over_capacity_rebalances() -> None:
    """onGroupLoaded: groupIsOverCapacity -> prepareRebalance (a coordinator with a smaller
    group.max.size takes the group over)."""
    store = InMemoryGroupStore()
    big = H(store=store)
    ids = big.stable_group(3)
    small = H(store=store, max_group_size=2)
    small.c.on_group_loaded("g")
    assert small.state() == "PreparingRebalance" and set(small.group().members) == set(ids)


# ==============================================================================================
# Static membership
# ==============================================================================================


def test_static_member_join_as_first_member(h: H) -> None:
    """staticMemberJoinAsFirstMember."""
    box = h.join(instance="i1")
    h.tick(JOIN_WAIT)
    assert box.error is Errors.NONE and box.value.member_id.startswith("i1-")
    assert h.group().static_members == {"i1": box.value.member_id}


def test_static_member_rejoin_with_unknown_id_in_stable(h: H) -> None:
    """staticMemberRejoinWithLeaderIdAndUnknownMemberId (JoinGroup < v9): no rebalance, a new
    member id, the old leader id returned; the old id is fenced."""
    leader, follower = h.stable_group(2, instances=["L", "F"])
    box = h.join(instance="L")
    assert box.error is Errors.NONE
    new_id = box.value.member_id
    assert new_id != leader and box.value.leader_id == leader
    assert box.value.generation_id == 1 and box.value.members == []
    assert h.state() == "Stable" and h.group().leader_id == new_id
    assert h.join(leader, instance="L").error is Errors.FENCED_INSTANCE_ID
    assert h.sync(leader, 1, instance="L").error is Errors.FENCED_INSTANCE_ID
    assert h.heartbeat(leader, 1, instance="L").error is Errors.FENCED_INSTANCE_ID
    assert h.sync(leader, 1).error is Errors.UNKNOWN_MEMBER_ID
    assert h.sync(new_id, 1, instance="L").value.member_assignment == f"a-{leader}"


def test_static_member_rejoin_changing_the_selected_protocol_rebalances(h: H) -> None:
    """staticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWithSelectedProtocolChanged."""
    both = [("range", ""), ("roundrobin", "")]
    leader, follower = h.stable_group(2, instances=["L", "F"], protocols=both)
    box = h.join(instance="F", protocols=[("roundrobin", "")])
    assert box.pending and h.state() == "PreparingRebalance"


def test_static_member_store_failure_keeps_the_old_id() -> None:
    """staticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchanged
    PersistenceFailure."""
    store = InMemoryGroupStore()
    h = H(store=store)
    leader, follower = h.stable_group(2, instances=["L", "F"])
    store.fail_with = Errors.UNKNOWN_SERVER_ERROR
    box = h.join(instance="F")
    assert box.error is Errors.UNKNOWN_SERVER_ERROR and box.value.member_id == ""
    assert h.state() == "Stable" and h.group().static_members["F"] == follower
    assert h.join(follower, instance="F").error is Errors.NONE
    assert h.sync(follower, 1, instance="F").error is Errors.NONE


def test_static_members_are_kept_when_they_do_not_rejoin(h: H) -> None:
    """onCompleteJoin removes only dynamic members (notYetRejoinedMembers.filterNot static)."""
    leader, follower = h.stable_group(2, session=100000, rebalance=500, instances=["L", "F"])
    lead = h.join(leader, instance="L", session=100000)
    h.tick(500)
    assert lead.error is Errors.NONE and lead.value.generation_id == 2
    assert set(h.group().members) == {leader, follower}


def test_static_duplicate_fences_a_parked_join(h: H) -> None:
    """staticMemberFenceDuplicateRejoinedFollower."""
    leader, follower = h.stable_group(2, session=100000, instances=["L", "F"])
    h.join(client="third", session=100000)  # rebalance
    old = h.join(follower, instance="F", session=100000)
    dup = h.join(instance="F", session=100000)
    assert old.error is Errors.FENCED_INSTANCE_ID and old.value.generation_id == -1
    assert dup.pending


def test_static_duplicate_in_completing_rebalance_fences_sync_and_rebalances(h: H) -> None:
    """staticMemberFenceDuplicateSyncingFollowerAfterMemberIdChanged."""
    leader, follower = h.stable_group(2, session=100000, instances=["L", "F"])
    lead = h.join(leader, instance="L", session=100000)
    fol = h.join(follower, instance="F", session=100000)
    assert lead.error is Errors.NONE and fol.error is Errors.NONE
    parked = h.sync(follower, 2, instance="F")
    dup = h.join(instance="F", session=100000)
    assert parked.error is Errors.FENCED_INSTANCE_ID
    assert h.state() == "PreparingRebalance" and dup.pending


def test_leave_static_member_by_instance_id(h: H) -> None:
    """handleLeaveGroup: administrative removal with an empty member id and an instance id."""
    leader, follower = h.stable_group(2, instances=["L", "F"])
    result = h.leave(("", "F")).value
    assert result.member_responses == [("", "F", Errors.NONE)]
    assert follower not in h.group().members
    assert h.leave(("", "nobody")).error is Errors.UNKNOWN_MEMBER_ID
    assert h.leave((leader, "F")).error is Errors.UNKNOWN_MEMBER_ID


# ==============================================================================================
# Observer and never-raise
# ==============================================================================================


def test_observer_sees_requests_responses_timers_and_transitions(h: H) -> None:
    box = h.join()
    h.tick(JOIN_WAIT)
    events = h.obs.events
    assert events[0] == ("request", "join", "g")
    assert ("transition", "g", "Empty", "PreparingRebalance") in events
    i_timer = events.index(("timer", "initial_join", "g", None))
    i_trans = events.index(("transition", "g", "PreparingRebalance", "CompletingRebalance"))
    i_resp = events.index(("response", "join", "g"))
    assert i_timer < i_trans < i_resp
    assert box.error is Errors.NONE
    h.c.on_group_unloaded("g")
    h.c.on_group_loaded("g")
    assert ("request", "unload", "g") in events and ("request", "load", "g") in events


def test_a_raising_callback_does_not_break_the_coordinator(h: H) -> None:
    def bad(_: Any) -> None:
        raise RuntimeError("client bug")

    h.c.handle_heartbeat("g", "m", None, 1, bad)
    assert h.c.callback_errors == 1
    h.stable_group(1)
    h.assert_clean()


def test_an_internal_error_answers_unknown_server_error(h: H, monkeypatch: Any) -> None:
    def boom(*_: Any) -> None:
        raise RuntimeError("injected")

    monkeypatch.setattr(h.c, "_accept_joining_member", boom)
    box = h.join()
    assert box.error is Errors.UNKNOWN_SERVER_ERROR
    assert len(h.c.internal_errors) == 1 and "injected" in h.c.internal_errors[0]


def test_join_result_shapes() -> None:
    r = JoinGroupResult.error_result("m", Errors.UNKNOWN_MEMBER_ID)
    assert (r.members, r.generation_id, r.protocol_type, r.protocol_name, r.leader_id) == ([], -1, None, None, "")
    assert SyncGroupResult(Errors.NONE).member_assignment == ""
    assert Errors.NONE.value == 0 and Errors.MEMBER_ID_REQUIRED.code == 79
    assert Errors.for_code(12345) is Errors.UNKNOWN_SERVER_ERROR


def test_static_members_with_zero_rebalance_timeout_do_not_stall_virtual_time(h: H) -> None:
    """onCompleteJoin's "no member rejoined" branch re-arms a DelayedJoin; with a 0 ms rebalance
    timeout it must still let the virtual clock move (>= 1 ms) until the static members'
    sessions remove them."""
    h.stable_group(2, instances=["i1", "i2"], session=1000)
    assert h.join(instance="i1", rebalance=0, session=1000).error is Errors.NONE
    assert h.join(instance="i2", rebalance=0, session=1000).error is Errors.NONE
    assert h.group().rebalance_timeout_ms == 0
    assert h.leave(("", "i2")).error is Errors.NONE
    ran = 0
    while h.state() != "Empty":
        assert h.timer.fire_next()
        ran += 1
        assert ran < 5000
    assert h.clock.now_ms() <= JOIN_WAIT + 1000
    h.assert_clean()
