"""Member ids between the implementation (strings Kafka hands out) and the spec (1..NumIds by
order of first appearance), and the assignment plans a leader's SyncGroup hands out."""

from __future__ import annotations

from collections.abc import Callable

from kgc.conformance.abstraction.constants import NO_MEMBER, PLAN_PREFIX


class _Registry(dict):  # type: ignore[type-arg]
    """impl id -> spec id; looking up an id never seen registers it (dict's __missing__), so
    that a hit, nearly every lookup, is dict's own C-level subscript with no Python frame."""

    def __init__(self, owner: IdMap) -> None:
        super().__init__({"": NO_MEMBER})
        self.owner = owner

    def __missing__(self, impl_id: str | None) -> int:
        if impl_id is None:
            return NO_MEMBER  # not stored: None stays unregistered
        got = len(self)
        self[impl_id] = got
        owner = self.owner
        owner._impl[got] = impl_id
        owner.seen += 1
        owner._order.append(impl_id)
        return got


class IdMap:
    """Implementation member id <-> spec id (1, 2, ...) by order of first appearance.

    `spec(impl_id)`: the spec id; an id never seen before is registered (gets the next
    number); None is NoMember. It is the registry's bound __getitem__ (conform maps tens of
    member ids a step through it)."""

    def __init__(self) -> None:
        self._spec = _Registry(self)
        self._impl: dict[int, str] = {NO_MEMBER: ""}
        # how many distinct implementation ids were ever registered: an attribute, not a
        # property (conform reads it twice a step)
        self.seen = 0
        self._order: list[str] = []
        self.spec: Callable[[str | None], int] = self._spec.__getitem__
        # the implementation id of a spec id, or None: the dict's own get (mtimeouts and
        # mprotocols look up every spec id when an id is handed out), no Python frame
        self.impl_or_none: Callable[[int], str | None] = self._impl.get

    def peek(self, impl_id: str) -> int | None:
        return self._spec.get(impl_id)

    def impl(self, spec_id: int) -> str:
        return self._impl[spec_id]

    def newest(self, n: int) -> list[str]:
        """The implementation ids of the last `n` registrations still mapped."""
        return self._order[-n:] if n > 0 else []

    def __len__(self) -> int:
        return len(self._spec) - 1

    def __repr__(self) -> str:
        return f"IdMap({ {v: k for k, v in self._spec.items() if v} })"


def encode_plan(member_ids: frozenset[str] | set[str]) -> str:
    """The assignment a leader gives each listed member: the whole plan, so that any member's
    assignment says which members the plan covered."""
    return PLAN_PREFIX + ",".join(sorted(member_ids))


def decode_plan(assignment: str) -> frozenset[str]:
    if not assignment.startswith(PLAN_PREFIX):
        return frozenset()
    body = assignment[len(PLAN_PREFIX) :]
    return frozenset(body.split(",")) if body else frozenset()


# ----------------------------------------------------------------------------------------------
# The driver's world
# ----------------------------------------------------------------------------------------------
