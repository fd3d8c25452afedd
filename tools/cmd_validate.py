"""`kgc validate TRACES...`: check with TLC that recorded implementation runs are behaviours of
the spec (implementation -> spec conformance; conformance/validate.py).

TRACES are recorded-trace files (conformance/recorded_trace.py) or folders of them (*.json).
Runs can also be recorded first: `--scenarios PATH` (scenario files or folders, lifted to spec
steps) and `--random N` (N runs of consumers doing what the spec allows, `--steps` long), with
`--bug NAME` (or KGC_IMPL_BUG) to record a seeded-bug coordinator and `--out DIR` to keep the
recorded traces. One line per trace (`OK` / `FAIL name: step N Action [origin]: why; what
differs`), then a summary with traces per minute.

Exit 0 when every trace is a behaviour of the spec, 10 when one is not, 20 when TLC could not
check a batch (the spec or the generated module did not parse, TLC crashed), 1 for bad usage.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from kgc.tools.exit_codes import ExitCode
from kgc.tools.options import BugOption, JsonOption, JunitOption
from kgc.tools.outdir import writable_dir
from kgc.tools.progress import counted

__all__ = ["register", "validate_command"]

EXIT_PASS = int(ExitCode.PASSED)
EXIT_UNEXPLAINED = int(ExitCode.SAFETY_VIOLATED)
EXIT_TLC = int(ExitCode.SPEC_ERROR)
EXIT_USAGE = int(ExitCode.USAGE)
EXIT_INPUT = 2  # a trace or scenario file kgc cannot use (as kgc replay and kgc conform)


def _trace_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        files.extend(sorted(p.rglob("*.json")) if p.is_dir() else [p])
    return files


def validate_command(
    traces: Annotated[list[Path] | None, typer.Argument(help="Recorded traces, or folders of them.")] = None,
    scenarios: Annotated[
        list[Path] | None, typer.Option("--scenarios", help="Record these scenario files (or folders) first.")
    ] = None,
    random_runs: Annotated[int, typer.Option("--random", min=0, help="Record this many random runs first.")] = 0,
    steps: Annotated[int, typer.Option(min=1, help="Steps per random run.")] = 50,
    seed: Annotated[int, typer.Option(help="First seed of the random runs.")] = 0,
    bug: BugOption = None,
    out: Annotated[Path | None, typer.Option(help="Write the recorded traces here.")] = None,
    jobs: Annotated[int | None, typer.Option(min=1, help="TLC processes at a time (default: one per core).")] = None,
    classic: Annotated[
        bool,
        typer.Option(
            "--classic", help="Also check TraceNotFinished as an invariant (TLC prints each matched trace: slower)."
        ),
    ] = False,
    work_dir: Annotated[
        Path | None, typer.Option("--keep", help="Keep the generated modules and TLC output in this folder.")
    ] = None,
    timeout: Annotated[float | None, typer.Option(min=1, help="Seconds per TLC run.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only failing traces and the summary.")] = False,
    json_output: JsonOption = False,
    junit: JunitOption = None,
    pages: Annotated[
        Path | None,
        typer.Option(help="Folder for the pages of traces that fail (default: --out, else beside --junit)."),
    ] = None,
) -> None:
    """Check with TLC that recorded implementation runs are behaviours of the spec; name, for
    each run that is not, the first step the spec cannot explain."""
    from kgc.conformance.recorded_trace import read_trace, write_trace
    from kgc.conformance.scenario import ScenarioError
    from kgc.conformance.seeded_bugs import coordinator_class
    from kgc.conformance.validate import ValidationError, validate_traces
    from kgc.spec.tlc import JavaMissingError, locate_java
    from kgc.tools.junit import junit_target

    try:
        cls = coordinator_class(bug)
    except KeyError as e:
        typer.echo(f"kgc validate: error: {e.args[0]}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    junit_target(junit, "validate")
    if pages is not None:
        writable_dir(pages, "--pages", "validate")
    recorded = []
    try:
        trace_files = _trace_files(list(traces or []))
        scenario_files = _trace_files(list(scenarios or []))
        # reading and recording come first and can take minutes: a bar of their own
        with counted("kgc validate: recording", len(trace_files) + len(scenario_files) + random_runs, "runs") as ran:
            for f in trace_files:
                recorded.append(read_trace(f))
                ran(1)
            if scenario_files:
                from kgc.conformance.recorder import record_scenario_file

                for f in scenario_files:
                    recorded.append(record_scenario_file(f, cls))
                    ran(1)
            if random_runs:
                from kgc.conformance.recorder import RANDOM_RUN_CONSTANTS, random_run

                for s in range(seed, seed + random_runs):
                    recorded.append(random_run(RANDOM_RUN_CONSTANTS, steps, s, coordinator_class=cls))
                    ran(1)
    except (OSError, ValueError, ScenarioError) as e:  # InputError is a ValueError
        typer.echo(f"kgc validate: error: {e}", err=True)
        raise typer.Exit(EXIT_INPUT) from None
    if not recorded:
        typer.echo("kgc validate: error: no traces (give files, --scenarios or --random)", err=True)
        raise typer.Exit(EXIT_USAGE)
    if out is not None:
        writable_dir(out, "--out", "validate")
        for n, t in enumerate(recorded):
            write_trace(out / f"{n:05d}-{_slug(t.name)}.json", t)

    try:
        locate_java()
    except JavaMissingError as e:
        typer.echo(f"kgc validate: error: {e}", err=True)
        raise typer.Exit(int(ExitCode.JAVA_MISSING)) from None
    started = time.monotonic()
    try:
        with counted("kgc validate", len(recorded), "traces") as advance:
            report = validate_traces(
                recorded,
                jobs=jobs,
                classic=classic,
                work_dir=work_dir,
                keep=work_dir is not None,
                timeout=timeout,
                on_batch=lambda _b, _n, verdicts: advance(len(verdicts)),
            )
    except (ValidationError, ValueError) as e:
        typer.echo(f"kgc validate: error: {e}", err=True)
        raise typer.Exit(EXIT_TLC) from None
    page_dir = pages or out or (junit.parent / "pages" if junit is not None else None)
    drawn = _draw_failures(report.verdicts, recorded, page_dir)
    for v in report.verdicts:
        if not quiet or not v.matched:
            typer.echo(v.line())
            if v.name in drawn:
                typer.echo(f"  page: {drawn[v.name]}")
    for e in report.errors:
        typer.echo(f"ERROR {e}")
    failed = sum(1 for v in report.verdicts if not v.matched)
    per_minute = len(report.verdicts) / report.seconds * 60 if report.seconds else 0.0
    typer.echo(
        f"kgc validate ({cls.__name__}): {len(report.verdicts)} traces, "
        f"{report.states - len(recorded)} steps: {len(report.verdicts) - failed} behaviours "
        f"of the spec, {failed} not; {report.tlc_runs} TLC batches in "
        f"{report.seconds:.1f} s ({per_minute:.0f} traces/min)"
    )
    code = EXIT_TLC if report.errors else EXIT_UNEXPLAINED if failed else EXIT_PASS
    if junit is not None:
        _write_junit(junit, cls.__name__, report, drawn, time.monotonic() - started)
    if json_output:
        typer.echo(
            json.dumps(
                {
                    "traces": len(report.verdicts),
                    "failed": failed,
                    "seconds": round(report.seconds, 2),
                    "errors": report.errors,
                    "failures": [
                        {
                            "trace": v.name,
                            "step": v.failed_step,
                            "action": v.action,
                            "origin": v.origin,
                            "reason": v.reason,
                            "diffs": [str(d) for d in v.diffs],
                        }
                        for v in report.verdicts
                        if not v.matched
                    ],
                }
            )
        )
    raise typer.Exit(code)


MAX_PAGES = 20


def _draw_failures(verdicts: list, recorded: list, folder: Path | None) -> dict[str, str]:
    """A `kgc show` page per trace the spec cannot explain (the first MAX_PAGES), the failing
    step marked; none without a folder to put them in."""
    if folder is None:
        return {}
    from kgc.tools.trace_page import page_from_recorded_trace, write_page

    by_name = {}
    for t in recorded:
        by_name.setdefault(t.name, t)
    drawn: dict[str, str] = {}
    for v in verdicts:
        if v.matched or v.name not in by_name or len(drawn) >= MAX_PAGES:
            continue
        target = folder / f"{_slug(v.name)}.html"
        try:
            write_page(target, page_from_recorded_trace(by_name[v.name], v.name, v.failed_step, v.reason))
        except Exception:  # noqa: BLE001 - the verdict stands without its page
            continue
        drawn[v.name] = str(target)
    return drawn


def _write_junit(path: Path, implementation: str, report: object, drawn: dict[str, str], seconds: float) -> None:
    """One test case per recorded trace; a TLC batch that could not run is one error case."""
    from kgc.tools.junit import Case, Suite, write_junit

    cases = []
    for v in report.verdicts:  # type: ignore[attr-defined]
        case = Case(v.name, "kgc.validate", 0.0, output=f"{v.steps} steps")
        if not v.matched:
            where = (
                f"step {v.failed_step}" + (f" {v.action}" if v.action else "") + (f" [{v.origin}]" if v.origin else "")
            )
            case.failure = f"{where}: {v.reason or 'no spec step matches'}"
            case.details, case.page = v.line(), drawn.get(v.name)
        cases.append(case)
    for n, error in enumerate(report.errors):  # type: ignore[attr-defined]
        cases.append(
            Case(
                f"TLC batch {n + 1}", "kgc.validate", failure=str(error).splitlines()[0], details=str(error), error=True
            )
        )
    write_junit(path, [Suite(f"kgc validate ({implementation})", cases, seconds)])


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)[:80]


def register(app: typer.Typer) -> None:
    app.command("validate")(validate_command)
