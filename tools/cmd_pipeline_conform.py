"""`kgc pipeline conform`: spec -> implementation conformance at corpus scale, on Spark.

The seed range is cut into slices; each Spark task runs TLC simulation for its slice (its own
run folder), drives every trace through the implementation and yields one row per trace
(conformance/pipeline/conform_task.py). `--random K` adds the other direction: K runs of the
implementation under random clients, validated by TLC in one batch per slice. `--input PATH...`
checks ITF traces or recorded runs already on disk (files, folders, JSON Lines).

Writes under --out: Parquet tables `traces`, `coverage`, `signatures`; `shortest/` (the shortest
trace of each divergence signature, for kgc conform / kgc validate, and a spec trace also as a
scenario file for kgc replay); summary.json; report.html.

Exit 0: every trace conforms / every run is a spec behaviour; 10: a trace diverged or a run is
not a behaviour; 2: no divergence but some input was malformed, or PySpark is not installed
(the message says how to install it); 1: bad options (a --master Spark would refuse included); 21: the
Spark job failed.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated

import typer

from kgc.tools.exit_codes import ExitCode
from kgc.tools.options import DEFAULT_MODEL, BugOption, JsonOption, ModelOption
from kgc.tools.outdir import writable_dir

__all__ = ["pipeline_conform_command", "register"]

EXIT_MISSING = 2  # PySpark or Java missing; also: only malformed inputs went wrong


def pipeline_conform_command(
    model: ModelOption = DEFAULT_MODEL,
    traces: Annotated[int, typer.Option(min=0, help="Spec behaviours to draw with TLC.")] = 1000,
    depth: Annotated[int, typer.Option(min=1, help="States per behaviour (and steps per random run).")] = 40,
    seed: Annotated[int, typer.Option(help="First seed: slice i of the spec traces uses seed+i.")] = 0,
    out: Annotated[Path, typer.Option(help="Folder for the Parquet tables, summary.json and report.html.")] = Path(
        "pipeline-conform"
    ),
    bug: BugOption = None,
    master: Annotated[
        str | None, typer.Option(help="Spark master: local[*] (default), local[N], spark://HOST:PORT.")
    ] = None,
    partitions: Annotated[int | None, typer.Option(min=1, help="Spark partitions (default: one per slice).")] = None,
    slice_size: Annotated[
        int | None,
        typer.Option(
            "--slice",
            min=1,
            help="Traces (and random runs) per TLC run, one Spark task's unit of work (default: the traces "
            "in 8 slices of 500 to 5,000; random runs 500 per slice).",
        ),
    ] = None,
    random_runs: Annotated[
        int, typer.Option("--random", min=0, help="Also this many random implementation runs, validated by TLC.")
    ] = 0,
    inputs: Annotated[
        list[Path] | None,
        typer.Option("--input", help="ITF traces / recorded runs (files, folders, .jsonl) to check as well."),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Conform a corpus of spec traces (and random implementation runs) on Spark."""
    from kgc.conformance.pipeline.session import BadMaster, SparkMissing, spark_session
    from kgc.conformance.seeded_bugs import coordinator_class
    from kgc.spec.catalog import ModelNotFoundError, resolve_model

    try:
        coordinator_class(bug)
        resolve_model(model)
    except (KeyError, ModelNotFoundError) as e:
        typer.echo(f"kgc pipeline conform: error: {e.args[0] if e.args else e}", err=True)
        raise typer.Exit(int(ExitCode.USAGE)) from None
    from kgc.conformance.pipeline.conform_job import DEFAULT_SLICE, auto_slice, input_files, plan_units, run_conform
    from kgc.conformance.pipeline.conform_report import write_report

    files = input_files(list(inputs or []))
    missing = [p for p in files if not p.exists()]
    if missing:
        typer.echo(f"kgc pipeline conform: error: --input {missing[0]}: no such file or folder", err=True)
        raise typer.Exit(int(ExitCode.USAGE))
    units = plan_units(
        model=model,
        traces=traces,
        depth=depth,
        seed=seed,
        bug=bug,
        slice_size=slice_size or auto_slice(traces),
        random_runs=random_runs,
        random_steps=depth,
        inputs=files,
        random_slice=slice_size or DEFAULT_SLICE,
    )
    if not units:
        typer.echo("kgc pipeline conform: error: nothing to do (--traces 0, no --random, no --input)", err=True)
        raise typer.Exit(int(ExitCode.USAGE))
    writable_dir(out, "--out", "pipeline conform")
    try:
        with spark_session(master, "kgc pipeline conform", partitions or 2) as spark:
            shown_master = spark.sparkContext.master
            with _stage_progress(spark):
                summary = run_conform(spark, units, out, master=shown_master, partitions=partitions)
    except SparkMissing as e:
        typer.echo(f"kgc pipeline conform: {e}", err=True)
        raise typer.Exit(EXIT_MISSING) from None
    except BadMaster as e:  # refused before any JVM starts: bad usage, as in `kgc pipeline logs`
        typer.echo(f"kgc pipeline conform: --master: {e}", err=True)
        raise typer.Exit(int(ExitCode.USAGE)) from None
    except Exception as e:  # noqa: BLE001 - a failed Spark job is one line, not a JVM stack
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        typer.echo(f"kgc pipeline conform: error: the Spark job failed: {first[:500]}", err=True)
        raise typer.Exit(int(ExitCode.TLC_ERROR)) from None
    write_report(out / "report.html", summary)
    for sig in summary.signature_table:
        typer.echo(
            f"SIGNATURE {sig['signature']}: {sig['action']} / {sig['variable']} ({sig['kind']}): "
            f"{sig['count']} traces; shortest {sig['shortest_trace']}: {sig['replay']}"
            + (f"; {sig['scenario_replay']}" if sig.get("scenario_replay") else "")
        )
    typer.echo(
        f"kgc pipeline conform on {summary.master}: {summary.traces} traces ({summary.units} tasks): "
        f"{summary.conforms} conform, {summary.diverged} diverge, {summary.not_behaviour} not a spec behaviour, "
        f"{summary.malformed} malformed; {summary.signatures} signatures; {summary.steps} steps in "
        f"{summary.seconds:.1f} s ({summary.traces_per_s:,.1f} traces/s); {out}/report.html"
    )
    if json_output:
        typer.echo(summary.json_line())
    if summary.failed:
        raise typer.Exit(int(ExitCode.SAFETY_VIOLATED))
    if summary.malformed:
        raise typer.Exit(EXIT_MISSING)
    raise typer.Exit(0)


class _stage_progress:
    """A rich bar of Spark's task counts, polled from the status tracker (Spark's own console
    bar is off: it would fight rich for the terminal)."""

    def __init__(self, spark: object, label: str = "kgc pipeline conform") -> None:
        self.sc = spark.sparkContext  # type: ignore[attr-defined]
        self.label = label
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> _stage_progress:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)

    def _poll(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(stderr=True)
        if not console.is_terminal:
            return self._poll_plain()
        tracker = self.sc.statusTracker()
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("tasks"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as bar:
            shown: dict[int, int] = {}
            while not self.stop.wait(0.5):
                for sid in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(sid)
                    if info is None:
                        continue
                    if sid not in shown:
                        shown[sid] = bar.add_task(f"stage {sid} {info.name[:30]}", total=info.numTasks)
                    bar.update(shown[sid], completed=info.numCompletedTasks)
        return None

    def _poll_plain(self) -> None:
        import sys

        tracker = self.sc.statusTracker()
        last: dict[int, int] = {}
        while not self.stop.wait(5):
            for sid in tracker.getActiveStageIds():
                info = tracker.getStageInfo(sid)
                if info is not None and last.get(sid) != info.numCompletedTasks:
                    last[sid] = info.numCompletedTasks
                    print(
                        f"{self.label}: stage {sid}: {info.numCompletedTasks}/{info.numTasks} tasks",
                        file=sys.stderr,
                        flush=True,
                    )


def register(app: typer.Typer) -> None:
    app.command("conform")(pipeline_conform_command)
