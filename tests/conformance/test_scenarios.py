"""The scenario contract end to end: every scenario in conformance/scenarios/ and the contract's
example pass against the Python coordinator; malformed files are rejected (exit 2) naming the
file and the step; a wrong expectation fails (exit 1) naming the step."""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kgc.conformance.scenario import ScenarioError, load_scenario, loads_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "conformance" / "scenarios").glob("*.json"))
CONTRACT_EXAMPLES = sorted((ROOT / "docs" / "contract-examples").glob("*.json"))
KGC = Path(sys.executable).with_name("kgc")

have_coordinator = importlib.util.find_spec("kgc.impl.coordinator") is not None
needs_coordinator = pytest.mark.skipif(not have_coordinator, reason="kgc.impl.coordinator not written yet")
have_cli = importlib.util.find_spec("kgc.tools.cli") is not None and KGC.exists()
needs_cli = pytest.mark.skipif(not have_cli, reason="kgc.tools.cli not written yet")

# A small valid scenario the malformed cases are cut from: step indexes below refer to it.
BASE: dict[str, Any] = {
    "format": 1,
    "name": "base",
    "source": "test fixture",
    "config": {"min_session_timeout_ms": 10},
    "steps": [
        {"do": "join", "id": "a1", "group": "g", "session_timeout_ms": 1000},  # 0
        {"expect": "a1", "pending": True},  # 1
        {"do": "tick", "ms": 0},  # 2
        {"expect": "a1", "error": "NONE", "generation": 1, "leader": "@a1"},  # 3
        {"do": "sync", "id": "s1", "group": "g", "member": "@a1", "generation": 1, "assignment": {"@a1": "p0"}},  # 4
        {"expect": "s1", "error": "NONE", "assignment": "p0"},  # 5
        {"do": "heartbeat", "id": "h1", "group": "g", "member": "@a1", "generation": 1},  # 6
        {"expect": "h1", "error": "NONE"},  # 7
        {"expect_state": "g", "state": "Stable", "generation": 1, "members": ["@a1"]},  # 8
    ],
}


def scenario_with(**edits: Any) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    for key, value in edits.items():
        doc[key] = value
    return doc


def steps_with(index: int, step: Any) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    doc["steps"][index] = step
    return doc


def write(tmp_path: Path, doc: Any, name: str = "s.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return path


def rejected(tmp_path: Path, doc: Any) -> ScenarioError:
    path = write(tmp_path, doc)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.file == str(path)
    assert str(path) in str(info.value)
    return info.value


# --- the format, without running anything --------------------------------------------------


def test_base_fixture_is_valid(tmp_path: Path) -> None:
    s = load_scenario(write(tmp_path, BASE))
    assert s.name == "base" and len(s.steps) == 9
    assert s.config.min_session_timeout_ms == 10
    # contract defaults, including an initial rebalance delay of 0 (not the broker's 3000)
    assert s.config.max_session_timeout_ms == 1800000
    assert s.config.initial_rebalance_delay_ms == 0
    assert s.config.max_group_size is None


def test_join_defaults_follow_the_contract() -> None:
    s = loads_scenario(
        json.dumps(scenario_with(steps=[{"do": "join", "id": "a", "group": "g", "session_timeout_ms": 7000}]))
    )
    j = s.steps[0]
    assert (j.member, j.client, j.instance, j.protocol_type, j.require_known_member) == (
        "",
        "client",
        None,
        "consumer",
        False,
    )
    assert j.protocols == (("range", ""),)
    assert j.rebalance_timeout_ms == 7000  # same as session when not given
    s = loads_scenario(json.dumps(scenario_with(steps=[{"do": "join", "id": "a", "group": "g"}])))
    assert (s.steps[0].session_timeout_ms, s.steps[0].rebalance_timeout_ms) == (10000, 10000)


def test_unknown_top_level_keys_are_ignored(tmp_path: Path) -> None:
    load_scenario(write(tmp_path, scenario_with(comment="free text", x_tool={"v": 3})))


def test_bad_json(tmp_path: Path) -> None:
    e = rejected(tmp_path, '{"format": 1, "steps": [')
    assert e.step is None and "invalid JSON" in e.message


def test_nan_is_not_json(tmp_path: Path) -> None:
    e = rejected(tmp_path, json.dumps(steps_with(2, {"do": "tick", "ms": 1})).replace('"ms": 1', '"ms": NaN'))
    assert "NaN" in e.message


@pytest.mark.parametrize(
    "doc, what",
    [
        ({"name": "x", "steps": []}, "format"),
        ({"format": 3, "steps": []}, "format"),
        ({"format": "1", "steps": []}, "format"),
        ({"format": 1}, "steps"),
        ({"format": 1, "steps": {}}, "steps"),
        ({"format": 1, "steps": [], "config": []}, "config"),
        ({"format": 1, "steps": [], "config": {"initial_rebalance_delay": 5}}, "initial_rebalance_delay"),
        ({"format": 1, "steps": [], "config": {"max_group_size": 0}}, "max_group_size"),
        ({"format": 1, "steps": [], "config": {"min_session_timeout_ms": "6000"}}, "min_session_timeout_ms"),
        ({"format": 1, "steps": [], "name": 5}, "name"),
        ([1, 2], "object"),
    ],
)
def test_bad_top_level(tmp_path: Path, doc: Any, what: str) -> None:
    e = rejected(tmp_path, doc)
    assert e.step is None and what in e.message


@pytest.mark.parametrize(
    "index, step, what",
    [
        (2, {"do": "sleep", "ms": 5}, "unknown `do`"),
        (2, {"do": 3}, "unknown `do`"),
        (2, {"do": "tick", "ms": 5, "id": "t"}, "unknown key(s) id"),
        (
            6,
            {"do": "heartbeat", "id": "h1", "group": "g", "member": "@a1", "generation": 1, "instance": "i"},
            "instance is format 2",
        ),
        (3, {"expect": "a1", "eror": "NONE"}, "unknown key(s) eror"),
        (8, {"expect_state": "g", "status": "Stable"}, "unknown key(s) status"),
        (2, {"ms": 5}, "exactly one of"),
        (2, {"do": "tick", "ms": 5, "expect": "a1"}, "exactly one of"),
        (3, {"expect": "a1", "expect_state": "g"}, "exactly one of"),
        (2, "tick", "must be an object"),
    ],
)
def test_bad_step_shape(tmp_path: Path, index: int, step: Any, what: str) -> None:
    e = rejected(tmp_path, steps_with(index, step))
    assert e.step == index and what in e.message


@pytest.mark.parametrize(
    "index, step, what",
    [
        (0, {"do": "join", "id": "a1", "session_timeout_ms": 1000}, "group"),
        (0, {"do": "join", "group": "g"}, "id"),
        (4, {"do": "sync", "id": "s1", "group": "g", "member": "@a1"}, "generation"),
        (6, {"do": "heartbeat", "id": "h1", "group": "g", "generation": 1}, "member"),
        (2, {"do": "tick"}, "ms"),
        (2, {"do": "unload"}, "group"),
        (2, {"do": "load"}, "group"),
        (6, {"do": "leave", "id": "h1", "group": "g"}, "member"),
    ],
)
def test_missing_required_key(tmp_path: Path, index: int, step: Any, what: str) -> None:
    e = rejected(tmp_path, steps_with(index, step))
    assert e.step == index and "missing required key" in e.message and what in e.message


@pytest.mark.parametrize(
    "index, step, key",
    [
        (0, {"do": "join", "id": "a1", "group": "g", "session_timeout_ms": "1000"}, "session_timeout_ms"),
        (0, {"do": "join", "id": "a1", "group": "g", "session_timeout_ms": 1000.5}, "session_timeout_ms"),
        (0, {"do": "join", "id": "a1", "group": "g", "rebalance_timeout_ms": True}, "rebalance_timeout_ms"),
        (0, {"do": "join", "id": "a1", "group": "g", "require_known_member": "yes"}, "require_known_member"),
        (0, {"do": "join", "id": "a1", "group": "g", "protocols": [["range"]]}, "protocols"),
        (0, {"do": "join", "id": "a1", "group": "g", "protocols": "range"}, "protocols"),
        (0, {"do": "join", "id": "a1", "group": "g", "instance": 7}, "instance"),
        (0, {"do": "join", "id": "a1", "group": 1}, "group"),
        (0, {"do": "join", "id": 1, "group": "g"}, "id"),
        (0, {"do": "join", "id": "a1", "group": "g", "member": None}, "member"),
        (4, {"do": "sync", "id": "s1", "group": "g", "member": "@a1", "generation": "1"}, "generation"),
        (
            4,
            {"do": "sync", "id": "s1", "group": "g", "member": "@a1", "generation": 1, "assignment": [["@a1", "p0"]]},
            "assignment",
        ),
        (
            4,
            {"do": "sync", "id": "s1", "group": "g", "member": "@a1", "generation": 1, "assignment": {"@a1": 0}},
            "assignment",
        ),
        (2, {"do": "tick", "ms": -1}, "ms"),
        (2, {"do": "tick", "ms": "5"}, "ms"),
        (3, {"expect": "a1", "error": "OOPS"}, "error"),
        (3, {"expect": "a1", "error": 0}, "error"),
        (3, {"expect": "a1", "generation": "1"}, "generation"),
        (3, {"expect": "a1", "pending": "no"}, "pending"),
        (3, {"expect": "a1", "members": "@a1"}, "members"),
        (3, {"expect": 3, "error": "NONE"}, "expect"),
        (8, {"expect_state": "g", "state": "Rebalancing"}, "state"),
        (8, {"expect_state": "g", "member_count": -1}, "member_count"),
        (8, {"expect_state": "g", "pending_count": "0"}, "pending_count"),
    ],
)
def test_wrong_type(tmp_path: Path, index: int, step: Any, key: str) -> None:
    e = rejected(tmp_path, steps_with(index, step))
    assert e.step == index and key in e.message


def test_duplicate_request_id(tmp_path: Path) -> None:
    e = rejected(
        tmp_path, steps_with(6, {"do": "heartbeat", "id": "a1", "group": "g", "member": "@a1", "generation": 1})
    )
    assert e.step == 6 and "duplicate request id 'a1'" in e.message


def test_duplicate_key_in_a_step(tmp_path: Path) -> None:
    text = json.dumps(BASE).replace('{"do": "tick", "ms": 0}', '{"do": "tick", "ms": 0, "ms": 5}')
    e = rejected(tmp_path, text)
    assert e.step == 2 and "written twice" in e.message


@pytest.mark.parametrize(
    "index, step, what",
    [
        (6, {"do": "heartbeat", "id": "h1", "group": "g", "member": "@zz", "generation": 1}, "does not exist"),
        (6, {"do": "heartbeat", "id": "h1", "group": "g", "member": "@", "generation": 1}, "names no request"),
        (
            4,
            {"do": "sync", "id": "s1", "group": "g", "member": "@a1", "generation": 1, "assignment": {"@nobody": "p0"}},
            "does not exist",
        ),
        (8, {"expect_state": "g", "leader": "@ghost"}, "does not exist"),
        (3, {"expect": "a1", "members": ["@a1", "@ghost"]}, "does not exist"),
        # a reference to a join that is only sent later cannot have been answered: caught statically
        (0, {"do": "join", "id": "a1", "group": "g", "member": "@a2"}, "does not exist"),
        (1, {"do": "heartbeat", "id": "hx", "group": "g", "member": "@h1", "generation": 1}, "sent only later"),
        # a reference must name a join: a heartbeat response carries no member id
        (8, {"do": "leave", "id": "l1", "group": "g", "member": "@h1"}, "is not a join"),
        (8, {"expect_state": "g", "members": ["@s1"]}, "is not a join"),
    ],
)
def test_bad_member_reference(tmp_path: Path, index: int, step: Any, what: str) -> None:
    e = rejected(tmp_path, steps_with(index, step))
    assert e.step == index and what in e.message


@pytest.mark.parametrize(
    "index, step, what",
    [
        (1, {"expect": "zz", "pending": True}, "does not exist"),
        (1, {"expect": "s1", "pending": True}, "sent only in a later step"),
        (3, {"expect": "a1", "assignment": "p0"}, "cannot be checked on the response to a `join`"),
        (5, {"expect": "s1", "generation": 1}, "cannot be checked on the response to a `sync`"),
        (7, {"expect": "h1", "members": []}, "cannot be checked on the response to a `heartbeat`"),
        (3, {"expect": "a1", "pending": True, "error": "NONE"}, "pending: true"),
    ],
)
def test_bad_expect(tmp_path: Path, index: int, step: Any, what: str) -> None:
    e = rejected(tmp_path, steps_with(index, step))
    assert e.step == index and what in e.message


def test_error_message_names_file_and_step(tmp_path: Path) -> None:
    path = write(tmp_path, steps_with(2, {"do": "sleep"}))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value).startswith(f"{path}: step 2: unknown `do`")


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(tmp_path / "nope.json")
    assert "cannot read" in info.value.message


# --- the scenario suite against the coordinator -----------------------------------------


def test_there_are_enough_scenarios() -> None:
    assert len(SCENARIOS) >= 35
    for path in SCENARIOS:
        s = load_scenario(path)
        assert s.name == path.stem, f"{path.name}: name should match the file name"
        assert len(s.source) > 20, f"{path.name}: source must say where the expectation comes from"


@needs_coordinator
@pytest.mark.parametrize("path", SCENARIOS + CONTRACT_EXAMPLES, ids=lambda p: p.stem)
def test_scenario_passes(path: Path) -> None:
    from kgc.conformance.replay import run_scenario

    result = run_scenario(load_scenario(path))
    assert result.passed, f"{path.name}: {result.failure}"


@needs_coordinator
def test_wrong_expectation_fails_naming_the_step(tmp_path: Path) -> None:
    from kgc.conformance.replay import run_scenario

    doc = steps_with(5, {"expect": "s1", "error": "NONE", "assignment": "p1"})
    result = run_scenario(load_scenario(write(tmp_path, doc)))
    assert not result.passed
    assert result.failure.step == 5
    assert "'p1'" in result.failure.expected and "'p0'" in result.failure.seen


@needs_coordinator
def test_runner_stops_at_the_first_failing_step(tmp_path: Path) -> None:
    from kgc.conformance.replay import run_scenario

    doc = copy.deepcopy(BASE)
    doc["steps"][3] = {"expect": "a1", "generation": 7}
    doc["steps"][8] = {"expect_state": "g", "state": "Empty"}
    result = run_scenario(load_scenario(write(tmp_path, doc)))
    assert result.failure is not None and result.failure.step == 3


@needs_coordinator
def test_reference_to_a_join_not_answered_yet_is_invalid(tmp_path: Path) -> None:
    from kgc.conformance.replay import run_scenario

    doc = copy.deepcopy(BASE)
    # a1 waits in the join purgatory until the tick at step 2: using @a1 before it is an error
    doc["steps"][1] = {"do": "heartbeat", "id": "early", "group": "g", "member": "@a1", "generation": 0}
    with pytest.raises(ScenarioError) as info:
        run_scenario(load_scenario(write(tmp_path, doc)))
    assert info.value.step == 1 and "no response yet" in info.value.message


@needs_coordinator
def test_pending_expectation_checks_the_delivery(tmp_path: Path) -> None:
    from kgc.conformance.replay import run_scenario

    doc = steps_with(3, {"expect": "a1", "pending": True})  # it was answered during the tick
    result = run_scenario(load_scenario(write(tmp_path, doc)))
    assert result.failure is not None and result.failure.step == 3
    assert "no response" not in result.failure.seen


# --- `kgc replay` as a subprocess --------------------------------------------------------


def run_kgc(*files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KGC), "replay", *map(str, files)], capture_output=True, text=True, timeout=120)


@needs_cli
def test_cli_bad_json_exits_2(tmp_path: Path) -> None:
    path = write(tmp_path, '{"format": 1,,}', "broken.json")
    out = run_kgc(path)
    assert out.returncode == 2
    assert out.stdout.strip().startswith(f"ERROR {path}: invalid JSON")


@needs_cli
def test_cli_unknown_do_exits_2_naming_the_step(tmp_path: Path) -> None:
    path = write(tmp_path, steps_with(2, {"do": "rebalance"}), "unknown-do.json")
    out = run_kgc(path)
    assert out.returncode == 2
    assert out.stdout.strip().startswith(f"ERROR {path}: step 2: unknown `do`")


@needs_cli
@needs_coordinator
def test_cli_reference_to_pending_join_exits_2(tmp_path: Path) -> None:
    doc = copy.deepcopy(BASE)
    doc["steps"][1] = {"do": "leave", "id": "early", "group": "g", "member": "@a1"}
    path = write(tmp_path, doc, "early-ref.json")
    out = run_kgc(path)
    assert out.returncode == 2
    assert out.stdout.strip().startswith(f"ERROR {path}: step 1: member reference @a1")


@needs_cli
@needs_coordinator
def test_cli_mixed_files(tmp_path: Path) -> None:
    good = write(tmp_path, BASE, "good.json")
    bad = write(tmp_path, steps_with(7, {"expect": "h1", "error": "ILLEGAL_GENERATION"}), "wrong.json")
    broken = write(
        tmp_path,
        steps_with(6, {"do": "heartbeat", "id": "a1", "group": "g", "member": "@a1", "generation": 1}),
        "dup.json",
    )
    out = run_kgc(good, bad)
    assert out.returncode == 1
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "PASS base"
    assert lines[1].startswith("FAIL base: step 7: expected ") and "ILLEGAL_GENERATION" in lines[1]
    out = run_kgc(good, broken, bad)
    assert out.returncode == 2
    assert [line.split()[0] for line in out.stdout.strip().splitlines()] == ["PASS", "ERROR", "FAIL"]
    out = run_kgc(good)
    assert (out.returncode, out.stdout.strip()) == (0, "PASS base")


@needs_cli
@needs_coordinator
def test_cli_runs_the_suite() -> None:
    out = run_kgc(*SCENARIOS, *CONTRACT_EXAMPLES)
    assert out.returncode == 0, out.stdout + out.stderr
    assert len(out.stdout.strip().splitlines()) == len(SCENARIOS) + len(CONTRACT_EXAMPLES)


@needs_cli
@pytest.mark.parametrize(
    "index, step, what",
    [
        (0, {"do": "join", "id": "a1", "session_timeout_ms": 1000}, "missing required key(s) group"),
        (2, {"do": "tick", "ms": "5"}, "`ms` must be an integer"),
        (
            6,
            {"do": "heartbeat", "id": "a1", "group": "g", "member": "@a1", "generation": 1},
            "duplicate request id 'a1'",
        ),
        (
            6,
            {"do": "heartbeat", "id": "h1", "group": "g", "member": "@nobody", "generation": 1},
            "member reference @nobody",
        ),
        (8, {"do": "leave", "id": "l1", "group": "g", "member": "@s1"}, "is not a join"),
        (3, {"expect": "a1", "eror": "NONE"}, "unknown key(s) eror"),
    ],
)
def test_cli_malformed_step_exits_2_naming_file_and_step(tmp_path: Path, index: int, step: Any, what: str) -> None:
    path = write(tmp_path, steps_with(index, step), "malformed.json")
    out = run_kgc(path)
    assert out.returncode == 2, out.stdout + out.stderr
    line = out.stdout.strip()
    assert line.startswith(f"ERROR {path}: step {index}: ") and what in line


@needs_cli
@needs_coordinator
def test_cli_wrong_expectation_in_a_suite_file_exits_1_naming_the_step(tmp_path: Path) -> None:
    """Take a real scenario, change the expected generation of its first checked join response:
    the replay must fail at exactly that step (and not earlier or later)."""
    source = ROOT / "conformance" / "scenarios" / "stable-leave.json"
    doc = json.loads(source.read_text(encoding="utf-8"))
    index = next(i for i, s in enumerate(doc["steps"]) if "expect" in s and "generation" in s)
    doc["steps"][index]["generation"] += 10
    path = write(tmp_path, doc, "stable-leave.json")
    out = run_kgc(path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert out.stdout.strip().startswith(f"FAIL stable-leave: step {index}: expected ")
    assert "generation=" in out.stdout


def test_suite_files_are_distinct_and_cite_kafka() -> None:
    """Every suite file says where its expectations come from in Kafka 3.x (a GroupCoordinator /
    GroupMetadata / delayed-operation function, or a GroupCoordinatorTest test)."""
    markers = (
        "GroupCoordinator",
        "GroupMetadata",
        "InitialDelayedJoin",
        "DelayedJoin",
        "MemberMetadata",
        "GroupCoordinatorTest",
    )
    seen: dict[str, str] = {}
    for path in SCENARIOS:
        s = load_scenario(path)
        assert any(m in s.source for m in markers), f"{path.name}: source cites no Kafka code"
        body = json.dumps(json.loads(path.read_text(encoding="utf-8"))["steps"], sort_keys=True)
        assert body not in seen, f"{path.name} repeats the steps of {seen.get(body)}"
        seen[body] = path.name
