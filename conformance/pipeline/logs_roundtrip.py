"""kgc's own runs as broker logs: scenarios replayed with the coordinator logging Kafka's lines,
and the group histories the coordinator really went through, to compare with what
`kgc pipeline logs` rebuilds from the lines.

Why each scenario is its own broker, a day after the previous one: group ids repeat across
scenarios ("g"), and the pipeline follows a group across brokers and time; a new broker starts a
new incarnation of the group (as after a coordinator move), so scenarios never read as one
impossible history.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kgc.conformance.replay import run_scenario
from kgc.conformance.scenario import ScenarioError, load_scenario
from kgc.impl.coordinator import GroupCoordinator
from kgc.impl.kafka_log import kafka_log_to

__all__ = ["DAY_MS", "Recorded", "replay_with_logs"]

DAY_MS = 86_400_000
#: (broker id = scenario position, group id) -> the (state, generation) changes, in order.
Recorded = dict[tuple[str, str], list[tuple[str, int | None]]]


def _recording(base: type[GroupCoordinator], sink: list[tuple[str, str, int]]) -> type[GroupCoordinator]:
    class Recording(base):  # type: ignore[misc,valid-type]
        def _on_transition(self, group: Any, old: Any, new: Any) -> None:
            sink.append((group.group_id, str(new), group.generation_id))
            super()._on_transition(group, old, new)

        def _on_loaded(self, group: Any) -> None:
            sink.append((group.group_id, "Loaded", group.generation_id))
            super()._on_loaded(group)

    return Recording


def replay_with_logs(
    paths: Sequence[Path], log_path: Path, coordinator_class: type[GroupCoordinator] | None = None
) -> tuple[Recorded, list[str]]:
    """Replay every scenario into one Kafka-layout log; returns the recorded histories and one
    line per scenario that did not run (invalid file)."""
    recorded: Recorded = {}
    problems: list[str] = []
    with kafka_log_to(log_path, debug=True) as handler:
        for index, path in enumerate(paths):
            handler.formatter.base_ms = index * DAY_MS  # type: ignore[union-attr]
            sink: list[tuple[str, str, int]] = []
            cls = functools.partial(_recording(coordinator_class or GroupCoordinator, sink), broker_id=index)
            try:
                run_scenario(load_scenario(path), coordinator_class=cls)
            except ScenarioError as exc:
                problems.append(f"{path}: {exc}")
            for group_id, state, generation in sink:
                seq = recorded.setdefault((str(index), group_id), [])
                if not seq or seq[-1] != (state, generation):
                    seq.append((state, generation))
    return recorded, problems
