"""`kgc all`, the main job: its stages run as the user would run them, the implementation's runs
of the simulated traces are validated (spec -> implementation -> spec), and a failing stage
decides the exit code and shows in the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs TLC (the fast lane is `pytest -m "not slow"`)

KGC = Path(sys.executable).with_name("kgc")
ROOT = Path(__file__).resolve().parents[2]


def _all(*args: str, out: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KGC), "all", *args, "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env=env if env is not None else os.environ.copy(),
    )


def test_conform_and_validate_stages_close_the_loop(tmp_path: Path) -> None:
    run = _all("--model", "faults", "--traces", "12", "--seed", "5", "--only", "conform,validate", out=tmp_path / "run")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {
        "ok": True,
        "stages": {"conform": 0, "validate": 0},
        "report": str(tmp_path / "run" / "report.html"),
    }
    stages = {s["name"]: s for s in json.loads((tmp_path / "run" / "summary.json").read_text())}
    assert stages["conform"]["summary"]["conform"] == 12
    recorded = sorted((tmp_path / "run" / "conform-recorded").glob("*.json"))
    assert len(recorded) == 12
    validate = stages["validate"]
    assert str(tmp_path / "run" / "conform-recorded") in validate["argv"]
    scenarios = len(list((ROOT / "conformance" / "scenarios").glob("*.json")))
    # the 12 recorded runs, one per scenario, and 12 random runs; none failed
    assert validate["summary"]["traces"] == 12 + scenarios + 12
    assert validate["summary"]["failed"] == 0
    page = (tmp_path / "run" / "report.html").read_text()
    assert "conform" in page and "validate" in page


def test_a_failing_stage_sets_the_exit_code_and_the_report(tmp_path: Path) -> None:
    env = dict(os.environ, KGC_IMPL_BUG="generation_not_bumped")
    run = _all("--model", "faults", "--traces", "30", "--only", "conform", out=tmp_path / "run", env=env)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    assert "FAILED: conform" in run.stdout
    stage = json.loads((tmp_path / "run" / "summary.json").read_text())[0]
    assert stage["exit_code"] == 1 and stage["summary"]["diverged"] >= 1
    assert "generation" in json.dumps(stage["summary"]["first_divergence"])


def test_unknown_stage_is_a_usage_error(tmp_path: Path) -> None:
    run = _all("--only", "check,nope", out=tmp_path / "run")
    assert run.returncode == 1
    assert "unknown stage(s) ['nope']" in run.stderr
