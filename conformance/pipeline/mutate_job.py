"""`kgc mutate --master`: the mutants run as Spark tasks, one mutant per task by default.

Each task runs conformance/mutate_run.py's `run_one_mutant`, the function the local pool runs,
so a mutant gets the same verdicts either way; the task returns plain rows and the driver
rebuilds the MutantResults around its own Mutant records (the draw and the baseline check stay
on the driver).

An RDD (parallelize + mapPartitions), not a DataFrame with mapInPandas: a task's work is a few
detector subprocesses, not columns, and a Mutant (a small frozen dataclass carrying the module's
source) pickles as it is; `numSlices` puts exactly one mutant in a task, where mapInPandas would
batch rows through Arrow and need a schema for the per-detector dicts.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgc.conformance.mutate import Mutant
from kgc.conformance.mutate_run import MutantResult, run_one_mutant

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ["run_mutants_on_spark"]

Row = tuple[int, dict[str, str], dict[str, float], dict[str, str]]


def _task(detectors: Sequence[str], budget: float, traces: str | None, fuzz_examples: int, first_kill: bool) -> Any:
    """The function a partition runs: its (index, mutant) pairs to result rows."""

    folder = Path(traces) if traces is not None else None

    def run(pairs: Iterator[tuple[int, Mutant]]) -> Iterator[Row]:
        with tempfile.TemporaryDirectory(prefix="kgc-mutate-task-") as tmp:
            for index, mutant in pairs:
                r = run_one_mutant(
                    mutant, detectors, budget, folder, fuzz_examples, first_kill, Path(tmp) / f"m{index}"
                )
                yield index, r.outcomes, r.seconds, r.evidence

    return run


def run_mutants_on_spark(
    spark: SparkSession,
    mutants: Sequence[Mutant],
    detectors: Sequence[str],
    budget: float,
    traces: Path | None,
    fuzz_examples: int,
    first_kill: bool = False,
    partitions: int | None = None,
) -> list[MutantResult]:
    """Every mutant against every detector on `spark`, in the order of `mutants`. The workers run
    on this machine (local mode, or a standalone cluster started here): `traces` is a path they
    read, and their interpreter is the driver's (conformance/pipeline/session.py)."""
    if not mutants:
        return []
    slices = min(partitions or len(mutants), len(mutants))
    rdd = spark.sparkContext.parallelize(list(enumerate(mutants)), numSlices=slices)
    task = _task(list(detectors), budget, str(traces) if traces is not None else None, fuzz_examples, first_kill)
    rows: list[Row] = rdd.mapPartitions(task).collect()
    results: list[MutantResult] = [MutantResult(m) for m in mutants]
    for index, outcomes, seconds, evidence in rows:
        results[index].outcomes, results[index].seconds, results[index].evidence = outcomes, seconds, evidence
    return results
