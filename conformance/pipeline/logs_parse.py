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

Line numbers: Spark reads files in splits; a row's number is its index within its split plus
the lines of the file's earlier splits (input_file_block_start orders them), so two cheap scans.
Hard-wrapped entries and duplicates are rare, so only the unparsed heads are collected and
re-matched on the driver.
"""

from __future__ import annotations

import glob
import gzip
import os
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgc.conformance.pipeline.logs_formats import (
    COORDINATOR_HINTS,
    ENTRY_RE,
    FIELDS,
    FORMATS,
    PREFIX_RE,
    match_message,
)

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

MAX_LINE = 65_536
CATEGORIES: tuple[str, ...] = ("event", "unparsed", "noise", "continuation", "duplicate", "garbage", "oversized")
_ANSI_RE = r"\x1B\[[0-9;]*[A-Za-z]"
_GARBAGE_RE = r"[\x00-\x08\x0E-\x1A\x1C-\x1F\x7F\uFFFD]"
_CLIENT_RE = r"org\.apache\.kafka\.clients|\[Consumer clientId=|\[Producer clientId="
_SEP = "\u0001"
#: ENTRY_RE's groups in one string: ts, level, broker (one of three idents), message, logger.
_PACK = _SEP.join(("$1", "$2", "$3$4$5", "$6", "$7"))
_LOGGER_SUFFIX_RE = r"\s+\(kafka\.coordinator[\w.$]*(?::\d+)?\).*$"
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


def read_numbered_lines(spark: SparkSession, files: Sequence[InputFile]) -> DataFrame:
    """(file, line, raw) for every physical line; `file` is the path as given to Spark."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spark.conf.set("spark.sql.files.ignoreCorruptFiles", "true")
    paths = [_hadoop_path(f.path) for f in files]
    df = spark.read.text(paths).select(
        F.input_file_name().alias("uri"),
        F.input_file_block_start().alias("block"),
        F.monotonically_increasing_id().alias("id"),
        F.col("value").alias("raw"),
    )
    blocks = df.groupBy("uri", "block").agg(F.count(F.lit(1)).alias("n"), F.min("id").alias("first_id"))
    before = Window.partitionBy("uri").orderBy("block").rowsBetween(Window.unboundedPreceding, -1)
    blocks = blocks.withColumn("offset", F.coalesce(F.sum("n").over(before), F.lit(0)))
    numbered = df.join(F.broadcast(blocks.select("uri", "block", "first_id", "offset")), ["uri", "block"])
    return numbered.select(
        F.regexp_replace(F.expr("url_decode(replace(uri, '+', '%2B'))"), "^file:(//)?", "").alias("file"),
        (F.col("id") - F.col("first_id") + F.col("offset") + 1).alias("line"),
        "raw",
    )


def _format_case(msg: Column, hint: Column) -> Column:
    from pyspark.sql import functions as F

    case = None
    for index, fmt in enumerate(FORMATS):
        cond = hint & msg.contains(fmt.keyword) & msg.rlike(fmt.regex) if fmt.keyword else hint & msg.rlike(fmt.regex)
        case = F.when(cond, F.lit(index)) if case is None else case.when(cond, F.lit(index))
    assert case is not None
    return case.otherwise(F.lit(-1))


def _field_column(name: str, msg: Column, idx: Column) -> Column:
    from pyspark.sql import functions as F

    case = None
    for index, fmt in enumerate(FORMATS):
        if name not in fmt.fields:
            continue
        value = F.regexp_extract(msg, fmt.regex, fmt.fields.index(name) + 1)
        case = F.when(idx == index, value) if case is None else case.when(idx == index, value)
    return F.lit("") if case is None else case.otherwise(F.lit(""))


def classify_lines(lines: DataFrame) -> DataFrame:
    """Adds category, the entry's parts (ts, level, broker, logger) and the event's fields."""
    from pyspark.sql import functions as F

    raw = F.col("raw")
    cut = F.substring(raw, 1, MAX_LINE)
    clean = F.regexp_replace(cut, _ANSI_RE, "")
    df = lines.select(
        "file",
        "line",
        F.length(raw).alias("length"),
        clean.alias("clean"),
        F.regexp_replace(clean, PREFIX_RE, "").alias("stripped"),
    )
    # Only coordinator-looking lines are taken apart (substring searches decide which: most lines
    # of a broker log are other loggers'); the entry regex runs once, its groups packed into one
    # string by regexp_replace and split again.
    clean_col = F.col("clean")
    hint = clean_col.contains(COORDINATOR_HINTS[0])
    for text in COORDINATOR_HINTS[1:]:
        hint = hint | clean_col.contains(text)
    hint = hint & ~clean_col.rlike(_CLIENT_RE)
    df = df.withColumn("hint", hint)
    packed = F.when(F.col("hint"), F.regexp_replace(F.col("stripped"), "^.*?" + ENTRY_RE, _PACK)).otherwise(F.lit(""))
    parts = F.split(packed, _SEP)
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
    category = (
        F.when(F.col("length") > MAX_LINE, "oversized")
        .when(F.col("clean").rlike(_GARBAGE_RE), "garbage")
        .when(F.col("idx") >= 0, "event")
        .when(F.col("hint") & ~quiet, "unparsed")
        .otherwise("noise")
    )
    df = df.withColumn("category", category)
    kinds = F.element_at(F.array(*[F.lit(f.kind) for f in FORMATS]), F.col("idx") + 1)
    names = F.element_at(F.array(*[F.lit(f.name) for f in FORMATS]), F.col("idx") + 1)
    fields = [_field_column(name, F.col("msg"), F.col("idx")).alias(name) for name in FIELDS]
    return df.select(
        "file",
        "line",
        "category",
        "ts",
        "level",
        "broker",
        "logger",
        "msg",
        "stripped",
        F.when(F.col("idx") >= 0, kinds).otherwise(F.lit("")).alias("kind"),
        F.when(F.col("idx") >= 0, names).otherwise(F.lit("")).alias("format"),
        *fields,
    )


def parse_logs(spark: SparkSession, files: Sequence[InputFile]) -> ParseResult:
    """Classify every line, drop appender duplicates, join hard-wrapped heads; the counts add up
    to the number of physical lines read."""
    from pyspark.sql import functions as F

    lines = read_numbered_lines(spark, files)
    classified = classify_lines(lines).persist()
    counts = {name: 0 for name in CATEGORIES}
    per_file: dict[str, int] = {}
    for row in classified.groupBy("file", "category").count().collect():
        counts[row["category"]] += row["count"]
        per_file[row["file"]] = per_file.get(row["file"], 0) + row["count"]

    # Duplicated appenders: the same entry again on the very next line.
    candidates = classified.filter(F.col("category").isin("event", "unparsed"))
    previous = candidates.select("file", (F.col("line") + 1).alias("line"), F.col("stripped"))
    duplicates = candidates.join(previous, ["file", "line", "stripped"], "left_semi")
    for row in duplicates.groupBy("category").count().collect():
        counts[row["category"]] -= row["count"]
        counts["duplicate"] += row["count"]
    events = classified.filter(F.col("category") == "event").join(
        duplicates.select("file", "line"), ["file", "line"], "left_anti"
    )

    # Hard-wrapped entries: an unparsed head without its logger, continued on the next lines.
    heads = (
        classified.filter((F.col("category") == "unparsed") & (F.col("logger") == "") & (F.col("ts") != ""))
        .join(duplicates.select("file", "line"), ["file", "line"], "left_anti")
        .select("file", "line", "ts", "level", "broker", "msg", "stripped")
    )
    extra: list[dict[str, Any]] = []
    head_rows = heads.limit(100_000).collect()
    if head_rows:
        wanted = spark.createDataFrame(
            [(r["file"], r["line"] + k) for r in head_rows for k in (1, 2, 3)], "file string, line long"
        )
        nexts = classified.join(F.broadcast(wanted), ["file", "line"]).select(
            "file", "line", "category", "ts", "stripped"
        )
        following = {(r["file"], r["line"]): r for r in nexts.collect()}
        for head in head_rows:
            text, used = head["msg"], []
            for k in (1, 2, 3):
                nxt = following.get((head["file"], head["line"] + k))
                if nxt is None or _ENTRY.search(nxt["stripped"]) or nxt["category"] not in ("noise", "unparsed"):
                    break
                text = f"{text} {nxt['stripped'].strip()}"
                used.append(nxt)
                joined = _strip_logger(text)
                found = match_message(joined)
                if found is None:
                    continue
                fmt, values = found
                extra.append(
                    {
                        "file": head["file"],
                        "line": head["line"],
                        "ts": head["ts"],
                        "broker": head["broker"],
                        "level": head["level"],
                        "kind": fmt.kind,
                        "format": fmt.name,
                        **{name: values.get(name, "") for name in FIELDS},
                        "text": head["stripped"] + "\n" + "\n".join(r["stripped"] for r in used),
                    }
                )
                counts["unparsed"] -= 1
                counts["event"] += 1
                for row in used:
                    counts[row["category"]] -= 1
                    counts["continuation"] += 1
                break
    events = events.select(*[F.col(c) for c in _EVENT_COLUMNS[:-1]], F.col("stripped").alias("text"))
    return ParseResult(events, counts, extra, per_file)


_ENTRY = __import__("re").compile(ENTRY_RE)


def _strip_logger(text: str) -> str:
    import re

    return re.sub(_LOGGER_SUFFIX_RE, "", text)


def event_rows(rows: Iterable[Any]) -> list[dict[str, Any]]:
    return [{c: row[c] for c in _EVENT_COLUMNS} for row in rows]
