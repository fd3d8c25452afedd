"""`kgc mutate --master`: the mutants run as Spark tasks, one mutant per task by default.

Each task runs conformance/mutate_run.py's `run_one_mutant`, the function the local pool runs,
so a mutant gets the same verdicts either way; the task returns plain rows and the driver
rebuilds the MutantResults around its own Mutant records (the draw and the baseline check stay
on the driver).

An RDD (parallelize + mapPartitions), not a DataFrame with mapInPandas: a task's work is a few
detector subprocesses, not columns, and a Mutant (a small frozen dataclass carrying the module's
source) pickles as it is; a one-slice parallelize puts exactly the mutants we choose in a task,
where mapInPandas would batch rows through Arrow and need a schema for the per-detector dicts.

Each slice is a Spark job of its own, submitted from a driver thread, so a slice's verdicts reach
the caller (`on_done`: kgc mutate's "[k/N] mutant: verdicts" lines) when it ends, as in the
local pool, not all at once when the last one ends; Spark runs the jobs' tasks as its cores free
(one job of N tasks would return nothing before all N end).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
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
    on_done: Callable[[MutantResult], None] | None = None,
) -> list[MutantResult]:
    """Every mutant against every detector on `spark`, in the order of `mutants`; `on_done` sees
    each result as its slice ends. The workers run on this machine (local mode, or a standalone
    cluster started here): `traces` is a path they read, and their interpreter is the driver's
    (conformance/pipeline/session.py)."""
    if not mutants:
        return []
    pairs = list(enumerate(mutants))
    n = min(partitions or len(mutants), len(mutants))
    chunks = [pairs[k * len(pairs) // n : (k + 1) * len(pairs) // n] for k in range(n)]
    task = _task(list(detectors), budget, str(traces) if traces is not None else None, fuzz_examples, first_kill)
    sc = spark.sparkContext
    results: list[MutantResult] = [MutantResult(m) for m in mutants]

    def job(chunk: list[tuple[int, Mutant]]) -> list[Row]:
        return sc.parallelize(chunk, 1).mapPartitions(task).collect()  # type: ignore[no-any-return]

    # Enough jobs outstanding to keep every core of the master busy, not one thread per mutant.
    pool = ThreadPoolExecutor(max_workers=min(n, 2 * max(sc.defaultParallelism, 1)))
    try:
        for future in as_completed([pool.submit(job, chunk) for chunk in chunks]):
            for index, outcomes, seconds, evidence in future.result():
                r = results[index]
                r.outcomes, r.seconds, r.evidence = outcomes, seconds, evidence
                if on_done is not None:
                    on_done(r)
    except BaseException:  # a failed job or Ctrl-C: the other jobs would run to the end otherwise
        sc.cancelAllJobs()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return results
