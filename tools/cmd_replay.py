"""`kgc replay FILE.json [FILE.json ...]`: run scenario files against the Python coordinator.

Exit 0 when every file passes, 1 when any fails, 2 when any file is not a valid scenario
(invalid wins over failed: a broken file means the run did not test what it claims). One line
per file, in the order given: `PASS name`, `FAIL name: step N: ...`, `ERROR file: step N: ...`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, List

import typer

from kgc.conformance.replay import run_scenario
from kgc.conformance.scenario import ScenarioError, load_scenario

EXIT_PASS, EXIT_FAIL, EXIT_INVALID = 0, 1, 2


def replay_one(path: Path) -> tuple[int, str]:
    """(exit status, report line) for one file. The whole file is validated before any step
    runs, so a malformed file never half-runs."""
    try:
        scenario = load_scenario(path)
        result = run_scenario(scenario)
    except ScenarioError as e:
        return EXIT_INVALID, f"ERROR {e}"
    if result.passed:
        return EXIT_PASS, f"PASS {result.name}"
    return EXIT_FAIL, f"FAIL {result.name}: {result.failure}"


def replay(files: list[Path], echo: Callable[[str], None] = print) -> int:
    worst = EXIT_PASS
    for path in files:
        status, line = replay_one(Path(path))
        echo(line)
        worst = max(worst, status)
    return worst


def replay_command(
    files: List[Path] = typer.Argument(..., help="Scenario files (format 1) to run."),
) -> None:
    """Run scenario files against the Python coordinator: PASS, FAIL at the first step that
    did not hold, or ERROR for a file that is not a valid scenario."""
    raise typer.Exit(replay(files, echo=typer.echo))


def register(app: typer.Typer) -> None:
    app.command("replay")(replay_command)
