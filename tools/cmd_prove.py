"""`kgc prove [--json] [--bug NAME] [--timeout-ms N]`: prove the protocol's invariants inductive
with Z3, for any number of members and generations.

Prints a table invariant x action (proved / not inductive / unknown, with milliseconds) and,
for every check that failed, a counterexample to induction over three members. With --json the
last line is one JSON object with every check. Exit 0 when everything is proved, 10 when a check
failed (not inductive, or an action enabled nowhere), 21 when a check came back unknown (timeout)
and none failed, 1 for a bad option (an unknown --bug).
"""

from __future__ import annotations

import json
from typing import Any

import typer

from kgc.tools.exit_codes import ExitCode
from kgc.tools.options import JsonOption

EXIT_PROVED = int(ExitCode.PASSED)  # 0
EXIT_NOT_INDUCTIVE = int(ExitCode.SAFETY_VIOLATED)  # 10
EXIT_UNKNOWN = int(ExitCode.TLC_ERROR)  # 21
EXIT_USAGE = int(ExitCode.USAGE)  # 1


def run_prove(
    json_output: bool = False, bugs: list[str] | None = None, timeout_ms: int = 5000, console: Any = None
) -> int:
    """Run every check, print the table (and the JSON line), return the exit code."""
    from rich.console import Console

    from kgc.conformance.proofs.prove import prove, render
    from kgc.conformance.proofs.transitions import BUGS

    console = console or Console(width=250)
    try:
        report = prove(bugs or [], timeout_ms=timeout_ms)
    except ValueError as e:
        console.print(f"kgc prove: {e}", markup=False)
        console.print("seeded bugs: " + "; ".join(f"{k}: {v}" for k, v in BUGS.items()), markup=False)
        return EXIT_USAGE
    render(report, console)
    code = {0: EXIT_PROVED, 10: EXIT_NOT_INDUCTIVE, 21: EXIT_UNKNOWN}[report.exit_code]
    if json_output:
        console.print(
            json.dumps(report.to_json(), separators=(",", ":")), markup=False, highlight=False, soft_wrap=True
        )
    return code


def prove_command(
    json_output: JsonOption = False,
    bug: list[str] = typer.Option(
        [], "--bug", help="Seed a bug into the encoding (repeatable); `kgc bugs` lists those with a proof variant."
    ),
    timeout_ms: int = typer.Option(5000, "--timeout-ms", min=1, help="Z3 timeout per check, in ms."),
) -> None:
    """Prove SingleLeaderPerGeneration and NoSyncInPreparingRebalance (with their strengthening
    invariants) inductive over every protocol action, with Z3."""
    raise typer.Exit(run_prove(json_output=json_output, bugs=list(bug), timeout_ms=timeout_ms))


def register(app: typer.Typer) -> None:
    app.command("prove")(prove_command)
