"""`kgc bench logs --quick`: the generated broker logs are read back exactly (every coordinator
line an event, the categories adding up, no violation) on local[1] and local[2]; with --validate
every generated history is explained."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgc.tools.bench.logs_bench import logs_benchmark, write_broker_logs
from kgc.tools.bench.result import BenchOptions

pytestmark = pytest.mark.slow  # two SparkSessions


def test_generated_logs_have_the_announced_shape(tmp_path: Path) -> None:
    written, lines, events = write_broker_logs(tmp_path, 2 * 1024 * 1024)
    files = sorted(tmp_path.glob("*.log"))
    assert sum(f.stat().st_size for f in files) == written >= 2 * 1024 * 1024
    assert sum(f.read_text().count("\n") for f in files) == lines
    assert sum(f.read_text().count("[GroupCoordinator 1]") for f in files) == events == lines // 10


def test_quick_logs_bench_runs_and_checks(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    result = logs_benchmark(BenchOptions(quick=True))
    assert result.ok and [r["master"] for r in result.rows] == ["local[1]", "local[2]"]
    assert result.rows[0]["events"] == result.rows[1]["events"] > 0
    assert result.summary["ratio"] > 0
    # --validate: both generated histories explained by TLC, at a measured rate.
    assert result.data["validate"]["groups"] == 2 and result.summary["validate_groups_s"] > 0
