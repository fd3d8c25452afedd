"""`kgc replay FILE.json [FILE.json ...]`: run scenario files against the Python coordinator.

Exit 0 when every file passes, 1 when any fails, 2 when any file is not a valid scenario
(invalid wins over failed: a broken file means the run did not test what it claims). One line
per file, in the order given: `PASS name`, `FAIL name: step N: ...`, `ERROR file: step N: ...`.
`--reference kafka` runs the files on Kafka 3.9.1's own GroupCoordinator instead (the reference
program reference/kafka-coordinator, one JVM for the run); a failure listed with its Kafka code (at its
listed step) in conformance/reference/explained.py prints `EXPLAINED name: step N: ... (why)` and does not
fail the run; without the built reference the exit code is 25 with how to build it.
`--bug NAME` (or KGC_IMPL_BUG) runs a seeded-bug coordinator (conformance/seeded_bugs.py), so
that a scenario `kgc fuzz --bug NAME` saved reproduces its failure; an unknown name is usage
(exit 2).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from kgc.conformance.replay import run_scenario
from kgc.conformance.scenario import ScenarioError, load_scenario
from kgc.conformance.seeded_bugs import coordinator_class
from kgc.tools.options import BugOption, JunitOption

EXIT_PASS, EXIT_FAIL, EXIT_INVALID = 0, 1, 2


def replay_one(path: Path, coordinator: Any = None, durable: bool = False) -> tuple[int, str]:
    """(exit status, report line) for one file. The whole file is validated before any step
    runs, so a malformed file never half-runs. `durable`: the group store is a FileGroupStore
    in a fresh temporary folder, so `unload`/`load` go through a file and its recovery."""
    try:
        scenario = load_scenario(path)
        if durable:
            with tempfile.TemporaryDirectory(prefix="kgc-replay-store-") as folder:
                result = run_scenario(scenario, coordinator_class=coordinator, store_path=Path(folder) / "groups.log")
        else:
            result = run_scenario(scenario, coordinator_class=coordinator)
    except ScenarioError as e:
        return EXIT_INVALID, f"ERROR {e}"
    if result.passed:
        return EXIT_PASS, f"PASS {result.name}"
    return EXIT_FAIL, f"FAIL {result.name}: {result.failure}"


def replay(
    files: list[Path],
    echo: Callable[[str], None] = print,
    coordinator: Any = None,
    durable: bool = False,
    cases: list[Any] | None = None,
) -> int:
    """Run each file; with `cases`, append a JUnit test case per file (kgc.tools.junit.Case)."""
    worst = EXIT_PASS
    for path in files:
        started = time.monotonic()
        status, line = replay_one(Path(path), coordinator, durable)
        echo(line)
        worst = max(worst, status)
        if cases is not None:
            cases.append(_case(Path(path), status, line, time.monotonic() - started))
    return worst


def _case(path: Path, status: int, line: str, seconds: float) -> Any:
    """PASS name / FAIL name: step N: ... / ERROR file: ... as a test case named for the scenario."""
    from kgc.tools.junit import Case

    verdict, _, rest = line.partition(" ")
    name, _, why = rest.partition(": ") if verdict == "FAIL" else (rest, "", "")
    case = Case(name if verdict != "ERROR" else path.stem, "kgc.replay", seconds)
    if status == EXIT_FAIL:
        case.failure, case.details = why, f"{path}\n{line}"
    elif status == EXIT_INVALID:
        case.failure, case.details, case.error = rest, str(path), True
    return case


def replay_command(
    files: list[Path] = typer.Argument(..., help="Scenario files (format 1) to run."),
    bug: BugOption = None,
    durable_store: Annotated[
        bool,
        typer.Option(
            "--durable-store",
            help="Keep group metadata in a durable file store (fsync per write); `load` recovers it from the file.",
        ),
    ] = False,
    junit: JunitOption = None,
    reference: Annotated[
        str | None,
        typer.Option(
            "--reference",
            help="Run on a reference coordinator instead of kgc's: `kafka` (Kafka 3.9.1's own GroupCoordinator "
            "in the reference JVM, built by scripts/setup.sh).",
        ),
    ] = None,
    log: Annotated[
        Path | None,
        typer.Option(
            "--log",
            help="Also write the coordinator's log lines, in Kafka's layout, to FILE (each scenario as its own "
            "broker, a day after the previous one): `kgc pipeline logs --input FILE` reads them back.",
        ),
    ] = None,
) -> None:
    """Run scenario files against the Python coordinator: PASS, FAIL at the first step that
    did not hold, or ERROR for a file that is not a valid scenario."""
    if reference is not None:
        raise typer.Exit(_replay_on_reference(files, reference))
    try:
        cls = coordinator_class(bug)
    except KeyError as e:
        typer.echo(f"kgc replay: error: {e.args[0]}", err=True)
        raise typer.Exit(EXIT_INVALID) from None
    from kgc.tools.junit import Suite, junit_target, write_junit

    junit_target(junit, "replay")
    cases: list[Any] = []
    started = time.monotonic()
    if log is not None:
        code = _replay_logged(files, log, cls, durable_store, cases)
    else:
        code = replay(files, echo=typer.echo, coordinator=cls, durable=durable_store, cases=cases)
    if junit is not None:
        write_junit(junit, [Suite("kgc replay", cases, time.monotonic() - started)])
    raise typer.Exit(code)


def _replay_logged(files: list[Path], log: Path, cls: Any, durable: bool, cases: list[Any]) -> int:
    """`replay` with the coordinator's Kafka-layout log written to `log` (see logs_roundtrip)."""
    import functools

    from kgc.conformance.pipeline.logs_roundtrip import DAY_MS
    from kgc.impl.coordinator import GroupCoordinator
    from kgc.impl.kafka_log import kafka_log_to

    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("")
    except OSError as exc:
        typer.echo(f"{log}: cannot write: {exc.strerror or exc}", err=True)
        raise typer.Exit(1) from None
    worst = EXIT_PASS
    with kafka_log_to(log, debug=True) as handler:
        for index, path in enumerate(files):
            handler.formatter.base_ms = index * DAY_MS  # type: ignore[union-attr]
            broker = functools.partial(cls or GroupCoordinator, broker_id=index)
            worst = max(worst, replay([path], echo=typer.echo, coordinator=broker, durable=durable, cases=cases))
    return worst


def register(app: typer.Typer) -> None:
    app.command("replay")(replay_command)


def replay_on_kafka(files: list[Path], echo: Callable[[str], None] = print) -> int:
    """Each file on Kafka's own coordinator (one reference JVM for all of them)."""
    from kgc.conformance.reference.explained import EXPLAINED_DIFFERENCES
    from kgc.conformance.reference.kafka_coordinator import KafkaReference
    from kgc.conformance.reference.replay import run_scenario_on_kafka

    worst = EXIT_PASS
    with KafkaReference() as kafka:
        for path in files:
            try:
                result = run_scenario_on_kafka(load_scenario(path), kafka)
            except ScenarioError as e:
                echo(f"ERROR {e}")
                worst = max(worst, EXIT_INVALID)
                continue
            explained = EXPLAINED_DIFFERENCES.get(result.name)
            if result.failure is None:
                # a listed difference may not show (HashMap order can pick the expected member)
                echo(f"PASS {result.name}")
            elif explained is not None and explained[0] == result.failure.step:
                echo(f"EXPLAINED {result.name}: {result.failure} ({explained[1]})")
            else:
                echo(f"FAIL {result.name}: {result.failure}")
                worst = max(worst, EXIT_FAIL)
    return worst


def _replay_on_reference(files: list[Path], reference: str) -> int:
    from kgc.conformance.reference.kafka_coordinator import ReferenceMissingError
    from kgc.tools.exit_codes import ExitCode

    if reference != "kafka":
        typer.echo(f"kgc replay: error: --reference {reference!r}: the only reference is 'kafka'", err=True)
        return EXIT_INVALID
    try:
        return replay_on_kafka(files, echo=typer.echo)
    except ReferenceMissingError as e:
        typer.echo(f"kgc replay: error: {e}", err=True)
        return int(ExitCode.REFERENCE_MISSING)
