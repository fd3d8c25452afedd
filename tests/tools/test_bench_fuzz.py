"""`kgc bench fuzz --quick`: each run a real `kgc fuzz` process, its first failure read back."""

from __future__ import annotations

import pytest

from kgc.tools.bench.fuzz_bench import QUICK_BUGS, fuzz_benchmark, run_fuzz
from kgc.tools.bench.result import BenchOptions

pytestmark = pytest.mark.slow


def test_quick_fuzz_bench_finds_its_bugs_and_reports_the_first_failure() -> None:
    result = fuzz_benchmark(BenchOptions(quick=True))
    assert result.ok and [row["bug"] for row in result.rows] == list(QUICK_BUGS)
    for row in result.rows:
        assert row["found"] == "1/1", row
        assert 1 <= row["examples_max"] <= 300 and row["seconds_max"] > 0 and row["cpu_seconds_max"] > 0
        assert row["by"]
    assert result.summary["bugs"] == len(QUICK_BUGS) and result.summary["clean_seeds"] == 1
    runs = result.data["runs"]
    assert {r["bug"] for r in runs} == set(QUICK_BUGS) and all(r["exit_code"] == 10 for r in runs)


def test_a_run_that_finds_nothing_has_no_first_failure() -> None:
    run = run_fuzz("none", 3, 5)
    assert run.exit_code == 0 and run.error is None
    assert not run.found and run.seconds is None and run.violated == ()


def test_an_unknown_bug_is_an_error_not_a_miss() -> None:
    run = run_fuzz("no_such_bug", 0, 5)
    assert run.exit_code == 1 and run.error is not None and "no_such_bug" in run.error
