"""Implementation -> spec: is each recorded implementation run a behaviour of the spec?

TLC checks it (no Python re-implementation of the spec to drift). For a batch of recorded
traces, `build_module` writes a module that EXTENDS GroupCoordinator and adds two variables:
`tr` (which trace; chosen in the initial state, so one TLC run checks the whole batch and the
JVM and SANY start-up are paid once) and `ti` (how far into it). Every step must be the
recorded action, with its recorded client and flag (`Do`), and must end in a state that agrees
with what was observed (`MatchNext`). `TraceNotFinished == ti < Len(trace)` is the classic
completion check (its violation means the whole trace matched); by default completion is read
instead from a line every new state prints (`TraceProgress`), because TLC 2.15 prints a full
error trace for every violation under -continue, which costs more than the check itself. The
printed positions also name, for a trace that stopped, the first step the spec cannot explain.
A second, small run (`diagnose`) takes that step without the observation and prints what the
spec would have done, so a report names the variables that differ.

Module size: SANY is superlinear in the size of one expression, so every recorded state is its
own definition, and a state after the first lists only the variables that changed (the others
must stay as they were). A long idle stretch of time is one recorded AdvanceTime step whose
`now` the spec reaches in as many unit steps as it takes.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kgc.conformance.recorded_trace import RecordedTrace, TraceConstants, read_trace
from kgc.tools.tla_values import ModelValue, TlaFunction, parse_state, sort_key
from kgc.tools.tlc import TlcJob, run_tlc
from kgc.tools.tlc_messages import STATE_PRINT, ToolOutputParser
from kgc.tools.tlc_result import Outcome

__all__ = ["BatchReport", "StepDiff", "TraceVerdict", "build_module", "diagnose",
           "validate_files", "validate_traces"]

SPEC_MODULE = "GroupCoordinator"

SPEC_VARIABLES = (
    "now", "timers", "loaded", "gstate", "generation", "leader", "members", "pending",
    "awaitingJoin", "awaitingSync", "newMembers", "pendingSync", "plan", "newMemberAdded",
    "nextId", "store", "failovers", "cphase", "cmember", "cgen", "cleader", "cmembers",
    "cassign", "cwait", "genLeaders", "genMembers", "lastAction",
)
RECORD_VARS = ("lastAction", "store")           # compared field by field (observed fields)
TIMER_VAR = "timers"                            # a sequence of records, compared likewise
CLIENT_VARS = ("cphase", "cmember", "cgen", "cleader", "cmembers", "cassign", "cwait")
LAST_ACTION_FIELDS = ("name", "client", "member", "gen", "flag", "newMember", "resp", "dt")
REQUIRED_ACTION_FIELDS = ("name", "client", "flag")

#: Spec action -> how to call it from a lastAction record `la`.
ACTION_CALLS: dict[str, str] = {
    "JoinGroupUnknownMember": "JoinGroupUnknownMember(la.client, la.flag)",
    "JoinGroupPendingMember": "JoinGroupPendingMember(la.client)",
    "JoinGroupKnownMember": "JoinGroupKnownMember(la.client, la.flag)",
    "SyncGroupLeader": "SyncGroupLeader(la.client)",
    "SyncGroupFollower": "SyncGroupFollower(la.client)",
    "Heartbeat": "Heartbeat(la.client)",
    "LeaveGroup": "LeaveGroup(la.client)",
    "ClientCrash": "ClientCrash(la.client)",
    "ClientRestart": "ClientRestart(la.client)",
    "ClientAbandon": "ClientAbandon(la.client)",
    "ClientRejoin": "ClientRejoin(la.client)",
    "SessionTimeoutExpiry": "SessionTimeoutExpiry",
    "NewMemberJoinTimeout": "NewMemberJoinTimeout",
    "PendingMemberExpiry": "PendingMemberExpiry",
    "RebalanceTimeout": "RebalanceTimeout",
    "InitialDelayedJoin": "InitialDelayedJoin",
    "DelayedSyncExpiry": "DelayedSyncExpiry",
    "StaleTimerExpiry": "StaleTimerExpiry",
    "AdvanceTime": "AdvanceTime",
    "GroupUnload": "GroupUnload",
    "GroupLoad": "GroupLoad",
}

_PROGRESS = re.compile(r'<<"@kgc", (\d+), (\d+)>>')


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StepDiff:
    """One observed variable (or field) where the spec's successor differs from the run."""

    variable: str
    spec: Any
    impl: Any

    def __str__(self) -> str:
        return f"{self.variable}: spec {_show(self.spec)}, implementation {_show(self.impl)}"


@dataclass
class TraceVerdict:
    """Per trace: matched, or the first step (index into the recorded states; 1 = the first
    step after the initial state, 0 = the initial state itself) the spec cannot explain."""

    name: str
    steps: int
    matched: bool
    failed_step: int | None = None
    action: str | None = None
    origin: str | None = None
    reason: str | None = None
    diffs: list[StepDiff] = field(default_factory=list)
    stopped: str | None = None

    def line(self) -> str:
        if self.matched:
            tail = f" (recording stopped: {self.stopped})" if self.stopped else ""
            return f"OK   {self.name}: {self.steps} steps{tail}"
        where = f"step {self.failed_step}"
        if self.action:
            where += f" {self.action}"
        if self.origin:
            where += f" [{self.origin}]"
        text = f"FAIL {self.name}: {where}: {self.reason or 'no spec step matches'}"
        if self.diffs:
            text += "; " + "; ".join(str(d) for d in self.diffs[:6])
        return text


@dataclass
class BatchReport:
    verdicts: list[TraceVerdict]
    seconds: float
    tlc_runs: int
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors and all(v.matched for v in self.verdicts)


class ValidationError(Exception):
    """TLC could not check a batch at all (parse error, crash): not a verdict on any trace."""


# ---------------------------------------------------------------------------------------------
# TLA+ text
# ---------------------------------------------------------------------------------------------

def _ident(name: str) -> str:
    return "CL_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


class _Writer:
    """TLA+ text for values; model values become the constants standing for them."""

    def __init__(self) -> None:
        self.model_values: dict[str, str] = {}

    def value(self, v: Any) -> str:
        if isinstance(v, bool):
            return "TRUE" if v else "FALSE"
        if isinstance(v, int):
            return str(v)
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, ModelValue):
            if v.name == "NoClient":
                return "NoClient"
            ident = self.model_values.setdefault(v.name, _ident(v.name))
            return ident
        if isinstance(v, frozenset):
            return "{" + ",".join(self.value(x) for x in sorted(v, key=sort_key)) + "}"
        if isinstance(v, tuple):
            return "<<" + ",".join(self.value(x) for x in v) + ">>"
        if isinstance(v, TlaFunction):
            keys = list(v)
            if keys and all(isinstance(k, str) for k in keys):
                return "[" + ",".join(f"{k}|->{self.value(x)}" for k, x in v.items()) + "]"
            if not keys:
                return "<<>>"
            return "(" + "@@".join(f"{self.value(k)}:>{self.value(x)}" for k, x in v.items()) + ")"
        raise TypeError(f"not a TLA+ value: {v!r}")


@dataclass(frozen=True)
class _Shape:
    """What a batch observes: the variables, and the fields of its record variables."""

    variables: tuple[str, ...]
    fields: dict[str, tuple[str, ...]]   # lastAction / store / timers -> observed fields


def _shape_of(trace: RecordedTrace) -> _Shape:
    first = trace.states[0]
    variables = tuple(v for v in SPEC_VARIABLES if v in first)
    unknown = set(first) - set(SPEC_VARIABLES)
    if unknown:
        raise ValueError(f"{trace.name}: not spec variables: {sorted(unknown)}")
    fields: dict[str, tuple[str, ...]] = {}
    for var in RECORD_VARS:
        if var in first:
            fields[var] = tuple(first[var].keys())
    if TIMER_VAR in first:
        seen: list[str] = []
        for s in trace.states:
            for t in s[TIMER_VAR]:
                seen.extend(f for f in t.keys() if f not in seen)
        fields[TIMER_VAR] = tuple(seen) or ("kind",)
    for n, s in enumerate(trace.states):
        if set(s) != set(first):
            raise ValueError(f"{trace.name}: state {n} observes {sorted(s)}, state 0 {sorted(first)}")
        for var in RECORD_VARS:
            if var in s and tuple(s[var].keys()) != fields[var] and set(s[var].keys()) != set(fields[var]):
                raise ValueError(f"{trace.name}: state {n}: {var} has fields {sorted(s[var])}")
        if TIMER_VAR in s:
            for t in s[TIMER_VAR]:
                if set(t.keys()) != set(fields[TIMER_VAR]):
                    raise ValueError(f"{trace.name}: state {n}: a timer has fields {sorted(t)}")
    if "lastAction" not in fields or not set(REQUIRED_ACTION_FIELDS) <= set(fields["lastAction"]):
        raise ValueError(f"{trace.name}: lastAction must be observed with {REQUIRED_ACTION_FIELDS}")
    if "now" not in variables:
        raise ValueError(f"{trace.name}: now must be observed")
    return _Shape(variables, fields)


def _record(fields: Sequence[str], expr: str) -> str:
    return "[" + ", ".join(f"{f} |-> {expr}.{f}" for f in fields) + "]"


def _matchers(shape: _Shape) -> list[str]:
    lines: list[str] = []
    # projections onto the observed fields
    for var in RECORD_VARS:
        if var in shape.fields:
            lines.append(f"P_{var}(r) == {_record(shape.fields[var], 'r')}")
    if TIMER_VAR in shape.fields:
        lines.append(f"P_timers(ts) == [k \\in DOMAIN ts |-> {_record(shape.fields[TIMER_VAR], 'ts[k]')}]")

    def now_eq(var: str, src: str, primed: bool) -> str:
        p = "'" if primed else ""
        if var in RECORD_VARS or var == TIMER_VAR:
            return f"P_{var}({var}{p}) = {src}"
        if var in CLIENT_VARS:
            if primed:
                return f"\\A c_ \\in Clients : {var}'[c_] = IF c_ \\in DOMAIN {src} THEN {src}[c_] ELSE {var}[c_]"
            return f"\\A c_ \\in DOMAIN {src} : {var}[c_] = {src}[c_]"
        return f"{var}{p} = {src}"

    def same(var: str) -> str:
        if var in RECORD_VARS or var == TIMER_VAR:
            return f"P_{var}({var}') = P_{var}({var})"
        return f"{var}' = {var}"

    lines.append("MatchInit(o) ==")
    for var in shape.variables:
        lines.append(f"    /\\ {now_eq(var, 'o.' + var, False)}")
    lines.append("MatchNext(o) ==")
    for var in shape.variables:
        if var == "lastAction":
            lines.append(f"    /\\ {now_eq(var, 'o.' + var, True)}")
        else:
            lines.append(f"    /\\ IF \"{var}\" \\in DOMAIN o THEN {now_eq(var, 'o.' + var, True)}")
            lines.append(f"                          ELSE {same(var)}")
    return lines


def _do_operator() -> list[str]:
    arms = [f'la.name = "{name}" -> {call}' for name, call in ACTION_CALLS.items()]
    return ["Do(la) ==", "    CASE " + "\n      [] ".join(arms), "      [] OTHER -> FALSE"]


def _state_defs(w: _Writer, t: int, trace: RecordedTrace, shape: _Shape) -> tuple[list[str], int]:
    """One definition per state: the first in full, the others as what changed."""
    lines = []
    prev: dict[str, Any] | None = None
    for k, s in enumerate(trace.states):
        parts = []
        for var in shape.variables:
            v = s[var]
            if prev is not None and var != "lastAction" and prev[var] == v:
                continue
            if prev is not None and var in CLIENT_VARS:
                changed = {c: x for c, x in v.items() if prev[var].get(c) != x}
                v = TlaFunction(changed)
                if not changed:
                    continue
            elif var in RECORD_VARS:
                v = TlaFunction({f: v[f] for f in shape.fields[var]})
            elif var == TIMER_VAR:
                v = tuple(TlaFunction({f: x[f] for f in shape.fields[var]}) for x in v)
            parts.append(f"{var} |-> {w.value(v)}")
        lines.append(f"S{t}_{k} == [" + ", ".join(parts) + "]")
        prev = s
    return lines, len(trace.states)


def merge_constants(traces: Sequence[RecordedTrace]) -> TraceConstants:
    base = traces[0].constants
    clients: list[str] = []
    for tr in traces:
        if tr.constants.batch_key() != base.batch_key():
            raise ValueError(f"{tr.name}: constants differ from {traces[0].name}'s")
        clients.extend(c for c in tr.constants.clients if c not in clients)
    return replace(base, num_ids=max(t.constants.num_ids for t in traces),
                   clients=tuple(clients) or ("c1",),
                   failovers=max(t.constants.failovers for t in traces))


def build_module(traces: Sequence[RecordedTrace], module: str, *,
                 stop_at: Sequence[int] | None = None) -> tuple[str, str]:
    """(module text, config text) checking `traces`. With `stop_at` (one 1-based position per
    trace), the diagnosis variant: follow each trace to the step before that position, then
    take the recorded action there without matching what was observed."""
    if not traces:
        raise ValueError("no traces")
    shape = _shape_of(traces[0])
    for tr in traces[1:]:
        if _shape_of(tr) != shape:
            raise ValueError(f"{tr.name} observes other variables than {traces[0].name}")
    consts = merge_constants(traces)
    w = _Writer()
    for c in consts.clients:
        w.value(ModelValue(c))
    body: list[str] = []
    names = []
    for t, trace in enumerate(traces, start=1):
        defs, n = _state_defs(w, t, trace, shape)
        body.extend(defs)
        body.append(f"T{t} == <<" + ", ".join(f"S{t}_{k}" for k in range(n)) + ">>")
        names.append(f"T{t}")
    lines = [f"---- MODULE {module} ----", f"EXTENDS {SPEC_MODULE}"]
    if w.model_values:
        lines.append("CONSTANTS " + ", ".join(w.model_values.values()))
    lines += ["VARIABLES tr, ti", ""]
    lines += body
    lines.append("Traces == <<" + ", ".join(names) + ">>")
    lines += [""] + _matchers(shape) + [""] + _do_operator() + [""]
    advance = ('"now" \\in DOMAIN o /\\ o.lastAction.name = "AdvanceTime" /\\ now + 1 < o.now')
    if stop_at is None:
        lines += [
            "TraceInit == tr \\in 1..Len(Traces) /\\ ti = 1 /\\ Init /\\ MatchInit(Traces[tr][1])",
            "TraceNext ==",
            "    /\\ ti < Len(Traces[tr])",
            "    /\\ tr' = tr",
            "    /\\ LET o == Traces[tr][ti + 1] IN",
            f"         IF {advance}",
            "         THEN AdvanceTime /\\ ti' = ti",
            "         ELSE Do(o.lastAction) /\\ MatchNext(o) /\\ ti' = ti + 1",
            "TraceNotFinished == ti < Len(Traces[tr])",
            'TraceProgress == PrintT(<<"@kgc", tr, ti>>)',
        ]
    else:
        lines += [
            "Stop == <<" + ", ".join(str(k) for k in stop_at) + ">>",
            "TraceInit == tr \\in 1..Len(Traces) /\\ ti = 1 /\\ Init /\\ MatchInit(Traces[tr][1])",
            "TraceNext ==",
            "    /\\ ti < Stop[tr]",
            "    /\\ tr' = tr",
            "    /\\ LET o == Traces[tr][ti + 1] IN",
            f"         IF {advance}",
            "         THEN AdvanceTime /\\ ti' = ti",
            "         ELSE Do(o.lastAction) /\\ ti' = ti + 1 /\\ (ti + 1 < Stop[tr] => MatchNext(o))",
            "BeforeStop == ti < Stop[tr] - 1",
        ]
    lines.append("=" * 40)
    module_text = "\n".join(lines) + "\n"

    max_group = consts.max_group_size if consts.max_group_size is not None else consts.num_ids + 1
    cfg = ["INIT TraceInit", "NEXT TraceNext", "CONSTANTS",
           "    Clients = {" + ", ".join(consts.clients) + "}",
           "    NoClient = NoClient"]
    cfg += [f"    {ident} = {name}" for name, ident in w.model_values.items()]
    cfg += [
        f"    NumIds = {consts.num_ids}",
        f"    Session = {consts.session}",
        f"    Rebalance = {consts.rebalance}",
        f"    InitialDelay = {consts.initial_delay}",
        f"    NewMemberTimeout = {consts.new_member_timeout}",
        f"    MaxGroupSize = {max_group}",
        "    JoinFlavours = {TRUE, FALSE}",
        '    ClientFaults = {"crash", "abandon", "leave", "rejoin", "change"}',
        f"    MaxFailovers = {max(1, consts.failovers)}",
        "    Normalize = FALSE",
        "    MaxGen = 0",
        "    MaxTime = 0",
        '    Bug = "none"',
    ]
    cfg.append("INVARIANTS TraceProgress" if stop_at is None else "INVARIANT BeforeStop")
    return module_text, "\n".join(cfg) + "\n"


# ---------------------------------------------------------------------------------------------
# Running TLC
# ---------------------------------------------------------------------------------------------

def _spec_file() -> Path:
    from kgc.tools.spec_models import spec_root
    return spec_root() / f"{SPEC_MODULE}.tla"


def _write_job(run_dir: Path, module: str, text: str, cfg: str, spec: Path) -> TlcJob:
    src = run_dir / "src"
    src.mkdir(parents=True)
    tla = src / f"{module}.tla"
    tla.write_text(text, encoding="utf-8")
    cfg_path = src / f"{module}.cfg"
    cfg_path.write_text(cfg, encoding="utf-8")
    return tla, cfg_path


def _run(traces: Sequence[RecordedTrace], run_dir: Path, *, stop_at: Sequence[int] | None,
         spec: Path, timeout: float | None, classic: bool = False) -> tuple[Any, Path]:
    module = "TraceDiag" if stop_at is not None else "TraceCheck"
    text, cfg = build_module(traces, module, stop_at=stop_at)
    if classic:
        cfg = cfg.replace("INVARIANTS TraceProgress", "INVARIANTS TraceProgress TraceNotFinished")
    tla, cfg_path = _write_job(run_dir, module, text, cfg, spec)
    options = ["-deadlock"]
    if stop_at is not None or classic:
        options.append("-continue")
    job = TlcJob(module=tla, config=cfg_path, modules=(spec,), workers=1, timeout=timeout,
                 tlc_options=options, display_paths={spec.name: str(spec)})
    tlc_dir = run_dir / "tlc"
    tlc_dir.mkdir()
    result = run_tlc(job, tlc_dir)
    return result, tlc_dir / "tlc.out"


def _check_result(result: Any, out: Path, expect_violation: bool) -> None:
    ok = {Outcome.PASSED}
    if expect_violation:
        ok |= {Outcome.INVARIANT_VIOLATED}
    if result.outcome not in ok and result.outcome is not Outcome.NO_INITIAL_STATES:
        raise ValidationError(f"TLC: {result.outcome.value if result.outcome else 'no verdict'}: "
                              f"{result.error_line or ''} (output in {out})")


def _progress(out: Path, n: int) -> list[int]:
    """Per trace (1-based), the furthest position reached (0: not even the initial state)."""
    reached = [0] * (n + 1)
    with open(out, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith('<<"@kgc"'):
                m = _PROGRESS.match(line)
                if m:
                    t, i = int(m.group(1)), int(m.group(2))
                    if i > reached[t]:
                        reached[t] = i
    return reached[1:]


def _check_batch(traces: Sequence[RecordedTrace], run_dir: Path, spec: Path,
                 timeout: float | None, classic: bool) -> list[TraceVerdict]:
    result, out = _run(traces, run_dir, stop_at=None, spec=spec, timeout=timeout, classic=classic)
    _check_result(result, out, expect_violation=classic)
    reached = _progress(out, len(traces))
    verdicts = []
    for trace, r in zip(traces, reached):
        n = len(trace.states)
        if r >= n:
            verdicts.append(TraceVerdict(trace.name, trace.steps, True, stopped=trace.stopped))
        else:
            la = trace.states[r]["lastAction"] if r < n else None
            verdicts.append(TraceVerdict(
                trace.name, trace.steps, False, failed_step=r, stopped=trace.stopped,
                action=_action_text(la) if la is not None else None,
                origin=trace.origins[r] if r < len(trace.origins) else None,
                reason=("the initial state is not the spec's Init" if r == 0 else None)))
    return verdicts


def _action_text(la: Any) -> str:
    name = la["name"]
    client = la.get("client")
    if isinstance(client, ModelValue) and client.name != "NoClient":
        flag = la.get("flag")
        return f"{name}({client.name}{', ' + str(flag).upper() if name in ('JoinGroupUnknownMember', 'JoinGroupKnownMember') else ''})"
    return name


# ---------------------------------------------------------------------------------------------
# Diagnosis: what the spec would have done at the failing step
# ---------------------------------------------------------------------------------------------

def _violation_traces(out: Path) -> list[list[dict[str, Any]]]:
    """Every error trace TLC printed (2110 ... 2217*), as lists of states."""
    parser = ToolOutputParser()
    traces: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] | None = None
    with open(out, encoding="utf-8", errors="replace") as f:
        for line in f:
            for event in parser.feed(line):
                if isinstance(event, str):
                    continue
                if event.code in (2110, 2107):
                    current = []
                    traces.append(current)
                elif event.code == STATE_PRINT and current is not None:
                    header, _, rest = event.body.strip().partition("\n")
                    try:
                        current.append(parse_state(rest))
                    except ValueError:
                        current.append({})
    return traces


def _project(var: str, value: Any, shape: _Shape) -> Any:
    if var in RECORD_VARS and isinstance(value, TlaFunction):
        return TlaFunction({f: value[f] for f in shape.fields[var] if f in value})
    if var == TIMER_VAR:
        return tuple(TlaFunction({f: t[f] for f in shape.fields[var] if f in t}) for t in value)
    return value


def _diff(spec_state: dict[str, Any], observed: dict[str, Any], shape: _Shape) -> list[StepDiff]:
    diffs = []
    for var in shape.variables:
        if var not in spec_state:
            continue
        sv = _project(var, spec_state[var], shape)
        ov = _project(var, observed[var], shape)
        if var in CLIENT_VARS:
            for c, x in ov.items():
                y = sv.get(c) if isinstance(sv, TlaFunction) else None
                if x != y:
                    diffs.append(StepDiff(f"{var}[{c}]", y, x))
        elif var in RECORD_VARS:
            for f_, x in ov.items():
                y = sv.get(f_) if isinstance(sv, TlaFunction) else None
                if x != y:
                    diffs.append(StepDiff(f"{var}.{f_}", y, x))
        elif sv != ov:
            diffs.append(StepDiff(var, sv, ov))
    return diffs


def diagnose(traces: Sequence[RecordedTrace], verdicts: Sequence[TraceVerdict], run_dir: Path,
             spec: Path | None = None, timeout: float | None = None) -> None:
    """Fill in `reason` and `diffs` of the failed verdicts (in place)."""
    spec = spec or _spec_file()
    failing = [(t, v) for t, v in zip(traces, verdicts) if not v.matched and v.failed_step]
    if not failing:
        return
    sub = [t for t, _ in failing]
    stops = [v.failed_step + 1 for _, v in failing]      # 1-based position of the failing state
    shape = _shape_of(sub[0])
    result, out = _run(sub, run_dir, stop_at=stops, spec=spec, timeout=timeout)
    _check_result(result, out, expect_violation=True)
    by_trace: dict[int, list[list[dict[str, Any]]]] = {}
    for states in _violation_traces(out):
        if states and "tr" in states[-1]:
            by_trace.setdefault(states[-1]["tr"], []).append(states)
    for n, (trace, verdict) in enumerate(failing, start=1):
        stop = stops[n - 1]
        found = by_trace.get(n, [])
        successors = [s[-1] for s in found if s[-1].get("ti") == stop]
        observed = trace.states[stop - 1]
        if not successors:
            verdict.reason = (f"the spec cannot take {verdict.action} here "
                              f"(not enabled in the state the trace reached)")
            before = [s[-1] for s in found if s[-1].get("ti") == stop - 1]
            if before:
                verdict.diffs = _context(before[0], observed, verdict.action or "")
            continue
        best = min((_diff(s, observed, shape) for s in successors), key=len)
        verdict.diffs = best
        verdict.reason = (f"{verdict.action} is possible but ends elsewhere "
                          f"({len(successors)} spec successor{'s' if len(successors) != 1 else ''})")


def _context(before: dict[str, Any], observed: dict[str, Any], action: str) -> list[StepDiff]:
    """For an action the spec could not take: the spec's state where it was tried, beside what
    the run observed after it, for the variables that decide whether it is enabled."""
    keys = ["gstate", "members", "pending", "timers", "cphase", "cmember", "loaded"]
    out = []
    for k in keys:
        if k in before and k in observed:
            out.append(StepDiff(k + " (spec before / run after)", before[k], observed[k]))
    return out


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------

def _batches(traces: Sequence[RecordedTrace], max_traces: int, max_states: int) -> list[list[int]]:
    groups: dict[Any, list[int]] = {}
    for n, t in enumerate(traces):
        key = (t.constants.batch_key(), _shape_of(t))
        groups.setdefault((key[0], key[1].variables, tuple(sorted(key[1].fields.items()))), []).append(n)
    out: list[list[int]] = []
    for members in groups.values():
        chunk: list[int] = []
        states = 0
        for n in members:
            size = len(traces[n].states)
            if chunk and (len(chunk) >= max_traces or states + size > max_states):
                out.append(chunk)
                chunk, states = [], 0
            chunk.append(n)
            states += size
        if chunk:
            out.append(chunk)
    return out


def validate_traces(traces: Sequence[RecordedTrace], *, work_dir: Path | None = None,
                    jobs: int | None = None, max_traces: int = 1000, max_states: int = 40000,
                    timeout: float | None = None, explain: bool = True, classic: bool = False,
                    keep: bool = False,
                    on_batch: Callable[[int, int, list[TraceVerdict]], None] | None = None,
                    ) -> BatchReport:
    """Check every trace; batches of traces with equal constants run in one TLC process each,
    `jobs` processes at a time (default: one per core)."""
    started = time.monotonic()
    spec = _spec_file()
    traces = [t for t in traces]
    empty = [n for n, t in enumerate(traces) if not t.states]
    if empty:
        raise ValueError(f"trace {traces[empty[0]].name} has no states")
    base = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="kgc-validate-"))
    base.mkdir(parents=True, exist_ok=True)
    batches = _batches(traces, max_traces, max_states)
    verdicts: list[TraceVerdict | None] = [None] * len(traces)
    errors: list[str] = []
    runs = 0

    def one(b: int, idx: list[int]) -> tuple[int, list[int], list[TraceVerdict] | str]:
        sub = [traces[n] for n in idx]
        run_dir = base / f"batch{b}"
        try:
            vs = _check_batch(sub, run_dir, spec, timeout, classic)
            if explain and not all(v.matched for v in vs):
                diagnose(sub, vs, base / f"batch{b}-diag", spec, timeout)
            return b, idx, vs
        except (ValidationError, ValueError) as e:
            return b, idx, f"batch {b} ({len(idx)} traces, first {sub[0].name}): {e}"

    workers = max(1, jobs or os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for b, idx, res in pool.map(lambda a: one(*a), list(enumerate(batches))):
            runs += 1
            if isinstance(res, str):
                errors.append(res)
                continue
            for n, v in zip(idx, res):
                verdicts[n] = v
            if on_batch is not None:
                on_batch(b, len(batches), res)
    if not keep and work_dir is None and not errors:
        shutil.rmtree(base, ignore_errors=True)
    done = [v for v in verdicts if v is not None]
    return BatchReport(done, time.monotonic() - started, runs, errors)


def validate_files(paths: Iterable[Path], **options: Any) -> BatchReport:
    return validate_traces([read_trace(Path(p)) for p in paths], **options)


def _show(v: Any) -> str:
    if isinstance(v, frozenset):
        return "{" + ", ".join(str(x) for x in sorted(v, key=sort_key)) + "}"
    if isinstance(v, TlaFunction):
        return "[" + ", ".join(f"{k}: {_show(x)}" for k, x in v.items()) + "]"
    if isinstance(v, tuple):
        return "<<" + ", ".join(_show(x) for x in v) + ">>"
    return str(v)
