"""`kgc serve --record DIR`: the coordinator's run written as what `kgc replay` and `kgc validate`
read. Every group request becomes a scenario step (member ids as references to the join that
first returned them, so the replay's own member ids stand in for the server's), the time between
requests a `tick` (timer expiries happen inside it, as they did in the server: the server's clock
only moves in whole time units, firing every due timer first), and every answer an `expect`
right after the step that produced it. On close, each group's scenario is written to
DIR/scenarios/<group>.json and lifted to spec steps (conformance.recorder.record_scenario) into
DIR/traces/<group>.json, a recorded trace for `kgc validate`.

Why a scenario in between: the replay re-runs the requests on a fresh coordinator and checks
every recorded answer, so a scenario that replays proves the file is the run the clients saw;
the lift then names each step as a spec action.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from kgc.impl.coordinator import GroupConfig, JoinGroupResult, LeaveGroupResult, SyncGroupResult
from kgc.impl.errors import Errors

__all__ = ["Recorder"]

log = logging.getLogger("kgc.serve")


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)[:100] or "_"


class Recorder:
    def __init__(self, out: Path, config: GroupConfig) -> None:
        self.out = out
        self.config = config
        self.steps: list[tuple[str | None, dict[str, Any]]] = []  # (group or None for ticks, step)
        self.refs: dict[str, str] = {}  # member id -> "@<join id>"
        self.kinds: dict[str, tuple[str, str]] = {}  # request id -> (kind, group)
        self.now_ms = 0

    # -- events --------------------------------------------------------------------------------
    def tick(self, to_ms: int) -> None:
        if to_ms > self.now_ms:
            self.steps.append((None, {"do": "tick", "ms": to_ms - self.now_ms}))
            self.now_ms = to_ms

    def _ref(self, member_id: str) -> str:
        return self.refs.get(member_id, member_id)

    def request(self, kind: str, rid: str, group: str, fields: dict[str, Any]) -> None:
        self.kinds[rid] = (kind, group)
        if kind == "leave":
            # the scenario format leaves one member at a time (every client leaves only itself)
            members = fields["members"]
            for n, (member, instance) in enumerate(members):
                step_id = rid if n == 0 else f"{rid}.{n}"
                self.steps.append(
                    (
                        group,
                        {
                            "do": "leave",
                            "id": step_id,
                            "group": group,
                            "member": self._ref(member),
                            "instance": instance,
                        },
                    )
                )
            return
        step: dict[str, Any] = {"do": kind, "id": rid, "group": group}
        for key, value in fields.items():
            if key == "member":
                value = self._ref(value)
            elif key == "assignment":
                value = {self._ref(m): a for m, a in value.items()}
            step[key] = value
        self.steps.append((group, step))

    def response(self, rid: str, kind: str, result: Any) -> None:
        group = self.kinds[rid][1]
        expect: dict[str, Any] = {"expect": rid}
        if isinstance(result, JoinGroupResult):
            expect["error"] = result.error.name
            if result.member_id and result.member_id not in self.refs:
                self.refs[result.member_id] = "@" + rid
            if result.error is Errors.NONE:
                expect["generation"] = result.generation_id
                expect["leader"] = self._ref(result.leader_id)
                expect["members"] = [self._ref(m.member_id) for m in result.members]
        elif isinstance(result, SyncGroupResult):
            expect["error"] = result.error.name
            if result.error is Errors.NONE:
                expect["assignment"] = result.member_assignment
        elif isinstance(result, LeaveGroupResult):
            error = result.error
            if error is Errors.NONE and result.member_responses:
                error = result.member_responses[0][2]
            expect["error"] = error.name
        elif isinstance(result, Errors):
            expect["error"] = result.name
        elif isinstance(result, dict):  # a commit: one error per partition
            errors = {e.name for e in result.values()}
            if len(errors) == 1:
                expect["error"] = errors.pop()
        self.steps.append((group, expect))

    # -- output --------------------------------------------------------------------------------
    def scenario(self, group: str) -> dict[str, Any]:
        steps: list[dict[str, Any]] = []
        for g, s in self.steps:
            if g is not None and g != group:
                continue
            if "tick" == s.get("do") and not steps:
                continue  # before the group's first request time passing is unobservable
            if "tick" == s.get("do") and steps and steps[-1].get("do") == "tick":
                # two ticks in a row are one (every timer due on the way fires either way)
                steps[-1] = {"do": "tick", "ms": steps[-1]["ms"] + s["ms"]}
            else:
                steps.append(s)
        return {
            "format": 2,
            "name": f"kgc-serve-{group}",
            "source": "recorded by kgc serve --record: the requests Kafka clients sent and the answers they got",
            "config": {
                "min_session_timeout_ms": self.config.min_session_timeout_ms,
                "max_session_timeout_ms": self.config.max_session_timeout_ms,
                "initial_rebalance_delay_ms": self.config.initial_rebalance_delay_ms,
                "max_group_size": self.config.max_group_size,
            },
            "steps": steps,
        }

    def groups(self) -> list[str]:
        return sorted({g for g, _ in self.steps if g is not None})

    def write(self) -> list[Path]:
        """Write every group's scenario and recorded trace; returns the trace files."""
        from kgc.conformance.recorded_trace import write_trace
        from kgc.conformance.recorder import record_scenario
        from kgc.conformance.scenario import load_scenario

        (self.out / "scenarios").mkdir(parents=True, exist_ok=True)
        (self.out / "traces").mkdir(parents=True, exist_ok=True)
        written = []
        for group in self.groups():
            scenario_file = self.out / "scenarios" / f"{_slug(group)}.json"
            scenario = self.scenario(group)
            steps = ",\n  ".join(json.dumps(s) for s in scenario.pop("steps"))
            head = json.dumps(scenario)[:-1]
            scenario_file.write_text(f'{head}, "steps": [\n  {steps}\n]}}\n')
            trace = record_scenario(load_scenario(scenario_file))
            trace_file = self.out / "traces" / f"{_slug(group)}.json"
            write_trace(trace_file, trace)
            written.append(trace_file)
            note = f"; stopped: {trace.stopped}" if trace.stopped else ""
            log.info("recorded group %s: %s (%d spec states)%s", group, trace_file, len(trace.states), note)
        return written
