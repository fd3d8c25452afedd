"""`kgc hunt`: TLC's simulation mode on a model too big to check exhaustively, for a time budget.
Kafka's spec: the budget runs out with nothing found (exit 0); a seeded spec bug: found, exit 10,
with the counterexample written as ITF."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs TLC

KGC = [sys.executable, "-m", "kgc.tools.cli"]  # the installed kgc, as users run it


def _hunt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KGC, "hunt", *args, "--json"], capture_output=True, text=True, timeout=300)


def test_hunt_on_kafkas_spec_ends_with_its_budget(tmp_path: Path) -> None:
    done = _hunt("--minutes", "0.2", "--out", str(tmp_path / "run"))
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["model"] == "hunt" and summary["violated"] is None and summary["counterexample"] is None
    assert (tmp_path / "run" / "result.json").is_file()
    assert "no violation in 0.2 min" in done.stderr


def test_hunt_finds_a_seeded_spec_bug_and_writes_the_counterexample(tmp_path: Path) -> None:
    done = _hunt("--model", "bug_heartbeat_rebalances_stable", "--minutes", "2", "--out", str(tmp_path / "run"))
    assert done.returncode == 10, done.stdout + done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["violated"] == "StableRebalanceOnlyByTrigger"
    trace = json.loads(Path(summary["counterexample"]).read_text())
    assert len(trace["states"]) >= 2


def test_hunt_refuses_an_unknown_model() -> None:
    done = _hunt("--model", "no_such_model", "--minutes", "0.1")
    assert done.returncode == 1
    assert "no model 'no_such_model'" in done.stderr
