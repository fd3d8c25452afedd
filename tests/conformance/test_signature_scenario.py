"""The shortest trace of each divergence signature, written by `kgc pipeline conform` as a
scenario file too: `kgc replay` passes it on the unmodified coordinator and fails it, at the
scenario step of the spec step that diverged, on the seeded bug that produced it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kgc.conformance.pipeline.session import spark_available

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not spark_available(), reason="needs the spark extra (scripts/setup.sh installs it)"),
]

KGC = Path(sys.executable).with_name("kgc")
BUG = "leader_not_reassigned"


def _kgc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KGC), *args], cwd=cwd, capture_output=True, text=True, timeout=900)


def test_signature_scenarios_replay_the_divergence(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = _kgc(
        "pipeline", "conform", "--master", "local[1]", "--model", "default", "--traces", "12", "--slice", "12",
        "--depth", "25", "--seed", "3", "--bug", BUG, "--out", str(out), "--json", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 10, done.stdout + done.stderr
    table = json.loads((out / "summary.json").read_text())["signature_table"]
    with_scenario = [t for t in table if t["scenario"]]
    assert with_scenario, table
    assert any("kgc replay shortest/" in line for line in done.stdout.splitlines() if line.startswith("SIGNATURE"))
    for t in with_scenario:
        scenario = out / t["scenario"]
        assert json.loads(scenario.read_text())["format"] == 2
        clean = _kgc("replay", str(scenario), cwd=tmp_path)
        assert clean.returncode == 0 and clean.stdout.startswith("PASS"), clean.stdout + clean.stderr
        buggy = _kgc("replay", str(scenario), "--bug", BUG, cwd=tmp_path)
        assert buggy.returncode == 1, buggy.stdout + buggy.stderr
        m = re.search(r"^FAIL \S+: step (\d+):", buggy.stdout, re.M)
        assert m, buggy.stdout
        # the failing expectation is in the spec step that diverged, as the table says
        assert int(m.group(1)) == t["scenario_fails_at"], (buggy.stdout, t)
        assert t["scenario_spec_step"] == t["shortest_step"], t
