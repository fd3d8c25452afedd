"""The machine a result was measured on, stored next to every result file."""

from __future__ import annotations

import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def probe_loop_ms(rounds: int = 3) -> float:
    """Thread CPU milliseconds of a fixed pure-Python loop (a million additions), the fastest
    of `rounds`. This machine's speed drifts by more than 2x between hours with nothing else
    running (a shared host), so every result file carries this probe: rates from two files
    compare only when their probes are near. Near probes are not enough: a memory-bound
    workload (the handlers, the purgatories) has run at a third of its best speed while the
    probe read fast."""
    best = math.inf
    for _ in range(rounds):
        started = time.thread_time()
        total = 0
        for i in range(10**6):
            total += i
        best = min(best, time.thread_time() - started)
    return round(best * 10**3, 1)


def describe_machine() -> dict[str, Any]:
    affinity = getattr(os, "sched_getaffinity", None)
    return {
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": len(affinity(0)) if affinity else os.cpu_count(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "load_average_at_start": round(os.getloadavg()[0], 2),
        "speed_probe_loop_cpu_ms": probe_loop_ms(),
    }
