"""`kgc conform DIR_OR_FILES...`: drive the Python coordinator through spec traces (ITF, from
`kgc simulate` or `kgc check`) and compare its abstract state with the spec's after every step.

One line per trace that does not conform (`DIVERGED file: step N Action(...): variable: spec
..., implementation ...`, or ERROR), then a summary with steps/s.
Exit 0 when no trace diverged, 1 when one did, 2 when a trace could not be read or run.
`--bug NAME` (or KGC_IMPL_BUG) runs a seeded-bug coordinator from conformance/seeded_bugs.py.
`--record DIR` also writes each run of the implementation as a recorded trace, so that
`kgc validate DIR` checks with TLC that what the implementation did is a behaviour of the spec.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from kgc.tools.options import BugOption, JsonOption, JunitOption
from kgc.tools.outdir import writable_dir
from kgc.tools.progress import counted

__all__ = ["conform_command", "register"]

EXIT_PASS, EXIT_DIVERGED, EXIT_ERROR = 0, 1, 2
MAX_PAGES = 20  # pages drawn per run: the first divergences are the ones read


def page_path(trace: Path, pages: Path | None) -> Path:
    """`x.itf.json` -> `x.divergence.html`, in `pages` or beside the trace."""
    name = trace.name.removesuffix(".json").removesuffix(".itf") + ".divergence.html"
    return (pages or trace.parent) / name


def conform_command(
    paths: Annotated[list[Path], typer.Argument(help="ITF trace files, or folders of *.itf.json.")],
    bug: BugOption = None,
    model: Annotated[str | None, typer.Option(help="Model whose constants to use (default: the traces' own).")] = None,
    ms_per_unit: Annotated[int, typer.Option(min=1, help="With --model: milliseconds per spec time unit.")] = 1000,
    stop: Annotated[bool, typer.Option("--stop/--all", help="Stop at the first diverging trace.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also list every trace that conformed.")] = False,
    json_output: JsonOption = False,
    record: Annotated[
        Path | None,
        typer.Option(help="Also write the implementation's runs here as recorded traces, for kgc validate."),
    ] = None,
    pages: Annotated[
        Path | None,
        typer.Option(help="Folder for the pages of diverging traces (default: beside each trace)."),
    ] = None,
    junit: JunitOption = None,
    reference: Annotated[
        str | None,
        typer.Option(
            "--reference",
            help="kafka: check the traces against Kafka 3.9.1's own coordinator (the reference JVM): "
            "group state, generation, members and leader after every spec step (docs/kafka-reference.md).",
        ),
    ] = None,
) -> None:
    """Replay spec traces on the implementation; report the first divergence of each."""
    if reference is not None:
        _conform_on_kafka(paths, reference, verbose, bug is not None or model is not None or record is not None)
    from kgc.conformance.abstraction import SpecConstants
    from kgc.conformance.mbt import conform, itf_files
    from kgc.conformance.seeded_bugs import coordinator_class

    try:
        cls = coordinator_class(bug)
        constants = SpecConstants.from_model(model, ms_per_unit) if model else None
    except (KeyError, LookupError) as e:
        typer.echo(f"kgc conform: error: {e.args[0] if e.args else e}", err=True)
        raise typer.Exit(EXIT_ERROR) from None
    from kgc.tools.junit import Case, Suite, junit_target, write_junit

    junit_target(junit, "conform")
    if record is not None:
        writable_dir(record, "--record", "conform")
    if pages is not None:
        writable_dir(pages, "--pages", "conform")
    files = itf_files(paths)
    if not files:
        typer.echo("kgc conform: error: no *.itf.json traces found", err=True)
        raise typer.Exit(EXIT_ERROR)

    drawn: dict[str, str] = {}

    def draw(outcome) -> str | None:
        """The diverging trace replayed spec | implementation side by side (kgc show --replay)."""
        if len(drawn) >= MAX_PAGES:
            return None
        from kgc.tools.trace_page import page_from_cex_replay, write_page

        target = page_path(Path(outcome.file), pages)
        try:
            write_page(target, page_from_cex_replay(Path(outcome.file), bug, constants))
        except Exception:  # noqa: BLE001 - the divergence is reported without its page
            return None
        drawn[outcome.file] = str(target)
        return str(target)

    def show(outcome) -> None:
        if outcome.verdict == "DIVERGED":
            typer.echo(f"DIVERGED {outcome.file}: {outcome.divergence}")
            page = draw(outcome)
            if page:
                typer.echo(f"  page: {page}")
        elif outcome.verdict == "ERROR":
            typer.echo(f"ERROR {outcome.file}: {outcome.error}")
        elif verbose:
            typer.echo(f"{outcome.verdict} {outcome.file}: {outcome.steps} steps")

    with counted("kgc conform", len(files), "traces") as advance:

        def on_trace(outcome) -> None:
            show(outcome)
            advance(1)

        started = time.monotonic()
        report = conform(files, cls, constants, stop_at_first=stop, on_trace=on_trace, record_to=record)
    typer.echo(f"kgc conform ({cls.__name__}): {report.summary()}")
    code = EXIT_ERROR if report.count("ERROR") else EXIT_DIVERGED if report.count("DIVERGED") else EXIT_PASS
    if junit is not None:
        cases = []
        for outcome in report.outcomes:
            case = Case(Path(outcome.file).name, "kgc.conform", 0.0, output=f"{outcome.steps}/{outcome.total} steps")
            if outcome.divergence is not None:
                d = outcome.divergence
                case.failure = (
                    f"step {d.step} {d.action}: {d.variable}: spec {d.spec_value}, implementation {d.impl_value}"
                )
                case.details, case.page = f"{outcome.file}\n{d}", drawn.get(outcome.file)
            elif outcome.error:
                case.failure, case.details, case.error = outcome.error, outcome.file, True
            cases.append(case)
        write_junit(junit, [Suite(f"kgc conform ({cls.__name__})", cases, time.monotonic() - started)])
    if json_output:
        first = report.first_divergence
        typer.echo(
            json.dumps(
                {
                    "implementation": cls.__name__,
                    "traces": len(report.outcomes),
                    "conform": report.count("CONFORMS"),
                    "diverged": report.count("DIVERGED"),
                    "errors": report.count("ERROR"),
                    "steps": report.steps,
                    "seconds": round(report.seconds, 3),
                    "steps_per_second": round(report.steps_per_second, 1),
                    "first_divergence": None
                    if first is None
                    else {
                        "trace": first.file,
                        "step": first.divergence.step,
                        "action": first.divergence.action,
                        "variable": first.divergence.variable,
                        "spec": first.divergence.spec_value,
                        "implementation": first.divergence.impl_value,
                    },
                    "exit_code": code,
                    "pages": list(drawn.values()),
                }
            )
        )
    raise typer.Exit(code)


def _conform_on_kafka(paths: list[Path], reference: str, verbose: bool, other_options: bool) -> None:
    """`--reference kafka`: each trace's requests (as kgc's coordinator was sent them following
    the trace) run on Kafka's coordinator, whose group view is checked against the spec's state
    after every spec step. Exit 0 / 1 (a trace diverged) / 2 (an unusable trace or option) / 25."""
    from kgc.conformance.abstraction import AbstractionError
    from kgc.conformance.mbt import itf_files
    from kgc.conformance.reference.conform import conform_trace_on_kafka
    from kgc.conformance.reference.kafka_coordinator import KafkaReference, ReferenceMissingError
    from kgc.conformance.reference.programs import ProgramError
    from kgc.spec.jsonfile import InputError
    from kgc.tools.exit_codes import ExitCode

    if reference != "kafka":
        typer.echo(f"kgc conform: error: --reference {reference}: the only reference is kafka", err=True)
        raise typer.Exit(EXIT_ERROR)
    if other_options:
        typer.echo("kgc conform: error: --reference kafka takes no --bug, --model or --record", err=True)
        raise typer.Exit(EXIT_ERROR)
    files = itf_files(paths)
    if not files:
        typer.echo("kgc conform: error: no *.itf.json traces found", err=True)
        raise typer.Exit(EXIT_ERROR)
    counts = {"CONFORMS": 0, "EXPLAINED": 0, "DIVERGED": 0, "ERROR": 0}
    steps, started = 0, time.monotonic()
    try:
        with KafkaReference() as kafka:
            for path in files:
                try:
                    outcome = conform_trace_on_kafka(path, kafka)
                except (InputError, AbstractionError, ProgramError, ValueError) as e:
                    counts["ERROR"] += 1
                    typer.echo(f"ERROR {e}" if str(path) in str(e) else f"ERROR {path}: {e}")
                    continue
                counts[outcome.verdict] += 1
                steps += outcome.steps
                if outcome.verdict != "CONFORMS" or verbose:
                    typer.echo(f"{outcome.verdict} {path}: {outcome.detail or f'{outcome.steps} spec steps'}")
    except ReferenceMissingError as e:
        typer.echo(f"kgc conform: error: {e}", err=True)
        raise typer.Exit(int(ExitCode.REFERENCE_MISSING)) from None
    typer.echo(
        f"kgc conform (Kafka 3.9.1 GroupCoordinator): {len(files)} traces, {counts['CONFORMS']} conform, "
        f"{counts['EXPLAINED']} explained (checked up to a HashMap leader choice), {counts['DIVERGED']} diverged, "
        f"{counts['ERROR']} errors; {steps} spec steps checked in {time.monotonic() - started:.1f} s"
    )
    raise typer.Exit(EXIT_ERROR if counts["ERROR"] else EXIT_DIVERGED if counts["DIVERGED"] else EXIT_PASS)


def register(app: typer.Typer) -> None:
    app.command("conform")(conform_command)
