"""The `kgc` command (console entry point `kgc = kgc.tools.cli:main`).

Adding a subcommand: write tools/cmd_<name>.py with a `register(app: typer.Typer) -> None`
that attaches one command, and add the module to SUBCOMMANDS. Keep the module thin: parse
options, call library code, print, and exit with a code from exit_codes.py. Import heavy
things inside the command function so `kgc --help` stays fast.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

import typer

from kgc.tools.exit_codes import ExitCode

__all__ = ["app", "main"]

SUBCOMMANDS: tuple[str, ...] = (
    "kgc.tools.cmd_all",
    "kgc.tools.cmd_bench",
    "kgc.tools.cmd_check",
    "kgc.tools.cmd_prove",
    "kgc.tools.cmd_replay",
    "kgc.tools.cmd_simulate",
    "kgc.tools.cmd_conform",
    "kgc.tools.cmd_replay_cex",
    "kgc.tools.cmd_validate",
    "kgc.tools.cmd_fuzz",
)

app = typer.Typer(
    name="kgc",
    help="Model-checking harness for Kafka's classic consumer-group coordinator.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


@app.callback()
def _root() -> None:
    """Model-checking harness for Kafka's classic consumer-group coordinator."""
    # A callback keeps typer in multi-command mode even while only one subcommand exists.


for _module in SUBCOMMANDS:
    importlib.import_module(_module).register(app)


def _is_usage_error(exc: BaseException | None) -> bool:
    # typer vendors click privately; match the class by name, as typer itself does.
    return exc is not None and any(cls.__name__ == "UsageError" for cls in type(exc).__mro__)


def main(argv: Sequence[str] | None = None) -> None:
    """Run kgc. Usage errors exit 1: click reports them as 2, a code subcommands may use for
    something else (kgc replay: invalid scenario), so only a SystemExit raised while handling a
    click UsageError is remapped."""
    try:
        app(args=list(argv) if argv is not None else None, prog_name="kgc")
    except SystemExit as exc:
        if exc.code == 2 and _is_usage_error(exc.__context__):
            raise SystemExit(int(ExitCode.USAGE)) from None
        raise


if __name__ == "__main__":
    main()
