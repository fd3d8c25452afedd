"""A coordinator that swallows an exception (or answers a request twice) fails every detector.

The seeded bug `swallowed_removal_error` removes members exactly as Kafka does and then records
an internal error: no state, timer or response differs from the spec's, so only the
coordinator's fault counters (conformance/faults.py) can tell. Each test runs one detector on
it and on the real coordinator (which must pass the same run, or the test proves nothing).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgc.conformance.driver import Driver
from kgc.conformance.faults import fault_count, new_faults
from kgc.conformance.recorded_trace import read_trace, write_trace
from kgc.conformance.recorder import RANDOM_RUN_CONSTANTS, random_run
from kgc.conformance.replay import run_scenario
from kgc.conformance.scenario import load_scenario
from kgc.conformance.seeded_bugs import INTERNAL_ERROR_BUGS, coordinator_class
from kgc.impl.coordinator import GroupConfig, GroupCoordinator

SWALLOWED = INTERNAL_ERROR_BUGS["swallowed_removal_error"]
SCENARIOS = Path(__file__).resolve().parents[2] / "conformance" / "scenarios"
LEAVE_SCENARIO = SCENARIOS / "completing-rebalance-leave-restarts-rebalance.json"


def _removing_run(cls: type[GroupCoordinator]) -> tuple[int, object]:
    """The first seeded random run (40 steps) that removes a member."""
    for seed in range(200):
        trace = random_run(RANDOM_RUN_CONSTANTS, 40, seed, coordinator_class=SWALLOWED)
        if trace.faults:
            return seed, random_run(RANDOM_RUN_CONSTANTS, 40, seed, coordinator_class=cls)
    raise AssertionError("no random run in 200 seeds removed a member")


def test_the_bug_is_registered_and_only_counts_a_fault() -> None:
    assert coordinator_class("swallowed_removal_error") is SWALLOWED
    seed, trace = _removing_run(SWALLOWED)
    real = random_run(RANDOM_RUN_CONSTANTS, 40, seed)
    assert trace.states == real.states  # the protocol is untouched
    assert real.faults == []
    index, what = trace.faults[0]
    assert 0 < index < len(trace.states)
    assert what.startswith("internal error in _remove_member_and_update_group: RuntimeError: seeded")


def test_fault_lines_count_errors_and_duplicate_answers() -> None:
    c = Driver(GroupConfig()).coordinator
    assert fault_count(c) == 0 and new_faults(c, 0) == []
    try:
        raise KeyError("boom")
    except KeyError:
        c._record_internal_error("handle_heartbeat")
    c.duplicate_answers = 2
    assert fault_count(c) == 3
    lines = new_faults(c, 0)
    assert lines[0] == "internal error in handle_heartbeat: KeyError: 'boom'"
    assert new_faults(c, 1) == [
        "a request answered twice (duplicate answer 1)",
        "a request answered twice (duplicate answer 2)",
    ]


def test_replay_fails_at_the_step_that_swallowed_the_error() -> None:
    scenario = load_scenario(LEAVE_SCENARIO)
    assert run_scenario(scenario).passed
    result = run_scenario(scenario, coordinator_class=SWALLOWED)
    assert not result.passed
    assert result.failure is not None and "internal error in _remove_member_and_update_group" in result.failure.seen
    step = scenario.steps[result.failure.step]
    assert type(step).__name__ == "Leave", step


def test_recorded_faults_survive_the_trace_file(tmp_path: Path) -> None:
    _, trace = _removing_run(SWALLOWED)
    write_trace(tmp_path / "t.json", trace)
    assert read_trace(tmp_path / "t.json").faults == trace.faults
    document = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    document["#meta"]["faults"] = [["x", 1]]
    (tmp_path / "bad.json").write_text(json.dumps(document), encoding="utf-8")
    from kgc.spec.jsonfile import InputError

    with pytest.raises(InputError, match="#meta.faults"):
        read_trace(tmp_path / "bad.json")


def test_fuzz_reports_the_swallowed_error() -> None:
    from kgc.conformance.stateful import fuzz

    found = fuzz(SWALLOWED, profile="ci", examples=30)
    assert found.violation is not None, found
    assert "NoInternalError" in found.violation.report.violations
    assert fuzz(GroupCoordinator, profile="ci", examples=10).ok


@pytest.mark.slow
def test_validate_fails_the_recorded_run(tmp_path: Path) -> None:
    from kgc.conformance.validate import validate_traces

    _, bad = _removing_run(SWALLOWED)
    _, good = _removing_run(GroupCoordinator)
    report = validate_traces([good, bad], work_dir=tmp_path, jobs=1)
    assert not report.errors, report.errors
    ok, failed = report.verdicts
    assert ok.matched, ok.line()
    assert not failed.matched and failed.failed_step == bad.faults[0][0]
    assert "internal error" in failed.line()


@pytest.fixture(scope="module")
def removing_spec_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A TLC trace of the default model in which a member leaves or expires."""
    from kgc.conformance.mbt import simulate

    out = tmp_path_factory.mktemp("sim")
    result = simulate("default", 20, 25, 7, out)
    for path in result.files:
        names = {s["lastAction"]["name"] for s in json.loads(path.read_text(encoding="utf-8"))["states"][1:]}
        if names & {"LeaveGroup", "SessionTimeoutExpiry", "NewMemberJoinTimeout"}:
            return path
    pytest.fail(f"none of {len(result.files)} simulated traces removes a member")


@pytest.mark.slow
def test_conform_diverges_at_the_internal_error(removing_spec_trace: Path) -> None:
    from kgc.conformance.mbt import conform_trace

    assert conform_trace(removing_spec_trace).verdict == "CONFORMS"
    outcome = conform_trace(removing_spec_trace, SWALLOWED)
    assert outcome.verdict == "DIVERGED" and outcome.divergence is not None
    assert outcome.divergence.variable == "(internal error)"


@pytest.mark.slow
def test_pipeline_rows_carry_the_internal_error(removing_spec_trace: Path) -> None:
    from kgc.conformance.pipeline.conform_task import WorkUnit, run_unit

    bug = "swallowed_removal_error"
    (row,) = run_unit(WorkUnit("input", path=str(removing_spec_trace), model="", bug=bug))
    assert row["verdict"] == "diverges" and row["variable"] == "(internal error)", row
    seed, _ = _removing_run(SWALLOWED)
    rows = list(run_unit(WorkUnit("random", seed=seed, count=1, depth=40, bug=bug)))
    assert [r["variable"] for r in rows] == ["(internal error)"], rows


class _LeaveToUnknownGroupAnswersNothing(GroupCoordinator):
    """A coordinator whose LeaveGroup to a group it never saw answers None (kgc mutate's
    coordinator:1325): a response without an error code, which the harness must report as a
    finding, not crash on."""

    def _leave_group(self, group_id, leaving_members):  # type: ignore[no-untyped-def]
        if group_id not in self._groups:
            return None
        return super()._leave_group(group_id, leaving_members)


def test_a_response_without_an_error_code_is_a_finding_not_a_crash() -> None:
    from kgc.conformance.abstraction import response_error
    from kgc.conformance.stateful import fuzz

    assert response_error(None) == "NOT_A_RESPONSE"
    found = fuzz(_LeaveToUnknownGroupAnswersNothing, profile="ci", examples=60)
    assert found.violation is not None, found
    assert "ResponseAllowed" in found.violation.report.violations, found.violation.report
