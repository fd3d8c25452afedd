"""`kgc prove [--json] [--bug NAME] [--timeout-ms N]`: prove the protocol's invariants inductive
and its action properties kept by every action, with Z3, for any number of members and
generations.

Prints a table invariant x action (proved / not inductive / unknown, with milliseconds) and,
for every check that failed, a counterexample to induction over three members. With --json the
last line is one JSON object with every check. Exit 0 when everything is proved, 10 when a check
failed (not inductive, or an action enabled nowhere), 21 when a check came back unknown (timeout)
and none failed, 1 for a bad option (an unknown --bug).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from kgc.tools.exit_codes import ExitCode
from kgc.tools.options import JsonOption, JunitOption

EXIT_PROVED = int(ExitCode.PASSED)  # 0
EXIT_NOT_INDUCTIVE = int(ExitCode.SAFETY_VIOLATED)  # 10
EXIT_UNKNOWN = int(ExitCode.TLC_ERROR)  # 21
EXIT_USAGE = int(ExitCode.USAGE)  # 1


def run_prove(
    json_output: bool = False,
    bugs: list[str] | None = None,
    timeout_ms: int = 5000,
    console: Any = None,
    junit: Path | None = None,
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
    if junit is not None:
        write_junit_report(junit, report)
    code = {0: EXIT_PROVED, 10: EXIT_NOT_INDUCTIVE, 21: EXIT_UNKNOWN}[report.exit_code]
    if json_output:
        console.print(
            json.dumps(report.to_json(), separators=(",", ":")), markup=False, highlight=False, soft_wrap=True
        )
    return code


def write_junit_report(path: Path, report: Any) -> None:
    """One test case per invariant x action: proved passes, not inductive (or vacuous: the
    action is enabled nowhere) fails with the counterexample to induction, unknown is an error."""
    from kgc.conformance.proofs.prove import NOT_INDUCTIVE, PROVED, UNKNOWN
    from kgc.tools.junit import Case, Suite, write_junit

    cases = []
    for c in report.checks:
        case = Case(f"{c.invariant} x {c.action}", "kgc.prove", c.ms / 1000)
        if c.status != PROVED:
            what = {NOT_INDUCTIVE: "not inductive", UNKNOWN: "unknown (Z3 gave no answer in time)"}.get(
                c.status, c.status
            )
            first = c.counterexample.lines()[0] if c.counterexample else c.reason
            case.failure = what + (f": {first}" if first else "")
            case.error = c.status == UNKNOWN
            case.details = "\n".join(c.counterexample.lines()) if c.counterexample else (c.reason or "")
        cases.append(case)
    suffix = f" (bugs: {', '.join(report.bugs)})" if report.bugs else ""
    write_junit(path, [Suite("kgc prove" + suffix, cases, report.total_ms / 1000)])


def prove_command(
    json_output: JsonOption = False,
    bug: list[str] = typer.Option(
        [], "--bug", help="Seed a bug into the encoding (repeatable); `kgc bugs` lists those with a proof variant."
    ),
    timeout_ms: int = typer.Option(5000, "--timeout-ms", min=1, help="Z3 timeout per check, in ms."),
    junit: JunitOption = None,
) -> None:
    """Prove SingleLeaderPerGeneration, NoSyncInPreparingRebalance, LeaderIsMember and
    EmptyIffNoMembers (with their strengthening invariants) inductive, and GenerationMonotonic
    and StableRebalanceOnlyByTrigger kept, over every protocol action, with Z3."""
    from kgc.tools.junit import junit_target

    junit_target(junit, "prove")
    raise typer.Exit(run_prove(json_output=json_output, bugs=list(bug), timeout_ms=timeout_ms, junit=junit))


def register(app: typer.Typer) -> None:
    app.command("prove")(prove_command)
