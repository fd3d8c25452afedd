"""`kgc replay FILE.json [FILE.json ...]`: run scenario files against the Python coordinator.

Exit 0 when every file passes, 1 when any fails, 2 when any file is not a valid scenario
(invalid wins over failed: a broken file means the run did not test what it claims). One line
per file, in the order given: `PASS name`, `FAIL name: step N: ...`, `ERROR file: step N: ...`.
`--bug NAME` (or KGC_IMPL_BUG) runs a seeded-bug coordinator (conformance/seeded_bugs.py), so
that a scenario `kgc fuzz --bug NAME` saved reproduces its failure; an unknown name is usage
(exit 2).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from kgc.conformance.replay import run_scenario
from kgc.conformance.scenario import ScenarioError, load_scenario
from kgc.conformance.seeded_bugs import coordinator_class
from kgc.tools.options import BugOption

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
    files: list[Path], echo: Callable[[str], None] = print, coordinator: Any = None, durable: bool = False
) -> int:
    worst = EXIT_PASS
    for path in files:
        status, line = replay_one(Path(path), coordinator, durable)
        echo(line)
        worst = max(worst, status)
    return worst


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
) -> None:
    """Run scenario files against the Python coordinator: PASS, FAIL at the first step that
    did not hold, or ERROR for a file that is not a valid scenario."""
    try:
        cls = coordinator_class(bug)
    except KeyError as e:
        typer.echo(f"kgc replay: error: {e.args[0]}", err=True)
        raise typer.Exit(EXIT_INVALID) from None
    raise typer.Exit(replay(files, echo=typer.echo, coordinator=cls, durable=durable_store))


def register(app: typer.Typer) -> None:
    app.command("replay")(replay_command)
