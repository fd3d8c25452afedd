"""A --master Spark would refuse is bad usage for `kgc pipeline logs`: one line, exit 1, before
any JVM starts (spark-submit would print a Java stack trace first)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_a_master_spark_cannot_use_is_one_line_and_exit_1(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("[2024-01-01 00:00:00,000] INFO [GroupCoordinator 1]: Group g with generation 1 is now empty\n")
    run = subprocess.run(
        [sys.executable, "-m", "kgc.tools.entry", "pipeline", "logs", "--input", str(log),
         "--out", str(tmp_path / "out"), "--master", "nosuch://nowhere:1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 1, run.stderr[-2000:]
    lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("kgc pipeline logs: --master: master 'nosuch://nowhere:1'"), lines
    assert "Traceback" not in run.stderr
