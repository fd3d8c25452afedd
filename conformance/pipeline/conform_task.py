"""One Spark task of `kgc pipeline conform`: a unit of work in, one row per trace out.

Nothing here imports Spark: a unit is run the same way on a Spark worker, in a test, or in a
plain loop, which is what lets the tests compare the pipeline with `kgc conform`/`kgc validate`
row for row. A unit is one of

    simulate  TLC draws `count` behaviours of `model` with `seed` (its own run folder, so its
              own -metadir and java.io.tmpdir); TLC's trace files are parsed straight into the
              driver's form (mbt.parse_simulation_file) and conformed in memory: no ITF file
              is written or read back, except for a trace that diverges (its ITF, cut after the
              divergent step, rides in the row so the driver can write the shortest of a kind).
    random    `count` implementation runs under random clients (recorder.random_run, seeds
              seed.. seed+count-1), validated by TLC in one batch per unit.
    input     one file given with --input: an ITF trace, a recorded run, or JSON Lines of
              either; anything unreadable becomes a `malformed` row with the reason.

One parsed model (SpecConstants, the coordinator class) per unit, one World per trace (a trace
starts from a fresh coordinator, as in `kgc conform`).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgc.conformance.abstraction import SpecConstants, abstract_state
from kgc.conformance.abstraction.actions import StepResult
from kgc.conformance.mbt import TraceOutcome, conform_states, parse_simulation_file, simulation_config
from kgc.conformance.recorded_trace import FORMAT as RECORDED_FORMAT
from kgc.conformance.recorded_trace import RecordedTrace, read_trace, write_trace
from kgc.conformance.seeded_bugs import coordinator_class
from kgc.spec.itf import read_itf, trace_to_itf
from kgc.spec.jsonfile import InputError, read_json
from kgc.spec.tlc_result import Outcome, Trace

__all__ = [
    "CONFORMS",
    "DIVERGES",
    "MALFORMED",
    "NOT_BEHAVIOUR",
    "ROW_FIELDS",
    "WorkUnit",
    "run_unit",
    "run_units",
    "simulate_raw",
]

#: Value texts kept parsed across the traces of one TLC run (mbt.parse_simulation_file).
_MEMO_LIMIT = 200_000

CONFORMS, DIVERGES, NOT_BEHAVIOUR, MALFORMED = "conforms", "diverges", "not_behaviour", "malformed"

#: The row every unit yields, in this order (the Spark schema in conform_schema.py follows it).
ROW_FIELDS: tuple[str, ...] = (
    "trace_id",
    "source",
    "seed",
    "model",
    "length",
    "verdict",
    "step",
    "action",
    "action_name",
    "variable",
    "spec_value",
    "impl_value",
    "reason",
    "properties",
    "seconds",
    "spec_actions",
    "impl_cells",
    "artifact_kind",
    "artifact",
)


@dataclass(frozen=True)
class WorkUnit:
    """What one Spark task does (see the module doc); small, so the driver ships a list."""

    kind: str  # simulate | random | input
    seed: int = 0
    count: int = 0
    model: str = "default"
    depth: int = 40
    bug: str | None = None
    path: str | None = None
    ms_per_unit: int = 1000


def run_units(units: Iterator[WorkUnit] | list[WorkUnit]) -> Iterator[dict[str, Any]]:
    """The rows of several units, one after the other (a Spark partition's work)."""
    for unit in units:
        yield from run_unit(unit)


def run_unit(unit: WorkUnit) -> Iterator[dict[str, Any]]:
    scratch = Path(tempfile.mkdtemp(prefix=f"kgc-pipeline-{unit.kind}-"))
    try:
        if unit.kind == "simulate":
            yield from _simulate_unit(unit, scratch)
        elif unit.kind == "random":
            yield from _random_unit(unit, scratch)
        elif unit.kind == "input":
            yield from _input_unit(unit, scratch)
        else:
            raise ValueError(f"unknown work unit kind {unit.kind!r}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _row(trace_id: str, source: str, seed: int | None, model: str | None, **fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(ROW_FIELDS)
    row.update(trace_id=trace_id, source=source, seed=seed, model=model, properties=[], spec_actions={}, impl_cells={})
    row.update(fields)
    return row


# ---------------------------------------------------------------------------------------------
# Spec traces: simulate, and ITF inputs
# ---------------------------------------------------------------------------------------------


class _Coverage:
    """Hits per spec action and per implementation (group state x request x response) cell.

    A step counts one (action, group state, response) key; the names and the cells' text
    are made once per trace (actions(), cells()), not on every step: formatting the cell's
    string was the largest part of a step's coverage cost."""

    def __init__(self) -> None:
        self.hits: Counter[tuple[str, str, str | None]] = Counter()

    def __call__(self, action: str, group_state: str, res: StepResult) -> None:
        self.hits[action, group_state, res.response] += 1

    def actions(self) -> dict[str, int]:
        """Hits per spec action."""
        out: Counter[str] = Counter()
        for (action, _, _), n in self.hits.items():
            out[action] += n
        return dict(out)

    def cells(self) -> dict[str, int]:
        """Hits per `group state|action|response` cell (NONE: no error code)."""
        out: Counter[str] = Counter()
        for (action, group_state, response), n in self.hits.items():
            out[f"{group_state}|{action}|{response or 'NONE'}"] += n
        return dict(out)


def _conform_row(
    trace_id: str,
    source: str,
    seed: int | None,
    model: str | None,
    states: list[dict[str, Any]],
    constants: SpecConstants,
    cls: type,
    itf_meta: dict[str, Any],
    check_shape: bool = True,
) -> dict[str, Any]:
    started = time.perf_counter()
    coverage = _Coverage()
    outcome, world = conform_states(trace_id, states, constants, cls, coverage, check_shape)
    seconds = time.perf_counter() - started
    row = _row(
        trace_id,
        source,
        seed,
        model,
        length=max(0, len(states) - 1),
        seconds=seconds,
        spec_actions=coverage.actions(),
        impl_cells=coverage.cells(),
    )
    _fill_outcome(row, outcome)
    if outcome.divergence is not None:
        if world is not None:
            row["properties"] = _violated(world, constants)
        cut = outcome.divergence.step + 1
        row["artifact_kind"] = "itf"
        row["artifact"] = _itf_text(states[:cut], itf_meta, f"{trace_id}: {outcome.divergence}")
    return row


def _fill_outcome(row: dict[str, Any], outcome: TraceOutcome) -> None:
    if outcome.error:
        row.update(verdict=MALFORMED, reason=outcome.error)
    elif outcome.divergence is not None:
        d = outcome.divergence
        row.update(
            verdict=DIVERGES,
            step=d.step,
            action=d.action,
            action_name=d.action.split("(", 1)[0],
            variable=d.variable,
            spec_value=d.spec_value,
            impl_value=d.impl_value,
            reason=str(d),
        )
    else:
        row["verdict"] = CONFORMS


def _violated(world: Any, constants: SpecConstants) -> list[str]:
    """The spec invariants the implementation's state breaks where it diverged."""
    from kgc.conformance.properties import check_state

    try:
        return sorted(check_state(abstract_state(world), constants.properties_constants()).violations)
    except Exception:  # noqa: BLE001 - the state may be half-made after an exception
        return []


def _itf_text(states: list[dict[str, Any]], meta: dict[str, Any], description: str) -> str:
    from kgc.spec.tlc_result import TraceState

    la_name = [str(s["lastAction"]["name"]) if "lastAction" in s else "?" for s in states]
    trace = Trace(states=[TraceState(n + 1, la_name[n], None, s) for n, s in enumerate(states)])
    return json.dumps(trace_to_itf(trace, source="GroupCoordinator", description=description, meta=meta))


#: JVM options of the pipeline's TLC simulate runs (see simulate_raw). C1 only: a slice of a few
#: hundred short traces ends before C2's compilations pay off (-29 % TLC CPU per trace at 500
#: traces of depth 40). A small young generation (32 MB, one GC thread): TLC's simulation
#: allocates ~4.6 MB of short-lived values per trace and keeps ~23 MB, so ParallelGC's eden,
#: grown adaptively to ~1.6 GB, puts every allocation in memory no cache holds and that the
#: kernel first has to fault in (the collections themselves cost ~2 % of the CPU); a 32 MB
#: eden is reused while still cached: -6 % TLC CPU per trace in paired runs, same trace files
#: (docs/measurements.md, "TLC's CPU per trace").
SIMULATE_JVM_OPTIONS: tuple[str, ...] = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmn32m")


def simulate_raw(unit: WorkUnit, scratch: Path) -> tuple[Any, SpecConstants, list[Path]]:
    """TLC's raw trace files for a simulate unit: (the model found, its constants, the files in
    TLC's order). TLC runs in scratch/tlc with its own -metadir and java.io.tmpdir."""
    from kgc.conformance.mbt import _raw_trace_files
    from kgc.spec.catalog import resolve_model
    from kgc.spec.tlc import TlcJob, run_tlc

    found = resolve_model(unit.model)
    constants = SpecConstants.from_cfg(found.config, unit.ms_per_unit)
    run_dir = scratch / "tlc"
    raw = (run_dir / "traces").resolve()
    raw.mkdir(parents=True)
    config = scratch / f"{found.name}.simulate.cfg"
    config.write_text(simulation_config(found.config.read_text(encoding="utf-8")), encoding="utf-8")
    job = TlcJob(
        module=found.module,
        config=config,
        modules=found.modules,
        workers=1,
        jvm_options=SIMULATE_JVM_OPTIONS,  # C1 only, a small young generation: see there
        tlc_options=(
            "-simulate",
            f"file={raw / 'tr'},num={unit.count}",
            "-depth",
            str(unit.depth),
            "-seed",
            str(unit.seed),
            "-deadlock",
        ),
    )
    check = run_tlc(job, run_dir)
    ended_normally = check.outcome is Outcome.CRASHED and check.tlc_exit_code == 0 and check.trace is None
    if check.outcome not in (Outcome.PASSED, None) and not ended_normally:
        raise RuntimeError(f"TLC simulate of {found.name} (seed {unit.seed}) ended {check.outcome}: {check.error_line}")
    return found, constants, _raw_trace_files(raw)


def _simulate_unit(unit: WorkUnit, scratch: Path) -> Iterator[dict[str, Any]]:
    cls = coordinator_class(unit.bug)
    found, constants, files = simulate_raw(unit, scratch)
    meta = {"model": found.name, "constants": constants.to_json(), "seed": unit.seed, "depth": unit.depth}
    memo: dict[str, Any] = {}
    for n, path in enumerate(files):
        if len(memo) > _MEMO_LIMIT:
            memo.clear()
        trace = parse_simulation_file(path.read_text(encoding="utf-8"), memo)
        path.unlink()
        if not trace.states:
            continue
        states = [s.values for s in trace.states]
        yield _conform_row(
            f"s{unit.seed}-{n:05d}",
            "simulate",
            unit.seed,
            found.name,
            states,
            constants,
            cls,
            {**meta, "trace": n},
            check_shape=n == 0,
        )


# ---------------------------------------------------------------------------------------------
# Implementation runs: random clients, and recorded-run inputs
# ---------------------------------------------------------------------------------------------


def _random_unit(unit: WorkUnit, scratch: Path) -> Iterator[dict[str, Any]]:
    from kgc.conformance.recorder import RANDOM_RUN_CONSTANTS, random_run

    cls = coordinator_class(unit.bug)
    traces = [
        random_run(RANDOM_RUN_CONSTANTS, unit.depth, s, coordinator_class=cls)
        for s in range(unit.seed, unit.seed + unit.count)
    ]
    yield from _validate_rows(
        [(t.name, t) for t in traces], "random", {t.name: s for t, s in zip(traces, range(unit.seed, 10**18))}, scratch
    )


def _validate_rows(
    named: list[tuple[str, RecordedTrace]], source: str, seeds: dict[str, int], scratch: Path
) -> Iterator[dict[str, Any]]:
    """Validate recorded runs with TLC in one batch; a run TLC cannot take at all (its batch
    errs) is retried alone, and alone it is `malformed` with TLC's reason."""
    from kgc.conformance.validate import validate_traces

    if not named:
        return
    started = time.perf_counter()
    report = validate_traces([t for _, t in named], work_dir=scratch / "validate", jobs=1)
    if report.errors:
        for n, (trace_id, t) in enumerate(named):
            yield from _validate_rows_one(trace_id, t, source, seeds.get(trace_id), scratch / f"one-{n}")
        return
    each = (time.perf_counter() - started) / len(named)
    for (trace_id, t), verdict in zip(named, report.verdicts):
        yield _verdict_row(trace_id, t, verdict, source, seeds.get(trace_id), each)


def _validate_rows_one(
    trace_id: str, t: RecordedTrace, source: str, seed: int | None, work: Path
) -> Iterator[dict[str, Any]]:
    from kgc.conformance.validate import validate_traces

    started = time.perf_counter()
    try:
        report = validate_traces([t], work_dir=work, jobs=1)
    except ValueError as e:
        yield _row(trace_id, source, seed, None, length=len(t.states) - 1, verdict=MALFORMED, reason=str(e))
        return
    if report.errors or not report.verdicts:
        reason = "; ".join(report.errors) or "TLC gave no verdict"
        yield _row(trace_id, source, seed, None, length=len(t.states) - 1, verdict=MALFORMED, reason=reason)
        return
    yield _verdict_row(trace_id, t, report.verdicts[0], source, seed, time.perf_counter() - started)


def _verdict_row(trace_id: str, t: RecordedTrace, verdict: Any, source: str, seed: int | None, seconds: float) -> dict:
    actions = Counter(str(s["lastAction"]["name"]) for s in t.states[1:] if "lastAction" in s)
    row = _row(trace_id, source, seed, None, length=len(t.states) - 1, seconds=seconds, spec_actions=dict(actions))
    if verdict.matched:
        row["verdict"] = CONFORMS
        return row
    first = verdict.diffs[0] if verdict.diffs else None
    action = verdict.action or "?"
    row.update(
        verdict=NOT_BEHAVIOUR,
        step=verdict.failed_step,
        action=action,
        action_name=action.split("(", 1)[0],
        variable=first.variable if first else "(no spec step)",
        spec_value=str(first.spec) if first else None,
        impl_value=str(first.impl) if first else None,
        reason=verdict.line(),
        artifact_kind="recorded",
    )
    cut = (verdict.failed_step or 0) + 1
    shortest = RecordedTrace(t.name, t.constants, t.states[:cut], t.origins[:cut], t.stopped, list(t.skipped), t.source)
    row["artifact"] = _recorded_text(shortest)
    return row


def _recorded_text(t: RecordedTrace) -> str:
    with tempfile.TemporaryDirectory(prefix="kgc-rec-") as d:
        path = Path(d) / "t.json"
        write_trace(path, t)
        return path.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# --input files
# ---------------------------------------------------------------------------------------------


def _input_unit(unit: WorkUnit, scratch: Path) -> Iterator[dict[str, Any]]:
    """Each document of the file: JSON Lines give one per line (`FILE:LINE`)."""
    assert unit.path is not None
    path = Path(unit.path)
    cls = coordinator_class(unit.bug)
    constants = SpecConstants.from_model(unit.model, unit.ms_per_unit) if unit.model else None
    items: list[tuple[str, Path]] = []
    if path.suffix == ".jsonl":
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as e:
            yield _row(str(path), "input", None, None, verdict=MALFORMED, reason=f"{path}: cannot read: {e}")
            return
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            one = scratch / f"line-{n}.json"
            one.write_text(line, encoding="utf-8")
            items.append((f"{path}:{n}", one))
    else:
        items.append((str(path), path))
    recorded: list[tuple[str, RecordedTrace]] = []
    for trace_id, file in items:
        row, trace = _input_document(trace_id, file, constants, cls, unit)
        if row is not None:
            yield row
        if trace is not None:
            recorded.append((trace_id, trace))
    yield from _validate_rows(recorded, "input", {}, scratch)


def _input_document(
    trace_id: str, file: Path, constants: SpecConstants | None, cls: type, unit: WorkUnit
) -> tuple[dict[str, Any] | None, RecordedTrace | None]:
    """(a row, or a recorded run to validate with the others of the unit)."""

    def malformed(reason: str) -> dict[str, Any]:
        return _row(trace_id, "input", None, unit.model, verdict=MALFORMED, reason=reason)

    try:
        document = read_json(file)
        if isinstance(document, dict) and isinstance(document.get("#meta"), dict):
            if document["#meta"].get("kgc") == RECORDED_FORMAT:
                return None, read_trace(file)
        meta, states = read_itf(file)
        k = constants
        if k is None:
            if isinstance(meta.get("constants"), dict):
                k = SpecConstants.from_json(meta["constants"])
            elif "model" in meta:
                k = SpecConstants.from_model(str(meta["model"]))
            else:
                return malformed(f"{trace_id}: #meta: no constants or model; give --model"), None
    except InputError as e:
        return malformed(f"{trace_id}: {e.place + ': ' if e.place else ''}{e.message}"), None
    except Exception as e:  # noqa: BLE001 - any unreadable input is a malformed row, never a crash
        return malformed(f"{trace_id}: {type(e).__name__}: {e}"), None
    seed = meta.get("seed") if isinstance(meta.get("seed"), int) else None
    model = str(meta.get("model", unit.model or ""))
    itf_meta = {k_: v for k_, v in meta.items() if k_ not in ("format", "format-description", "modelValues")}
    try:
        return _conform_row(trace_id, "input", seed, model, states, k, cls, itf_meta), None
    except Exception as e:  # noqa: BLE001 - e.g. an action the abstraction does not know
        return malformed(f"{trace_id}: {type(e).__name__}: {e}"), None
