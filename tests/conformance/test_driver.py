"""One driver: every harness builds its coordinator through kgc.conformance.driver, and the
fan-out hands each coordinator event to every listener in order."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from kgc.conformance.driver import Driver, ObserverFan
from kgc.impl.coordinator import GroupConfig
from kgc.impl.group import GroupState

ROOT = Path(__file__).resolve().parents[2]


class Log:
    def __init__(self, name: str, seen: list[str]) -> None:
        self.name, self.seen = name, seen

    def on_transition(self, group_id: str, old: GroupState, new: GroupState) -> None:
        self.seen.append(f"{self.name}:{old.name}->{new.name}")


def test_the_fan_calls_every_listener_in_order_and_skips_missing_hooks() -> None:
    seen: list[str] = []
    fan = ObserverFan([Log("a", seen), None, Log("b", seen)])
    fan.on_request("join", "g", {})  # no listener has on_request: nothing happens
    fan.on_transition("g", GroupState.Empty, GroupState.PreparingRebalance)
    assert seen == ["a:Empty->PreparingRebalance", "b:Empty->PreparingRebalance"]


def test_a_driven_coordinator_reports_to_its_listeners() -> None:
    seen: list[str] = []
    driver = Driver(GroupConfig(min_session_timeout_ms=10, initial_rebalance_delay_ms=0), listeners=[Log("x", seen)])
    answers: list[Any] = []
    driver.coordinator.handle_join_group(
        "g", "", None, False, "c", "h", 100, 100, "consumer", [("range", "")], answers.append
    )
    driver.timer.advance_to(driver.clock.now_ms() + 1)
    assert "x:Empty->PreparingRebalance" in seen and answers


def test_no_harness_builds_a_coordinator_of_its_own() -> None:
    """Only the driver calls a coordinator class; conformance and the benchmarks go through it."""
    offenders = []
    for folder in ("conformance", "tools"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "driver.py" or "bench/purgatories.py" in str(path):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == "GroupCoordinator"
                ):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []
