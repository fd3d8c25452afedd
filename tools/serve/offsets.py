"""Committed offsets that survive a restart of `kgc serve --store PATH` (kept in PATH.offsets).

Kafka keeps offsets in the same __consumer_offsets log as group metadata; kgc.impl's store holds
only group metadata (the coordinator keeps offsets in memory), so the server keeps them beside
it: one line per committed partition (JSON: group, partition, offset) appended and fsynced
before the OffsetCommit is answered, read back on start (the last line per partition wins; a
torn last line, from a crash in the middle of a write, is dropped and cut off).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

__all__ = ["OffsetLog"]

log = logging.getLogger("kgc.serve")


class OffsetLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.offsets: dict[str, dict[str, int]] = {}
        good = 0
        if path.exists():
            data = path.read_bytes()
            for line in data.splitlines(keepends=True):
                try:
                    if not line.endswith(b"\n"):
                        raise ValueError("torn")
                    rec = json.loads(line)
                    self.offsets.setdefault(str(rec["g"]), {})[str(rec["p"])] = int(rec["o"])
                except (ValueError, KeyError, TypeError):
                    log.warning(
                        "%s: offset %d: dropped a torn or corrupt tail of %d bytes", path, good, len(data) - good
                    )
                    break
                good += len(line)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        os.ftruncate(self._fd, good)

    def append(self, group: str, offsets: dict[str, int]) -> None:
        """Make the offsets durable (before the commit is answered)."""
        blob = b"".join(
            json.dumps({"g": group, "p": p, "o": o}, separators=(",", ":")).encode() + b"\n" for p, o in offsets.items()
        )
        view = memoryview(blob)
        while view:
            view = view[os.write(self._fd, view) :]
        os.fsync(self._fd)
        self.offsets.setdefault(group, {}).update(offsets)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
