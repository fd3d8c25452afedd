"""`kgc diff [--scenarios DIR] [--traces DIR] [--random N --seed S]`: the same steps on kgc's
coordinator and on Kafka's own (the reference JVM, reference/kafka-coordinator), step by step,
reporting the first response or group state that differs, with the step.

--scenarios: scenario files (every *.json of a folder, or one file). --traces: ITF spec traces
(`kgc simulate`), each driven through kgc's coordinator as conform drives it and the requests it
sent replayed on both. --random: N random client programs (recorder.random_run's choice of spec
steps, seeds S..S+N-1). Normalisations (docs/kafka-reference.md): member ids by the join that gave
them; a new leader Kafka picks by HashMap order after the leader left is EXPLAINED and the run is
compared up to it. `--bug NAME` runs a seeded-bug kgc coordinator, which shows the comparison can
fail. Exit 0 no difference, 1 a difference, 2 an invalid input file or unknown bug, 25 the
reference is not built (with how to build it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from kgc.conformance.scenario import Scenario, ScenarioError, load_scenario
from kgc.conformance.seeded_bugs import coordinator_class
from kgc.tools.options import BugOption

EXIT_SAME, EXIT_DIFFERENT, EXIT_INVALID = 0, 1, 2


@dataclass
class _Tally:
    kind: str
    runs: int = 0
    steps: int = 0
    differ: int = 0
    explained: int = 0
    invalid: int = 0
    spec_steps: int = 0  # of spec traces: the spec steps whose program steps were all compared
    spec_total: int = 0

    def summary(self, seconds: float) -> str:
        spec = f" ({self.spec_steps} of {self.spec_total} spec steps)" if self.kind == "traces" else ""
        return (
            f"{self.runs} {self.kind}, {self.differ} differ, {self.explained} explained "
            f"(compared up to a HashMap leader choice), {self.invalid} invalid; "
            f"{self.steps} steps compared{spec} in {seconds:.1f} s"
        )


def diff_command(
    scenarios: Annotated[
        Path | None, typer.Option("--scenarios", help="A folder of scenario files (every *.json in it), or one file.")
    ] = None,
    traces: Annotated[
        Path | None, typer.Option("--traces", help="A folder of ITF spec traces (kgc simulate --out), or one file.")
    ] = None,
    random_programs: Annotated[int, typer.Option("--random", help="Random client programs to run.", min=0)] = 0,
    seed: Annotated[int, typer.Option("--seed", help="The first random program's seed.")] = 0,
    steps: Annotated[int, typer.Option("--steps", help="Spec steps per random program.", min=1)] = 40,
    quiet: Annotated[bool, typer.Option("--quiet", help="Print only differences and the summaries.")] = False,
    bug: BugOption = None,
) -> None:
    """Scenarios, spec traces and random programs on kgc's coordinator and on Kafka 3.9.1's,
    step by step: the first difference of each."""
    from kgc.conformance.reference import diff as differ
    from kgc.conformance.reference.kafka_coordinator import KafkaReference, ReferenceMissingError
    from kgc.conformance.replay import World
    from kgc.tools.exit_codes import ExitCode

    try:
        cls = coordinator_class(bug)
    except KeyError as e:
        typer.echo(f"kgc diff: error: {e.args[0]}", err=True)
        raise typer.Exit(EXIT_INVALID) from None
    if scenarios is None and traces is None and not random_programs:
        typer.echo("kgc diff: error: give --scenarios DIR, --traces DIR or --random N", err=True)
        raise typer.Exit(EXIT_INVALID)
    inputs: list[tuple[_Tally, Iterator[tuple[str, Any]]]] = []
    for folder, kind, pattern in ((scenarios, "scenarios", "*.json"), (traces, "traces", "*.itf.json")):
        if folder is None:
            continue
        files = sorted(folder.glob(pattern)) if folder.is_dir() else [folder]
        if not files:
            typer.echo(f"kgc diff: error: {folder}: no {kind[:-1]} files ({pattern})", err=True)
            raise typer.Exit(EXIT_INVALID)
        inputs.append((_Tally(kind), _files(kind, files)))
    if random_programs:
        inputs.append((_Tally("random programs"), _programs(seed, random_programs, steps)))
    worst = EXIT_SAME
    try:
        with KafkaReference() as kafka:
            for tally, items in inputs:
                started = time.monotonic()
                for label, made in items:
                    tally.runs += 1
                    if isinstance(made, str):
                        typer.echo(f"ERROR {made}")
                        tally.invalid += 1
                        worst = max(worst, EXIT_INVALID)
                        continue
                    scenario: Scenario = made if isinstance(made, Scenario) else made.scenario
                    try:
                        found = differ.diff_scenario(scenario, kafka, World(scenario, coordinator_class=cls))
                    except ScenarioError as e:
                        if tally.kind == "scenarios":  # a bad file
                            typer.echo(f"ERROR {e}")
                            tally.invalid += 1
                            worst = max(worst, EXIT_INVALID)
                            continue
                        # a made program refers to a join one side has not answered: the sides parted
                        found = differ.StepDifference(e.step, "a member reference", str(e), "answered")
                    compared = len(scenario.steps) if found is None else found.step + 1
                    tally.steps += compared
                    if not isinstance(made, Scenario):  # a spec trace's program, with its marks
                        tally.spec_total += made.spec_steps
                        tally.spec_steps += sum(1 for m in made.marks if m.length <= compared)
                    if found is None:
                        if not quiet:
                            typer.echo(f"SAME {label}")
                    elif found.explained is not None:
                        tally.explained += 1
                        if not quiet:
                            typer.echo(f"EXPLAINED {label}: {found}")
                    else:
                        tally.differ += 1
                        typer.echo(f"DIFF {label}: {found}")
                        worst = max(worst, EXIT_DIFFERENT)
                typer.echo(tally.summary(time.monotonic() - started))
    except ReferenceMissingError as e:
        typer.echo(f"kgc diff: error: {e}", err=True)
        raise typer.Exit(int(ExitCode.REFERENCE_MISSING)) from None
    raise typer.Exit(worst)


def _files(kind: str, files: list[Path]) -> Iterator[tuple[str, Any]]:
    """(label, Scenario or the one-line error that makes the file unusable)."""
    from kgc.conformance.abstraction import AbstractionError
    from kgc.conformance.reference.programs import ProgramError, marked_trace_program
    from kgc.spec.jsonfile import InputError

    for path in files:
        try:
            if kind == "scenarios":
                scenario = load_scenario(path)
                yield scenario.name, scenario
            else:
                yield path.name, marked_trace_program(path)
        except ScenarioError as e:
            yield path.name, str(e)
        except (InputError, AbstractionError, ProgramError, ValueError) as e:
            yield path.name, str(e) if str(path) in str(e) else f"{path}: {e}"


def _programs(seed: int, count: int, steps: int) -> Iterator[tuple[str, Any]]:
    from kgc.conformance.reference.programs import random_program

    for s in range(seed, seed + count):
        yield f"random-{s}", random_program(s, steps)


def register(app: typer.Typer) -> None:
    app.command("diff")(diff_command)
