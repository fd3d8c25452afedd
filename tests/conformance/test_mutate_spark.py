"""`kgc mutate --master`: the mutants run as Spark tasks on a real local session and get the
verdicts the local pool gives them, and a Ctrl-C leaves no detector behind (a master Spark
would refuse: test_spark_master_usage.py). Replay only (the quick detector) on three mutants of
the fixed sample, so the test stays short. No skip without PySpark: scripts/setup.sh installs it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from procsupport import alive, descendants

from kgc.conformance.mutate import Mutant, sample_mutants
from kgc.conformance.mutate_run import run_mutants

# Three of test_mutate's fixed sample (seed 20, 20 mutants), named by site (module, function,
# operator, target text: the draw's key, which has no line number, so an edit above them does
# not rename them as it renames their idents):
# replay kills the two of coordinator.py and not DelayedSync.try_complete's (equivalent), so both
# verdicts are compared. That one is also the first of the delayed-only draw with that seed,
# which the command-line test runs.
PICKED = (
    (
        "coordinator",
        "GroupCoordinator.on_expire_pending_sync",
        "drop-stmt",
        "pending = sorted(group.pending_sync_members)",
    ),
    ("coordinator", "GroupCoordinator.on_expire_heartbeat", "drop-not", "not member.has_satisfied_heartbeat"),
    ("delayed", "DelayedSync.try_complete", "return-none", "return False"),
)


@pytest.fixture(scope="module")
def picked() -> list[Mutant]:
    found = [
        m for m in sample_mutants(["coordinator", "delayed"], 20, seed=20) if tuple(m.key.split("\0")[:4]) in PICKED
    ]
    assert len(found) == len(PICKED), [m.ident for m in found]
    return found


@pytest.fixture(scope="module")
def local(picked: list[Mutant]) -> dict[str, dict[str, str]]:
    return {r.mutant.ident: r.outcomes for r in run_mutants(picked, ["replay"], 240, 2, None, 1)}


@pytest.fixture(scope="module")
def spark() -> Iterator[object]:
    from kgc.conformance.pipeline.session import spark_session

    with spark_session("local[2]", "kgc-tests", 2) as session:
        yield session


def _kgc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kgc.tools.entry", *args], capture_output=True, text=True)


def test_spark_tasks_give_the_local_pools_verdicts(
    spark: object, picked: list[Mutant], local: dict[str, dict[str, str]]
) -> None:
    from kgc.conformance.pipeline.mutate_job import run_mutants_on_spark

    seen: list[str] = []
    results = run_mutants_on_spark(
        spark, picked, ["replay"], 240, None, 1, on_done=lambda r: seen.append(r.mutant.ident)
    )  # type: ignore[arg-type]
    idents = [m.ident for m in picked]
    assert [r.mutant.ident for r in results] == idents
    assert sorted(seen) == sorted(idents)  # each result once, as its job ended
    assert {r.mutant.ident: r.outcomes for r in results} == local
    assert sorted(o["replay"] for o in local.values()) == ["killed", "killed", "survived"], local


def test_kgc_mutate_master_reports_as_the_local_path(picked: list[Mutant], local: dict[str, dict[str, str]]) -> None:
    delayed = picked[2].ident
    run = _kgc(
        "mutate", "--detectors", "replay", "--modules", "delayed", "--sample", "1", "--seed", "20",
        "--budget", "240", "--master", "local[2]", "--json",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout.splitlines()[-1])
    assert [(r["mutant"], r["outcomes"]) for r in report["results"]] == [(delayed, local[delayed])]
    assert report["survivors"] == [delayed] and report["kill_rate"]["replay"] == 0.0
    assert f"[1/1] {delayed}: replay=survived" in run.stderr


def test_ctrl_c_during_the_spark_stage_ends_every_detector() -> None:
    """The detectors run under Spark's Python workers, in sessions of their own: a Ctrl-C at the
    driver cancels the job (PySpark's handler), the session stops, the workers go, and each
    detector's orphan guard ends it (the guard alone: test_mutate.py).

    Fuzz on delayed.py's draw: three of its four mutants survive 60 examples (equivalent), so
    their detectors run for seconds and two are seen at once. Replay detectors, which this
    test used before, end within a second on a quiet machine: CI's run saw none of them."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kgc.tools.entry", "mutate", "--detectors", "fuzz", "--modules", "delayed",
         "--sample", "4", "--seed", "20", "--fuzz-examples", "60", "--budget", "600", "--master", "local[2]"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    detectors: list[int] = []
    try:
        deadline = time.monotonic() + 240
        while len(detectors) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
            detectors = [p for p, cmd in descendants(proc.pid).items() if "['fuzz'" in cmd and "pyspark" not in cmd]
        if len(detectors) < 2:
            out = proc.communicate(timeout=60)[0] if proc.poll() is not None else "(still running)"
            raise AssertionError(f"no two detectors ran at once under Spark: {out[-2000:]}")
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 130, out[-2000:]
        deadline = time.monotonic() + 10
        while any(alive(p) for p in detectors) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not any(alive(p) for p in detectors), detectors
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for pid in detectors:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
