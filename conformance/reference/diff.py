"""Scenario steps run on kgc's coordinator and on Kafka's side by side (`kgc diff --scenarios`).

After every step that is not an expectation, the responses delivered so far and the view of each
group the scenario names are compared between the two coordinators; the first difference is
reported with its step. Normalisations (docs/kafka-reference.md): member ids are compared by
the join request that gave them (`@a1`), since Kafka's are random UUIDs; a leader is compared up
to HashMap order (both sides must name a current member of the group, so a leader Kafka picks by
`members.keys.headOption` of its HashMap is not a difference when kgc picks another member).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgc.conformance.reference.kafka_coordinator import KafkaReference
from kgc.conformance.reference.program_steps import Expire, describe_expiry, send_on_kgc
from kgc.conformance.reference.replay import ReferenceWorld, _response_fields
from kgc.conformance.replay import World, response_fields
from kgc.conformance.scenario import REQUEST_TYPES, Expect, ExpectState, Join, Scenario

__all__ = ["StepDifference", "diff_scenario"]


#: Why a leader difference after the leader left is Kafka's HashMap order, not the protocol.
HASHMAP_LEADER = (
    "new leader by HashMap order: GroupMetadata.remove sets `leaderId = members.keys.headOption` "
    "(core/src/main/scala/kafka/coordinator/group/GroupMetadata.scala), the first key of a "
    "scala.collection.mutable.HashMap of random UUID member ids; kgc picks the oldest member"
)


@dataclass(frozen=True)
class StepDifference:
    """The first step after which kgc's coordinator and Kafka's disagree. `explained`: the
    difference is a documented choice Kafka leaves to HashMap order (HASHMAP_LEADER): the run
    is compared up to it, not beyond, and it is not counted as a difference."""

    step: int
    what: str
    kgc: Any
    kafka: Any
    explained: str | None = None

    def __str__(self) -> str:
        text = f"step {self.step}: {self.what}: kgc {self.kgc!r}, Kafka {self.kafka!r}"
        return text if self.explained is None else f"{text} ({self.explained})"


def _names(answers: dict[str, str]) -> dict[str, str]:
    """member id -> `@request` that was given it."""
    return {member: f"@{rid}" for rid, member in answers.items() if member}


def _normalise(value: Any, names: dict[str, str]) -> Any:
    """Member ids -> `@request`; an id no delivered join response carries yet (a member whose
    JoinGroup waits in the purgatory) -> `?`, since Kafka's and kgc's id texts never match."""
    if isinstance(value, str):
        return names.get(value, "?" if "-" in value and len(value) > 30 else value)
    if isinstance(value, list):
        return sorted(_normalise(v, names) for v in value)
    if isinstance(value, dict):
        return {k: _normalise(v, names) for k, v in value.items()}
    return value


def diff_scenario(scenario: Scenario, kafka: KafkaReference, ours: World | None = None) -> StepDifference | None:
    """None when both coordinators agree after every step; else the first difference. `ours`:
    kgc's side (a World with a seeded-bug coordinator, say); a fresh World by default."""
    ours = ours if ours is not None else World(scenario)
    theirs = ReferenceWorld(scenario, kafka)
    groups = sorted({s.group for s in scenario.steps if hasattr(s, "group") and isinstance(s.group, str)})
    leaders: dict[str, Any] = {}  # group -> the leader both sides agreed on after the last step
    try:
        for index, step in enumerate(scenario.steps):
            if isinstance(step, (Expect, ExpectState)):
                continue
            fired = send_on_kgc(ours, index, step), theirs.send(index, step)
            if isinstance(step, Expire) and fired[0] != fired[1]:
                due = {True: "expired", False: "not due"}
                return StepDifference(index, describe_expiry(step), due[fired[0]], due[fired[1]])
            found = _compare(index, ours, theirs, groups, scenario, leaders)
            if found is not None:
                return found
        return None
    finally:
        ours.close()


def _compare(
    index: int, ours: World, theirs: ReferenceWorld, groups: list[str], scenario: Scenario, leaders: dict[str, Any]
) -> StepDifference | None:
    request_ids = [s.id for s in scenario.steps[: index + 1] if isinstance(s, REQUEST_TYPES)]
    join_ids = [s.id for s in scenario.steps[: index + 1] if isinstance(s, Join)]
    our_names = _names({r: ours.join_answer(r) or "" for r in join_ids})
    their_names = _names({r: theirs.join_answer(r) or "" for r in join_ids})
    # the groups first: a leader chosen by HashMap order stops the comparison before the
    # responses it shapes (the leader's JoinGroup response carries the members) are compared
    for group in groups:
        a = _normalise(ours.group_view(group), our_names)
        b = _normalise(theirs.group_view(group), their_names)
        for key in sorted(set(a) & set(b)):
            if a[key] == b[key]:
                continue
            if key == "leader":
                before = leaders.get(group)
                left = before is not None and before not in a["members"] and before not in b["members"]
                chosen = a[key] in a["members"] and b[key] in b["members"]
                why = HASHMAP_LEADER if left and chosen else None
                return StepDifference(index, f"group {group!r}: leader", a[key], b[key], why)
            return StepDifference(index, f"group {group!r}: {key}", a[key], b[key])
        leaders[group] = a["leader"]
    for rid in request_ids:
        mine, kafkas = ours.responses.get(rid, []), theirs.responses.get(rid, [])
        if len(mine) != len(kafkas):
            return StepDifference(index, f"responses to {rid!r}", len(mine), len(kafkas))
        if mine:
            request = ours.requests[rid]
            a = _normalise(response_fields(request, mine[0]), our_names)
            b = _normalise(_response_fields(request, kafkas[0]), their_names)
            a.pop("members", None) if not a.get("members") and not b.get("members") else None
            keys = sorted(set(a) & set(b))
            for key in keys:
                if a[key] != b[key]:
                    return StepDifference(index, f"response to {rid!r}: {key}", a[key], b[key])
    return None
