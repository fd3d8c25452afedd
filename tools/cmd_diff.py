"""`kgc diff --scenarios DIR`: every scenario step by step on kgc's coordinator and on Kafka's own
(the reference JVM, reference/kafka-coordinator), reporting the first response or group state
that differs, with the step. Normalisations: member ids by the join that gave them; the leader
up to HashMap order (docs/kafka-reference.md). `--bug NAME` runs a seeded-bug kgc coordinator,
which shows the comparison can fail. Exit 0 no difference, 1 a difference, 2 an invalid
scenario file or unknown bug, 25 the reference is not built (with how to build it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kgc.conformance.scenario import ScenarioError, load_scenario
from kgc.conformance.seeded_bugs import coordinator_class
from kgc.tools.options import BugOption

EXIT_SAME, EXIT_DIFFERENT, EXIT_INVALID = 0, 1, 2


def diff_command(
    scenarios: Annotated[
        Path, typer.Option("--scenarios", help="A folder of scenario files (every *.json in it), or one file.")
    ],
    bug: BugOption = None,
) -> None:
    """Scenarios on kgc's coordinator and on Kafka 3.9.1's, step by step: the first difference."""
    from kgc.conformance.reference import diff as differ
    from kgc.conformance.reference.kafka_coordinator import KafkaReference, ReferenceMissingError
    from kgc.conformance.replay import World
    from kgc.tools.exit_codes import ExitCode

    try:
        cls = coordinator_class(bug)
    except KeyError as e:
        typer.echo(f"kgc diff: error: {e.args[0]}", err=True)
        raise typer.Exit(EXIT_INVALID) from None
    files = sorted(scenarios.glob("*.json")) if scenarios.is_dir() else [scenarios]
    if not files:
        typer.echo(f"kgc diff: error: {scenarios}: no scenario files", err=True)
        raise typer.Exit(EXIT_INVALID)
    worst, differing = EXIT_SAME, 0
    try:
        with KafkaReference() as kafka:
            for path in files:
                try:
                    scenario = load_scenario(path)
                    found = differ.diff_scenario(scenario, kafka, World(scenario, coordinator_class=cls))
                except ScenarioError as e:
                    typer.echo(f"ERROR {e}")
                    worst = max(worst, EXIT_INVALID)
                    continue
                if found is None:
                    typer.echo(f"SAME {scenario.name}")
                else:
                    differing += 1
                    typer.echo(f"DIFF {scenario.name}: {found}")
                    worst = max(worst, EXIT_DIFFERENT)
    except ReferenceMissingError as e:
        typer.echo(f"kgc diff: error: {e}", err=True)
        raise typer.Exit(int(ExitCode.REFERENCE_MISSING)) from None
    typer.echo(f"{len(files)} scenarios, {differing} differ")
    raise typer.Exit(worst)


def register(app: typer.Typer) -> None:
    app.command("diff")(diff_command)
