"""Output folders checked before any work starts, so a folder kgc cannot write is a one-line
usage error (exit 1) instead of a traceback after minutes of TLC, and nothing found is lost
for want of a place to put it (kgc fuzz used to find a bug, then fail to save it)."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from kgc.tools.exit_codes import ExitCode

__all__ = ["writable_dir"]


def writable_dir(path: Path, option: str, command: str, *, create: bool = True) -> Path:
    """Create `path` if needed and prove it writable with a probe file; else exit 1 saying
    which option, which folder and why. With create=False a folder that did not exist is
    removed again after the probe (for a folder only written when something is found)."""
    existed = path.is_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".kgc-write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
        if not create and not existed:
            path.rmdir()
    except OSError as err:
        typer.echo(f"kgc {command}: error: {option} {path}: cannot write there: {err.strerror or err}", err=True)
        raise typer.Exit(int(ExitCode.USAGE)) from None
    return path
