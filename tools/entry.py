"""The `kgc` console script's entry point: signals first, then the command.

Importing kgc.tools.cli imports every subcommand (and through them the coordinator, typer,
rich): most of a second on a busy machine. A Ctrl-C or SIGTERM in that second used to end kgc
with a Python traceback, since cli.main installs the handlers only once everything is
imported. Here they are installed before that import, and an interrupt during it is the same
one line and exit 130 as any other (nothing has been started yet that could survive it).
"""

from __future__ import annotations

import signal
import sys
import threading

__all__ = ["main"]

INTERRUPTED = 130


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main() -> None:
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _interrupt)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        from kgc.tools.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("kgc: interrupted while starting; nothing was started\n")
        raise SystemExit(INTERRUPTED) from None
    cli_main()


if __name__ == "__main__":  # `python -m kgc.tools.entry`: how kgc all starts its stages
    main()
