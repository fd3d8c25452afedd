"""A --master Spark would refuse is bad usage for every command that runs on Spark: one line,
exit 1, before any JVM starts (spark-submit would print a Java stack trace first) and before
any work (`kgc mutate` runs no baseline). A Spark job that fails later is exit 21."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BAD = "nosuch://nowhere:1"


def _logs(tmp_path: Path) -> list[str]:
    log = tmp_path / "server.log"
    log.write_text("[2024-01-01 00:00:00,000] INFO [GroupCoordinator 1]: Group g with generation 1 is now empty\n")
    return ["pipeline", "logs", "--input", str(log), "--out", str(tmp_path / "out")]


COMMANDS = {
    "pipeline logs": _logs,
    "pipeline conform": lambda tmp: ["pipeline", "conform", "--traces", "2", "--out", str(tmp / "out")],
    "mutate": lambda tmp: ["mutate", "--detectors", "replay", "--sample", "1"],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_a_master_spark_cannot_use_is_one_line_and_exit_1(tmp_path: Path, command: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "kgc.tools.entry", *COMMANDS[command](tmp_path), "--master", BAD],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 1, run.stderr[-2000:]
    lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"kgc {command}: --master: master '{BAD}'"), lines
    assert "Traceback" not in run.stderr and "baseline" not in run.stderr
