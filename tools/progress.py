"""Progress of long work on stderr: counted work (traces conformed, runs recorded, trace
batches validated) and work that cannot be counted (TLC checking or simulating).

On a terminal a rich bar or spinner that disappears when done; elsewhere (CI logs, `kgc all`'s
stages) a plain line every few seconds (KGC_PROGRESS_SECONDS, default 10) while the work goes
on, so a log shows that a long run is moving, and a one-second job prints nothing at all.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

__all__ = ["counted", "log_every", "ticking"]


def log_every() -> float:
    """Seconds between progress lines in a log."""
    try:
        return max(0.1, float(os.environ.get("KGC_PROGRESS_SECONDS", "10")))
    except ValueError:
        return 10.0


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
    every = log_every()
    last = started

    def advance(n: int) -> None:
        nonlocal done, last
        done += n
        now = time.monotonic()
        if now - last >= every and done < total:
            print(f"{label}: {done}/{total} {unit} ({now - started:.0f} s)", file=sys.stderr, flush=True)
            last = now

    yield advance


@contextmanager
def ticking(label: str, *, spinner: bool = True) -> Iterator[Callable[[str], None]]:
    """For work that cannot be counted. Yields `status(text)` to say what it is at. On a
    terminal a spinner with the status and the time taken (none with spinner=False: the caller
    draws its own); elsewhere a line every log_every() seconds from a helper thread."""
    console = Console(stderr=True)
    if console.is_terminal:
        if not spinner:
            yield lambda _text: None
            return
        bar = Progress(
            SpinnerColumn(),
            TextColumn(label),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        task = bar.add_task(label, total=None, status="")
        with bar:
            yield lambda text: bar.update(task, status=text)
        return
    status = [""]
    stop = threading.Event()
    started = time.monotonic()

    def beat() -> None:
        while not stop.wait(log_every()):
            text = status[0] or "running"
            print(f"{label}: {text} ({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)

    thread = threading.Thread(target=beat, name=f"progress {label}", daemon=True)
    thread.start()
    try:
        yield lambda text: status.__setitem__(0, text)
    finally:
        stop.set()
        thread.join()
