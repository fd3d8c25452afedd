"""Member references at run time: `@a1` -> the member id the response to join `a1` carried.

scenario.check_references has already made sure that every `@ref` names a join sent in an
earlier step; what only a run can tell is whether that join has been answered by the time the
reference is used (a JoinGroup may wait in the join purgatory). Using an unanswered join is a
mistake in the scenario, not in the coordinator, so it is a ScenarioError (exit 2), not a FAIL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kgc.conformance.scenario import MemberRef, Ref, ScenarioError

#: request id -> the member id its join response carried, or None while it has not arrived
JoinAnswers = Callable[[str], "str | None"]


def resolve(ref: MemberRef, answered: JoinAnswers, file: str, step: int) -> str:
    """A literal member id stays as written; `@id` becomes the member id join `id` was given
    (the empty string if its response carried none)."""
    if not isinstance(ref, Ref):
        return ref
    member_id = answered(ref.request_id)
    if member_id is None:
        raise unanswered(ref, file, step)
    return member_id


def unanswered(ref: Ref, file: str, step: int) -> ScenarioError:
    """The scenario's error for `ref` used before its join was answered (shared with runners
    that read the answers themselves)."""
    return ScenarioError(
        file, step, f"member reference {ref}: join {ref.request_id!r} has no response yet when it is used"
    )


def resolve_all(refs: Iterable[MemberRef], answered: JoinAnswers, file: str, step: int) -> list[str]:
    return [resolve(r, answered, file, step) for r in refs]


def resolve_optional(ref: Any, answered: JoinAnswers, file: str, step: int) -> str | None:
    """For `leader: null` in an expect_state: null stays None."""
    return None if ref is None else resolve(ref, answered, file, step)
