"""A group store that survives a crash: group-metadata records appended to a file, the way Kafka
keeps them in the __consumer_offsets log (GroupMetadataManager.storeGroup appends, and the
SyncGroup is answered only once the append is acknowledged).

Why a file of our own and not a database: the point is to behave like Kafka's log (append,
acknowledge after the data is durable, recover the last record per key, compact old records),
so a crash test can check exactly the guarantee Kafka gives: every acknowledged SyncGroup
survives. A small append-only format keeps that guarantee visible and testable byte by byte.

File layout: an 8-byte magic, then records. A record is a 4-byte big-endian payload length, a
4-byte CRC-32 of the payload, and the payload: one StoredGroup as compact JSON. The callback of
`store_group` runs only after `os.fsync` returned. Recovery reads records until the first one
that is torn (the file ends inside it) or corrupt (bad length or CRC), keeps the last valid
record per group, truncates the file back to the valid prefix and reports what it discarded.
Compaction rewrites the file with one record per group into a temporary file, fsyncs it and
renames it over the old one, so a crash during compaction leaves one complete file or the other.
"""

from __future__ import annotations

import dataclasses
import json
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgc.impl.errors import Errors
from kgc.impl.store import StoreCallback, StoredGroup, StoredMember

__all__ = ["MAGIC", "MAX_RECORD_BYTES", "FileGroupStore", "RecoveryReport", "decode_record", "encode_record"]

MAGIC = b"KGCGRP01"
_HEADER = struct.Struct(">II")
# Kafka's default max.message.bytes is ~1 MiB; a group record larger than this is refused the
# way Kafka refuses it (MESSAGE_TOO_LARGE, which storeGroup turns into UNKNOWN_SERVER_ERROR), and
# a length field above it while reading is corruption, not a record.
MAX_RECORD_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class RecoveryReport:
    """What opening the file found: how much was valid and what was thrown away, and why."""

    path: str
    records: int
    groups: int
    valid_bytes: int
    discarded_bytes: int
    problem: str | None  # "offset N: torn record (...)" / "offset N: CRC mismatch" / None

    def summary(self) -> str:
        text = f"{self.path}: recovered {self.groups} group(s) from {self.records} record(s), {self.valid_bytes} bytes"
        if self.problem:
            text += f"; discarded {self.discarded_bytes} bytes from {self.problem}"
        return text


def encode_record(record: StoredGroup) -> bytes:
    payload = json.dumps(dataclasses.asdict(record), separators=(",", ":"), sort_keys=True).encode()
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def decode_record(payload: bytes) -> StoredGroup:
    raw: dict[str, Any] = json.loads(payload)
    members = tuple(StoredMember(**m) for m in raw.pop("members"))
    return StoredGroup(members=members, **raw)


def _scan(data: bytes) -> tuple[dict[str, StoredGroup], int, int, str | None]:
    """The last record per group in `data`, the count of valid records, the length of the valid
    prefix, and the problem that ended the scan (None when the whole file was valid)."""
    groups: dict[str, StoredGroup] = {}
    if len(data) < len(MAGIC):
        return groups, 0, 0, (f"offset 0: torn header ({len(data)} of {len(MAGIC)} bytes)" if data else None)
    if data[: len(MAGIC)] != MAGIC:
        return groups, 0, 0, "offset 0: not a kgc group store (bad magic)"
    offset, count = len(MAGIC), 0
    while offset < len(data):
        if offset + _HEADER.size > len(data):
            return groups, count, offset, f"offset {offset}: torn record header"
        length, crc = _HEADER.unpack_from(data, offset)
        if length > MAX_RECORD_BYTES:
            return groups, count, offset, f"offset {offset}: record length {length} over {MAX_RECORD_BYTES}"
        end = offset + _HEADER.size + length
        if end > len(data):
            return groups, count, offset, f"offset {offset}: torn record ({len(data) - offset} of {end - offset} bytes)"
        payload = data[offset + _HEADER.size : end]
        if zlib.crc32(payload) != crc:
            return groups, count, offset, f"offset {offset}: CRC mismatch"
        try:
            record = decode_record(payload)
        except (ValueError, TypeError, KeyError, AttributeError) as err:
            return groups, count, offset, f"offset {offset}: undecodable record ({type(err).__name__})"
        groups[record.group_id] = record
        count += 1
        offset = end
    return groups, count, offset, None


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FileGroupStore:
    """The durable GroupStore. Not thread-safe: the coordinator calls it from one thread.

    `compact_ratio`: compact when the file holds more than this many records per live group
    (and at least `compact_min_records`), as Kafka's log cleaner keeps only the last record per
    key. `fsync=False` is for benchmarks only; it gives up the guarantee this class exists for.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, compact_ratio: int = 4, compact_min_records: int = 64, fsync: bool = True
    ) -> None:
        self.path = Path(path)
        self.compact_ratio = compact_ratio
        self.compact_min_records = compact_min_records
        self.fsync = fsync
        self.writes = 0
        self.compactions = 0
        self.compaction_failures = 0
        self._records: dict[str, StoredGroup] = {}
        self._records_in_file = 0
        self._fd = -1
        self.recovery = self._recover()

    # -- the GroupStore interface --------------------------------------------------------------
    def store_group(self, record: StoredGroup, callback: StoreCallback) -> None:
        """Append, fsync, then acknowledge. A failed write is rolled back (the file is cut back
        to where the record began) and answered with the error Kafka's storeGroup would give:
        a storage error is NOT_COORDINATOR, a record too large UNKNOWN_SERVER_ERROR."""
        self.writes += 1
        data = encode_record(record)
        if len(data) - _HEADER.size > MAX_RECORD_BYTES:
            callback(Errors.UNKNOWN_SERVER_ERROR)
            return
        start = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            self._write_all(data)
            if self.fsync:
                os.fsync(self._fd)
        except OSError:
            try:
                os.ftruncate(self._fd, start)
            except OSError:
                pass
            callback(Errors.NOT_COORDINATOR)
            return
        self._records[record.group_id] = record
        self._records_in_file += 1
        self._maybe_compact()
        callback(Errors.NONE)

    def load_group(self, group_id: str) -> StoredGroup | None:
        return self._records.get(group_id)

    # -- beyond the interface ------------------------------------------------------------------
    def group_ids(self) -> list[str]:
        """Every group with a record: what a coordinator taking over the partition loads."""
        return sorted(self._records)

    def records_in_file(self) -> int:
        return self._records_in_file

    def compact(self) -> None:
        """Rewrite the file with the last record of each group (crash-safe: temp file, fsync,
        rename, fsync of the folder)."""
        tmp = self.path.with_name(self.path.name + ".compacting")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            blob = MAGIC + b"".join(encode_record(self._records[g]) for g in sorted(self._records))
            view = memoryview(blob)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        _fsync_dir(self.path.parent)
        os.close(self._fd)
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
        self._records_in_file = len(self._records)
        self.compactions += 1

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> FileGroupStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------------
    def _recover(self) -> RecoveryReport:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        leftover = self.path.with_name(self.path.name + ".compacting")
        if leftover.exists():  # a compaction that crashed before its rename
            leftover.unlink()
        data = self.path.read_bytes() if self.path.exists() else b""
        groups, count, valid, problem = _scan(data)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        if valid < len(MAGIC):  # empty, torn or foreign header: start a fresh file
            os.ftruncate(self._fd, 0)
            self._write_all(MAGIC)
            valid_total = 0
        else:
            if valid < len(data):
                os.ftruncate(self._fd, valid)
            valid_total = valid
        os.fsync(self._fd)
        self._records = groups
        self._records_in_file = count
        return RecoveryReport(
            str(self.path), count, len(groups), valid_total, len(data) - valid_total if problem else 0, problem
        )

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def _maybe_compact(self) -> None:
        """Compaction is housekeeping: if it fails (disk full), the appended record is already
        durable, so the write still succeeds and the old file stays as it was."""
        live = max(1, len(self._records))
        if self._records_in_file >= self.compact_min_records and self._records_in_file > self.compact_ratio * live:
            try:
                self.compact()
            except OSError:
                self.compaction_failures += 1
