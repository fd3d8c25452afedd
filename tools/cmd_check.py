"""`kgc check`: model-check one model of the spec with TLC and report the outcome.

Thin on purpose: kgc.spec.catalog finds the files, tlc runs TLC, itf writes the counterexample,
trace_view renders it, exit_codes maps the outcome. See docs/check.md for the user's view.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from kgc.spec.tlc_result import CheckResult, Outcome
from kgc.tools.exit_codes import ExitCode, exit_code_for
from kgc.tools.options import DEFAULT_MODEL, JsonOption, JunitOption, ModelOption
from kgc.tools.outdir import writable_dir

__all__ = ["check", "register"]

DEFAULT_RUNS_DIR = Path("runs")
COUNTEREXAMPLE_FILE = "counterexample.itf.json"
PAGE_FILE = "counterexample.html"

# Exit codes for which TLC gave a verdict about the protocol; every other code is a failure
# to check, reported as one `kgc check: error:` line on stderr.
_VERDICTS = frozenset({ExitCode.PASSED, ExitCode.SAFETY_VIOLATED, ExitCode.LIVENESS_VIOLATED, ExitCode.DEADLOCK})

_HEADLINES = {
    Outcome.PASSED: "PASSED",
    Outcome.INVARIANT_VIOLATED: "INVARIANT VIOLATED",
    Outcome.ACTION_PROPERTY_VIOLATED: "ACTION PROPERTY VIOLATED",
    Outcome.PROPERTY_VIOLATED_INITIALLY: "PROPERTY VIOLATED BY AN INITIAL STATE",
    Outcome.ASSERTION_FAILED: "ASSERTION FAILED",
    Outcome.DEADLOCK: "DEADLOCK",
    Outcome.LIVENESS_VIOLATED: "LIVENESS VIOLATED",
    Outcome.NO_INITIAL_STATES: "NO INITIAL STATES",
    Outcome.PARSE_ERROR: "SPEC ERROR",
    Outcome.CONFIG_ERROR: "CONFIG ERROR",
    Outcome.ASSUMPTION_FAILED: "ASSUMPTION FAILED",
    Outcome.EVALUATION_ERROR: "EVALUATION ERROR",
    Outcome.CRASHED: "TLC FAILED",
    Outcome.TIMEOUT: "TIMEOUT",
}


def register(app: typer.Typer) -> None:
    app.command("check")(check)


def _shown(path: Path) -> str:
    """Paths under the working folder are shown relative to it: shorter, and clickable."""
    try:
        return os.path.relpath(path) if Path(path).resolve().is_relative_to(Path.cwd()) else str(path)
    except ValueError:
        return str(path)


def _short(number: float) -> str:
    """1234567 -> 1.23M: the live line has to fit an 80-column terminal."""
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if number >= limit:
            return f"{number / limit:.3g}{suffix}"
    return f"{number:.0f}"


class _LiveProgress:
    """A one-line rich display on stderr; TLC 2.15 reports numbers about once a minute."""

    def __init__(self, console: Console) -> None:
        self._started = time.monotonic()
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=not console.is_terminal,
        )
        self._task = self._progress.add_task("starting", total=None, stats="")

    def __enter__(self) -> _LiveProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def update(self, result: CheckResult) -> str:
        stats = ""
        if result.distinct_states is not None:
            rate = (result.states_generated or 0) / max(time.monotonic() - self._started, 1e-9)
            stats = (
                f"{_short(result.distinct_states)} distinct  {_short(result.states_generated or 0)} gen  "
                f"{_short(result.queue or 0)} queue  {_short(rate)}/s  depth {result.depth or 0}"
            )
        self._progress.update(self._task, description=result.phase, stats=stats)
        return f"{result.phase} {stats}".strip()


def summary_json(
    model: str, result: CheckResult, code: ExitCode, run_dir: Path | None, counterexample: Path | None, workers: int
) -> dict[str, Any]:
    wall = result.wall_seconds or 0.0
    rate = (result.states_generated / wall) if result.states_generated is not None and wall > 0 else None
    distinct_rate = (result.distinct_states / wall) if result.distinct_states is not None and wall > 0 else None
    return {
        "model": model,
        "result": result.outcome.value if result.outcome else None,
        "exit_code": int(code),
        "violated": result.violated,
        "message": result.error_line,
        "location": result.error_location.to_json() if result.error_location else None,
        "states_generated": result.states_generated,
        "distinct_states": result.distinct_states,
        "queue": result.queue,
        "depth": result.depth,
        "initial_states": result.initial_states,
        "wall_seconds": round(wall, 3),
        "states_per_second": round(rate, 1) if rate is not None else None,
        "distinct_states_per_second": round(distinct_rate, 1) if distinct_rate is not None else None,
        "counterexample": str(counterexample) if counterexample else None,
        "counterexample_states": len(result.trace.states) if result.trace else None,
        "run_dir": str(run_dir) if run_dir else None,
        "tlc_version": result.tlc_version,
        "tlc_exit_code": result.tlc_exit_code,
        "workers": workers,
        "warnings": result.warnings,
    }


def _fail_before_run(code: ExitCode, kind: str, message: str, model: str, json_output: bool) -> None:
    Console(stderr=True, highlight=False).print(f"kgc check: error: {message}", markup=False, soft_wrap=True)
    if json_output:
        print(json.dumps({"model": model, "result": kind, "exit_code": int(code), "message": message}))
    raise typer.Exit(int(code))


def _print_report(
    console: Console, model: str, result: CheckResult, run_dir: Path, counterexample: Path | None, page: Path | None
) -> None:
    from kgc.tools.trace_view import render_trace

    outcome = result.outcome or Outcome.CRASHED
    headline = _HEADLINES[outcome] + (f": {result.violated}" if result.violated else "")
    style = "green" if outcome is Outcome.PASSED else "red"
    console.print(f"[bold]kgc check[/bold] {model}: [bold {style}]{headline}[/bold {style}]", soft_wrap=True)
    if result.states_generated is not None:
        console.print(
            f"  states: {result.states_generated:,} generated, {result.distinct_states or 0:,} distinct, "
            f"{result.queue or 0:,} left on queue; depth {result.depth if result.depth is not None else '?'}",
            markup=False,
            soft_wrap=True,
        )
    wall = result.wall_seconds or 0.0
    rate = f", {(result.states_generated or 0) / wall:,.0f} states/s" if wall > 0 and result.states_generated else ""
    console.print(f"  wall time {wall:.2f} s{rate}", markup=False, soft_wrap=True)
    console.print(f"  run folder: {_shown(run_dir)}", markup=False, soft_wrap=True)
    if counterexample is not None:
        console.print(f"  counterexample: {_shown(counterexample)}", markup=False, soft_wrap=True)
    if page is not None:
        console.print(
            f"  page: {_shown(page)}  (kgc show: the counterexample as a diagram)", markup=False, soft_wrap=True
        )
    if exit_code_for(outcome) in _VERDICTS and result.error_line and result.trace is None:
        console.print(f"  {result.error_line}", markup=False, soft_wrap=True)  # e.g. Assert: no trace
    for warning in result.warnings:
        console.print(f"  warning: {warning}", markup=False, soft_wrap=True)
    if result.trace and result.trace.states:
        count = len(result.trace.states)
        console.print(f"\n[bold]Counterexample[/bold] ({count} state{'s' if count != 1 else ''})")
        for line in render_trace(result.trace):
            console.print(line, markup=False, soft_wrap=True)


def _write_page(counterexample: Path, target: Path, errors: Console) -> Path | None:
    """The counterexample as a `kgc show` page beside it; a page that cannot be drawn is a
    warning, never a lost verdict."""
    from kgc.tools.trace_page import page_from_itf, write_page

    try:
        return write_page(target, page_from_itf(counterexample))
    except Exception as err:  # noqa: BLE001 - the verdict stands without its picture
        errors.print(f"kgc check: warning: no page for the counterexample: {err}", markup=False, soft_wrap=True)
        return None


def _write_junit(
    path: Path, model: str, result: CheckResult, code: ExitCode, page: Path | None, errors: Console
) -> None:
    """One test case per model: failed with the violated property and the counterexample's
    steps, an error when TLC gave no verdict."""
    from kgc.tools.junit import Case, Suite, write_junit
    from kgc.tools.trace_view import render_trace

    outcome = result.outcome or Outcome.CRASHED
    case = Case(model, "kgc.check", result.wall_seconds or 0.0)
    if code is not ExitCode.PASSED:
        case.failure = _HEADLINES[outcome] + (f": {result.violated}" if result.violated else "")
        if result.error_line and code not in _VERDICTS:
            case.failure += f" ({result.error_line})"
        case.error = code not in _VERDICTS
        case.details = "\n".join(render_trace(result.trace)) if result.trace else (result.error_line or "")
        case.page = str(page) if page else None
    try:
        write_junit(path, [Suite(f"kgc check {model}", [case])])
    except OSError as err:
        errors.print(f"kgc check: error: --junit {path}: {err.strerror or err}", markup=False, soft_wrap=True)
        raise typer.Exit(int(ExitCode.USAGE)) from None


def check(
    model: ModelOption = DEFAULT_MODEL,
    workers: Annotated[int, typer.Option(min=1, help="TLC worker threads (2.15 has no 'auto').")] = 1,
    timeout: Annotated[float | None, typer.Option(min=0.001, help="Seconds before TLC is killed (exit 22).")] = None,
    json_output: JsonOption = False,
    out: Annotated[
        Path | None, typer.Option(help="Run folder (new or empty); default runs/<model>-<time>-<pid>/.")
    ] = None,
    max_heap: Annotated[str | None, typer.Option(help="Java heap limit, e.g. 2g (default: the JVM's).")] = None,
    spec_dir: Annotated[Path | None, typer.Option(help="Spec folder to use instead of the installed kgc.spec.")] = None,
    junit: JunitOption = None,
) -> None:
    """Model-check a model of the spec with TLC. Exit codes: see docs/check.md."""
    from kgc.spec.catalog import ModelNotFoundError, resolve_model
    from kgc.spec.itf import write_itf
    from kgc.spec.tlc import (
        JarMissingError,
        JavaMissingError,
        Terminated,
        TlcJob,
        locate_jar,
        locate_java,
        make_run_dir,
        run_tlc,
    )

    try:
        found = resolve_model(model, spec_dir)
        job = TlcJob(
            module=found.module,
            config=found.config,
            modules=found.modules,
            workers=workers,
            timeout=timeout,
            max_heap=max_heap,
            display_paths={p.name: _shown(p) for p in (found.module, found.config, *found.modules)},
        )
    except (ModelNotFoundError, ValueError) as exc:
        _fail_before_run(ExitCode.USAGE, "usage_error", str(exc), model, json_output)
    from kgc.tools.junit import junit_target

    junit_target(junit, "check")
    if out is not None and out.exists() and (not out.is_dir() or any(out.iterdir())):
        _fail_before_run(
            ExitCode.USAGE, "usage_error", f"--out {out} must be a new or empty folder", model, json_output
        )
    try:
        java = locate_java()
    except JavaMissingError as exc:
        _fail_before_run(ExitCode.JAVA_MISSING, "java_missing", str(exc), model, json_output)
    try:
        jar = locate_jar()
    except JarMissingError as exc:
        _fail_before_run(ExitCode.JAR_MISSING, "jar_missing", str(exc), model, json_output)

    if out is not None:
        writable_dir(out, "--out", "check")
        run_dir = out
    else:
        try:
            run_dir = make_run_dir(DEFAULT_RUNS_DIR, found.name)
        except OSError as err:
            typer.echo(
                f"kgc check: error: cannot make a run folder under {DEFAULT_RUNS_DIR.resolve()}: "
                f"{err.strerror or err} (give --out)",
                err=True,
            )
            raise typer.Exit(int(ExitCode.USAGE)) from None
    errors = Console(stderr=True, highlight=False)
    try:
        from kgc.tools.progress import ticking

        # a terminal gets the live line; a log (kgc all's check stage, CI) a line every few seconds
        with _LiveProgress(errors) as live, ticking("kgc check", spinner=False) as status:
            result = run_tlc(job, run_dir, on_update=lambda r: status(live.update(r)), java=java, jar=jar)
    except Terminated as exc:
        signum = int(signal.Signals[str(exc)])
        errors.print(
            f"kgc check: error: stopped by {exc}; TLC was killed too; partial output in {_shown(run_dir / 'tlc.out')}",
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(128 + signum) from None
    if result.outcome is Outcome.TIMEOUT:
        result.error = (
            f"TLC did not finish within {timeout:g} s and was killed; partial output in {_shown(run_dir / 'tlc.out')}"
        )

    counterexample: Path | None = None
    if result.trace is not None and result.trace.states:
        counterexample = run_dir / COUNTEREXAMPLE_FILE
        write_itf(
            counterexample,
            result.trace,
            source=found.module.name,
            description=result.error or "",
            meta={
                "model": found.name,
                "outcome": result.outcome.value if result.outcome else None,
                "violated": result.violated,
            },
        )
    code = exit_code_for(result.outcome)
    page = _write_page(counterexample, run_dir / PAGE_FILE, errors) if counterexample is not None else None
    summary = summary_json(found.name, result, code, run_dir, counterexample, workers)
    summary["page"] = str(page) if page else None
    (run_dir / "result.json").write_text(json.dumps(summary, indent=2) + "\n")

    if junit is not None:
        _write_junit(junit, found.name, result, code, page, errors)
    report = errors if json_output else Console(highlight=False)
    _print_report(report, found.name, result, run_dir, counterexample, page)
    if code not in _VERDICTS:
        errors.print(f"kgc check: error: {result.error_line}", markup=False, soft_wrap=True)
    if json_output:
        print(json.dumps(summary), flush=True)
    raise typer.Exit(int(code))
