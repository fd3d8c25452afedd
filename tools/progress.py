"""Progress of long counted work (traces conformed, trace batches validated) on stderr.

On a terminal a rich bar that disappears when done; elsewhere (CI logs, `kgc all`'s stages)
a plain line at every tenth of the work, so a log shows that a long run is moving without
drowning in carriage returns.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["counted"]


@contextmanager
def counted(label: str, total: int, unit: str) -> Iterator[Callable[[int], None]]:
    """Yields `advance(n)`; call it as units of work finish."""
    console = Console(stderr=True)
    if console.is_terminal:
        bar = Progress(
            TextColumn(label),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(unit),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        task = bar.add_task(label, total=total)
        with bar:
            yield lambda n: bar.advance(task, n)
        return
    started = time.monotonic()
    done = 0
    step = max(1, total // 10)
    next_at = step

    def advance(n: int) -> None:
        nonlocal done, next_at
        done += n
        if done >= next_at and done < total:
            print(f"{label}: {done}/{total} {unit} ({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
            next_at = (done // step + 1) * step

    yield advance
