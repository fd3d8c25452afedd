"""`kgc bench pipeline`: the per-core cost of `kgc pipeline conform`, and how it scales on Spark.

Measured on one corpus (model default, depth 40), each against a baseline run in the same
process on the same traces; the per-core measures count CPU seconds of this process
(time.process_time), so other load on the machine does not make them look slower:
- ITF conversion, traces/s on one core: TLC's simulate output parsed straight into the driver's
  form with one value memo per TLC run (the pipeline), against `kgc simulate` + `kgc conform`'s
  path (parse with a per-file memo, write ITF, read ITF back);
- conform, spec steps/s on one core: in memory, coverage counted, schema checked once per run,
  abstraction kept incrementally (the pipeline), against the same with the whole abstract state
  rebuilt every step, and against `kgc conform`'s conform_trace on the ITF files;
- Spark: traces/s of the whole pipeline (TLC included) on local[1] and local[2], same corpus;
  the ratio is the scaling on this machine's 2 cores. The rows of both runs must be equal.
Targets (issue 13): ITF conversion >= 1,500 traces/s per core, conform >= 30,000 steps/s per
core, local[2]/local[1] >= 1.7.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from kgc.tools.bench.result import BenchCheckFailed, BenchOptions, BenchResult, BenchUnavailable

__all__ = ["pipeline_benchmark"]

ITF_TARGET = 1_500
CONFORM_TARGET = 30_000
SCALING_TARGET = 1.7


def _conversion(files: list[Path], out: Path) -> tuple[dict[str, float], list[list[dict[str, Any]]]]:
    """(timings, the states of every trace as the pipeline parses them)."""
    from kgc.conformance.mbt import parse_simulation_file
    from kgc.spec.itf import read_itf, write_itf

    texts = [f.read_text(encoding="utf-8") for f in files]
    started = time.process_time()
    read_back = []
    for n, text in enumerate(texts):  # the baseline: kgc simulate then kgc conform's reading
        trace = parse_simulation_file(text)
        target = out / f"trace-{n:05d}.itf.json"
        write_itf(target, trace, source="GroupCoordinator", meta={"model": "default"})
        read_back.append(read_itf(target)[1])
    baseline = time.process_time() - started
    started = time.process_time()
    memo: dict[str, Any] = {}
    parsed = [[s.values for s in parse_simulation_file(text, memo).states] for text in texts]
    fast = time.process_time() - started
    if parsed != read_back:
        raise BenchCheckFailed("TLC's output parsed straight differs from the same traces through ITF")
    return {"baseline_s": baseline, "pipeline_s": fast}, parsed


def _conform(states: list[list[dict[str, Any]]], itf_dir: Path, constants: Any) -> dict[str, float]:
    from kgc.conformance.mbt import conform_states, conform_trace
    from kgc.conformance.pipeline.conform_task import _Coverage

    files = sorted(itf_dir.glob("trace-*.itf.json"))
    started = time.process_time()
    base_steps = sum(conform_trace(f, constants=constants).steps for f in files)
    baseline = time.process_time() - started

    def in_memory(incremental: bool) -> tuple[float, int]:
        started = time.process_time()
        steps = 0
        for n, trace in enumerate(states):
            outcome, _ = conform_states(
                f"t{n}", trace, constants, on_step=_Coverage(), check_shape=n == 0, incremental=incremental
            )
            if outcome.verdict != "CONFORMS":
                raise BenchCheckFailed(
                    f"pipeline conform: trace {n} did not conform: {outcome.divergence or outcome.error}"
                )
            steps += outcome.steps
        return time.process_time() - started, steps

    rebuild, rebuild_steps = in_memory(False)
    fast, steps = in_memory(True)
    if steps != base_steps or rebuild_steps != base_steps:
        raise BenchCheckFailed(f"pipeline conform took {steps}/{rebuild_steps} steps, kgc conform {base_steps}")
    return {"baseline_s": baseline, "rebuild_s": rebuild, "pipeline_s": fast, "steps": steps}


def _spark_rate(master: str, units: list[Any], out: Path) -> tuple[float, Any, list[tuple]]:
    from kgc.conformance.pipeline.conform_job import run_conform
    from kgc.conformance.pipeline.session import spark_session

    with spark_session(master, "kgc bench pipeline", 2) as spark:
        spark.sparkContext.parallelize([0, 1], 2).count()  # start the Python workers outside the timing
        started = time.perf_counter()
        summary = run_conform(spark, units, out, master=master)
        seconds = time.perf_counter() - started
        rows = sorted(
            tuple(r[k] for k in ("trace_id", "verdict", "length", "step"))
            for r in spark.read.parquet(str(out / "traces")).collect()
        )
    return summary.traces / seconds, summary, rows


def pipeline_benchmark(options: BenchOptions) -> BenchResult:
    from kgc.conformance.pipeline.conform_job import plan_units
    from kgc.conformance.pipeline.conform_task import WorkUnit, simulate_raw
    from kgc.conformance.pipeline.session import spark_available

    traces = 120 if options.quick else 2000
    spark_traces = 160 if options.quick else 4000
    work = Path(tempfile.mkdtemp(prefix="kgc-bench-pipeline-"))
    try:
        options.say(f"pipeline: TLC simulate {traces} traces of depth 40")
        unit = WorkUnit("simulate", options.seed, traces, "default", 40)
        _, constants, files = simulate_raw(unit, work / "sim")
        itf_dir = work / "itf"
        itf_dir.mkdir()
        options.say("pipeline: ITF conversion, baseline and pipeline")
        conv, states = _conversion(files, itf_dir)
        options.say("pipeline: conform, baseline and pipeline")
        conf = _conform(states, itf_dir, constants)
        rows = [
            {
                "measure": "ITF conversion (traces/s/core)",
                "baseline": round(len(files) / conv["baseline_s"], 1),
                "pipeline": round(len(files) / conv["pipeline_s"], 1),
                "target": ITF_TARGET,
            },
            {
                "measure": "conform, incremental vs full abstraction (spec steps/s/core)",
                "baseline": round(conf["steps"] / conf["rebuild_s"]),
                "pipeline": round(conf["steps"] / conf["pipeline_s"]),
                "target": CONFORM_TARGET,
            },
            {
                "measure": "conform (spec steps/s/core)",
                "baseline": round(conf["steps"] / conf["baseline_s"]),
                "pipeline": round(conf["steps"] / conf["pipeline_s"]),
                "target": CONFORM_TARGET,
            },
        ]
        for r in rows:
            r["ratio"] = round(r["pipeline"] / r["baseline"], 2)
        summary: dict[str, Any] = {
            "itf_traces_per_s": rows[0]["pipeline"],
            "itf_speedup": rows[0]["ratio"],
            "conform_steps_per_s": rows[2]["pipeline"],
            "conform_speedup": rows[2]["ratio"],
            "incremental_over_full": rows[1]["ratio"],
        }
        if not spark_available():
            raise BenchUnavailable("the spark extra is not installed (pip install 'kgc[spark]')")
        units = plan_units(
            model="default", traces=spark_traces, depth=40, seed=options.seed + 1, bug=None,
            slice_size=max(1, spark_traces // 8),
        )  # fmt: skip
        rates = {}
        results = {}
        for master in ("local[1]", "local[2]"):
            options.say(f"pipeline: {spark_traces} traces on {master}")
            rate, s, got = _spark_rate(master, units, work / master.replace("[", "").replace("]", ""))
            rates[master], results[master] = rate, got
            rows.append(
                {"measure": f"pipeline on {master} (traces/s)", "baseline": None, "pipeline": round(rate, 1),
                 "target": None, "ratio": None, "steps": s.steps}
            )  # fmt: skip
        if results["local[1]"] != results["local[2]"]:
            raise BenchCheckFailed("local[1] and local[2] gave different rows")
        scaling = rates["local[2]"] / rates["local[1]"]
        rows[-1]["ratio"] = round(scaling, 2)
        rows[-1]["target"] = SCALING_TARGET
        summary.update(local1_traces_per_s=round(rates["local[1]"], 1), local2_traces_per_s=round(rates["local[2]"], 1))
        summary["scaling_local2_over_local1"] = round(scaling, 2)
        return BenchResult(
            name="pipeline",
            ok=True,
            columns=["measure", "baseline", "pipeline", "ratio", "target"],
            rows=rows,
            summary=summary,
            notes=[
                f"{len(files)} traces of depth <= 40 from model default ({conf['steps']} spec steps) for the "
                "per-core measures; the Spark runs include TLC simulation, Parquet writing and the aggregations"
            ],
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
