"""The shortest trace of a divergence signature as a scenario file (docs/scenario-format.md,
format 2), so `kgc replay --bug B FILE` shows the bug as a failing expectation and plain
`kgc replay FILE` (the unmodified coordinator) passes.

How: the spec trace is driven, up to and including its diverging step, through the UNMODIFIED
coordinator (the spec-action world conform uses), and every request the coordinator receives is
written down as a scenario step, with a `tick` for the time between requests (timers due on the
way fire inside the tick, as they did in the spec step). Member ids are written as references to
the join that first returned them, so the replay's own ids stand in. The expectations come from
replaying those requests on the unmodified coordinator (stateful.scenario_from_log): on a trace
the unmodified coordinator conforms to, they are the spec's answers and group states. Then the
file is replayed against the buggy coordinator to say at which scenario step it fails.

Why not expectations read off the spec state directly: the spec's variables are abstract
(member names, timers as records); the scenario checks what a client and an operator see
(responses, group state, generation, leader, members), which the reference run gives in the
scenario's own terms. Models with asynchronous store writes (StoreAsync) are left out: their
`store` completions are spec steps with no coordinator request to observe.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgc.conformance.abstraction import GROUP_ID, SpecConstants

__all__ = ["SignatureScenario", "scenario_for_trace", "write_signature_scenario"]


@dataclass
class SignatureScenario:
    """A scenario written for a signature, or why none was (`reason`)."""

    document: dict[str, Any] | None
    reason: str = ""
    #: scenario step index at which each spec step's requests begin (spec step -> index)
    spec_steps: dict[int, int] | None = None


class _RequestLog:
    """Coordinator listener: every request as a scenario step, ticks between them."""

    def __init__(self, clock: Any) -> None:
        self.clock = clock
        self.steps: list[dict[str, Any]] = []
        self.refs: dict[str, str] = {}  # member id -> "@<join id>"
        self.join_client: dict[str, str] = {}  # join id -> client id
        self.waiting: list[str] = []  # joins by an unknown member not yet answered with an id
        self.now_ms = 0
        self.count = 0
        self.unsupported: str | None = None

    def advance(self) -> None:
        now = int(self.clock.now_ms())
        if now > self.now_ms:
            self.steps.append({"do": "tick", "ms": now - self.now_ms})
            self.now_ms = now

    def _ref(self, member_id: str | None) -> str:
        return self.refs.get(member_id or "", member_id or "")

    def _id(self, kind: str) -> str:
        self.count += 1
        return f"{kind}{self.count}"

    def on_request(self, kind: str, group_id: str, args: dict[str, Any]) -> None:
        if group_id != GROUP_ID:
            self.unsupported = f"a request for group {group_id!r}"
            return
        self.advance()
        g = GROUP_ID
        if kind == "join":
            rid = self._id("join")
            step: dict[str, Any] = {
                "do": "join",
                "id": rid,
                "group": g,
                "member": self._ref(args["member_id"]),
                "client": args["client_id"],
                "instance": args["group_instance_id"],
                "session_timeout_ms": args["session_timeout_ms"],
                "rebalance_timeout_ms": args["rebalance_timeout_ms"],
                "protocol_type": args["protocol_type"],
                "protocols": [[n, m.decode() if isinstance(m, bytes) else m] for n, m in args["protocols"]],
                "require_known_member": args["require_known_member"],
            }
            self.join_client[rid] = args["client_id"]
            if not args["member_id"]:
                self.waiting.append(rid)
        elif kind == "sync":
            step = {
                "do": "sync",
                "id": self._id("sync"),
                "group": g,
                "member": self._ref(args["member_id"]),
                "generation": args["generation"],
                "assignment": {self._ref(m): str(a) for m, a in args["group_assignment"].items()},
                "instance": args["group_instance_id"],
                "protocol_type": args["protocol_type"],
                "protocol": args["protocol_name"],
            }
        elif kind == "heartbeat":
            step = {
                "do": "heartbeat",
                "id": self._id("heartbeat"),
                "group": g,
                "member": self._ref(args["member_id"]),
                "generation": args["generation_id"],
                "instance": args["group_instance_id"],
            }
        elif kind == "leave":
            for m in args["leaving_members"]:
                self.steps.append(
                    {
                        "do": "leave",
                        "id": self._id("leave"),
                        "group": g,
                        "member": self._ref(m.member_id),
                        "instance": m.group_instance_id,
                    }
                )
            return
        elif kind == "commit":
            step = {
                "do": "commit",
                "id": self._id("commit"),
                "group": g,
                "member": self._ref(args["member_id"]),
                "generation": args["generation_id"],
                "instance": args["group_instance_id"],
                "offsets": {str(p): int(getattr(o, "offset", o)) for p, o in args["offsets"].items()},
            }
        elif kind in ("unload", "load", "load_begin"):
            step = {"do": kind, "group": g}
        else:
            self.unsupported = f"a {kind} request"
            return
        self.steps.append(step)

    def on_response(self, kind: str, group_id: str, result: object) -> None:
        """A join's answer carrying a new member id: Kafka's ids are `<client id>-<uuid>`, so
        the join it answers is the latest one of that client still waiting for an id."""
        member_id = getattr(result, "member_id", None)
        if kind != "join" or not member_id or member_id in self.refs:
            return
        for rid in reversed(self.waiting):
            client = self.join_client[rid]
            if member_id.startswith(client + "-"):
                self.refs[member_id] = "@" + rid
                self.waiting.remove(rid)
                return


def scenario_for_trace(
    states: list[dict[str, Any]], constants: SpecConstants, upto: int, name: str, note: str = ""
) -> SignatureScenario:
    """The requests of spec steps 1..`upto` of `states` as a scenario with the unmodified
    coordinator's answers as expectations."""
    from kgc.conformance.abstraction.actions import apply_spec_step
    from kgc.conformance.abstraction.world import World
    from kgc.conformance.scenario import loads_scenario
    from kgc.conformance.stateful import scenario_from_log
    from kgc.impl.coordinator import GroupCoordinator

    if constants.store_async:
        return SignatureScenario(None, "asynchronous store writes (StoreAsync) have no scenario form here")
    log = _RequestLog(None)
    world = World(constants, GroupCoordinator, observers=(log,))
    log.clock = world.clock
    spec_steps: dict[int, int] = {}
    last = min(upto, len(states) - 1)
    try:
        for n in range(1, last + 1):
            spec_steps[n] = len(log.steps)
            apply_spec_step(world, states[n - 1], states[n])
            log.advance()
            if log.unsupported:
                return SignatureScenario(None, f"spec step {n} sends {log.unsupported}")
    except Exception as e:  # noqa: BLE001 - the reference could not follow: say so, write nothing
        return SignatureScenario(None, f"the unmodified coordinator could not follow spec step {n}: {e}")
    if not log.steps:
        return SignatureScenario(None, "the trace sends no request")
    while log.steps and log.steps[0].get("do") == "tick":
        log.steps.pop(0)  # time before the first request is unobservable
        spec_steps = {k: max(0, v - 1) for k, v in spec_steps.items()}
    try:
        document = scenario_from_log(log.steps, constants, note, reference=GroupCoordinator)
    except Exception as e:  # noqa: BLE001
        return SignatureScenario(None, f"the requests do not replay on the unmodified coordinator: {e}")
    document["format"] = 2
    document["name"] = name
    # expectation steps were inserted after each request: map spec steps onto the final indexes
    index_of_request = _request_indexes(document["steps"])
    document["source"] = f"{note}; spec step -> first scenario step: " + ", ".join(
        f"{n}->{index_of_request.get(i, i)}" for n, i in sorted(spec_steps.items())
    )
    final = {n: index_of_request.get(i, len(document["steps"])) for n, i in spec_steps.items()}
    loads_scenario(json.dumps(document), name)  # a file replay reads, or an error here
    return SignatureScenario(document, spec_steps=final)


def _request_indexes(steps: list[dict[str, Any]]) -> dict[int, int]:
    """n-th request step of the log -> its index among all scenario steps."""
    out: dict[int, int] = {}
    n = 0
    for i, s in enumerate(steps):
        if "do" in s:
            out[n] = i
            n += 1
    return out


def write_signature_scenario(itf: Path, file: Path, bug: str | None, note: str = "") -> dict[str, Any]:
    """Write the scenario for the ITF trace `itf` (cut at its diverging step) to `file`; replay it against
    the seeded bug `bug` (if any). Returns the signature table's fields: scenario (file name or
    None), scenario_note (why none), scenario_fails_at (the failing scenario step under the bug,
    None when it passes), scenario_spec_step (the spec step that step belongs to)."""
    from kgc.conformance.mbt import load_trace
    from kgc.conformance.replay import run_scenario
    from kgc.conformance.scenario import loads_scenario
    from kgc.conformance.seeded_bugs import coordinator_class

    out: dict[str, Any] = {"scenario": None, "scenario_note": "", "scenario_fails_at": None, "scenario_spec_step": None}
    try:
        constants, states, _ = load_trace(itf)
    except Exception as e:  # noqa: BLE001
        out["scenario_note"] = f"trace not readable: {e}"
        return out
    made = scenario_for_trace(states, constants, len(states) - 1, file.name.split(".")[0], note)
    if made.document is None:
        out["scenario_note"] = made.reason
        return out
    file.write_text(json.dumps(made.document, indent=1) + "\n", encoding="utf-8")
    out["scenario"] = file.name
    if bug:
        result = run_scenario(
            loads_scenario(file.read_text(encoding="utf-8"), str(file)), coordinator_class=coordinator_class(bug)
        )
        if result.failure is not None:
            at = result.failure.step
            out["scenario_fails_at"] = at
            starts = made.spec_steps or {}
            out["scenario_spec_step"] = max((n for n, i in starts.items() if i <= at), default=None)
        else:
            out["scenario_note"] = "passes under the bug: the divergence is in a variable no expectation checks"
    return out
