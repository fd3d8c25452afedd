"""The Hypothesis machine (conformance/stateful.py) and the spec's properties in Python
(conformance/properties.py): nothing found on the correct coordinator in the CI profile, each
seeded bug found, and a failing example saved as a scenario that `kgc replay` reproduces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgc.conformance import properties as P
from kgc.conformance.recorder import RANDOM_RUN_CONSTANTS, RunRecorder, random_run
from kgc.conformance.replay import run_scenario
from kgc.conformance.scenario import load_scenario
from kgc.conformance.seeded_bugs import coordinator_class
from kgc.conformance.stateful import fuzz, hunt
from kgc.impl.coordinator import GroupCoordinator
from kgc.spec.values import ModelValue, Record, TlaFunction
from kgc.tools.cli import main

SEEDED = (
    "sync_in_preparing_rebalance",
    "heartbeat_rebalances_stable",
    "empty_generation_reset",
    "no_max_size_check",
    "leave_keeps_session_timer",
    "last_leave_no_rebalance",
    "rebalance_rollback",
    "generation_not_bumped",
    "leader_not_reassigned",
    "session_expiry_keeps_member",
    "rebalance_timeout_keeps_member",
    "sync_answered_in_preparing_rebalance",
    "remove_without_join_callback",
    "leader_given_stale_members",
    "commit_from_unknown_member_accepted",
    "vote_ignores_candidates",
    "static_replace_not_stored",
    # the liveness twins (seeded_bugs.LIVENESS_BUGS)
    "rebalance_timeout_waits_for_all",
    "no_delayed_sync",
    "propagate_no_heartbeat_reschedule",
)

#: Every seeded bug hunted here is asserted. static_replace_keeps_old_member is not hunted here:
#: found when this module ran alone, not in 1,000 examples in the whole suite's process (CI
#: run of 5624ece; Hypothesis mixes the constants of every module imported so far into its
#: draws). test_fuzz_time_to_find holds it, with every other implementation bug, each in a
#: `kgc fuzz` process of its own.
ASSERTED = SEEDED

#: Properties about timers only, which a scenario file cannot observe, and about the group
#: store, which the saved scenario sees only through a later `load` (the example's run broke
#: MemberIdSurvivesReload before any reload: the stored record no longer holds the member id a
#: client was just given).
UNSEEN_BY_SCENARIOS = {"OneSessionTimerPerMember", "TimersOrdered", "MemberIdSurvivesReload"}
#: Timed liveness: a deadline overstayed is visible in the file only when one of its logged
#: ticks ends between Kafka's deadline and the late completion; the machine logs a tick per
#: deadline of the coordinator under test, which lacks the deadline it misses, so the late
#: completion can fall in the same tick (seen on a static example of
#: rebalance_timeout_waits_for_all, whose rebalance a session expiry ended).
LATE_BY_LESS_THAN_A_TICK = {"RebalanceCompletes", "SyncCompletes", "SilentMemberRemoved", "ParkedRequestAnswered"}

#: Examples for the bug hunts: derandomized, so the same examples every run for one process
#: history (the count to a find depends on the hunts run before it in the process: 28 at most
#: in this module's order, 182 for no_delayed_sync hunted alone), so the budget stays wide.
HUNT_EXAMPLES = 1000
#: Fixed example sequences (Hypothesis @seed) tried, in order, when the derandomized hunt finds
#: nothing: which examples a hunt draws also follows every literal constant of the local
#: modules (Hypothesis mixes them into its draws), so an edit anywhere in kgc moves a rare bug
#: out of one sequence (commit_from_unknown_member_accepted: none in 1,398 derandomized
#: examples on 7274078, found at example 129 of seed 0). The bug is held when any sequence
#: finds it, as test_fuzz_time_to_find holds each bug on the first of its seeds.
RETRY_SEEDS = (0, 1, 2)


def test_ci_profile_finds_nothing_on_the_correct_coordinator():
    result = fuzz(GroupCoordinator, profile="ci")
    assert result.ok, result.violation or result.error
    assert result.examples >= 60


@pytest.fixture(scope="module")
def hunts(tmp_path_factory):
    out = {}
    for bug in SEEDED:
        save = tmp_path_factory.mktemp(bug)
        result = fuzz(coordinator_class(bug), profile="ci", examples=HUNT_EXAMPLES, save_dir=save)
        for seed in RETRY_SEEDS:
            if result.violation is not None or result.error is not None:
                break
            result = fuzz(coordinator_class(bug), profile="ci", examples=HUNT_EXAMPLES, save_dir=save, seed=seed)
        out[bug] = (result, save)
    return out


@pytest.mark.parametrize("bug", ASSERTED)
def test_machine_catches_seeded_bug(hunts, bug):
    result, _ = hunts[bug]
    assert result.error is None, repr(result.error)
    assert result.violation is not None, f"{bug}: no property violated in {result.examples} examples"
    assert result.violation.report.violations


def _replay_with(cls, path: Path):
    return run_scenario(load_scenario(path), coordinator_class=cls)


@pytest.mark.parametrize("bug", ASSERTED)
def test_failing_example_is_a_scenario_that_replay_reproduces(hunts, bug):
    result, save = hunts[bug]
    path = result.violation.scenario
    assert path is not None and path.parent == save and path.is_file()
    document = json.loads(path.read_text())
    # format 2 when the run used what version 2 added: OffsetCommits, the deferred store, the
    # loading window, a request carrying a group.instance.id (static membership), a SyncGroup
    # v5's protocol type or name
    assert document["format"] in (1, 2) and coordinator_class(bug).__name__ in document["source"]
    v2 = "store" in document["config"] or any(
        s.get("do") in ("commit", "store", "load_begin")
        or "instance" in s
        or (s.get("do") == "sync" and {"protocol_type", "protocol"} & set(s))
        for s in document["steps"]
    )
    assert document["format"] == (2 if v2 else 1)
    assert _replay_with(GroupCoordinator, path).passed
    failing = _replay_with(coordinator_class(bug), path)
    if set(result.violation.report.violations) <= UNSEEN_BY_SCENARIOS | LATE_BY_LESS_THAN_A_TICK:
        # A scenario checks responses and the group's state, never timers: a leaked or
        # missing timer the property saw has no expectation a file can hold.
        return
    assert not failing.passed and failing.failure is not None


def test_machine_reports_no_commit_outside_current_generation():
    """The property itself, not only the response table, flags the commit of a consumer whose
    session expired (commit_after_session_expiry) on fixed example sequences (Hypothesis seeds;
    a sequence may find the bug first through a stray commit, ResponseAllowed alone)."""
    seen = []
    for seed in (3, 4, 5, 1):
        result = hunt(coordinator_class("commit_from_unknown_member_accepted"), 300.0, seed=seed, max_examples=150)
        assert result.error is None, repr(result.error)
        seen.append((seed, sorted(result.violation.report.violations) if result.violation else None))
        if result.violation is not None and "NoCommitOutsideCurrentGeneration" in result.violation.report.violations:
            return
    raise AssertionError(f"NoCommitOutsideCurrentGeneration never reported: {seen}")


def test_kgc_replay_runs_a_saved_example(hunts, capsys, monkeypatch):
    result, _ = hunts["leader_not_reassigned"]
    path = str(result.violation.scenario)
    with pytest.raises(SystemExit) as done:
        main(["replay", path])
    assert done.value.code == 0  # the unmodified coordinator gives what it expects
    assert "PASS hypothesis-counterexample" in capsys.readouterr().out
    with pytest.raises(SystemExit) as done:
        main(["replay", "--bug", "leader_not_reassigned", path])
    assert done.value.code == 1  # the seeded bug reproduces
    assert "FAIL hypothesis-counterexample: step " in capsys.readouterr().out
    monkeypatch.setenv("KGC_IMPL_BUG", "leader_not_reassigned")
    with pytest.raises(SystemExit) as done:
        main(["replay", path])
    assert done.value.code == 1
    monkeypatch.setenv("KGC_IMPL_BUG", "no_such_bug")
    with pytest.raises(SystemExit) as done:
        main(["replay", path])
    assert done.value.code == 2
    assert "no seeded implementation bug 'no_such_bug'" in capsys.readouterr().err


def test_kgc_fuzz_command(tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        main(["fuzz", "--profile", "ci", "--examples", "20", "--save", str(tmp_path / "ok")])
    assert done.value.code == 0
    assert "no property violated" in capsys.readouterr().out
    with pytest.raises(SystemExit) as done:
        main(
            [
                "fuzz",
                "--profile",
                "ci",
                "--examples",
                "100",
                "--bug",
                "leader_not_reassigned",
                "--save",
                str(tmp_path / "bad"),
            ]
        )
    assert done.value.code == 10
    out = capsys.readouterr().out
    assert "PROPERTY VIOLATED" in out and "LeaderIsMember" in out
    assert list((tmp_path / "bad").glob("*.json"))


# ---------------------------------------------------------------------------------------------
# properties.py on its own
# ---------------------------------------------------------------------------------------------

K = RANDOM_RUN_CONSTANTS.properties_constants()


def _stable_state():
    rec = RunRecorder(RANDOM_RUN_CONSTANTS)
    rec.step("JoinGroupUnknownMember", "c1", False)
    rec.step("JoinGroupUnknownMember", "c2", False)
    rec.tick(200)
    rec.step("SyncGroupLeader", "c1")
    rec.step("SyncGroupFollower", "c2")
    state = dict(rec.states[-1])
    assert state["gstate"] == "Stable" and state["members"] == frozenset({1, 2})
    return state


def test_properties_hold_on_recorded_runs_of_the_correct_coordinator():
    for seed in range(30):
        trace = random_run(RANDOM_RUN_CONSTANTS, 40, seed)
        assert P.check_state(trace.states[0], K).ok
        for a, b in zip(trace.states, trace.states[1:]):
            report = P.check_step(a, b, K)
            assert report.ok, f"seed {seed}: {report}"
            assert not report.skipped


@pytest.mark.parametrize(
    "name, change, needle",
    [
        ("LeaderIsMember", {"leader": 3}, "leader 3 not in members"),
        ("EmptyIffNoMembers", {"gstate": "Empty"}, "gstate = Empty"),
        (
            "GroupSizeBounded",
            {"members": frozenset({1, 2, 3}), "genMembers": frozenset({1, 2, 3})},
            "3 members in Stable",
        ),
        ("AssignmentMatchesGenerationMembers", {"plan": frozenset({1})}, "plan {1} != genMembers {1, 2}"),
        ("SingleLeaderPerGeneration", {"genLeaders": frozenset({1, 2})}, "two leaders"),
        ("OneSessionTimerPerMember", {"timers": ()}, "has 0 live session timers"),
        ("TimersOrdered", {"now": 1000}, "overdue"),
        ("TypeOK", {"nextId": 99}, "nextId = 99"),
        ("TypeOK", {"loading": None}, "loading = "),  # loading \in BOOLEAN
        ("TypeOK", {"loading": True}, "loading and loaded"),  # loading => ~loaded
        ("SelectedProtocolSupportedByAllMembers", {"protocol": "sticky"}, "does not support 'sticky'"),
        ("ParkedRequestAnsweredOnce", {"awaitingJoin": frozenset({2})}, "no static append in flight"),
    ],
)
def test_each_invariant_detects_a_broken_state(name, change, needle):
    state = _stable_state()
    assert not P.check_state(state, K).violations
    state.update(change)
    bad = P.INVARIANTS[name](state, K)
    assert bad and any(needle in b for b in bad), bad


def test_parked_request_answered_once_detects_a_forgotten_client():
    state = _stable_state()
    cphase = dict(state["cphase"])
    cwait = dict(state["cwait"])
    cphase[ModelValue("c1")], cwait[ModelValue("c1")] = "JoinWait", 1
    state["cphase"], state["cwait"] = TlaFunction(cphase), TlaFunction(cwait)
    assert any("not parked" in b for b in P.ParkedRequestAnsweredOnce(state, K))


def test_action_properties():
    s = _stable_state()
    t = dict(s, generation=0)
    assert P.GenerationMonotonic(s, t, K)
    t = dict(
        s,
        gstate="PreparingRebalance",
        lastAction=Record(dict(s["lastAction"], member=0, newMember=0, name="AdvanceTime")),
    )
    assert P.StableRebalanceOnlyByTrigger(s, t, K)
    # A member's LeaveGroup is one of Kafka's triggers; a Heartbeat is none.
    t = dict(t, members=frozenset({1}), lastAction=Record(dict(t["lastAction"], member=2, name="LeaveGroup")))
    assert not P.StableRebalanceOnlyByTrigger(s, t, K)
    t = dict(t, members=s["members"], lastAction=Record(dict(t["lastAction"], member=2, name="Heartbeat")))
    assert P.StableRebalanceOnlyByTrigger(s, t, K)


def test_stable_rebalance_prepared_and_completed_in_one_step_is_held_to_the_triggers():
    """A single member's leader rejoin in Stable prepares and completes the rebalance in one
    step (Stable -> CompletingRebalance at the next generation): the leader's JoinGroup is a
    trigger; the same step by a Heartbeat is none and must be reported."""
    rec = RunRecorder(RANDOM_RUN_CONSTANTS)
    rec.step("JoinGroupUnknownMember", "c1", False)
    rec.tick(200)
    rec.step("SyncGroupLeader", "c1")
    rec.step("ClientRejoin", "c1")
    rec.step("JoinGroupKnownMember", "c1", False)
    s, t = rec.states[-2], rec.states[-1]
    assert (s["gstate"], t["gstate"]) == ("Stable", "CompletingRebalance")
    assert t["generation"] == s["generation"] + 1
    assert not P.StableRebalanceOnlyByTrigger(s, t, K)
    heartbeat = dict(t, lastAction=Record(dict(t["lastAction"], name="Heartbeat")))
    bad = P.StableRebalanceOnlyByTrigger(s, heartbeat, K)
    assert bad and "Stable -> CompletingRebalance by Heartbeat" in bad[0], bad


def test_no_commit_outside_current_generation_reads_the_answer_member_and_generation():
    s = _stable_state()
    commit = Record(dict(s["lastAction"], name="HandleCommitOffsets", member=2, gen=s["generation"], resp="NONE"))
    assert not P.NoCommitOutsideCurrentGeneration(s, dict(s, lastAction=commit), K)
    stale = Record(dict(commit, gen=s["generation"] - 1))
    assert P.NoCommitOutsideCurrentGeneration(s, dict(s, lastAction=stale), K)
    stranger = Record(dict(commit, member=3))
    assert P.NoCommitOutsideCurrentGeneration(s, dict(s, lastAction=stranger), K)
    # rejected commits are what the fencing is for
    fenced = Record(dict(stranger, resp="UNKNOWN_MEMBER_ID"))
    assert not P.NoCommitOutsideCurrentGeneration(s, dict(s, lastAction=fenced), K)


def test_properties_hold_on_recorded_runs_with_offset_commits():
    for seed in range(20):
        trace = random_run(RANDOM_RUN_CONSTANTS, 40, seed, commits=True)
        for a, b in zip(trace.states, trace.states[1:]):
            report = P.check_step(a, b, K)
            assert report.ok, f"seed {seed}: {report}"


def test_no_sync_in_preparing_rebalance_reads_the_answer_and_the_parked_requests():
    s = dict(_stable_state(), gstate="PreparingRebalance")
    sync = Record(dict(s["lastAction"], member=2, name="SyncGroupFollower", resp="REBALANCE_IN_PROGRESS"))
    assert not P.NoSyncInPreparingRebalance(s, dict(s, lastAction=sync), K)
    answered = dict(s, lastAction=Record(dict(sync, resp="NONE")))
    assert any("answered NONE" in b for b in P.NoSyncInPreparingRebalance(s, answered, K))
    parked = dict(s, awaitingSync=frozenset({1}))
    assert any("awaitingSync" in b for b in P.NoSyncInPreparingRebalance(s, parked, K))


def test_unobserved_variables_are_reported_as_skipped():
    state = _stable_state()
    del state["genLeaders"]
    report = P.check_state(state, K)
    assert "SingleLeaderPerGeneration" in report.skipped and report.ok
