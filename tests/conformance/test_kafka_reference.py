"""Kafka's own coordinator as the oracle: the reference JVM (reference/kafka-coordinator) runs
Kafka 3.9.1's GroupCoordinator, and every scenario passes on it or is an explained difference."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kgc.conformance.reference.explained import EXPLAINED_DIFFERENCES
from kgc.conformance.reference.kafka_coordinator import KafkaReference, ReferenceProtocolError, reference_command
from kgc.conformance.reference.replay import run_scenario_on_kafka
from kgc.conformance.scenario import load_scenario, loads_scenario
from kgc.tools.exit_codes import ExitCode

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "conformance" / "scenarios").glob("*.json"))

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kafka() -> KafkaReference:
    reference_command()  # raises ReferenceMissingError (a test error, not a skip) when not built
    with KafkaReference() as ref:
        yield ref


def test_every_scenario_passes_on_kafka_or_is_explained(kafka: KafkaReference) -> None:
    unexplained = []
    for path in SCENARIOS:
        result = run_scenario_on_kafka(load_scenario(path), kafka)
        listed = EXPLAINED_DIFFERENCES.get(result.name)
        if result.failure is not None and (listed is None or listed[0] != result.failure.step):
            unexplained.append(f"{path.name}: {result.failure}")
    assert len(SCENARIOS) > 80
    assert unexplained == []


def test_a_wrong_expectation_fails_on_kafka(kafka: KafkaReference) -> None:
    """The runner can fail: Kafka answers a first join with generation 1, not 2."""
    scenario = loads_scenario(
        '{"format": 1, "name": "wrong", "source": "test", "steps": ['
        '{"do": "join", "id": "a1", "group": "g"}, {"do": "tick", "ms": 0},'
        '{"expect": "a1", "error": "NONE", "generation": 2}]}'
    )
    result = run_scenario_on_kafka(scenario, kafka)
    assert result.failure is not None and result.failure.step == 2
    assert "generation=1" in result.failure.seen


def test_a_bad_command_is_an_error_not_a_crash(kafka: KafkaReference) -> None:
    with pytest.raises(ReferenceProtocolError, match="unknown op"):
        kafka.call({"op": "no-such-op"})
    assert kafka.call({"op": "state", "group": "never"})["state"]["state"] == "Dead"


def test_the_jvm_is_gone_after_close() -> None:
    ref = KafkaReference()
    ref.call({"op": "init"})
    proc = ref._proc
    ref.close()
    assert proc.poll() is not None


def test_kgc_replay_reference_kafka_exit_codes(tmp_path: Path) -> None:
    ok = subprocess.run(
        [sys.executable, "-m", "kgc.tools.entry", "replay", "--reference", "kafka", *map(str, SCENARIOS[:5])],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.count("PASS ") == 5
    missing = subprocess.run(
        [sys.executable, "-m", "kgc.tools.entry", "replay", "--reference", "kafka", str(SCENARIOS[0])],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "KGC_KAFKA_REFERENCE": str(tmp_path)},
    )
    assert missing.returncode == ExitCode.REFERENCE_MISSING, missing.stderr
    assert "not built" in missing.stderr and "scripts/setup.sh" in missing.stderr


def test_kgc_diff_scenarios_finds_no_difference_and_a_seeded_bug(tmp_path: Path) -> None:
    """kgc diff over every scenario: zero differences with kgc's coordinator; a seeded bug (an
    emptied group's generation reset to -1) differs from Kafka's code."""
    same = subprocess.run(
        [sys.executable, "-m", "kgc.tools.entry", "diff", "--scenarios", str(SCENARIOS[0].parent)],
        capture_output=True,
        text=True,
    )
    assert same.returncode == 0, same.stdout[-3000:] + same.stderr
    assert f"{len(SCENARIOS)} scenarios, 0 differ" in same.stdout
    bugged = subprocess.run(
        [sys.executable, "-m", "kgc.tools.entry", "diff", "--scenarios", str(SCENARIOS[0].parent)]
        + ["--bug", "empty_generation_reset"],
        capture_output=True,
        text=True,
    )
    assert bugged.returncode == 1, bugged.stdout[-3000:] + bugged.stderr
    assert "DIFF stable-leave: step 22: group 'g': generation: kgc -1, Kafka 3" in bugged.stdout


def test_kgc_diff_spec_traces_and_random_programs_sample(tmp_path: Path) -> None:
    """A CI sample of `kgc diff --traces / --random`: 200 simulated traces of the default model
    and 50 random client programs agree step by step with Kafka's coordinator, up to the listed
    HashMap leader choice (docs/kafka-reference.md)."""
    traces = tmp_path / "traces"
    sim = subprocess.run(
        [sys.executable, "-m", "kgc.tools.entry", "simulate", "--model", "default", "--traces", "200"]
        + ["--depth", "40", "--seed", "3", "--out", str(traces)],
        capture_output=True,
        text=True,
    )
    assert sim.returncode == 0, sim.stdout[-3000:] + sim.stderr
    run = subprocess.run(
        [sys.executable, "-m", "kgc.tools.entry", "diff", "--traces", str(traces), "--random", "50", "--quiet"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr
    assert "200 traces, 0 differ" in run.stdout and ", 0 invalid" in run.stdout
    assert "50 random programs, 0 differ" in run.stdout
    assert "DIFF" not in run.stdout


def test_kgc_diff_random_programs_report_a_seeded_bug() -> None:
    """The same programs on a seeded-bug kgc coordinator (an emptied group's generation reset to
    -1) differ from Kafka's, each at its step: the comparison can fail."""
    run = subprocess.run(
        [sys.executable, "-m", "kgc.tools.entry", "diff", "--random", "20", "--quiet"]
        + ["--bug", "empty_generation_reset"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr
    assert "group 'g': generation: kgc -1, Kafka " in run.stdout
    differ = [line for line in run.stdout.splitlines() if line.startswith("DIFF random-")]
    assert len(differ) >= 5 and all(": step " in line for line in differ)


def test_kgc_conform_reference_kafka_checks_spec_traces_on_kafka(tmp_path: Path) -> None:
    """`kgc conform --reference kafka`: simulated traces of the default model hold on Kafka's
    coordinator (group state, generation, members, leader after every spec step); the same traces
    with the generation bumped in every state from step 5 on (a spec that numbers generations
    wrongly) diverge, at the generation."""
    traces = tmp_path / "traces"
    sim = subprocess.run(
        [sys.executable, "-m", "kgc.tools.entry", "simulate", "--model", "default", "--traces", "30"]
        + ["--depth", "30", "--seed", "5", "--out", str(traces)],
        capture_output=True,
        text=True,
    )
    assert sim.returncode == 0, sim.stdout[-3000:] + sim.stderr
    good = subprocess.run(
        [sys.executable, "-m", "kgc.tools.entry", "conform", "--reference", "kafka", str(traces)],
        capture_output=True,
        text=True,
    )
    assert good.returncode == 0, good.stdout[-3000:] + good.stderr
    assert "30 traces" in good.stdout and "0 diverged, 0 errors" in good.stdout
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    for path in sorted(traces.glob("*.itf.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        for state in document["states"][5:]:
            state["generation"] = {"#bigint": str(int(state["generation"]["#bigint"]) + 7)}
        (wrong / path.name).write_text(json.dumps(document), encoding="utf-8")
    bad = subprocess.run(
        [sys.executable, "-m", "kgc.tools.entry", "conform", "--reference", "kafka", str(wrong)],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1, bad.stdout[-3000:] + bad.stderr
    assert ": generation: spec " in bad.stdout


def test_kgc_diff_and_conform_reference_name_an_unusable_trace(tmp_path: Path) -> None:
    """A file that is no ITF trace: one ERROR line naming the file and what is wrong, exit 2."""
    bad = tmp_path / "bad.itf.json"
    bad.write_text('{"states": 3}', encoding="utf-8")
    for command in (["diff", "--traces", str(bad)], ["conform", "--reference", "kafka", str(bad)]):
        run = subprocess.run([sys.executable, "-m", "kgc.tools.entry", *command], capture_output=True, text=True)
        assert run.returncode == 2, run.stdout[-3000:] + run.stderr
        errors = [line for line in run.stdout.splitlines() if line.startswith("ERROR ")]
        assert len(errors) == 1 and str(bad) in errors[0] and "states" in errors[0], run.stdout
