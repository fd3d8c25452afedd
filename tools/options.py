"""Options several `kgc` commands share, declared once so they mean the same everywhere (one
help text, one default, one environment variable)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["DEFAULT_MODEL", "BugOption", "JsonOption", "JunitOption", "ModelOption"]

#: The model every command uses when none is named (check, simulate, all).
DEFAULT_MODEL = "default"

BugOption = Annotated[
    str | None,
    typer.Option(
        "--bug",
        envvar="KGC_IMPL_BUG",
        help="Run with a seeded bug, by name (`kgc bugs` lists them and the layers that have each).",
    ),
]
ModelOption = Annotated[str, typer.Option("--model", "-m", help="Model name: spec/models/NAME.cfg.")]
JsonOption = Annotated[bool, typer.Option("--json", help="End with one JSON object on the last line of stdout.")]
JunitOption = Annotated[
    Path | None,
    typer.Option("--junit", help="Also write the results as JUnit XML here (one test case per item checked)."),
]
