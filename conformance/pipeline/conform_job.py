"""The Spark side of `kgc pipeline conform`: work units out to the executors, rows back as a
DataFrame, and the three Parquet tables, summary.json and the shortest trace of each signature.

Why RDD `mapPartitions` and not `mapInArrow`/`mapInPandas`: the input is a short list of small
work descriptors (a seed and a count; a file name), not columnar data, and each task's work is
a TLC run plus pure-Python conformance that yields Python dicts. mapInArrow would need an input
DataFrame and Arrow batches built from those dicts for no gain, and measured per-task overhead
is lower for mapPartitions (29-69 ms against ~154 ms for mapInPandas). The rows become a
DataFrame (explicit schema) at once, and everything after -- the Parquet tables, the coverage
and signature aggregations -- is DataFrame API.

Units: simulate slices of `slice_size` traces (seed, seed+1, ... per slice, so the rows depend
on --seed, --traces and the slice size, never on the master or the partition count), random
slices likewise (seeds seed.. seed+random-1), one unit per --input file. Without --slice, the
simulate slices are sized from --traces by `auto_slice`, random slices hold DEFAULT_SLICE runs.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgc.conformance.pipeline.conform_task import (
    CONFORMS,
    DIVERGES,
    MALFORMED,
    NOT_BEHAVIOUR,
    ROW_FIELDS,
    WorkUnit,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "ConformSummary", "auto_slice", "coverage_universe", "input_files", "plan_units", "row_schema", "run_conform",
]  # fmt: skip

#: Traces per simulate slice without --slice: at least DEFAULT_SLICE (random slices keep it), at
#: most MAX_AUTO_SLICE (TLC writes a slice's traces to its scratch folder before they are read,
#: ~65 KB each at depth 40: 5,000 are ~325 MB per running task).
DEFAULT_SLICE = 500
MAX_AUTO_SLICE = 5000
AUTO_SLICES = 8


def auto_slice(traces: int) -> int:
    """Eight slices, each within [DEFAULT_SLICE, MAX_AUTO_SLICE] traces.

    Why not a fixed 500: every task pays a fixed cost (a TLC JVM and SANY's parse of the spec, a
    fresh value memo, a world to set up), about 4 CPU-s, against ~10 ms per trace of depth 40:
    20,000 traces on local[2] ran at 108 traces/s in 40 slices of 500 and at 178 traces/s in 4 of
    5,000 (2026-12-02, load 2-4). Eight keep a few cores busy to the end, and the count depends on
    --traces only, so the rows stay the same on every master.
    """
    return max(DEFAULT_SLICE, min(MAX_AUTO_SLICE, math.ceil(traces / AUTO_SLICES)))


#: Every request the implementation takes in a spec step; with the group states and the
#: response codes the spec uses, the implementation's coverage grid.
GROUP_STATES = ("NoGroup", "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")


def plan_units(
    *,
    model: str,
    traces: int,
    depth: int,
    seed: int,
    bug: str | None,
    slice_size: int,
    random_runs: int = 0,
    random_steps: int = 40,
    inputs: Sequence[Path] = (),
    ms_per_unit: int = 1000,
    random_slice: int | None = None,
) -> list[WorkUnit]:
    """The work units: random slices of `random_slice` runs (default: `slice_size`), simulate
    slices of `slice_size` traces, one unit per input file."""
    # Random slices first: each costs several times a simulate slice (recording, then a TLC
    # validation batch), and Spark runs tasks in order, so a long one last would run alone.
    units: list[WorkUnit] = []
    per_random = random_slice or slice_size
    for start in range(0, random_runs, per_random):
        count = min(per_random, random_runs - start)
        units.append(WorkUnit("random", seed + start, count, model, random_steps, bug))
    for n in range(math.ceil(traces / slice_size) if traces else 0):
        count = min(slice_size, traces - n * slice_size)
        units.append(WorkUnit("simulate", seed + n, count, model, depth, bug, ms_per_unit=ms_per_unit))
    for path in inputs:
        units.append(WorkUnit("input", 0, 1, "", depth, bug, path=str(path), ms_per_unit=ms_per_unit))
    return units


def input_files(paths: Sequence[Path]) -> list[Path]:
    """Files as given; folders give their *.json and *.jsonl (recursively), sorted."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in (".json", ".jsonl")))
        else:
            out.append(p)
    return out


def row_schema() -> Any:
    from pyspark.sql.types import (
        ArrayType,
        DoubleType,
        IntegerType,
        LongType,
        MapType,
        StringType,
        StructField,
        StructType,
    )

    types = {
        "seed": LongType(),
        "length": IntegerType(),
        "step": IntegerType(),
        "seconds": DoubleType(),
        "properties": ArrayType(StringType()),
        "spec_actions": MapType(StringType(), IntegerType()),
        "impl_cells": MapType(StringType(), IntegerType()),
    }
    return StructType([StructField(name, types.get(name, StringType()), True) for name in ROW_FIELDS])


def coverage_universe() -> tuple[list[str], list[str]]:
    """(every spec action, every implementation cell) that coverage lists, hit or not."""
    from kgc.conformance.validate import ACTIONS

    responses = ("NONE", "PARKED")
    errors = (
        "UNKNOWN_MEMBER_ID",
        "ILLEGAL_GENERATION",
        "REBALANCE_IN_PROGRESS",
        "MEMBER_ID_REQUIRED",
        "GROUP_MAX_SIZE_REACHED",
        "COORDINATOR_LOAD_IN_PROGRESS",
        "NOT_COORDINATOR",
        "UNKNOWN",
    )
    requests = [a for a in ACTIONS if a.startswith(("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup"))]
    cells = [f"{s}|{r}|{e}" for s in GROUP_STATES for r in requests for e in (*responses, *errors)]
    return sorted(ACTIONS), cells


@dataclass
class ConformSummary:
    traces: int = 0
    conforms: int = 0
    diverged: int = 0
    not_behaviour: int = 0
    malformed: int = 0
    signatures: int = 0
    steps: int = 0
    seconds: float = 0.0
    traces_per_s: float = 0.0
    master: str = ""
    partitions: int = 0
    units: int = 0
    signature_table: list[dict[str, Any]] = field(default_factory=list)
    coverage: list[tuple[str, str, int]] = field(default_factory=list, repr=False)

    @property
    def failed(self) -> bool:
        return self.diverged > 0 or self.not_behaviour > 0

    def json_line(self) -> str:
        keys = ("traces", "conforms", "diverged", "not_behaviour", "malformed", "signatures", "steps")
        data = {k: getattr(self, k) for k in keys}
        data.update(seconds=round(self.seconds, 3), traces_per_s=round(self.traces_per_s, 1), master=self.master)
        return json.dumps(data)


def _unit_rows(units: Any) -> Any:
    """mapPartitions' function: module level, so the closure Spark pickles stays tiny."""
    from kgc.conformance.pipeline.conform_task import run_units as run

    return run(list(units))


def rows_dataframe(spark: SparkSession, units: list[WorkUnit], partitions: int | None) -> DataFrame:
    """The per-trace rows as a DataFrame; nothing runs until an action."""
    sc = spark.sparkContext
    slices = max(1, min(len(units), partitions or len(units)))
    rdd = sc.parallelize(units, numSlices=slices).mapPartitions(_unit_rows)
    return spark.createDataFrame(rdd.map(lambda r: tuple(r[k] for k in ROW_FIELDS)), schema=row_schema())


def run_conform(
    spark: SparkSession,
    units: list[WorkUnit],
    out: Path,
    *,
    master: str,
    partitions: int | None = None,
) -> ConformSummary:
    """Run every unit, write out/{traces,coverage,signatures} (Parquet), out/shortest/*,
    out/summary.json; return the summary (with the signature table)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    started = time.monotonic()
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    df = rows_dataframe(spark, units, partitions).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        df.drop("artifact").write.mode("overwrite").parquet(str(out / "traces"))
        counts = {r["verdict"]: r["n"] for r in df.groupBy("verdict").agg(F.count("*").alias("n")).collect()}
        steps = df.agg(F.sum(F.when(F.col("verdict") == CONFORMS, F.col("length")).otherwise(F.col("step")))).first()
        coverage = _write_coverage(spark, df, out)
        bug = next((u.bug for u in units if u.bug), None)
        table = _write_signatures(spark, df, out, bug)
    finally:
        df.unpersist()
    seconds = time.monotonic() - started
    total = sum(counts.values())
    summary = ConformSummary(
        traces=total,
        conforms=counts.get(CONFORMS, 0),
        diverged=counts.get(DIVERGES, 0),
        not_behaviour=counts.get(NOT_BEHAVIOUR, 0),
        malformed=counts.get(MALFORMED, 0),
        signatures=len(table),
        steps=int((steps[0] if steps else 0) or 0),
        seconds=seconds,
        traces_per_s=total / seconds if seconds > 0 else 0.0,
        master=master,
        partitions=max(1, min(len(units), partitions or len(units))) if units else 0,
        units=len(units),
        signature_table=table,
        coverage=coverage,
    )
    data = asdict(summary)
    data.pop("coverage")
    data["coverage_reached"] = {
        kind: [sum(1 for k, _, h in coverage if k == kind and h), sum(1 for k, _, _ in coverage if k == kind)]
        for kind in ("spec_action", "impl_cell")
    }
    (out / "summary.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return summary


def _write_coverage(spark: SparkSession, df: DataFrame, out: Path) -> list[tuple[str, str, int]]:
    """One row per spec action and per implementation cell, with its hits (0: never reached)."""
    from pyspark.sql import functions as F

    actions, cells = coverage_universe()
    hit = (
        df.select(F.lit("spec_action").alias("kind"), F.explode("spec_actions").alias("cell", "hits"))
        .unionByName(df.select(F.lit("impl_cell").alias("kind"), F.explode("impl_cells").alias("cell", "hits")))
        .groupBy("kind", "cell")
        .agg(F.sum("hits").cast("long").alias("hits"))
    )
    universe = spark.createDataFrame(
        [("spec_action", a) for a in actions] + [("impl_cell", c) for c in cells], "kind string, cell string"
    )
    coverage = (
        universe.join(hit, ["kind", "cell"], "full_outer")
        .fillna(0, subset=["hits"])
        .withColumn("reached", F.col("hits") > 0)
        .orderBy("kind", "cell")
    )
    coverage.coalesce(1).write.mode("overwrite").parquet(str(out / "coverage"))
    return [(r["kind"], r["cell"], int(r["hits"])) for r in spark.read.parquet(str(out / "coverage")).collect()]


def _write_signatures(spark: SparkSession, df: DataFrame, out: Path, bug: str | None = None) -> list[dict[str, Any]]:
    """Divergences grouped by (action, variable, kind); the shortest of each written out, an
    ITF trace also as a scenario file (signature_scenario.py) replayed against `bug`."""
    from pyspark.sql import functions as F

    from kgc.conformance.pipeline.signature_scenario import write_signature_scenario

    bad = df.filter(F.col("verdict").isin(DIVERGES, NOT_BEHAVIOUR)).withColumn(
        "sig_variable", F.regexp_replace(F.coalesce(F.col("variable"), F.lit("")), r"\[.*$", "")
    )
    grouped = (
        bad.groupBy(F.col("action_name"), F.col("sig_variable").alias("variable"), F.col("verdict").alias("kind"))
        .agg(
            F.count("*").alias("count"),
            F.min_by(
                F.struct("trace_id", "step", "reason", "artifact_kind", "artifact"),
                F.struct(F.coalesce(F.col("step"), F.col("length")), F.col("trace_id")),
            ).alias("shortest"),
        )
        .orderBy(F.col("count").desc(), "action_name", "variable")
    )
    rows = grouped.collect()
    shortest_dir = out / "shortest"
    table: list[dict[str, Any]] = []
    for n, r in enumerate(rows, 1):
        s = r["shortest"]
        suffix = ".itf.json" if s["artifact_kind"] == "itf" else ".recorded.json"
        file = shortest_dir / f"sig-{n:03d}-{r['action_name'] or 'unknown'}{suffix}"
        if s["artifact"]:
            shortest_dir.mkdir(exist_ok=True)
            file.write_text(s["artifact"], encoding="utf-8")
        replay = (
            f"kgc conform {file.relative_to(out)}"
            if s["artifact_kind"] == "itf"
            else f"kgc validate {file.relative_to(out)}"
        )
        scenario: dict[str, Any] = {"scenario": None, "scenario_note": "", "scenario_fails_at": None}
        if s["artifact"] and s["artifact_kind"] == "itf":
            scenario_file = file.with_name(file.name[: -len(".itf.json")] + ".scenario.json")
            scenario = write_signature_scenario(file, scenario_file, bug, note=s["reason"] or "")
            if scenario["scenario"]:
                scenario["scenario"] = str(scenario_file.relative_to(out))
                scenario["scenario_replay"] = f"kgc replay {scenario['scenario']}" + (f" --bug {bug}" if bug else "")
        table.append(
            {
                "signature": n,
                "action": r["action_name"],
                "variable": r["variable"],
                "kind": r["kind"],
                "count": r["count"],
                "shortest_trace": s["trace_id"],
                "shortest_step": s["step"],
                "example": s["reason"],
                "file": str(file.relative_to(out)) if s["artifact"] else None,
                "replay": replay,
                **scenario,
            }
        )
    spark.createDataFrame(
        [
            (
                t["signature"],
                t["action"],
                t["variable"],
                t["kind"],
                t["count"],
                t["shortest_trace"],
                t["shortest_step"],
                t["example"],
                t["file"],
                t["scenario"],
                t["scenario_fails_at"],
            )
            for t in table
        ],
        "signature int, action string, variable string, kind string, count long, shortest_trace string, "
        "shortest_step int, example string, file string, scenario string, scenario_fails_at int",
    ).coalesce(1).write.mode("overwrite").parquet(str(out / "signatures"))
    return table
