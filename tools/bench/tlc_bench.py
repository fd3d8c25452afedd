"""`kgc bench tlc`: what a second TLC worker buys on the default model (the `kgc check` run).

Runs the same model twice through kgc.tools.tlc (the real TLC subprocess), with 1 and then 2
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
QUICK_MODEL = "small"  # used by --quick when it exists
WORKERS = (1, 2)
TIMEOUT_S = 1800.0
QUICK_TIMEOUT_S = 300.0


def _tlc_api() -> tuple[Any, Any]:
    try:
        from kgc.tools import spec_models, tlc
    except ImportError as err:
        raise BenchUnavailable(f"tlc benchmark not yet available: kgc.tools.tlc cannot be imported ({err})") from None
    return tlc, spec_models


def tlc_benchmark(options: BenchOptions) -> BenchResult:
    tlc, spec_models = _tlc_api()
    known = spec_models.available_models()
    name = QUICK_MODEL if options.quick and QUICK_MODEL in known else DEFAULT_MODEL
    try:
        model = spec_models.resolve_model(name)
    except spec_models.ModelNotFoundError as err:
        raise BenchUnavailable(f"tlc benchmark not yet available: {err}") from None
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kgc-bench-tlc-") as scratch:
        for workers in WORKERS:
            options.say(f"tlc: model {name} with {workers} worker(s)")
            job = tlc.TlcJob(module=model.module, config=model.config, modules=model.modules,
                             workers=workers,
                             timeout=QUICK_TIMEOUT_S if options.quick else TIMEOUT_S)
            result = tlc.run_tlc(job, tlc.make_run_dir(Path(scratch), name))
            wall = result.wall_seconds or 0.0
            rows.append({
                "model": name,
                "workers": workers,
                "outcome": result.outcome.value if result.outcome is not None else None,
                "distinct_states": result.distinct_states,
                "states_generated": result.states_generated,
                "wall_s": round(wall, 2),
                "distinct_per_s": round(result.distinct_states / wall) if result.distinct_states and wall else None,
            })
    one, two = rows
    agree = one["outcome"] == two["outcome"] and one["distinct_states"] == two["distinct_states"]
    speedup = round(one["wall_s"] / two["wall_s"], 3) if one["wall_s"] and two["wall_s"] else None
    notes = [f"TLC 2.15 via kgc.tools.tlc, model {name!r}; wall time includes JVM start and parsing"]
    if not agree:
        notes.append("the two runs disagree on the outcome or the number of distinct states")
    return BenchResult(
        name="tlc", ok=agree,
        columns=["model", "workers", "outcome", "distinct_states", "states_generated", "wall_s", "distinct_per_s"],
        rows=rows, summary={"speedup_2_over_1": speedup, "agree": agree, "timing_claims": not options.quick},
        notes=notes)
