"""The page model behind `kgc show`: a trace turned into lifelines, arrows and steps.

A person handed a 30-step counterexample wants to see who sent what to the coordinator, what
it answered, when timers fired and which step broke the property. Every input kgc has (a TLC
counterexample or simulated trace in ITF, a recorded implementation run, a scenario file, a
counterexample replayed on the implementation) is a sequence of spec states whose `lastAction`
names the step, so one builder reads them all:

- a client's request action (JoinGroup*, SyncGroup*, Heartbeat, LeaveGroup) is an arrow from
  its client's lifeline to the coordinator, and, unless `lastAction.resp` says PARKED, a
  response arrow back labelled with the error code and what the client learnt;
- a parked request answered later (the client leaves JoinWait or SyncWait in a step that is
  not its own) is a response arrow in that step;
- a timer step is a mark on the coordinator's lifeline naming the timer that fired (the
  previous state's head timer); AdvanceTime, unload and load are coordinator notes too;
- ClientCrash, ClientRestart, ClientAbandon, ClientRejoin, NoIdLeft are notes on the client.

The model is plain JSON-ready data (dicts, lists, strings), every value already TLA+ text, so
the HTML template only draws; tests/tools/test_trace_page.py checks it without a browser.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from kgc.spec.values import ModelValue, TlaValue, format_value
from kgc.tools.trace_view import state_changes

__all__ = [
    "COORDINATOR",
    "Side",
    "build_side",
    "page_from_cex_replay",
    "page_from_cex_report",
    "page_from_file",
    "page_from_itf",
    "page_from_recorded",
    "page_from_recorded_trace",
    "page_from_scenario",
    "render_html",
    "write_page",
]

COORDINATOR = "coordinator"
NO_MEMBER, NO_GEN = 0, -1
WAIT_PHASES = {"JoinWait": "JoinGroup", "SyncWait": "SyncGroup"}

REQUESTS = {
    "JoinGroupUnknownMember": "JoinGroup",
    "JoinGroupPendingMember": "JoinGroup",
    "JoinGroupKnownMember": "JoinGroup",
    "SyncGroupLeader": "SyncGroup",
    "SyncGroupFollower": "SyncGroup",
    "SyncGroupInconsistentProtocol": "SyncGroup",  # v5, with a protocol type or name not the group's
    "Heartbeat": "Heartbeat",
    "LeaveGroup": "LeaveGroup",
    "LeaveGroupByInstanceId": "LeaveGroup",  # an admin's, drawn on the instance's client
    "HandleCommitOffsets": "OffsetCommit",
}
TIMERS = {
    "SessionTimeoutExpiry",
    "NewMemberJoinTimeout",
    "PendingMemberExpiry",
    "RebalanceTimeout",
    "InitialDelayedJoin",
    "DelayedSyncExpiry",
    "StaleTimerExpiry",
}
CLIENT_EVENTS = {"ClientRestart", "ClientCrash", "ClientAbandon", "ClientRejoin", "NoIdLeft"}
# Kafka's delayed operation behind each spec timer kind
TIMER_OPERATIONS = {
    "Heartbeat": "DelayedHeartbeat",
    "Pending": "DelayedHeartbeat(pending)",
    "Join": "DelayedJoin",
    "InitialJoin": "InitialDelayedJoin",
    "Sync": "DelayedSync",
}


def _text(value: TlaValue) -> str:
    return format_value(value)


def _member(value: TlaValue) -> str:
    """Member ids are numbers in the spec; NoMember (0) is Kafka's empty id."""
    return '""' if value == NO_MEMBER else _text(value)


def _clients(states: Sequence[Mapping[str, TlaValue]]) -> list[str]:
    """The clients, from the domain of a client variable (cphase), in the order given."""
    for state in states:
        phases = state.get("cphase")
        if isinstance(phases, Mapping):
            return [str(c) for c in phases]
    seen: list[str] = []
    for state in states:
        la = state.get("lastAction")
        client = la.get("client") if isinstance(la, Mapping) else None
        if isinstance(client, ModelValue) and client.name != "NoClient" and client.name not in seen:
            seen.append(client.name)
    return seen


def _get(state: Mapping[str, TlaValue], var: str, client: str) -> TlaValue:
    values = state.get(var)
    if not isinstance(values, Mapping):
        return None
    for key, value in values.items():
        if str(key) == client:
            return value
    return None


def _request_label(la: Mapping[str, TlaValue]) -> str:
    name = str(la.get("name"))
    fields = [f"memberId={_member(la.get('member', NO_MEMBER))}"]
    gen = la.get("gen", NO_GEN)
    if REQUESTS[name] in ("SyncGroup", "Heartbeat", "OffsetCommit") and gen != NO_GEN:
        fields.append(f"generationId={_text(gen)}")
    if name == "JoinGroupUnknownMember" and la.get("flag") is True:
        fields.append("requireKnownMemberId")
    if name == "JoinGroupKnownMember" and la.get("flag") is True:
        fields.append("metadata changed")
    if name == "SyncGroupLeader":
        fields.append("assignment")
    return f"{REQUESTS[name]}({', '.join(fields)})"


def _response_label(kind: str, error: str, after: Mapping[str, TlaValue], client: str, la: Mapping[str, Any]) -> str:
    """What the client learnt, read off its variables after the step."""
    parts = [error]
    if kind == "JoinGroup":
        new = la.get("newMember", NO_MEMBER)
        member = new if new not in (None, NO_MEMBER) else _get(after, "cmember", client)
        if member not in (None, NO_MEMBER):
            parts.append(f"memberId={_member(member)}")
        if error == "NONE":
            gen = _get(after, "cgen", client)
            if gen not in (None, NO_GEN):
                parts.append(f"generationId={_text(gen)}")
            if _get(after, "cleader", client) is True:
                members = _get(after, "cmembers", client)
                parts.append("leader" + (f", members={_text(members)}" if members is not None else ""))
    elif kind == "SyncGroup" and error == "NONE":
        assignment = _get(after, "cassign", client)
        if assignment is not None:
            parts.append(f"assignment={_text(assignment)}")
    return f"{kind} response: {' '.join(parts[:1])}" + (f" ({', '.join(parts[1:])})" if parts[1:] else "")


def _timer_note(name: str, before: Mapping[str, TlaValue]) -> str:
    timers = before.get("timers")
    head = timers[0] if isinstance(timers, tuple) and timers and isinstance(timers[0], Mapping) else None
    if head is None:
        return f"{name}: a timer fired"
    kind = str(head.get("kind", "?"))
    what = TIMER_OPERATIONS.get(kind, kind)
    member = head.get("member")
    if member not in (None, NO_MEMBER):
        what += f" of member {_member(member)}"
    deadline = head.get("deadline")
    at = f" at t={_text(deadline)}" if deadline is not None else ""
    named = "" if name == what else f" ({name})"
    return f"{what} expired{at}{named}"


@dataclass
class Side:
    """One sequence diagram: the lifelines and, per step, its arrows, notes, band and diff."""

    title: str
    lifelines: list[dict[str, str]]
    steps: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "lifelines": self.lifelines, "steps": self.steps}


def _changes(before: Mapping[str, TlaValue] | None, after: Mapping[str, TlaValue]) -> list[dict[str, Any]]:
    if before is None:
        return [{"var": name, "path": name, "old": None, "new": _text(value)} for name, value in after.items()]
    out = []
    for change in state_changes(before, after):
        var = change.path.split(".", 1)[0].split("[", 1)[0]
        out.append({"var": var, "path": change.path, "old": change.old, "new": change.new})
    return out


def _step(index: int, before: Mapping[str, TlaValue] | None, after: Mapping[str, TlaValue]) -> dict[str, Any]:
    la = after.get("lastAction")
    la = la if isinstance(la, Mapping) else {}
    name = str(la.get("name", "Init" if before is None else "?"))
    client_value = la.get("client")
    actor = client_value.name if isinstance(client_value, ModelValue) and client_value.name != "NoClient" else None
    arrows: list[dict[str, Any]] = []
    notes: list[dict[str, str]] = []
    kind = "init" if before is None else "coordinator"
    answered: set[str] = set()
    if before is not None and name in REQUESTS and actor is not None:
        kind = "request"
        arrows.append({"from": actor, "to": COORDINATOR, "kind": "request", "label": _request_label(la), "error": None})
        error = str(la.get("resp", ""))
        parkable = REQUESTS[name] in ("JoinGroup", "SyncGroup")
        if error == "" and (not parkable or _get(after, "cphase", actor) not in WAIT_PHASES):
            # liveness models (Normalize) keep no error codes: the answer is drawn, unnamed
            arrows.append(
                {
                    "from": COORDINATOR,
                    "to": actor,
                    "kind": "response",
                    "label": f"{REQUESTS[name]} response (error code not kept by this model)",
                    "error": None,
                }
            )
            answered.add(actor)
        elif error not in ("PARKED", ""):
            arrows.append(
                {
                    "from": COORDINATOR,
                    "to": actor,
                    "kind": "response",
                    "label": _response_label(REQUESTS[name], error, after, actor, la),
                    "error": error,
                }
            )
            answered.add(actor)
    elif before is not None and name in TIMERS:
        kind = "timer"
        notes.append({"on": COORDINATOR, "kind": "timer", "text": _timer_note(name, before)})
    elif before is not None and name in CLIENT_EVENTS and actor is not None:
        kind = "client"
        notes.append({"on": actor, "kind": "client", "text": name})
    elif before is not None and name == "AdvanceTime":
        kind = "time"
        notes.append({"on": COORDINATOR, "kind": "time", "text": f"time passes: now = {_text(after.get('now'))}"})
    elif before is not None:
        notes.append({"on": COORDINATOR, "kind": "coordinator", "text": name})
    if before is not None:
        # parked requests answered in this step (by anyone's action, or a timer)
        for client in _clients([after]):
            if client in answered or (name in CLIENT_EVENTS and client == actor):
                continue
            old, new = _get(before, "cphase", client), _get(after, "cphase", client)
            if client == actor and str(la.get("resp")) == "PARKED":
                waited = "JoinWait" if REQUESTS.get(name) == "JoinGroup" else "SyncWait"
            elif old in WAIT_PHASES and new != old:
                waited = str(old)
            else:
                continue
            if new in WAIT_PHASES:
                continue  # still parked
            error = "NONE" if new in ("Joined", "Stable") else "error"
            arrows.append(
                {
                    "from": COORDINATOR,
                    "to": client,
                    "kind": "response",
                    "label": _response_label(WAIT_PHASES[waited], error, after, client, {}),
                    "error": error,
                }
            )
    gstate, generation = after.get("gstate"), after.get("generation")
    return {
        "index": index,
        "action": name,
        "actor": actor,
        "kind": kind,
        "lastAction": _text(la) if la else "",
        "arrows": arrows,
        "notes": notes,
        "band": {
            "state": str(gstate) if gstate is not None else "",
            "generation": _text(generation) if generation is not None else "",
        },
        "changes": _changes(before, after),
    }


def build_side(states: Sequence[Mapping[str, TlaValue]], title: str = "spec", origins: Sequence[str] = ()) -> Side:
    """Lifelines (the coordinator, then a client each) and one step per state."""
    lifelines = [{"id": COORDINATOR, "label": "coordinator"}]
    lifelines += [{"id": c, "label": c} for c in _clients(states)]
    side = Side(title, lifelines)
    previous: Mapping[str, TlaValue] | None = None
    for index, state in enumerate(states):
        step = _step(index, previous, state)
        if index < len(origins) and origins[index]:
            step["origin"] = origins[index]
        side.steps.append(step)
        previous = state
    return side


def _page(title: str, kind: str, source: str, sides: list[Side], *, summary: str = "", **marks: Any) -> dict[str, Any]:
    actions = sorted({s["action"] for side in sides for s in side.steps})
    variables: list[str] = []
    for side in sides:
        for step in side.steps:
            for change in step["changes"]:
                if change["var"] not in variables:
                    variables.append(change["var"])
    page = {
        "title": title,
        "kind": kind,
        "source": source,
        "summary": summary,
        "sides": [s.to_json() for s in sides],
        "actions": actions,
        "variables": variables,
        "violation": None,
        "loop": None,
        "divergence": None,
    }
    page.update({k: v for k, v in marks.items() if v is not None})
    return page


def page_from_itf(path: Path) -> dict[str, Any]:
    """A TLC counterexample (kgc check) or a simulated trace (kgc simulate). The violated
    property is marked on the last step (TLC stops at the first state or step that breaks it);
    a liveness counterexample's lasso (ITF `loop`) on the steps it repeats."""
    from kgc.spec.itf import read_itf
    from kgc.spec.jsonfile import read_json

    meta, states = read_itf(path)
    document = read_json(path)
    loop = document.get("loop") if isinstance(document, dict) else None
    side = build_side(states, "spec")
    violated = meta.get("violated")
    last = len(states) - 1
    marks: dict[str, Any] = {}
    stuttering = bool(meta.get("stuttering"))
    if isinstance(loop, int) and 0 <= loop <= last and (meta.get("outcome") or "").startswith("liveness"):
        marks["loop"] = {"from": loop, "to": last, "stuttering": stuttering or loop == last}
    if violated:
        at = marks["loop"]["from"] if "loop" in marks else last
        what = f"along the loop, steps {at}..{last}" if "loop" in marks else f"at step {last}"
        marks["violation"] = {"property": violated, "step": last, "text": what}
    kind = "counterexample" if violated else "simulated" if meta.get("seed") is not None else "itf"
    title = f"{meta.get('model') or path.stem}: {meta.get('description') or kind}"
    return _page(title, kind, str(path), [side], summary=str(meta.get("description", "")), **marks)


def page_from_recorded(path: Path) -> dict[str, Any]:
    """A recorded implementation run (kgc conform --record, kgc validate --out); each step
    keeps the implementation event it came from."""
    from kgc.conformance.recorded_trace import read_trace

    return page_from_recorded_trace(read_trace(path), str(path))


def page_from_recorded_trace(
    trace: Any, source: str, failed_step: int | None = None, reason: str | None = None
) -> dict[str, Any]:
    """A RecordedTrace in memory; `failed_step` (kgc validate: the first step the spec cannot
    explain) is marked as the violation."""
    side = build_side(trace.states, "implementation (recorded)", trace.origins)
    summary = f"recorded run {trace.name}" + (f"; recording stopped: {trace.stopped}" if trace.stopped else "")
    marks: dict[str, Any] = {}
    if failed_step is not None and 0 <= failed_step < len(trace.states):
        marks["violation"] = {
            "property": "a behaviour of the spec",
            "step": failed_step,
            "text": f"step {failed_step}: {reason or 'no spec step matches'}",
        }
        summary += f"; not a behaviour of the spec from step {failed_step}: {reason or 'no spec step matches'}"
    return _page(f"recorded run: {trace.name}", "recorded", source, [side], summary=summary, **marks)


def page_from_scenario(path: Path) -> dict[str, Any]:
    """A scenario file, run on the coordinator and recorded in the spec's terms (the recorder
    lifts each request to the spec action a client would take)."""
    from kgc.conformance.recorder import record_scenario_file

    trace = record_scenario_file(path)
    side = build_side(trace.states, "implementation", trace.origins)
    summary = f"scenario {trace.name}, {trace.steps} spec steps" + (
        f"; recording stopped: {trace.stopped}" if trace.stopped else ""
    )
    return _page(f"scenario: {trace.name}", "scenario", str(path), [side], summary=summary)


def page_from_cex_replay(path: Path, bug: str | None = None, constants: Any = None) -> dict[str, Any]:
    """A counterexample replayed on the implementation (kgc replay-cex): the spec's steps and
    the implementation's side by side, the first divergence and the verdict marked."""
    from kgc.conformance.cex import replay_counterexample
    from kgc.conformance.seeded_bugs import coordinator_class

    return page_from_cex_report(path, replay_counterexample(path, coordinator_class(bug), constants))


def page_from_cex_report(path: Path, report: Any) -> dict[str, Any]:
    """The page of a replay already done (a kgc.conformance.cex.CexReport of `path`)."""
    from kgc.spec.itf import read_itf

    _, states = read_itf(path)
    spec_states = [states[s.index] for s in report.steps]
    impl_states: list[Mapping[str, TlaValue]] = []
    for k, step in enumerate(report.steps):
        # a step the implementation could not take leaves its state as it was
        impl_states.append(step.impl_state if step.impl_state is not None else impl_states[-1] if k else spec_states[0])
    spec = build_side(spec_states, "spec (counterexample)")
    impl = build_side(impl_states, f"implementation ({report.implementation})")
    for k, step in enumerate(report.steps):
        spec.steps[k]["index"] = impl.steps[k]["index"] = step.index
        impl.steps[k]["replay"] = {
            "follows": step.follows,
            "skipped": step.skipped,
            "diffs": [{"var": v, "spec": s, "impl": i} for v, s, i in step.diffs],
            "violations": {name: list(what) for name, what in step.violations.items()},
        }
        if step.skipped:
            impl.steps[k]["notes"] = [{"on": COORDINATOR, "kind": "skipped", "text": f"not possible: {step.skipped}"}]
            impl.steps[k]["arrows"] = []
    first = report.first_deviation
    divergence = None
    if first is not None:
        row = report.steps.index(first)
        var, s, i = first.diffs[0]
        divergence = {"row": row, "step": first.index, "text": f"{var}: spec {s}, implementation {i}"}
    marks: dict[str, Any] = {"divergence": divergence}
    if report.violated:
        last = len(spec_states) - 1
        marks["violation"] = {"property": report.violated, "step": last, "text": f"in the spec, at step {last}"}
    return _page(
        f"replay-cex {path.name}: {report.verdict}",
        "cex-replay",
        str(path),
        [spec, impl],
        summary=report.conclusion(),
        **marks,
    )


def page_from_file(path: Path, *, replay: bool = False, bug: str | None = None) -> dict[str, Any]:
    """Which builder a file needs, from its content: a scenario (has `steps`), a recorded run
    (#meta.kgc), else ITF; `replay` replays an ITF counterexample on the implementation."""
    from kgc.spec.jsonfile import InputError, read_json

    document = read_json(path)
    if not isinstance(document, dict):
        raise InputError(str(path), None, "neither a trace (ITF) nor a scenario: not a JSON object")
    if "steps" in document and "states" not in document:
        return page_from_scenario(path)
    meta = document.get("#meta")
    if isinstance(meta, dict) and meta.get("kgc", "").startswith("kgc-recorded-trace"):
        return page_from_recorded(path)
    if "states" not in document:
        raise InputError(str(path), None, "neither a trace (ITF: states) nor a scenario (steps)")
    return page_from_cex_replay(path, bug) if replay else page_from_itf(path)


def _template() -> str:
    return resources.files("kgc.tools").joinpath("trace_page.html").read_text(encoding="utf-8")


def render_html(page: Mapping[str, Any]) -> str:
    """The template with the page model inlined as JSON, every `<` written as \\u003c so no
    string in a trace can end the script element or open a comment in it."""
    data = json.dumps(page, ensure_ascii=False).replace("<", "\\u003c")
    return _template().replace("__TITLE__", html.escape(str(page.get("title", "trace")))).replace("__PAGE_DATA__", data)


def write_page(path: Path, page: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(page), encoding="utf-8")
    return path
