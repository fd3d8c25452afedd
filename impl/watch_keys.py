"""Watch keys of the coordinator's delayed operations (Kafka's GroupJoinKey, GroupSyncKey, MemberKey).

Kept apart from kgc.impl.purgatory (which re-exports them) because they subclass ``tuple``,
which a mypyc-compiled module cannot do, and this module is never compiled.
"""

from __future__ import annotations

from operator import itemgetter

__all__ = ["GroupJoinKey", "GroupSyncKey", "MemberKey"]


# Watch keys. They are hashed on every watch and check, so they are tuples (hashed and compared
# in C) rather than dataclasses (a Python-level __hash__ per dict operation); the leading tag
# keeps keys of different kinds unequal. Immutable, with named fields, like frozen dataclasses.


class GroupJoinKey(tuple):
    """Watch key of a group's DelayedJoin (Kafka's GroupJoinKey)."""

    __slots__ = ()

    def __new__(cls, group_id: str) -> GroupJoinKey:
        return tuple.__new__(cls, ("join", group_id))

    group_id = property(itemgetter(1))

    def __getnewargs__(self) -> tuple[str]:
        return (self[1],)

    def __repr__(self) -> str:
        return f"GroupJoinKey(group_id={self[1]!r})"


class GroupSyncKey(tuple):
    """Watch key of a group's DelayedSync (Kafka's GroupSyncKey)."""

    __slots__ = ()

    def __new__(cls, group_id: str) -> GroupSyncKey:
        return tuple.__new__(cls, ("sync", group_id))

    group_id = property(itemgetter(1))

    def __getnewargs__(self) -> tuple[str]:
        return (self[1],)

    def __repr__(self) -> str:
        return f"GroupSyncKey(group_id={self[1]!r})"


class MemberKey(tuple):
    """Watch key of a member's DelayedHeartbeat (Kafka's MemberKey)."""

    __slots__ = ()

    def __new__(cls, group_id: str, member_id: str) -> MemberKey:
        return tuple.__new__(cls, ("member", group_id, member_id))

    group_id = property(itemgetter(1))
    member_id = property(itemgetter(2))

    def __getnewargs__(self) -> tuple[str, str]:
        return (self[1], self[2])

    def __repr__(self) -> str:
        return f"MemberKey(group_id={self[1]!r}, member_id={self[2]!r})"
