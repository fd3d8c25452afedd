"""Scenario files run on Kafka's own coordinator (`kgc replay --reference kafka`).

The same steps and the same checks as kgc.conformance.replay, but every request, tick, store,
unload and load goes to the Kafka reference coordinator (kafka_coordinator.KafkaReference) and the
responses and group views come back from Kafka 3.9.1's GroupCoordinator. One JVM serves every
scenario of a run: `init` gives each scenario a fresh coordinator with its config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgc.conformance import refs
from kgc.conformance.reference.kafka_coordinator import KafkaReference
from kgc.conformance.replay import ReplayResult, StepFailure, _compare, _show, _step_kind, _StepFailed
from kgc.conformance.scenario import (
    REQUEST_TYPES,
    Commit,
    Expect,
    ExpectState,
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
class ReferenceWorld:
    """Kafka's coordinator (in the reference JVM) plus what the scenario has seen of it so far."""

    scenario: Scenario
    kafka: KafkaReference
    requests: dict[str, Step] = field(default_factory=dict)
    responses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

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
        for event in reply.get("events", []):
            self.responses.setdefault(event["id"], []).append(event)

    def send(self, index: int, step: Step) -> None:
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
        else:  # pragma: no cover - the scenario parser admits no other step
            raise TypeError(f"unknown step {step!r}")
        self._deliver(self.kafka.call(command))

    def check_response(self, index: int, step: Expect) -> None:
        request = self.requests[step.request_id]
        delivered = self.responses[step.request_id]
        checks = step.checks
        what = f"response to {step.request_id!r}"
        if len(delivered) > 1:
            raise _StepFailed(f"one {what}", f"{len(delivered)} responses: {delivered}")
        if "pending" in checks:
            if checks["pending"] and delivered:
                raise _StepFailed(f"{what} pending", f"delivered: {delivered[0]}")
            if not checks["pending"] and not delivered:
                raise _StepFailed(f"{what} delivered", "no response yet")
        rest = {k: v for k, v in checks.items() if k != "pending"}
        if not rest:
            return
        if not delivered:
            wanted = ", ".join(f"{k}={_show(v)}" for k, v in rest.items())
            raise _StepFailed(f"{what} with {wanted}", "no response yet")
        seen = _response_fields(request, delivered[0])
        expected: dict[str, Any] = {}
        for key, want in rest.items():
            if key == "leader":
                want = self.resolve(want, index)
            elif key == "members":
                want = sorted(self.resolve(m, index) for m in want)
            expected[key] = want
        _compare(what, expected, seen, None)

    def check_state(self, index: int, step: ExpectState) -> None:
        seen = self.group_view(step.group)
        expected: dict[str, Any] = {}
        for key, want in step.checks.items():
            if key == "leader":
                want = refs.resolve_optional(want, self.join_answer, self.scenario.file, index)
            elif key == "members":
                want = sorted(set(self.resolve(m, index) for m in want))
            elif key == "static_members":
                want = {instance: self.resolve(m, index) for instance, m in want}
            expected[key] = want
        _compare(f"group {step.group!r}", expected, seen, None)

    def group_view(self, group_id: str) -> dict[str, Any]:
        """Kafka's view of the group in the contract's terms (a group it does not hold is Dead)."""
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
    hold (the same loop as kgc.conformance.replay's, without its check for kgc's own faults)."""
    world = ReferenceWorld(scenario, kafka)
    for index, step in enumerate(scenario.steps):
        try:
            if isinstance(step, Expect):
                world.check_response(index, step)
            elif isinstance(step, ExpectState):
                world.check_state(index, step)
            else:
                world.send(index, step)
        except _StepFailed as f:
            return ReplayResult(scenario.name, scenario.file, StepFailure(index, f.expected, f.seen))
        except refs.ScenarioError:
            raise
        except Exception as e:  # Kafka's side refused the command: a failed step, not a bad file
            seen = f"{type(e).__name__}: {e}"
            return ReplayResult(scenario.name, scenario.file, StepFailure(index, f"{_step_kind(step)} handled", seen))
    return ReplayResult(scenario.name, scenario.file)
