"""Spec traces checked against Kafka's own coordinator (`kgc conform --reference kafka`).

The conform abstraction needs the coordinator's internals (timers, purgatories, ids), which the
reference JVM does not expose; what it reports is the group's view. So a trace is checked on the
part of the spec's state that view carries: after every spec step, the group's state, generation,
members and leader in Kafka's coordinator must be the spec's. The requests are the ones kgc's
coordinator was sent following the trace (programs.marked_trace_program, steered to the spec's
choices), replayed on Kafka's; spec member ids are matched to Kafka's through the join that gave
each id. Where Kafka leaves the new leader to HashMap order and picks another remaining member
than the spec did, the trace is EXPLAINED and checked up to that step (docs/kafka-reference.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgc.conformance.abstraction import GROUP_ID
from kgc.conformance.reference.diff import HASHMAP_LEADER
from kgc.conformance.reference.kafka_coordinator import KafkaReference
from kgc.conformance.reference.program_steps import describe_expiry
from kgc.conformance.reference.programs import SpecMark, marked_trace_program
from kgc.conformance.reference.replay import ReferenceWorld

__all__ = ["KafkaConformOutcome", "conform_trace_on_kafka"]


@dataclass
class KafkaConformOutcome:
    file: str
    steps: int = 0  # spec steps checked
    total: int = 0
    verdict: str = "CONFORMS"  # CONFORMS | EXPLAINED | DIVERGED
    detail: str = ""


def conform_trace_on_kafka(path: Path, kafka: KafkaReference) -> KafkaConformOutcome:
    """Raises what programs.marked_trace_program raises for a trace it cannot use."""
    made = marked_trace_program(path)
    outcome = KafkaConformOutcome(str(path), total=len(made.marks))
    theirs = ReferenceWorld(made.scenario, kafka)
    sent = 0
    previous_leader = 0
    for mark in made.marks:
        while sent < mark.length:
            step = made.scenario.steps[sent]
            if theirs.send(sent, step) is False:
                where = f"spec step {mark.step} {mark.state['lastAction']['name']}"
                outcome.verdict = "DIVERGED"
                outcome.detail = f"{where}: {describe_expiry(step)} is not due on Kafka at {theirs.now_ms} ms"
                return outcome
            sent += 1
        named = made.named[mark.length - 1] if mark.length else {}
        found = _check(mark, named, theirs, previous_leader)
        previous_leader = mark.state["leader"]
        if found is not None:
            outcome.verdict, outcome.detail = found
            return outcome
        outcome.steps += 1
    return outcome


def _check(mark: SpecMark, named: Any, theirs: ReferenceWorld, previous_leader: int) -> tuple[str, str] | None:
    """The spec's state after `mark` against Kafka's group view: None, or (verdict, what)."""
    spec = mark.state
    if not spec.get("loaded", True):
        return None  # the spec keeps the unloaded group's variables; Kafka holds no group
    view = theirs.group_view(GROUP_ID)
    kafka_names = {theirs.join_answer(ref.request_id): str(ref) for ref in named.values()}

    def spec_name(spec_id: int) -> str:
        kgc_id = mark.kgc_ids.get(spec_id)
        ref = named.get(kgc_id) if kgc_id is not None else None
        return str(ref) if ref is not None else "?"

    def kafka_name(member_id: str | None) -> str | None:
        return None if member_id is None else kafka_names.get(member_id, "?")

    where = f"spec step {mark.step} {spec['lastAction']['name']}"
    want_state = str(spec["gstate"])
    if view["state"] != want_state:
        return "DIVERGED", f"{where}: group state: spec {want_state}, Kafka {view['state']}"
    if want_state == "Dead":
        return None
    if view["generation"] != spec["generation"]:
        return "DIVERGED", f"{where}: generation: spec {spec['generation']}, Kafka {view['generation']}"
    want_members = sorted(spec_name(m) for m in spec["members"])
    seen_members = sorted(kafka_name(m) or "?" for m in view["members"])
    if want_members != seen_members:
        return "DIVERGED", f"{where}: members: spec {want_members}, Kafka {seen_members}"
    want_leader = spec_name(spec["leader"]) if spec["leader"] else None
    seen_leader = kafka_name(view["leader"])
    if want_leader != seen_leader and "?" not in (want_leader, seen_leader):
        left = previous_leader != 0 and previous_leader not in spec["members"]
        if left and want_leader is not None and seen_leader is not None:
            return "EXPLAINED", f"{where}: leader: spec {want_leader}, Kafka {seen_leader} ({HASHMAP_LEADER})"
        return "DIVERGED", f"{where}: leader: spec {want_leader}, Kafka {seen_leader}"
    return None
