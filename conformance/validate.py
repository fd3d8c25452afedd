"""Implementation -> spec: is each recorded implementation run a behaviour of the spec?

TLC decides it, so there is no second Python copy of the spec to drift. The checking is the
checked-in module spec/TraceGroupCoordinator.tla (EXTENDS GroupCoordinator, as etcd-raft's and
CCF's trace specs do); for a batch of recorded traces `build_module` writes only its data, module
TraceData (action codes, clients, the projection `View`) and the .cfg (the recorded states). The
trace module adds two variables: `tr` (which trace; chosen in the initial state, so one TLC run
checks the whole batch and JVM and SANY start-up are paid once) and `ti` (how far into it). Every
step must be the recorded action with its recorded client and flag (`Do`), and must end in a state
whose observed part is the recorded one. `TraceNotFinished == ti < Len(trace)` is the classic
completion check (its violation means the whole trace matched); it is defined, and `classic`
runs use it, but by default completion is read from a line every new state prints
(`TraceProgress`), because TLC 2.15 prints a full error trace for every violation under
-continue, which costs more than the check itself (measured: 238 s against 145 s for 1,000
traces). The printed positions also name, for a trace that got stuck, the first step the spec
cannot explain; a second, small run (`diagnose`) takes that step without the observation and
prints what the spec would have done, so a report names the variables that differ.

Where the recorded states go. SANY parses at about 1 us per byte of literal data (and
superlinearly in the size of one expression): 300 traces of 50 states written as TLA+ records
took 24 s to parse. TLC's own .cfg reader is several times faster for string constants, so each
recorded state becomes one string in a .cfg set constant `Obs`: TLC's `ToString` of the
projection `View` of the state (tagged with trace and position), which the step must produce
(`ToString(<<tr, ti + 1, View'>>) \\in Obs`, a binary search in a normalised set). `View` keeps
only the observed variables and fields, with strings replaced by small integers (`SC`) and
clients by their index (`CI`), so no quotes are needed inside the .cfg strings; `view_text`
writes the same text in Python. Only the action codes (one integer per state) are TLA+ text.
A long idle stretch of time is one recorded AdvanceTime step (code -(now + 1)) whose `now` the
spec reaches in as many unit steps as it takes.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from kgc.conformance.recorded_trace import RecordedTrace, TraceConstants, read_trace
from kgc.conformance.trace_run import run_trace_module
from kgc.spec.tlc import TlcStopped, stop_all_tlc, stoppable_by
from kgc.spec.tlc_messages import STATE_PRINT, ToolOutputParser
from kgc.spec.tlc_result import Outcome
from kgc.spec.values import ModelValue, TlaFunction, parse_state, sort_key

__all__ = [
    "ACTIONS",
    "BatchReport",
    "StepDiff",
    "TraceVerdict",
    "ValidationError",
    "action_code",
    "build_module",
    "trace_module_calls",
    "diagnose",
    "validate_files",
    "validate_traces",
    "view_text",
]

SPEC_MODULE = "GroupCoordinator"
#: The checked-in trace-validation module (spec/) and the data module written per batch.
TRACE_MODULE = "TraceGroupCoordinator"
DATA_MODULE = "TraceData"

# Every spec variable with the type of its value, as TypeOK has them. "str" values are
# compared through SC, "client" values through CI.
VAR_TYPES: dict[str, str] = {
    "now": "int",
    "timers": "timers",
    "loaded": "bool",
    "gstate": "str",
    "generation": "int",
    "leader": "int",
    "members": "set",
    "pending": "set",
    "awaitingJoin": "set",
    "awaitingSync": "set",
    "newMembers": "set",
    "pendingSync": "set",
    "plan": "set",
    "newMemberAdded": "bool",
    "mtimeouts": "timeouts",
    "nextId": "int",
    "store": "record",
    "failovers": "int",
    "cphase": "clients",
    "cmember": "clients",
    "cgen": "clients",
    "cleader": "clients",
    "cmembers": "clients",
    "cassign": "clients",
    "cwait": "clients",
    "genLeaders": "set",
    "genMembers": "set",
    "leaderLog": "pairs",
    "lastAction": "record",
    "writes": "writes",
    "staticMembers": "perinstance",
    "minstance": "instances",
    "storeStatic": "perinstance",
    "loading": "bool",
    "protocol": "protocol",
    "mprotocols": "protocols",
    "ackLog": "pairs",
}
SPEC_VARIABLES = tuple(VAR_TYPES)
CLIENT_VALUE_TYPES = {
    "cphase": "str",
    "cmember": "int",
    "cgen": "int",
    "cleader": "bool",
    "cmembers": "set",
    "cassign": "set",
    "cwait": "int",
}
CLIENT_DEFAULTS = {
    "cphase": "Unjoined",
    "cmember": 0,
    "cgen": -1,
    "cleader": False,
    "cmembers": frozenset(),
    "cassign": frozenset(),
    "cwait": 0,
}
FIELD_TYPES: dict[str, dict[str, str]] = {
    "lastAction": {
        "name": "str",
        "client": "client",
        "member": "int",
        "gen": "int",
        "flag": "bool",
        "newMember": "int",
        "resp": "str",
        "dt": "int",
    },
    "store": {"exists": "bool", "gen": "int", "leader": "int", "members": "set", "plan": "set"},
    "writes": {
        "kind": "str",
        "gen": "int",
        "leader": "int",
        "members": "set",
        "plan": "set",
        "stale": "bool",
        "member": "int",
        "old": "int",
        "obj": "int",
        "skip": "bool",
        "cleader": "int",
        "open": "bool",
    },
    "timers": {
        "kind": "str",
        "member": "int",
        "deadline": "int",
        "dur": "str",
        "gen": "int",
        "delay": "int",
        "remaining": "int",
        "stale": "bool",
        "orphan": "bool",
        "olds": "set",
        "nma": "bool",
    },
}
REQUIRED_ACTION_FIELDS = ("name", "client", "flag")

#: Spec actions, numbered for the action codes; the call for a code `a` (client index
#: (a \div 2) % 64, flag a % 2 = 1).
ACTIONS: dict[str, str] = {
    "JoinGroupUnknownMember": "JoinGroupUnknownMember(C_(a), F_(a))",
    "JoinGroupPendingMember": "JoinGroupPendingMember(C_(a))",
    "JoinGroupKnownMember": "JoinGroupKnownMember(C_(a), F_(a))",
    "SyncGroupLeader": "SyncGroupLeader(C_(a))",
    "SyncGroupFollower": "SyncGroupFollower(C_(a))",
    "Heartbeat": "Heartbeat(C_(a))",
    "LeaveGroup": "LeaveGroup(C_(a))",
    "ClientCrash": "ClientCrash(C_(a))",
    "ClientRestart": "ClientRestart(C_(a))",
    "ClientAbandon": "ClientAbandon(C_(a))",
    "ClientRejoin": "ClientRejoin(C_(a))",
    "NoIdLeft": "NoIdLeft(C_(a))",
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
    "StoreCallback": "StoreCallbackAny",
    "LoadBegin": "LoadBegin",
    "GroupUnloadDuringLoad": "GroupUnloadDuringLoad",
    "StaleHeartbeat": "StaleHeartbeat(C_(a), F_(a))",
    "LeaveGroupByInstanceId": "LeaveGroupByInstanceId(C_(a))",
    "HandleCommitOffsets": "HandleCommitOffsets(C_(a))",
    "SyncGroupInconsistentProtocol": "SyncGroupInconsistentProtocol(C_(a))",
}
_ACTION_INDEX = {name: n for n, name in enumerate(ACTIONS, start=1)}
MAX_CLIENTS = 63
MAX_EXPLAINED = 50  # failures per batch diagnosed (each prints a short error trace)

_PROGRESS = re.compile(r'<<"@kgc", (\d+), (\d+)>>')

#: Seconds spent writing modules and running TLC, summed over batches (for benchmarks).
TIMINGS: dict[str, float] = {"build": 0.0, "tlc": 0.0}
_TIMING_LOCK = threading.Lock()


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
    """Per trace: matched, or the first step the spec cannot explain, as an index into the
    recorded states (0: the initial state is not the spec's; k: the step into state k)."""

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
            text += "; " + "; ".join(str(d) for d in self.diffs[:8])
        return text


@dataclass
class BatchReport:
    verdicts: list[TraceVerdict]
    seconds: float
    tlc_runs: int
    states: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors and all(v.matched for v in self.verdicts)


class ValidationError(Exception):
    """TLC could not check a batch at all (parse error, crash): not a verdict on any trace."""


# ---------------------------------------------------------------------------------------------
# The observed part of a state, as TLC's ToString prints it
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=4)
def _string_codes(spec_text: str) -> dict[str, int]:
    """Every string literal of the spec -> a small integer: no state of the spec holds any
    other string, and integers need no quoting inside .cfg strings."""
    literals = sorted(set(re.findall(r'"([^"\\\n]*)"', spec_text)))
    return {s: n for n, s in enumerate(literals, start=1)}


@dataclass(frozen=True)
class _Shape:
    """What a batch observes: the variables, and the fields of its record-valued ones."""

    variables: tuple[str, ...]
    fields: tuple[tuple[str, tuple[str, ...]], ...]

    def fields_of(self, var: str) -> tuple[str, ...]:
        return dict(self.fields)[var]


def _shape_of(trace: RecordedTrace) -> _Shape:
    if not trace.states:
        raise ValueError(f"{trace.name}: no states")
    first = trace.states[0]
    unknown = set(first) - set(SPEC_VARIABLES)
    if unknown:
        raise ValueError(f"{trace.name}: not spec variables: {sorted(unknown)}")
    variables = tuple(v for v in SPEC_VARIABLES if v in first)
    fields: dict[str, tuple[str, ...]] = {}
    for var in ("lastAction", "store"):
        if var in first:
            fields[var] = tuple(f for f in FIELD_TYPES[var] if f in first[var])
    if "timers" in first:
        seen = {f for s in trace.states for t in s["timers"] for f in t}
        fields["timers"] = tuple(f for f in FIELD_TYPES["timers"] if f in seen) or ("kind",)
    for n, s in enumerate(trace.states):
        if set(s) != set(first):
            raise ValueError(f"{trace.name}: state {n} observes {sorted(s)}, state 0 {sorted(first)}")
        for var in ("lastAction", "store"):
            if var in s and set(s[var]) != set(fields[var]):
                raise ValueError(f"{trace.name}: state {n}: {var} has fields {sorted(s[var])}")
        for t in s.get("timers", ()):
            if set(t) != set(fields["timers"]):
                raise ValueError(f"{trace.name}: state {n}: a timer has fields {sorted(t)}")
    if "lastAction" not in fields or not set(REQUIRED_ACTION_FIELDS) <= set(fields["lastAction"]):
        raise ValueError(f"{trace.name}: lastAction must be observed with {REQUIRED_ACTION_FIELDS}")
    if "now" not in variables:
        raise ValueError(f"{trace.name}: now must be observed")
    return _Shape(variables, tuple(sorted(fields.items())))


def _scalar(kind: str, v: Any, codes: dict[str, int], clients: dict[str, int]) -> str:
    if kind == "int":
        if isinstance(v, bool) or not isinstance(v, int):
            return "?"  # never equal to what TLC prints for an integer
        return str(v)
    if kind == "bool":
        return "1" if v is True else "0" if v is False else "?"
    if kind == "set":
        return "{" + ", ".join(map(str, sorted(v))) + "}"
    if kind == "pairs":  # a set of <<int, int>>, in TLC's order (element by element)
        return "{" + ", ".join(f"<<{a}, {b}>>" for a, b in sorted(v)) + "}"
    if kind == "str":
        return str(codes.get(v, -1))
    if kind == "client":
        name = v.name if isinstance(v, ModelValue) else str(v)
        return str(clients.get(name, -1))
    raise ValueError(kind)


_NO_MEMBER = 0  # the spec's NoMember


def _instance_key(instance: Sequence[str]) -> frozenset[ModelValue]:
    """An instance as the recorded states hold it: the set of its clients."""
    return frozenset(ModelValue(c) for c in instance)


def _instance_ident(n: int) -> str:
    """The TraceData name of the batch's n-th instance (1-based)."""
    return f"IN_{n}_"


def _tuple(parts: Iterable[str]) -> str:
    return "<<" + ", ".join(parts) + ">>"


def _packed_fields(shape: _Shape) -> tuple[list[str], list[str]]:
    """A timer's string and boolean fields go into one integer (fewer bytes per state: the
    .cfg is read at ~0.35 us a byte); its other fields stay as they are."""
    fs = shape.fields_of("timers")
    packed = [f for f in fs if FIELD_TYPES["timers"][f] in ("str", "bool")]
    return packed, [f for f in fs if f not in packed]


def _radix(kind: str, codes: dict[str, int]) -> int:
    return 2 if kind == "bool" else len(codes) + 2


class _ViewWriter:
    """view_text for one batch: a formatter per observed variable, made once."""

    def __init__(
        self,
        shape: _Shape,
        clients: Sequence[str],
        codes: dict[str, int],
        num_ids: int = 0,
        default_timeouts: tuple[int, int] = (0, 0),
        instances: Sequence[Sequence[str]] = (),
        protocol_order: Sequence[str] = ("range",),
    ) -> None:
        self.num_ids = num_ids
        # a protocol name is written as its place in ProtocolOrder (0: NoProtocol): the names
        # a batch uses need not be string literals of the spec
        self.protocol_rank = {p: n for n, p in enumerate(protocol_order, start=1)}
        self.protocol_rank[""] = 0
        self.instances = tuple(tuple(i) for i in instances)
        self.default_timeouts = default_timeouts
        self.shape = shape
        self.clients = tuple(clients)
        self.codes = codes
        self.index = {c: n for n, c in enumerate(clients, start=1)}
        self.index["NoClient"] = 0
        self.formatters = [self._formatter(v) for v in shape.variables]
        self.variables = shape.variables

    def _formatter(self, var: str) -> Callable[[Any], str]:
        kind = VAR_TYPES[var]
        codes, index = self.codes, self.index
        if kind == "timers":
            packed, plain = _packed_fields(self.shape)
            pk = [(f, FIELD_TYPES[var][f], _radix(FIELD_TYPES[var][f], codes)) for f in packed]
            pl = [(f, FIELD_TYPES[var][f]) for f in plain]

            def timer(t: Any) -> str:
                items = t._items if isinstance(t, TlaFunction) else t
                n = 0
                for f, k, r in pk:
                    x = items[f]
                    code = (1 if x is True else 0) if k == "bool" else codes.get(x, len(codes) + 1)
                    n = n * r + code
                rest = [_scalar(k, items[f], codes, index) for f, k in pl]
                return "<<" + ", ".join([str(n)] + rest) + ">>"

            return lambda v: "<<" + ", ".join(timer(t) for t in v) + ">>"
        if kind == "perinstance":  # a function on the instances: to TLC, a tuple in their order
            if not self.instances:
                return lambda v: "<< >>" if len(v) == 0 else "?"  # TLC's empty function
            keys = [_instance_key(i) for i in self.instances]
            return lambda v: _tuple(_scalar("int", v.get(key, _NO_MEMBER), codes, index) for key in keys)
        if kind == "instances":  # minstance: per member id, its instance's number (0: none)
            numbers = {_instance_key(i): n for n, i in enumerate(self.instances, start=1)}
            numbers[frozenset()] = 0

            def per_id(v: Any) -> str:
                sets = list(v) + [frozenset()] * (self.num_ids - len(v))
                return _tuple(str(numbers.get(frozenset(x), "?")) for x in sets)

            return per_id
        if kind == "writes":
            ws = list(FIELD_TYPES[var].items())
            return lambda v: _tuple(_tuple(_scalar(k, w[f], codes, index) for f, k in ws) for w in v)
        if kind == "record":
            fs = [(f, FIELD_TYPES[var][f]) for f in self.shape.fields_of(var)]
            return lambda v: _tuple(_scalar(k, v[f], codes, index) for f, k in fs)
        if kind == "clients":
            vk = CLIENT_VALUE_TYPES[var]
            default = CLIENT_DEFAULTS[var]
            names = self.clients

            def per_client(v: Any) -> str:
                by_name = {(c.name if isinstance(c, ModelValue) else str(c)): x for c, x in v.items()}
                return _tuple(_scalar(vk, by_name.get(c, default), codes, index) for c in names)

            return per_client
        if kind == "protocol":
            return lambda v: str(self.protocol_rank.get(v, -1))
        if kind == "protocols":  # mprotocols: per member id, its names' ranks (tuples to TLC)
            rank = self.protocol_rank

            def names_per_id(v: Any) -> str:
                lists = list(v) + [("range",)] * (self.num_ids - len(v))
                return _tuple(_tuple(str(rank.get(p, -1)) for p in ps) for ps in lists)

            return names_per_id
        if kind == "timeouts":  # a function on 1..NumIds of <<session, rebalance>>: a tuple to TLC

            def per_member(v: Any) -> str:
                pairs = list(v) + [self.default_timeouts] * (self.num_ids - len(v))
                return _tuple(
                    f"<<{_scalar('int', s, codes, index)}, {_scalar('int', r, codes, index)}>>" for s, r in pairs
                )

            return per_member
        return lambda v: _scalar(kind, v, codes, index)

    def text(self, state: dict[str, Any]) -> str:
        return "<<" + ", ".join(f(state[v]) for f, v in zip(self.formatters, self.variables)) + ">>"


def view_text(
    state: dict[str, Any],
    shape: _Shape,
    clients: Sequence[str],
    codes: dict[str, int],
    num_ids: int = 0,
    default_timeouts: tuple[int, int] = (0, 0),
    instances: Sequence[Sequence[str]] = (),
    protocol_order: Sequence[str] = ("range",),
) -> str:
    """TLC's ToString of `View` in the state the run observed."""
    return _ViewWriter(shape, clients, codes, num_ids, default_timeouts, instances, protocol_order).text(state)


def action_code(state: dict[str, Any], clients: Sequence[str]) -> int:
    """The integer that tells the module which action (client, flag) leads into `state`."""
    la = state["lastAction"]
    name = la["name"]
    if name == "Init":
        return 0
    if name == "AdvanceTime":
        return -(state["now"] + 1)
    if name not in _ACTION_INDEX:
        raise ValueError(f"not a spec action: {name!r}")
    client = la["client"]
    cname = client.name if isinstance(client, ModelValue) else str(client)
    c = 0 if cname == "NoClient" else clients.index(cname) + 1
    return _ACTION_INDEX[name] * 128 + c * 2 + (1 if la["flag"] is True else 0)


# ---------------------------------------------------------------------------------------------
# The module and its config
# ---------------------------------------------------------------------------------------------


def _ident(name: str) -> str:
    return "CL_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


def _conv(k: str, expr: str) -> str:
    return {"str": f"SC[{expr}]", "client": f"CI[{expr}]", "bool": f"B_({expr})"}.get(k, expr)


def _projection(var: str, shape: _Shape, clients: Sequence[str], instances: Sequence[Sequence[str]] = ()) -> str:
    """TLA+ for the observed part of `var`, shaped as view_text writes it."""
    kind = VAR_TYPES[var]
    conv = _conv

    if kind == "perinstance" and instances:
        return "<<" + ", ".join(f"{var}[{_instance_ident(n)}]" for n in range(1, len(instances) + 1)) + ">>"
    if kind == "instances":
        return "[m_ \\in MemberIds |-> II_(minstance[m_])]"
    if kind == "protocol":
        return "PR_(protocol)"
    if kind == "protocols":
        return "[m_ \\in MemberIds |-> [i_ \\in DOMAIN mprotocols[m_] |-> PR_(mprotocols[m_][i_])]]"
    if kind == "timers":
        return "PT_(timers)"
    if kind == "writes":
        return "PW_(writes)"
    if kind == "record":
        fs = shape.fields_of(var)
        return "<<" + ", ".join(conv(FIELD_TYPES[var][f], f"{var}.{f}") for f in fs) + ">>"
    if kind == "clients":
        vk = CLIENT_VALUE_TYPES[var]
        return "<<" + ", ".join(conv(vk, f"{var}[{_ident(c)}]") for c in clients) + ">>"
    return conv(kind, var)


def merge_constants(traces: Sequence[RecordedTrace]) -> TraceConstants:
    base = traces[0].constants
    clients: list[str] = []
    for t in traces:
        if t.constants.batch_key() != base.batch_key():
            raise ValueError(f"{t.name}: constants differ from {traces[0].name}'s")
        clients.extend(c for c in t.constants.clients if c not in clients)
    if len(clients) > MAX_CLIENTS:
        raise ValueError(f"more than {MAX_CLIENTS} clients in one batch")
    return replace(
        base,
        num_ids=max(t.constants.num_ids for t in traces),
        clients=tuple(clients) or ("c1",),
        failovers=max(t.constants.failovers for t in traces),
    )


def build_module(
    traces: Sequence[RecordedTrace],
    spec_text: str,
    *,
    stop_at: Sequence[int] | None = None,
    invariants: str = "TraceDone",
) -> tuple[str, str]:
    """(TraceData module text, TraceGroupCoordinator config text) checking `traces`.

    The checking itself is spec/TraceGroupCoordinator.tla, fixed; this writes only its data:
    the action codes, the clients, the string and client codes and the projection `View` (which
    variables and fields the recording observed), and the .cfg with the recorded states (Obs).
    `invariants` names what TLC reports: TraceDone (a line per trace that matched to its end),
    TraceProgress (a line per state reached: where each trace got stuck), TraceNotFinished (the
    classic check). With `stop_at` (per trace, the index of the recorded state whose step
    failed), the diagnosis variant: follow each trace up to that step, then take the recorded
    action there without requiring the observed state (invariant BeforeStop prints the state
    before and every successor)."""
    if not traces:
        raise ValueError("no traces")
    shape = _shape_of(traces[0])
    for t in traces[1:]:
        if _shape_of(t) != shape:
            raise ValueError(f"{t.name} observes other variables than {traces[0].name}")
    consts = merge_constants(traces)
    clients = consts.clients
    codes = _string_codes(spec_text)

    acts: list[str] = []
    obs: list[str] = []
    order = consts.protocol_order()
    writer = _ViewWriter(
        shape, clients, codes, consts.num_ids, (consts.session, consts.rebalance), consts.instances, order
    )
    for n, trace in enumerate(traces, start=1):
        last = len(trace.states) if stop_at is None else stop_at[n - 1] + 1
        codes_of = (str(action_code(s, clients)) for s in trace.states[:last])
        acts.append(f"A{n} == <<" + ",".join(codes_of) + ">>")
        for k, s in enumerate(trace.states[:last], start=1):
            obs.append(f"<<{n}, {k}, {writer.text(s)}>>")

    lines = [
        f"---- MODULE {DATA_MODULE} ----",
        f"(* Written by kgc.conformance.validate for one batch of {len(traces)} recorded runs; *)",
        f"(* checked by {TRACE_MODULE}.tla. *)",
        f"EXTENDS {SPEC_MODULE}",
        "CONSTANTS " + ", ".join(_ident(c) for c in clients),
        "",
    ]
    lines += acts
    lines.append("Acts == <<" + ", ".join(f"A{n}" for n in range(1, len(traces) + 1)) + ">>")
    lines.append("CLs == <<" + ", ".join(_ident(c) for c in clients) + ">>")
    lines.append("Diagnosing == " + ("TRUE" if stop_at is not None else "FALSE"))
    lines.append("SC == (" + " @@ ".join(f'"{s}" :> {i}' for s, i in codes.items()) + ")")
    indices = (f"{_ident(c)} :> {i}" for i, c in enumerate(clients, start=1))
    lines.append("CI == (NoClient :> 0 @@ " + " @@ ".join(indices) + ")")
    lines.append("B_(x) == IF x THEN 1 ELSE 0")
    for name, index in (("TSessionOf", 1), ("TRebalanceOf", 2)):  # SessionOf / RebalanceOf overridden
        arms = [f"c = {_ident(c)} -> {t[index]}" for t in consts.client_timeouts for c in [t[0]]]
        default = consts.session if index == 1 else consts.rebalance
        lines.append(f"{name}(c) == " + (f"CASE {' [] '.join(arms)} [] OTHER -> {default}" if arms else str(default)))
    # ProtocolsOf / ProtocolOrder overridden; a protocol name observed as its rank
    arms = [f"c = {_ident(c)} -> " + _tuple(f'"{p}"' for p in ps) for c, ps in consts.client_protocols]
    lines.append(
        "TProtocolsOf(c) == " + (f'CASE {" [] ".join(arms)} [] OTHER -> <<"range">>' if arms else '<<"range">>')
    )
    lines.append("TProtocolOrder == " + _tuple(f'"{p}"' for p in order))
    lines.append('PR_(p) == IF p = "" THEN 0 ELSE Rank(p)')
    if "timers" in shape.variables:
        packed, plain = _packed_fields(shape)
        pack = "0"
        for f in packed:
            kind = FIELD_TYPES["timers"][f]
            pack = f"({pack}) * {_radix(kind, codes)} + {_conv(kind, 't.' + f)}"
        items = ", ".join([pack] + [_conv(FIELD_TYPES["timers"][f], "t." + f) for f in plain])
        lines.append(f"PT1_(t) == <<{items}>>")
        lines.append("PT_(ts) == IF ts = <<>> THEN <<>> ELSE [k_ \\in 1..Len(ts) |-> PT1_(ts[k_])]")
    if "writes" in shape.variables:
        wf = ", ".join(_conv(k, "w." + f) for f, k in FIELD_TYPES["writes"].items())
        lines.append(f"PW1_(w) == <<{wf}>>")
        lines.append("PW_(ws) == IF ws = <<>> THEN <<>> ELSE [k_ \\in 1..Len(ws) |-> PW1_(ws[k_])]")
    for n, instance in enumerate(consts.instances, start=1):
        lines.append(f"{_instance_ident(n)} == {{" + ", ".join(_ident(c) for c in instance) + "}")
    arms = [f"I = {_instance_ident(n)} -> {n}" for n in range(1, len(consts.instances) + 1)]
    lines.append("II_(I) == " + (f"CASE {' [] '.join(arms)} [] OTHER -> 0" if arms else "0"))
    parts = (_projection(v, shape, clients, consts.instances) for v in shape.variables)
    lines.append("View == <<" + ",\n         ".join(parts) + ">>")
    lines.append("=" * 40)
    module_text = "\n".join(lines) + "\n"

    max_group = consts.max_group_size if consts.max_group_size is not None else consts.num_ids + 1
    cfg = [
        "INIT TraceInit",
        "NEXT TraceNext",
        "CONSTANTS",
        "    Clients = {" + ", ".join(clients) + "}",
        "    NoClient = NoClient",
    ]
    cfg += [f"    {_ident(c)} = {c}" for c in clients]
    cfg += [
        f"    NumIds = {consts.num_ids}",
        f"    Session = {consts.session}",
        f"    Rebalance = {consts.rebalance}",
        f"    MinSession = {consts.min_session}",
        f"    MaxSession = {consts.max_session}",
        f"    InitialDelay = {consts.initial_delay}",
        f"    NewMemberTimeout = {consts.new_member_timeout}",
        f"    MaxGroupSize = {max_group}",
        "    JoinFlavours = {TRUE, FALSE}",
        '    ClientFaults = {"crash", "abandon", "leave", "rejoin", "change", "resync", "early-rejoin",'
        ' "stale-heartbeat", "admin-leave", "bad-protocol"}',
        f"    MaxFailovers = {max(1, consts.failovers)}",
        '    CommitPhases = {"Joined", "Stable"}',
        "    Normalize = FALSE",
        '    Bug = "none"',
        f"    StoreAsync = {'TRUE' if consts.store_async else 'FALSE'}",
        "    StoreErrors <- AllAppendErrors",
        "    SessionOf <- TSessionOf",
        "    RebalanceOf <- TRebalanceOf",
        "    ProtocolsOf <- TProtocolsOf",
        "    ProtocolOrder <- TProtocolOrder",
        "    LoadWindow = TRUE",
    ]
    if consts.instances:  # static members (GroupCoordinator.tla's Instances, overridden)
        cfg += [
            "    Instances = {" + ", ".join("{" + ", ".join(i) + "}" for i in consts.instances) + "}",
            "    StaticSkipAssignment = {TRUE, FALSE}",
        ]
    cfg.append(f"INVARIANTS {invariants}" if stop_at is None else "INVARIANT BeforeStop")
    cfg.append("CONSTANT Obs = {" + ", ".join(f'"{o}"' for o in obs) + "}")
    return module_text, "\n".join(cfg) + "\n"


def trace_module_calls(module_text: str) -> dict[int, str]:
    """Do's arms in the checked-in TraceGroupCoordinator.tla, code -> call (for the test that
    keeps ACTIONS and the module numbering the same actions alike)."""
    return {int(n): call.strip() for n, call in re.findall(r"a \\div 128 = (\d+) -> (.+)", module_text)}


# ---------------------------------------------------------------------------------------------
# Running TLC
# ---------------------------------------------------------------------------------------------


def _spec_file() -> Path:
    from kgc.spec.catalog import spec_root

    return spec_root() / f"{SPEC_MODULE}.tla"


def _run(
    traces: Sequence[RecordedTrace],
    run_dir: Path,
    spec: Path,
    *,
    stop_at: Sequence[int] | None = None,
    timeout: float | None = None,
    invariants: str = "TraceDone",
) -> tuple[Any, Path]:
    started = time.monotonic()
    text, cfg = build_module(traces, spec.read_text(encoding="utf-8"), stop_at=stop_at, invariants=invariants)
    options = ["-deadlock"]
    violations = stop_at is not None or "TraceNotFinished" in invariants
    if violations:
        options.append("-continue")
    built = time.monotonic()
    trace_module = spec.with_name(f"{TRACE_MODULE}.tla")
    result, out = run_trace_module(
        run_dir, trace_module, DATA_MODULE, text, cfg, (spec,), timeout=timeout, tlc_options=options
    )
    with _TIMING_LOCK:
        TIMINGS["build"] += built - started
        TIMINGS["tlc"] += time.monotonic() - built
    _require_verdict(result, out, violations)
    return result, out


def _require_verdict(result: Any, out: Path, violations_expected: bool) -> None:
    fine = {Outcome.PASSED, Outcome.NO_INITIAL_STATES}
    if violations_expected:
        fine.add(Outcome.INVARIANT_VIOLATED)
    if result.outcome not in fine:
        what = result.outcome.value if result.outcome else "no verdict"
        raise ValidationError(f"TLC {what}: {result.error_line or ''} (output in {out})")


def _progress(out: Path, n: int) -> list[int]:
    """Per trace, the furthest position TLC reported (1-based; 0: none)."""
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


def _check_batch(
    traces: Sequence[RecordedTrace], run_dir: Path, spec: Path, timeout: float | None, classic: bool
) -> list[TraceVerdict]:
    """One TLC run for the batch; a second one, over the traces that did not match to the
    end only, finds how far each got."""
    invariants = "TraceDone TraceNotFinished" if classic else "TraceDone"
    _, out = _run(traces, run_dir, spec, timeout=timeout, invariants=invariants)
    done = _progress(out, len(traces))
    failed = [n for n, (t, r) in enumerate(zip(traces, done)) if r < len(t.states)]
    reached = {n: len(traces[n].states) for n in range(len(traces)) if n not in failed}
    if failed:
        _, out = _run(
            [traces[n] for n in failed], run_dir / "locate", spec, timeout=timeout, invariants="TraceProgress"
        )
        for n, r in zip(failed, _progress(out, len(failed))):
            reached[n] = min(r, len(traces[n].states) - 1)
    verdicts = []
    for n, trace in enumerate(traces):
        r = reached[n]
        if r >= len(trace.states):
            verdicts.append(TraceVerdict(trace.name, trace.steps, True, stopped=trace.stopped))
            continue
        verdicts.append(
            TraceVerdict(
                trace.name,
                trace.steps,
                False,
                failed_step=r,
                stopped=trace.stopped,
                action=_action_text(trace.states[r]["lastAction"]),
                origin=trace.origins[r] if r < len(trace.origins) else None,
                reason="the initial state is not the spec's Init" if r == 0 else None,
            )
        )
    return verdicts


def _with_faults(trace: RecordedTrace, verdict: TraceVerdict) -> TraceVerdict:
    """The verdict, failed at the first coordinator fault the recording saw (an internal error
    or a duplicate answer, conformance/faults.py) when that comes before any spec mismatch: the
    states can all be the spec's while the coordinator swallowed an exception."""
    if not trace.faults:
        return verdict
    index, what = trace.faults[0]
    if not verdict.matched and verdict.failed_step is not None and verdict.failed_step < index:
        return verdict
    index = min(index, len(trace.states) - 1)
    return TraceVerdict(
        trace.name,
        trace.steps,
        False,
        failed_step=index,
        action=_action_text(trace.states[index]["lastAction"]),
        origin=trace.origins[index] if index < len(trace.origins) else None,
        reason=f"the coordinator recorded a fault: {what}",
        diffs=[StepDiff("(internal error)", "none", what)],
        stopped=trace.stopped,
    )


def _action_text(la: Any) -> str:
    name = la["name"]
    client = la.get("client")
    if isinstance(client, ModelValue) and client.name != "NoClient":
        flag = f", {str(la.get('flag')).upper()}" if name in ("JoinGroupUnknownMember", "JoinGroupKnownMember") else ""
        return f"{name}({client.name}{flag})"
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
                    rest = event.body.strip().partition("\n")[2]
                    try:
                        current.append(parse_state(rest))
                    except ValueError:
                        current.append({})
    return traces


def _project(var: str, value: Any, shape: _Shape) -> Any:
    if var in ("lastAction", "store") and isinstance(value, TlaFunction):
        return TlaFunction({f: value[f] for f in shape.fields_of(var) if f in value})
    if var == "timers" and isinstance(value, tuple):
        return tuple(TlaFunction({f: t[f] for f in shape.fields_of(var) if f in t}) for t in value)
    return value


#: The order differences are reported in: the group first (it usually says what went wrong),
#: then the response and the clients, then the timers and the clock (which mostly follow).
_REPORT_ORDER = (
    "loaded",
    "gstate",
    "generation",
    "leader",
    "members",
    "pending",
    "awaitingJoin",
    "awaitingSync",
    "newMembers",
    "pendingSync",
    "plan",
    "newMemberAdded",
    "mtimeouts",
    "nextId",
    "store",
    "writes",
    "staticMembers",
    "minstance",
    "storeStatic",
    "loading",
    "protocol",
    "mprotocols",
    "ackLog",
    "failovers",
    "genMembers",
    "genLeaders",
    "lastAction",
    "cphase",
    "cmember",
    "cgen",
    "cleader",
    "cmembers",
    "cassign",
    "cwait",
    "timers",
    "now",
)


def _diff(spec_state: dict[str, Any], observed: dict[str, Any], shape: _Shape) -> list[StepDiff]:
    diffs = []
    for var in sorted(shape.variables, key=lambda v: _REPORT_ORDER.index(v) if v in _REPORT_ORDER else 99):
        if var not in spec_state:
            continue
        sv = _project(var, spec_state[var], shape)
        ov = _project(var, observed[var], shape)
        kind = VAR_TYPES[var]
        if kind == "clients":
            for c, x in ov.items():
                y = sv.get(c) if isinstance(sv, TlaFunction) else None
                if x != y:
                    diffs.append(StepDiff(f"{var}[{c}]", y, x))
        elif kind == "record":
            for f_, x in ov.items():
                y = sv.get(f_) if isinstance(sv, TlaFunction) else None
                if x != y:
                    diffs.append(StepDiff(f"{var}.{f_}", y, x))
        elif sv != ov:
            diffs.append(StepDiff(var, sv, ov))
    return diffs


def _context(before: dict[str, Any], la: Any) -> str:
    """For an action the spec could not take: what decides whether it is enabled, in the
    spec's state where it was tried."""
    parts = []
    client = la.get("client") if la is not None else None
    if isinstance(client, ModelValue) and client.name != "NoClient":
        for var in ("cphase", "cmember", "cgen", "cleader"):
            if var in before and isinstance(before[var], TlaFunction):
                parts.append(f"{var}[{client.name}]={_show(before[var].get(client))}")
    else:
        head = before.get("timers", ())[:1]
        parts.append(f"head timer {_show(head[0]) if head else 'none'}")
    for var in ("gstate", "members", "pending", "loaded"):
        if var in before:
            parts.append(f"{var}={_show(before[var])}")
    return "the spec's state there: " + ", ".join(parts)


def diagnose(
    traces: Sequence[RecordedTrace],
    verdicts: Sequence[TraceVerdict],
    run_dir: Path,
    spec: Path | None = None,
    timeout: float | None = None,
) -> None:
    """Fill in `reason` and `diffs` of the failed verdicts (in place)."""
    spec = spec or _spec_file()
    failing = [(t, v) for t, v in zip(traces, verdicts) if not v.matched and v.failed_step]
    for _, v in failing[MAX_EXPLAINED:]:
        v.reason = v.reason or f"not diagnosed (only the first {MAX_EXPLAINED} failures of a batch are)"
    failing = failing[:MAX_EXPLAINED]
    if not failing:
        return
    sub = [t for t, _ in failing]
    stops = [v.failed_step for _, v in failing]
    shape = _shape_of(sub[0])
    _, out = _run(sub, run_dir, spec, stop_at=stops, timeout=timeout)
    by_trace: dict[int, list[list[dict[str, Any]]]] = {}
    for states in _violation_traces(out):
        if states and "tr" in states[-1]:
            by_trace.setdefault(states[-1]["tr"], []).append(states)
    for n, (trace, verdict) in enumerate(failing, start=1):
        stop = stops[n - 1] + 1  # 1-based position of the failing state
        found = by_trace.get(n, [])
        successors = [s[-1] for s in found if s[-1].get("ti") == stop]
        observed = trace.states[stop - 1]
        if not successors:
            verdict.reason = f"the spec cannot take {verdict.action} here (not enabled)"
            before = [s[-1] for s in found if s[-1].get("ti") == stop - 1]
            if before:
                verdict.reason += "; " + _context(before[0], observed.get("lastAction"))
            continue
        verdict.diffs = min((_diff(s, observed, shape) for s in successors), key=len)
        many = f"{len(successors)} spec successors, closest shown" if len(successors) > 1 else "spec successor"
        verdict.reason = f"the spec takes {verdict.action} but ends elsewhere ({many})"


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------


def _batches(traces: Sequence[RecordedTrace], jobs: int, max_states: int) -> list[list[int]]:
    """Traces with equal constants and shape, cut into at least `jobs` pieces (one TLC process
    per core) of at most `max_states` recorded states."""
    groups: dict[Any, list[int]] = {}
    for n, t in enumerate(traces):
        groups.setdefault((t.constants.batch_key(), _shape_of(t)), []).append(n)
    out: list[list[int]] = []
    for members in groups.values():
        total = sum(len(traces[n].states) for n in members)
        pieces = max(1, min(len(members), max(math.ceil(total / max_states), jobs if total > 2000 else 1)))
        chunks: list[list[int]] = [[] for _ in range(pieces)]
        states = 0
        for n in members:  # piece k takes the traces whose states start in its k-th share
            chunks[min(pieces - 1, states * pieces // total)].append(n)
            states += len(traces[n].states)
        out.extend(c for c in chunks if c)
    return out


def validate_traces(
    traces: Sequence[RecordedTrace],
    *,
    work_dir: Path | None = None,
    jobs: int | None = None,
    max_states: int = 120_000,
    timeout: float | None = None,
    explain: bool = True,
    classic: bool = False,
    keep: bool = False,
    on_batch: Callable[[int, int, list[TraceVerdict]], None] | None = None,
) -> BatchReport:
    """Check every trace with TLC; batches run `jobs` TLC processes at a time (default: one per
    core). Verdicts come back in the order of `traces`."""
    started = time.monotonic()
    spec = _spec_file()
    traces = list(traces)
    for t in traces:
        _shape_of(t)
    base = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="kgc-validate-"))
    base.mkdir(parents=True, exist_ok=True)
    workers = max(1, jobs or os.cpu_count() or 1)
    batches = _batches(traces, workers, max_states)
    verdicts: list[TraceVerdict | None] = [None] * len(traces)
    errors: list[str] = []

    stopped = threading.Event()  # thrown by an interrupt: the worker threads start no more TLC

    def one(b: int, idx: list[int]) -> tuple[int, list[int], list[TraceVerdict] | str]:
        sub = [traces[n] for n in idx]
        if stopped.is_set():  # a batch taken just before the pool's queue was cancelled
            raise TlcStopped(b)
        try:
            with stoppable_by(stopped):
                vs = _check_batch(sub, base / f"batch{b}", spec, timeout, classic)
                if explain and not all(v.matched for v in vs):
                    diagnose(sub, vs, base / f"batch{b}-diag", spec, timeout)
            return b, idx, [_with_faults(t, v) for t, v in zip(sub, vs)]
        except (ValidationError, ValueError) as e:
            return b, idx, f"batch {b} ({len(idx)} traces, first {sub[0].name}): {e}"

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            try:
                for b, idx, res in pool.map(lambda a: one(*a), list(enumerate(batches))):
                    if isinstance(res, str):
                        errors.append(res)
                        continue
                    for n, v in zip(idx, res):
                        verdicts[n] = v
                    if on_batch is not None:
                        on_batch(b, len(batches), res)
            except BaseException:
                # Interrupted (Ctrl-C reaches the main thread only): the TLC runs of the worker
                # threads are stopped here, or leaving the pool would wait for every batch.
                pool.shutdown(wait=False, cancel_futures=True)
                stop_all_tlc(stopped)
                if not keep and work_dir is None:
                    shutil.rmtree(base, ignore_errors=True)
                raise
    except BaseException:
        # The pool is left only when every worker thread is done, including a step one of them
        # began after the interrupt (its folders; its TLC was refused): remove those too.
        stop_all_tlc(stopped)
        if not keep and work_dir is None:
            shutil.rmtree(base, ignore_errors=True)
        raise
    if not keep and work_dir is None and not errors:
        shutil.rmtree(base, ignore_errors=True)
    return BatchReport(
        [v for v in verdicts if v is not None],
        time.monotonic() - started,
        len(batches),
        sum(len(t.states) for t in traces),
        errors,
    )


def validate_files(paths: Iterable[Path], **options: Any) -> BatchReport:
    return validate_traces([read_trace(Path(p)) for p in paths], **options)


def _show(v: Any) -> str:
    if isinstance(v, TlaFunction) and "kind" in v and "deadline" in v:
        flags = "".join(f" {f}" for f in ("stale", "orphan") if v.get(f) is True)
        member = f"({v['member']})" if v.get("member") else ""
        gen = f" gen {v['gen']}" if v.get("kind") == "Sync" and "gen" in v else ""
        return f"{v['kind']}{member}@{v['deadline']}{gen}{flags}"
    if isinstance(v, frozenset):
        return "{" + ", ".join(str(x) for x in sorted(v, key=sort_key)) + "}"
    if isinstance(v, TlaFunction):
        return "[" + ", ".join(f"{_show(k)}: {_show(x)}" for k, x in v.items()) + "]"
    if isinstance(v, tuple):
        return "<<" + ", ".join(_show(x) for x in v) + ">>"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    return str(v)
