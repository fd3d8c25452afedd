"""logs_scan without Spark: the scanner's line numbers, counts and coordinator-looking lines
agree with Hadoop's line splitting (bytes.splitlines: \\n, \\r\\n, lone \\r) whatever the split
size and chunk size, including garbage, oversized lines and hard-wrapped heads at a split's end."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from kgc.conformance.pipeline import logs_scan

PARTS = (
    b"x" * 25,
    b"[2021-06-09 10:00:00,000] INFO [GroupCoordinator 1]: Stabilized group g generation 2",
    b"noise line",
    b"\x01binary",
    b"Member m in group g has failed (kafka.coordinator.group.GroupCoordinator)",
    b"\xff\xfe",
    b"Group g with generation 3 is now empty",
    "\u00e9t\u00e9".encode(),
    b"[Consumer clientId=c] GroupCoordinator found",
)


def expected(data: bytes, max_line: int) -> tuple[list[tuple[int, str, tuple[str, ...]]], int, int, int]:
    lines = data.splitlines()
    rows, garbage, oversized = [], 0, 0
    for i, line in enumerate(lines):
        if len(line.decode("utf-8", "replace")) > max_line:
            oversized += 1
        elif logs_scan._GARBAGE.search(line) or not logs_scan._is_utf8(line):
            garbage += 1
        elif any(h in line for h in logs_scan._HINTS) and not any(c in line for c in logs_scan._CLIENT):
            after = (
                () if logs_scan._LOGGER in line else tuple(x.decode("utf-8", "replace") for x in lines[i + 1 : i + 4])
            )
            rows.append((i + 1, line.decode(), after))
    return rows, len(lines), garbage, oversized


def scan(path: Path, split_bytes: int) -> tuple[list[tuple[int, str, tuple[str, ...]]], int, int, int]:
    rows, total, garbage, oversized = [], 0, 0, 0
    for split in logs_scan.make_splits([(str(path), "ok")], split_bytes):
        local = []
        for row in logs_scan.scan_split(split):
            if row[0] == "split":
                rows += [(r[3] + total, r[4], tuple(r[5])) for r in local]
                total += row[6]
                garbage += row[7]
                oversized += row[8]
            else:
                local.append(row)
    return sorted(rows), total, garbage, oversized  # type: ignore[return-value]


@pytest.mark.parametrize(("chunk", "max_line"), [(37, 30), (1000, 40), (64, 65_536)])
def test_scanner_agrees_with_hadoop_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, max_line: int
) -> None:
    monkeypatch.setattr(logs_scan, "CHUNK", chunk)
    monkeypatch.setattr(logs_scan, "MAX_LINE", max_line)
    rng = random.Random(chunk)
    path = tmp_path / "f.log"
    for _ in range(150):
        parts = []
        for _ in range(rng.randint(0, 30)):
            parts += [rng.choice(PARTS), rng.choice((b"\n", b"\n", b"\r\n", b"\r"))]
        if parts and rng.random() < 0.5:
            parts.pop()
        data = b"".join(parts)
        path.write_bytes(data)
        want = expected(data, max_line)
        for split_bytes in (1, 9, 64, 10_000):
            assert scan(path, split_bytes) == want, (data, split_bytes)


def test_truncated_gzip_keeps_the_lines_before_the_damage(tmp_path: Path) -> None:
    line = b"[2021-06-09 10:00:00,000] INFO [GroupCoordinator 1]: Stabilized group g generation 2 (kafka.coordinator.group.GroupCoordinator)\n"
    whole = gzip.compress(line * 5000)
    path = tmp_path / "cut.log.gz"
    path.write_bytes(whole[: len(whole) // 2])
    rows = list(logs_scan.scan_split(logs_scan.make_splits([(str(path), "truncated")])[0]))
    counts = rows[-1]
    assert 0 < counts[6] < 5000 and counts[6] - 1 <= len(rows) - 1 <= counts[6]
    fake = tmp_path / "fake.log.gz"
    fake.write_bytes(b"not gzip\n")
    assert list(logs_scan.scan_split(logs_scan.make_splits([(str(fake), "corrupt")])[0]))[-1][6] == 0


@pytest.mark.parametrize(("chunk", "max_line"), [(37, 65_536), (1000, 40), (64, 65_536)])
def test_adjacent_marks_every_line_whose_previous_line_is_a_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, max_line: int
) -> None:
    """`adjacent` decides whether the duplicates' join runs at all: a row right after another
    row must say so (or an appender's duplicate would go uncounted), and within a split a row
    after a line that is no row must not (or the join would run for nothing)."""
    monkeypatch.setattr(logs_scan, "CHUNK", chunk)
    monkeypatch.setattr(logs_scan, "MAX_LINE", max_line)
    rng = random.Random(chunk + 1)
    path = tmp_path / "f.log"
    marked = 0
    for _ in range(150):
        parts = []
        for _ in range(rng.randint(0, 30)):
            parts += [rng.choice(PARTS), rng.choice((b"\n", b"\n", b"\r\n", b"\r"))]
        data = b"".join(parts)
        path.write_bytes(data)
        for split_bytes in (1, 9, 64, 10_000):
            total, rows = 0, {}
            for split in logs_scan.make_splits([(str(path), "ok")], split_bytes):
                local = [r for r in logs_scan.scan_split(split)]
                for r in local[:-1]:
                    rows[total + r[3]] = (r[9], r[3] == 1)
                total += local[-1][6]
            for line, (adjacent, first_of_split) in rows.items():
                assert adjacent or line - 1 not in rows, (data, split_bytes, line)
                assert first_of_split or not adjacent or line - 1 in rows, (data, split_bytes, line)
                marked += adjacent
    assert marked > 0
