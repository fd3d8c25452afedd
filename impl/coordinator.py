"""Kafka 3.x's classic group coordinator (core/.../coordinator/group/GroupCoordinator.scala,
Kafka 3.7-3.9), without offsets: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, the rebalance and
heartbeat purgatories, and loading / unloading a group as its offsets partition moves.

Every handler has Kafka's shape: validate the request -> look the group up -> dispatch on the
group's state. Delayed operations (`delayed.py`) call back into this class for what they
change (`on_complete_join`, `on_expire_heartbeat`, ...), so the protocol's changes live in one
file; their tryComplete predicates, which only read the group, are theirs (compiled there).

The coordinator never raises to its caller. An unexpected internal error answers the request
UNKNOWN_SERVER_ERROR (if it has not been answered) and is recorded in `internal_errors`; every
request callback is answered at most once (a second answer is dropped and counted in
`duplicate_answers`). Both counters are meant to stay at zero.

Deliberate differences from Kafka, all at the edges Kafka leaves to chance or to other layers:
- member ids are `clientId-<uuid4>` with the uuid drawn from `random.Random(member_id_seed)`;
- ties in the protocol vote and the choice of a new leader follow member join order, not
  HashMap order (see `group.py`);
- request-level validation done by KafkaApis (instance-id syntax, API versions) is not modelled;
- only the group metadata record is stored; offsets (and offset expiry of Empty groups) are not.

Observer timer kinds (`on_timer`): "join" (DelayedJoin), "initial_join" (InitialDelayedJoin),
"heartbeat" (DelayedHeartbeat, member id given), "pending_member" (a MEMBER_ID_REQUIRED member's
expiration, member id given), "sync" (DelayedSync). They are reported just before the expiry takes
effect, and only for the group object the coordinator currently hosts. Request kinds
(`on_request` / `on_response`): "join", "sync", "heartbeat", "leave"; `on_request` also reports
"unload" and "load" (no response follows those).
"""

from __future__ import annotations

import inspect
import logging
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kgc.impl.clock import Clock
from kgc.impl.delayed import (
    DelayedHeartbeat,
    DelayedJoin,
    DelayedSync,
    InitialDelayedJoin,
    MemberKey,
)
from kgc.impl.errors import ERROR_COORDINATOR_LOAD_IN_PROGRESS, ERROR_NONE, ERROR_REBALANCE_IN_PROGRESS, Errors
from kgc.impl.group import (
    CompletingRebalance,
    Dead,
    Empty,
    GroupMetadata,
    GroupState,
    MemberMetadata,
    PreparingRebalance,
    Protocols,
    Stable,
    normalize_protocols,
)
from kgc.impl.kafka_log import COORDINATOR as _KAFKA_LOG
from kgc.impl.kafka_log import GROUP_METADATA as _KAFKA_GM_LOG
from kgc.impl.kafka_log import METADATA_MANAGER as _KAFKA_GMM_LOG
from kgc.impl.kafka_log import partition_for
from kgc.impl.purgatory import DelayedOperationPurgatory
from kgc.impl.records import fast_init
from kgc.impl.seeded_draws import SeededDraws
from kgc.impl.store import GroupStore, InMemoryGroupStore, StoredGroup
from kgc.impl.timer import SystemTimer

log = logging.getLogger(__name__)

UNKNOWN_MEMBER_ID = ""  # JoinGroupRequest.UNKNOWN_MEMBER_ID
NO_GENERATION = -1  # GroupCoordinator.NoGeneration
NO_LEADER = ""  # GroupCoordinator.NoLeader


# ----------------------------------------------------------------------------------------------
# Configuration, results, observer
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupConfig:
    """Broker settings the coordinator reads (Kafka's defaults)."""

    min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000  # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    max_group_size: int | None = None  # group.max.size; None = unbounded
    new_member_join_timeout_ms: int = 300000  # GroupCoordinator.NewMemberJoinTimeoutMs


@fast_init
@dataclass(frozen=True)
class JoinGroupResponseMember:
    member_id: str
    group_instance_id: str | None
    metadata: str


@fast_init
@dataclass(frozen=True)
class JoinGroupResult:
    members: list[JoinGroupResponseMember]
    member_id: str
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str
    error: Errors
    # KIP-814 (JoinGroup v9+): the static leader rejoining a Stable group is told it leads
    # but must not run the assignor (GroupCoordinator.updateStaticMemberAndRebalance).
    skip_assignment: bool = False

    @classmethod
    def error_result(cls, member_id: str, error: Errors) -> JoinGroupResult:
        """JoinGroupResult(memberId, error) in Kafka: no generation, protocol or leader."""
        return cls([], member_id, NO_GENERATION, None, None, NO_LEADER, error)


@fast_init
@dataclass(frozen=True)
class SyncGroupResult:
    error: Errors
    protocol_type: str | None = None
    protocol_name: str | None = None
    member_assignment: str = ""


@fast_init
@dataclass(frozen=True)
class LeaveMemberIdentity:
    member_id: str
    group_instance_id: str | None = None


@fast_init
@dataclass(frozen=True)
class LeaveGroupResult:
    error: Errors
    member_responses: list[tuple[str, str | None, Errors]] = field(default_factory=list)


class CoordinatorObserver(Protocol):
    def on_request(self, kind: str, group_id: str, args: dict) -> None: ...
    def on_response(self, kind: str, group_id: str, result: object) -> None: ...
    def on_timer(self, kind: str, group_id: str, member_id: str | None) -> None: ...
    def on_transition(self, group_id: str, old: GroupState, new: GroupState) -> None: ...


class _Responder:
    """Wraps a request's callback: tells the observer, and answers at most once."""

    __slots__ = ("_coordinator", "_kind", "_group_id", "_callback", "answered", "supports_skip_assignment")

    def __init__(
        self, coordinator: GroupCoordinator, kind: str, group_id: str, callback: Callable[[Any], None]
    ) -> None:
        self._coordinator = coordinator
        self._kind = kind
        self._group_id = group_id
        self._callback = callback
        self.answered = False
        # JoinGroup v9+ (KafkaApis passes `supportSkippingAssignment` down with the request).
        self.supports_skip_assignment = False

    def __call__(self, result: Any) -> None:
        if self.answered:
            self._coordinator.duplicate_answers += 1
            log.error("dropping a second %s answer for group %s: %r", self._kind, self._group_id, result)
            return
        self.answered = True
        if self._coordinator.observer is not None:
            self._coordinator._notify("on_response", self._kind, self._group_id, result)
        try:
            self._callback(result)
        except Exception:  # the caller's bug must not break the coordinator
            self._coordinator.callback_errors += 1
            log.exception("%s response callback for group %s raised", self._kind, self._group_id)

    def answer_if_unanswered(self, result: Any) -> None:
        if not self.answered:
            self(result)


def _never_raise(default: Any = None) -> Callable:
    """For entry points called by delayed operations and the store: record, don't raise.

    The wrapper takes exactly the function's parameters: a generic ``*args, **kwargs`` one
    builds a tuple and a dict per call, and delayed operations call these three times per
    heartbeat (one tryComplete on the old operation, two on the new).
    """

    def decorate(fn: Callable) -> Callable:
        code = fn.__code__
        if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or code.co_kwonlyargcount or fn.__defaults__:

            def wrapper(self: GroupCoordinator, *args: Any, **kwargs: Any) -> Any:
                try:
                    return fn(self, *args, **kwargs)
                except Exception:
                    self._record_internal_error(fn.__name__)
                    return default

        else:
            params = ", ".join(code.co_varnames[: code.co_argcount])
            self_name = code.co_varnames[0]
            namespace: dict[str, Any] = {"fn": fn, "name": fn.__name__, "default": default}
            exec(
                f"def wrapper({params}):\n"
                f"    try:\n"
                f"        return fn({params})\n"
                f"    except Exception:\n"
                f"        {self_name}._record_internal_error(name)\n"
                f"        return default\n",
                namespace,
            )
            wrapper = namespace["wrapper"]
        wrapper.__name__ = fn.__name__
        wrapper.__qualname__ = fn.__qualname__
        wrapper.__doc__ = fn.__doc__
        wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
        return wrapper

    return decorate


# ----------------------------------------------------------------------------------------------
# The coordinator
# ----------------------------------------------------------------------------------------------


class GroupCoordinator:
    """Handles group membership for every group it hosts (all groups, until unloaded)."""

    # The classes of the groups and members this coordinator makes: a subclass swaps in an
    # interpreted subclass of either (conformance's seeded vote bug), which reaches the compiled
    # callers that an instance's monkeypatched method would not (kgc.impl.native).
    group_metadata_class: type[GroupMetadata] = GroupMetadata
    member_metadata_class: type[MemberMetadata] = MemberMetadata

    def __init__(
        self,
        config: GroupConfig,
        clock: Clock,
        timer: SystemTimer,
        store: GroupStore | None = None,
        member_id_seed: int = 0,
        observer: CoordinatorObserver | None = None,
        broker_id: int = 0,
    ) -> None:
        self.config = config
        self.broker_id = broker_id  # in Kafka's log lines ("[GroupCoordinator 0]: ...")
        self._removal_reason = ""  # the reason of the member removal under way, for the log
        self.clock = clock
        self.timer = timer
        self.store: GroupStore = store if store is not None else InMemoryGroupStore()
        self.observer = observer
        # random.Random(member_id_seed)'s draws, without seeding a Mersenne Twister per coordinator
        self._rng = SeededDraws(member_id_seed)
        self.heartbeat_purgatory = DelayedOperationPurgatory("Heartbeat", timer)
        self.rebalance_purgatory = DelayedOperationPurgatory("Rebalance", timer)
        self._groups: dict[str, GroupMetadata] = {}
        self._not_coordinator: set[str] = set()  # unloaded and not loaded again
        self._loading: set[str] = set()  # between on_group_load_begin and on_group_loaded
        self.offsets: dict[str, dict[str, int]] = {}  # group -> partition -> committed offset
        self.internal_errors: list[str] = []  # tracebacks; should stay empty
        self.duplicate_answers = 0  # should stay 0
        self.callback_errors = 0  # exceptions raised by callers' callbacks
        self.observer_errors = 0  # exceptions raised by the observer

    # -- read-only views -----------------------------------------------------------------------
    def group(self, group_id: str) -> GroupMetadata | None:
        """The hosted group, None when there is none (a never-seen or unloaded group: Dead)."""
        return self._groups.get(group_id)

    def group_ids(self) -> list[str]:
        return list(self._groups)

    def is_coordinator_for(self, group_id: str) -> bool:
        return group_id not in self._not_coordinator

    # ==========================================================================================
    # JoinGroup
    # ==========================================================================================
    def handle_join_group(
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
        """`supports_skip_assignment`: the request is JoinGroup v9+ (KIP-814)."""
        respond = _Responder(self, "join", group_id, response_callback)
        respond.supports_skip_assignment = supports_skip_assignment
        member_id = member_id if member_id is not None else UNKNOWN_MEMBER_ID
        if self.observer is not None:
            self._notify(
                "on_request",
                "join",
                group_id,
                {
                    "member_id": member_id,
                    "group_instance_id": group_instance_id,
                    "require_known_member": require_known_member,
                    "client_id": client_id,
                    "client_host": client_host,
                    "rebalance_timeout_ms": rebalance_timeout_ms,
                    "session_timeout_ms": session_timeout_ms,
                    "protocol_type": protocol_type,
                    "protocols": protocols,
                    "supports_skip_assignment": supports_skip_assignment,
                },
            )
        try:
            self._join_group(
                group_id,
                member_id,
                group_instance_id,
                require_known_member,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                normalize_protocols(protocols),
                respond,
            )
        except Exception:
            self._record_internal_error("handle_join_group")
            respond.answer_if_unanswered(JoinGroupResult.error_result(member_id, Errors.UNKNOWN_SERVER_ERROR))

    def _join_group(
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
        protocols: Protocols,
        respond: _Responder,
    ) -> None:
        error = self._validate_group_status(group_id)
        if error is not None:
            respond(JoinGroupResult.error_result(member_id, error))
            return
        if not (self.config.min_session_timeout_ms <= session_timeout_ms <= self.config.max_session_timeout_ms):
            respond(JoinGroupResult.error_result(member_id, Errors.INVALID_SESSION_TIMEOUT))
            return
        is_unknown_member = member_id == UNKNOWN_MEMBER_ID
        # The group is created only for an unknown member; a known member id for a group that
        # does not exist is rejected.
        group = self._get_or_maybe_create_group(group_id, is_unknown_member)
        if group is None:
            respond(JoinGroupResult.error_result(member_id, Errors.UNKNOWN_MEMBER_ID))
            return
        if not self._accept_joining_member(group, member_id):
            group.remove(member_id)
            respond(JoinGroupResult.error_result(UNKNOWN_MEMBER_ID, Errors.GROUP_MAX_SIZE_REACHED))
        elif is_unknown_member:
            self._do_new_member_join_group(
                group,
                group_instance_id,
                require_known_member,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
                respond,
            )
        else:
            self._do_current_member_join_group(
                group,
                member_id,
                group_instance_id,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
                respond,
            )
        # attempt to complete JoinGroup
        if group.is_(PreparingRebalance):
            self.rebalance_purgatory.check_and_complete(group.join_key)

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        """Room for this member? (acceptJoiningMember). While preparing, members already
        waiting are counted rather than the group size, so the last to rejoin are shed."""
        max_size = self.config.max_group_size
        if max_size is None:
            return True
        state = group.state
        if state in (Empty, Dead):
            return True
        if state is PreparingRebalance:
            return (group.has(member_id) and group.get(member_id).is_awaiting_join) or group.num_awaiting < max_size
        return group.has(member_id) or group.size < max_size

    def _do_new_member_join_group(
        self,
        group: GroupMetadata,
        group_instance_id: str | None,
        require_known_member: bool,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: Protocols,
        respond: _Responder,
    ) -> None:
        if group.is_(Dead):
            respond(JoinGroupResult.error_result(UNKNOWN_MEMBER_ID, Errors.COORDINATOR_NOT_AVAILABLE))
        elif not group.supports_protocols(protocol_type, {n for n, _ in protocols}):
            respond(JoinGroupResult.error_result(UNKNOWN_MEMBER_ID, Errors.INCONSISTENT_GROUP_PROTOCOL))
        else:
            new_member_id = self._generate_member_id(group, client_id, group_instance_id)
            if group_instance_id is not None:
                self._do_static_new_member_join_group(
                    group,
                    group_instance_id,
                    new_member_id,
                    client_id,
                    client_host,
                    rebalance_timeout_ms,
                    session_timeout_ms,
                    protocol_type,
                    protocols,
                    respond,
                )
            else:
                self._do_dynamic_new_member_join_group(
                    group,
                    require_known_member,
                    new_member_id,
                    client_id,
                    client_host,
                    rebalance_timeout_ms,
                    session_timeout_ms,
                    protocol_type,
                    protocols,
                    respond,
                )

    def _generate_member_id(self, group: GroupMetadata, client_id: str, group_instance_id: str | None) -> str:
        # Kafka's random UUIDs never collide; seeded ones could if two coordinators with one
        # seed share a store, so skip ids the group already knows (still deterministic).
        while True:
            member_id = GroupMetadata.generate_member_id(client_id, group_instance_id, self._rng)
            if not group.has(member_id) and not group.is_pending_member(member_id):
                return member_id

    def _do_static_new_member_join_group(
        self,
        group: GroupMetadata,
        group_instance_id: str,
        new_member_id: str,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: Protocols,
        respond: _Responder,
    ) -> None:
        old_member_id = group.current_static_member_id(group_instance_id)
        if old_member_id is not None:
            self._update_static_member_and_rebalance(
                group,
                old_member_id,
                new_member_id,
                group_instance_id,
                protocols,
                rebalance_timeout_ms,
                session_timeout_ms,
                respond,
            )
        else:
            self._add_member_and_rebalance(
                group,
                new_member_id,
                group_instance_id,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
                respond,
            )

    def _do_dynamic_new_member_join_group(
        self,
        group: GroupMetadata,
        require_known_member: bool,
        new_member_id: str,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: Protocols,
        respond: _Responder,
    ) -> None:
        if require_known_member:
            # Register the id as pending and ask the client to join again with it (KIP-394).
            self._kafka_info(
                "Dynamic member with unknown member id joins group %s in %s state. Created a new member id %s and "
                "request the member to rejoin with this id.",
                group.group_id,
                group.state,
                new_member_id,
            )
            group.add_pending_member(new_member_id)
            self._add_pending_member_expiration(group, new_member_id, session_timeout_ms)
            respond(JoinGroupResult.error_result(new_member_id, Errors.MEMBER_ID_REQUIRED))
        else:
            self._kafka_info(
                "Dynamic Member with unknown member id joins group %s in %s state. Created a new member id %s for "
                "this member and add to the group.",
                group.group_id,
                group.state,
                new_member_id,
            )
            self._add_member_and_rebalance(
                group,
                new_member_id,
                None,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
                respond,
            )

    def _validate_current_member(
        self, group: GroupMetadata, member_id: str, group_instance_id: str | None
    ) -> Errors | None:
        """An instance id must map to this member id; the member id must be in the group."""
        if group_instance_id is not None:
            current = group.current_static_member_id(group_instance_id)
            if current is None:
                return Errors.UNKNOWN_MEMBER_ID
            if current != member_id:
                return Errors.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return Errors.UNKNOWN_MEMBER_ID
        return None

    def _do_current_member_join_group(
        self,
        group: GroupMetadata,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: Protocols,
        respond: _Responder,
    ) -> None:
        if group.is_(Dead):
            respond(JoinGroupResult.error_result(member_id, Errors.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(protocol_type, {n for n, _ in protocols}):
            respond(JoinGroupResult.error_result(member_id, Errors.INCONSISTENT_GROUP_PROTOCOL))
            return
        if group.is_pending_member(member_id):
            if group_instance_id is not None:
                # Kafka throws IllegalStateException here (a pending member is never static);
                # KafkaApis turns it into UNKNOWN_SERVER_ERROR. Answer that without throwing.
                respond(JoinGroupResult.error_result(UNKNOWN_MEMBER_ID, Errors.UNKNOWN_SERVER_ERROR))
                return
            self._add_member_and_rebalance(
                group,
                member_id,
                None,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
                respond,
            )
            return
        error = self._validate_current_member(group, member_id, group_instance_id)
        if error is not None:
            respond(JoinGroupResult.error_result(member_id, error))
            return
        member = group.get(member_id)
        state = group.state
        if state is PreparingRebalance:
            self._update_member_and_rebalance(
                group, member, protocols, rebalance_timeout_ms, session_timeout_ms, respond
            )
        elif state is CompletingRebalance:
            if member.matches(protocols):
                # The member lost the first response: return the current generation again.
                respond(self._current_join_result(group, member_id, with_members=group.is_leader(member_id)))
            else:
                self._update_member_and_rebalance(
                    group, member, protocols, rebalance_timeout_ms, session_timeout_ms, respond
                )
        elif state is Stable:
            if group.is_leader(member_id) or not member.matches(protocols):
                # A leader's JoinGroup forces a rebalance (e.g. topic metadata changed); so
                # does a follower whose metadata changed.
                self._update_member_and_rebalance(
                    group, member, protocols, rebalance_timeout_ms, session_timeout_ms, respond
                )
            else:
                respond(self._current_join_result(group, member_id, with_members=False))
        else:  # Empty | Dead: let the member reset its generation and rejoin
            respond(JoinGroupResult.error_result(member_id, Errors.UNKNOWN_MEMBER_ID))

    def _current_join_result(
        self, group: GroupMetadata, member_id: str, with_members: bool, leader_id: str | None = None
    ) -> JoinGroupResult:
        members = (
            [JoinGroupResponseMember(mid, iid, md) for mid, iid, md in group.current_member_metadata()]
            if with_members
            else []
        )
        leader = leader_id if leader_id is not None else group.leader_id
        return JoinGroupResult(
            members,
            member_id,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            leader or NO_LEADER,
            ERROR_NONE,
        )

    def _add_member_and_rebalance(
        self,
        group: GroupMetadata,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: Protocols,
        respond: _Responder,
    ) -> None:
        member = self.member_metadata_class(
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout_ms,
            session_timeout_ms,
            protocol_type,
            protocols,
        )
        member.is_new = True
        # Lets an InitialDelayedJoin wait once more for further members.
        if group.is_(PreparingRebalance) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, respond)
        # A new member cannot heartbeat until it has its id, and a client that gave up on a
        # long rebalance would leave a defunct member: time out its JoinGroup instead.
        self._complete_and_schedule_next_expiration(group, member, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance(group)

    def _update_static_member_and_rebalance(
        self,
        group: GroupMetadata,
        old_member_id: str,
        new_member_id: str,
        group_instance_id: str,
        protocols: Protocols,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        respond: _Responder,
    ) -> None:
        current_leader = group.leader_id
        member = self._replace_static_member(group, group_instance_id, old_member_id, new_member_id)
        # The old id's heartbeat expires without effect; schedule one for the new id.
        self._complete_and_schedule_next_heartbeat_expiration(group, member)
        old_rebalance_timeout_ms = member.rebalance_timeout_ms
        old_session_timeout_ms = member.session_timeout_ms
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, respond)
        # Kafka reads the "old" protocols after updateMember, so a failed store keeps the new
        # ones; kept as Kafka has it.
        old_protocols = list(member.protocols)

        state = group.state
        if state is Stable:
            # Persist the new member id unless the next generation's protocol would change.
            if group.protocol_name == group.select_protocol():
                assignment = {m.member_id: m.assignment for m in group.all_member_metadata()}

                def on_stored(error: Errors) -> None:
                    self._on_static_member_stored(
                        group,
                        member,
                        old_member_id,
                        new_member_id,
                        group_instance_id,
                        old_protocols,
                        old_rebalance_timeout_ms,
                        old_session_timeout_ms,
                        current_leader,
                        respond,
                        error,
                    )

                self.store.store_group(StoredGroup.of(group, assignment), on_stored)
            else:
                self._maybe_prepare_rebalance(group)
        elif state is CompletingRebalance:
            # The leader may already be assigning to the old id: rebalance so the new id gets
            # an assignment.
            self._prepare_rebalance(group)
        elif state is PreparingRebalance:
            pass
        else:
            raise ValueError(
                f"Group {group.group_id} in unexpected state {state} when static "
                f"member {group_instance_id} rejoined with an unknown member id"
            )

    def _replace_static_member(
        self, group: GroupMetadata, group_instance_id: str, old_member_id: str, new_member_id: str
    ) -> MemberMetadata:
        """GroupMetadata.replaceStaticMember with the fencing Kafka does inside it: whatever
        the id being replaced has parked is answered FENCED_INSTANCE_ID (also on the revert
        of a failed store, where that id is the new one)."""
        old = group.get(old_member_id)
        group.maybe_invoke_join_callback(old, JoinGroupResult.error_result(old_member_id, Errors.FENCED_INSTANCE_ID))
        group.maybe_invoke_sync_callback(old, SyncGroupResult(Errors.FENCED_INSTANCE_ID))
        return group.replace_static_member(group_instance_id, old_member_id, new_member_id)

    @_never_raise()
    def _on_static_member_stored(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        old_member_id: str,
        new_member_id: str,
        group_instance_id: str,
        old_protocols: Protocols,
        old_rebalance_timeout_ms: int,
        old_session_timeout_ms: int,
        current_leader: str | None,
        respond: _Responder,
        error: Errors,
    ) -> None:
        if error is not ERROR_NONE:
            # Revert to the old member id (the write that would make the new one durable failed).
            if group.members.get(new_member_id) is member:
                group.update_member(member, old_protocols, old_rebalance_timeout_ms, old_session_timeout_ms, None)
                if group.current_static_member_id(group_instance_id) == new_member_id:
                    restored = self._replace_static_member(group, group_instance_id, new_member_id, old_member_id)
                    self._complete_and_schedule_next_heartbeat_expiration(group, restored)
            respond.answer_if_unanswered(
                JoinGroupResult(
                    [],
                    UNKNOWN_MEMBER_ID,
                    group.generation_id,
                    group.protocol_type,
                    group.protocol_name,
                    current_leader or NO_LEADER,
                    error,
                )
            )
        elif respond.supports_skip_assignment:
            # JoinGroup v9+ (KIP-814, GroupCoordinator.updateStaticMemberAndRebalance): the
            # static leader learns it leads, with the members, but skips the assignor.
            is_leader = group.is_leader(new_member_id)
            group.maybe_invoke_join_callback(
                member,
                JoinGroupResult(
                    (
                        [JoinGroupResponseMember(mid, iid, md) for mid, iid, md in group.current_member_metadata()]
                        if is_leader
                        else []
                    ),
                    new_member_id,
                    group.generation_id,
                    group.protocol_type,
                    group.protocol_name,
                    group.leader_id or NO_LEADER,
                    ERROR_NONE,
                    skip_assignment=is_leader,
                ),
            )
        else:
            # Return the old leader id so that a rejoining leader does not run a trivial
            # assignment that a Stable group would not broadcast (JoinGroup < v9 behaviour).
            group.maybe_invoke_join_callback(
                member,
                JoinGroupResult(
                    [],
                    new_member_id,
                    group.generation_id,
                    group.protocol_type,
                    group.protocol_name,
                    current_leader or NO_LEADER,
                    ERROR_NONE,
                ),
            )

    def _update_member_and_rebalance(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        protocols: Protocols,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        respond: _Responder,
    ) -> None:
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, respond)
        self._maybe_prepare_rebalance(group)

    # ==========================================================================================
    # Rebalance: DelayedJoin / InitialDelayedJoin / DelayedSync
    # ==========================================================================================
    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str = "") -> None:
        if group.can_rebalance:
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str = "") -> None:
        # Members awaiting a sync are told to rejoin.
        if group.is_(CompletingRebalance):
            self._reset_and_propagate_assignment_error(group, ERROR_REBALANCE_IN_PROGRESS)
        self._remove_sync_expiration(group)
        delay = self.config.initial_rebalance_delay_ms
        op: DelayedJoin
        if group.is_(Empty):
            op = InitialDelayedJoin(self, group, delay, delay, max(group.rebalance_timeout_ms - delay, 0))
        else:
            op = DelayedJoin(self, group, group.rebalance_timeout_ms)
        group.transition_to(PreparingRebalance)
        if _KAFKA_LOG.isEnabledFor(logging.INFO):
            self._kafka_info(
                "Preparing to rebalance group %s in state %s with old generation %d (__consumer_offsets-%d) "
                "(reason: %s)",
                group.group_id,
                group.state,
                group.generation_id,
                partition_for(group.group_id),
                reason or "not recorded",
            )
        self.rebalance_purgatory.try_complete_else_watch(op, [group.join_key])

    @_never_raise()
    def on_complete_initial_join(self, op: InitialDelayedJoin) -> None:
        """InitialDelayedJoin.onComplete: wait again if members arrived and time remains."""
        group = op.group
        if group.new_member_added and op.remaining_ms != 0:
            group.new_member_added = False
            delay = min(op.configured_rebalance_delay_ms, op.remaining_ms)
            remaining = max(op.remaining_ms - op.delay_ms, 0)
            self.rebalance_purgatory.try_complete_else_watch(
                InitialDelayedJoin(self, group, op.configured_rebalance_delay_ms, delay, remaining),
                [group.join_key],
            )
        else:
            self.on_complete_join(group)

    @_never_raise()
    def on_complete_join(self, group: GroupMetadata) -> None:
        """End of PreparingRebalance: drop dynamic members that did not rejoin, then start the
        next generation and answer every parked JoinGroup."""
        not_rejoined = [m for m in group.not_yet_rejoined_members() if not m.is_static_member]
        for failed in not_rejoined:
            group.remove(failed.member_id)
            self._remove_heartbeat_for_leaving_member(group, failed)

        if group.is_(Dead):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Only static members remain and none rejoined: wait another rebalance timeout
            # (their session timeouts will remove them). At least 1 ms: with a 0 ms rebalance
            # timeout Kafka spins while real time passes; on a virtual clock a 0 ms re-arm
            # would fire again at the same instant forever.
            self.rebalance_purgatory.try_complete_else_watch(
                DelayedJoin(self, group, max(group.rebalance_timeout_ms, 1)), [group.join_key]
            )
            return

        group.init_next_generation()
        if group.is_(Empty):
            if _KAFKA_LOG.isEnabledFor(logging.INFO):
                self._kafka_info(
                    "Group %s with generation %d is now empty (__consumer_offsets-%d)",
                    group.group_id,
                    group.generation_id,
                    partition_for(group.group_id),
                )

            def on_stored(error: Errors) -> None:
                if error is not ERROR_NONE:
                    # Safe to ignore: an empty generation has no members to mislead.
                    self._log_store_error(group.group_id, group.generation_id, error)
                    self._kafka_info(
                        "Failed to write empty metadata for group %s: %s",
                        group.group_id,
                        error.name,
                        level=logging.WARNING,
                    )

            self.store.store_group(StoredGroup.of(group, {}), on_stored)
            return

        if _KAFKA_LOG.isEnabledFor(logging.INFO):
            self._kafka_info(
                "Stabilized group %s generation %d (__consumer_offsets-%d) with %d members",
                group.group_id,
                group.generation_id,
                partition_for(group.group_id),
                group.size,
            )
        for member in group.all_member_metadata():
            result = self._current_join_result(group, member.member_id, with_members=group.is_leader(member.member_id))
            group.maybe_invoke_join_callback(member, result)
            self._complete_and_schedule_next_heartbeat_expiration(group, member)
            member.is_new = False
            group.add_pending_sync_member(member.member_id)
        self._schedule_pending_sync(group)

    @_never_raise()
    def on_expire_join(self, group: GroupMetadata) -> None:
        """DelayedJoin.onExpiration: on_complete_join has already done the work."""

    def _schedule_pending_sync(self, group: GroupMetadata) -> None:
        self.rebalance_purgatory.try_complete_else_watch(
            DelayedSync(self, group, group.generation_id, group.rebalance_timeout_ms), [group.sync_key]
        )

    def _remove_pending_sync_member(self, group: GroupMetadata, member_id: str) -> None:
        group.remove_pending_sync_member(member_id)
        self._maybe_complete_sync_expiration(group)

    def _remove_sync_expiration(self, group: GroupMetadata) -> None:
        group.clear_pending_sync_members()
        self._maybe_complete_sync_expiration(group)

    def _maybe_complete_sync_expiration(self, group: GroupMetadata) -> None:
        self.rebalance_purgatory.check_and_complete(group.sync_key)

    @_never_raise()
    def on_expire_pending_sync(self, group: GroupMetadata, generation_id: int) -> None:
        """DelayedSync.onExpiration: remove members that never synced and rebalance."""
        if generation_id != group.generation_id:
            log.error(
                "Unexpected sync expiration for %s, generation %d (group is at %d)",
                group.group_id,
                generation_id,
                group.generation_id,
            )
            return
        if group.state in (Dead, Empty, PreparingRebalance):
            log.error("Unexpected sync expiration for %s in state %s", group.group_id, group.state)
            return
        if not group.has_received_sync_from_all_members:
            pending = sorted(group.pending_sync_members)
            for member_id in pending:
                key = _member_key(group, member_id)  # read before the member is removed
                group.remove(member_id)
                self.heartbeat_purgatory.check_and_complete(key)
            self._prepare_rebalance(group)

    # ==========================================================================================
    # SyncGroup
    # ==========================================================================================
    def handle_sync_group(
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
        respond = _Responder(self, "sync", group_id, response_callback)
        if self.observer is not None:
            self._notify(
                "on_request",
                "sync",
                group_id,
                {
                    "generation": generation,
                    "member_id": member_id,
                    "protocol_type": protocol_type,
                    "protocol_name": protocol_name,
                    "group_instance_id": group_instance_id,
                    "group_assignment": dict(group_assignment or {}),
                },
            )
        try:
            assignment = {str(k): str(v) for k, v in (group_assignment or {}).items()}
            self._sync_group(
                group_id, generation, member_id, protocol_type, protocol_name, group_instance_id, assignment, respond
            )
        except Exception:
            self._record_internal_error("handle_sync_group")
            respond.answer_if_unanswered(SyncGroupResult(Errors.UNKNOWN_SERVER_ERROR))

    def _sync_group(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        protocol_type: str | None,
        protocol_name: str | None,
        group_instance_id: str | None,
        assignment: dict[str, str],
        respond: _Responder,
    ) -> None:
        error = self._validate_group_status(group_id)
        if error is ERROR_COORDINATOR_LOAD_IN_PROGRESS:
            # GroupCoordinator.handleSyncGroup: the rebalance's state is lost with the load, so
            # the member is sent back to JoinGroup (older clients do not know LOAD_IN_PROGRESS).
            error = ERROR_REBALANCE_IN_PROGRESS
        if error is not None:
            respond(SyncGroupResult(error))
            return
        group = self._groups.get(group_id)
        if group is None:
            respond(SyncGroupResult(Errors.UNKNOWN_MEMBER_ID))
            return
        error = self._validate_sync_group(group, generation, member_id, protocol_type, protocol_name, group_instance_id)
        if error is not None:
            respond(SyncGroupResult(error))
            return

        state = group.state
        if state is Empty:
            respond(SyncGroupResult(Errors.UNKNOWN_MEMBER_ID))
        elif state is PreparingRebalance:
            respond(SyncGroupResult(ERROR_REBALANCE_IN_PROGRESS))
        elif state is CompletingRebalance:
            group.get(member_id).awaiting_sync_callback = respond
            self._remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                # The leader's assignment is stored, then sent to every waiting member;
                # members it left out get an empty assignment.
                if _KAFKA_LOG.isEnabledFor(logging.INFO):
                    self._kafka_info(
                        "Assignment received from leader %s for group %s for generation %d. "
                        "The group has %d members, %d of which are static.",
                        member_id,
                        group.group_id,
                        group.generation_id,
                        group.size,
                        sum(1 for m in group.all_member_metadata() if m.is_static_member),
                    )
                full = dict(assignment)
                for mid in group.all_members():
                    full.setdefault(mid, "")
                generation_id = generation

                def on_stored(error: Errors) -> None:
                    self._on_assignment_stored(group, generation_id, full, error)

                self.store.store_group(StoredGroup.of(group, full), on_stored)
        elif state is Stable:
            self._remove_pending_sync_member(group, member_id)
            member = group.get(member_id)
            respond(SyncGroupResult(ERROR_NONE, group.protocol_type, group.protocol_name, member.assignment))
            self._complete_and_schedule_next_heartbeat_expiration(group, member)
        else:
            raise ValueError(f"Sync for Dead group {group.group_id} passed validation")

    def _validate_sync_group(
        self,
        group: GroupMetadata,
        generation: int,
        member_id: str,
        protocol_type: str | None,
        protocol_name: str | None,
        group_instance_id: str | None,
    ) -> Errors | None:
        if group.is_(Dead):
            return Errors.COORDINATOR_NOT_AVAILABLE
        error = self._validate_current_member(group, member_id, group_instance_id)
        if error is not None:
            return error
        if generation != group.generation_id:
            return Errors.ILLEGAL_GENERATION
        if protocol_type is not None and protocol_type != group.protocol_type:
            return Errors.INCONSISTENT_GROUP_PROTOCOL
        if protocol_name is not None and protocol_name != group.protocol_name:
            return Errors.INCONSISTENT_GROUP_PROTOCOL
        return None

    @_never_raise()
    def _on_assignment_stored(
        self, group: GroupMetadata, generation_id: int, assignment: dict[str, str], error: Errors
    ) -> None:
        if error is not ERROR_NONE:
            self._log_store_error(group.group_id, generation_id, error)
        # A member may have joined (or the group moved) while the write was in flight.
        if group.is_(CompletingRebalance) and generation_id == group.generation_id:
            if error is not ERROR_NONE:
                self._reset_and_propagate_assignment_error(group, error)
                self._maybe_prepare_rebalance(
                    group, f"Error {error.name} when storing group assignment during SyncGroup"
                )
            else:
                self._set_and_propagate_assignment(group, assignment)
                group.transition_to(Stable)

    def _set_and_propagate_assignment(self, group: GroupMetadata, assignment: dict[str, str]) -> None:
        for member in group.all_member_metadata():
            member.assignment = assignment.get(member.member_id, "")
        self._propagate_assignment(group, ERROR_NONE)

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: Errors) -> None:
        for member in group.all_member_metadata():
            member.assignment = ""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: GroupMetadata, error: Errors) -> None:
        ok = error is ERROR_NONE
        protocol_type = group.protocol_type if ok else None
        protocol_name = group.protocol_name if ok else None
        for member in group.all_member_metadata():
            result = SyncGroupResult(error, protocol_type, protocol_name, member.assignment)
            if group.maybe_invoke_sync_callback(member, result):
                # A session that expired while we waited for the leader or the store was
                # ignored; restart it now that the member has its answer.
                self._complete_and_schedule_next_heartbeat_expiration(group, member)

    # ==========================================================================================
    # Heartbeat
    # ==========================================================================================
    def handle_heartbeat(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        response_callback: Callable[[Errors], None],
    ) -> None:
        # Answered synchronously, so no _Responder: the answer-once guard has nothing to guard.
        if self.observer is not None:
            self._notify(
                "on_request",
                "heartbeat",
                group_id,
                {"member_id": member_id, "group_instance_id": group_instance_id, "generation_id": generation_id},
            )
        try:
            result = self._heartbeat(group_id, member_id, group_instance_id, generation_id)
        except Exception:
            self._record_internal_error("handle_heartbeat")
            result = Errors.UNKNOWN_SERVER_ERROR
        if self.observer is not None:
            self._notify("on_response", "heartbeat", group_id, result)
        try:
            response_callback(result)
        except Exception:  # the caller's bug must not break the coordinator
            self.callback_errors += 1
            log.exception("%s response callback for group %s raised", "heartbeat", group_id)

    def _heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int) -> Errors:
        error = self._validate_group_status(group_id)
        if error is ERROR_COORDINATOR_LOAD_IN_PROGRESS:
            # GroupCoordinator.handleHeartbeat: "the group is still loading, so respond just blindly"
            return ERROR_NONE
        if error is not None:
            return error
        group = self._groups.get(group_id)
        if group is None:
            return Errors.UNKNOWN_MEMBER_ID
        if group.is_(Dead):
            return Errors.COORDINATOR_NOT_AVAILABLE
        error = self._validate_current_member(group, member_id, group_instance_id)
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return Errors.ILLEGAL_GENERATION
        state = group.state
        if state is Empty:
            return Errors.UNKNOWN_MEMBER_ID
        member = group.members[member_id]
        # Heartbeats keep the session alive in every live state; while preparing they also
        # tell the member to rejoin.
        self._complete_and_schedule_next_expiration(group, member, member.session_timeout_ms)
        if state is PreparingRebalance:
            return ERROR_REBALANCE_IN_PROGRESS
        return ERROR_NONE

    def _complete_and_schedule_next_heartbeat_expiration(self, group: GroupMetadata, member: MemberMetadata) -> None:
        self._complete_and_schedule_next_expiration(group, member, member.session_timeout_ms)

    def _complete_and_schedule_next_expiration(
        self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int
    ) -> None:
        key = _heartbeat_key(group, member)
        purgatory = self.heartbeat_purgatory
        # complete the current expectation ...
        member.heartbeat_satisfied = True
        purgatory.check_and_complete(key)
        # ... and expect the next one
        member.heartbeat_satisfied = False
        purgatory.try_complete_else_watch(DelayedHeartbeat(self, group, member.member_id, False, timeout_ms), [key])

    def _add_pending_member_expiration(self, group: GroupMetadata, member_id: str, timeout_ms: int) -> None:
        # a pending member is an id only (no MemberMetadata to keep its key on)
        self.heartbeat_purgatory.try_complete_else_watch(
            DelayedHeartbeat(self, group, member_id, True, timeout_ms), [MemberKey(group.group_id, member_id)]
        )

    def _remove_heartbeat_for_leaving_member(self, group: GroupMetadata, member: MemberMetadata) -> None:
        """Kafka's removeHeartbeatForLeavingMember, given the member rather than its id, so that
        the key its heartbeats were watched under is reused, not built again."""
        self.heartbeat_purgatory.check_and_complete(_heartbeat_key(group, member))

    @_never_raise()
    def on_expire_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool) -> None:
        """DelayedHeartbeat.onExpiration: the session (or pending id, or new-member join) ran
        out."""
        if group.is_(Dead):
            return
        if is_pending:
            self._kafka_info(
                "Pending member %s in group %s has been removed after session timeout expiration.",
                member_id,
                group.group_id,
            )
            self._remove_pending_member_and_update_group(group, member_id)
            return
        member = group.members.get(member_id)
        if member is not None and not member.has_satisfied_heartbeat:
            self._kafka_info("Member %s in group %s has failed, removing it from the group", member_id, group.group_id)
            self._remove_member_with_reason(group, member, f"removing member {member_id} on heartbeat expiration")

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata) -> None:
        # A new member may time out with a parked JoinGroup: answer it before removing it, so
        # the client retries.
        group.maybe_invoke_join_callback(
            member, JoinGroupResult.error_result(UNKNOWN_MEMBER_ID, Errors.UNKNOWN_MEMBER_ID)
        )
        group.remove(member.member_id)
        state = group.state
        if state in (Stable, CompletingRebalance):
            self._maybe_prepare_rebalance(group, self._removal_reason)
        elif state is PreparingRebalance:
            self.rebalance_purgatory.check_and_complete(group.join_key)

    def _remove_member_with_reason(self, group: GroupMetadata, member: MemberMetadata, reason: str) -> None:
        """_remove_member_and_update_group with the reason Kafka's "Preparing to rebalance" line
        gives (kept beside the call, not in its signature, which seeded bugs override)."""
        self._removal_reason = reason
        try:
            self._remove_member_and_update_group(group, member)
        finally:
            self._removal_reason = ""

    def _remove_pending_member_and_update_group(self, group: GroupMetadata, member_id: str) -> None:
        group.remove(member_id)
        if group.is_(PreparingRebalance):
            self.rebalance_purgatory.check_and_complete(group.join_key)

    # ==========================================================================================
    # LeaveGroup
    # ==========================================================================================
    def handle_leave_group(
        self,
        group_id: str,
        leaving_members: list[LeaveMemberIdentity],
        response_callback: Callable[[LeaveGroupResult], None],
    ) -> None:
        respond = _Responder(self, "leave", group_id, response_callback)
        members = list(leaving_members or [])
        if self.observer is not None:
            self._notify("on_request", "leave", group_id, {"leaving_members": members})
        try:
            respond(self._leave_group(group_id, members))
        except Exception:
            self._record_internal_error("handle_leave_group")
            respond.answer_if_unanswered(LeaveGroupResult(Errors.UNKNOWN_SERVER_ERROR, []))

    def _leave_group(self, group_id: str, leaving_members: Sequence[LeaveMemberIdentity]) -> LeaveGroupResult:
        error = self._validate_group_status(group_id)
        if error is not None:
            return LeaveGroupResult(error, [])
        group = self._groups.get(group_id)
        if group is None:
            return LeaveGroupResult(
                ERROR_NONE, [(m.member_id, m.group_instance_id, Errors.UNKNOWN_MEMBER_ID) for m in leaving_members]
            )
        if group.is_(Dead):
            return LeaveGroupResult(Errors.COORDINATOR_NOT_AVAILABLE, [])
        responses: list[tuple[str, str | None, Errors]] = []
        for leaving in leaving_members:
            member_id, instance_id = leaving.member_id, leaving.group_instance_id
            if member_id == UNKNOWN_MEMBER_ID:
                # Administrative removal of a static member by its instance id.
                current = group.current_static_member_id(instance_id) if instance_id is not None else None
                if current is not None:
                    self._remove_current_member_from_group(group, current)
                    member_error = ERROR_NONE
                else:
                    member_error = Errors.UNKNOWN_MEMBER_ID
            elif group.is_pending_member(member_id):
                self._remove_pending_member_and_update_group(group, member_id)
                self.heartbeat_purgatory.check_and_complete(MemberKey(group.group_id, member_id))
                self._kafka_info(
                    "Pending member with memberId=%s has left group %s through explicit `LeaveGroup` request",
                    member_id,
                    group.group_id,
                )
                member_error = ERROR_NONE
            else:
                validation = self._validate_current_member(group, member_id, instance_id)
                if validation is None:
                    self._remove_current_member_from_group(group, member_id)
                    member_error = ERROR_NONE
                else:
                    member_error = validation
            responses.append((member_id, instance_id, member_error))
        return LeaveGroupResult(ERROR_NONE, responses)

    def _remove_current_member_from_group(self, group: GroupMetadata, member_id: str) -> None:
        member = group.get(member_id)
        self._remove_member_with_reason(group, member, f"Removing member {member_id} on LeaveGroup")
        self._remove_heartbeat_for_leaving_member(group, member)
        if _KAFKA_LOG.isEnabledFor(logging.INFO):
            self._kafka_info(
                "Member %s has left group %s through explicit `LeaveGroup`; client reason: not provided",
                _member_text(member),
                group.group_id,
            )

    # ==========================================================================================
    # OffsetCommit
    # ==========================================================================================
    def handle_commit_offsets(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: dict[str, int],
        response_callback: Callable[[dict[str, Errors]], None],
    ) -> None:
        """GroupCoordinator.handleCommitOffsets: the generation and member fencing that
        generations exist for. Offsets are kept in memory (`self.offsets`); the append of the
        offset records is taken as immediate, unlike the group-metadata writes."""
        respond = _Responder(self, "commit", group_id, response_callback)
        if self.observer is not None:
            self._notify(
                "on_request",
                "commit",
                group_id,
                {
                    "member_id": member_id,
                    "group_instance_id": group_instance_id,
                    "generation_id": generation_id,
                    "offsets": dict(offsets),
                },
            )
        try:
            error = self._commit_offsets(group_id, member_id, group_instance_id, generation_id, offsets)
            respond({partition: error for partition in offsets})
        except Exception:
            self._record_internal_error("handle_commit_offsets")
            respond.answer_if_unanswered({partition: Errors.UNKNOWN_SERVER_ERROR for partition in offsets})

    def _commit_offsets(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int, offsets: dict[str, int]
    ) -> Errors:
        error = self._validate_group_status(group_id, allow_empty_id=True)
        if error is not None:
            return error
        group = self._groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                # "a request coming from an older generation. either way, reject the commit"
                return Errors.ILLEGAL_GENERATION
            # "the group is not relying on Kafka for group management, so allow the commit"
            group = self._get_or_maybe_create_group(group_id, True)
            assert group is not None
        # doCommitOffsets
        error = self._validate_offset_commit(group, generation_id, member_id, group_instance_id)
        if error is not None:
            return error
        state = group.state
        if state is CompletingRebalance:
            # The member has the new generation from its JoinGroup but no assignment yet.
            return ERROR_REBALANCE_IN_PROGRESS
        if state in (Stable, PreparingRebalance):
            # A commit keeps the session alive; while preparing, the heartbeat tells the
            # member to rejoin.
            self._complete_and_schedule_next_heartbeat_expiration(group, group.get(member_id))
        elif state is not Empty:
            raise ValueError(f"Logic error: unexpected group state {state}")
        self.offsets.setdefault(group_id, {}).update(offsets)
        return ERROR_NONE

    def _validate_offset_commit(
        self, group: GroupMetadata, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> Errors | None:
        """GroupCoordinator.validateOffsetCommit (non-transactional)."""
        if group.is_(Dead):
            return Errors.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_(Empty):
            # The admin client or a consumer without group management: allowed while Empty.
            return None
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or group_instance_id is not None:
            error = self._validate_current_member(group, member_id, group_instance_id)
            if error is not None:
                return error
            return Errors.ILLEGAL_GENERATION if generation_id != group.generation_id else None
        if not group.is_(Empty):
            # "When the group is non-empty, only members can commit offsets."
            return Errors.UNKNOWN_MEMBER_ID
        return None

    # ==========================================================================================
    # Partition emigration / immigration
    # ==========================================================================================
    def on_group_unloaded(self, group_id: str) -> None:
        """The group's offsets partition moved away: Dead, parked requests answered
        NOT_COORDINATOR, and every later request NOT_COORDINATOR until `on_group_loaded`."""
        if self.observer is not None:
            self._notify("on_request", "unload", group_id, {})
        try:
            # GroupMetadataManager.removeGroupsAndOffsets: ownedPartitions and loadingPartitions
            # both lose the partition, so a load in progress ends too.
            self._loading.discard(group_id)
            self._not_coordinator.add(group_id)
            group = self._groups.get(group_id)
            if group is not None:
                self._unload(group)
                if self._groups.get(group_id) is group:
                    del self._groups[group_id]
        except Exception:
            self._record_internal_error("on_group_unloaded")

    def _unload(self, group: GroupMetadata) -> None:
        self._kafka_info("Unloading group metadata for %s with generation %d", group.group_id, group.generation_id)
        previous = group.state
        group.transition_to(Dead)
        if previous is PreparingRebalance:
            for member in group.all_member_metadata():
                group.maybe_invoke_join_callback(
                    member, JoinGroupResult.error_result(member.member_id, Errors.NOT_COORDINATOR)
                )
            self.rebalance_purgatory.check_and_complete(group.join_key)
        elif previous in (Stable, CompletingRebalance):
            for member in group.all_member_metadata():
                group.maybe_invoke_sync_callback(member, SyncGroupResult(Errors.NOT_COORDINATOR))
                self.heartbeat_purgatory.check_and_complete(_heartbeat_key(group, member))
        self._remove_sync_expiration(group)

    def on_group_loaded(self, group_id: str) -> None:
        """This coordinator takes the group over from the store: the last stored generation,
        protocol, leader, members and assignments (Stable with members, else Empty), each
        member with a fresh session timeout. A group never stored stays absent (Dead)."""
        if self.observer is not None:
            self._notify("on_request", "load", group_id, {})
        try:
            self._loading.discard(group_id)
            self._not_coordinator.discard(group_id)
            if group_id in self._groups:
                # Already hosted: Kafka keeps the cached group rather than the log's copy.
                return
            record = self.store.load_group(group_id)
            if record is None:
                return
            group = self._group_from_record(record)
            self._groups[group_id] = group
            self._on_loaded(group)
        except Exception:
            self._record_internal_error("on_group_loaded")

    def on_group_load_begin(self, group_id: str) -> None:
        """The group's offsets partition starts loading here (GroupMetadataManager's
        loadingPartitions, scheduleLoadGroupAndOffsets): until `on_group_loaded`, requests for the
        group are answered COORDINATOR_LOAD_IN_PROGRESS (validateGroupStatus), a Heartbeat NONE
        and a SyncGroup REBALANCE_IN_PROGRESS."""
        if self.observer is not None:
            self._notify("on_request", "load_begin", group_id, {})
        self._loading.add(group_id)

    def is_loading(self, group_id: str) -> bool:
        return group_id in self._loading

    def _group_from_record(self, record: StoredGroup) -> GroupMetadata:
        protocol_type = record.protocol_type or ""
        members = [
            self.member_metadata_class(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                protocol_type,
                [(record.protocol_name, m.subscription)] if record.protocol_name is not None else [],
                m.assignment,
            )
            for m in record.members
        ]
        state = Stable if members else Empty
        return self.group_metadata_class.load(
            record.group_id,
            state,
            record.generation_id,
            record.protocol_type,
            record.protocol_name,
            record.leader_id,
            members,
            self._on_transition,
        )

    def _on_loaded(self, group: GroupMetadata) -> None:
        if _KAFKA_LOG.isEnabledFor(logging.INFO):
            for member in group.all_member_metadata():
                _KAFKA_GM_LOG.info(
                    "Loaded member %s in group %s with generation %d.",
                    _member_text(member),
                    group.group_id,
                    group.generation_id,
                    extra={"kafka_ms": self.clock.now_ms()},
                )
            self._kafka_info("Loading group metadata for %s with generation %d", group.group_id, group.generation_id)
        max_size = self.config.max_group_size
        if max_size is not None and group.size > max_size:
            # Over capacity (group.max.size was lowered): rebalance so the extra members go.
            self._prepare_rebalance(group, f"Freshly-loaded group is over capacity ({max_size}).")
        for member in group.all_member_metadata():
            self._complete_and_schedule_next_heartbeat_expiration(group, member)

    # ==========================================================================================
    # Plumbing
    # ==========================================================================================
    def _validate_group_status(self, group_id: str, allow_empty_id: bool = False) -> Errors | None:
        """GroupCoordinator.validateGroupStatus: the id, the loading window, ownership.
        `allow_empty_id`: OffsetCommit accepts "" (isValidGroupId, for backwards compatibility)."""
        if not isinstance(group_id, str) or (not group_id and not allow_empty_id):
            return Errors.INVALID_GROUP_ID
        if group_id in self._loading:
            return ERROR_COORDINATOR_LOAD_IN_PROGRESS
        if group_id in self._not_coordinator:
            return Errors.NOT_COORDINATOR
        return None

    def _get_or_maybe_create_group(self, group_id: str, create: bool) -> GroupMetadata | None:
        group = self._groups.get(group_id)
        if group is None and create:
            group = self.group_metadata_class(group_id, Empty, self._on_transition)
            self._groups[group_id] = group
        return group

    def _on_transition(self, group: GroupMetadata, old: GroupState, new: GroupState) -> None:
        if self.observer is not None:
            self._notify("on_transition", group.group_id, old, new)

    @_never_raise()
    def on_delayed_operation_expiring(self, op: Any) -> None:
        """Called by a delayed operation whose timer fired, before the expiry takes effect."""
        group: GroupMetadata | None = op.group
        if group is not None and self._groups.get(group.group_id) is group:
            self._notify("on_timer", op.timer_kind, group.group_id, op.timer_member_id)

    def _kafka_info(self, text: str, *args: Any, level: int = logging.INFO) -> None:
        """One of Kafka 3.9's GroupCoordinator messages (kafka_log.py); callers whose arguments
        cost something check `_KAFKA_LOG.isEnabledFor` first. Nothing is built (not even the
        record's `extra`) when the logger is off, as it is unless someone asked for Kafka's lines."""
        if not _KAFKA_LOG.isEnabledFor(level):
            return
        _KAFKA_LOG.log(
            level, "[GroupCoordinator %d]: " + text, self.broker_id, *args, extra={"kafka_ms": self.clock.now_ms()}
        )

    def _log_store_error(self, group_id: str, generation_id: int, error: Errors) -> None:
        """GroupMetadataManager.storeGroup's callback: the errors it maps to COORDINATOR_NOT_AVAILABLE or
        NOT_COORDINATOR are logged at DEBUG, anything else at ERROR (as UNKNOWN to the client)."""
        ident = "[GroupMetadataManager brokerId=%d] "
        extra = {"kafka_ms": self.clock.now_ms()}
        if error in (Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR):
            _KAFKA_GMM_LOG.debug(
                ident + "Metadata from group %s with generation %d failed when appending to log due to %s",
                self.broker_id,
                group_id,
                generation_id,
                error.name,
                extra=extra,
            )
        else:
            _KAFKA_GMM_LOG.error(
                ident + "Appending metadata message for group %s generation %d failed due to %s, "
                "returning UNKNOWN error code to the client",
                self.broker_id,
                group_id,
                generation_id,
                error.name,
                extra=extra,
            )

    def _notify(self, hook: str, *args: Any) -> None:
        if self.observer is None:
            return
        try:
            getattr(self.observer, hook)(*args)
        except Exception:
            self.observer_errors += 1
            log.exception("observer %s raised", hook)

    def _record_internal_error(self, where: str) -> None:
        text = f"{where}: {traceback.format_exc()}"
        self.internal_errors.append(text)
        log.error("internal error in %s", text)


__all__ = [
    "CoordinatorObserver",
    "GroupConfig",
    "GroupCoordinator",
    "JoinGroupResponseMember",
    "JoinGroupResult",
    "LeaveGroupResult",
    "LeaveMemberIdentity",
    "SyncGroupResult",
    "NO_GENERATION",
    "NO_LEADER",
    "UNKNOWN_MEMBER_ID",
    "Errors",
    "GroupState",
]


def _heartbeat_key(group: GroupMetadata, member: MemberMetadata) -> MemberKey:
    """The MemberKey the member's DelayedHeartbeat is watched under, made once and kept on the
    member (a MemberKey costs ~270 ns, ~7 % of a heartbeat); made again only when a static
    replacement renamed the member (its id is a new string)."""
    key = member.heartbeat_key
    member_id = member.member_id
    group_id = group.group_id
    if key is None or key[2] is not member_id or key[1] is not group_id:
        key = member.heartbeat_key = MemberKey(group_id, member_id)
    return key


def _member_key(group: GroupMetadata, member_id: str) -> MemberKey:
    """The MemberKey of `member_id`: the member's kept key, or a new one for an id without a
    member (Kafka completes the key of every pending-sync id, member or not)."""
    member = group.members.get(member_id)
    return _heartbeat_key(group, member) if member is not None else MemberKey(group.group_id, member_id)


def _member_text(member: MemberMetadata) -> str:
    """MemberMetadata.toString in Kafka 3.9 (the "has left" and "Loaded member" lines carry it)."""
    instance = f"Some({member.group_instance_id})" if member.group_instance_id is not None else "None"
    protocols = ", ".join(name for name, _ in member.protocols)
    return (
        f"MemberMetadata(memberId={member.member_id}, groupInstanceId={instance}, clientId={member.client_id}, "
        f"clientHost={member.client_host}, sessionTimeoutMs={member.session_timeout_ms}, "
        f"rebalanceTimeoutMs={member.rebalance_timeout_ms}, supportedProtocols=List({protocols}))"
    )
