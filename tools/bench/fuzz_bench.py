"""`kgc bench fuzz`: how soon `kgc fuzz` alone finds each seeded implementation bug.

Every bug `kgc bugs` lists with an implementation layer (seeded_bugs: BUGS, the scenario-only,
internal-error and liveness ones) is hunted by `kgc fuzz --bug B --seed S --no-shrink --json`
in a fresh process per run, on several Hypothesis seeds (fixed example sequences). A fresh
process because what Hypothesis draws depends on the process's history: it mixes into its
draws the literal constants of every local module imported so far, so a hunt inside a test
suite's process sees other examples than the same hunt run alone.

Per bug it reports the examples and the seconds to the first failing example (median and max
over the seeds), wall clock and the process's CPU time. Issue 20's target of 60 s is held
against the CPU seconds, and a run is stopped at a CPU-time cap (RLIMIT_CPU), not a wall one:
the wall seconds are the machine's load as much as the code's (on this shared 2-core machine at
load 20-30 a run's wall clock was 8-16x its CPU time: 152.8 s wall for 9.2 s CPU), so a
wall-clock target and kill counted finds of a few CPU seconds as misses. The example count is
the code's alone, the same on every run of a seed; the load average is in the result.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from kgc.tools.bench.result import BenchCheckFailed, BenchOptions, BenchResult

__all__ = ["RUN_CPU_LIMIT_S", "TARGET_SECONDS", "FuzzRun", "fuzz_benchmark", "hunted_bugs", "run_fuzz", "within_target"]

#: issue 20: "each seeded implementation bug is found by `kgc fuzz` alone within 60 s", held
#: against the run's CPU seconds (see the module docstring)
TARGET_SECONDS = 60.0
SEEDS = (0, 1, 2)
#: --quick: three bugs on one seed (that the runs work and find, no timing claims)
QUICK_BUGS = ("leader_not_reassigned", "swallowed_removal_error", "no_delayed_sync")
QUICK_SEEDS = (0,)
#: examples a run may take before it counts as not found: far beyond a minute's worth
EXAMPLES_CAP = 1000
QUICK_EXAMPLES_CAP = 300
#: the correctness check: the unmodified coordinator survives this many examples of each seed
#: (a failure there is a false alarm, and every time-to-find is void)
CLEAN_EXAMPLES = 100
QUICK_CLEAN_EXAMPLES = 30
#: runs at once (each a process of its own; wall seconds then include the other's load)
JOBS = 2
#: a run's CPU-time cap, five times the target (RLIMIT_CPU: the child is killed then; the run
#: counts as a miss)
RUN_CPU_LIMIT_S = 300.0
#: and a wall-clock cap far above it, for a child that stops using CPU (a hang, not a slow hunt)
RUN_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class FuzzRun:
    """One `kgc fuzz --bug B --seed S` process: its first failure, if any."""

    bug: str
    seed: int
    exit_code: int
    examples: int | None  # to the first failing example (None: not found)
    seconds: float | None  # wall, from the run's start to that example's failing step
    cpu_seconds: float | None  # the process's CPU time over the same span
    violated: tuple[str, ...]
    error: str | None = None

    @property
    def found(self) -> bool:
        return self.examples is not None


def hunted_bugs() -> list[str]:
    """Every seeded bug with an implementation layer, by name."""
    from kgc.conformance.bugs import all_bugs

    return sorted(name for name, bug in all_bugs().items() if bug.implementation)


def run_fuzz(
    bug: str, seed: int, examples: int, timeout: float = RUN_TIMEOUT_S, cpu_limit: float | None = None
) -> FuzzRun:
    """`kgc fuzz --bug bug --seed seed --no-shrink` in a fresh process (see the module
    docstring for why); the child is killed on timeout (wall) or interrupt, and by the kernel
    when given a cpu_limit (seconds of its CPU time, RLIMIT_CPU: SIGXCPU, SIGKILL a second later)."""
    with tempfile.TemporaryDirectory(prefix="kgc-bench-fuzz-") as save:
        command = [
            sys.executable,
            "-m",
            "kgc.tools.entry",
            "fuzz",
            "--bug",
            bug,
            "--seed",
            str(seed),
            "--no-shrink",
            "--examples",
            str(examples),
            "--save",
            save,
            "--json",
        ]
        with subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
        ) as child:
            if cpu_limit is not None:
                # set from here (no preexec_fn: the runs are started from threads); the CPU the
                # child used before (its imports) counts towards it all the same
                soft = max(1, round(cpu_limit))
                resource.prlimit(child.pid, resource.RLIMIT_CPU, (soft, soft + 1))
            try:
                stdout, stderr = child.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                child.kill()
                child.communicate()
                return FuzzRun(bug, seed, -1, None, None, None, (), error=f"killed after {timeout:.0f} s")
            except BaseException:
                child.kill()
                raise
        done = subprocess.CompletedProcess(command, child.returncode, stdout, stderr)
        if cpu_limit is not None and done.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
            return FuzzRun(
                bug, seed, done.returncode, None, None, None, (), error=f"killed after {cpu_limit:.0f} CPU s"
            )
    lines = done.stdout.strip().splitlines()
    try:
        report: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return FuzzRun(bug, seed, done.returncode, None, None, None, (), error=f"exit {done.returncode}: {tail}")
    first = report.get("first_failure")
    return FuzzRun(
        bug,
        seed,
        done.returncode,
        first["examples"] if first else None,
        first["seconds"] if first else None,
        first["cpu_seconds"] if first else None,
        tuple(report.get("violated") or ()),
        report.get("error"),
    )


def within_target(runs: Sequence[FuzzRun]) -> bool:
    """Issue 20's "within 60 s" for one bug: found on every seed, each in at most TARGET_SECONDS
    of the run's CPU time (not its wall clock, which is the load's: module docstring)."""
    return all(r.found and r.cpu_seconds is not None and r.cpu_seconds <= TARGET_SECONDS for r in runs)


def _row(bug: str, runs: Sequence[FuzzRun]) -> dict[str, Any]:
    found = [r for r in runs if r.found]
    row: dict[str, Any] = {"bug": bug, "found": f"{len(found)}/{len(runs)}"}
    for key in ("examples", "seconds", "cpu_seconds"):
        values = [getattr(r, key) for r in found]
        row[f"{key}_median"] = statistics.median(values) if values else None
        row[f"{key}_max"] = max(values) if values else None
    row["within_target"] = within_target(runs)
    row["by"] = ", ".join(sorted({p for r in found for p in r.violated}))
    return row


def _run_all(pairs: Sequence[tuple[str, int]], examples: int, options: BenchOptions) -> list[FuzzRun]:
    def one(pair: tuple[str, int]) -> FuzzRun:
        run = run_fuzz(pair[0], pair[1], examples, cpu_limit=RUN_CPU_LIMIT_S)
        options.say(
            f"fuzz {run.bug} seed {run.seed}: "
            + (
                f"example {run.examples}, {run.cpu_seconds:.1f} CPU s ({run.seconds:.1f} s wall)"
                if run.found
                else f"nothing ({run.error or examples})"
            )
        )
        return run

    with ThreadPoolExecutor(max_workers=JOBS) as pool:
        return list(pool.map(one, pairs))


def fuzz_benchmark(options: BenchOptions) -> BenchResult:
    seeds = QUICK_SEEDS if options.quick else SEEDS
    cap = QUICK_EXAMPLES_CAP if options.quick else EXAMPLES_CAP
    bugs = list(QUICK_BUGS) if options.quick else hunted_bugs()
    load_before = os.getloadavg()
    clean = _run_all([("none", s) for s in seeds], QUICK_CLEAN_EXAMPLES if options.quick else CLEAN_EXAMPLES, options)
    # (a clean run stopped by a cap found nothing in what it ran: no alarm)
    alarms = [r for r in clean if r.found or (r.error is not None and not r.error.startswith("killed"))]
    if alarms:
        r = alarms[0]
        raise BenchCheckFailed(
            f"fuzz benchmark: the unmodified coordinator failed on seed {r.seed}: {r.error or ', '.join(r.violated)}"
        )
    runs = _run_all([(bug, seed) for bug in bugs for seed in seeds], cap, options)
    broken = [r for r in runs if r.error is not None and not r.error.startswith("killed")]
    if broken:
        raise BenchCheckFailed(f"fuzz benchmark: {broken[0].bug} seed {broken[0].seed}: {broken[0].error}")
    rows = [_row(bug, [r for r in runs if r.bug == bug]) for bug in bugs]
    missed = [row["bug"] for row in rows if not row["within_target"]]
    return BenchResult(
        name="fuzz",
        ok=True,  # the check is the clean runs above; the target is reported, not checked
        columns=[
            "bug",
            "found",
            "examples_median",
            "examples_max",
            "seconds_median",
            "seconds_max",
            "cpu_seconds_max",
            "within_target",
            "by",
        ],
        labels={
            "examples_median": "examples (median)",
            "examples_max": "examples (max)",
            "seconds_median": "s (median)",
            "seconds_max": "s (max)",
            "cpu_seconds_max": "CPU s (max)",
            "within_target": f"<= {TARGET_SECONDS:.0f} CPU s",
        },
        rows=rows,
        summary={
            "bugs": len(rows),
            "seeds": list(seeds),
            "examples_cap": cap,
            "jobs": JOBS,
            "within_target": len(rows) - len(missed),
            "missed_target": missed,
            "slowest_seconds": max((r.seconds for r in runs if r.seconds is not None), default=None),
            "slowest_cpu_seconds": max((r.cpu_seconds for r in runs if r.cpu_seconds is not None), default=None),
            "cpu_limit_seconds": RUN_CPU_LIMIT_S,
            "most_examples": max((r.examples for r in runs if r.examples is not None), default=None),
            "clean_seeds": len(clean),
            "load_average_before": [round(x, 1) for x in load_before],
            "load_average_after": [round(x, 1) for x in os.getloadavg()],
        },
        notes=[
            f"each run is `kgc fuzz --bug B --seed S --no-shrink` in a fresh process, {JOBS} at a time, stopped "
            f"at {RUN_CPU_LIMIT_S:.0f} s of its CPU time; wall seconds run from the fuzz run's start (after "
            "imports) to the first failing step, CPU seconds are the process's over the same span; the "
            f"{TARGET_SECONDS:.0f} s target is held against the CPU seconds: wall seconds scale with the load, "
            "CPU seconds much less, examples not at all"
        ],
        data={"runs": [asdict(r) for r in runs], "clean": [asdict(r) for r in clean]},
    )
