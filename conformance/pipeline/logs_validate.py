"""`kgc pipeline logs --validate`: TLC asked whether a behaviour of the spec can have written what
the log shows of each group (spec/LogTraceGroupCoordinator.tla, which this module feeds).

Why a partial trace, not kgc validate's full one: a log holds only the coordinator's INFO lines,
so each group's history becomes a list of observations (rebalance starts, completions with their
member counts, the leader's assignment, unloads and loads) and every step that logs nothing is
free. Why histories are cut at a broker change and at a deletion ("transitioned to Dead"): the
new coordinator starts from what it loaded, and group deletion (offset expiry, DeleteGroups) is
not in the spec; each piece is checked from the spec's initial state with a free prefix and
generations renumbered from the first one seen. A history that starts with the rebalance of a
generation above 0 (the group completed one before the excerpt) and is not explained so is
checked again with one consumer and two logged steps before it (the start and completion of that
generation): cheap with one consumer, where two made the prefix's search take minutes.

The model is bounded (MAX_CLIENTS consumers, so member counts above it are not compared; two
member ids more; crash and leave; no group.max.size; the group store asynchronous, at most two
writes in flight, when the history unloads or loads),
so "unexplained" means no behaviour within those bounds writes these lines, not a proof that
Kafka cannot; a history longer than MAX_OBSERVATIONS is "too long" and not checked.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgc.conformance.pipeline.logs_history import Event, Finding

__all__ = [
    "EXPLAINED",
    "MAX_CLIENTS",
    "MAX_OBSERVATIONS",
    "TOO_LONG",
    "UNEXPLAINED",
    "GroupVerdict",
    "Observation",
    "build_data",
    "observations",
    "segments",
    "validate_groups",
    "verdict_finding",
]

EXPLAINED = "explained"
UNEXPLAINED = "unexplained"
TOO_LONG = "too long"

MAX_CLIENTS = 2
MAX_OBSERVATIONS = 40
#: Per kind of a history's first observation, the steps that log something the spec needs before
#: it (from the initial state: a rebalance start, its completion, the leader's assignment, then an
#: unload before a load). Unobserved steps are free as well; a larger bound only costs states.
PREFIX_STEPS = {"prepare": 0, "stabilized": 1, "empty": 1, "assignment": 2, "unloaded": 1, "loaded": 4}
#: The prefix of a history that starts mid-life (_mid_life): the start and the completion of a
#: generation before its first rebalance start. Checked with one consumer only (MID_LIFE_CLIENTS):
#: with two, the search of the states two logged steps reach took TLC 138 s for a three-line
#: history (kafkajs-633-kibana-2.x.log, load ~15), with one 23 s (load ~20, TLC start-up included).
MID_LIFE_PREFIX_STEPS = 2
MID_LIFE_CLIENTS = 1
TRACE_MODULE = "LogTraceGroupCoordinator"
DATA_MODULE = "LogTraceData"

#: Event kinds the spec's Logged operator writes, and the observation kind each one is.
_OBSERVED = {
    "prepare": "prepare",
    "stabilized": "stabilized",
    "empty": "empty",
    "assignment": "assignment",
    "unloaded": "unloaded",
    "loaded": "loaded",
    "loaded_member": "loaded",
}


@dataclass(frozen=True)
class Observation:
    kind: str
    generation: int  # -1: the line carries none
    members: int  # -1: not compared
    event: Event

    def tla(self) -> str:
        return f'[k |-> "{self.kind}", g |-> {self.generation}, n |-> {self.members}]'


@dataclass(frozen=True)
class GroupVerdict:
    group: str
    verdict: str  # explained | unexplained | too long
    observations: int
    event: Event | None = None  # unexplained: the first observation no behaviour writes
    index: int = 0  # its position among the group's events (1-based)
    detail: str = ""


def segments(events: Sequence[Event]) -> list[list[Event]]:
    """A group's events cut where a new coordinator takes over (another broker) and after a
    deletion; the "dead" line itself is dropped (no spec step writes it)."""
    pieces: list[list[Event]] = [[]]
    broker = ""
    for event in events:
        if event.broker and broker and event.broker != broker and pieces[-1]:
            pieces.append([])
        if event.broker:
            broker = event.broker
        if event.kind == "dead":
            if pieces[-1]:
                pieces.append([])
            continue
        pieces[-1].append(event)
    return [p for p in pieces if p]


def observations(events: Sequence[Event]) -> list[Observation]:
    """The lines of one segment the spec's Logged operator is compared with. Member counts are
    compared only when every count fits the model's clients; a group's per-member load lines
    are one observation."""
    counts = [e.members for e in events if e.kind == "stabilized" and e.members is not None]
    compare_members = all(n <= MAX_CLIENTS for n in counts)
    seen: list[Observation] = []
    for event in events:
        kind = _OBSERVED.get(event.kind)
        if kind is None:
            continue
        gen = event.generation if event.generation is not None else -1
        members = event.members if (kind == "stabilized" and compare_members and event.members is not None) else -1
        if kind == "loaded" and seen and seen[-1].kind == "loaded" and seen[-1].generation == gen:
            continue
        seen.append(Observation(kind, gen, members, event))
    return seen


def _clients(histories: Sequence[Sequence[Observation]]) -> int:
    """As many consumers as the most members a completion logged, at least two: a member that
    joins and goes before the next completion is counted nowhere."""
    counts = [o.members for h in histories for o in h if o.members > 0]
    return min(MAX_CLIENTS, max([2, *counts]))


def _mid_life(history: Sequence[Observation]) -> bool:
    """Whether a history starts with a rebalance of a generation above 0 (the group completed one
    before the excerpt: the line "removing member M on heartbeat expiration ... old generation 1"
    of a group that then goes empty) and can be checked with one consumer (no member count above
    one, no failover)."""
    return (
        bool(history)
        and history[0].kind == "prepare"
        and history[0].generation > 0
        and all(o.members <= MID_LIFE_CLIENTS for o in history)
        and _shape(history)[1] == 0
    )


def build_data(
    histories: Sequence[Sequence[Observation]], clients: int | None = None, prefix: int | None = None
) -> tuple[str, str]:
    """(LogTraceData module text, LogTraceGroupCoordinator .cfg) for one batch: `clients`
    consumers (default: as many as the histories need) and `prefix` logged steps before every
    history's first observation (default: PREFIX_STEPS of its kind)."""
    rows = ("<<" + ", ".join(o.tla() for o in h) + ">>" if h else "<< >>" for h in histories)
    steps = [prefix if prefix is not None else PREFIX_STEPS[h[0].kind] if h else 0 for h in histories]
    module = "\n".join(
        [
            f"---- MODULE {DATA_MODULE} ----",
            "(* Written by kgc.conformance.pipeline.logs_validate for one batch of log histories. *)",
            "EXTENDS Integers, Sequences",
            "O == <<" + ",\n      ".join(rows) + ">>",
            "PrefixSteps == <<" + ", ".join(map(str, steps)) + ">>",
            "=" * 40,
            "",
        ]
    )
    n = clients or _clients(histories)
    names = [f"c{i}" for i in range(1, n + 1)]
    failovers = max(_shape(h)[1] for h in histories)
    cfg = "\n".join(
        [
            "INIT LogInit",
            "NEXT LogNext",
            "CONSTANTS",
            "    Clients = {" + ", ".join(names) + "}",
            "    NoClient = NoClient",
            *(f"    {c} = {c}" for c in names),
            f"    NumIds = {n + 2}",
            "    Session = 2",
            "    Rebalance = 3",
            "    InitialDelay = 1",
            "    NewMemberTimeout = 3",
            f"    MaxGroupSize = {n + 3}",  # group.max.size: Kafka's default is unbounded
            "    JoinFlavours = {FALSE}",
            '    ClientFaults = {"crash", "leave"}',
            f"    MaxFailovers = {failovers}",
            "    Normalize = FALSE",
            "    MaxGen = 1000000",
            "    MaxTime = 1000000",
            '    Bug = "none"',
            # A reload shows the store, and a write still in flight at an unload is not in it.
            f"    StoreAsync = {'TRUE' if failovers else 'FALSE'}",
            *(["CONSTRAINT StoreBound"] if failovers else []),
            "VIEW LogView",
            *(["SYMMETRY ClientSymmetry"] if n > 1 else []),  # TLC rejects a symmetry set of one
            "INVARIANT LogProgress",
            "",
        ]
    )
    return module, cfg


def _reached(out: Path, n: int) -> list[int]:
    """Per history, the most observations any state explained (TLC prints <<"@kgc", tr, ti>>)."""
    import re

    pattern = re.compile(r'<<"@kgc", (\d+), (\d+)>>')
    reached = [0] * (n + 1)
    with open(out, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = pattern.match(line)
            if m:
                t, i = int(m.group(1)), int(m.group(2))
                reached[t] = max(reached[t], i)
    return reached[1:]


def _check(
    histories: Sequence[Sequence[Observation]],
    run_dir: Path,
    timeout: float | None,
    clients: int | None = None,
    prefix: int | None = None,
) -> list[int]:
    """One TLC run over the batch: how many observations of each history a behaviour explains."""
    from kgc.conformance.trace_run import run_trace_module
    from kgc.spec.catalog import spec_root
    from kgc.spec.tlc_result import Outcome

    root = spec_root()
    module, cfg = build_data(histories, clients, prefix)
    modules = (root / "GroupCoordinator.tla", root / "MCGroupCoordinator.tla")
    result, out = run_trace_module(
        run_dir, root / f"{TRACE_MODULE}.tla", DATA_MODULE, module, cfg, modules, timeout=timeout
    )
    if result.outcome not in (Outcome.PASSED, Outcome.NO_INITIAL_STATES):
        what = result.outcome.value if result.outcome else "no verdict"
        raise RuntimeError(f"TLC {what}: {result.error_line or ''} (output in {out})")
    return _reached(out, len(histories))


def _shape(history: Sequence[Observation]) -> tuple[int, int]:
    """The model a history needs: consumers, and unloads (plus one before a first load)."""
    unloads = sum(1 for o in history if o.kind == "unloaded")
    return _clients([history]), unloads + (1 if any(o.kind == "loaded" for o in history) else 0)


def _check_all(
    histories: Sequence[Sequence[Observation]], timeout: float | None, work_dir: Path | None
) -> tuple[list[int | None], dict[int, str]]:
    """How many observations of each history a behaviour explains (None: not checked, with why
    in the second result). Histories are checked in one TLC run per model they need, so a
    history with no failover is not searched with the unloads and the asynchronous store
    another one needs."""
    by_shape: dict[tuple[int, int], list[int]] = {}
    for n, history in enumerate(histories):
        by_shape.setdefault(_shape(history), []).append(n)
    reached: list[int | None] = [None] * len(histories)
    failures: dict[int, str] = {}
    with tempfile.TemporaryDirectory(prefix="kgc-logs-validate-", dir=work_dir) as tmp:
        for k, (_, members) in enumerate(sorted(by_shape.items())):
            try:
                got = _check([histories[n] for n in members], Path(tmp) / f"run{k}", timeout)
            except RuntimeError as exc:
                failures.update((n, str(exc)) for n in members)
                continue
            for n, r in zip(members, got):
                reached[n] = r
        _recheck_mid_life(histories, reached, Path(tmp) / "mid-life", timeout)
    return reached, failures


def _recheck_mid_life(
    histories: Sequence[Sequence[Observation]], reached: list[int | None], run_dir: Path, timeout: float | None
) -> None:
    """Histories that start mid-life and were not explained get a second TLC run with the longer
    prefix they need (MID_LIFE_PREFIX_STEPS) and one consumer; what it explains is explained (any
    behaviour of the spec will do), the rest keeps the first run's answer. Only those pay for it."""
    again = [
        n
        for n, history in enumerate(histories)
        if reached[n] is not None and reached[n] < len(history) and _mid_life(history)  # type: ignore[operator]
    ]
    if not again:
        return
    try:
        got = _check([histories[n] for n in again], run_dir, timeout, MID_LIFE_CLIENTS, MID_LIFE_PREFIX_STEPS)
    except RuntimeError:
        return  # the first run's answer stands
    for n, r in zip(again, got):
        if r == len(histories[n]):
            reached[n] = r


def validate_groups(
    groups: Iterable[tuple[str, Sequence[Event]]], *, timeout: float | None = None, work_dir: Path | None = None
) -> list[GroupVerdict]:
    """One verdict per group (events in time order). A TLC run that fails or runs out of
    `timeout` makes its groups "too long" (with why)."""
    items = list(groups)
    pieces: list[tuple[int, list[Observation]]] = []  # (group index, observations of one piece)
    long: dict[int, str] = {}
    for index, (_, events) in enumerate(items):
        for piece in segments(events):
            seen = observations(piece)
            if len(seen) > MAX_OBSERVATIONS:
                long[index] = f"a piece of {len(seen)} observations (more than {MAX_OBSERVATIONS})"
            elif seen:
                pieces.append((index, seen))
    reached, failures = _check_all([p for _, p in pieces], timeout, work_dir) if pieces else ([], {})
    first_failure: dict[int, Observation] = {}
    unchecked: dict[int, str] = {}
    counted: dict[int, int] = {}
    for n, (index, seen) in enumerate(pieces):
        counted[index] = counted.get(index, 0) + len(seen)
        got = reached[n]
        if got is None:
            unchecked.setdefault(index, failures[n])
        elif got < len(seen) and index not in first_failure:
            first_failure[index] = seen[got]
    verdicts = []
    for index, (group, events) in enumerate(items):
        total = counted.get(index, 0)
        if index in first_failure:
            obs = first_failure[index]
            position = next(k for k, e in enumerate(events, start=1) if e is obs.event)
            detail = f"no behaviour of the spec logs {obs.kind}" + (
                f" generation {obs.generation}" if obs.generation >= 0 else ""
            )
            verdicts.append(GroupVerdict(group, UNEXPLAINED, total, obs.event, position, detail))
        elif index in unchecked or index in long:
            verdicts.append(GroupVerdict(group, TOO_LONG, total, detail=unchecked.get(index) or long[index]))
        else:
            verdicts.append(GroupVerdict(group, EXPLAINED, total))
    return verdicts


def verdict_finding(verdict: GroupVerdict) -> Finding | None:
    """An unexplained history as a finding, pointing at the first line no behaviour writes."""
    if verdict.verdict != UNEXPLAINED or verdict.event is None:
        return None
    event = verdict.event
    return Finding(
        event.file,
        event.line,
        verdict.group,
        "unexplained",
        "not_a_spec_behaviour",
        f"not a spec behaviour at event {verdict.index} ({event.kind}): {verdict.detail} after the lines before it "
        f"(TLC, within the model's bounds: {MAX_CLIENTS} consumers, crash/leave)",
        (event.text,) if event.text else (),
    )
