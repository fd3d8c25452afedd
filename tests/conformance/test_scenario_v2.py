"""Scenario contract version 2 (docs/scenario-format.md): what it adds parses, what it forbids is
rejected whole (exit 2, naming the file and the step), a format-1 file cannot use the additions
(so its meaning stays version 1's), and the run-time check of `store` (no unfinished write)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kgc.conformance.replay import run_scenario
from kgc.conformance.scenario import Commit, Join, ScenarioError, Store, loads_scenario
from kgc.impl.errors import Errors
from kgc.impl.store import DeferredGroupStore, InMemoryGroupStore, StoredGroup, coordinator_error_for_append

KGC = Path(sys.executable).with_name("kgc")

BASE: dict[str, Any] = {
    "format": 2,
    "name": "v2-base",
    "config": {"min_session_timeout_ms": 10, "store": "deferred"},
    "steps": [
        {"do": "join", "id": "a1", "group": "g", "version": 9, "instance": "ia"},  # 0
        {"do": "tick", "ms": 0},  # 1
        {"expect": "a1", "error": "NONE", "generation": 1, "skip_assignment": False},  # 2
        {"do": "sync", "id": "s1", "group": "g", "member": "@a1", "generation": 1, "instance": "ia"},  # 3
        {"expect_state": "g", "unfinished_writes": 1, "stored_generation": None, "loading": False},  # 4
        {"do": "store", "group": "g"},  # 5
        {"expect": "s1", "error": "NONE", "protocol_type": "consumer"},  # 6
        {"do": "commit", "id": "c1", "group": "g", "member": "@a1", "generation": 1, "instance": "ia"},  # 7
        {"expect": "c1", "error": "NONE"},  # 8
        {"expect_state": "g", "static_members": {"ia": "@a1"}, "stored_generation": 1},  # 9
    ],
}


def doc_with(index: int | None = None, step: Any = None, **top: Any) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    if index is not None:
        doc["steps"][index] = step
    doc.update(top)
    return doc


def parse(doc: Any) -> Any:
    return loads_scenario(json.dumps(doc), "v2.json")


def rejected(doc: Any) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        parse(doc)
    return info.value


def test_base_parses_and_passes() -> None:
    scenario = parse(BASE)
    join = scenario.steps[0]
    assert isinstance(join, Join) and join.version == 9 and join.require_known_member and join.supports_skip_assignment
    assert isinstance(scenario.steps[5], Store) and scenario.steps[5].error == "NONE"
    commit = scenario.steps[7]
    assert isinstance(commit, Commit) and commit.offsets == (("t-0", 0),)
    result = run_scenario(scenario)
    assert result.passed, result.failure


def test_commit_defaults() -> None:
    commit = parse(doc_with(7, {"do": "commit", "id": "c1", "group": "g"})).steps[7]
    assert (commit.member, commit.generation, commit.instance) == ("", -1, None)


def test_join_version_sets_require_known_member() -> None:
    for version, required in ((0, False), (3, False), (4, True), (9, True)):
        join = parse(doc_with(0, {"do": "join", "id": "a1", "group": "g", "version": version})).steps[0]
        assert join.require_known_member is required, version


@pytest.mark.parametrize(
    "index, step, what",
    [
        (
            0,
            {"do": "join", "id": "a1", "group": "g", "version": 4, "instance": "ia", "require_known_member": False},
            "contradicts",
        ),
        (0, {"do": "join", "id": "a1", "group": "g", "version": 3, "require_known_member": True}, "contradicts"),
        (0, {"do": "join", "id": "a1", "group": "g", "version": 4, "instance": "ia"}, "version 5"),
        (0, {"do": "join", "id": "a1", "group": "g", "version": -1}, "version"),
        (0, {"do": "join", "id": "a1", "group": "g", "version": "9"}, "version"),
        (5, {"do": "store", "group": "g", "error": "DISK_FULL"}, "DISK_FULL"),
        (5, {"do": "store", "group": "g", "errors": "NONE"}, "errors"),
        (5, {"do": "load_begin", "group": "g", "ms": 1}, "ms"),
        (7, {"do": "commit", "id": "c1", "group": "g", "offsets": {}}, "offsets"),
        (7, {"do": "commit", "id": "c1", "group": "g", "offsets": {"t-0": -1}}, "offsets"),
        (7, {"do": "commit", "id": "c1", "group": "g", "offsets": [1]}, "offsets"),
        (8, {"expect": "c1", "assignment": "x"}, "commit"),
        (8, {"expect": "c1", "skip_assignment": True}, "commit"),
        (9, {"expect_state": "g", "static_members": ["ia"]}, "static_members"),
        (9, {"expect_state": "g", "loading": 1}, "loading"),
        (9, {"expect_state": "g", "unfinished_writes": -1}, "unfinished_writes"),
        (9, {"expect_state": "g", "static_members": {"ia": "@c1"}}, "not a join"),
    ],
)
def test_malformed_v2_steps(index: int, step: Any, what: str) -> None:
    e = rejected(doc_with(index, step))
    assert e.step == index and what in e.message, e.message


def test_store_needs_a_deferred_store() -> None:
    e = rejected(doc_with(config={"min_session_timeout_ms": 10}))
    assert e.step == 5 and "deferred" in e.message


def test_bad_store_mode() -> None:
    e = rejected(doc_with(config={"store": "lazy"}))
    assert e.step is None and "store" in e.message


@pytest.mark.parametrize(
    "step",
    [
        {"do": "commit", "id": "c9", "group": "g"},
        {"do": "load_begin", "group": "g"},
        {"do": "heartbeat", "id": "h9", "group": "g", "member": "@a1", "generation": 1, "instance": "ia"},
        {"do": "join", "id": "j9", "group": "g", "version": 3},
        {"expect": "a1", "skip_assignment": False},
        {"expect_state": "g", "loading": False},
    ],
)
def test_format_1_cannot_use_version_2_additions(step: Any) -> None:
    doc = {"format": 1, "steps": [{"do": "join", "id": "a1", "group": "g"}, {"do": "tick", "ms": 0}, step]}
    e = rejected(doc)
    assert e.step == 2 and "format 2" in e.message


def test_format_1_config_store_is_rejected() -> None:
    e = rejected({"format": 1, "config": {"store": "immediate"}, "steps": []})
    assert "format 2" in e.message


def test_store_with_no_unfinished_write_is_a_bad_file(tmp_path: Path) -> None:
    doc = doc_with(9, {"do": "store", "group": "g"})
    with pytest.raises(ScenarioError) as info:
        run_scenario(parse(doc))
    assert info.value.step == 9 and "no unfinished write" in info.value.message
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    out = subprocess.run([str(KGC), "replay", str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "step 9" in out.stderr + out.stdout and "Traceback" not in out.stderr


# --- the store's error translation (GroupMetadataManager.storeGroup) ---------------------------

KAFKA_TRANSLATION = {
    "NONE": "NONE",
    "UNKNOWN_TOPIC_OR_PARTITION": "COORDINATOR_NOT_AVAILABLE",
    "NOT_ENOUGH_REPLICAS": "COORDINATOR_NOT_AVAILABLE",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": "COORDINATOR_NOT_AVAILABLE",
    "NOT_LEADER_OR_FOLLOWER": "NOT_COORDINATOR",
    "KAFKA_STORAGE_ERROR": "NOT_COORDINATOR",
    "REQUEST_TIMED_OUT": "REBALANCE_IN_PROGRESS",
    "MESSAGE_TOO_LARGE": "UNKNOWN_SERVER_ERROR",
    "RECORD_LIST_TOO_LARGE": "UNKNOWN_SERVER_ERROR",
    "INVALID_FETCH_SIZE": "UNKNOWN_SERVER_ERROR",
}


@pytest.mark.parametrize("append, seen", sorted(KAFKA_TRANSLATION.items()))
def test_deferred_store_translates_the_append_error(append: str, seen: str) -> None:
    inner = InMemoryGroupStore()
    store = DeferredGroupStore(inner)
    record = StoredGroup("g", 1, "consumer", "range", None, ())
    got: list[Errors] = []
    store.store_group(record, got.append)
    assert got == [] and store.pending_for("g") == 1 and store.pending_for("h") == 0
    assert not store.complete_next("h", Errors.NONE)
    assert store.complete_next("g", Errors[append])
    assert [e.name for e in got] == [seen]
    assert coordinator_error_for_append(Errors[append]).name == seen
    # only a successful append is what a later load reads
    assert (inner.load_group("g") is not None) == (append == "NONE")
    assert not store.complete_next("g", Errors.NONE)
