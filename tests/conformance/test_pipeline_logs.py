"""`kgc pipeline logs` on a real local SparkSession: the corpus of published coordinator log
excerpts (tests/conformance/data/logs_corpus, each file with its source), hostile inputs, the
line accounting, and the command's exit codes and --json line."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from kgc.conformance.pipeline.logs_pipeline import run_logs  # noqa: E402
from kgc.conformance.pipeline.session import spark_session  # noqa: E402

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).parent / "data" / "logs_corpus"
GC = "(kafka.coordinator.group.GroupCoordinator)"


@pytest.fixture(scope="module")  # module: the conform pipeline tests stop their own session
def spark() -> Iterator[object]:
    with spark_session("local[2]", app_name="kgc-tests-logs") as session:
        yield session


def test_the_session_jvm_runs_the_throughput_collector(spark: object) -> None:
    """session.JVM_FLAGS reach the local-mode JVM (its collectors are the parallel ones, not G1's)."""
    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()  # type: ignore[attr-defined]
    names = sorted(str(bean.getName()) for bean in beans)
    assert names == ["PS MarkSweep", "PS Scavenge"], names


def physical_lines(paths: list[Path]) -> int:
    total = 0
    for path in paths:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as handle:  # type: ignore[operator]
            total += sum(1 for _ in handle)
    return total


def test_corpus_is_understood_without_violations(spark: object, tmp_path: Path) -> None:
    outcome = run_logs(spark, [str(CORPUS)], tmp_path / "out")  # type: ignore[arg-type]
    summary = outcome.summary
    files = sorted(CORPUS.glob("*.log"))
    assert all(f.read_text().startswith("# source: https://") for f in files)
    assert summary["files"] == len(files)
    assert summary["lines"] == physical_lines(files) == sum(summary["categories"].values())
    assert summary["understood"] >= 0.95, summary["categories"]
    assert outcome.violations == 0, summary["findings"]
    storms = [f for f in outcome.findings if f.rule == "rebalance_storm"]
    assert [Path(f.file).name for f in storms] == ["kaffe-92-rebalance-cycle-2.3.0.log"]
    groups = {h.group for h in outcome.groups}
    assert {"test_consumer", "***", "xxxx", "test-consumer-group"} <= groups
    xxxx = next(h for h in outcome.groups if h.group == "xxxx")
    assert xxxx.brokers == ["1001", "1002"]
    for table in ("events", "findings", "groups"):
        assert list((tmp_path / "out" / table).glob("*.parquet")), table
    assert "test_consumer" in (tmp_path / "out" / "timeline.html").read_text()


def test_every_line_is_accounted_for_in_messy_pastes(spark: object, tmp_path: Path) -> None:
    entry = "[2021-06-09 10:00:0{s},000] INFO [GroupCoordinator 1]: {msg} " + GC
    prep = "Preparing to rebalance group g in state PreparingRebalance with old generation 1 (__consumer_offsets-3) (reason: x)"
    lines = [
        "> " + entry.format(s=1, msg=prep),  # markdown quote
        "Jun 09 10:00:02 host kafka[42]: "
        + entry.format(s=2, msg="Stabilized group g generation 2 (__consumer_offsets-3) with 1 members"),
        "Jun 09 10:00:02 host kafka[42]: "
        + entry.format(s=2, msg="Stabilized group g generation 2 (__consumer_offsets-3) with 1 members"),
        "[2021-06-09 10:00:03,000] INFO [GroupCoordinator 1]: Assignment received from leader m-1 for group g for",
        "generation 2. The group has 1 members, 0 of which are static. " + GC,
        "[2021-06-09 10:00:04,000] INFO [GroupCoordinator 1]: Something new about group g " + GC,
        "[2021-06-09 10:00:04,000] INFO [Log partition=t-0] Rolled new log segment (kafka.log.Log)",
        "",
    ]
    (tmp_path / "paste.log").write_text("\n".join(lines) + "\n")
    outcome = run_logs(spark, [str(tmp_path / "paste.log")], tmp_path / "out")  # type: ignore[arg-type]
    cats = outcome.summary["categories"]
    assert cats == {
        "event": 3,
        "unparsed": 1,
        "noise": 2,
        "continuation": 1,
        "duplicate": 1,
        "garbage": 0,
        "oversized": 0,
    }
    assert outcome.summary["lines"] == len(lines) == sum(cats.values())
    assert outcome.violations == 0 and outcome.groups[0].generations == [1, 2]


def test_hostile_inputs_are_counted_never_fatal(spark: object, tmp_path: Path) -> None:
    good = (
        "[2021-06-09 10:00:00,000] INFO [GroupCoordinator 1]: Stabilized group g generation 2 (__consumer_offsets-3) "
        + GC
    )
    (tmp_path / "binary.log").write_bytes(os.urandom(4096) + b"\n" + good.encode() + b"\n")
    (tmp_path / "huge.log").write_text("x" * (10 * 1024 * 1024) + "\n" + good + "\n")
    whole = gzip.compress(("\n".join([good] * 2000) + "\n").encode())
    (tmp_path / "cut.log.gz").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "fake.log.gz").write_bytes(b"not gzip at all\n")
    missing = tmp_path / "nope.log"
    outcome = run_logs(spark, [str(tmp_path / "*.log*"), str(missing)], tmp_path / "out")  # type: ignore[arg-type]
    summary = outcome.summary
    assert outcome.input_errors == [f"{missing}: no such file or folder"]
    status = {Path(s["file"]).name: s["status"] for s in summary["file_status"]}
    assert status == {"cut.log.gz": "truncated", "fake.log.gz": "corrupt"}
    cats = summary["categories"]
    assert cats["oversized"] == 1 and cats["garbage"] >= 1
    assert summary["lines"] == sum(cats.values())
    assert cats["event"] >= 2  # the good lines after the garbage and the huge line


def _kgc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kgc.tools.cli", "pipeline", "logs", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "KGC_SPARK_DRIVER_MEMORY": "1g"},
    )


def test_command_exit_codes_and_json(tmp_path: Path) -> None:
    bad = tmp_path / "bad.log"
    stab = (
        "[2021-06-09 10:00:0{s},000] INFO [GroupCoordinator 1]: Stabilized group g generation 5 (__consumer_offsets-3) "
        + GC
    )
    bad.write_text(stab.format(s=1) + "\n" + stab.format(s=5) + "\n".replace("\n", "\n") + stab.format(s=9) + "\n")
    run = _kgc("--input", str(bad), "--out", str(tmp_path / "out"), "--master", "local[1]", "--json")
    assert run.returncode == 10, run.stderr[-2000:]
    last = json.loads(run.stdout.strip().splitlines()[-1])
    assert last["files"] == 1 and last["lines"] == 3 and last["events"] == 3 and last["unparsed"] == 0
    assert [f["rule"] for f in last["findings"]] == ["generation_completed_twice", "generation_completed_twice"]
    assert last["findings"][0]["line"] == 2
    missing = _kgc("--input", str(tmp_path / "missing.log"), "--out", str(tmp_path / "out2"))
    assert missing.returncode == 2
    assert f"{tmp_path / 'missing.log'}: no such file or folder" in missing.stderr


SCENARIOS = sorted((Path(__file__).parents[2] / "conformance" / "scenarios").glob("*.json"))
#: Kafka logs no line when a group becomes Stable; a leader's write still in flight when the group
#: moves on (a new join, a leave, DelayedSync expiry, an unload) reads as Stable from the log.
#: These scenarios do exactly that.
WRITE_IN_FLIGHT = {
    "store-callback-after-a-new-join-is-ignored.json",
    "store-unload-while-the-leaders-write-is-in-flight.json",
    "store-callback-after-unload-and-reload-is-ignored.json",
    "store-follower-leave-during-the-leaders-write-makes-the-callback-a-no-op.json",
    "store-leader-leaves-during-its-write-then-the-empty-write-queues-behind-it.json",
    "store-delayed-sync-expiry-during-the-leaders-write.json",
    "store-failed-write-after-a-new-join-is-ignored.json",
}


def _rebuilt(spark: object, out: Path) -> dict[tuple[str, str], list[tuple[str, int | None]]]:
    from kgc.conformance.pipeline.logs_history import Event, state_sequence
    from kgc.conformance.pipeline.logs_pipeline import CHECK_COLUMNS, events_by_group

    rows = spark.read.parquet(str(out / "events")).select(*CHECK_COLUMNS).collect()  # type: ignore[attr-defined]
    by_broker: dict[tuple[str, str], list[Event]] = {}
    for group, events in events_by_group(rows).items():
        for event in events:
            if event.broker:  # "Loaded member" lines (GroupMetadata$) carry no broker and no state
                by_broker.setdefault((event.broker, group), []).append(event)
    rebuilt = {key: state_sequence(events) for key, events in by_broker.items()}
    return {key: seq for key, seq in rebuilt.items() if seq}


def test_round_trip_rebuilds_the_recorded_histories(spark: object, tmp_path: Path) -> None:
    from kgc.conformance.pipeline.logs_roundtrip import replay_with_logs

    recorded, problems = replay_with_logs(SCENARIOS, tmp_path / "kgc.log")
    assert problems == [] and len(recorded) > 80
    outcome = run_logs(spark, [str(tmp_path / "kgc.log")], tmp_path / "out")  # type: ignore[arg-type]
    assert outcome.summary["unparsed"] == 0 and outcome.violations == 0, outcome.summary["findings"][:5]
    rebuilt = _rebuilt(spark, tmp_path / "out")
    assert set(rebuilt) == set(recorded)
    differ = {
        SCENARIOS[int(broker)].name
        for (broker, group) in recorded
        if rebuilt[(broker, group)] != recorded[(broker, group)]
    }
    assert differ == WRITE_IN_FLIGHT
    for (broker, group), history in recorded.items():
        if SCENARIOS[int(broker)].name in WRITE_IN_FLIGHT:
            extra = [step for step in rebuilt[(broker, group)] if step not in history]
            # exactly one Stable the log implies, for a generation the group completed a join for
            assert len(extra) == 1 and extra[0][0] == "Stable", extra
            assert ("CompletingRebalance", extra[0][1]) in history, (extra, history)


def test_a_seeded_bug_coordinators_logs_are_flagged(spark: object, tmp_path: Path) -> None:
    from kgc.conformance.pipeline.logs_roundtrip import replay_with_logs
    from kgc.conformance.seeded_bugs import coordinator_class

    replay_with_logs(SCENARIOS, tmp_path / "bug.log", coordinator_class("generation_not_bumped"))
    outcome = run_logs(spark, [str(tmp_path / "bug.log")], tmp_path / "out")  # type: ignore[arg-type]
    violations = [f for f in outcome.findings if f.kind == "violation"]
    assert len(violations) >= 50
    assert {f.rule for f in violations} == {"generation_not_incremented"}


def test_validate_explains_the_round_trip_histories(spark: object, tmp_path: Path) -> None:
    from kgc.conformance.pipeline.logs_roundtrip import replay_with_logs

    # every third shipped scenario: TLC's search per history is the cost (all 100 took 16 min of
    # the CI's 60 on a loaded worker); the round trip without --validate covers all of them
    replay_with_logs(SCENARIOS[::3], tmp_path / "kgc.log")
    outcome = run_logs(spark, [str(tmp_path / "kgc.log")], tmp_path / "out", validate=True)  # type: ignore[arg-type]
    validation = outcome.summary["validation"]
    assert validation["counts"] == {"explained": len(outcome.groups)}, [
        (g, v) for g, v in validation["groups"].items() if v["verdict"] != "explained"
    ]
    assert sum(v.observations for v in outcome.verdicts) > 120  # every chosen scenario's lines, not a few
    assert not [f for f in outcome.findings if f.kind == "unexplained"]
    written = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert written["validation"] == validation


def test_validate_does_not_explain_a_seeded_bug_coordinators_logs(spark: object, tmp_path: Path) -> None:
    from kgc.conformance.pipeline.logs_roundtrip import replay_with_logs
    from kgc.conformance.seeded_bugs import coordinator_class

    replay_with_logs(SCENARIOS, tmp_path / "bug.log", coordinator_class("generation_not_bumped"))
    outcome = run_logs(spark, [str(tmp_path / "bug.log")], tmp_path / "out", validate=True)  # type: ignore[arg-type]
    unexplained = [f for f in outcome.findings if f.kind == "unexplained"]
    assert unexplained and {f.rule for f in unexplained} == {"not_a_spec_behaviour"}
    verdict = outcome.summary["validation"]["groups"]["g"]
    assert verdict["verdict"] == "unexplained" and "stabilized" in verdict["detail"] + unexplained[0].message
