"""`kgc bench purgatory|tlc|replay|pipeline|serve|logs|fuzz|all [--json] [--quick] [--gc on|off|both]`: run benchmarks, print, keep results.

Every run writes bench/results/<name>-<timestamp>.json (the results plus the machine they were
measured on) and, for benchmarks with a plotter, a PNG beside it. The table goes to stdout;
progress goes to stderr; with --json the last stdout line is one JSON object (the same content
as the file, plus the paths written).

Exit codes: 0 every requested benchmark ran and its checks held; 1 unknown benchmark name or --gc mode;
30 a benchmark's correctness check failed (its numbers are void); 31 the benchmark asked for
by name is not available yet (`all` skips unavailable ones, listing why, and exits 0).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from kgc.tools.bench import BENCHMARKS, PLOTTERS, BenchCheckFailed, BenchOptions, BenchResult, BenchUnavailable
from kgc.tools.bench.machine import describe_machine

# kgc.tools.bench is light (the registry imports each benchmark only when it runs).
from kgc.tools.outdir import writable_dir

EXIT_OK, EXIT_USAGE, EXIT_CHECK_FAILED, EXIT_UNAVAILABLE = 0, 1, 30, 31
DEFAULT_OUT = Path("bench") / "results"
GC_MODES = ("on", "off", "both")


@dataclass
class BenchReport:
    requested: str
    quick: bool
    machine: dict[str, Any]
    timestamp: str
    results: list[BenchResult] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if self.failed or any(not r.ok for r in self.results):
            return EXIT_CHECK_FAILED
        if self.requested != "all" and self.unavailable:
            return EXIT_UNAVAILABLE
        return EXIT_OK

    def to_json(self) -> dict[str, Any]:
        return {
            "kgc_bench": 1,
            "requested": self.requested,
            "quick": self.quick,
            "timestamp": self.timestamp,
            "machine": self.machine,
            "ok": self.exit_code == EXIT_OK,
            "exit_code": self.exit_code,
            "results": {r.name: r.to_json() for r in self.results},
            "unavailable": self.unavailable,
            "failed": self.failed,
            "files": self.files,
        }


def run_bench(
    name: str,
    *,
    quick: bool = False,
    out_dir: Path = DEFAULT_OUT,
    seed: int = 0,
    gc: str = "on",
    progress: Callable[[str], None] | None = None,
    benchmarks: dict[str, Callable[[BenchOptions], BenchResult]] | None = None,
    baseline: str | None = None,
) -> BenchReport:
    """Runs `name` (or every registered benchmark for "all") and writes the result files.

    Raises KeyError for an unknown name. A failed correctness check is recorded, not raised,
    so the files still say what happened.
    """
    registry = BENCHMARKS if benchmarks is None else benchmarks
    if name != "all" and name not in registry:
        raise KeyError(f"unknown benchmark {name!r}; choose from {', '.join([*registry, 'all'])}")
    names = list(registry) if name == "all" else [name]
    now = datetime.now()
    report = BenchReport(
        requested=name, quick=quick, machine=describe_machine(), timestamp=now.isoformat(timespec="seconds")
    )
    options = BenchOptions(quick=quick, seed=seed, gc=gc, progress=progress, baseline=baseline)
    for bench in names:
        try:
            report.results.append(registry[bench](options))
        except BenchUnavailable as err:
            report.unavailable[bench] = str(err)
        except BenchCheckFailed as err:
            report.failed[bench] = str(err)

    stem = f"{name}-{now.strftime('%Y%m%d-%H%M%S')}{'-quick' if quick else ''}"
    out_dir.mkdir(parents=True, exist_ok=True)
    for result in report.results:
        plotter = PLOTTERS.get(result.name)
        if plotter is not None:
            report.files.append(str(plotter(result, out_dir / f"{stem}-{result.name}.png")))
    json_path = out_dir / f"{stem}.json"
    report.files.insert(0, str(json_path))
    json_path.write_text(json.dumps(report.to_json(), indent=2) + "\n")
    return report


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.3g}"
    return str(value)


def render(report: BenchReport, console: Console) -> None:
    for result in report.results:
        table = Table(title=f"kgc bench {result.name}" + (" (--quick)" if report.quick else ""))
        for column in result.columns:
            table.add_column(result.labels.get(column, column.replace("_", " ")), justify="right")
        for row in result.rows:
            table.add_row(*(_cell(row.get(c)) for c in result.columns))
        console.print(table)
        for key, value in result.summary.items():
            console.print(f"  {key}: {json.dumps(value)}", soft_wrap=True)
        for note in result.notes:
            console.print(f"  note: {note}", soft_wrap=True)
    for bench, reason in report.unavailable.items():
        console.print(f"[yellow]{bench}: not available[/yellow]: {reason}", soft_wrap=True)
    for bench, reason in report.failed.items():
        console.print(f"[red]{bench}: CHECK FAILED[/red]: {reason}", soft_wrap=True)
    machine = report.machine
    console.print(
        f"machine: {machine['cpu_model']}, {machine['usable_cores']} cores, load {machine['load_average_at_start']} at the start, "
        f"speed probe {machine['speed_probe_loop_cpu_ms']} ms (rates compare across runs only at similar probes)",
        soft_wrap=True,
    )
    for path in report.files:
        console.print(f"wrote {path}", soft_wrap=True)


def bench_command(
    benchmark: str = typer.Argument("all", help="purgatory, tlc, replay, pipeline, serve, logs, fuzz or all."),
    json_output: bool = typer.Option(False, "--json", help="End with one JSON object on the last line."),
    quick: bool = typer.Option(
        False, "--quick", help="Small sizes: check everything runs and agrees; no timing claims."
    ),
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="Folder for the result JSON and plots."),
    seed: int = typer.Option(0, "--seed", help="Seed of the generated workloads."),
    gc: str = typer.Option(
        "on",
        "--gc",
        help="Purgatory timing passes with the garbage collector on (default, the headline), off, or both.",
    ),
    # named by typer from the parameter (--baseline): no new literal for Hypothesis's constant pool,
    # which the draw-sensitive tests share with every kgc module they import (scripts/test.sh)
    baseline: str | None = typer.Option(
        None,
        help="replay: also measure git revision REV's handler and replay rates in turns with this tree's "
        "(same run, a worktree and venv of REV) and print the ratios against the targets'.",
    ),
) -> None:
    """Benchmark kgc's parts: the timing-wheel purgatory against heapq (asyncio's way) and
    sched; TLC with 1 vs 2 workers. Results and plots go to bench/results/."""
    console = Console(width=None if sys.stdout.isatty() else 160)
    errors = Console(stderr=True)
    writable_dir(out, "--out", "bench")
    if gc not in GC_MODES:
        errors.print(f"[red]--gc: {gc!r} is not one of {', '.join(GC_MODES)}[/red]")
        raise typer.Exit(EXIT_USAGE)
    try:
        report = run_bench(
            benchmark,
            quick=quick,
            out_dir=out,
            seed=seed,
            gc=gc,
            progress=lambda m: errors.print(f"[dim]{m}[/dim]"),
            baseline=baseline,
        )
    except KeyError as err:
        errors.print(f"[red]{err.args[0]}[/red]")
        raise typer.Exit(EXIT_USAGE) from None
    except ModuleNotFoundError as err:
        # an optional extra is missing (matplotlib for the plots: the bench extra)
        typer.echo(
            f"kgc bench: error: {err.name} is not installed; install the extra: pip install 'kgc[bench]'", err=True
        )
        raise typer.Exit(2) from None
    render(report, console)
    if json_output:
        sys.stdout.flush()
        print(json.dumps(report.to_json()), flush=True)
    raise typer.Exit(report.exit_code)


def register(app: typer.Typer) -> None:
    app.command("bench")(bench_command)
