"""Kafka's own coordinator as the oracle: the reference JVM (reference/kafka-coordinator) runs
Kafka 3.9.1's GroupCoordinator, and every scenario passes on it or is an explained difference."""

from __future__ import annotations

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
