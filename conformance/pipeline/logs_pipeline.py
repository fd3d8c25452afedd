"""`kgc pipeline logs` end to end: expand inputs, parse in Spark, check each group's history on
the workers, write Parquet (events, findings, groups), summary.json and the timeline page.

Why the history check runs in Python on the workers: it is per group and sequential (a small
state machine over a group's events, which are a tiny fraction of the lines); the JVM
hash-partitions the events by group (one task per core), so each task holds whole groups.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgc.conformance.pipeline.logs_formats import FIELDS
from kgc.conformance.pipeline.logs_history import CheckConfig, Event, Finding, GroupHistory, check_group
from kgc.conformance.pipeline.logs_parse import InputFile, expand_inputs, parse_logs
from kgc.conformance.pipeline.logs_validate import GroupVerdict, validate_groups, verdict_finding

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ["CHECK_COLUMNS", "LogsOutcome", "events_by_group", "run_logs"]


@dataclass
class LogsOutcome:
    summary: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    groups: list[GroupHistory] = field(default_factory=list)
    input_errors: list[str] = field(default_factory=list)
    verdicts: list[GroupVerdict] = field(default_factory=list)

    @property
    def violations(self) -> int:
        return sum(1 for f in self.findings if f.kind == "violation")


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text else None
    except ValueError:
        return None


#: The events table's columns an Event is made of, in the order _to_event unpacks them: select
#: them (`events.select(*CHECK_COLUMNS)`) before handing rows to events_by_group.
CHECK_COLUMNS = (
    "file", "line", "ts", "broker", "kind", "group", "generation", "member", "state", "reason", "members", "error", "text"
)  # fmt: skip


def _to_event(row: Sequence[Any]) -> Event:
    """A row of CHECK_COLUMNS, unpacked by position: PySpark's Row looks a name up with a
    list.index per field, and that was a third of the group check's Python time. CHECK_COLUMNS
    is Event's field order, so Event.of takes the values as they come."""
    file, line, ts, broker, kind, group, generation, member, state, reason, members, error, text = row
    return Event.of(
        file,
        int(line),
        ts or "",
        broker or "",
        kind,
        group or "",
        _int_or_none(generation),
        member or "",
        state or "",
        reason or "",
        _int_or_none(members),
        error or "",
        text or "",
    )


def _order(event: Event) -> tuple[str, str, int]:
    return (event.ts.replace("T", " ").replace(".", ","), event.file, event.line)


def events_by_group(rows: Iterable[Sequence[Any]]) -> dict[str, list[Event]]:
    """Events (rows of CHECK_COLUMNS, in that order) per group, in time order across files."""
    groups: dict[str, list[Event]] = {}
    for row in rows:
        if row[5]:
            groups.setdefault(row[5], []).append(_to_event(row))
    for events in groups.values():
        events.sort(key=_order)
    return groups


def _check_partition(rows: Iterable[Any], config: CheckConfig) -> list[tuple[list[Finding], GroupHistory]]:
    """One task's event rows (whole groups: the rows are hash-partitioned by group), checked per
    group in time order."""
    return [check_group(group, events, config) for group, events in events_by_group(rows).items()]


def _validate_batch(rows: Iterable[Any], timeout: float | None) -> list[GroupVerdict]:
    """One Spark task's groups, validated in one TLC run (its own run directory, metadir and
    tmpdir under a temporary folder): JVM and SANY start-up are paid once per batch."""
    groups = [(row["group"], sorted((_to_event(r) for r in row["events"]), key=_order)) for row in rows]
    return validate_groups(groups, timeout=timeout) if groups else []


def run_logs(
    spark: SparkSession,
    inputs: Sequence[str],
    out: Path,
    config: CheckConfig = CheckConfig(),
    progress: Any = None,
    validate: bool = False,
    validate_timeout: float | None = None,
) -> LogsOutcome:
    """The whole pipeline; raises nothing for bad input (it is reported in the outcome). With
    `validate`, TLC also says of each group whether a spec behaviour explains its history
    (logs_validate), as findings of kind "unexplained" and the summary's `validation`."""
    from pyspark.sql import functions as F

    def say(text: str) -> None:
        if progress is not None:
            progress(text)

    files, errors = expand_inputs(inputs)
    out.mkdir(parents=True, exist_ok=True)
    if not files:
        outcome = LogsOutcome(_summary([], {}, 0, [], [], errors), input_errors=errors)
        _write_json(out, outcome.summary)
        return outcome
    say(f"parsing {len(files)} file(s)")
    parsed = parse_logs(spark, files)
    events = parsed.events
    if parsed.extra_events:
        extra = spark.createDataFrame(parsed.extra_events, schema=events.schema)
        events = events.unionByName(extra)
    events = events.persist()
    say("writing events")
    events.write.mode("overwrite").parquet(str(out / "events"))
    parsed.release()  # events is cached and written: what it was computed from can go
    say("checking group histories")
    cfg = config
    # The JVM sends each group's events to one task (hash partitioning, one task per core: a
    # groupBy's shuffle was coalesced to one task by adaptive execution, and collect_list's
    # nested rows cost more to hand to Python than flat ones); Python groups them there.
    cores = spark.sparkContext.defaultParallelism
    by_group = events.select(*CHECK_COLUMNS).filter(F.col("group") != "").repartition(cores, "group")
    checked = by_group.rdd.mapPartitions(lambda rows: _check_partition(rows, cfg)).collect()
    verdicts: list[GroupVerdict] = []
    if validate:
        say("validating group histories with TLC")
        budget = validate_timeout
        batches = max(1, min(cores, len(checked)))
        grouped = (
            events.filter(F.col("group") != "")
            .groupBy("group")
            .agg(F.collect_list(F.struct(*CHECK_COLUMNS)).alias("events"))
        )
        verdicts = sorted(
            grouped.rdd.coalesce(batches).mapPartitions(lambda rows: _validate_batch(rows, budget)).collect(),
            key=lambda v: v.group,
        )
    events.unpersist()
    unexplained = [f for f in map(verdict_finding, verdicts) if f is not None]
    findings = sorted([f for fs, _ in checked for f in fs] + unexplained, key=lambda f: (f.file, f.line, f.rule))
    histories = sorted((h for _, h in checked), key=lambda h: h.group)
    _write_tables(spark, out, findings, histories)
    counts = parsed.counts
    summary = _summary(files, counts, sum(parsed.per_file_lines.values()), findings, histories, errors)
    summary["per_file_lines"] = parsed.per_file_lines
    if validate:
        summary["validation"] = _validation_summary(verdicts)
    _write_json(out, summary)
    from kgc.conformance.pipeline.logs_page import write_page

    write_page(out / "timeline.html", summary, findings, histories)
    return LogsOutcome(summary, findings, histories, errors, verdicts)


def _validation_summary(verdicts: Sequence[GroupVerdict]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v.verdict] = counts.get(v.verdict, 0) + 1
    return {
        "counts": counts,
        "groups": {
            v.group: {
                "verdict": v.verdict,
                "observations": v.observations,
                "event": v.index or None,
                "file": v.event.file if v.event else None,
                "line": v.event.line if v.event else None,
                "detail": v.detail,
            }
            for v in verdicts
        },
    }


def _summary(
    files: Sequence[InputFile],
    counts: dict[str, int],
    lines: int,
    findings: Sequence[Finding],
    histories: Sequence[GroupHistory],
    errors: Sequence[str],
) -> dict[str, Any]:
    coordinator = counts.get("event", 0) + counts.get("unparsed", 0)
    return {
        "files": len(files),
        "lines": lines,
        "events": counts.get("event", 0),
        "unparsed": counts.get("unparsed", 0),
        "categories": dict(counts),
        "understood": (counts.get("event", 0) / coordinator) if coordinator else 1.0,
        "groups": len(histories),
        "violations": sum(1 for f in findings if f.kind == "violation"),
        "warnings": sum(1 for f in findings if f.kind == "warning"),
        "file_status": [{"file": f.path, "status": f.status, "detail": f.detail} for f in files if f.status != "ok"],
        "input_errors": list(errors),
        "findings": [
            {"file": f.file, "line": f.line, "group": f.group, "kind": f.kind, "rule": f.rule, "message": f.message}
            for f in findings
        ],
    }


def _write_json(out: Path, summary: dict[str, Any]) -> None:
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


def _write_tables(
    spark: SparkSession, out: Path, findings: Sequence[Finding], histories: Sequence[GroupHistory]
) -> None:
    finding_schema = (
        "file string, line long, group string, kind string, rule string, message string, lines array<string>"
    )
    spark.createDataFrame([f.as_row() for f in findings], finding_schema).coalesce(1).write.mode("overwrite").parquet(
        str(out / "findings")
    )
    group_schema = (
        "group string, events long, generations array<long>, rebalances long, brokers array<string>, "
        "first_ts string, last_ts string, state_ms map<string,long>, timeline string"
    )
    rows = [
        {
            "group": h.group,
            "events": h.events,
            "generations": h.generations,
            "rebalances": h.rebalances,
            "brokers": h.brokers,
            "first_ts": h.first_ts,
            "last_ts": h.last_ts,
            "state_ms": h.state_ms,
            "timeline": json.dumps(h.timeline),
        }
        for h in histories
    ]
    spark.createDataFrame(rows, group_schema).coalesce(1).write.mode("overwrite").parquet(str(out / "groups"))


#: The events table's field columns, for readers of the Parquet output.
EVENT_FIELDS = FIELDS
