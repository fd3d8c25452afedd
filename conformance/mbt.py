"""Spec -> implementation: random behaviours of the spec, replayed on the coordinator.

`simulate` has TLC draw random behaviours of a model (`-simulate file=...,num=N -depth D
-seed S`, one worker, so a seed always gives the same traces) and writes each as ITF JSON with
the model's constants in its #meta. `conform` drives the implementation through each trace's
actions (abstraction.apply_action) and compares the abstract state (abstraction.abstract_state)
with the spec's after every step; the first difference is the trace's divergence.

Two places where Kafka leaves a choice open (it iterates a HashMap of member ids), and the
spec and the implementation each fixed one: the new leader when the leader goes or did not
rejoin (the spec lets any candidate lead, the implementation takes the first in its member
order), and the order of timers made in one step for several members (the spec makes them in
ascending id, the implementation in its member order). The driver steers the implementation to
the spec's choice (abstraction.prefer_leader, abstraction.tie_to_fire): both are what Kafka
does for some HashMap order. Timers made together are compared as a set. Every other
difference is a divergence: there is no "inconclusive".
"""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from operator import is_, itemgetter
from pathlib import Path
from typing import Any

from kgc.conformance.abstraction import (
    SPEC_VARIABLES,
    TIMER_STEPS,
    AbstractionError,
    SpecConstants,
    StepResult,
    World,
    abstract_state,
    apply_spec_step,
    tie_to_fire,
    timer_record,
)
from kgc.conformance.abstraction.actions import VIEW_ONLY_ACTIONS, apply_client_event, client_name
from kgc.conformance.abstraction.incremental import IncrementalAbstraction
from kgc.conformance.abstraction.state import CLIENT_VARIABLES, NO_STORE
from kgc.conformance.faults import new_faults
from kgc.conformance.recorded_trace import write_trace
from kgc.conformance.recorder import RunRecorder
from kgc.conformance.trace_schema import check_trace_shape
from kgc.impl.coordinator import GroupCoordinator
from kgc.spec.itf import read_itf, write_itf
from kgc.spec.jsonfile import InputError
from kgc.spec.tlc_result import CheckResult, Outcome, Trace, TraceState
from kgc.spec.values import TlaValue, format_value, parse_state, parse_value, sort_key

__all__ = [
    "ConformReport",
    "Divergence",
    "SimulationResult",
    "TraceOutcome",
    "compare_states",
    "conform",
    "conform_states",
    "conform_trace",
    "describe_action",
    "itf_files",
    "load_trace",
    "parse_simulation_file",
    "simulate",
    "simulation_config",
]

#: The order differences are reported in: the group's own state first (it usually says what
#: went wrong), then the clients' views, then the timers and the clock (which mostly follow).
REPORT_ORDER: tuple[str, ...] = (
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
    "failovers",
    "genMembers",
    "genLeaders",
    "leaderLog",
    "writes",
    "staticMembers",
    "minstance",
    "storeStatic",
    "loading",
    "protocol",
    "mprotocols",
    "ackLog",
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
_LA_FIELDS = ("name", "client", "member", "gen", "flag", "newMember", "dt")


# ----------------------------------------------------------------------------------------------
# kgc simulate
# ----------------------------------------------------------------------------------------------


@dataclass
class SimulationResult:
    model: str
    files: list[Path]
    seed: int
    depth: int
    states: int
    tlc_seconds: float
    convert_seconds: float
    run_dir: Path
    check: CheckResult
    counterexample: Path | None = None

    @property
    def ok(self) -> bool:
        return self.check.outcome in (Outcome.PASSED, None) and self.counterexample is None


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _StateReader:
    """tla_values.parse_state's job for the states of one trace, each `var = value` text parsed
    once per memo: consecutive states (and the traces of one simulation) repeat most of them
    verbatim, and parsing dominates converting a trace. TLC starts every variable's conjunct
    with `/\\ ` at the start of a line and indents a value's continuation lines, so a plain
    split finds them. A step changes few variables and TLC prints them in one order, so a
    line equal to the previous state's line at its place takes that line's (name, value)
    after a string comparison (memcmp), not a hash and lookup of the whole text."""

    __slots__ = ("memo", "lines", "pairs")

    def __init__(self, memo: dict[str, Any]) -> None:
        self.memo = memo
        self.lines: list[str] = []
        self.pairs: list[tuple[str, TlaValue]] = []

    def read(self, body: str) -> dict[str, TlaValue]:
        lines = body.split("\n/\\ ")
        if len(lines) == 1:  # a single variable is printed without `/\\ `
            return parse_state(body)
        del lines[0]
        memo = self.memo
        get = memo.get
        if len(lines) == len(self.lines):
            pairs = [
                pair if line == before else (get(line) or _parse_line(line, memo))
                for line, before, pair in zip(lines, self.lines, self.pairs)
            ]
        else:
            pairs = [get(line) or _parse_line(line, memo) for line in lines]
        self.lines, self.pairs = lines, pairs
        return dict(pairs)


def _parse_line(chunk: str, memo: dict[str, Any]) -> tuple[str, TlaValue]:
    name, sep, text = chunk.partition(" = ")
    if not sep or not _NAME.fullmatch(name):
        raise ValueError(f"not a TLC state line: {chunk[:60]!r}")
    key = "\0" + text.strip()  # value texts and whole lines share the memo, apart
    value = memo.get(key)
    if value is None:
        value = memo[key] = parse_value(key[1:])
    got = memo[chunk] = (name, value)
    return got


def parse_simulation_file(text: str, memo: dict[str, Any] | None = None) -> Trace:
    """One trace file of TLC 2.15's `-simulate file=PREFIX`: `STATE_i ==` blocks of
    `/\\ var = value` lines. TLC names no actions there; lastAction does.

    `memo` (value text -> value) may be shared by the files of one simulation: traces of one
    model repeat most values (every Init, the empty sets, the common timer lists), and values
    are immutable, so a value parsed once serves every trace. The cyclic garbage collector is
    paused while a file is read: the values, dicts and states made here hold no cycles (nothing
    for it to find), yet its passes, triggered by their allocations, would walk the memo and
    every state made so far, most of the CPU time of a trace's reading that is not parsing."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return _read_states(text, {} if memo is None else memo)
    finally:
        if paused:
            gc.enable()


def _read_states(text: str, memo: dict[str, Any]) -> Trace:
    states: list[TraceState] = []
    reader = _StateReader(memo)
    parts = text.split("\nSTATE_")
    last = len(parts) - 1
    for n, part in enumerate(parts[1:], 1):
        number, sep, body = part.partition(" ==")
        if not sep or not number.isdigit():
            raise ValueError(f"not a TLC state header: STATE_{part[:40]!r}")
        if n == last:
            footer = body.find("\n=====")
            if footer >= 0:
                body = body[:footer]
        values = reader.read(body)
        la = values.get("lastAction")
        action = str(la["name"]) if la is not None and "name" in la else "?"
        states.append(TraceState(int(number), action, None, values))
    return Trace(states=states)


def simulate(
    model: str,
    traces: int,
    depth: int,
    seed: int,
    out: Path,
    *,
    ms_per_unit: int = 1000,
    timeout: float | None = None,
    spec_dir: Path | None = None,
    max_heap: str | None = None,
) -> SimulationResult:
    """Draw `traces` random behaviours of `depth` states; write out/trace-NNNNN.itf.json.

    TLC runs in out/tlc/ (kgc.spec.tlc.run_tlc) on out/NAME.simulate.cfg (the model without
    its temporal properties), writing its raw trace files there; they are converted and
    removed. An invariant the model violates while simulating stops TLC:
    its trace is written as out/counterexample.itf.json.
    """
    from kgc.spec.catalog import resolve_model
    from kgc.spec.tlc import TlcJob, run_tlc

    if traces < 1 or depth < 1:
        raise ValueError("traces and depth must be at least 1")
    found = resolve_model(model, spec_dir)
    constants = SpecConstants.from_cfg(found.config, ms_per_unit)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    run_dir = out / "tlc"
    if run_dir.exists():
        raise FileExistsError(f"{run_dir} exists: give an empty --out folder")
    run_dir.mkdir()
    raw = (run_dir / "traces").resolve()
    raw.mkdir()
    config = out / f"{found.name}.simulate.cfg"
    config.write_text(simulation_config(found.config.read_text(encoding="utf-8")), encoding="utf-8")
    job = TlcJob(
        module=found.module,
        config=config,
        modules=found.modules,
        workers=1,
        timeout=timeout,
        max_heap=max_heap,
        tlc_options=(
            "-simulate",
            f"file={raw / 'tr'},num={traces}",
            "-depth",
            str(depth),
            "-seed",
            str(seed),
            "-deadlock",
        ),
    )
    started = time.monotonic()
    check = run_tlc(job, run_dir)
    tlc_seconds = time.monotonic() - started
    if check.outcome is Outcome.CRASHED and check.tlc_exit_code == 0 and check.trace is None and not check.timed_out:
        # A simulation that ends normally prints no verdict message (no 2193), only exit 0.
        check.outcome, check.error = Outcome.PASSED, None

    started = time.monotonic()
    meta = {"model": found.name, "constants": constants.to_json(), "seed": seed, "depth": depth}
    files: list[Path] = []
    states = 0
    for n, path in enumerate(_raw_trace_files(raw)):
        trace = parse_simulation_file(path.read_text(encoding="utf-8"))
        if not trace.states:
            continue
        target = out / f"trace-{n:05d}.itf.json"
        write_itf(
            target,
            trace,
            source=found.module.name,
            description=f"kgc simulate {found.name} seed {seed} trace {n}",
            meta={**meta, "trace": n},
        )
        files.append(target)
        states += len(trace.states)
        path.unlink()
    counterexample = None
    if check.trace is not None and check.trace.states and check.outcome not in (Outcome.PASSED, None):
        counterexample = out / "counterexample.itf.json"
        write_itf(
            counterexample,
            check.trace,
            source=found.module.name,
            description=check.error or "",
            meta={**meta, "outcome": check.outcome.value, "violated": check.violated},
        )
    return SimulationResult(
        found.name, files, seed, depth, states, tlc_seconds, time.monotonic() - started, run_dir, check, counterexample
    )


_CFG_SECTION = re.compile(
    r"^\s*(SPECIFICATION|INIT|NEXT|INVARIANTS?|PROPERT(?:Y|IES)|CONSTRAINTS?|ACTION_CONSTRAINTS?|"
    r"SYMMETRY|VIEW|CHECK_DEADLOCK|ALIAS|POSTCONDITION|CONSTANTS?)\b"
)


def simulation_config(text: str) -> str:
    """The model's config without its PROPERTY sections: on a finite random trace TLC 2.15
    checks a liveness property as if the trace ended by stuttering, so every unfinished
    rebalance would be reported. Properties are `kgc check`'s job; invariants stay."""
    out, dropping = [], False
    for line in text.splitlines():
        head = _CFG_SECTION.match(line.split("\\*", 1)[0])
        if head:
            dropping = head.group(1).startswith("PROPERT")
        if not dropping:
            out.append(line)
    return "\n".join(out) + "\n"


def _raw_trace_files(raw: Path) -> list[Path]:
    """TLC names them PREFIX_<worker>_<n>; in n order, so trace numbers follow TLC's."""

    def key(p: Path) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", p.name[len("tr") :]))

    return sorted((p for p in raw.iterdir() if p.name.startswith("tr_")), key=key)


# ----------------------------------------------------------------------------------------------
# kgc conform
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Divergence:
    """The first step at which the implementation did not do what the spec did."""

    step: int  # index of the spec state (0 = Init) that did not match
    action: str  # the spec step, with its parameters
    variable: str
    spec_value: str
    impl_value: str
    requests: tuple[str, ...] = ()
    also: tuple[str, ...] = ()  # the other variables that differ at that step

    def __str__(self) -> str:
        calls = f" [impl: {'; '.join(self.requests)}]" if self.requests else ""
        more = f" (also differ: {', '.join(self.also)})" if self.also else ""
        return (
            f"step {self.step} {self.action}: {self.variable}: spec {self.spec_value}, "
            f"implementation {self.impl_value}{more}{calls}"
        )


@dataclass
class TraceOutcome:
    file: str
    steps: int  # steps performed and matched
    total: int  # steps in the trace
    divergence: Divergence | None = None
    error: str | None = None  # the trace could not be run at all

    @property
    def verdict(self) -> str:
        if self.error:
            return "ERROR"
        if self.divergence:
            return "DIVERGED"
        return "CONFORMS"


@dataclass
class ConformReport:
    outcomes: list[TraceOutcome] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, verdict: str) -> int:
        return sum(1 for o in self.outcomes if o.verdict == verdict)

    @property
    def steps(self) -> int:
        return sum(o.steps for o in self.outcomes)

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0

    @property
    def ok(self) -> bool:
        return self.count("DIVERGED") == 0 and self.count("ERROR") == 0

    @property
    def first_divergence(self) -> TraceOutcome | None:
        return next((o for o in self.outcomes if o.divergence is not None), None)

    def summary(self) -> str:
        return (
            f"{len(self.outcomes)} traces: {self.count('CONFORMS')} conform, "
            f"{self.count('DIVERGED')} diverged"
            + (f", {self.count('ERROR')} errors" if self.count("ERROR") else "")
            + f"; {self.steps} steps in {self.seconds:.2f} s "
            f"({self.steps_per_second:,.0f} steps/s)"
        )


def describe_action(la: Mapping[str, Any]) -> str:
    """`Name(client, member=.., gen=.., flag=..)` with only the parameters that say something."""
    name = str(la.get("name", "?"))
    parts = []
    client = la.get("client")
    if client is not None and str(client) != "NoClient":
        parts.append(str(client))
    for key, none in (("member", 0), ("gen", -1), ("newMember", 0), ("dt", 0)):
        if key in la and la[key] != none:
            parts.append(f"{key}={format_value(la[key])}")
    if la.get("flag"):
        parts.append("flag=TRUE")
    if "resp" in la and la["resp"] not in ("NONE",):
        parts.append(f"resp={la['resp']}")
    return f"{name}({', '.join(parts)})"


def _timer_runs(timers: Sequence[Any]) -> Iterator[tuple[int, int]]:
    """[start, end) of each maximal run of timers with one deadline."""
    start = 0
    for n in range(1, len(timers) + 1):
        if n == len(timers) or timers[n]["deadline"] != timers[start]["deadline"]:
            yield start, n
            start = n


def _segments(world: World, ops: Sequence[Any], a: int, b: int) -> Iterator[tuple[int, int, bool]]:
    """Split a run of equal deadlines into consecutive stretches of ops made in one step;
    a stretch of several is one loop over members (the flag: its order is Kafka's HashMap's)."""
    start = a
    for n in range(a + 1, b + 1):
        if n == b or world.born_step(ops[n]) != world.born_step(ops[start]):
            batch = n - start > 1 and world.born_step(ops[start]) is not None
            yield start, n, batch
            start = n


def _timers_match(spec: Sequence[Any], impl: Sequence[Any], ops: Sequence[Any], world: World) -> int | None:
    """None if equal up to the order within batches of simultaneous timers made in one step;
    else the first index (0-based) that differs."""
    if tuple(spec) == tuple(impl):
        return None
    if len(spec) == len(impl) == len(ops):
        ok = True
        for a, b in _timer_runs(impl):
            for x, y, batch in _segments(world, ops, a, b):
                if tuple(spec[x:y]) == tuple(impl[x:y]):
                    continue
                if batch and sorted(spec[x:y], key=sort_key) == sorted(impl[x:y], key=sort_key):
                    continue
                ok = False
        if ok:
            return None
    for n, (s, i) in enumerate(zip(spec, impl)):
        if s != i:
            return n
    return min(len(spec), len(impl))


def _show(value: Any) -> str:
    return format_value(value) if value is not None else "(none)"


def compare_states(
    spec: Mapping[str, TlaValue],
    impl: Mapping[str, TlaValue],
    world: World,
    ops: Sequence[Any] = (),
    since: tuple[Mapping[str, TlaValue], AbstractSet[str]] | None = None,
    among: Sequence[str] = REPORT_ORDER,
) -> list[tuple[str, str, str]]:
    """(variable, spec value, implementation value) for every variable that differs, in
    REPORT_ORDER; timers made together in one step may be in either order (module doc).
    `since` = (the spec state last compared equal, the implementation variables changed
    since): a variable unchanged on both sides (the very same objects) is skipped.
    `among`: the variables that can differ (in REPORT_ORDER), when the caller knows."""
    out = []
    before, changed = since if since is not None else ({}, _VARIABLES)
    # one comprehension over the names: most variables are the same objects on both sides;
    # subscripts, not .get calls, and no `in changed` when nothing changed on our side (the
    # client events' usual case): a name missing on a side takes the name-by-name test below
    names: list[str] | None = None
    if changed is not _VARIABLES:
        try:
            if changed:
                names = [n for n in among if (n in changed and n in spec) or spec[n] is not before[n]]
            else:
                names = [n for n in among if spec[n] is not before[n]]
        except KeyError:  # a name missing on a side: the name-by-name test below
            names = None
    if names is None:
        get = before.get
        names = [n for n in among if n in spec and (n in changed or spec[n] is not get(n))]
    for name in names:
        s, i = spec[name], impl.get(name)
        if name == "timers":
            n = _timers_match(s, i, ops, world)
            if n is not None:
                out.append(
                    (
                        f"timers[{n + 1}]",
                        _show(s[n]) if n < len(s) else f"(none: {len(s)} timers)",
                        _show(i[n]) if n < len(i) else f"(none: {len(i)} timers)",
                    )
                )
        elif s != i:
            out.append((name, _show(s), _show(i)))
    return out


def load_trace(
    path: Path, constants: SpecConstants | None = None
) -> tuple[SpecConstants, list[dict[str, TlaValue]], dict[str, Any]]:
    """An ITF trace with the constants to run it under: given, else its #meta's constants
    (kgc simulate), else its model's config (kgc check)."""
    meta, states = read_itf(Path(path))
    if constants is None:
        if "constants" in meta:
            constants = SpecConstants.from_json(meta["constants"])
        elif "model" in meta:
            constants = SpecConstants.from_model(meta["model"])
        else:
            raise AbstractionError(f"{path}: no constants or model in #meta; give --model")
    check_trace_shape(str(path), states, abstract_state(World(constants, GroupCoordinator)))
    return constants, states, meta


def conform_trace(
    path: Path,
    coordinator_class: type[GroupCoordinator] = GroupCoordinator,
    constants: SpecConstants | None = None,
    record_to: Path | None = None,
) -> TraceOutcome:
    """Drive the implementation through one trace; stop at the first divergence. With
    `record_to`, the implementation's run is also recorded (recorder.RunRecorder) and written
    there as `<trace>.json` for `kgc validate`: spec -> implementation -> spec."""
    recorder = None
    try:
        k, states, _ = load_trace(path, constants)
        if record_to is not None:
            if k.normalize:
                raise AbstractionError(
                    "a Normalize model's trace (relative clock) cannot be recorded for kgc "
                    "validate; simulate a model without Normalize (default, faults, failover)"
                )
            recorder = RunRecorder(k, coordinator_class, name=_stem(path), source=f"kgc conform of {path}")
            world = recorder.world
        else:
            world = World(k, coordinator_class)
    except InputError as e:
        return TraceOutcome(str(path), 0, 0, error=f"{e.place}: {e.message}" if e.place else e.message)
    except Exception as e:  # noqa: BLE001 - a bad file is reported, not raised
        return TraceOutcome(str(path), 0, 0, error=f"{type(e).__name__}: {e}")
    outcome = _follow(path, states, world, recorder)
    if recorder is not None and outcome.verdict != "ERROR":
        write_trace(Path(record_to) / f"{_stem(path)}.json", recorder.trace())
    return outcome


def _stem(path: Path) -> str:
    name = Path(path).name
    return name[: -len(".itf.json")] if name.endswith(".itf.json") else Path(path).stem


def _follow(
    path: Path | str,
    states: list[dict[str, TlaValue]],
    world: World,
    recorder: RunRecorder | None,
    on_step: Any | None = None,
    incremental: bool = True,
) -> TraceOutcome:
    total = len(states) - 1
    outcome = TraceOutcome(str(path), 0, total)
    if not states:
        return outcome
    try:
        abstraction = (
            recorder.abstraction
            if recorder is not None
            else IncrementalAbstraction(world, rebuild=not incremental, fresh=world.step == 0 and not world.ops)
        )
        impl = abstraction.state if recorder is not None else abstraction.update()
        lean = recorder is None and incremental
        diffs = compare_states(states[0], _conform_view(impl, world), world, world.ops)
        if diffs:
            outcome.divergence = Divergence(0, "Init", *diffs[0])
            return outcome
        for n in range(1, len(states)):
            spec_before, spec_after = states[n - 1], states[n]
            la = spec_after["lastAction"]
            name = str(la["name"])
            if lean and name in VIEW_ONLY_ACTIONS and _spec_kept_coordinator(spec_before, spec_after):
                outcome.divergence = _client_event(n, la, name, spec_before, spec_after, world, abstraction, on_step)
                if outcome.divergence is not None:
                    return outcome
                outcome.steps = n
                continue
            tie = head = None  # a timer step's op to fire (tie_to_fire) and the head's record
            if name in TIMER_STEPS and world.ops and spec_before["timers"]:
                # the abstraction's own record of the head op: its state is the world's as the
                # last update left it, and what ran since (client events alone) changes no
                # input of a timer record (the clock, the group, the ops, the ghost history)
                spec_head = spec_before["timers"][0]
                head = abstraction.state["timers"][0] if recorder is None else timer_record(world, world.ops[0])
                if head != spec_head:
                    tie = tie_to_fire(world, spec_head)
                    if tie is None:
                        outcome.divergence = Divergence(
                            n, describe_action(la), "timers[1]", _show(spec_head), _show(head)
                        )
                        return outcome
                head = head if recorder is None else None
            group = world.group if on_step is not None else None
            before_state = group.state._name_ if group is not None else "NoGroup"  # .name, no descriptor
            try:
                res = (
                    apply_spec_step(world, spec_before, spec_after, tie, head)
                    if recorder is None
                    else recorder.spec_step(spec_before, spec_after, f"spec step {n} {describe_action(la)}")
                )
            except AbstractionError:
                raise
            except Exception as e:  # noqa: BLE001 - the implementation crashed
                outcome.divergence = Divergence(
                    n, describe_action(la), "(exception)", "a next state", f"{type(e).__name__}: {e}"
                )
                return outcome
            if on_step is not None:
                on_step(name, before_state, res)
            faults = new_faults(world.coordinator, 0)
            if faults:  # swallowed by the coordinator, but a fault all the same (conformance/faults.py)
                outcome.divergence = Divergence(
                    n, describe_action(la), "(internal error)", "none", faults[0], tuple(res.requests)
                )
                return outcome
            # apply_action's observe was the step's last change to the world (when it ran)
            impl = (
                abstraction.state
                if recorder is not None
                else abstraction.update(name, world.observed_step == world.step)
            )
            # a variable the step left as it was (the same object) equals the spec's value
            # before the step, already compared: skip it when the spec's value is that same
            # parsed object too (one value memo per TLC run shares unchanged values)
            diffs = compare_states(
                spec_after, _conform_view(impl, world), world, world.ops, (spec_before, abstraction.changed)
            )
            diffs += _action_diff(la, res)
            if diffs:
                outcome.divergence = Divergence(
                    n, describe_action(la), *diffs[0], tuple(res.requests), tuple(d[0] for d in diffs[1:])
                )
                return outcome
            outcome.steps = n
    except AbstractionError as e:
        outcome.error = f"{type(e).__name__}: {e}"
    return outcome


def _spec_kept_coordinator(spec_before: Mapping[str, TlaValue], spec_after: Mapping[str, TlaValue]) -> bool:
    """Whether the spec's step left every variable but the clients' the very object it was
    (as TLC's states parsed with one value memo do on a client event: the spec's client
    actions leave the coordinator UNCHANGED). Then conform compares only the client
    variables; any other state takes the full comparison."""
    try:
        return all(map(is_, _COORDINATOR_OF(spec_after), _COORDINATOR_OF(spec_before)))
    except KeyError:
        return False


def _client_event(
    n: int,
    la: Mapping[str, Any],
    name: str,
    spec_before: Mapping[str, TlaValue],
    spec_after: Mapping[str, TlaValue],
    world: World,
    abstraction: IncrementalAbstraction,
    on_step: Any | None,
) -> Divergence | None:
    """Step n, a client event on its own view (VIEW_ONLY_ACTIONS) whose spec state changed
    no coordinator variable, where the implementation's cannot change either (no request,
    no clock move: apply_client_event): only the acting client's fields are read
    (IncrementalAbstraction.client_event), only the client variables compared, and the
    lastAction record compared whole. No fault check: the coordinator was not called. The
    same divergence as the full step would report, or None. `name`: la's action name."""
    client = client_name(la)
    group = world.group if on_step is not None else None
    before_state = group.state._name_ if group is not None else "NoGroup"  # .name, no descriptor
    try:
        res = apply_client_event(world, name, client)
    except Exception as e:  # noqa: BLE001 - the driver's view of an unknown client
        return Divergence(n, describe_action(la), "(exception)", "a next state", f"{type(e).__name__}: {e}")
    if on_step is not None:
        on_step(name, before_state, res)
    impl = abstraction.client_event(name, client)
    diffs = compare_states(spec_after, impl, world, (), (spec_before, abstraction.changed), _CLIENT_REPORT_ORDER)
    diffs += _action_diff(la, res)
    if diffs:
        return Divergence(n, describe_action(la), *diffs[0], tuple(res.requests), tuple(d[0] for d in diffs[1:]))
    return None


def _conform_view(impl: dict[str, TlaValue], world: World) -> dict[str, TlaValue]:
    """A recording keeps store, leaderLog and ackLog whatever the model (kgc validate's module
    allows a failover); a model without failovers has the spec's empty ones."""
    if world.k.max_failovers > 0:
        return impl
    store = impl["store"]  # NO_STORE itself (not kept) needs no field read
    if (store is NO_STORE or not store["exists"]) and not impl["leaderLog"] and not impl["ackLog"]:
        return impl
    return {**impl, "store": NO_STORE, "leaderLog": frozenset(), "ackLog": frozenset()}


_VARIABLES = frozenset(SPEC_VARIABLES)
_CLIENT_REPORT_ORDER = tuple(n for n in REPORT_ORDER if n in CLIENT_VARIABLES)
_COORDINATOR_OF = itemgetter(*(n for n in SPEC_VARIABLES if n not in CLIENT_VARIABLES))
_NO_RESPONSE_STEPS = TIMER_STEPS | {"AdvanceTime", "GroupUnload", "GroupLoad"}


def _action_diff(la: Mapping[str, Any], res: StepResult) -> list[tuple[str, str, str]]:
    """The spec's lastAction against the step the implementation took: its parameters
    (member, gen, the id handed out, how far the clock moved), and the requester's response
    where the spec answers at once (PARKED: the client views already say whether and how it
    was answered)."""
    out = []
    done = res.last_action
    if done is not None and la != done:
        for name in _LA_FIELDS:
            if name in la and la[name] != done[name]:
                out.append((f"lastAction.{name}", _show(la[name]), _show(done[name])))
    if not res.requests or res.action in _NO_RESPONSE_STEPS:
        return out  # no request (a client event), or a step no response is compared for
    resp = la.get("resp")
    # "" is Normalize's lastAction, which does not keep the response
    if resp not in (None, "", "PARKED") and res.response != resp:
        out.append(("lastAction.resp", str(resp), res.response or "(no response in the step)"))
    return out


def conform_states(
    name: str,
    states: list[dict[str, TlaValue]],
    constants: SpecConstants,
    coordinator_class: type[GroupCoordinator] = GroupCoordinator,
    on_step: Any | None = None,
    check_shape: bool = True,
    incremental: bool = True,
) -> tuple[TraceOutcome, World | None]:
    """conform_trace for states already in memory (the Spark pipeline parses TLC's simulate
    output straight into them, skipping the ITF file). `on_step(action name, group state
    before, StepResult)` is called after each step the implementation performed, for coverage.
    Returns the outcome and the world as the run left it (None when it could not start).
    `check_shape=False` skips the schema check, for traces TLC just drew from the model itself
    (the first of a run is still checked by the caller). `incremental=False` rebuilds the whole
    abstract state every step (the baseline of kgc bench pipeline)."""
    try:
        world = World(constants, coordinator_class)
        if states and check_shape:
            check_trace_shape(name, states, abstract_state(world))
    except InputError as e:
        return TraceOutcome(name, 0, 0, error=f"{e.place}: {e.message}" if e.place else e.message), None
    except Exception as e:  # noqa: BLE001 - a bad trace is reported, not raised
        return TraceOutcome(name, 0, 0, error=f"{type(e).__name__}: {e}"), None
    return _follow(name, states, world, None, on_step, incremental), world


def itf_files(paths: Iterable[Path]) -> list[Path]:
    """Files as given; folders give their *.itf.json, sorted."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(p.glob("*.itf.json")))
        else:
            out.append(p)
    return out


def conform(
    paths: Iterable[Path],
    coordinator_class: type[GroupCoordinator] = GroupCoordinator,
    constants: SpecConstants | None = None,
    stop_at_first: bool = False,
    on_trace: Any | None = None,
    record_to: Path | None = None,
) -> ConformReport:
    """Run every trace; `on_trace(outcome)` is called after each (for progress)."""
    report = ConformReport()
    started = time.monotonic()
    if record_to is not None:
        Path(record_to).mkdir(parents=True, exist_ok=True)
    for path in itf_files(paths):
        outcome = conform_trace(path, coordinator_class, constants, record_to)
        report.outcomes.append(outcome)
        if on_trace is not None:
            on_trace(outcome)
        if stop_at_first and outcome.verdict in ("DIVERGED", "ERROR"):
            break
    report.seconds = time.monotonic() - started
    return report
