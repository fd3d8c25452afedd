"""Running mutants (conformance/mutate.py) against kgc's detectors and scoring them.

Each (mutant, detector) pair is one fresh interpreter: the mutant's import hook first, then
the detector's own `kgc` subcommand, so a mutant that loops, crashes the interpreter or leaks
state cannot touch the next one, and the detectors are measured exactly as a user runs them.
The process group is killed when the detector's time budget runs out (TLC's JVM included).

Outcome per pair: `killed` (the detector exited non-zero: a violation, a divergence, an internal
error recorded by conformance/faults.py, or an exception the mutant caused), `timeout` (budget
spent: counted as killed, as mutation tools do, but reported apart since a slow detector can
cause it too), `survived` (exit 0) or `skipped` (`first_kill`: an earlier detector killed it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from kgc.conformance.mutate import NATIVE_MODULES, Mutant, mutant_bootstrap

__all__ = ["DETECTORS", "MutantResult", "detector_argv", "run_detector", "run_mutants", "run_one_mutant", "scores"]

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "conformance" / "scenarios"
DETECTORS = ("replay", "conform", "validate", "fuzz")


def detector_argv(detector: str, scratch: Path, traces: Path | None, fuzz_examples: int) -> list[str]:
    """The `kgc` arguments that run `detector` as a user would, writing only under `scratch`."""
    if detector == "replay":
        return ["replay", *sorted(str(p) for p in SCENARIOS.glob("*.json"))]
    if detector == "fuzz":
        return ["fuzz", "--profile", "ci", "--examples", str(fuzz_examples), "--save", str(scratch / "fuzz")]
    if detector == "validate":
        return ["validate", "--scenarios", str(SCENARIOS), "--random", "5", "--jobs", "1", "-q"]
    if detector == "conform":
        if traces is None:
            raise ValueError("conform needs a folder of spec traces")
        return ["conform", str(traces), "--stop", "--pages", str(scratch / "pages")]
    raise ValueError(f"unknown detector {detector!r} ({', '.join(DETECTORS)})")


@dataclass
class MutantResult:
    mutant: Mutant
    outcomes: dict[str, str] = field(default_factory=dict)  # detector -> killed/timeout/survived
    seconds: dict[str, float] = field(default_factory=dict)
    evidence: dict[str, str] = field(default_factory=dict)  # detector -> last output line

    def killed_by(self, detectors: Sequence[str]) -> bool:
        return any(self.outcomes.get(d) in ("killed", "timeout") for d in detectors)


# The detector processes running now: each is in a session of its own (so the budget's kill
# takes TLC's JVM with it), which also keeps a Ctrl-C at the terminal from reaching them, so
# run_mutants ends them itself when it is interrupted.
_LIVE: set[subprocess.Popen[str]] = set()
_LIVE_LOCK = threading.Lock()
_STOPPING = threading.Event()


def _kill_live() -> None:
    with _LIVE_LOCK:
        _STOPPING.set()
        for proc in _LIVE:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _orphan_guard(parent: int) -> str:
    """Code that ends the detector's process group (TLC's JVM included) once `parent` is gone.

    The detector leads a session of its own, so nothing reaches it when its parent dies without
    a chance to clean up: a Spark task's Python worker is SIGKILLed when the job is cancelled or
    the driver stops (Ctrl-C on `kgc mutate --master`)."""
    return (
        "import os as _o, threading as _t, time as _tm\n"
        "def _guard():\n"
        f"    while _o.getppid() == {parent}:\n"
        "        _tm.sleep(1)\n"
        "    _o.killpg(0, 9)\n"
        "_t.Thread(target=_guard, daemon=True).start()\n"
    )


def run_detector(argv: list[str], mutant: Mutant | None, budget: float, scratch: Path) -> tuple[str, float, str]:
    """Run `kgc <argv>` with `mutant` loaded (None: the unmutated code). Returns (outcome,
    seconds, the last line of output)."""
    scratch.mkdir(parents=True, exist_ok=True)
    prelude = "import sys\n"
    env = dict(os.environ, KGC_PROGRESS_SECONDS="3600")
    if mutant is not None:
        src = scratch / f"{mutant.module}.py"
        src.write_text(mutant.source)
        prelude = mutant_bootstrap(mutant.qualified_module, str(src))
        if mutant.module in NATIVE_MODULES:
            env["KGC_PURE"] = "1"  # the mypyc build would bypass the hook
    code = (
        prelude
        + _orphan_guard(os.getpid())
        + f"sys.argv = ['kgc', *{argv!r}]\nfrom kgc.tools.entry import main\nmain()\n"
    )
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=scratch,
        start_new_session=True,
    )
    with _LIVE_LOCK:
        _LIVE.add(proc)
        if _STOPPING.is_set():  # interrupted while it started
            os.killpg(proc.pid, signal.SIGKILL)
    try:
        out, _ = proc.communicate(timeout=budget)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return "timeout", time.monotonic() - started, f"no verdict in {budget:.0f} s"
    except BaseException:  # Ctrl-C while waiting in the main thread (kgc mutate's baselines)
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
    took = time.monotonic() - started
    lines = [ln for ln in out.splitlines() if ln.strip()]
    verdicts = [ln for ln in lines if ln.startswith(("FAIL", "ERROR")) or "VIOLATED" in ln or "diverge" in ln]
    last = (verdicts or lines or [""])[0 if verdicts else -1][:300]
    return ("survived" if proc.returncode == 0 else "killed"), took, f"exit {proc.returncode}: {last}"


def run_one_mutant(
    mutant: Mutant,
    detectors: Sequence[str],
    budget: float,
    traces: Path | None,
    fuzz_examples: int,
    first_kill: bool,
    scratch: Path,
) -> MutantResult:
    """One mutant against each detector in turn (scratch space under `scratch`): what a worker
    of the local pool and a Spark task (conformance/pipeline/mutate_job.py) both run, so the two
    give the same verdicts."""
    result = MutantResult(mutant)
    for det in detectors:
        if _STOPPING.is_set():
            break
        if first_kill and result.killed_by(detectors):
            result.outcomes[det], result.seconds[det], result.evidence[det] = "skipped", 0.0, ""
            continue
        argv = detector_argv(det, scratch / det, traces, fuzz_examples)
        outcome, took, last = run_detector(argv, mutant, budget, scratch / det)
        result.outcomes[det], result.seconds[det], result.evidence[det] = outcome, took, last
    return result


def run_mutants(
    mutants: Sequence[Mutant],
    detectors: Sequence[str],
    budget: float,
    jobs: int,
    traces: Path | None,
    fuzz_examples: int,
    on_done: Callable[[MutantResult], None] = lambda r: None,
    first_kill: bool = False,
) -> list[MutantResult]:
    """Every mutant against every detector, `jobs` mutants at a time. With `first_kill`, a
    mutant's detectors stop at the first (in `detectors` order) that kills it, the rest marked
    `skipped`: the together score is the same, and a slow detector (validate: minutes per
    mutant under load) runs only on what the quick ones missed."""
    with tempfile.TemporaryDirectory(prefix="kgc-mutate-") as tmp:

        def one(index: int) -> MutantResult:
            result = run_one_mutant(
                mutants[index], detectors, budget, traces, fuzz_examples, first_kill, Path(tmp) / f"m{index}"
            )
            if not _STOPPING.is_set():
                on_done(result)
            return result

        _STOPPING.clear()
        pool = ThreadPoolExecutor(max_workers=jobs)
        try:
            return list(pool.map(one, range(len(mutants))))
        except BaseException:  # Ctrl-C, SIGTERM: no mutant is started after, none left running
            pool.shutdown(wait=False, cancel_futures=True)
            _kill_live()
            raise
        finally:
            pool.shutdown(wait=True)


def scores(results: Sequence[MutantResult], detectors: Sequence[str]) -> dict[str, float]:
    """Kill rate per detector and for all of them together (`all`), in percent of the mutants."""
    n = len(results) or 1
    out = {d: 100.0 * sum(r.killed_by([d]) for r in results) / n for d in detectors}
    out["all"] = 100.0 * sum(r.killed_by(detectors) for r in results) / n
    return out
