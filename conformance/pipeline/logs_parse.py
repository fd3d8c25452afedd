"""Broker log files -> one row per physical line, classified, with the coordinator's events
extracted, all in Spark SQL (regexp_extract / rlike run in the JVM; no Python per line).

Why this shape: incident logs are gigabytes of server.log where the coordinator's lines are a
small fraction. Every physical line ends in exactly one category, so the counts add up:

    event         a coordinator message in one of the known wordings (logs_formats.FORMATS)
    unparsed      looks like the coordinator (logger, prefix or wording) but no format matched
    noise         anything else: other loggers, unknown DEBUG/TRACE lines, blank lines, stack traces
    continuation  the rest of a hard-wrapped coordinator entry, joined to the line before
    duplicate     the same entry again on the next line (an appender configured twice)
    garbage       control characters or bytes that are not UTF-8 (binary content)
    oversized     longer than MAX_LINE characters (not matched; counted)

Reading: logs_scan reads each file once on the workers (splits of plain files, gzip whole),
numbers the lines and counts noise, garbage and oversized lines itself; only coordinator-looking
lines (a substring hint, not a client's) become rows for the JVM regexes here. Duplicates and
hard-wrapped heads are then found on that small table (a head carries its next lines along).
"""

from __future__ import annotations

import glob
import gzip
import os
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgc.conformance.pipeline.logs_formats import (
    ENTRY_RE,
    FIELDS,
    FORMATS,
    PREFIX_RE,
    match_message,
)
from kgc.conformance.pipeline.logs_scan import MAX_LINE, SCAN_SCHEMA, make_splits, scan_split

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "CATEGORIES",
    "InputFile",
    "MAX_LINE",
    "ParseResult",
    "classify_lines",
    "expand_inputs",
    "parse_logs",
]

CATEGORIES: tuple[str, ...] = ("event", "unparsed", "noise", "continuation", "duplicate", "garbage", "oversized")
_ANSI_RE = r"\x1B\[[0-9;]*[A-Za-z]"
_GARBAGE_RE = r"[\x00-\x08\x0E-\x1A\x1C-\x1F\x7F\uFFFD]"
_SEP = "\u0001"
#: ENTRY_RE's groups in one string: ts, level, broker (one of three idents), message, logger.
_PACK = _SEP.join(("$1", "$2", "$3$4$5", "$6", "$7"))
_LOGGER_SUFFIX_RE = r"\s+\(kafka\.coordinator[\w.$]*(?::\d+)?\).*$"
#: The scanner's columns classify_lines passes through (the line's number in its split, the
#: split's counts, the lines a hard-wrapped head carries along).
_SCAN_KEPT = ("file", "split", "local", "lines", "garbage", "oversized", "following", "adjacent")
_EVENT_COLUMNS = ("file", "line", "ts", "broker", "level", "kind", "format", *FIELDS, "text")


@dataclass
class InputFile:
    """A file to read and what the driver found out about it before Spark read it."""

    path: str
    status: str = "ok"  # ok | truncated (gzip ended early) | corrupt (not gzip although .gz)
    detail: str = ""


@dataclass
class ParseResult:
    events: DataFrame
    counts: dict[str, int]
    extra_events: list[dict[str, Any]] = field(default_factory=list)  # joined continuations
    per_file_lines: dict[str, int] = field(default_factory=dict)
    #: Cached tables `events` is computed from: to unpersist once the caller has its events.
    cached: list[DataFrame] = field(default_factory=list)

    def release(self) -> None:
        for table in self.cached:
            table.unpersist()


def expand_inputs(inputs: Sequence[str]) -> tuple[list[InputFile], list[str]]:
    """Paths, folders (recursively) and globs -> readable files; and one error line per input
    that cannot be read (`PATH: what`)."""
    files: list[InputFile] = []
    errors: list[str] = []
    seen: set[str] = set()
    for spec in inputs:
        if any(ch in spec for ch in "*?[") and not os.path.exists(spec):
            matches = sorted(glob.glob(spec, recursive=True))
            if not matches:
                errors.append(f"{spec}: no file matches")
            candidates = matches
        else:
            candidates = [spec]
        for candidate in candidates:
            path = Path(candidate)
            if path.is_dir():
                found = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith((".", "_")))
                if not found:
                    errors.append(f"{candidate}: folder has no files")
            elif path.is_file():
                found = [path]
            elif not path.exists():
                errors.append(f"{candidate}: no such file or folder")
                continue
            else:
                errors.append(f"{candidate}: not a regular file")
                continue
            for item in found:
                resolved = str(item.resolve())
                if resolved in seen:
                    continue
                if not os.access(resolved, os.R_OK):
                    errors.append(f"{item}: permission denied")
                    continue
                seen.add(resolved)
                files.append(_preflight(resolved))
    return files, errors


def _preflight(path: str) -> InputFile:
    """A .gz file is decompressed once on the driver to tell a truncated or non-gzip file apart:
    Spark (with ignoreCorruptFiles) keeps the lines before the damage, and the report says why
    the file ended there."""
    if not path.endswith(".gz"):
        return InputFile(path)
    try:
        with gzip.open(path, "rb") as handle:
            while handle.read(1 << 20):
                pass
    except EOFError:
        return InputFile(path, "truncated", "gzip stream ends early: lines after the damage are lost")
    except (gzip.BadGzipFile, zlib.error, OSError) as exc:
        return InputFile(path, "corrupt", f"not readable as gzip: {exc}")
    return InputFile(path)


def _hadoop_path(path: str) -> str:
    """Spark globs every path it is given: escape glob characters in real file names."""
    escaped = "".join("\\" + ch if ch in "[]{}*?\\" else ch for ch in path)
    return "file://" + escaped


def scan_lines(spark: SparkSession, files: Sequence[InputFile]) -> DataFrame:
    """The scanner's rows (SCAN_SCHEMA: the coordinator-looking lines with their split-local
    numbers, and one count row per split; logs_scan: each file read once, by the workers), in one
    partition per core. Not cached: the classification runs in the same tasks, and only its
    result is kept."""
    splits = make_splits([(f.path, f.status) for f in files])
    # verifySchema off: the scanner's tuples are SCAN_SCHEMA's by construction, and checking
    # every field of every row in Python was a per-line Python cost on the workers.
    scanned = spark.createDataFrame(
        spark.sparkContext.parallelize(splits, len(splits)).flatMap(scan_split), SCAN_SCHEMA, verifySchema=False
    )
    # The scanned rows are a small fraction of the input: one task per core (one task per split
    # would pay a task's fixed cost in every later stage, for a few rows each).
    return scanned.coalesce(max(1, min(len(splits), spark.sparkContext.defaultParallelism)))


def number_lines(classified: DataFrame, split_lines: dict[tuple[str, int], int]) -> DataFrame:
    """The classified lines with their line numbers in the file: the split-local number plus the
    line counts of the file's earlier splits (`split_lines`: (file, split) -> lines in it)."""
    from pyspark.sql import functions as F

    offsets: dict[tuple[str, int], int] = {}
    for path in dict.fromkeys(path for path, _ in split_lines):
        total = 0
        for split in sorted(s for p, s in split_lines if p == path):
            offsets[(path, split)] = total
            total += split_lines[(path, split)]
    offset_of = F.create_map(*[F.lit(x) for (path, split), off in offsets.items() for x in (f"{split}:{path}", off)])
    key = F.concat_ws(":", F.col("split").cast("string"), F.col("file"))
    return classified.filter(F.col("row") == "line").withColumn(
        "line", F.col("local") + F.coalesce(offset_of[key], F.lit(0))
    )


def _format_case(msg: Column, hint: Column) -> Column:
    from pyspark.sql import functions as F

    case = None
    for index, fmt in enumerate(FORMATS):
        cond = hint & msg.contains(fmt.keyword) & msg.rlike(fmt.regex) if fmt.keyword else hint & msg.rlike(fmt.regex)
        case = F.when(cond, F.lit(index)) if case is None else case.when(cond, F.lit(index))
    assert case is not None
    return case.otherwise(F.lit(-1))


def _fields_packed(msg: Column, idx: Column) -> Column:
    """The event's fields in one string (FIELDS' order, _SEP between): ONE regexp_replace of the
    matched format's regex per line, its groups rearranged into FIELDS' slots.

    Why not a regexp_extract per field: that ran the format's regex once per output column (up
    to five times per event line), and eight CASE expressions over all formats made the
    generated projection big. `^.*?(?:R).*$` matches where `find` would (the lazy prefix tries
    the leftmost start first, and `.*$` accepts any end), so the groups are regexp_extract's;
    an unmatched optional group gives "" in both."""
    from pyspark.sql import functions as F

    case = None
    for index, fmt in enumerate(FORMATS):
        if not fmt.fields:
            continue
        slots = [f"${fmt.fields.index(name) + 1}" if name in fmt.fields else "" for name in FIELDS]
        value = F.regexp_replace(msg, "^.*?(?:" + fmt.regex + ").*$", _SEP.join(slots))
        case = F.when(idx == index, value) if case is None else case.when(idx == index, value)
    empty = F.lit(_SEP * (len(FIELDS) - 1))
    return empty if case is None else case.otherwise(empty)


def classify_lines(scanned: DataFrame) -> DataFrame:
    """The scanner's rows (SCAN_SCHEMA) with category, the entry's parts (ts, level, broker,
    logger) and the event's fields added; the scanner's `kind` is `row` here (line or split: a
    split's count row passes through as noise), `kind` the event's."""
    from pyspark.sql import functions as F

    # The scanner passed on no garbage, oversized or client line (it counted the first two and
    # dropped the third), so none is looked for here; ANSI colours are rare: removed only where
    # an escape is. A line starting with "[" (log4j's layout, most lines) has no paste prefix
    # (every PREFIX_RE alternative starts with a space, ">", a digit, a word character or ".").
    raw = F.col("text")
    clean = F.when(raw.contains("\x1b"), F.regexp_replace(raw, _ANSI_RE, "")).otherwise(raw)
    df = scanned.select(F.col("kind").alias("row"), *_SCAN_KEPT, clean.alias("clean"))
    clean_col = F.col("clean")
    stripped = F.when(clean_col.startswith("["), clean_col).otherwise(F.regexp_replace(clean_col, PREFIX_RE, ""))
    df = df.withColumn("stripped", stripped)
    # Only coordinator-looking lines are taken apart (substring searches decide which: most lines
    # of a broker log are other loggers'); the entry regex runs once, its groups packed into one
    # string by regexp_replace and split again. That split is a column of its own: the five
    # columns read from it, each a CASE over it, made Spark's generated code run the entry regex
    # once per reference (subexpression elimination missed it), ~5x per line.
    # Every line the scanner passed on holds a COORDINATOR_HINTS text (it searched the raw bytes;
    # removing ANSI escapes cannot split one), so no substring search is repeated here.
    df = df.withColumn("hint", F.col("row") == "line")
    packed = F.when(F.col("hint"), F.regexp_replace(F.col("stripped"), "^.*?" + ENTRY_RE, _PACK)).otherwise(F.lit(""))
    df = df.withColumn("parts", F.split(packed, _SEP))
    parts = F.col("parts")
    matched = F.size(parts) == 5
    df = df.select(
        "*",
        F.when(matched, parts.getItem(0)).otherwise(F.lit("")).alias("ts"),
        F.when(matched, parts.getItem(1)).otherwise(F.lit("")).alias("level"),
        F.when(matched, parts.getItem(2)).otherwise(F.lit("")).alias("broker"),
        F.when(matched, parts.getItem(4)).otherwise(F.lit("")).alias("logger"),
        F.when(matched, parts.getItem(3))
        .otherwise(F.regexp_replace(F.col("stripped"), _LOGGER_SUFFIX_RE, ""))
        .alias("msg"),
    )
    quiet = F.col("level").isin("DEBUG", "TRACE")
    # DEBUG/TRACE lines count as events when they are a known wording (a store error logged at
    # DEBUG); any other coordinator line at those levels is noise, not "unparsed".
    df = df.withColumn("idx", _format_case(F.col("msg"), F.col("hint")))
    category = F.when(F.col("idx") >= 0, "event").when(F.col("hint") & ~quiet, "unparsed").otherwise("noise")
    df = df.withColumn("category", category)
    kinds = F.element_at(F.array(*[F.lit(f.kind) for f in FORMATS]), F.col("idx") + 1)
    names = F.element_at(F.array(*[F.lit(f.name) for f in FORMATS]), F.col("idx") + 1)
    df = df.withColumn("packed_fields", F.split(_fields_packed(F.col("msg"), F.col("idx")), _SEP))
    fields = [F.coalesce(F.col("packed_fields").getItem(i), F.lit("")).alias(name) for i, name in enumerate(FIELDS)]
    # msg is kept for unparsed lines only (hard-wrapped heads are joined from it): the cached
    # table holds each event's text once (stripped), not twice.
    return df.select(
        "row",
        *_SCAN_KEPT,
        "category",
        "ts",
        "level",
        "broker",
        "logger",
        F.when(F.col("category") == "unparsed", F.col("msg")).alias("msg"),
        "stripped",
        F.when(F.col("idx") >= 0, kinds).otherwise(F.lit("")).alias("kind"),
        F.when(F.col("idx") >= 0, names).otherwise(F.lit("")).alias("format"),
        *fields,
    )


def parse_logs(spark: SparkSession, files: Sequence[InputFile]) -> ParseResult:
    """Classify every line, drop appender duplicates, join hard-wrapped heads; the counts add up
    to the number of physical lines read. Only coordinator-looking lines reach the JVM's regexes
    (the scanner counts the rest), so every join here is over a small table."""
    from pyspark.sql import functions as F

    # The scan and the classification run in the same tasks and only the classified rows are
    # cached; one job fills the cache and brings back every count (per split: its lines, garbage
    # and oversized; per category: the lines the scanner passed on).
    cached = classify_lines(scan_lines(spark, files)).persist()
    tallies = (
        cached.groupBy("row", "file", "split", "category")
        .agg(
            F.count("*").alias("count"),
            F.sum("lines"),
            F.sum("garbage"),
            F.sum("oversized"),
            F.sum(F.col("adjacent").cast("long")).alias("adjacent"),
        )
        .collect()
    )
    adjacent = 0  # candidates (event, unparsed) whose line before may be one too
    counts = {name: 0 for name in CATEGORIES}
    per_file = {f.path: 0 for f in files}
    split_lines: dict[tuple[str, int], int] = {}
    for row in tallies:
        if row["row"] == "split":
            lines, garbage, oversized = row["sum(lines)"], row["sum(garbage)"], row["sum(oversized)"]
            split_lines[(row["file"], row["split"])] = lines
            per_file[row["file"]] = per_file.get(row["file"], 0) + lines
            counts["garbage"] += garbage
            counts["oversized"] += oversized
            counts["noise"] += lines - garbage - oversized
        elif row["category"] != "noise":  # the scanner counted every line it passed on as noise
            counts[row["category"]] += row["count"]
            counts["noise"] -= row["count"]
            adjacent += row["adjacent"] if row["category"] in ("event", "unparsed") else 0
    classified = number_lines(cached, split_lines)

    # Duplicated appenders: the same entry again on the very next line. Only a line the scanner
    # saw right after another passed-on line (`adjacent`) can be one: without any, as in most
    # logs, the self-join (two shuffles of every candidate) is not run.
    candidates = classified.filter(F.col("category").isin("event", "unparsed"))
    previous = candidates.select("file", (F.col("line") + 1).alias("line"), F.col("stripped"))
    duplicates = (
        candidates.filter(F.col("adjacent"))
        .join(previous, ["file", "line", "stripped"], "left_semi")
        .select("file", "line", "category")
    )
    duplicate_rows = duplicates.collect() if adjacent else []
    for row in duplicate_rows:
        counts[row["category"]] -= 1
        counts["duplicate"] += 1
    events = classified.filter(F.col("category") == "event")
    if duplicate_rows:
        events = events.join(F.broadcast(duplicates.select("file", "line")), ["file", "line"], "left_anti")

    # Hard-wrapped entries: an unparsed head without its logger, continued on the next lines
    # (which the scanner sent along with it).
    # Heads are unparsed lines: without any (the counts say so) there is no job to run.
    duplicated = {(r["file"], r["line"]) for r in duplicate_rows}
    heads = classified.filter((F.col("category") == "unparsed") & (F.col("logger") == "") & (F.col("ts") != ""))
    head_rows = [
        r
        for r in (
            heads.select("file", "line", "ts", "level", "broker", "msg", "stripped", "following")
            .limit(100_000)
            .collect()
            if counts["unparsed"]
            else []
        )
        if (r["file"], r["line"]) not in duplicated
    ]
    extra: list[dict[str, Any]] = []
    if head_rows:
        wanted = spark.createDataFrame(
            [(r["file"], r["line"] + k) for r in head_rows for k in (1, 2, 3)], "file string, line long"
        )
        passed_on = classified.join(F.broadcast(wanted), ["file", "line"]).select("file", "line", "category")
        category_of = {(r["file"], r["line"]): r["category"] for r in passed_on.collect()}
        for head in head_rows:
            extra.extend(_join_continuation(head, category_of, counts))
    events = events.select(*[F.col(c) for c in _EVENT_COLUMNS[:-1]], F.col("stripped").alias("text"))
    return ParseResult(events, counts, extra, per_file, [cached])


def _join_continuation(
    head: Any, category_of: dict[tuple[str, int], str], counts: dict[str, int]
) -> list[dict[str, Any]]:
    """The head joined with up to three following lines when that makes a known message; the
    counts move the head to `event` and the lines used to `continuation`."""
    text, used = head["msg"], []
    for k, raw in enumerate(head["following"] or [], start=1):
        category = category_of.get((head["file"], head["line"] + k)) or _scanned_category(raw)
        stripped = re.sub(PREFIX_RE, "", re.sub(_ANSI_RE, "", raw[:MAX_LINE]), count=1)
        if _ENTRY.search(stripped) or category not in ("noise", "unparsed"):
            break
        text = f"{text} {stripped.strip()}"
        used.append((category, stripped))
        found = match_message(_strip_logger(text))
        if found is None:
            continue
        fmt, values = found
        counts["unparsed"] -= 1
        counts["event"] += 1
        for category_used, _ in used:
            counts[category_used] -= 1
            counts["continuation"] += 1
        return [
            {
                "file": head["file"],
                "line": head["line"],
                "ts": head["ts"],
                "broker": head["broker"],
                "level": head["level"],
                "kind": fmt.kind,
                "format": fmt.name,
                **{name: values.get(name, "") for name in FIELDS},
                "text": head["stripped"] + "\n" + "\n".join(s for _, s in used),
            }
        ]
    return []


def _scanned_category(raw: str) -> str:
    """The category the scanner gave a line it did not pass on."""
    if len(raw) > MAX_LINE:
        return "oversized"
    if re.search(_GARBAGE_RE, raw):
        return "garbage"
    return "noise"


_ENTRY = re.compile(ENTRY_RE)


def _strip_logger(text: str) -> str:
    return re.sub(_LOGGER_SUFFIX_RE, "", text)


def event_rows(rows: Iterable[Any]) -> list[dict[str, Any]]:
    return [{c: row[c] for c in _EVENT_COLUMNS} for row in rows]
