"""The processes under a pid, read from /proc: the Ctrl-C and orphan tests of `kgc mutate`
(local pool and Spark) check which detectors ran and that none is left (imported by name:
tests/ is no package)."""

from __future__ import annotations

from pathlib import Path


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process now."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return parent


def children(pid: int) -> list[int]:
    """The direct children of `pid`."""
    return [child for child, ppid in _parents().items() if ppid == pid]


def descendants(pid: int) -> dict[int, str]:
    """pid -> command line of every process under `pid` (e.g. the JVM, the PySpark workers and
    the detectors they start)."""
    parent = _parents()
    found: dict[int, str] = {}
    frontier = [pid]
    while frontier:
        p = frontier.pop()
        for child, ppid in parent.items():
            if ppid == p and child not in found:
                try:
                    found[child] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    found[child] = ""
                frontier.append(child)
    return found


def alive(pid: int) -> bool:
    """`pid` exists and is not a zombie waiting for its parent."""
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
