"""Implementation -> spec: recorded runs of kgc.impl are behaviours of the spec (TLC decides),
and runs of seeded-bug coordinators are not, with the first unexplained step named.

Runs TLC (real, as a subprocess); the whole file takes about a minute.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest

from kgc.conformance.recorded_trace import read_trace, write_trace
from kgc.conformance.recorder import RANDOM_RUN_CONSTANTS, RunRecorder, random_run, record_scenario_file
from kgc.conformance.seeded_bugs import BUGS, LIVENESS_BUGS, coordinator_class
from kgc.conformance.validate import validate_traces
from kgc.impl.coordinator import GroupCoordinator
from kgc.spec.values import ModelValue, Record
from kgc.tools.cli import main

pytestmark = pytest.mark.slow  # runs TLC (the fast lane is `pytest -m "not slow"`)

SCENARIOS = Path(__file__).resolve().parents[2] / "conformance" / "scenarios"

#: Seeded implementation bugs that random client runs reach (seeded_bugs.py).
SEEDED = (
    "sync_in_preparing_rebalance",
    "sync_answered_in_preparing_rebalance",
    "heartbeat_rebalances_stable",
    "stable_heartbeat_rebalance_in_progress",
    "empty_generation_reset",
    "no_max_size_check",
    "last_leave_no_rebalance",
    "rebalance_rollback",
    "generation_not_bumped",
    "leader_not_reassigned",
    "session_expiry_keeps_member",
    "rebalance_timeout_keeps_member",
    "leader_given_stale_members",
    "commit_from_unknown_member_accepted",
    "sync_acknowledged_not_stored",
    # a defect of the timer the coordinator runs on (seeded_timer.InsertFirstTimer)
    "timer_inserted_first",
    # the liveness twins (seeded_bugs.LIVENESS_BUGS): the step that should have ended a wait
    "rebalance_timeout_waits_for_all",
    "no_delayed_sync",
    "propagate_no_heartbeat_reschedule",
)

#: Bugs met only by consumers that commit offsets: their runs draw OffsetCommits, often, and
#: fewer heartbeats (a consumer must miss its session while it still commits); 2 of 30 such
#: runs of commit_from_unknown_member_accepted commit after their member was removed.
COMMIT_BUGS = {"commit_from_unknown_member_accepted"}
COMMIT_WEIGHTS = {"HandleCommitOffsets": 3.0, "Heartbeat": 0.3}

#: Scenarios whose recording stops before the end, and why: the step uses something the spec
#: does not model (the steps before it are still checked). Empty: every scenario validates to
#: its last step. Protocol selection (each consumer's protocol names, in preference order, are
#: the spec's ProtocolsOf, taken from its first JoinGroup), per-client session/rebalance
#: timeouts, INVALID_SESSION_TIMEOUT, a consumer that sends JoinGroup again instead of
#: SyncGroup (ClientRejoin in Joined), a second SyncGroup from a Stable consumer (the fault
#: "resync"), a late heartbeat with an older generation (the fault "stale-heartbeat") and static
#: members (each JoinGroup with member id "" and a group.instance.id is a consumer of its own,
#: the clients of one instance id one of the spec's Instances; the Stable rejoin waits for the
#: group store) are all modelled. A new scenario that stops goes here with the reason.
NOT_MODELLED: dict[str, str] = {}


@pytest.fixture(scope="module")
def scenario_traces():
    return {p.stem: record_scenario_file(p) for p in sorted(SCENARIOS.glob("*.json"))}


@pytest.fixture(scope="module")
def scenario_report(scenario_traces):
    return validate_traces(list(scenario_traces.values()))


def test_every_scenario_is_recorded_as_far_as_the_spec_models_it(scenario_traces):
    for name, trace in scenario_traces.items():
        if name in NOT_MODELLED:
            assert trace.stopped is not None and NOT_MODELLED[name] in trace.stopped, (name, trace.stopped)
        else:
            assert trace.stopped is None, f"{name} stops: {trace.stopped} (model it, or list it in NOT_MODELLED)"
    modelled = [t for n, t in scenario_traces.items() if n not in NOT_MODELLED]
    assert len(modelled) >= 30 and sum(t.steps for t in modelled) >= 200


def test_recorded_scenarios_are_behaviours_of_the_spec(scenario_report):
    assert not scenario_report.errors
    failed = [v.line() for v in scenario_report.verdicts if not v.matched]
    assert not failed, "\n".join(failed)
    assert len(scenario_report.verdicts) == len(list(SCENARIOS.glob("*.json")))


@pytest.fixture(scope="module")
def random_report():
    traces = [random_run(RANDOM_RUN_CONSTANTS, 40, seed) for seed in range(60)]
    assert sum(t.steps for t in traces) > 1500
    return validate_traces(traces)


def test_random_recorded_runs_are_behaviours_of_the_spec(random_report):
    assert not random_report.errors
    failed = [v.line() for v in random_report.verdicts if not v.matched]
    assert not failed, "\n".join(failed)
    assert len(random_report.verdicts) == 60


def test_random_runs_with_offset_commits_are_behaviours_of_the_spec():
    """Consumers that also commit (HandleCommitOffsets): every answer the coordinator gives a
    commit -- accepted, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION -- and
    the session it extends are the spec's."""
    traces = [random_run(RANDOM_RUN_CONSTANTS, 40, seed, commits=True, weights=COMMIT_WEIGHTS) for seed in range(20)]
    answers = {
        str(s["lastAction"]["resp"])
        for t in traces
        for s in t.states
        if s["lastAction"]["name"] == "HandleCommitOffsets"
    }
    assert {"NONE", "REBALANCE_IN_PROGRESS", "UNKNOWN_MEMBER_ID"} <= answers, answers
    report = validate_traces(traces)
    assert not report.errors
    failed = [v.line() for v in report.verdicts if not v.matched]
    assert not failed, "\n".join(failed)
    assert len(report.verdicts) == 20


@pytest.fixture(scope="module")
def bug_report():
    """Ten runs of each seeded-bug coordinator, checked in one TLC batch (the commit bugs' and
    the liveness twins' runs in batches of their own: a batch diagnoses its first 50 failures
    only)."""
    traces, liveness = (
        [
            random_run(RANDOM_RUN_CONSTANTS, 40, seed, coordinator_class=BUGS[bug], name=f"{bug}/{seed}")
            for bug in SEEDED
            if bug not in COMMIT_BUGS and (bug in LIVENESS_BUGS) == twins
            for seed in range(10)
        ]
        for twins in (False, True)
    )
    committing = [
        random_run(
            RANDOM_RUN_CONSTANTS,
            40,
            seed,
            coordinator_class=BUGS[bug],
            name=f"{bug}/{seed}",
            weights=COMMIT_WEIGHTS,
            commits=True,
        )
        for bug in sorted(COMMIT_BUGS)
        for seed in range(30)
    ]
    verdicts = []
    for batch in (traces, committing, liveness):
        report = validate_traces(batch)
        assert not report.errors
        verdicts += report.verdicts
    return {bug: [v for v in verdicts if v.name.startswith(bug + "/")] for bug in SEEDED}


@pytest.mark.parametrize("bug", SEEDED)
def test_validate_catches_seeded_bug(bug_report, bug):
    failed = [v for v in bug_report[bug] if not v.matched]
    assert failed, f"no run of {bug} was caught"
    first = failed[0]
    assert first.failed_step >= 1 and first.action and first.origin
    assert first.reason and (first.diffs or "not enabled" in first.reason)


#: c1 static; c2 and c3 share one group.instance.id (a consumer and its restarted twin: the
#: zombie FENCED_INSTANCE_ID is for)
STATIC_RANDOM_CONSTANTS = replace(RANDOM_RUN_CONSTANTS, instances=(("c1",), ("c2", "c3")))
#: Seeded implementation bugs of static membership that random static runs reach.
STATIC_SEEDED = ("static_replace_not_stored", "fenced_instance_not_checked", "static_replace_keeps_old_member")


def _runs_and_bug_runs(constants, prefix: str, runs: int, bugs, bug_runs: int):
    """`runs` random runs of the real coordinator (named prefix/seed) and `bug_runs` of each
    seeded-bug coordinator (bug/seed) under `constants`, validated in one TLC batch."""
    traces = [random_run(constants, 40, seed, name=f"{prefix}/{seed}") for seed in range(runs)]
    traces += [
        random_run(constants, 40, seed, coordinator_class=coordinator_class(bug), name=f"{bug}/{seed}")
        for bug in bugs
        for seed in range(bug_runs)
    ]
    report = validate_traces(traces)
    assert not report.errors
    return traces, report


def _assert_runs_validate(report, prefix: str, count: int):
    """The real coordinator's runs (prefix/...) are all behaviours of the spec."""
    runs = [v for v in report.verdicts if v.name.startswith(prefix + "/")]
    assert len(runs) == count
    failed = [v.line() for v in runs if not v.matched]
    assert not failed, "\n".join(failed)
    return runs


def _assert_bug_caught(report, bug: str) -> None:
    failed = [v for v in report.verdicts if v.name.startswith(bug + "/") and not v.matched]
    assert failed, f"no run of {bug} was caught"
    assert failed[0].failed_step >= 1 and failed[0].diffs


@pytest.fixture(scope="module")
def static_report():
    """Thirty random runs with static clients on the real coordinator and ten of each static
    seeded-bug coordinator, in one TLC batch (one Instances constant)."""
    return _runs_and_bug_runs(STATIC_RANDOM_CONSTANTS, "static", 30, STATIC_SEEDED, 10)


def test_random_runs_with_static_members_are_behaviours_of_the_spec(static_report):
    traces, report = static_report
    runs = _assert_runs_validate(report, "static", 30)
    assert sum(v.steps for v in runs) > 1000
    answers = [s["lastAction"]["resp"] for t in traces if t.name.startswith("static/") for s in t.states]
    assert answers.count("FENCED_INSTANCE_ID") > 0  # the zombie twin was fenced


@pytest.mark.parametrize("bug", STATIC_SEEDED)
def test_validate_catches_static_seeded_bug(static_report, bug):
    _assert_bug_caught(static_report[1], bug)


#: A new member's join timeout (2) shorter than the rebalance timeout (4): a member whose
#: JoinGroup is parked in a rebalance that waits for others times out and is removed
#: (removeMemberAndUpdateGroup answers its JoinGroup first), which RANDOM_RUN_CONSTANTS (join
#: timeout 6, rebalance 2) never line up.
JOIN_TIMEOUT_CONSTANTS = replace(RANDOM_RUN_CONSTANTS, rebalance=4, new_member_timeout=2)
#: Seeded implementation bugs that random runs under JOIN_TIMEOUT_CONSTANTS reach.
JOIN_TIMEOUT_SEEDED = ("remove_without_join_callback",)


@pytest.fixture(scope="module")
def join_timeout_report():
    """Ten random runs of the real coordinator and twenty of each JOIN_TIMEOUT_SEEDED bug under
    JOIN_TIMEOUT_CONSTANTS, in one TLC batch."""
    return _runs_and_bug_runs(JOIN_TIMEOUT_CONSTANTS, "join-timeout", 10, JOIN_TIMEOUT_SEEDED, 20)


def test_random_runs_with_join_timeouts_inside_rebalances_are_behaviours_of_the_spec(join_timeout_report):
    traces, report = join_timeout_report
    _assert_runs_validate(report, "join-timeout", 10)
    # the join timeout fired inside a rebalance (the member removed with its JoinGroup parked)
    inside = [
        a
        for t in traces
        if t.name.startswith("join-timeout/")
        for a, b in zip(t.states, t.states[1:])
        if b["lastAction"]["name"] == "NewMemberJoinTimeout" and a["gstate"] == "PreparingRebalance"
    ]
    assert inside


@pytest.mark.parametrize("bug", JOIN_TIMEOUT_SEEDED)
def test_validate_catches_join_timeout_seeded_bug(join_timeout_report, bug):
    _, report = join_timeout_report
    failed = [v for v in report.verdicts if v.name.startswith(bug + "/") and not v.matched]
    assert failed, f"no run of {bug} was caught"
    assert failed[0].failed_step >= 1 and (failed[0].diffs or "not enabled" in failed[0].reason)


def _simple_trace():
    rec = RunRecorder(RANDOM_RUN_CONSTANTS, name="simple")
    rec.step("JoinGroupUnknownMember", "c1", False)
    rec.step("JoinGroupUnknownMember", "c2", True)
    rec.step("JoinGroupPendingMember", "c2")
    rec.tick(200)
    rec.step("SyncGroupLeader", "c1")
    rec.step("SyncGroupFollower", "c2")
    rec.step("Heartbeat", "c2")
    rec.step("LeaveGroup", "c1")
    return rec.trace()


def test_failure_names_the_step_and_the_differing_variables():
    good = _simple_trace()
    wrong_generation = copy.deepcopy(good)
    wrong_generation.name = "wrong-generation"
    k = next(i for i, s in enumerate(good.states) if s["gstate"] == "CompletingRebalance")
    for s in wrong_generation.states[k:]:
        s["generation"] += 7
    wrong_client = copy.deepcopy(good)
    wrong_client.name = "wrong-client"
    j = next(i for i, s in enumerate(good.states) if s["lastAction"]["name"] == "SyncGroupLeader")
    la = dict(wrong_client.states[j]["lastAction"])
    la["client"] = ModelValue("c2")
    wrong_client.states[j]["lastAction"] = Record(la)
    report = validate_traces([good, wrong_generation, wrong_client])
    ok, gen, client = report.verdicts
    assert ok.matched and ok.steps == good.steps
    assert not gen.matched and gen.failed_step == k
    assert [d.variable for d in gen.diffs] == ["generation"]
    assert (gen.diffs[0].spec, gen.diffs[0].impl) == (1, 8)
    assert not client.matched and client.failed_step == j
    assert "not enabled" in client.reason and "cphase[c2]" in client.reason


def test_classic_completion_check_agrees():
    good = _simple_trace()
    bad = copy.deepcopy(good)
    bad.name = "bad"
    bad.states[-1]["members"] = frozenset({1, 2})
    fast = validate_traces([good, bad])
    classic = validate_traces([good, bad], classic=True)
    assert (
        [(v.matched, v.failed_step) for v in fast.verdicts]
        == [(v.matched, v.failed_step) for v in classic.verdicts]
        == [(True, None), (False, bad.steps)]
    )


def test_trace_files_round_trip(tmp_path):
    trace = _simple_trace()
    write_trace(tmp_path / "t.json", trace)
    back = read_trace(tmp_path / "t.json")
    assert back.states == trace.states and back.origins == trace.origins
    assert back.constants == trace.constants
    document = json.loads((tmp_path / "t.json").read_text())
    assert document["#meta"]["format"] == "ITF" and len(document["states"]) == len(trace.states)


def test_kgc_validate_command(tmp_path, capsys):
    write_trace(tmp_path / "good.json", _simple_trace())
    with pytest.raises(SystemExit) as done:
        main(["validate", str(tmp_path), "--random", "3", "--steps", "20"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "OK   simple" in out and "4 traces" in out
    with pytest.raises(SystemExit) as done:
        main(
            [
                "validate",
                "--random",
                "4",
                "--steps",
                "40",
                "--bug",
                "leader_not_reassigned",
                "--out",
                str(tmp_path / "rec"),
                "-q",
            ]
        )
    assert done.value.code == 10
    out = capsys.readouterr().out
    assert "FAIL random-" in out and "leader" in out
    assert len(list((tmp_path / "rec").glob("*.json"))) == 4


#: Clients with protocol lists of their own (the protocols model's MCProtocolsOf): c1 prefers
#: roundrobin over range, c2 cooperative-sticky over range and roundrobin, c3 supports sticky
#: only, so the vote ties (c1 with c2), c3 meets INCONSISTENT_GROUP_PROTOCOL, and a first-choice
#: vote selects a protocol a member lacks.
PROTOCOL_RANDOM_CONSTANTS = replace(
    RANDOM_RUN_CONSTANTS,
    client_protocols=(
        ("c1", ("roundrobin", "range")),
        ("c2", ("cooperative-sticky", "range", "roundrobin")),
        ("c3", ("sticky",)),
    ),
)
#: Seeded implementation bugs of protocol selection that these random runs reach.
PROTOCOL_SEEDED = ("vote_ignores_candidates",)


@pytest.fixture(scope="module")
def protocol_report():
    """Twenty random runs of the real coordinator and ten of each PROTOCOL_SEEDED bug under
    PROTOCOL_RANDOM_CONSTANTS, in one TLC batch (one ProtocolsOf)."""
    return _runs_and_bug_runs(PROTOCOL_RANDOM_CONSTANTS, "protocols", 20, PROTOCOL_SEEDED, 10)


def test_random_runs_with_differing_protocols_are_behaviours_of_the_spec(protocol_report):
    traces, report = protocol_report
    _assert_runs_validate(report, "protocols", 20)
    ours = [s for t in traces if t.name.startswith("protocols/") for s in t.states]
    assert "INCONSISTENT_GROUP_PROTOCOL" in {s["lastAction"]["resp"] for s in ours}
    assert {"range", "roundrobin"} <= {s["protocol"] for s in ours}


@pytest.mark.parametrize("bug", PROTOCOL_SEEDED)
def test_validate_catches_protocol_seeded_bug(protocol_report, bug):
    _assert_bug_caught(protocol_report[1], bug)


#: Seeded implementation bugs of the group store's callbacks, each caught on the recording of
#: the scenario that drives that callback (its store step is where the run leaves the spec).
STORE_SEEDED = {"static_revert_dropped": "static-rejoin-store-failure-reverts-to-the-old-member-id"}


@pytest.mark.parametrize("bug", sorted(STORE_SEEDED))
def test_validate_catches_store_seeded_bug(bug):
    trace = record_scenario_file(SCENARIOS / f"{STORE_SEEDED[bug]}.json", coordinator_class(bug))
    assert trace.stopped is None, trace.stopped
    verdict = validate_traces([trace]).verdicts[0]
    assert not verdict.matched and verdict.diffs, verdict.line()
    assert verdict.action.startswith("StoreCallback"), verdict.line()


class _SyncProtocolUnchecked(GroupCoordinator):
    """validateSyncGroup without its protocol type / name check (SyncGroup v5)."""

    def _validate_sync_group(self, group, generation, member_id, protocol_type, protocol_name, group_instance_id):
        return super()._validate_sync_group(group, generation, member_id, None, None, group_instance_id)


def test_sync_version_5_protocol_check_is_the_specs():
    """The scenario's SyncGroups with another protocol type, then another name, are the spec's
    SyncGroupInconsistentProtocol, answered INCONSISTENT_GROUP_PROTOCOL by the spec too; a
    coordinator that skips the check leaves the spec at the first of them."""
    path = SCENARIOS / "sync-version-5-checks-protocol-type-and-name.json"
    trace = record_scenario_file(path)
    bad = [s["lastAction"] for s in trace.states if s["lastAction"]["name"] == "SyncGroupInconsistentProtocol"]
    assert [str(la["resp"]) for la in bad] == ["INCONSISTENT_GROUP_PROTOCOL"] * 2
    unchecked = record_scenario_file(path, _SyncProtocolUnchecked)
    report = validate_traces([trace, unchecked])
    assert report.verdicts[0].matched, report.verdicts[0].line()
    failed = report.verdicts[1]
    assert not failed.matched and failed.action.startswith("SyncGroupInconsistentProtocol"), failed.line()
