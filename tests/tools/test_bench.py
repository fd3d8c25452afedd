"""`kgc bench`: the purgatory workload, the agreement check, the registry and the result files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kgc.tools.bench import BENCHMARKS, BenchOptions, BenchUnavailable
from kgc.tools.bench.purgatories import PURGATORIES, HeapPurgatory, SchedPurgatory, WheelPurgatory
from kgc.tools.bench.purgatory_bench import PurgatoryDisagreement, drive, run_purgatory_bench
from kgc.tools.bench.workload import WorkloadSpec, generate
from kgc.tools.cli import app
from kgc.tools.cmd_bench import EXIT_CHECK_FAILED, EXIT_OK, EXIT_UNAVAILABLE, run_bench

pytestmark = pytest.mark.slow  # runs TLC (the fast lane is `pytest -m "not slow"`)

SMALL = WorkloadSpec(target_outstanding=600, seed=7)


@pytest.fixture(scope="module")
def small_workload():
    return generate(SMALL)


# ---------------------------------------------------------------- workload


def test_workload_is_deterministic_per_seed(small_workload) -> None:
    again = generate(SMALL)
    other = generate(WorkloadSpec(target_outstanding=600, seed=8))
    assert list(again.events()) == list(small_workload.events())
    assert list(other.events()) != list(small_workload.events())


def test_workload_is_a_valid_stream_with_the_right_ground_truth(small_workload) -> None:
    timeout = SMALL.timeout_ms
    now, arrived, completed = -1, {}, set()
    for event in small_workload.events():
        if event[0] == "advance":
            assert event[1] == now + 1
            now = event[1]
        elif event[0] == "arrive":
            assert event[1] not in arrived and event[2] == timeout
            arrived[event[1]] = now
        else:
            op_id = event[1]
            assert op_id in arrived and op_id not in completed
            assert arrived[op_id] <= now < arrived[op_id] + timeout  # completed before its deadline
            completed.add(op_id)
    # every operation either completes or, by the last tick, has passed its deadline
    assert now >= max(arrived.values()) + timeout
    expected = {i for i in arrived if i not in completed}
    assert expected == {i for i, flag in enumerate(small_workload.expected_expired) if flag}


def test_workload_reaches_the_target_outstanding_count() -> None:
    workload = generate(WorkloadSpec(target_outstanding=5_000, seed=1))
    w0, w1 = workload.window
    live = workload.outstanding_by_tick()[w0:w1]
    assert 0.95 * 5_000 <= min(live) and max(live) <= 1.05 * 5_000
    # Kafka's low-timeout case: about 7.9% of requests expire
    assert 0.06 < workload.num_expected_expired / workload.num_requests < 0.10


# ---------------------------------------------------------------- agreement


def test_the_three_purgatories_expire_the_same_operations(small_workload) -> None:
    expired = {}
    for name, factory in PURGATORIES.items():
        n = small_workload.num_requests
        adapter = factory(bytearray(n), bytearray(n))
        stats = drive(adapter, small_workload)
        assert stats.finished and adapter.outstanding() == 0
        expired[name] = adapter.expired
    assert expired["wheel"] == expired["heap"] == expired["sched"] == small_workload.expected_expired
    assert small_workload.num_expected_expired > 0


class DroppingHeap(HeapPurgatory):
    """Broken on purpose: forgets every 50th cancellation, so those operations expire."""

    name = "dropping-heap"

    def __init__(self, expired: bytearray, satisfied: bytearray) -> None:
        super().__init__(expired, satisfied)
        self._completions = 0

    def complete(self, op_id: int) -> None:
        self._completions += 1
        if self._completions % 50:
            super().complete(op_id)


def test_a_purgatory_that_drops_a_cancellation_is_caught() -> None:
    with pytest.raises(PurgatoryDisagreement, match="dropping-heap.*should not have"):
        run_purgatory_bench((600,), purgatories={"heap": HeapPurgatory, "dropping-heap": DroppingHeap}, memory=False)


def test_a_caught_disagreement_fails_kgc_bench(tmp_path: Path) -> None:
    def broken(options: BenchOptions):
        run_purgatory_bench((600,), purgatories={"dropping-heap": DroppingHeap}, memory=False)

    report = run_bench("purgatory", out_dir=tmp_path, benchmarks={"purgatory": broken})
    assert report.exit_code == EXIT_CHECK_FAILED
    assert "dropping-heap" in report.failed["purgatory"]
    saved = json.loads(Path(report.files[0]).read_text())
    assert saved["ok"] is False and "dropping-heap" in saved["failed"]["purgatory"]


def test_a_budget_stopped_run_is_checked_on_its_prefix(small_workload) -> None:
    n = small_workload.num_requests
    adapter = SchedPurgatory(bytearray(n), bytearray(n))
    stats = drive(adapter, small_workload, budget_s=1e-9)  # stops after the first chunk
    assert not stats.finished
    prefix = small_workload.deadline_prefix(stats.last_tick)
    assert adapter.expired[:prefix] == small_workload.expected_expired[:prefix]


# ---------------------------------------------------------------- kgc bench


def test_kgc_bench_purgatory_quick_writes_json_and_plot(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "purgatory", "--quick", "--json", "--out", str(tmp_path)])
    assert result.exit_code == EXIT_OK, result.output
    last = json.loads(result.stdout.strip().splitlines()[-1])
    assert last["ok"] is True and last["quick"] is True
    for key in ("cpu_model", "cores", "python", "platform"):
        assert last["machine"][key]
    # the speed probe and the load that let two result files be compared (the host's speed drifts)
    assert 1 < last["machine"]["speed_probe_loop_cpu_ms"] < 10_000 and last["machine"]["load_average_at_start"] >= 0
    purgatory = last["results"]["purgatory"]
    assert purgatory["ok"] is True and purgatory["summary"]["timing_claims"] is False
    names = {(row["target_outstanding"], row["purgatory"]) for row in purgatory["rows"]}
    assert names == {(size, name) for size in (500, 2_000) for name in ("wheel", "heap", "sched")}
    for row in purgatory["rows"]:
        assert row["ops_per_s"] > 0 and row["peak_mb"] > 0 and not row["partial"]
        assert row["ns_per_add"] and row["ns_per_complete"] and row["ns_per_expire"]
    assert set(purgatory["summary"]["ratios"]["500"]) >= {
        "wheel_over_heap_ops",
        "wheel_over_sched_ops",
        "wheel_over_heap_peak_memory",
    }
    assert purgatory["data"]["agreement"]["ok"] is True
    json_file, png_file = (Path(p) for p in last["files"])
    assert json.loads(json_file.read_text())["results"]["purgatory"]["rows"] == purgatory["rows"]
    assert png_file.suffix == ".png" and png_file.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_kgc_bench_all_quick_runs_the_three_benchmarks_in_one_command(tmp_path: Path) -> None:
    """What CI runs of the benchmarks: each one, with its correctness check, no timing claims."""
    result = CliRunner().invoke(app, ["bench", "all", "--quick", "--json", "--out", str(tmp_path)])
    assert result.exit_code == EXIT_OK, result.output
    last = json.loads(result.stdout.strip().splitlines()[-1])
    assert last["ok"] is True and last["unavailable"] == {} and last["failed"] == {}
    results = last["results"]
    assert set(results) == {"purgatory", "tlc", "replay", "pipeline", "serve", "logs", "fuzz"}
    assert all(r["ok"] for r in results.values())
    assert results["purgatory"]["data"]["agreement"]["ok"] is True
    tlc = results["tlc"]
    assert [r["workers"] for r in tlc["rows"]] == [1, 2] and tlc["summary"]["agree"] is True
    assert {r["model"] for r in tlc["rows"]} == {"smoke"}
    assert all(r["outcome"] == "passed" and r["distinct_states"] > 1000 for r in tlc["rows"])
    pipeline = results["pipeline"]["summary"]  # local[1] and local[2] agreed row for row (ok)
    assert pipeline["itf_speedup"] > 1 and pipeline["local2_traces_per_s"] > 0


def test_unknown_and_unavailable_benchmarks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(KeyError):
        run_bench("nope", out_dir=tmp_path)

    def unavailable(options: BenchOptions) -> None:
        raise BenchUnavailable("replay benchmark not yet available")

    monkeypatch.setitem(BENCHMARKS, "replay", unavailable)
    report = run_bench("replay", out_dir=tmp_path)
    assert report.exit_code == EXIT_UNAVAILABLE and "replay" in report.unavailable


# ---------------------------------------------------------------- tlc (a real TLC run on a toy model)

TOY = """---- MODULE Toy ----
EXTENDS Naturals
VARIABLES x, y
Init == x = 0 /\\ y = 0
Next == \\/ x < 30 /\\ x' = x + 1 /\\ UNCHANGED y
        \\/ y < 30 /\\ y' = y + 1 /\\ UNCHANGED x
        \\/ x = 30 /\\ y = 30 /\\ UNCHANGED <<x, y>>
Bounded == x <= 30 /\\ y <= 30
====
"""


@pytest.mark.skipif(shutil.which("java") is None, reason="TLC needs java")
def test_tlc_bench_runs_one_and_two_workers_on_a_toy_model(tmp_path: Path) -> None:
    from kgc.spec.catalog import Model
    from kgc.tools.bench.tlc_bench import compare_workers

    (tmp_path / "Toy.tla").write_text(TOY)
    (tmp_path / "Toy.cfg").write_text("INIT Init\nNEXT Next\nINVARIANT Bounded\n")
    model = Model(name="toy", config=tmp_path / "Toy.cfg", module=tmp_path / "Toy.tla", modules=())
    result = compare_workers(model, timeout_s=120)
    assert result.ok
    assert [row["workers"] for row in result.rows] == [1, 2]
    assert all(row["outcome"] == "passed" and row["distinct_states"] == 31 * 31 for row in result.rows)
    assert "speedup_2_over_1" in result.summary


def test_replay_benchmark_quick_runs_every_measurement() -> None:
    """The replay benchmark drives real work end to end (coordinator, scenarios, TLC simulate +
    conform, TLC validate batched and single); quick mode checks it runs and agrees, not speed."""
    from kgc.tools.bench import BENCHMARKS, BenchOptions

    result = BENCHMARKS["replay"](BenchOptions(quick=True))
    assert result.ok
    assert [r["what"] for r in result.rows][:3] == ["coordinator handlers", "kgc replay (scenarios)", "kgc conform"]
    assert all(r["rate"] > 0 for r in result.rows)
    assert result.summary["conform_verdicts"]["DIVERGED"] == 0


def test_serve_benchmark_quick_measures_real_rebalances() -> None:
    """`kgc bench serve --quick`: consumers over TCP against a real `kgc serve`; every figure is
    measured (rebalances completed, latencies, the server's CPU) next to the in-process baseline."""
    from kgc.tools.bench.serve_bench import serve_benchmark

    result = serve_benchmark(BenchOptions(quick=True))
    s = result.summary
    assert result.ok and s["consumers"] == 20 and s["groups"] == 2
    assert s["rebalances_per_s"] > 0 and s["joins_per_s"] >= s["rebalances_per_s"]
    assert 0 < s["join_to_assignment_p50_ms"] <= s["join_to_assignment_p99_ms"]
    assert s["server_cpu_cores"] > 0 and s["baseline_rebalances_per_s"] > s["rebalances_per_s"]


def test_rounds_keep_each_purgatorys_fastest_pass_and_check_every_pass() -> None:
    """A full run times each purgatory several times, alternating, and reports its fastest pass:
    the row's ops/s is the best of the rounds recorded beside it, and a purgatory that disagrees
    with the stream in any round fails the run."""
    data = run_purgatory_bench(
        (500,), purgatories={"wheel": WheelPurgatory, "heap": HeapPurgatory}, memory=False, rounds=3
    )
    for m in data["measurements"]:
        assert len(m["rounds_ops_per_s"]) == 3
        assert m["ops_per_s"] == max(m["rounds_ops_per_s"])
    assert data["agreement"]["ok"]

    # rounds per size; the order reversed every other round (ABBA), so on a host whose speed
    # drifts one way during the run neither side always runs in the later, faster minute
    built: list[str] = []

    def logged(cls: type) -> Any:
        def make(expired: bytearray, satisfied: bytearray) -> Any:
            built.append(cls.name)
            return cls(expired, satisfied)

        return make

    data = run_purgatory_bench(
        (500, 600),
        purgatories={"wheel": logged(WheelPurgatory), "heap": logged(HeapPurgatory)},
        memory=False,
        rounds={500: 4, 600: 1},
    )
    assert built == ["wheel", "heap", "heap", "wheel", "wheel", "heap", "heap", "wheel", "wheel", "heap"]
    assert [len(m["rounds_ops_per_s"]) for m in data["measurements"]] == [4, 4, 1, 1]

    class DropsInLaterRounds(DroppingHeap):
        """Agrees in its first pass, drops cancellations in every later one."""

        built = 0

        def __init__(self, expired: bytearray, satisfied: bytearray) -> None:
            super().__init__(expired, satisfied)
            type(self).built += 1

        def complete(self, op_id: int) -> None:
            if type(self).built == 1:
                HeapPurgatory.complete(self, op_id)
            else:
                super().complete(op_id)

    with pytest.raises(PurgatoryDisagreement):
        run_purgatory_bench((600,), purgatories={"late-dropper": DropsInLaterRounds}, memory=False, rounds=2)
