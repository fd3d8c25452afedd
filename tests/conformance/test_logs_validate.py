"""`--validate`'s partial traces: which log lines become observations, where a history is cut,
and TLC's verdicts on small histories (spec/LogTraceGroupCoordinator.tla, a real TLC run)."""

from __future__ import annotations

import pytest

from kgc.conformance.pipeline.logs_history import Event
from kgc.conformance.pipeline.logs_validate import (
    EXPLAINED,
    MAX_OBSERVATIONS,
    TOO_LONG,
    UNEXPLAINED,
    build_data,
    observations,
    segments,
    validate_groups,
    verdict_finding,
)


def ev(line: int, kind: str, generation: int | None = None, *, broker: str = "1", **kw: object) -> Event:
    return Event("f.log", line, "", broker, kind, "g", generation, text=f"line {line}", **kw)  # type: ignore[arg-type]


def test_observations_keep_what_the_spec_logs() -> None:
    events = [
        ev(1, "loaded_member", 4),
        ev(2, "loaded_member", 4),
        ev(3, "loaded", 4),
        ev(4, "member_expired"),
        ev(5, "prepare", 4),
        ev(6, "stabilized", 5, members=2),
        ev(7, "store_error", 5),
    ]
    seen = observations(events)
    assert [(o.kind, o.generation, o.members) for o in seen] == [
        ("loaded", 4, -1),
        ("prepare", 4, -1),
        ("stabilized", 5, 2),
    ]
    big = observations([ev(1, "stabilized", 5, members=40)])
    assert big[0].members == -1  # more members than the model's consumers: not compared


def test_histories_are_cut_at_a_new_broker_and_after_a_deletion() -> None:
    events = [ev(1, "prepare", 1), ev(2, "dead", 2), ev(3, "prepare", 0), ev(4, "prepare", 7, broker="2")]
    assert [[e.line for e in piece] for piece in segments(events)] == [[1], [3], [4]]


def test_data_module_bounds_the_prefix_by_the_first_observation() -> None:
    module, cfg = build_data([observations([ev(1, "stabilized", 3, members=2)]), observations([ev(1, "prepare", 0)])])
    assert "PrefixSteps == <<1, 0>>" in module
    assert '[k |-> "stabilized", g |-> 3, n |-> 2]' in module
    assert "Clients = {c1, c2}" in cfg and "NumIds = 4" in cfg and "MaxFailovers = 0" in cfg
    module, cfg = build_data([observations([ev(1, "prepare", 1)])], clients=1, prefix=2)
    assert "PrefixSteps == <<2>>" in module
    assert "Clients = {c1}" in cfg and "NumIds = 3" in cfg and "SYMMETRY" not in cfg


@pytest.mark.slow
def test_tlc_explains_partial_histories_and_finds_the_first_impossible_line() -> None:
    normal = [
        ev(1, "prepare", 5),
        ev(2, "stabilized", 6, members=2),
        ev(3, "assignment", 6),
        ev(4, "member_expired"),
        ev(5, "prepare", 6),
        ev(6, "stabilized", 7, members=1),
    ]
    mid_rebalance = [
        ev(1, "stabilized", 41, members=1),
        ev(2, "assignment", 41),
        ev(3, "prepare", 41),
        ev(4, "empty", 42),
    ]
    not_bumped = [ev(1, "prepare", 5), ev(2, "stabilized", 6, members=1), ev(3, "prepare", 6), ev(4, "stabilized", 6)]
    skipped = [ev(1, "prepare", 5), ev(2, "stabilized", 7, members=1)]
    # logs_corpus/kafkajs-633-kibana-2.x.log's group: the excerpt starts where a member of
    # generation 1 expires, the group then empties. Explained by the second run a history that
    # starts mid-life gets (the first, with no logged step before its first line, cannot).
    kibana = [ev(3, "member_expired"), ev(5, "prepare", 1), ev(7, "empty", 2)]
    long = [ev(n, "prepare" if n % 2 else "stabilized", n // 2, members=1) for n in range(1, MAX_OBSERVATIONS + 3)]
    verdicts = validate_groups(
        [
            ("normal", normal),
            ("mid", mid_rebalance),
            ("kibana", kibana),
            ("bumped", not_bumped),
            ("skipped", skipped),
            ("long", long),
        ]
    )
    got = {v.group: (v.verdict, v.index) for v in verdicts}
    assert got == {
        "normal": (EXPLAINED, 0),
        "mid": (EXPLAINED, 0),
        "kibana": (EXPLAINED, 0),
        "bumped": (UNEXPLAINED, 4),
        "skipped": (UNEXPLAINED, 2),
        "long": (TOO_LONG, 0),
    }
    finding = verdict_finding(next(v for v in verdicts if v.group == "bumped"))
    assert finding is not None and (finding.kind, finding.rule, finding.line) == (
        "unexplained",
        "not_a_spec_behaviour",
        4,
    )
    assert "at event 4 (stabilized)" in finding.message
