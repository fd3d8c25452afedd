"""`kgc pipeline conform|logs ...`: the data pipeline on Spark (PySpark, optional extra).

Each pipeline is its own module with a `register(pipeline_app)`; this module only groups them
under `kgc pipeline`. Without pyspark every pipeline prints how to install it and exits 2.
"""

from __future__ import annotations

import importlib

import typer

__all__ = ["PIPELINES", "register"]

#: One module per pipeline; each attaches one command to the `kgc pipeline` group.
PIPELINES: tuple[str, ...] = ("kgc.tools.cmd_pipeline_conform", "kgc.tools.cmd_pipeline_logs")


def register(app: typer.Typer) -> None:
    pipeline_app = typer.Typer(
        name="pipeline",
        help="The data pipeline on Spark: corpus-scale conformance and broker logs (needs the spark extra).",
        no_args_is_help=True,
    )

    @pipeline_app.callback()
    def _group() -> None:
        """The data pipeline on Spark: corpus-scale conformance and broker logs (needs the spark extra)."""

    for module in PIPELINES:
        importlib.import_module(module).register(pipeline_app)
    app.add_typer(pipeline_app, name="pipeline")
