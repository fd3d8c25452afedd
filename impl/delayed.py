"""The coordinator's delayed operations (DelayedJoin.scala, DelayedHeartbeat.scala,
DelayedSync.scala, Kafka 3.7-3.9) and the keys they are watched under.

The operations' tryComplete predicates (GroupCoordinator.tryCompleteJoin, tryCompleteHeartbeat,
tryCompletePendingSync) are methods here rather than coordinator methods the operation calls:
they run on every request that checks a key (three per heartbeat), and compiled (kgc.impl.native)
they are no Python frames of their own. Like the coordinator's entry points they never raise: an
error is recorded (GroupCoordinator.internal_errors) and the operation stays pending. onComplete
and onExpiration call back into the coordinator, where the protocol's changes are made. Each
operation holds the GroupMetadata object it was created for, not the group id: after an unload
and a load the old operations act on the old (Dead) object and do nothing, as in Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgc.impl.group import Dead, Empty, PreparingRebalance

# The watch keys live beside the purgatory; re-exported here, where the operations are.
from kgc.impl.purgatory import DelayedOperation, GroupJoinKey, GroupSyncKey, MemberKey

__all__ = [
    "DelayedHeartbeat",
    "DelayedJoin",
    "DelayedSync",
    "GroupJoinKey",
    "GroupSyncKey",
    "InitialDelayedJoin",
    "MemberKey",
]

if TYPE_CHECKING:
    from kgc.impl.coordinator import GroupCoordinator
    from kgc.impl.group import GroupMetadata

# The states in which a DelayedSync has nothing left to wait for.
_SYNC_OVER = (Dead, Empty, PreparingRebalance)


def _non_negative(delay_ms: int) -> int:
    # Kafka's timer runs a task whose deadline has passed at once; a zero delay is the same here
    # and keeps a client's negative rebalance timeout from reaching the timer.
    return max(0, int(delay_ms))


class _CoordinatorOperation(DelayedOperation):
    """Reports its own expiry to the coordinator before the expiry takes effect."""

    # Slots, not a __dict__: an operation is made per request. Compiled (kgc.impl.native) these
    # are native attributes anyway; the slots keep the pure fallback (KGC_PURE=1, mutants) lean.
    __slots__ = ("coordinator", "group")

    def __init__(self, coordinator: GroupCoordinator, group: GroupMetadata, delay_ms: int) -> None:
        DelayedOperation.__init__(
            self, delay_ms if delay_ms.__class__ is int and delay_ms >= 0 else _non_negative(delay_ms)
        )
        self.coordinator = coordinator
        self.group = group

    # timer_kind is a property in every class, not a class attribute: DelayedHeartbeat's depends
    # on the instance, and a compiled (mypyc) class cannot override an attribute with a property.
    @property
    def timer_kind(self) -> str:
        return "delayed"

    @property
    def timer_member_id(self) -> str | None:
        return None

    def run(self) -> None:
        if not self.is_completed():
            self.coordinator.on_delayed_operation_expiring(self)
        super().run()


class DelayedJoin(_CoordinatorOperation):
    """Completes when every known member has rejoined, or at the rebalance timeout."""

    __slots__ = ()

    @property
    def timer_kind(self) -> str:
        return "join"

    def try_complete(self) -> bool:
        """GroupCoordinator.tryCompleteJoin: done once every member has rejoined and no id is
        pending."""
        try:
            return self.force_complete() if self.group.has_all_members_joined else False
        except Exception:
            self.coordinator._record_internal_error("try_complete_join")
            return False

    def on_complete(self) -> None:
        self.coordinator.on_complete_join(self.group)

    def on_expiration(self) -> None:
        self.coordinator.on_expire_join(self.group)


class InitialDelayedJoin(DelayedJoin):
    """The first rebalance of an Empty group: waits `delay_ms`, again while members keep
    arriving, never longer in total than the rebalance timeout (`remaining_ms`)."""

    __slots__ = ("configured_rebalance_delay_ms", "remaining_ms")

    @property
    def timer_kind(self) -> str:
        return "initial_join"

    def __init__(
        self,
        coordinator: GroupCoordinator,
        group: GroupMetadata,
        configured_rebalance_delay_ms: int,
        delay_ms: int,
        remaining_ms: int,
    ) -> None:
        super().__init__(coordinator, group, delay_ms)
        self.configured_rebalance_delay_ms = configured_rebalance_delay_ms
        self.remaining_ms = remaining_ms

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        self.coordinator.on_complete_initial_join(self)


class DelayedHeartbeat(_CoordinatorOperation):
    """A member's session timeout (or a pending member's, or a new member's join timeout)."""

    __slots__ = ("member_id", "is_pending")

    def __init__(
        self, coordinator: GroupCoordinator, group: GroupMetadata, member_id: str, is_pending: bool, timeout_ms: int
    ) -> None:
        # _CoordinatorOperation.__init__ inlined: one is made per heartbeat
        DelayedOperation.__init__(
            self, timeout_ms if timeout_ms.__class__ is int and timeout_ms >= 0 else _non_negative(timeout_ms)
        )
        self.coordinator = coordinator
        self.group = group
        self.member_id = member_id
        self.is_pending = is_pending

    @property
    def timer_kind(self) -> str:
        return "pending_member" if self.is_pending else "heartbeat"

    @property
    def timer_member_id(self) -> str | None:
        return self.member_id

    def try_complete(self) -> bool:
        """GroupCoordinator.tryCompleteHeartbeat. Three run per heartbeat (one on the old
        operation, two in tryCompleteElseWatch)."""
        group = self.group
        try:
            if group.is_(Dead):
                return self.force_complete()
            if self.is_pending:
                # a pending member's expiration is over once it has joined
                return self.force_complete() if group.has(self.member_id) else False
            member = group.members.get(self.member_id)
            if member is None or member.has_satisfied_heartbeat:
                return self.force_complete()
            return False
        except Exception:
            self.coordinator._record_internal_error("try_complete_heartbeat")
            return False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.coordinator.on_expire_heartbeat(self.group, self.member_id, self.is_pending)


class DelayedSync(_CoordinatorOperation):
    """After a join completes: members that have not sent SyncGroup within the rebalance
    timeout are removed and a new rebalance starts (added in Kafka 3.x)."""

    __slots__ = ("generation_id",)

    @property
    def timer_kind(self) -> str:
        return "sync"

    def __init__(
        self, coordinator: GroupCoordinator, group: GroupMetadata, generation_id: int, rebalance_timeout_ms: int
    ) -> None:
        super().__init__(coordinator, group, rebalance_timeout_ms)
        self.generation_id = generation_id

    def try_complete(self) -> bool:
        """GroupCoordinator.tryCompletePendingSync: done when every member synced or the
        generation moved on."""
        group = self.group
        try:
            if self.generation_id != group.generation_id:
                return self.force_complete()
            if group.state in _SYNC_OVER:
                return self.force_complete()
            if group.has_received_sync_from_all_members:
                return self.force_complete()
            return False
        except Exception:
            self.coordinator._record_internal_error("try_complete_pending_sync")
            return False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.coordinator.on_expire_pending_sync(self.group, self.generation_id)
