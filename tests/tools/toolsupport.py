"""Paths and helpers shared by the tests of kgc.tools (imported by name: tests/ is no package)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# the fixture specs (one per TLC outcome) live with the tests of kgc.spec, which runs TLC
SPEC = Path(__file__).resolve().parents[1] / "spec" / "fixtures" / "spec"
KGC = Path(sys.executable).with_name("kgc")


def run_kgc(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """The installed `kgc` console script as a real subprocess."""
    return subprocess.run(
        [str(KGC), *args],
        cwd=cwd,
        env=env if env is not None else os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def processes_mentioning(text: str) -> list[int]:
    """Pids whose command line contains `text` (a run folder: TLC's -metadir names it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
