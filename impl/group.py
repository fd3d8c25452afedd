"""Group and member metadata of Kafka's classic group coordinator (GroupMetadata.scala,
MemberMetadata.scala, Kafka 3.7-3.9).

These classes hold state and enforce its local invariants (valid state transitions, the count of
members awaiting a join, the per-protocol support counts); every protocol decision lives in
`coordinator.py`, as in Kafka. Members are kept in insertion order so that every choice Kafka
leaves to HashMap iteration order (new leader, protocol vote ties) is deterministic here.

Compiled by mypyc with the timer, purgatory and delayed operations when built (kgc.impl.native):
every JoinGroup and SyncGroup runs through these classes several times. Interpreted subclasses
stay allowed (conformance's seeded bugs and tests override a vote or a predicate through them);
monkeypatching an instance or the class does not reach compiled callers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any, Final

from mypy_extensions import mypyc_attr

from kgc.impl.seeded_draws import UuidDraws
from kgc.impl.watch_keys import GroupJoinKey, GroupSyncKey, MemberKey

Protocols = list[tuple[str, str]]
Callback = Callable[[Any], None]
TransitionListener = Callable[["GroupMetadata", "GroupState", "GroupState"], None]


class GroupState(Enum):
    """Kafka's group states; each knows the states it may be entered from."""

    PreparingRebalance = "PreparingRebalance"
    CompletingRebalance = "CompletingRebalance"
    Stable = "Stable"
    Dead = "Dead"
    Empty = "Empty"

    @property
    def valid_previous_states(self) -> frozenset[GroupState]:
        """States from which `transition_to(self)` is legal (GroupState.validPreviousStates)."""
        return _VALID_PREVIOUS_STATES[self]

    def __str__(self) -> str:
        return self.value


_VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.PreparingRebalance: frozenset({GroupState.Stable, GroupState.CompletingRebalance, GroupState.Empty}),
    GroupState.CompletingRebalance: frozenset({GroupState.PreparingRebalance}),
    GroupState.Stable: frozenset({GroupState.CompletingRebalance}),
    GroupState.Dead: frozenset(
        {
            GroupState.Stable,
            GroupState.PreparingRebalance,
            GroupState.CompletingRebalance,
            GroupState.Empty,
            GroupState.Dead,
        }
    ),
    GroupState.Empty: frozenset({GroupState.PreparingRebalance}),
}


# Kafka's state objects (`case object Empty extends GroupState`, ...) bound once, here, for every
# module that reads them (the coordinator, the delayed operations): `GroupState.X` goes through
# EnumType's slow attribute hook (~10x a global), and every transition and rebalance check read
# one (Final: compiled, a C static).
PreparingRebalance: Final = GroupState.PreparingRebalance
CompletingRebalance: Final = GroupState.CompletingRebalance
Stable: Final = GroupState.Stable
Empty: Final = GroupState.Empty
Dead: Final = GroupState.Dead
# The table again as tuples, for the checks on every transition: `in` on a frozenset (or a dict
# lookup) hashes the state, and a GroupState's hash is Enum.__hash__, a Python function (three
# calls per transition before); `in` on a tuple compares identity first and calls nothing.
_ENTERED_FROM: Final = tuple((state, tuple(previous)) for state, previous in _VALID_PREVIOUS_STATES.items())
_CAN_REBALANCE_FROM: Final = tuple(_VALID_PREVIOUS_STATES[GroupState.PreparingRebalance])


def _entered_from(target: GroupState) -> tuple[GroupState, ...]:
    """_VALID_PREVIOUS_STATES[target] as a tuple, found by identity (no hash)."""
    for state, previous in _ENTERED_FROM:
        if state is target:
            return previous
    raise KeyError(target)


class IllegalStateTransition(Exception):
    """Raised by `transition_to` when Kafka's assertValidTransition would throw."""


def normalize_protocols(protocols: Iterable[Any] | None) -> Protocols:
    """Protocols as a list of (name, metadata) tuples: scenario files give JSON lists."""
    if protocols is None:
        return []
    return [(str(name), str(metadata)) for name, metadata in protocols]


# uuid.UUID(int=n, version=4)'s variant and version bits, applied without building the UUID
# (its checks cost a new member's JoinGroup more than the rest of the id).
_UUID4_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_UUID4_SET = (0x8000 << 48) | (4 << 76)


def _uuid4_text(n: int) -> str:
    """str(uuid.UUID(int=n, version=4)) for a 128-bit n."""
    h = "%032x" % ((n & _UUID4_CLEAR) | _UUID4_SET)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@mypyc_attr(allow_interpreted_subclasses=True)
class MemberMetadata:
    """One member of a group (MemberMetadata.scala).

    `awaiting_join_callback` / `awaiting_sync_callback` hold the parked JoinGroup / SyncGroup
    response callbacks; `heartbeat_satisfied` is the flag DelayedHeartbeat completes on.
    """

    def __init__(
        self,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: Protocols,
        assignment: str = "",
    ) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols: Protocols = list(protocols)
        self.assignment = assignment
        self.awaiting_join_callback: Callback | None = None
        self.awaiting_sync_callback: Callback | None = None
        self.is_leaving = False
        self.is_new = False
        self.heartbeat_satisfied = False
        #: the watch key of this member's DelayedHeartbeat, made once per (group, member id)
        #: instead of once per heartbeat (a MemberKey costs ~270 ns, ~7 % of a heartbeat)
        self.heartbeat_key: MemberKey | None = None

    @property
    def is_static_member(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join_callback is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync_callback is not None

    @property
    def protocol_names(self) -> set[str]:
        """MemberMetadata.plainProtocolSet."""
        return {name for name, _ in self.protocols}

    @property
    def has_satisfied_heartbeat(self) -> bool:
        """New members can expire while awaiting a join; others are covered while they wait."""
        # (is_awaiting_join / is_awaiting_sync, read directly: three property calls per tryComplete)
        if self.is_new:
            return self.heartbeat_satisfied
        if self.awaiting_join_callback is not None or self.awaiting_sync_callback is not None:
            return True
        return self.heartbeat_satisfied

    def metadata(self, protocol: str) -> str:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise ValueError(f"Member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: Protocols) -> bool:
        """True when the (name, metadata) list is the one stored, in the same order."""
        return list(protocols) == self.protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among `candidates`."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"Member {self.member_id} does not support any candidate protocol")

    def __repr__(self) -> str:
        return (
            f"MemberMetadata(member_id={self.member_id!r}, "
            f"group_instance_id={self.group_instance_id!r}, client_id={self.client_id!r}, "
            f"session_timeout_ms={self.session_timeout_ms}, "
            f"rebalance_timeout_ms={self.rebalance_timeout_ms}, "
            f"protocols={[n for n, _ in self.protocols]})"
        )


@mypyc_attr(allow_interpreted_subclasses=True)
class GroupMetadata:
    """One group's membership and state (GroupMetadata.scala, without offsets)."""

    def __init__(
        self,
        group_id: str,
        initial_state: GroupState = GroupState.Empty,
        transition_listener: TransitionListener | None = None,
    ) -> None:
        self.group_id = group_id
        # The watch keys of the group's DelayedJoin and DelayedSync, made once: the join and
        # sync paths watch and check them several times per request.
        self.join_key = GroupJoinKey(group_id)
        self.sync_key = GroupSyncKey(group_id)
        self._state = initial_state
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.static_members: dict[str, str] = {}  # group.instance.id -> member.id
        self.pending_members: set[str] = set()  # told MEMBER_ID_REQUIRED, not yet joined
        self.pending_sync_members: set[str] = set()  # joined this generation, no SyncGroup yet
        self.num_members_awaiting_join = 0
        self.new_member_added = False  # lets InitialDelayedJoin extend its delay
        # protocol name -> members supporting it (a dict: Counter's methods are Python code)
        self._supported_protocols: dict[str, int] = {}
        self._transition_listener = transition_listener

    # -- construction from the store ---------------------------------------------------------
    @classmethod
    def load(
        cls,
        group_id: str,
        initial_state: GroupState,
        generation_id: int,
        protocol_type: str | None,
        protocol_name: str | None,
        leader_id: str | None,
        members: Iterable[MemberMetadata],
        transition_listener: TransitionListener | None = None,
    ) -> GroupMetadata:
        """GroupMetadata.loadGroup: a group rebuilt from its last stored record."""
        group = cls(group_id, initial_state, transition_listener)
        group.generation_id = generation_id
        group.protocol_type = protocol_type or None
        group.protocol_name = protocol_name
        group.leader_id = leader_id
        for member in members:
            group.add(member, None)
        return group

    # -- state -------------------------------------------------------------------------------
    @property
    def state(self) -> GroupState:
        return self._state

    def is_(self, state: GroupState) -> bool:
        return self._state is state

    @property
    def can_rebalance(self) -> bool:
        return self._state in _CAN_REBALANCE_FROM

    def transition_to(self, target: GroupState) -> None:
        """The only way the state changes; refuses what Kafka's assertValidTransition refuses."""
        if self._state not in _entered_from(target):
            raise IllegalStateTransition(
                f"Group {self.group_id} should be in one of "
                f"{sorted(s.value for s in target.valid_previous_states)} before moving to "
                f"{target.value}; it is in {self._state.value}"
            )
        old = self._state
        self._state = target
        if self._transition_listener is not None:
            self._transition_listener(self, old, target)

    # -- membership --------------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    @property
    def size(self) -> int:
        return len(self.members)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    def all_members(self) -> list[str]:
        return list(self.members)

    def all_member_metadata(self) -> list[MemberMetadata]:
        return list(self.members.values())

    def add(self, member: MemberMetadata, callback: Callback | None = None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise ValueError(f"Static member {member.group_instance_id} is already in group {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._inc_supported_protocols(member)
        member.awaiting_join_callback = callback
        if member.is_awaiting_join:
            self.num_members_awaiting_join += 1
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._dec_supported_protocols(member)
            if member.is_awaiting_join:
                self.num_members_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick any member that did; False when none did."""
        if self.leader_id is None:
            return False
        current = self.members.get(self.leader_id)
        if current is not None and current.is_awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.is_awaiting_join:
                self.leader_id = member_id
                return True
        return False

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> MemberMetadata:
        """Give a static member a new member id, keeping everything else.

        Kafka fences the old id's parked callbacks inside this method; here the coordinator
        answers them (FENCED_INSTANCE_ID) just before calling it, so this module needs no
        response types.
        """
        member = self.members.pop(old_member_id, None)
        if member is None:
            raise ValueError(f"Cannot replace non-existing member id {old_member_id}")
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return member

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def add_pending_member(self, member_id: str) -> None:
        if self.has(member_id):
            raise ValueError(f"Pending member {member_id} is already a member")
        self.pending_members.add(member_id)

    def add_pending_sync_member(self, member_id: str) -> None:
        if not self.has(member_id):
            raise ValueError(f"Pending sync for {member_id}, which is not a member")
        self.pending_sync_members.add(member_id)

    def remove_pending_sync_member(self, member_id: str) -> None:
        if not self.has(member_id):
            raise ValueError(f"Pending sync removal for {member_id}, which is not a member")
        self.pending_sync_members.discard(member_id)

    @property
    def has_received_sync_from_all_members(self) -> bool:
        return not self.pending_sync_members

    def clear_pending_sync_members(self) -> None:
        self.pending_sync_members.clear()

    def has_static_member(self, group_instance_id: str | None) -> bool:
        return group_instance_id is not None and group_instance_id in self.static_members

    def current_static_member_id(self, group_instance_id: str) -> str | None:
        return self.static_members.get(group_instance_id)

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    @property
    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_members_awaiting_join and not self.pending_members

    @property
    def num_awaiting(self) -> int:
        return self.num_members_awaiting_join

    @property
    def num_pending(self) -> int:
        return len(self.pending_members)

    @property
    def rebalance_timeout_ms(self) -> int:
        """The largest member rebalance timeout (0 for no members), as Kafka's foldLeft."""
        return max([0] + [m.rebalance_timeout_ms for m in self.members.values()])

    @staticmethod
    def generate_member_id(client_id: str, group_instance_id: str | None, rng: UuidDraws) -> str:
        """`clientId-uuid` (or `instanceId-uuid`), the uuid drawn from `rng` for replayability
        (a `random.Random`, or the coordinator's SeededDraws: the same draws, seeded once)."""
        prefix = group_instance_id if group_instance_id is not None else client_id
        return f"{prefix}-{_uuid4_text(rng.getrandbits(128))}"

    # -- protocols ---------------------------------------------------------------------------
    def _inc_supported_protocols(self, member: MemberMetadata) -> None:
        # Distinct names: a request listing a name twice would make Kafka's per-entry count
        # exceed the member count and its vote throw; counting names once keeps it sound.
        supported = self._supported_protocols
        for name in member.protocol_names:
            supported[name] = supported.get(name, 0) + 1

    def _dec_supported_protocols(self, member: MemberMetadata) -> None:
        supported = self._supported_protocols
        for name in member.protocol_names:
            count = supported.get(name, 0) - 1
            if count <= 0:
                supported.pop(name, None)
            else:
                supported[name] = count

    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports."""
        n = len(self.members)
        return {name for name, count in self._supported_protocols.items() if count == n}

    def select_protocol(self) -> str:
        """Each member votes for its preferred candidate; most votes wins.

        Ties: Kafka takes whichever its HashMap yields first (groupBy ... maxBy), which is
        unspecified; here the least name among the most voted wins, a rule the spec states
        the same way (GroupCoordinator.tla's SelectProtocol and ProtocolOrder), so the
        choice is reproducible and does not depend on the order members joined in.
        """
        if not self.members:
            raise ValueError("Cannot select protocol for empty group")
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            vote = m.vote(candidates)
            votes[vote] = votes.get(vote, 0) + 1
        most = max(votes.values())
        return min(name for name, n in votes.items() if n == most)

    def supports_protocols(self, member_protocol_type: str, member_protocols: set[str]) -> bool:
        if self._state is Empty:
            return bool(member_protocol_type) and bool(member_protocols)
        n = len(self.members)
        return (
            self.protocol_type is not None
            and self.protocol_type == member_protocol_type
            and any(self._supported_protocols.get(p, 0) == n for p in member_protocols)
        )

    def update_member(
        self,
        member: MemberMetadata,
        protocols: Protocols,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        callback: Callback | None,
    ) -> None:
        """Replace a member's protocols and timeouts and park (or clear) its join callback."""
        self._dec_supported_protocols(member)
        member.protocols = list(protocols)
        self._inc_supported_protocols(member)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if callback is not None and not member.is_awaiting_join:
            self.num_members_awaiting_join += 1
        elif callback is None and member.is_awaiting_join:
            self.num_members_awaiting_join -= 1
        member.awaiting_join_callback = callback

    # -- parked callbacks --------------------------------------------------------------------
    def maybe_invoke_join_callback(self, member: MemberMetadata, result: Any) -> bool:
        """Answer a parked JoinGroup once; the slot is cleared before the call (re-entrancy)."""
        callback = member.awaiting_join_callback
        if callback is None:
            return False
        member.awaiting_join_callback = None
        self.num_members_awaiting_join -= 1
        callback(result)
        return True

    def maybe_invoke_sync_callback(self, member: MemberMetadata, result: Any) -> bool:
        """Answer a parked SyncGroup once; True when there was one to answer."""
        callback = member.awaiting_sync_callback
        if callback is None:
            return False
        member.awaiting_sync_callback = None
        callback(result)
        return True

    # -- generations -------------------------------------------------------------------------
    def init_next_generation(self) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(CompletingRebalance)
        else:
            self.protocol_name = None
            self.transition_to(Empty)
        self.clear_pending_sync_members()

    def current_member_metadata(self) -> list[tuple[str, str | None, str]]:
        """(member id, instance id, metadata for the chosen protocol) for the leader's response."""
        if self._state is Dead or self._state is PreparingRebalance:
            raise ValueError(f"Cannot obtain member metadata for group in state {self._state}")
        assert self.protocol_name is not None
        return [(m.member_id, m.group_instance_id, m.metadata(self.protocol_name)) for m in self.members.values()]

    def __repr__(self) -> str:
        return (
            f"GroupMetadata(group_id={self.group_id!r}, state={self._state.value}, "
            f"generation_id={self.generation_id}, leader_id={self.leader_id!r}, "
            f"protocol={self.protocol_name!r}, members={list(self.members)}, "
            f"pending={sorted(self.pending_members)})"
        )
