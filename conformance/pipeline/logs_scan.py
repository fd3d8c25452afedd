"""One read of each broker log file: number its physical lines, count the lines that are not the
coordinator's, and hand on only the coordinator-looking ones (with their line numbers) to the
JVM regexes (logs_parse.classify_lines).

Why a scanner of our own instead of `spark.read.text`: a line's number is its position in its
file, which Spark's text source does not give -- numbering split by split needs a second scan (the
line count of every earlier split), and the per-line SQL expressions (ANSI/prefix regexes, the
garbage check) ran over every line although nine in ten are other loggers'. Here each task reads
one split of one file in 8 MiB chunks and does its per-line work with C-speed byte searches on the
chunk: newline counts give line numbers, `bytes.find` of the coordinator hints gives the few lines
that go on, a byte regex finds control characters, one `decode` checks UTF-8. Python touches a
line only when it is coordinator-looking, garbage, oversized or in a chunk with lone carriage
returns. A split's rows carry line numbers local to the split; the driver adds the line counts of
the file's earlier splits (a small map), so the file is still read once.

Lines are what Hadoop's LineRecordReader (spark.read.text) calls lines: split at \\n, \\r\\n or a
lone \\r; a last line without a newline counts. A split owns the \\n-terminated records that start
in its byte range. Gzip files are one split each (not splittable); a truncated stream keeps what
was decompressed before the damage, a file that is not gzip reads as no lines (the driver's
preflight says which, logs_parse.InputFile.status).
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from kgc.conformance.pipeline.logs_formats import COORDINATOR_HINTS

__all__ = ["CHUNK", "MAX_LINE", "SCAN_SCHEMA", "ScanSplit", "make_splits", "scan_split"]

MAX_LINE = 65_536
CHUNK = 8 * 1024 * 1024
SPLIT = 64 * 1024 * 1024
#: After each coordinator-looking line without its logger (a hard-wrapped head), this many of the
#: next physical lines travel with it, so continuations are joined without a second read.
FOLLOWING = 3
_HINTS = tuple(h.encode() for h in COORDINATOR_HINTS)
_CLIENT = (b"org.apache.kafka.clients", b"[Consumer clientId=", b"[Producer clientId=")
_GARBAGE = re.compile(rb"[\x00-\x08\x0E-\x1A\x1C-\x1F\x7F]|\xef\xbf\xbd")
#: Every byte but the control characters _GARBAGE looks for: `translate` deletes them from a
#: chunk at memory speed, and what is left says whether the chunk has any (a regex scan is ~10x slower).
_NOT_CONTROL = bytes(b for b in range(256) if not (b <= 0x08 or 0x0E <= b <= 0x1A or 0x1C <= b <= 0x1F or b == 0x7F))
_LOGGER = b"(kafka.coordinator"
#: Byte strings that every hint contains one of: two searches over a chunk instead of ten.
_NEEDLES = (b"roup", b"is now empty")
assert all(any(n in h for n in _NEEDLES) for h in _HINTS)

#: One row per coordinator-looking line (kind "line") and one per split (kind "split": its line,
#: garbage and oversized counts; text empty). `adjacent`: the line before it may be a row too (it
#: is one, or it is in the previous split): only such lines can be an appender's duplicate, so
#: without any the duplicates' join is not run (logs_parse.parse_logs).
SCAN_SCHEMA = (
    "kind string, file string, split int, local long, text string, following array<string>, "
    "lines long, garbage long, oversized long, adjacent boolean"
)


@dataclass(frozen=True)
class ScanSplit:
    path: str
    index: int
    start: int
    end: int  # exclusive; -1 = to the end (gzip)
    gzip: bool = False
    readable: bool = True


def make_splits(files: Sequence[tuple[str, str]], split_bytes: int = SPLIT) -> list[ScanSplit]:
    """(path, status) -> splits: plain files in `split_bytes` ranges, gzip files whole."""
    splits: list[ScanSplit] = []
    for path, status in files:
        if path.endswith(".gz"):
            splits.append(ScanSplit(path, 0, 0, -1, gzip=True, readable=status != "corrupt"))
            continue
        size = os.path.getsize(path)
        count = max(1, -(-size // split_bytes))
        for i in range(count):
            end = size if i == count - 1 else (i + 1) * split_bytes
            splits.append(ScanSplit(path, i, i * split_bytes, end))
    return splits


def _plain_records(split: ScanSplit, stop: list[int], first: list[int]) -> Iterator[bytes]:
    """Chunks of whole \\n-terminated records owned by the split: those starting in
    [start, end); the last one runs past `end` to its newline (or the end of the file). Where
    the first record starts goes into `first`, where the last one ended into `stop`."""
    with open(split.path, "rb") as handle:
        if split.start > 0:
            handle.seek(split.start - 1)
            if handle.read(1) != b"\n":  # the record straddling `start` is the previous split's
                handle.readline()
        first.append(handle.tell())
        remaining = split.end - handle.tell()
        carry = b""
        while remaining > 0:
            data = handle.read(min(CHUNK, remaining))
            if not data:
                break
            remaining -= len(data)
            data = carry + data
            if remaining <= 0:  # the data ends at byte end-1: finish the record holding it
                data = data if data.endswith(b"\n") else data + handle.readline()
                stop.append(handle.tell())
                yield data
                return
            cut = data.rfind(b"\n")
            carry, data = (data, b"") if cut < 0 else (data[cut + 1 :], data[: cut + 1])
            if data:
                yield data
        stop.append(handle.tell())
        if carry:
            yield carry


def _lines_after(path: str, offset: int, count: int) -> list[bytes]:
    """The first `count` lines from `offset` (the next split's): a head near a split's end."""
    lines: list[bytes] = []
    with open(path, "rb") as handle:
        handle.seek(offset)
        while len(lines) < count:
            record = handle.readline()
            if not record:
                break
            lines.extend(record.splitlines() or [b""])
    return lines[:count]


def _row_before(path: str, first: int) -> bool:
    """Whether the physical line ending just before offset `first` (a record's start) may be a
    row of the previous split: it holds a hint and no client marker (garbage or oversized lines
    are not told apart: a yes may be wrong, a no never is). A line longer than the bytes read
    back is a yes."""
    if first == 0:
        return False
    back = min(first, 4 * MAX_LINE + 8)
    with open(path, "rb") as handle:
        handle.seek(first - back)
        data = handle.read(back)
    body = data[:-1]  # without the \n ending the record
    body = body[:-1] if body.endswith(b"\r") else body
    cut = max(body.rfind(b"\n"), body.rfind(b"\r"))
    if cut < 0 and back < first:
        return True
    line = body[cut + 1 :]
    return any(h in line for h in _HINTS) and not any(c in line for c in _CLIENT)


def _gzip_records(split: ScanSplit) -> Iterator[bytes]:
    """Decompressed chunks of whole records; stops quietly at damage (kept up to there)."""
    if not split.readable:
        return
    carry = b""
    with open(split.path, "rb") as handle:
        inflater = zlib.decompressobj(wbits=31)
        try:
            while True:
                raw = handle.read(CHUNK // 4)
                if not raw:
                    break
                data = inflater.decompress(raw)
                while inflater.eof and inflater.unused_data:  # concatenated gzip members
                    rest = inflater.unused_data
                    inflater = zlib.decompressobj(wbits=31)
                    data += inflater.decompress(rest)
                data = carry + data
                cut = data.rfind(b"\n")
                if cut < 0:
                    carry = data
                    continue
                carry = data[cut + 1 :]
                yield data[: cut + 1]
        except zlib.error:
            pass
    if carry:
        yield carry


def scan_split(split: ScanSplit) -> Iterator[tuple[object, ...]]:
    """Rows in SCAN_SCHEMA's order for one split: its coordinator-looking lines, then its counts."""
    stop: list[int] = []  # where a plain split's records ended
    starts: list[int] = []  # and where they started
    records = _gzip_records(split) if split.gzip else _plain_records(split, stop, starts)
    base = 0  # physical lines before the current chunk, within the split
    garbage = oversized = 0
    pending: list[list[object]] = []  # heads still collecting their following lines
    last = -1  # the last row's local number (0: the line before the split may be a row)
    for chunk in records:
        if starts:
            last = 0 if _row_before(split.path, starts.pop()) else -1
        fast = b"\r" not in chunk and not _suspicious(chunk)
        lines = [] if fast else chunk.splitlines()
        if pending:
            first = _next_lines(chunk, 0, FOLLOWING) if fast else lines[:FOLLOWING]
            for row in pending:
                following: list[str] = row[5]  # type: ignore[assignment]
                following.extend(_decode(x) for x in first[: FOLLOWING - len(following)])
            yield from (tuple(r) for r in pending if len(r[5]) >= FOLLOWING)  # type: ignore[arg-type]
            pending = [r for r in pending if len(r[5]) < FOLLOWING]  # type: ignore[arg-type]
        if fast:
            count = chunk.count(b"\n") + (not chunk.endswith(b"\n"))
            hits = _hinted_lines(chunk)
        else:
            count = len(lines)
            hits = []
            for index, line in enumerate(lines):
                if len(line) > MAX_LINE and len(_decode(line)) > MAX_LINE:
                    oversized += 1
                elif _GARBAGE.search(line) or not _is_utf8(line):
                    garbage += 1
                elif any(h in line for h in _HINTS):
                    hits.append((index, line, -1))
        for index, line, end in hits:
            if not any(h in line for h in _HINTS) or any(c in line for c in _CLIENT):
                continue
            local = base + index + 1
            row: list[object] = ["line", split.path, split.index, local, _decode(line), [], 0, 0, 0, local == last + 1]
            last = local
            if _LOGGER not in line:
                after = _next_lines(chunk, end + 1, FOLLOWING) if fast else lines[index + 1 : index + 1 + FOLLOWING]
                row[5] = [_decode(x) for x in after]
                if len(after) < FOLLOWING:
                    pending.append(row)
                    continue
            yield tuple(row)
        base += count
    if pending and stop:
        after = _lines_after(split.path, stop[0], FOLLOWING)
        for row in pending:
            following = row[5]  # type: ignore[assignment]
            following.extend(_decode(x) for x in after[: FOLLOWING - len(following)])
    yield from (tuple(r) for r in pending)
    yield ("split", split.path, split.index, 0, "", [], base, garbage, oversized, False)


def _decode(line: bytes) -> str:
    return line.decode("utf-8", "replace")


def _is_utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _next_lines(chunk: bytes, pos: int, count: int) -> list[bytes]:
    """Up to `count` lines of a chunk without carriage returns, from offset `pos` (a line start)."""
    out: list[bytes] = []
    while len(out) < count and pos < len(chunk):
        end = chunk.find(b"\n", pos)
        if end < 0:
            end = len(chunk)
        out.append(chunk[pos:end])
        pos = end + 1
    return out


def _hinted_lines(chunk: bytes) -> list[tuple[int, bytes, int]]:
    """(index, line, offset of its newline) of the lines holding a needle, in order: a few byte
    searches over the whole chunk, Python work per hit only (one per line: the search goes on
    after the line's end)."""
    spans: dict[int, int] = {}
    for needle in _NEEDLES:
        at = chunk.find(needle)
        while at >= 0:
            end = chunk.find(b"\n", at)
            if end < 0:
                end = len(chunk)
            spans[chunk.rfind(b"\n", 0, at) + 1] = end
            at = chunk.find(needle, end)
    found: list[tuple[int, bytes, int]] = []
    index, last = 0, 0
    for start in sorted(spans):
        index += chunk.count(b"\n", last, start)
        last = start
        found.append((index, chunk[start : spans[start]], spans[start]))
    return found


def _suspicious(chunk: bytes) -> bool:
    """Whether a chunk may hold a garbage or oversized line (then it is looked at line by line):
    control characters, U+FFFD or bytes that are not UTF-8, or a run of MAX_LINE/2 aligned bytes
    without a newline (every line longer than MAX_LINE holds one)."""
    if chunk.translate(None, _NOT_CONTROL) or b"\xef\xbf\xbd" in chunk or not _is_utf8(chunk):
        return True
    half = MAX_LINE // 2
    return any(chunk.find(b"\n", at, at + half) < 0 for at in range(0, len(chunk) - half + 1, half))
