"""`kgc bench purgatory --gc off|both`: timed passes without the cyclic collector, beside the
default-settings headline."""

from __future__ import annotations

import gc

import pytest
from typer.testing import CliRunner

from kgc.tools.bench.purgatories import HeapPurgatory, WheelPurgatory
from kgc.tools.bench.purgatory_bench import run_purgatory_bench
from kgc.tools.cli import app


def test_gc_both_adds_collector_off_rows_and_ratios_and_restores_the_collector() -> None:
    assert gc.isenabled()
    data = run_purgatory_bench(
        (400,), purgatories={"wheel": WheelPurgatory, "heap": HeapPurgatory}, memory=False, gc_mode="both"
    )
    assert gc.isenabled()
    rows = {(m["purgatory"], m["gc"]): m for m in data["measurements"]}
    assert set(rows) == {("wheel", "on"), ("wheel", "off"), ("heap", "on"), ("heap", "off")}
    # no collection can happen in a pass with the collector off; the same passes agree either way
    assert rows["wheel", "off"]["timing_pass"]["gc_collections"] == 0
    assert rows["heap", "off"]["timing_pass"]["gc_collections"] == 0
    assert rows["wheel", "on"]["timing_pass"]["adds"] == rows["wheel", "off"]["timing_pass"]["adds"]
    assert set(data["ratios"]["400"]) >= {"wheel_over_heap_ops"}
    assert set(data["ratios_gc_off"]["400"]) >= {"wheel_over_heap_ops"}


def test_gc_off_only_has_no_collector_on_rows() -> None:
    data = run_purgatory_bench((300,), purgatories={"wheel": WheelPurgatory}, memory=False, gc_mode="off")
    assert [m["gc"] for m in data["measurements"]] == ["off"]
    assert data["ratios"] == {}
    with pytest.raises(ValueError):
        run_purgatory_bench((300,), purgatories={"wheel": WheelPurgatory}, memory=False, gc_mode="sometimes")


def test_bad_gc_mode_is_a_one_line_usage_error(tmp_path) -> None:
    result = CliRunner().invoke(app, ["bench", "purgatory", "--quick", "--gc", "sometimes", "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert "--gc" in result.output and "Traceback" not in result.output
