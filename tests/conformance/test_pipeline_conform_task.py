"""The pipeline's per-task code without Spark: --input documents that are not traces become
`malformed` rows with the reason (nothing raised, nothing dropped), and the work plan depends
on the seed, the counts and the slice size only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgc.conformance.pipeline.conform_job import DEFAULT_SLICE, auto_slice, input_files, plan_units
from kgc.conformance.pipeline.conform_task import MALFORMED, ROW_FIELDS, WorkUnit, run_unit

GOOD_META = {"format": "ITF", "modelValues": ["c1", "c2"]}


def _input_rows(path: Path) -> list[dict]:
    return list(run_unit(WorkUnit("input", path=str(path), model="")))


def test_bad_json_is_a_malformed_row(tmp_path: Path) -> None:
    f = tmp_path / "bad.itf.json"
    f.write_text('{"states": [', encoding="utf-8")
    (row,) = _input_rows(f)
    assert row["verdict"] == MALFORMED
    assert str(f) in row["reason"]
    assert set(row) == set(ROW_FIELDS)


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ([1, 2, 3], "JSON object"),
        ({"#meta": GOOD_META, "states": 5}, "states"),
        ({"#meta": GOOD_META, "states": [{"now": {"#bigint": "0"}}]}, "no constants or model"),
        ({"#meta": {**GOOD_META, "model": "default"}, "states": [{"now": {"#bigint": "0"}}]}, "state 0"),
        ({"#meta": {**GOOD_META, "model": "no_such_model"}, "states": [{}]}, "no_such_model"),
    ],
)
def test_wrong_shapes_are_malformed_rows(tmp_path: Path, document: object, reason: str) -> None:
    f = tmp_path / "t.json"
    f.write_text(json.dumps(document), encoding="utf-8")
    (row,) = _input_rows(f)
    assert row["verdict"] == MALFORMED, row
    assert reason in row["reason"], row["reason"]


@pytest.mark.slow
def test_an_unknown_action_is_a_malformed_row(tmp_path: Path, real_trace: dict) -> None:
    """A real trace with one action renamed."""
    trace = json.loads(json.dumps(real_trace))
    trace["states"][1]["lastAction"]["name"] = "NoSuchAction"
    f = tmp_path / "t.itf.json"
    f.write_text(json.dumps(trace), encoding="utf-8")
    (row,) = _input_rows(f)
    assert row["verdict"] == MALFORMED, row
    assert "NoSuchAction" in row["reason"]


@pytest.mark.slow
def test_json_lines_give_one_row_per_line_good_and_bad(tmp_path: Path, real_trace: dict) -> None:
    good = json.dumps(real_trace)
    f = tmp_path / "corpus.jsonl"
    f.write_text("\n".join([good, "not json", "", '{"#meta": {}, "states": "x"}', good]) + "\n", encoding="utf-8")
    rows = _input_rows(f)
    assert [r["trace_id"] for r in rows] == [f"{f}:1", f"{f}:2", f"{f}:4", f"{f}:5"]
    assert [r["verdict"] for r in rows] == ["conforms", MALFORMED, MALFORMED, "conforms"]
    assert rows[0]["spec_actions"] and rows[0]["impl_cells"]


def test_folders_give_their_json_and_jsonl(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    for name in ("a/x.itf.json", "b.jsonl", "c.txt", "a/y.json"):
        (tmp_path / name).write_text("{}", encoding="utf-8")
    assert [p.relative_to(tmp_path).as_posix() for p in input_files([tmp_path])] == [
        "a/x.itf.json",
        "a/y.json",
        "b.jsonl",
    ]


def test_the_plan_does_not_depend_on_partitions() -> None:
    units = plan_units(model="default", traces=25, depth=9, seed=100, bug=None, slice_size=10, random_runs=12)
    assert [(u.kind, u.seed, u.count) for u in units] == [
        ("random", 100, 10),
        ("random", 110, 2),
        ("simulate", 100, 10),
        ("simulate", 101, 10),
        ("simulate", 102, 5),
    ]


def test_random_slices_can_be_sized_apart_from_simulate_slices() -> None:
    units = plan_units(
        model="default", traces=25, depth=9, seed=100, bug=None, slice_size=20, random_runs=12, random_slice=5
    )
    assert [(u.kind, u.seed, u.count) for u in units] == [
        ("random", 100, 5),
        ("random", 105, 5),
        ("random", 110, 2),
        ("simulate", 100, 20),
        ("simulate", 101, 5),
    ]


@pytest.mark.parametrize(
    ("traces", "expected"),
    [(1, 500), (4_000, 500), (4_001, 501), (20_000, 2_500), (40_000, 5_000), (100_000, 5_000), (1_000_000, 5_000)],
)
def test_auto_slice_cuts_eight_slices_of_500_to_5000(traces: int, expected: int) -> None:
    assert auto_slice(traces) == expected


@pytest.mark.parametrize(
    ("args", "simulate_slice", "random_slice"),
    [([], 2_500, DEFAULT_SLICE), (["--slice", "70"], 70, 70)],
)
def test_the_command_sizes_slices_from_the_trace_count_unless_told(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: list[str], simulate_slice: int, random_slice: int
) -> None:
    """The slices the command plans (it stops before Spark: PySpark reported missing)."""
    from kgc.conformance.pipeline import conform_job, session
    from kgc.tools.cli import app

    planned: list[dict] = []

    def recording_plan(**kwargs: object) -> list:
        planned.append(kwargs)
        return plan_units(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(session, "spark_available", lambda: False)
    monkeypatch.setattr(conform_job, "plan_units", recording_plan)
    command = ["pipeline", "conform", "--traces", "20000", "--random", "30", "--out", str(tmp_path / "o"), *args]
    done = CliRunner().invoke(app, command)
    assert done.exit_code == 2, done.output
    assert [(p["slice_size"], p["random_slice"]) for p in planned] == [(simulate_slice, random_slice)]


def test_without_pyspark_the_install_hint_and_exit_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from kgc.conformance.pipeline import session
    from kgc.tools.cli import app

    monkeypatch.setattr(session, "spark_available", lambda: False)
    done = CliRunner().invoke(app, ["pipeline", "conform", "--traces", "1", "--out", str(tmp_path / "o")])
    assert done.exit_code == 2, done.output
    assert session.INSTALL_HINT in done.output


@pytest.fixture(scope="module")
def real_trace(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One trace of the default model, drawn by TLC (kgc simulate's code)."""
    from kgc.conformance.mbt import simulate

    out = tmp_path_factory.mktemp("sim")
    result = simulate("default", 1, 12, 5, out)
    return json.loads(result.files[0].read_text(encoding="utf-8"))
