"""`kgc bench tlc`: what a second TLC worker buys on the default model (the `kgc check` run).

Runs the same model twice through kgc.spec.tlc (the real TLC subprocess), with 1 and then 2
workers, and reports wall time and distinct states per second. Both runs must reach the same
verdict and the same number of distinct states, else the result is not ok: a speed-up that
changes the answer is no speed-up.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from kgc.tools.bench.result import BenchOptions, BenchResult, BenchUnavailable

DEFAULT_MODEL = "default"
QUICK_MODEL = "smoke"  # used by --quick when it exists (every property in ~12 s)
WORKERS = (1, 2)
TIMEOUT_S = 1800.0
QUICK_TIMEOUT_S = 300.0


def _tlc_api() -> tuple[Any, Any]:
    try:
        from kgc.spec import catalog as spec_models
        from kgc.spec import tlc
    except ImportError as err:
        raise BenchUnavailable(f"tlc benchmark not yet available: kgc.spec.tlc cannot be imported ({err})") from None
    return tlc, spec_models


def tlc_benchmark(options: BenchOptions) -> BenchResult:
    """The registry entry: the default model (the small one under --quick, when it exists)."""
    _tlc, spec_models = _tlc_api()
    name = QUICK_MODEL if options.quick and QUICK_MODEL in spec_models.available_models() else DEFAULT_MODEL
    try:
        model = spec_models.resolve_model(name)
    except spec_models.ModelNotFoundError as err:
        raise BenchUnavailable(f"tlc benchmark not yet available: {err}") from None
    return compare_workers(model, timeout_s=QUICK_TIMEOUT_S if options.quick else TIMEOUT_S, options=options)


def compare_workers(
    model: Any,
    *,
    workers: tuple[int, ...] = WORKERS,
    timeout_s: float = TIMEOUT_S,
    options: BenchOptions = BenchOptions(),
) -> BenchResult:
    """Checks `model` (a kgc.spec.catalog.Model) once per worker count."""
    tlc, _spec_models = _tlc_api()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kgc-bench-tlc-") as scratch:
        for n in workers:
            options.say(f"tlc: model {model.name} with {n} worker(s)")
            job = tlc.TlcJob(
                module=model.module, config=model.config, modules=model.modules, workers=n, timeout=timeout_s
            )
            result = tlc.run_tlc(job, tlc.make_run_dir(Path(scratch), model.name))
            wall = result.wall_seconds or 0.0
            rows.append(
                {
                    "model": model.name,
                    "workers": n,
                    "outcome": result.outcome.value if result.outcome is not None else None,
                    "distinct_states": result.distinct_states,
                    "states_generated": result.states_generated,
                    "wall_s": round(wall, 2),
                    "distinct_per_s": round(result.distinct_states / wall) if result.distinct_states and wall else None,
                }
            )
    first = rows[0]
    notes = [f"TLC 2.15 via kgc.spec.tlc, model {model.name!r}; wall time includes JVM start and parsing"]
    timed_out = any(r["outcome"] == "timeout" for r in rows)
    if timed_out:
        # A run cut short proves nothing about agreement and gives no speed-up to quote.
        agree = True
        notes.append(f"a run hit the {timeout_s:.0f} s timeout: no agreement check, no speed-up")
    else:
        agree = all(r["outcome"] == first["outcome"] and r["distinct_states"] == first["distinct_states"] for r in rows)
    summary: dict[str, Any] = {
        "agree": None if timed_out else agree,
        "timed_out": timed_out,
        "timing_claims": not options.quick and not timed_out,
    }
    for r in rows[1:]:
        if not timed_out and first["wall_s"] and r["wall_s"]:
            summary[f"speedup_{r['workers']}_over_{first['workers']}"] = round(first["wall_s"] / r["wall_s"], 3)
    if not agree:
        notes.append("the runs disagree on the outcome or the number of distinct states")
    return BenchResult(
        name="tlc",
        ok=agree,
        columns=["model", "workers", "outcome", "distinct_states", "states_generated", "wall_s", "distinct_per_s"],
        rows=rows,
        summary=summary,
        notes=notes,
    )
