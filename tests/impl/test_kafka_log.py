"""The coordinator's Kafka-layout log: silent and cheap by default, Kafka's lines and layout
when asked for, the offsets partition as Kafka computes it."""

from __future__ import annotations

import io
import logging
import re

from kgc.impl.clock import VirtualClock
from kgc.impl.coordinator import GroupConfig, GroupCoordinator
from kgc.impl.kafka_log import COORDINATOR, kafka_log_to, partition_for
from kgc.impl.timer import SystemTimer


def _java_hash(text: str) -> int:
    h = 0
    for ch in text:  # BMP characters: one UTF-16 unit each
        h = (h * 31 + ord(ch)) % 2**32
    return h - 2**32 if h >= 2**31 else h


def test_partition_for_is_kafkas() -> None:
    for group in ("g", "my-group", "test-consumer-group", "connect-cluster", "ünïcode-grüppe"):
        assert partition_for(group) == (_java_hash(group) & 0x7FFFFFFF) % 50
    assert partition_for("g") == 3  # "g".hashCode() == 103
    assert partition_for("𝄞") == (((0xD834 * 31) + 0xDD1E) & 0x7FFFFFFF) % 50  # a surrogate pair: two units


def _join_one(coordinator: GroupCoordinator, clock: VirtualClock) -> None:
    answers: list[object] = []
    coordinator.handle_join_group(
        "g", "", None, False, "c", "/10.0.0.1", 10_000, 10_000, "consumer", [("range", "")], answers.append
    )
    coordinator.timer.advance_to(5000)


def test_silent_by_default_and_kafka_lines_when_asked(capsys: object) -> None:
    assert not COORDINATOR.isEnabledFor(logging.INFO)
    clock = VirtualClock(0)
    coordinator = GroupCoordinator(GroupConfig(), clock, SystemTimer(clock), broker_id=7)
    stream = io.StringIO()
    with kafka_log_to(stream):
        _join_one(coordinator, clock)
    lines = stream.getvalue().splitlines()
    assert lines, "no line written"
    layout = re.compile(
        r"^\[1970-01-01 00:00:0\d,\d{3}\] INFO \[GroupCoordinator 7\]: .+ \(kafka\.coordinator\.group\.GroupCoordinator\)$"
    )
    assert all(layout.match(line) for line in lines), lines
    text = "\n".join(lines)
    assert (
        "Preparing to rebalance group g in state PreparingRebalance with old generation 0 (__consumer_offsets-3)"
        in text
    )
    assert "Stabilized group g generation 1 (__consumer_offsets-3) with 1 members" in text
    assert not COORDINATOR.isEnabledFor(logging.INFO)  # restored
