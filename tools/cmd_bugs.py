"""`kgc bugs [--json]`: every seeded bug, by the one name `--bug` takes in every command, with the
layers that have it (spec model, implementation, proof) and what it breaks."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

from kgc.tools.options import JsonOption


def bugs_command(json_output: JsonOption = False) -> None:
    """List the seeded bugs: spec models (kgc check --model bug_NAME), implementation variants
    (--bug NAME for replay, conform, validate, fuzz, replay-cex) and proof variants (kgc prove)."""
    from kgc.conformance.bugs import all_bugs

    registry = all_bugs()
    if json_output:
        typer.echo(
            json.dumps(
                [
                    {"name": b.name, "layers": b.layers, "spec_model": b.spec_model, "summary": b.summary}
                    for b in registry.values()
                ]
            )
        )
        return
    table = Table("bug", "spec", "impl", "proof", "what it does", box=None)
    for b in registry.values():
        table.add_row(
            b.name, b.spec_model or "", "yes" if b.implementation else "", "yes" if b.proof else "", b.summary
        )
    Console(width=200, soft_wrap=True).print(table)


def register(app: typer.Typer) -> None:
    app.command("bugs")(bugs_command)
