"""Kafka's own coordinator as the oracle: the reference JVM (reference/kafka-coordinator) runs
Kafka 3.9.1's GroupCoordinator, and every scenario passes on it or is an explained difference."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kgc.conformance.reference.diff import diff_scenario
from kgc.conformance.reference.explained import EXPLAINED_DIFFERENCES
from kgc.conformance.reference.kafka_coordinator import KafkaReference, ReferenceProtocolError, reference_command
from kgc.conformance.reference.program_steps import Advance, Expire, PreferLeader, send_on_kgc
from kgc.conformance.reference.programs import marked_trace_program, random_program
from kgc.conformance.reference.replay import ReferenceWorld, run_scenario_on_kafka
from kgc.conformance.replay import World, run_scenario
from kgc.conformance.scenario import Ref, Tick, load_scenario, loads_scenario
from kgc.impl.coordinator import GroupCoordinator
from kgc.tools.exit_codes import ExitCode

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "conformance" / "scenarios").glob("*.json"))

pytestmark = pytest.mark.slow


def _simulate(out: Path, model: str, traces: int, depth: int, seed: int) -> Path:
    """`kgc simulate` into `out`: spec traces for the reference's trace commands."""
    sim = subprocess.run(
        [sys.executable, "-m", "kgc.tools.entry", "simulate", "--model", model, "--traces", str(traces)]
        + ["--depth", str(depth), "--seed", str(seed), "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert sim.returncode == 0, sim.stdout[-3000:] + sim.stderr
    return out


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
    traces = _simulate(tmp_path / "traces", "default", 200, 40, 3)
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
    traces = _simulate(tmp_path / "traces", "default", 30, 30, 5)
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


class _SessionsExpiredTogether(GroupCoordinator):
    """A seeded bug seen only between two timers of one instant: a member's session expiry also
    expires every other member whose session ends at the same instant, so once the last of them
    has fired the group is what Kafka's is, but not in between."""

    def on_expire_heartbeat(self, group, member_id, is_pending):  # type: ignore[no-untyped-def]
        super().on_expire_heartbeat(group, member_id, is_pending)
        now = self.clock.now_ms()
        for op in self.timer.live_tasks():
            if op.deadline_ms() == now and getattr(op, "group", None) is group and op.timer_kind == "heartbeat":
                op.run()


def test_kgc_diff_compares_between_two_timers_of_one_instant(kafka: KafkaReference) -> None:
    """A program names each expiry (program_steps.Expire), so the coordinators are compared after the
    first of two session timeouts of one instant: the seeded bug above differs from Kafka's code
    there. Written as a scenario's ticks (each firing everything due by its end), the same run
    shows no difference: the state between the two expiries is never compared."""
    for seed in range(20):
        program = random_program(seed)
        steps = program.steps
        pairs = [
            i
            for i in range(1, len(steps) - 1)
            if isinstance(steps[i], Expire)
            and isinstance(steps[i + 1], Expire)
            and steps[i].operation == steps[i + 1].operation == "DelayedHeartbeat"
        ]
        if pairs:
            break
    else:
        pytest.fail("no random program in 20 has two session expiries at one instant")
    first = pairs[0]
    prefix = dataclasses.replace(program, steps=steps[: first + 2])
    found = diff_scenario(prefix, kafka, World(prefix, coordinator_class=_SessionsExpiredTogether))
    assert found is not None and found.explained is None
    assert found.step == first and found.what.startswith("group 'g': "), found
    assert diff_scenario(prefix, kafka) is None  # kgc's own coordinator agrees at every step
    as_ticks = tuple(Tick(s.ms) if isinstance(s, Advance) else s for s in prefix.steps if not isinstance(s, Expire))
    ticked = dataclasses.replace(prefix, steps=as_ticks)
    assert diff_scenario(ticked, kafka, World(ticked, coordinator_class=_SessionsExpiredTogether)) is None


def test_kafka_runs_only_the_named_expiry_due_now(kafka: KafkaReference) -> None:
    """The reference's VirtualTimer runs an Expire only when the named operation of the hosted
    group is due now: a millisecond early, or for a member that is not one, nothing runs."""
    program = random_program(0)
    first = next(i for i, s in enumerate(program.steps) if isinstance(s, Expire) and s.operation == "DelayedHeartbeat")
    before, expiry = program.steps[first - 1], program.steps[first]
    assert isinstance(before, Advance) and before.ms > 1
    theirs = ReferenceWorld(program, kafka)
    for index, step in enumerate(program.steps[: first - 1]):
        theirs.send(index, step)
    theirs.send(first - 1, Advance(before.ms - 1))
    members = theirs.group_view("g")["members"]
    assert theirs.send(first, expiry) is False
    theirs.send(first, Advance(1))
    assert theirs.send(first, dataclasses.replace(expiry, member="client-not-a-member")) is False
    assert theirs.send(first, Expire("DelayedSync", "g")) is False
    assert theirs.group_view("g")["members"] == members
    assert theirs.send(first, expiry) is True
    assert len(theirs.group_view("g")["members"]) < len(members)


#: `faults` simulations, 60 traces of depth 40 each, until one holds an unanswered expiry: such an
#: expiry is rare (about one per 60-100 traces on 4630d9d: seed 7 had none in 60, seed 8 one), and
#: which seed has one moves with every spec change, so the test draws more instead of pinning one
FAULTS_SEEDS = tuple(range(7, 15))


def test_faults_traces_compare_every_spec_step_on_kafka(kafka: KafkaReference, tmp_path: Path) -> None:
    """Every spec step of a `faults` trace ends at a program step (each timer step is one Expire,
    none is cut), and the programs run the same on both coordinators, including the expiry of
    a member whose JoinGroup is still parked (no response has named it: Expire.unanswered)."""
    unanswered = 0
    for seed in FAULTS_SEEDS:
        traces = _simulate(tmp_path / f"traces-{seed}", "faults", 60, 40, seed)
        for path in sorted(traces.glob("*.itf.json")):
            made = marked_trace_program(path)
            assert [m.step for m in made.marks] == list(range(1, made.spec_steps + 1)), path.name
            unanswered += sum(1 for s in made.scenario.steps if isinstance(s, Expire) and s.unanswered)
            # kgc's replay of the program is the run it was recorded from (PreferLeader repeats the
            # recorder's leader steering): every expiry is due, every member is named by its join
            replay = World(made.scenario)
            for index, step in enumerate(made.scenario.steps):
                assert send_on_kgc(replay, index, step) is not False, f"{path.name}: step {index}: {step}"
                member = getattr(step, "member", None)
                assert isinstance(step, PreferLeader) or member in (None, "") or isinstance(member, Ref), step
            found = diff_scenario(made.scenario, kafka)
            assert found is None or found.explained is not None, f"{path.name}: {found}"
        if unanswered:
            break
    assert unanswered > 0, f"no unanswered expiry in {len(FAULTS_SEEDS) * 60} faults traces"


#: finding_admin_leave_unanswered_sync (spec/models/README.md), on Kafka's code and on kgc's: an
#: admin's LeaveGroup by instance id alone removes a static follower whose SyncGroup is parked in
#: CompletingRebalance, and nothing ever answers that SyncGroup.
ADMIN_LEAVE_OF_A_FOLLOWER_AWAITING_SYNC = """{
  "format": 2, "name": "admin-leave-of-a-follower-awaiting-sync", "source": "finding",
  "config": {"min_session_timeout_ms": 10, "max_session_timeout_ms": 600000, "initial_rebalance_delay_ms": 0},
  "steps": [
    {"do": "join", "id": "a1", "group": "g", "client": "a", "instance": "ia"},
    {"do": "join", "id": "b1", "group": "g", "client": "b", "instance": "ib"},
    {"do": "tick", "ms": 0},
    {"expect": "b1", "error": "NONE", "generation": 1, "leader": "@a1"},
    {"do": "sync", "id": "sb", "group": "g", "member": "@b1", "generation": 1, "instance": "ib"},
    {"expect": "sb", "pending": true},
    {"do": "leave", "id": "l1", "group": "g", "member": "", "instance": "ib"},
    {"expect": "l1", "error": "NONE"},
    {"expect_state": "g", "state": "PreparingRebalance", "members": ["@a1"]},
    {"do": "tick", "ms": 600000},
    {"expect": "sb", "pending": %s}
  ]
}"""


def test_kafka_never_answers_the_sync_of_a_follower_an_admin_removed(kafka: KafkaReference) -> None:
    unanswered = loads_scenario(ADMIN_LEAVE_OF_A_FOLLOWER_AWAITING_SYNC % "true")
    answered = loads_scenario(ADMIN_LEAVE_OF_A_FOLLOWER_AWAITING_SYNC % "false")
    assert run_scenario_on_kafka(unanswered, kafka).failure is None
    assert run_scenario(unanswered).failure is None
    assert run_scenario_on_kafka(answered, kafka).failure is not None
    assert run_scenario(answered).failure is not None
