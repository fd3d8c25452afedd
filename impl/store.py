"""Where the coordinator persists group metadata (Kafka: the __consumer_offsets log, written by
GroupMetadataManager.storeGroup and read back by loadGroupsAndOffsets).

A store write completes through a callback carrying a Kafka error, because in Kafka the append
is acknowledged later, after replication; the coordinator must not assume it is immediate.
`InMemoryGroupStore` completes at once by default; `defer=True` holds completions until
`complete_pending()`, and `fail_with` makes writes fail, to exercise those paths.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from kgc.impl.errors import Errors
from kgc.impl.group import GroupMetadata
from kgc.impl.records import fast_init

StoreCallback = Callable[[Errors], None]


@fast_init
@dataclass(frozen=True)
class StoredMember:
    """One member as Kafka's group metadata record keeps it: only the chosen protocol's
    metadata (the subscription) survives, with the member's assignment."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: str
    assignment: str


@fast_init
@dataclass(frozen=True)
class StoredGroup:
    """A group metadata record (GroupMetadataManager.groupMetadataValue)."""

    group_id: str
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str | None
    members: tuple[StoredMember, ...]

    @classmethod
    def of(cls, group: GroupMetadata, assignment: Mapping[str, str]) -> StoredGroup:
        """The record Kafka would append for `group` with `assignment`, taken now."""
        members = tuple(
            StoredMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.session_timeout_ms,
                subscription=(m.metadata(group.protocol_name) if group.protocol_name is not None else ""),
                assignment=assignment.get(m.member_id, ""),
            )
            for m in group.all_member_metadata()
        )
        return cls(
            group.group_id, group.generation_id, group.protocol_type, group.protocol_name, group.leader_id, members
        )


#: GroupMetadataManager.storeGroup's translation of a failed append into the error the
#: coordinator sees ("transform the log append error code to the corresponding the commit
#: status error code"); any other error passes through unchanged (its `case other`).
APPEND_ERROR_TO_COORDINATOR_ERROR: dict[Errors, Errors] = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
    Errors.REQUEST_TIMED_OUT: Errors.REBALANCE_IN_PROGRESS,
    Errors.MESSAGE_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
    Errors.RECORD_LIST_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
    Errors.INVALID_FETCH_SIZE: Errors.UNKNOWN_SERVER_ERROR,
}


def coordinator_error_for_append(append_error: Errors) -> Errors:
    """The error storeGroup hands its callback for an append that returned `append_error`."""
    return APPEND_ERROR_TO_COORDINATOR_ERROR.get(append_error, append_error)


class GroupStore(Protocol):
    """What the coordinator needs from persistence."""

    def store_group(self, record: StoredGroup, callback: StoreCallback) -> None:
        """Append `record`; call `callback` exactly once with NONE or the error, maybe later."""
        ...

    def load_group(self, group_id: str) -> StoredGroup | None:
        """The last successfully stored record of `group_id`, None if it was never stored."""
        ...


class InMemoryGroupStore:
    """A dict of last records. Completes writes at once unless `defer`; fails them with
    `fail_with` when set (a failed write is not recorded)."""

    def __init__(self, defer: bool = False, fail_with: Errors | None = None) -> None:
        self.defer = defer
        self.fail_with = fail_with
        self._records: dict[str, StoredGroup] = {}
        self._pending: list[tuple[StoredGroup, StoreCallback, Errors | None]] = []
        self.writes = 0

    def store_group(self, record: StoredGroup, callback: StoreCallback) -> None:
        self.writes += 1
        outcome = self.fail_with
        if self.defer:
            self._pending.append((record, callback, outcome))
        else:
            self._complete(record, callback, outcome)

    def load_group(self, group_id: str) -> StoredGroup | None:
        return self._records.get(group_id)

    def pending(self) -> int:
        """Writes whose callbacks have not run yet."""
        return len(self._pending)

    def complete_pending(self) -> int:
        """Acknowledge every held write in order; returns how many completed."""
        done = 0
        while self._pending:
            record, callback, outcome = self._pending.pop(0)
            self._complete(record, callback, outcome)
            done += 1
        return done

    def _complete(self, record: StoredGroup, callback: StoreCallback, outcome: Errors | None) -> None:
        if outcome is None or outcome is Errors.NONE:
            self._records[record.group_id] = record
            callback(Errors.NONE)
        else:
            # A failed append is not recorded; the callback sees storeGroup's translation.
            callback(coordinator_error_for_append(outcome))


class DeferredGroupStore:
    """Holds every write of an inner store until it is completed, one at a time and in order
    per group, with the append's result -- Kafka's storeGroup callback runs when the append to
    the offsets topic finishes, and requests, timers and unloads happen in between. A write
    completed with NONE goes to the inner store (which may still fail it, as a real disk
    can); one completed with an error never reaches it, and the callback gets storeGroup's
    translation of the error."""

    def __init__(self, inner: GroupStore) -> None:
        self.inner = inner
        self._pending: list[tuple[StoredGroup, StoreCallback]] = []
        self.writes = 0

    def store_group(self, record: StoredGroup, callback: StoreCallback) -> None:
        self.writes += 1
        self._pending.append((record, callback))

    def load_group(self, group_id: str) -> StoredGroup | None:
        return self.inner.load_group(group_id)

    def pending(self) -> int:
        return len(self._pending)

    def pending_writes(self, group_id: str) -> list[tuple[StoredGroup, StoreCallback]]:
        """The writes of `group_id` not yet completed, oldest first."""
        return [(record, callback) for record, callback in self._pending if record.group_id == group_id]

    def pending_for(self, group_id: str) -> int:
        """Writes of `group_id` not yet completed."""
        return sum(1 for record, _ in self._pending if record.group_id == group_id)

    def complete_next(self, group_id: str, append_error: Errors) -> bool:
        """Complete the oldest held write of `group_id` as if the append returned
        `append_error`; False when there is none."""
        for i, (record, callback) in enumerate(self._pending):
            if record.group_id == group_id:
                del self._pending[i]
                if append_error is Errors.NONE:
                    self.inner.store_group(record, callback)
                else:
                    callback(coordinator_error_for_append(append_error))
                return True
        return False

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()
