"""Coverage of the scenario suite, measured by running it: which (group state x request) cells,
which delayed-operation expiries and which contract error codes the scenarios in
conformance/scenarios/ exercise. Every cell, timer and reachable error must be covered, and
conformance/scenarios/COVERAGE.md must be what this module renders, so coverage cannot drop silently.

The state of a cell is the coordinator's own view of the group just before the request (a group
it does not hold is Dead). Requests are classified as Kafka's handlers tell them apart:
- join: an empty member id is an unknown member; an id the group holds as pending
  (told MEMBER_ID_REQUIRED) is a pending member; any other id is a known member. For a group
  the coordinator does not hold, an id that was only ever answered MEMBER_ID_REQUIRED counts as
  pending.
- sync: a member the group does not hold, and never given a generation, is an unknown member;
  otherwise the generation is compared with the group's (or, if the group does not hold the
  member, with the generation its last successful JoinGroup carried), and leader / follower is
  the group's leader (or what that JoinGroup response said).
- tick: counted for every group of the scenario, in the state it is in when the tick starts.
Expiries are seen through the coordinator's observer hook (CoordinatorObserver.on_timer).

Regenerate the document after changing the suite:
    .venv/bin/python tests/conformance/test_scenario_coverage.py > conformance/scenarios/COVERAGE.md
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from kgc.conformance.replay import World, error_name, run_scenario, state_name
from kgc.conformance.scenario import (
    ERROR_NAMES,
    Commit,
    Expect,
    Heartbeat,
    Join,
    Leave,
    Load,
    LoadBegin,
    Ref,
    Scenario,
    Step,
    Store,
    Sync,
    Tick,
    Unload,
    load_scenario,
)

ROOT = Path(__file__).resolve().parents[2]
SCENARIO_DIR = ROOT / "conformance" / "scenarios"
COVERAGE_MD = SCENARIO_DIR / "COVERAGE.md"

STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
REQUESTS = (
    "join (unknown member)",
    "join (known member)",
    "join (pending member)",
    "sync (leader)",
    "sync (follower)",
    "sync (wrong generation)",
    "sync (unknown member)",
    "heartbeat",
    "leave",
    "tick",
    "unload",
    "load",
    "commit",
    "store",
    "load_begin",
)

#: Cells no scenario should have, with the reason (rendered; excluded from the cell test).
UNREACHABLE_CELLS: dict[tuple[str, str], str] = {
    (state, "load_begin"): (
        "a coordinator starts loading a partition when it becomes its leader "
        "(GroupCoordinator.onElection -> scheduleLoadGroupAndOffsets), so it does not hold the "
        "group then: `load_begin` is meaningful only for a group that is Dead here"
    )
    for state in ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable")
}
TIMERS = (
    "session expiry",
    "rebalance timeout (DelayedJoin)",
    "initial delay extension",
    "initial delay cap",
    "new-member join timeout",
    "DelayedSync expiry",
    "pending member expiry",
)

#: Contract error codes no sequential scenario can draw from Kafka's coordinator, with the reason.
UNREACHABLE_ERRORS: dict[str, str] = {
    "COORDINATOR_NOT_AVAILABLE": (
        "Kafka answers it when the coordinator is not active, or when a request holds a "
        "GroupMetadata that another thread has just marked Dead (onGroupUnloaded, delete, expiry) "
        "before it left the cache; removeGroupsForPartition drops the group in the same step, so "
        "after an `unload` every request gets NOT_COORDINATOR and a sequential scenario never "
        "meets a Dead group object (GroupCoordinator.validateGroupStatus, doNewMemberJoinGroup, "
        "validateSyncGroup, validateHeartbeat, handleLeaveGroup)."
    ),
    "GROUP_ID_NOT_FOUND": (
        "Kafka 3.x's classic coordinator answers it only to DescribeGroups (v6+) and "
        "DeleteGroups (GroupCoordinator.handleDescribeGroup, handleDeleteGroups); no request of the "
        "contract is one of those."
    ),
}


@dataclass
class Coverage:
    cells: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    timers: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    errors: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    failures: dict[str, str] = field(default_factory=dict)


class _Recorder:
    """before_step hook and CoordinatorObserver for one scenario run."""

    def __init__(self, scenario: Scenario, name: str, coverage: Coverage) -> None:
        self.name = name
        self.coverage = coverage
        self.world: World | None = None
        self.groups = sorted(
            {
                s.group
                for s in scenario.steps
                if isinstance(s, (Join, Sync, Heartbeat, Leave, Commit, Unload, Load, Store, LoadBegin))
            }
        )
        self.baseline: dict[str, set[str]] = {}  # members when the initial delay last began
        self.initial_joins: list[dict[str, Any]] = []  # initial delays that fired, undecided

    # -- helpers ---------------------------------------------------------------------------
    def _group(self, group_id: str) -> Any:
        return self.world.coordinator.group(group_id) if self.world is not None else None

    def _state(self, group_id: str) -> str:
        group = self._group(group_id)
        return "Dead" if group is None else state_name(group.state)

    def _join_history(self, group_id: str, member_id: str) -> tuple[Any | None, bool]:
        """(last NONE join response for this member, ever answered MEMBER_ID_REQUIRED)."""
        last_ok, told_required = None, False
        assert self.world is not None
        for rid, step in self.world.requests.items():
            if not isinstance(step, Join) or step.group != group_id:
                continue
            for result in self.world.responses.get(rid, []):
                if result.member_id != member_id:
                    continue
                name = error_name(result.error)
                if name == "NONE":
                    last_ok = result
                elif name == "MEMBER_ID_REQUIRED":
                    told_required = True
        return last_ok, told_required

    def _classify_join(self, step: Join, member_id: str) -> str:
        if member_id == "":
            return "join (unknown member)"
        group = self._group(step.group)
        if group is not None:
            return "join (pending member)" if member_id in group.pending_members else "join (known member)"
        last_ok, told_required = self._join_history(step.group, member_id)
        return "join (pending member)" if told_required and last_ok is None else "join (known member)"

    def _classify_sync(self, step: Sync, member_id: str) -> str:
        group = self._group(step.group)
        if group is not None and member_id in group.members:
            if step.generation != group.generation_id:
                return "sync (wrong generation)"
            return "sync (leader)" if group.leader_id == member_id else "sync (follower)"
        last_ok, _ = self._join_history(step.group, member_id)
        if last_ok is None:
            return "sync (unknown member)"
        if step.generation != last_ok.generation_id:
            return "sync (wrong generation)"
        return "sync (leader)" if last_ok.leader_id == member_id else "sync (follower)"

    def _resolve(self, ref: Any) -> str:
        if not isinstance(ref, Ref):
            return ref
        assert self.world is not None
        answered = self.world.join_answer(ref.request_id)
        return "" if answered is None else answered  # an unanswered ref is the runner's error

    def _finish_initial_joins(self, extended: bool) -> None:
        for event in self.initial_joins:
            if event["extended"] is None:
                event["extended"] = extended
                self._record_initial_join(event)
        self.initial_joins = [e for e in self.initial_joins if e["extended"] is None]

    def _record_initial_join(self, event: dict[str, Any]) -> None:
        if event["extended"]:
            self.coverage.timers["initial delay extension"].add(self.name)
        elif event["new_members"]:
            self.coverage.timers["initial delay cap"].add(self.name)

    # -- the runner's before_step hook -----------------------------------------------------
    def before_step(self, index: int, step: Step, world: World) -> None:
        self.world = world
        self._finish_initial_joins(extended=True)
        cell: list[tuple[str, str]] = []
        if isinstance(step, Join):
            cell.append((self._state(step.group), self._classify_join(step, self._resolve(step.member))))
        elif isinstance(step, Sync):
            cell.append((self._state(step.group), self._classify_sync(step, self._resolve(step.member))))
        elif isinstance(step, Heartbeat):
            cell.append((self._state(step.group), "heartbeat"))
        elif isinstance(step, Leave):
            cell.append((self._state(step.group), "leave"))
        elif isinstance(step, Unload):
            cell.append((self._state(step.group), "unload"))
        elif isinstance(step, Load):
            cell.append((self._state(step.group), "load"))
        elif isinstance(step, Commit):
            cell.append((self._state(step.group), "commit"))
        elif isinstance(step, Store):
            cell.append((self._state(step.group), "store"))
        elif isinstance(step, LoadBegin):
            cell.append((self._state(step.group), "load_begin"))
        elif isinstance(step, Tick):
            cell.extend((self._state(g), "tick") for g in self.groups)
        for key in cell:
            self.coverage.cells[key].add(self.name)

    # -- CoordinatorObserver ---------------------------------------------------------------
    def on_request(self, kind: str, group_id: str, args: dict) -> None:
        pass

    def on_response(self, kind: str, group_id: str, result: object) -> None:
        pass

    def on_transition(self, group_id: str, old: Any, new: Any) -> None:
        old_name, new_name = state_name(old), state_name(new)
        if old_name == "Empty" and new_name == "PreparingRebalance":
            group = self._group(group_id)
            self.baseline[group_id] = set(group.members) if group is not None else set()
        if old_name == "PreparingRebalance":
            for event in self.initial_joins:
                if event["group"] == group_id and event["extended"] is None:
                    event["extended"] = False
                    self._record_initial_join(event)
            self.initial_joins = [e for e in self.initial_joins if e["extended"] is None]

    def on_timer(self, kind: str, group_id: str, member_id: str | None) -> None:
        self._finish_initial_joins(extended=True)
        group = self._group(group_id)
        if group is None:
            return
        if kind == "pending_member":
            self.coverage.timers["pending member expiry"].add(self.name)
        elif kind == "sync":
            self.coverage.timers["DelayedSync expiry"].add(self.name)
        elif kind == "join":
            self.coverage.timers["rebalance timeout (DelayedJoin)"].add(self.name)
        elif kind == "heartbeat" and member_id in group.members:
            member = group.members[member_id]
            if member.is_new and not member.heartbeat_satisfied:
                self.coverage.timers["new-member join timeout"].add(self.name)
            elif not (member.is_awaiting_join or member.is_awaiting_sync or member.heartbeat_satisfied):
                self.coverage.timers["session expiry"].add(self.name)
        elif kind == "initial_join":
            members = set(group.members)
            added = members - self.baseline.get(group_id, set())
            self.baseline[group_id] = members
            self.initial_joins.append(
                {"group": group_id, "extended": None, "new_members": bool(added) and group.generation_id == 0}
            )


def scenario_files() -> list[Path]:
    return sorted(SCENARIO_DIR.glob("*.json"))


@lru_cache(maxsize=1)
def measure() -> Coverage:
    """Run every scenario once, recording cells, expiries and the errors its passing `expect`
    steps checked (steps after a failure did not run, so they count for nothing)."""
    coverage = Coverage()
    for path in scenario_files():
        scenario = load_scenario(path)
        recorder = _Recorder(scenario, path.stem, coverage)
        result = run_scenario(scenario, before_step=recorder.before_step, observer=recorder)
        recorder._finish_initial_joins(extended=True)
        held = len(scenario.steps) if result.passed else result.failure.step
        if not result.passed:
            coverage.failures[path.stem] = str(result.failure)
        for step in scenario.steps[:held]:
            if isinstance(step, Expect) and "error" in step.checks:
                coverage.errors[step.checks["error"]].add(path.stem)
    return coverage


def render(coverage: Coverage) -> str:
    """COVERAGE.md, generated from a run of the suite."""
    out = [
        "# Scenario coverage",
        "",
        "Generated by `tests/conformance/test_scenario_coverage.py` from a run of every scenario in",
        "this folder against the Python coordinator; that test fails when this file is out of date",
        "or when a cell, an expiry or a reachable error code loses its last scenario. Regenerate:",
        "",
        "    .venv/bin/python tests/conformance/test_scenario_coverage.py > conformance/scenarios/COVERAGE.md",
        "",
        "A cell is the group's state as the coordinator holds it just before the request (a group",
        "it does not hold is Dead) and the kind of request; the classification rules are in the",
        "test's docstring. Every scenario's `source` names the Kafka 3.x function or",
        "GroupCoordinatorTest test its expectations come from.",
        "",
        "## State x request (number of scenarios)",
        "",
        "| request | " + " | ".join(STATES) + " |",
        "|---|" + "---|" * len(STATES),
    ]
    for request in REQUESTS:
        row = [str(len(coverage.cells.get((state, request), ()))) for state in STATES]
        out.append(f"| {request} | " + " | ".join(row) + " |")
    out += ["", "## Scenarios per cell", ""]
    for state in STATES:
        out += [f"### {state}", ""]
        for request in REQUESTS:
            files = sorted(coverage.cells.get((state, request), ()))
            if files:
                out.append(f"- **{request}**: " + ", ".join(files))
            elif (state, request) in UNREACHABLE_CELLS:
                out.append(f"- **{request}**: not a reachable cell: " + UNREACHABLE_CELLS[(state, request)])
            else:
                out.append(f"- **{request}**: NOT COVERED")
        out.append("")
    out += ["## Expiries seen during `tick`", ""]
    for timer in TIMERS:
        files = sorted(coverage.timers.get(timer, ()))
        out.append(f"- **{timer}**: " + (", ".join(files) if files else "NOT COVERED"))
    out += ["", "## Error codes checked by an `expect`", ""]
    for error in sorted(ERROR_NAMES):
        files = sorted(coverage.errors.get(error, ()))
        if files:
            out.append(f"- **{error}**: " + ", ".join(files))
        elif error in UNREACHABLE_ERRORS:
            out.append(f"- **{error}**: not reachable by a sequential scenario. " + UNREACHABLE_ERRORS[error])
        else:
            out.append(f"- **{error}**: NOT COVERED")
    if coverage.failures:
        out += ["", "## Scenarios failing against the Python coordinator", ""]
        out += [f"- {name}: {why}" for name, why in sorted(coverage.failures.items())]
    return "\n".join(out) + "\n"


# --- tests ---------------------------------------------------------------------------------


def test_the_suite_is_there() -> None:
    assert len(scenario_files()) >= 35


def test_every_state_request_cell_is_covered() -> None:
    coverage = measure()
    missing = [
        f"{state} x {request}"
        for state in STATES
        for request in REQUESTS
        if not coverage.cells.get((state, request)) and (state, request) not in UNREACHABLE_CELLS
    ]
    assert not missing, f"cells without a scenario: {missing}; failing scenarios: {coverage.failures}"


def test_every_expiry_is_covered() -> None:
    coverage = measure()
    missing = [timer for timer in TIMERS if not coverage.timers.get(timer)]
    assert not missing, f"expiries no scenario reaches: {missing}; failing: {coverage.failures}"


def test_every_reachable_contract_error_is_covered() -> None:
    coverage = measure()
    assert set(UNREACHABLE_ERRORS) <= ERROR_NAMES, "an excused error is no longer in the contract"
    missing = sorted(ERROR_NAMES - set(UNREACHABLE_ERRORS) - set(coverage.errors))
    assert not missing, f"error codes no scenario checks: {missing}; failing: {coverage.failures}"


def test_coverage_document_is_current() -> None:
    expected = render(measure())
    actual = COVERAGE_MD.read_text(encoding="utf-8") if COVERAGE_MD.exists() else ""
    assert actual == expected, (
        "conformance/scenarios/COVERAGE.md is out of date; regenerate it with "
        ".venv/bin/python tests/conformance/test_scenario_coverage.py "
        "> conformance/scenarios/COVERAGE.md"
    )


if __name__ == "__main__":
    sys.stdout.write(render(measure()))
