"""Kafka 3.9's coordinator log lines, written by the Python coordinator through `logging`.

Why: after an incident people have broker logs, and `kgc pipeline logs` reads them; a coordinator
that logs what Kafka logs lets kgc's own runs (replay, a seeded-bug coordinator) be read back and
checked the same way. The loggers have Kafka's names (`kafka.coordinator.group.GroupCoordinator`,
`...GroupMetadataManager`, `...GroupMetadata$`) and the layout is Kafka's log4j one:

    [2024-01-01 00:00:03,000] INFO [GroupCoordinator 0]: Stabilized group g generation 1 (...) (kafka.coordinator.group.GroupCoordinator)

The time is the coordinator's clock (virtual in tests), passed as `extra={"kafka_ms": ...}`.
Nothing is formatted unless a handler asked for INFO: the loggers are silent by default (a
NullHandler keeps Python's last-resort handler from printing WARN/ERROR lines to stderr).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

__all__ = [
    "COORDINATOR",
    "GROUP_METADATA",
    "KafkaLayout",
    "METADATA_MANAGER",
    "kafka_log_to",
    "partition_for",
]

ROOT = "kafka.coordinator.group"
COORDINATOR = logging.getLogger(f"{ROOT}.GroupCoordinator")
METADATA_MANAGER = logging.getLogger(f"{ROOT}.GroupMetadataManager")
GROUP_METADATA = logging.getLogger(f"{ROOT}.GroupMetadata$")
logging.getLogger(ROOT).addHandler(logging.NullHandler())

#: offsets.topic.num.partitions' default.
OFFSETS_PARTITIONS = 50


def partition_for(group_id: str, partitions: int = OFFSETS_PARTITIONS) -> int:
    """GroupMetadataManager.partitionFor: Utils.abs(groupId.hashCode) % partitions, with Java's
    String.hashCode over UTF-16 code units."""
    h = 0
    for unit in group_id.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return (h & 0x7FFFFFFF) % partitions


class KafkaLayout(logging.Formatter):
    """log4j's `[%d] %p %m (%c)%n` with the coordinator's clock as the time (plus `base_ms`, so
    runs on virtual clocks that all start at 0 can follow one another in one file)."""

    base_ms = 0

    def format(self, record: logging.LogRecord) -> str:
        ms = getattr(record, "kafka_ms", None)
        if ms is not None:
            ms += self.base_ms
        stamp = (
            datetime.fromtimestamp(ms / 1000, UTC) if ms is not None else datetime.fromtimestamp(record.created, UTC)
        )
        text = stamp.strftime("%Y-%m-%d %H:%M:%S,") + f"{stamp.microsecond // 1000:03d}"
        level = "WARN" if record.levelname == "WARNING" else record.levelname
        return f"[{text}] {level} {record.getMessage()} ({record.name})"


@contextmanager
def kafka_log_to(target: Path | TextIO, debug: bool = False) -> Iterator[logging.Handler]:
    """Write the coordinator's INFO (and worse; with `debug`, also the few DEBUG lines it has,
    such as a failed metadata write) to a file or stream while inside."""
    handler: logging.Handler
    if isinstance(target, Path):
        handler = logging.FileHandler(target, mode="w", encoding="utf-8")
    else:
        handler = logging.StreamHandler(target)
    handler.setFormatter(KafkaLayout())
    root = logging.getLogger(ROOT)
    previous = root.level
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
        handler.close()
