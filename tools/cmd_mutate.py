"""`kgc mutate`: mutation testing of impl/ -- how many small semantic changes to the coordinator
each detector (replay, conform, validate, fuzz) notices.

Mutants come from conformance/mutate.py (an AST mutator; the repository is never edited) and
run through conformance/mutate_run.py (one subprocess per mutant and detector, a time budget
each, --jobs mutants at a time). Prints one line per mutant as it finishes, then the kill rate
per detector and for all of them together, and writes a markdown page of the survivors with
their diffs (--page). Exit 0 when it ran (the scores are the result, not a verdict), 1 for bad
usage, 27 when a detector fails on the unmutated code (its verdicts would mean nothing).

With --master the mutants run as Spark tasks (conformance/pipeline/mutate_job.py), the same
per-mutant function as the local pool, so the verdicts are the same; exit codes as `kgc pipeline
conform`'s: 2 PySpark or Java missing (the install hint), 21 the Spark job failed (a bad master).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from kgc.tools.cmd_pipeline_conform import EXIT_MISSING
from kgc.tools.exit_codes import ExitCode

__all__ = ["mutate_command", "register", "survivors_page"]


def survivors_page(results: list, detectors: list[str], rates: dict[str, float]) -> str:  # type: ignore[type-arg]
    """Markdown: the scores, then every mutant no detector killed, with its diff."""
    lines = ["# Surviving mutants", "", "| detector | kill rate |", "|---|---|"]
    lines += [f"| {d} | {rates[d]:.1f} % |" for d in [*detectors, "all"]]
    lines.append("")
    for r in results:
        if r.killed_by(detectors):
            continue
        lines += [f"## {r.mutant.ident}", "", "```diff", r.mutant.diff().rstrip(), "```", ""]
    return "\n".join(lines) + "\n"


def mutate_command(
    detectors: Annotated[
        str, typer.Option(help="Comma-separated: replay,conform,validate,fuzz.")
    ] = "replay,conform,validate,fuzz",
    modules: Annotated[
        str, typer.Option(help="Comma-separated impl modules: coordinator,delayed,group,timer,purgatory.")
    ] = "coordinator,delayed",
    sample: Annotated[
        int | None, typer.Option(min=1, help="Run this many mutants drawn with --seed (default: all).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the --sample draw.")] = 0,
    jobs: Annotated[int, typer.Option(min=1, help="Mutants at a time.")] = 1,
    budget: Annotated[float, typer.Option(min=1, help="Seconds per detector per mutant.")] = 180.0,
    fuzz_examples: Annotated[int, typer.Option(min=1, help="Hypothesis examples per fuzz run.")] = 100,
    traces: Annotated[Path | None, typer.Option(help="Spec traces for conform (default: 20 simulated now).")] = None,
    page: Annotated[Path | None, typer.Option(help="Write the survivors' markdown page here.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="End with one JSON object on stdout.")] = False,
    first_kill: Annotated[
        bool,
        typer.Option(
            "--first-kill",
            help="Stop a mutant's detectors at the first that kills it (--detectors order): the together "
            "score is the same, a later detector's is a lower bound.",
        ),
    ] = False,
    master: Annotated[
        str | None,
        typer.Option(
            help="Run the mutants on Spark: local[*], local[N], spark://HOST:PORT (--jobs is then the master's cores)."
        ),
    ] = None,
    partitions: Annotated[
        int | None, typer.Option(min=1, help="With --master: Spark tasks (default: one per mutant).")
    ] = None,
) -> None:
    """Mutation testing of impl/: kill rate per detector, surviving mutants with their diff."""
    from kgc.conformance.mutate import IMPL_MODULES, sample_mutants
    from kgc.conformance.mutate_run import DETECTORS, detector_argv, run_detector, run_mutants, scores

    dets = [d for d in detectors.split(",") if d]
    mods = [m for m in modules.split(",") if m]
    bad = [d for d in dets if d not in DETECTORS] + [m for m in mods if m not in IMPL_MODULES]
    if bad or not dets or not mods:
        typer.echo(
            f"kgc mutate: error: unknown detector or module {bad!r} (detectors {DETECTORS}, modules {tuple(IMPL_MODULES)})",
            err=True,
        )
        raise typer.Exit(int(ExitCode.USAGE))
    if traces is not None and not traces.is_dir():
        typer.echo(f"kgc mutate: error: --traces {traces}: not a folder", err=True)
        raise typer.Exit(int(ExitCode.USAGE))

    stack = contextlib.ExitStack()
    spark = _start_spark(stack, master, partitions) if master is not None else None
    with stack, tempfile.TemporaryDirectory(prefix="kgc-mutate-base-") as tmp:
        if "conform" in dets and traces is None:
            traces = Path(tmp) / "traces"
            typer.echo("simulating 20 spec traces for conform ...", err=True)
            subprocess.run(
                [sys.executable, "-m", "kgc.tools.entry", "simulate", "--traces", "20", "--out", str(traces)],
                check=False, capture_output=True,
            )  # fmt: skip
        for det in dets:  # every detector must pass the unmutated code, or its kills mean nothing
            outcome, took, last = run_detector(
                detector_argv(det, Path(tmp) / det, traces, fuzz_examples), None, budget, Path(tmp) / det
            )
            typer.echo(f"baseline {det}: {outcome} in {took:.0f} s", err=True)
            if outcome != "survived":
                typer.echo(f"kgc mutate: error: {det} fails on the unmutated code: {last}", err=True)
                raise typer.Exit(int(ExitCode.BASELINE_FAILED))

        mutants = sample_mutants(mods, sample, seed)
        done = [0]

        def progress(r: object) -> None:
            done[0] += 1
            res = r  # MutantResult
            verdicts = " ".join(f"{d}={res.outcomes[d]}" for d in dets)  # type: ignore[attr-defined]
            typer.echo(f"[{done[0]}/{len(mutants)}] {res.mutant.ident}: {verdicts}", err=True)  # type: ignore[attr-defined]

        if spark is None:
            results = run_mutants(
                mutants, dets, budget, jobs, traces, fuzz_examples, on_done=progress, first_kill=first_kill
            )
        else:
            results = _run_on_spark(
                spark, mutants, dets, budget, traces, fuzz_examples, first_kill, partitions, progress
            )

    rates = scores(results, dets)
    survivors = [r for r in results if not r.killed_by(dets)]
    typer.echo(f"kgc mutate ({','.join(mods)}): {len(results)} mutants")
    for d in [*dets, "all"]:
        ran = sum(r.outcomes.get(d) != "skipped" for r in results) if d != "all" else len(results)
        note = f" (ran on {ran}: a lower bound)" if ran < len(results) else ""
        typer.echo(f"  {d:9} kills {rates[d]:5.1f} %{note}")
    for r in survivors:
        typer.echo(f"survived {r.mutant.ident}")
        typer.echo(r.mutant.diff().rstrip())
    if page is not None:
        page.write_text(survivors_page(results, dets, rates))
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "mutants": len(results),
                    "kill_rate": rates,
                    "results": [
                        {"mutant": r.mutant.ident, "outcomes": r.outcomes, "evidence": r.evidence} for r in results
                    ],
                    "survivors": [r.mutant.ident for r in survivors],
                }
            )
        )
    raise typer.Exit(int(ExitCode.PASSED))


def _start_spark(stack: contextlib.ExitStack, master: str, partitions: int | None) -> object:
    """The session for --master, started before the baselines so a bad master or a missing
    PySpark fails at once, with `kgc pipeline conform`'s exit codes (2 and its install hint, 21)."""
    from kgc.conformance.pipeline.session import BadMaster, SparkMissing, spark_session

    try:
        return stack.enter_context(spark_session(master, "kgc mutate", partitions or 2))
    except SparkMissing as e:
        typer.echo(f"kgc mutate: {e}", err=True)
        raise typer.Exit(EXIT_MISSING) from None
    except BadMaster as e:  # refused before any JVM starts: bad usage, as in `kgc pipeline logs`
        typer.echo(f"kgc mutate: --master: {e}", err=True)
        raise typer.Exit(int(ExitCode.USAGE)) from None
    except Exception as e:  # noqa: BLE001 - a Spark that does not start is one line, not a JVM stack
        typer.echo(f"kgc mutate: error: the Spark job failed: {_first_line(e)}", err=True)
        raise typer.Exit(int(ExitCode.TLC_ERROR)) from None


def _run_on_spark(
    spark: object,
    mutants: list,  # type: ignore[type-arg]
    dets: list[str],
    budget: float,
    traces: Path | None,
    fuzz_examples: int,
    first_kill: bool,
    partitions: int | None,
    progress: Callable[[object], None],
) -> list:  # type: ignore[type-arg]
    """The mutants as Spark jobs; each slice's "[k/N]" lines print when it ends (a stage bar of
    one-task jobs would say less)."""
    from kgc.conformance.pipeline.mutate_job import run_mutants_on_spark

    try:
        return run_mutants_on_spark(
            spark,  # type: ignore[arg-type]
            mutants, dets, budget, traces, fuzz_examples, first_kill, partitions, on_done=progress,
        )  # fmt: skip
    except Exception as e:  # noqa: BLE001 - a failed Spark job is one line, not a JVM stack
        typer.echo(f"kgc mutate: error: the Spark job failed: {_first_line(e)}", err=True)
        raise typer.Exit(int(ExitCode.TLC_ERROR)) from None


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return (text.splitlines()[0] if text else type(e).__name__)[:500]


def register(app: typer.Typer) -> None:
    app.command("mutate")(mutate_command)
