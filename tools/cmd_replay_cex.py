"""`kgc replay-cex FILE.itf.json`: replay a TLC counterexample (from `kgc check`) on the Python
coordinator; say step by step whether it follows, and whether it shows the same violation.

Exit 0: the implementation shows no violation (what a seeded-bug model's counterexample should
give on the real coordinator); 1: it shows the same violation; 3: a different one; 2: the file
could not be read. `--bug NAME` (or KGC_IMPL_BUG) runs a seeded-bug coordinator instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kgc.tools.options import BugOption

__all__ = ["register", "replay_cex_command"]

EXIT_NONE, EXIT_SAME, EXIT_INVALID, EXIT_DIFFERENT = 0, 1, 2, 3


def replay_cex_command(
    file: Annotated[
        Path, typer.Argument(help="Counterexample as ITF JSON (kgc check writes counterexample.itf.json).")
    ],
    bug: BugOption = None,
    model: Annotated[
        str | None, typer.Option(help="Model whose constants to use (default: the one in the file's #meta).")
    ] = None,
    page: Annotated[
        Path | None,
        typer.Option(help="Write the spec | implementation page here (default: beside FILE, .replay.html)."),
    ] = None,
) -> None:
    """Replay a counterexample on the implementation: follows / deviates per step, and the
    verdict SAME, DIFFERENT or NONE."""
    from kgc.conformance.abstraction import SpecConstants
    from kgc.conformance.cex import DIFFERENT, SAME, replay_counterexample
    from kgc.conformance.seeded_bugs import coordinator_class

    try:
        cls = coordinator_class(bug)
        constants = SpecConstants.from_model(model) if model else None
        report = replay_counterexample(file, cls, constants)
    except Exception as e:  # noqa: BLE001 - any unreadable input is one error line
        typer.echo(f"kgc replay-cex: error: {file}: {type(e).__name__}: {e}", err=True)
        raise typer.Exit(EXIT_INVALID) from None
    typer.echo(f"kgc replay-cex {file} (model {report.model}, violates {report.violated}) on {report.implementation}")
    for step in report.steps:
        typer.echo("  " + step.line())
    typer.echo(report.conclusion())
    from kgc.tools.trace_page import page_from_cex_report, write_page

    target = page or file.with_name(file.name.removesuffix(".json").removesuffix(".itf") + ".replay.html")
    try:
        write_page(target, page_from_cex_report(file, report))
        typer.echo(f"page: {target}")
    except Exception as e:  # noqa: BLE001 - the verdict stands without its page
        typer.echo(f"kgc replay-cex: warning: no page written ({target}): {e}", err=True)
    verdict = report.verdict
    raise typer.Exit(EXIT_SAME if verdict == SAME else EXIT_DIFFERENT if verdict == DIFFERENT else EXIT_NONE)


def register(app: typer.Typer) -> None:
    app.command("replay-cex")(replay_cex_command)
