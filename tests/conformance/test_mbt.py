"""Spec -> implementation: TLC's random behaviours replayed on the real coordinator (and on
coordinators with one seeded defect each, which conform must catch)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conformsupport import full_spec_dir

from kgc.conformance.abstraction import TIMER_STEPS, SpecConstants
from kgc.conformance.mbt import conform, conform_trace, simulate
from kgc.conformance.recorded_trace import read_trace
from kgc.conformance.seeded_bugs import BUGS, coordinator_class
from kgc.conformance.validate import validate_traces
from kgc.spec.itf import read_itf

pytestmark = pytest.mark.slow  # runs TLC (the fast lane is `pytest -m "not slow"`)

KGC = Path(sys.executable).with_name("kgc")


@pytest.fixture(scope="module")
def small_traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("small") / "traces"
    result = simulate("small", 300, 40, 1, out)
    assert result.ok, result.check.error_line
    assert len(result.files) == 300
    return out


@pytest.fixture(scope="module")
def full_traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1,000 behaviours with every client fault and a failover: enough that each seeded bug
    is met (the rarest, sync_in_preparing_rebalance, diverges in about 2% of them)."""
    base = tmp_path_factory.mktemp("full")
    result = simulate("conform_full", 1000, 40, 1, base / "traces", spec_dir=full_spec_dir(base / "spec"))
    assert result.ok, result.check.error_line
    return base / "traces"


def _actions(folder: Path) -> Counter[str]:
    seen: Counter[str] = Counter()
    for path in sorted(folder.glob("*.itf.json")):
        _, states = read_itf(path)
        seen.update(str(s["lastAction"]["name"]) for s in states[1:])
    return seen


def test_small_model_traces_conform(small_traces: Path) -> None:
    report = conform([small_traces])
    assert report.count("DIVERGED") == 0, str(report.first_divergence.divergence)
    assert report.count("ERROR") == 0, [o.error for o in report.outcomes if o.error]
    assert report.count("CONFORMS") == len(report.outcomes), report.summary()
    # every trace is followed to its end (40 states = 39 steps)
    assert report.steps == sum(o.total for o in report.outcomes) >= 300 * 39
    print(report.summary())


def test_full_fault_traces_conform_and_exercise_every_action(full_traces: Path) -> None:
    report = conform([full_traces])
    assert report.count("DIVERGED") == 0, str(report.first_divergence.divergence)
    assert report.count("ERROR") == 0
    assert report.count("CONFORMS") == len(report.outcomes), report.summary()
    seen = _actions(full_traces)
    wanted = {
        "JoinGroupUnknownMember",
        "JoinGroupPendingMember",
        "JoinGroupKnownMember",
        "SyncGroupLeader",
        "SyncGroupFollower",
        "Heartbeat",
        "LeaveGroup",
        "ClientCrash",
        "ClientRestart",
        "ClientAbandon",
        "ClientRejoin",
        "AdvanceTime",
        "GroupUnload",
        "GroupLoad",
    } | (TIMER_STEPS - {"DelayedSyncExpiry"})  # that one is rare
    assert wanted <= set(seen), f"never drawn: {sorted(wanted - set(seen))}"
    print(report.summary(), dict(seen))


def test_recorded_runs_of_simulated_traces_are_behaviours_of_the_spec(full_traces: Path, tmp_path: Path) -> None:
    """spec -> implementation -> spec: the implementation's own runs, recorded while it
    follows 1,000 spec traces (failover included), are checked by TLC to be behaviours of
    the spec; and a recording of a seeded bug's run is not."""
    report = conform([full_traces], record_to=tmp_path / "rec")
    assert report.count("CONFORMS") == len(report.outcomes) == 1000, report.summary()
    recorded = [read_trace(p) for p in sorted((tmp_path / "rec").glob("*.json"))]
    assert len(recorded) == 1000 and all(t.stopped is None for t in recorded)
    assert sum(len(t.states) - 1 for t in recorded) == report.steps
    checked = validate_traces(recorded, work_dir=tmp_path / "tlc")
    assert checked.ok, (checked.errors[:1], [v for v in checked.verdicts if not v.matched][:1])
    assert len(checked.verdicts) == 1000

    bad = conform(
        [full_traces], coordinator_class("generation_not_bumped"), record_to=tmp_path / "bad", stop_at_first=True
    )
    diverged = bad.first_divergence
    assert diverged is not None
    run = read_trace(tmp_path / "bad" / Path(diverged.file).name.replace(".itf.json", ".json"))
    verdict = validate_traces([run], work_dir=tmp_path / "tlc-bad").verdicts[0]
    assert not verdict.matched and verdict.failed_step is not None


def test_record_refuses_a_normalize_model(small_traces: Path, tmp_path: Path) -> None:
    path = sorted(small_traces.glob("*.itf.json"))[0]
    outcome = conform_trace(path, record_to=tmp_path)
    assert outcome.verdict == "ERROR" and "Normalize" in outcome.error
    assert not list(tmp_path.glob("*.json"))


#: caught on other traces: leader_given_stale_members needs a rebalance that drops a member the
#: leader then still assigns to, which the timeouts model's traces reach (see below)
TIMEOUTS_TRACES = {"leader_given_stale_members"}  # caught on `timeouts` traces
STATIC_TRACES = {"static_replace_not_stored", "static_replace_keeps_old_member"}  # on `static_fencing` traces
STORE_TRACES = {"static_revert_dropped"}  # caught on a trace TLC steers to a failed static append (below)
TRAP_TRACES = {"commit_from_unknown_member_accepted"}  # caught on a trace TLC steers to (below)
PROTOCOLS_TRACES = {"vote_ignores_candidates"}  # caught on `protocols` traces (clients' protocols differ)
OTHER_TRACES = TIMEOUTS_TRACES | STATIC_TRACES | TRAP_TRACES | PROTOCOLS_TRACES | STORE_TRACES


@pytest.mark.parametrize("bug", sorted(set(BUGS) - {"none"} - OTHER_TRACES))
def test_each_seeded_implementation_bug_diverges(full_traces: Path, bug: str) -> None:
    report = conform([full_traces], coordinator_class(bug), stop_at_first=True)
    first = report.first_divergence
    assert first is not None, f"{bug} went unnoticed: {report.summary()}"
    d = first.divergence
    assert d.step >= 1 and d.variable and d.spec_value != d.impl_value
    assert str(d).startswith(f"step {d.step} {d.action}: {d.variable}: spec ")


def test_divergence_names_trace_step_action_variable_and_both_values(small_traces: Path, tmp_path: Path) -> None:
    """A trace whose spec side is changed at one step diverges exactly there."""
    source = next(p for p in sorted(small_traces.glob("*.itf.json")) if len(read_itf(p)[1]) > 12)
    document = json.loads(source.read_text())
    step = 10
    document["states"][step]["nextId"] = {"#bigint": "99"}
    tampered = tmp_path / "tampered.itf.json"
    tampered.write_text(json.dumps(document))
    outcome = conform_trace(tampered)
    assert outcome.verdict == "DIVERGED"
    d = outcome.divergence
    action = document["states"][step]["lastAction"]["name"]
    assert (d.step, d.variable, d.spec_value) == (step, "nextId", "99")
    assert d.action.startswith(action)
    assert d.impl_value != "99"


def test_simulation_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    def texts(out: Path) -> list[str]:
        return [p.read_text() for p in sorted(out.glob("*.itf.json"))]

    a = simulate("small", 15, 25, 42, tmp_path / "a")
    simulate("small", 15, 25, 42, tmp_path / "b")
    simulate("small", 15, 25, 43, tmp_path / "c")
    assert len(a.files) == 15
    assert texts(tmp_path / "a") == texts(tmp_path / "b")
    assert texts(tmp_path / "a") != texts(tmp_path / "c")


def _kgc(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KGC), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env if env is not None else os.environ.copy(),
    )


def test_cli_simulate_then_conform(tmp_path: Path) -> None:
    sim = _kgc(
        "simulate", "--model", "small", "--traces", "40", "--depth", "30", "--seed", "3", "--out", "t", cwd=tmp_path
    )
    assert sim.returncode == 0, sim.stderr
    assert "40 traces" in sim.stdout
    assert len(list((tmp_path / "t").glob("trace-*.itf.json"))) == 40

    ok = _kgc("conform", "t", "--json", cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    summary = json.loads(ok.stdout.strip().splitlines()[-1])
    assert summary["traces"] == 40 and summary["diverged"] == 0 and summary["steps"] > 0
    assert summary["steps_per_second"] > 0
    assert "kgc conform: " not in ok.stderr  # a job of a second prints no progress lines (tests/tools/test_progress.py)

    env = dict(os.environ, KGC_IMPL_BUG="generation_not_bumped")
    bad = _kgc("conform", "t", cwd=tmp_path, env=env)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    line = next(x for x in bad.stdout.splitlines() if x.startswith("DIVERGED"))
    assert "generation: spec" in line and ".itf.json: step " in line

    again = _kgc("simulate", "--model", "small", "--out", "t", cwd=tmp_path)
    assert again.returncode == 1 and "must be a new or empty folder" in again.stderr
    unknown = _kgc("conform", "t", "--bug", "no_such_bug", cwd=tmp_path)
    assert unknown.returncode == 2 and "no seeded implementation bug" in unknown.stderr


def _assert_recorded_runs_validate(tmp_path: Path, count: int) -> None:
    """The runs conform recorded into tmp_path/rec are behaviours of the spec (TLC)."""
    recorded = [read_trace(p) for p in sorted((tmp_path / "rec").glob("*.json"))]
    checked = validate_traces(recorded, work_dir=tmp_path / "tlc")
    assert checked.ok and len(checked.verdicts) == count, [v.line() for v in checked.verdicts if not v.matched][:1]


def test_clients_with_their_own_timeouts_conform_and_record_back(tmp_path: Path) -> None:
    """timeouts.cfg: c2 sends session 5 > rebalance 1, c1 session 2 < rebalance 3, so the
    group's rebalance timeout is the largest of its members' and session timers outlast
    rebalances. Spec traces conform, and the runs recorded while following them validate."""
    result = simulate("timeouts", 200, 40, 3, tmp_path / "traces")
    assert result.ok, result.check.error_line
    report = conform([tmp_path / "traces"], record_to=tmp_path / "rec")
    assert report.count("CONFORMS") == len(report.outcomes) == 200, report.summary()
    delays = set()
    for path in sorted((tmp_path / "traces").glob("*.itf.json")):
        _, states = read_itf(path)
        for s in states:
            delays.update((t["kind"], t["delay"]) for t in s["timers"])
    # both clients' session timeouts, and rebalance timeouts of 1 (c2 alone) and 3 (with c1)
    assert {("Heartbeat", 2), ("Heartbeat", 5), ("Join", 1), ("Join", 3)} <= delays, sorted(delays)
    _assert_recorded_runs_validate(tmp_path, 200)
    for bug in sorted(TIMEOUTS_TRACES):
        caught = conform([tmp_path / "traces"], coordinator_class(bug), stop_at_first=True).first_divergence
        assert caught is not None, f"{bug} went unnoticed"


def _last_actions(folder: Path, name: str) -> list[dict]:
    return [
        s["lastAction"]
        for path in sorted(folder.glob("*.itf.json"))
        for s in read_itf(path)[1]
        if s["lastAction"]["name"] == name
    ]


def test_clients_with_their_own_protocols_conform_and_record_back(tmp_path: Path) -> None:
    """protocols.cfg: c1 prefers roundrobin over range, c2 cooperative-sticky over range and
    roundrobin, c3 supports sticky only. Spec traces conform -- the vote and its tie (c1 with
    c2: range), INCONSISTENT_GROUP_PROTOCOL for c3 against either -- the runs recorded while
    following them validate, and a vote that ignores the candidates diverges."""
    result = simulate("protocols", 100, 30, 5, tmp_path / "traces")
    assert result.ok, result.check.error_line
    report = conform([tmp_path / "traces"], record_to=tmp_path / "rec")
    assert report.count("CONFORMS") == len(report.outcomes) == 100, report.summary()
    selected, answers = set(), set()
    for path in sorted((tmp_path / "traces").glob("*.itf.json")):
        _, states = read_itf(path)
        selected.update(str(s["protocol"]) for s in states)
        answers.update(str(s["lastAction"]["resp"]) for s in states)
    assert {"range", "roundrobin", "sticky"} <= selected, sorted(selected)
    assert "INCONSISTENT_GROUP_PROTOCOL" in answers
    # SyncGroup v5 with another protocol type (the fault bad-protocol): validateSyncGroup's
    # INCONSISTENT_GROUP_PROTOCOL, or an error found before the protocol check
    sync_answers = {str(la["resp"]) for la in _last_actions(tmp_path / "traces", "SyncGroupInconsistentProtocol")}
    assert "INCONSISTENT_GROUP_PROTOCOL" in sync_answers, sync_answers
    _assert_recorded_runs_validate(tmp_path, 100)
    for bug in sorted(PROTOCOLS_TRACES):
        caught = conform([tmp_path / "traces"], coordinator_class(bug), stop_at_first=True).first_divergence
        assert caught is not None, f"{bug} went unnoticed"
        assert caught.divergence.variable == "protocol", str(caught.divergence)


def test_a_static_rejoin_that_changes_the_protocol_rebalances(tmp_path: Path) -> None:
    """protocols_static: c1 (roundrobin > range) and c2 (cooperative-sticky > ...) share one
    group.instance.id, so c2 replacing c1 in a Stable group changes the next generation's vote:
    updateStaticMemberAndRebalance rebalances instead of storing. Spec traces that take that
    path conform."""
    result = simulate("protocols_static", 60, 30, 3, tmp_path / "traces")
    assert result.ok, result.check.error_line
    report = conform([tmp_path / "traces"])
    assert report.count("CONFORMS") == len(report.outcomes) == 60, report.summary()
    changed = 0
    for path in sorted((tmp_path / "traces").glob("*.itf.json")):
        _, states = read_itf(path)
        for before, after in zip(states, states[1:]):
            la = after["lastAction"]
            # the rebalance may complete in the same step (the rejoining member is the only one)
            if (
                la["name"] == "JoinGroupUnknownMember"
                and before["gstate"] == "Stable"
                and before["members"]
                and (after["gstate"], after["generation"]) != ("Stable", before["generation"])
            ):
                assert after["protocol"] != before["protocol"], (path.name, la)
                changed += 1
    assert changed > 0, "no static rejoin changed the protocol"


@pytest.mark.parametrize("model", ["static", "static_fencing"])
def test_static_member_traces_conform(model: str, tmp_path: Path) -> None:
    """Static clients (group.instance.id, the spec's Instances) driven through the spec's
    traces: joins with the instance id (before and from v9's skip_assignment), the
    replacement of a known instance's member id (GroupMetadata.replaceStaticMember, whose
    plan, leadership and stored record the spec relabels), FENCED_INSTANCE_ID to the zombie
    that shares an instance id (static_fencing), and reloads of the stored static ids.
    The runs recorded while following them validate (kgc validate under the model's
    Instances, with the static variables observed)."""
    # seed 1: 5 reloads of a group holding a static member in the `static` model (seed 7 drew
    # none once commits entered the spec); the counts below keep the coverage honest
    result = simulate(model, 150, 60, 1, tmp_path / "traces")
    assert result.ok, result.check.error_line
    report = conform([tmp_path / "traces"], record_to=tmp_path / "rec")
    assert report.count("CONFORMS") == len(report.outcomes) == 150, str(report.first_divergence.divergence)
    recorded = [read_trace(p) for p in sorted((tmp_path / "rec").glob("*.json"))]
    assert {t.constants.instances for t in recorded} == {SpecConstants.from_model(model).instances}
    assert any(m != 0 for t in recorded for s in t.states for m in s["staticMembers"].values())
    checked = validate_traces(recorded, work_dir=tmp_path / "tlc")
    assert checked.ok and len(checked.verdicts) == 150, [v.line() for v in checked.verdicts if not v.matched][:1]
    replaced = fenced = skipped = reloaded = 0
    for path in sorted((tmp_path / "traces").glob("*.itf.json")):
        _, states = read_itf(path)
        for before, after in zip(states, states[1:]):
            la = after["lastAction"]
            given = [i for i in after["minstance"] if i]
            replaced += len(given) > len(set(given)) and len([i for i in before["minstance"] if i]) < len(given)
            fenced += la["resp"] == "FENCED_INSTANCE_ID"
            skipped += la["name"] == "JoinGroupUnknownMember" and bool(la["flag"])
            reloaded += la["name"] == "GroupLoad" and any(m != 0 for m in after["staticMembers"].values())
    assert min(replaced, skipped, reloaded) > 0, (replaced, skipped, reloaded)
    if model == "static_fencing":
        assert fenced > 0
        # validateCurrentMember's instance check skipped: the zombie twin is told
        # UNKNOWN_MEMBER_ID (and rejoins) where the spec fences it for good
        caught = conform([tmp_path / "traces"], coordinator_class("fenced_instance_not_checked"), stop_at_first=True)
        assert caught.first_divergence is not None, "fenced_instance_not_checked went unnoticed"
        # the replaced static member id not stored (the spec's bug_static_replace_not_stored):
        # the store keeps the old id where the spec stores the new one (a twin replacing the
        # Stable member: static_fencing's traces reach it, static's 60-state ones rarely do)
        missed = conform([tmp_path / "traces"], coordinator_class("static_replace_not_stored"), stop_at_first=True)
        assert missed.first_divergence is not None, "static_replace_not_stored went unnoticed"
        # replaceStaticMember leaving the old member id beside the new one (the spec's
        # bug_static_replace_keeps_old_member, OneOwnerPerInstanceId): the first replacement
        # of the static member diverges (members hold both ids)
        kept = conform([tmp_path / "traces"], coordinator_class("static_replace_keeps_old_member"), stop_at_first=True)
        d = kept.first_divergence
        assert d is not None, "static_replace_keeps_old_member went unnoticed"
        assert d.divergence.variable == "members" and d.divergence.action.startswith("JoinGroup"), str(d.divergence)


def test_a_failed_static_store_reverts_to_the_old_member_id(tmp_path: Path) -> None:
    """A static rejoin in Stable whose append fails is reverted to the old member id
    (updateStaticMemberAndRebalance's storeGroup callback): the real coordinator follows the
    trace TLC finds to such a revert (bug_static_revert_dropped's model with Bug none: one
    static client, the asynchronous store failing), and static_revert_dropped (no revert)
    diverges at that StoreCallback."""
    trap = _trap_trace(
        tmp_path, "bug_static_revert_dropped", "static_revert_trap", STATIC_REVERT_TRAP_MODULE, "NoStaticRevert"
    )
    _, states = read_itf(trap)
    assert states[-1]["lastAction"]["name"] == "StoreCallback"
    assert conform([trap]).count("CONFORMS") == 1
    dropped = conform([trap], coordinator_class("static_revert_dropped"), stop_at_first=True)
    d = dropped.first_divergence
    assert d is not None, "static_revert_dropped went unnoticed"
    assert d.divergence.action.startswith("StoreCallback"), str(d.divergence)


def test_static_member_removed_by_instance_id_conforms_and_validates(tmp_path: Path) -> None:
    """static_admin_leave: an admin's LeaveGroup naming only the group.instance.id
    (handleLeaveGroup's currentStaticMemberId path, the spec's LeaveGroupByInstanceId) removes
    the instance's member, in every state the traces reach; the implementation follows the
    spec's traces and its recorded runs validate."""
    result = simulate("static_admin_leave", 100, 40, 7, tmp_path / "traces")
    assert result.ok, result.check.error_line
    report = conform([tmp_path / "traces"], record_to=tmp_path / "rec")
    assert report.count("CONFORMS") == len(report.outcomes) == 100, str(report.first_divergence.divergence)
    removed: Counter[str] = Counter()
    for path in sorted((tmp_path / "traces").glob("*.itf.json")):
        _, states = read_itf(path)
        for before, after in zip(states, states[1:]):
            la = after["lastAction"]
            if la["name"] == "LeaveGroupByInstanceId":
                assert la["member"] in before["members"] and la["member"] not in after["members"]
                removed[before["gstate"]] += 1
    assert set(removed) >= {"PreparingRebalance", "CompletingRebalance", "Stable"}, removed
    _assert_recorded_runs_validate(tmp_path, 100)


#: A trap for TLC: the first OffsetCommit a consumer sends after its member was removed, while
#: the group still prepares the rebalance of the generation the consumer holds. Random
#: behaviours rarely line it up (the removed consumer usually heartbeats first: none of 300
#: `commits` traces of 40 states did), so the model checker is asked for one (breadth first:
#: a shortest), which kgc conform then drives.
COMMIT_TRAP_MODULE = """---- MODULE MCcommit_trap ----
EXTENDS MCGroupCoordinator
NoRemovedMemberCommitsInItsGeneration ==
    [][~(/\\ lastAction'.name = "HandleCommitOffsets" /\\ lastAction'.resp = "UNKNOWN_MEMBER_ID"
         /\\ gstate = "PreparingRebalance" /\\ lastAction'.gen = generation)]_vars
====
"""


STATIC_REVERT_TRAP_MODULE = """---- MODULE MCstatic_revert_trap ----
EXTENDS MCGroupCoordinator
NoStaticRevert == [][~(lastAction'.name = "StoreCallback" /\\ staticMembers' # staticMembers)]_vars
====
"""


def _trap_trace(
    folder: Path,
    base: str = "commits",
    name: str = "commit_trap",
    module: str = COMMIT_TRAP_MODULE,
    prop: str = "NoRemovedMemberCommitsInItsGeneration",
) -> Path:
    """TLC's trace to a trap: the `base` model (Bug none) with the trap as its only property."""
    from kgc.conformance.abstraction import SpecConstants
    from kgc.spec.catalog import resolve_model
    from kgc.spec.itf import write_itf
    from kgc.spec.tlc import TlcJob, run_tlc

    spec_dir = full_spec_dir(folder / "spec")
    models = spec_dir / "models"
    cfg = re.sub(r'Bug = "\w+"', 'Bug = "none"', resolve_model(base).config.read_text(encoding="utf-8"))
    (models / f"{name}.cfg").write_text(cfg.split("INVARIANTS")[0] + f"PROPERTIES\n    {prop}\n", encoding="utf-8")
    (models / f"MC{name}.tla").write_text(module, encoding="utf-8")
    found = resolve_model(name, spec_dir)
    result = run_tlc(TlcJob(module=found.module, config=found.config, modules=found.modules), folder / "tlc")
    assert result.violated == prop, result.error
    path = folder / "trap.itf.json"
    constants = SpecConstants.from_cfg(found.config, 1000)
    meta = {"model": found.name, "constants": constants.to_json()}
    write_itf(path, result.trace, source=found.module.name, description=result.error or "", meta=meta)
    return path


def test_a_commit_of_a_removed_member_is_fenced(tmp_path: Path) -> None:
    """The spec answers UNKNOWN_MEMBER_ID to a consumer whose member was removed, even while
    its generation is still the group's: the real coordinator follows the trace TLC found to
    that commit, and commit_from_unknown_member_accepted (no member check) diverges on it."""
    trap = _trap_trace(tmp_path)
    assert conform([trap]).count("CONFORMS") == 1
    caught = conform([trap], coordinator_class("commit_from_unknown_member_accepted"), stop_at_first=True)
    d = caught.first_divergence
    assert d is not None, "commit_from_unknown_member_accepted went unnoticed"
    assert d.divergence.action.startswith("HandleCommitOffsets"), str(d.divergence)
