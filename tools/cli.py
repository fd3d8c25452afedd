"""The `kgc` command (console entry point `kgc = kgc.tools.entry:main`, which installs the
signal handlers before importing this module, then calls `main`).

Adding a subcommand: write tools/cmd_<name>.py with a `register(app: typer.Typer) -> None`
that attaches one command, and add the module to SUBCOMMANDS. Keep the module thin: parse
options, call library code, print, and exit with a code from exit_codes.py. Import heavy
things inside the command function so `kgc --help` stays fast.
"""

from __future__ import annotations

import importlib
import signal
import sys
import threading
from collections.abc import Sequence

import typer

from kgc.spec.tlc import Terminated
from kgc.tools.exit_codes import ExitCode

__all__ = ["app", "main"]

SUBCOMMANDS: tuple[str, ...] = (
    "kgc.tools.cmd_all",
    "kgc.tools.cmd_bench",
    "kgc.tools.cmd_bugs",
    "kgc.tools.cmd_check",
    "kgc.tools.cmd_prove",
    "kgc.tools.cmd_replay",
    "kgc.tools.cmd_diff",
    "kgc.tools.cmd_simulate",
    "kgc.tools.cmd_conform",
    "kgc.tools.cmd_replay_cex",
    "kgc.tools.cmd_show",
    "kgc.tools.cmd_validate",
    "kgc.tools.cmd_fuzz",
    "kgc.tools.cmd_hunt",
    "kgc.tools.cmd_mutate",
    "kgc.tools.cmd_pipeline",
    "kgc.tools.cmd_serve",
    "kgc.tools.cmd_kafka",
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


def _caused_by_interrupt(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return False
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _is_usage_error(exc: BaseException | None) -> bool:
    # typer vendors click privately; match the class by name, as typer itself does.
    return exc is not None and any(cls.__name__ == "UsageError" for cls in type(exc).__mro__)


INTERRUPTED = 130  # 128 + SIGINT, what shells report for a command ended by Ctrl-C


def _interrupt_on_termination() -> None:
    """SIGTERM and SIGHUP end kgc the way Ctrl-C does (a KeyboardInterrupt), so every `finally`
    and `except BaseException` that stops a child runs: Python's default for SIGTERM is to die
    on the spot, leaving TLC, Spark or a server behind."""

    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, interrupt)
        # A shell starts background commands with SIGINT ignored; kgc always honours it.
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv: Sequence[str] | None = None) -> None:
    """Run kgc. Usage errors exit 1: click reports them as 2, a code subcommands may use for
    something else (kgc replay: invalid scenario), so only a SystemExit raised while handling a
    click UsageError is remapped."""
    _interrupt_on_termination()
    try:
        app(args=list(argv) if argv is not None else None, prog_name="kgc")
    except (KeyboardInterrupt, Terminated):
        # Every child kgc starts (TLC, Spark, servers) is stopped by the code that started it,
        # on the way up; what is left is to say so and exit as shells expect.
        sys.stderr.write("kgc: interrupted; every child process it started was stopped\n")
        raise SystemExit(INTERRUPTED) from None
    except SystemExit as exc:
        if exc.code == INTERRUPTED and _caused_by_interrupt(exc):
            # typer turns Ctrl-C into a silent exit 130; say what happened to the children
            sys.stderr.write("kgc: interrupted; every child process it started was stopped\n")
            raise
        if exc.code == 2 and _is_usage_error(exc.__context__):
            raise SystemExit(int(ExitCode.USAGE)) from None
        raise


if __name__ == "__main__":
    main()
