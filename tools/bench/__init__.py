"""Benchmarks behind `kgc bench`.

Plug a benchmark in by adding it to BENCHMARKS: a name mapped to a function that takes
BenchOptions and returns a BenchResult (result.py), raising BenchUnavailable when what it
measures does not exist yet. A benchmark that wants a picture adds a function to PLOTTERS
taking (result, path) and writing a PNG there. `kgc bench NAME` runs one, `kgc bench all`
runs them in this order.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kgc.tools.bench.result import BenchCheckFailed, BenchOptions, BenchResult, BenchUnavailable

__all__ = [
    "BENCHMARKS",
    "PLOTTERS",
    "BenchCheckFailed",
    "BenchOptions",
    "BenchResult",
    "BenchUnavailable",
]


def _purgatory(options: BenchOptions) -> BenchResult:
    from kgc.tools.bench.purgatory_bench import purgatory_benchmark

    return purgatory_benchmark(options)


def _tlc(options: BenchOptions) -> BenchResult:
    from kgc.tools.bench.tlc_bench import tlc_benchmark

    return tlc_benchmark(options)


def _replay(options: BenchOptions) -> BenchResult:
    from kgc.tools.bench.replay_bench import replay_benchmark

    return replay_benchmark(options)


def _pipeline(options: BenchOptions) -> BenchResult:
    from kgc.tools.bench.pipeline_bench import pipeline_benchmark

    return pipeline_benchmark(options)


def _serve(options: BenchOptions) -> BenchResult:
    from kgc.tools.bench.serve_bench import serve_benchmark

    return serve_benchmark(options)


def _logs(options: BenchOptions) -> BenchResult:
    from kgc.tools.bench.logs_bench import logs_benchmark

    return logs_benchmark(options)


def _fuzz(options: BenchOptions) -> BenchResult:
    from kgc.tools.bench.fuzz_bench import fuzz_benchmark

    return fuzz_benchmark(options)


def _plot_purgatory(result: BenchResult, path: Path) -> Path:
    from kgc.tools.bench.plot import plot_purgatory

    return plot_purgatory(result, path)


BENCHMARKS: dict[str, Callable[[BenchOptions], BenchResult]] = {
    "purgatory": _purgatory,
    "tlc": _tlc,
    "replay": _replay,
    "pipeline": _pipeline,
    "serve": _serve,
    "logs": _logs,
    "fuzz": _fuzz,
}

PLOTTERS: dict[str, Callable[[BenchResult, Path], Path]] = {
    "purgatory": _plot_purgatory,
}
