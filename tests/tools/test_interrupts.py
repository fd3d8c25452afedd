"""Ctrl-C (SIGINT) and SIGTERM at random moments: no child of kgc survives, the exit code is
130 (or the command's own code when it had finished), no traceback, and `kgc all` writes the
report of the stages done so far, marked interrupted.

Every process kgc starts for a run names the run's folder on its command line (TLC's -metadir,
the stages' --out), so "nothing survives" is checked as "no process mentions the folder".
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from procsupport import descendants
from toolsupport import processes_mentioning

pytestmark = pytest.mark.slow

KGC = Path(sys.executable).with_name("kgc")
RNG = random.Random(int(os.environ.get("KGC_INTERRUPT_SEED", "15")))


def commands(folder: Path) -> dict[str, list[str]]:
    return {
        "check": ["check", "--model", "smoke", "--workers", "1", "--out", str(folder / "check")],
        "simulate": [
            "simulate",
            "--model",
            "smoke",
            "--traces",
            "400",
            "--depth",
            "40",
            "--seed",
            "3",
            "--out",
            str(folder / "traces"),
        ],
        "validate": ["validate", "--random", "300", "--seed", "3", "--out", str(folder / "recorded")],
        "all": ["all", "--model", "smoke", "--traces", "50", "--out", str(folder / "all")],
    }


def interrupt_at(argv: list[str], folder: Path, delay: float, sig: signal.Signals) -> tuple[int, str, str]:
    proc = subprocess.Popen(
        [str(KGC), *argv], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        try:
            out, err = proc.communicate(timeout=delay)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, sig)  # the terminal's foreground group: kgc itself
            out, err = proc.communicate(timeout=90)
        return proc.returncode, out, err
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.parametrize("name", ["check", "simulate", "validate", "all"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_no_child_survives_an_interrupt(tmp_path: Path, name: str, sig: signal.Signals) -> None:
    for attempt in range(2):
        folder = tmp_path / f"{attempt}"
        folder.mkdir()
        delay = RNG.uniform(0.5, 6.0)
        code, _out, err = interrupt_at(commands(folder)[name], folder, delay, sig)
        deadline = time.monotonic() + 10
        while processes_mentioning(str(folder)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_mentioning(str(folder)) == [], f"{name} after {sig.name} at {delay:.1f} s: children survived"
        assert "Traceback" not in err, f"{name} after {sig.name} at {delay:.1f} s:\n{err[-3000:]}"
        # 130 (Ctrl-C) or 128 + the signal; 0 or 10 when the command had already finished
        assert code in (130, 128 + sig, 0, 10), f"{name} after {sig.name} at {delay:.1f} s: exit {code}\n{err[-2000:]}"
        if code >= 128:
            assert "interrupted" in err or f"stopped by {sig.name}" in err, err[-2000:]
        # interrupted while kgc was still importing itself (tools/entry.py): nothing had started,
        # so there is no run folder and no report to write
        if name == "all" and code >= 128 and "interrupted while starting" not in err:
            report = (folder / "all" / "report.html").read_text()
            assert "interrupted" in report


def test_validate_interrupted_while_tlc_runs_on_worker_threads(tmp_path: Path) -> None:
    """kgc validate runs its TLC batches on a thread pool; Ctrl-C reaches the main thread
    only, so the batches' TLC must be stopped from there (and the scratch folder removed),
    not waited for."""
    proc = subprocess.Popen(
        [str(KGC), "validate", "--random", "600", "--seed", "7", "--jobs", "2"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        tlc: set[int] = set()
        while not tlc and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            # the processes below this kgc (other xdist workers' TLC runs are not its children)
            tlc = set(processes_mentioning("TraceGroupCoordinator")) & descendants(proc.pid).keys()
        assert tlc, "validate never started TLC"
        scratch = {
            a.decode()
            for pid in tlc
            for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"kgc-validate-" in a
        }
        # the run's scratch folder (tempfile's kgc-validate-*), named on its TLC command lines
        folders = {
            next(p for p in Path(a).parents if p.name.startswith("kgc-validate-")) for a in scratch if a.startswith("/")
        }
        assert folders, scratch
        os.killpg(proc.pid, signal.SIGINT)
        started = time.monotonic()
        _out, err = proc.communicate(timeout=60)
        assert time.monotonic() - started < 20, "validate waited for its TLC batches instead of stopping them"
        assert proc.returncode == 130, err[-2000:]
        survivors = {pid for f in folders for pid in processes_mentioning(str(f))}
        assert not survivors, f"TLC {survivors} outlived validate"
        assert not any(f.exists() for f in folders), folders
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
