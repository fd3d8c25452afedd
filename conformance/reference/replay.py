"""Scenario files run on Kafka's own coordinator (`kgc replay --reference kafka`).

The same steps and the same checks as kgc.conformance.replay, but every request, tick, store,
unload and load goes to the Kafka reference coordinator (kafka_coordinator.KafkaReference) and the
responses and group views come back from Kafka 3.9.1's GroupCoordinator. One JVM serves every
scenario of a run: `init` gives each scenario a fresh coordinator with its config.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kgc.conformance import refs
from kgc.conformance.reference.kafka_coordinator import KafkaReference
from kgc.conformance.reference.program_steps import Advance, Expire, PreferLeader, answered_members
from kgc.conformance.replay import ReplayResult, StepChecks, run_steps
from kgc.conformance.scenario import (
    REQUEST_TYPES,
    Commit,
    Heartbeat,
    Join,
    Leave,
    Load,
    LoadBegin,
    Scenario,
    Step,
    Store,
    Sync,
    Tick,
    Unload,
)

__all__ = ["ReferenceWorld", "run_scenario_on_kafka"]

#: The response keys a scenario's `expect` can check, per request kind, as the reference reports them.
_JOIN_KEYS = ("error", "generation", "leader", "members", "protocol", "skip_assignment")


@dataclass
class ReferenceWorld(StepChecks):
    """Kafka's coordinator (in the reference JVM) plus what the scenario has seen of it so far."""

    scenario: Scenario
    kafka: KafkaReference
    requests: dict[str, Step] = field(default_factory=dict)
    responses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    now_ms: int = 0  # Kafka's virtual clock after the last command

    def __post_init__(self) -> None:
        cfg = self.scenario.config
        self.kafka.call(
            {
                "op": "init",
                "min_session_timeout_ms": cfg.min_session_timeout_ms,
                "max_session_timeout_ms": cfg.max_session_timeout_ms,
                "initial_rebalance_delay_ms": cfg.initial_rebalance_delay_ms,
                "max_group_size": cfg.max_group_size,
                "store": cfg.store,
            }
        )

    def join_answer(self, request_id: str) -> str | None:
        delivered = self.responses.get(request_id)
        if not delivered:
            return None
        return str(delivered[0].get("member_id") or "")

    def resolve(self, ref: Any, index: int) -> str:
        return refs.resolve(ref, self.join_answer, self.scenario.file, index)

    def _deliver(self, reply: dict[str, Any]) -> None:
        self.now_ms = int(reply.get("now", self.now_ms))
        for event in reply.get("events", []):
            self.responses.setdefault(event["id"], []).append(event)

    def send(self, index: int, step: Step | Advance | Expire | PreferLeader) -> bool | None:
        """Run one step on Kafka's coordinator. A program's Expire (program_steps.py) answers whether
        the named delayed operation was due and ran; every other step None. PreferLeader is kgc's
        side only: Kafka picks by HashMap order."""
        if isinstance(step, PreferLeader):
            return None
        command: dict[str, Any]
        if isinstance(step, REQUEST_TYPES):
            member_id = self.resolve(step.member, index)
            self.requests[step.id] = step
            self.responses[step.id] = []
        if isinstance(step, Join):
            command = {
                "op": "join",
                "id": step.id,
                "group": step.group,
                "member": member_id,
                "instance": step.instance,
                "require_known_member": step.require_known_member,
                "support_skip_assignment": step.supports_skip_assignment,
                "client": step.client,
                "rebalance_timeout_ms": step.rebalance_timeout_ms,
                "session_timeout_ms": step.session_timeout_ms,
                "protocol_type": step.protocol_type,
                "protocols": [list(p) for p in step.protocols],
            }
        elif isinstance(step, Sync):
            command = {
                "op": "sync",
                "id": step.id,
                "group": step.group,
                "member": member_id,
                "generation": step.generation,
                "instance": step.instance,
                "protocol_type": step.protocol_type,
                "protocol": step.protocol,
                "assignment": {self.resolve(k, index): v for k, v in step.assignment},
            }
        elif isinstance(step, Heartbeat):
            command = {"op": "heartbeat", "id": step.id, "group": step.group, "member": member_id}
            command.update(generation=step.generation, instance=step.instance)
        elif isinstance(step, Leave):
            command = {
                "op": "leave",
                "id": step.id,
                "group": step.group,
                "member": member_id,
                "instance": step.instance,
            }
        elif isinstance(step, Commit):
            command = {"op": "commit", "id": step.id, "group": step.group, "member": member_id}
            command.update(generation=step.generation, instance=step.instance, offsets=dict(step.offsets))
        elif isinstance(step, Store):
            command = {"op": "store", "group": step.group, "error": step.error}
        elif isinstance(step, LoadBegin):
            command = {"op": "load_begin", "group": step.group}
        elif isinstance(step, Tick):
            command = {"op": "tick", "ms": step.ms}
        elif isinstance(step, Unload):
            command = {"op": "unload", "group": step.group}
        elif isinstance(step, Load):
            command = {"op": "load", "group": step.group}
        elif isinstance(step, Advance):
            command = {"op": "advance", "ms": step.ms}
        elif isinstance(step, Expire):
            member = None if step.member is None else self.resolve(step.member, index)
            command = {"op": "expire", "operation": step.operation, "group": step.group, "member": member}
            if step.unanswered:
                command["unanswered"] = sorted(answered_members(self))
            reply = self.kafka.call(command)
            self._deliver(reply)
            return bool(reply["expired"])
        else:  # pragma: no cover - the scenario parser admits no other step
            raise TypeError(f"unknown step {step!r}")
        self._deliver(self.kafka.call(command))
        return None

    def response_view(self, request: Step, delivered: Any, keys: Iterable[str] | None = None) -> dict[str, Any]:
        """Every key, whatever `keys` asks: the reply is a dict already."""
        return _response_fields(request, delivered)

    def describe_response(self, delivered: Any) -> str:
        return str(delivered)

    def group_view(self, group_id: str, keys: Iterable[str] | None = None) -> dict[str, Any]:
        """Kafka's view of the group in the contract's terms (a group it does not hold is Dead);
        every key, whatever `keys` asks: the JVM answers the whole state in one call."""
        state: dict[str, Any] = dict(self.kafka.call({"op": "state", "group": group_id})["state"])
        if state["state"] == "Dead":
            state.update(generation=None, members=[], leader=None, member_count=0, pending_count=0)
            state.update(protocol=None, static_members={})
        state["members"] = sorted(state["members"])
        return state


def _response_fields(request: Step, event: dict[str, Any]) -> dict[str, Any]:
    """A reference response in the contract's `expect` keys (the same as replay.response_fields)."""
    fields: dict[str, Any] = {"error": event["error"]}
    if isinstance(request, Join):
        fields.update({k: event.get(k) for k in _JOIN_KEYS})
        fields["members"] = sorted(event.get("members") or [])
        fields["member_id_given"] = bool(event.get("member_id"))
    elif isinstance(request, Sync):
        fields.update(assignment=event.get("assignment"), protocol_type=event.get("protocol_type"))
    return fields


def run_scenario_on_kafka(scenario: Scenario, kafka: KafkaReference) -> ReplayResult:
    """Every step in order on Kafka's coordinator: PASS, or FAIL at the first step that did not
    hold (kgc.conformance.replay's loop and checks, without its check for kgc's own faults; a
    command Kafka's side refused is a failed step, not a bad file)."""
    return run_steps(scenario, ReferenceWorld(scenario, kafka))
