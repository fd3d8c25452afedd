"""`kgc bench logs`: the throughput of `kgc pipeline logs` in MB/s on local[1] and local[2].

The input is generated broker logs (1 GiB; 16 MiB with --quick) in 16 files: many groups whose
rebalances interleave (prepare, new member, Stabilized, assignment, a member expiring), nine noise
lines (other loggers) per coordinator line. Both runs read the same files in the same process;
the ratio local[2]/local[1] is the scaling on this machine. Checks: every generated coordinator
line is an event, the categories add up to the lines, no violation. Target (issue 14):
>= 50 MB/s on local[2].

`--validate` (TLC per group, logs_validate) is measured apart, on local[2] over VALIDATE_GROUPS
groups (2 with --quick) that rebalance once: groups validated per second, from the progress line that
starts the validation to the run's end (the Spark parse and check before it excluded). Check:
every generated history is explained (they are legal by construction).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from kgc.tools.bench.result import BenchCheckFailed, BenchOptions, BenchResult, BenchUnavailable

__all__ = ["logs_benchmark", "write_broker_logs"]

TARGET_MB_S = 50.0
FILES = 16
GROUPS_PER_BLOCK = 20
REBALANCES = 5
#: Groups validated (2 with --quick): TLC explained 10 in 109 s at load 19 (one run, one core).
VALIDATE_GROUPS = 40
#: A validated group's history: one rebalance (three observations: its start, Stabilized, the
#: leader's assignment); with five, each TLC run searched for minutes.
VALIDATE_REBALANCES = 1
GC = "(kafka.coordinator.group.GroupCoordinator)"
NOISE = (
    "[{ts}] INFO [Log partition=orders-{n}, dir=/var/lib/kafka/data] Rolled new log segment at offset {n}8812 "
    "in 2 ms. (kafka.log.LocalLog)",
    "[{ts}] INFO [ProducerStateManager partition=orders-{n}] Wrote producer snapshot at offset {n}8812 with 0 "
    "producer ids in 1 ms. (kafka.log.ProducerStateManager)",
    "[{ts}] INFO [Partition orders-{n} broker=1] ISR updated to 1,2,3 and version updated to {n} "
    "(kafka.cluster.Partition)",
)


def _block_template(rebalances: int = REBALANCES, groups: int = GROUPS_PER_BLOCK) -> tuple[str, int]:
    """One block of interleaved group histories with `@K@` where the block number goes (group ids
    differ per block, so every group's history is legal); and its count of coordinator lines."""
    lines: list[str] = []
    events = 0
    for r in range(rebalances):
        for g in range(groups):
            sec = r * 60 + g
            ts = f"2024-03-01 10:{sec // 60:02d}:{sec % 60:02d},{g:03d}"
            group = f"orders-consumer-@K@-{g}"
            member = f"consumer-{group}-1-5e6a1c4b-{r:04d}-4b8e-9f3a-0c1d2e3f4a5b"
            coordinator = [
                f"Dynamic Member with unknown member id joins group {group} in Stable state. Created a new member "
                f"id {member} for this member and add to the group.",
                f"Preparing to rebalance group {group} in state PreparingRebalance with old generation {r} "
                f"(__consumer_offsets-{g}) (reason: Adding new member {member} with group instance id None; "
                "client reason: not provided)",
                f"Stabilized group {group} generation {r + 1} (__consumer_offsets-{g}) with 2 members",
                f"Assignment received from leader {member} for group {group} for generation {r + 1}. The group "
                "has 2 members, 0 of which are static.",
                f"Member {member}-old in group {group} has failed, removing it from the group",
            ]
            for text in coordinator:
                lines.append(f"[{ts}] INFO [GroupCoordinator 1]: {text} {GC}")
                events += 1
                for n in range(9):
                    lines.append(NOISE[n % 3].format(ts=ts, n=n))
    return "\n".join(lines) + "\n", events


def write_broker_logs(
    folder: Path, total_bytes: int, rebalances: int = REBALANCES, groups: int = GROUPS_PER_BLOCK
) -> tuple[int, int, int]:
    """Generated logs under `folder`: (bytes, lines, coordinator lines) written; blocks of
    `groups` groups, each rebalancing `rebalances` times per block."""
    template, events_per_block = _block_template(rebalances, groups)
    lines_per_block = template.count("\n")
    handles = [(folder / f"server-{i:02d}.log").open("w", encoding="utf-8") for i in range(FILES)]
    written = lines = events = 0
    block = 0
    try:
        while written < total_bytes:
            text = template.replace("@K@", str(block))
            handles[block % FILES].write(text)
            written += len(text)
            lines += lines_per_block
            events += events_per_block
            block += 1
    finally:
        for handle in handles:
            handle.close()
    return written, lines, events


def logs_benchmark(options: BenchOptions) -> BenchResult:
    try:
        from kgc.conformance.pipeline.logs_pipeline import run_logs
        from kgc.conformance.pipeline.session import SparkMissing, spark_available, spark_session
    except ImportError as exc:  # pragma: no cover
        raise BenchUnavailable(f"kgc pipeline logs is not importable: {exc}") from None
    if not spark_available():
        raise BenchUnavailable("PySpark is not installed (the spark extra)")
    size = (16 if options.quick else 1024) * 1024 * 1024
    work = Path(tempfile.mkdtemp(prefix="kgc-bench-logs-"))
    rows = []
    try:
        options.say(f"generating {size // 2**20} MiB of broker logs")
        data = work / "logs"
        data.mkdir()
        written, lines, events = write_broker_logs(data, size)
        for master in ("local[1]", "local[2]"):
            options.say(f"kgc pipeline logs on {master}")
            try:
                with spark_session(master, app_name="kgc-bench-logs", partitions=2) as spark:
                    started = time.perf_counter()
                    outcome = run_logs(spark, [str(data)], work / f"out-{master[6]}")
                    seconds = time.perf_counter() - started
            except SparkMissing as exc:
                raise BenchUnavailable(str(exc)) from None
            summary = outcome.summary
            if summary["lines"] != lines or sum(summary["categories"].values()) != lines:
                raise BenchCheckFailed(f"{master}: {summary['lines']} lines counted, {lines} written")
            if summary["events"] != events or outcome.violations:
                raise BenchCheckFailed(
                    f"{master}: {summary['events']} events and {outcome.violations} violations; {events} written, none expected"
                )
            rows.append(
                {
                    "master": master,
                    "mib": round(written / 2**20, 1),
                    "lines": lines,
                    "events": events,
                    "seconds": round(seconds, 2),
                    "mb_s": round(written / 1e6 / seconds, 1),
                }
            )
        options.say("kgc pipeline logs --validate on local[2]")
        checked = work / "validate"
        checked.mkdir()
        groups = 2 if options.quick else VALIDATE_GROUPS
        block = len(_block_template(VALIDATE_REBALANCES, groups)[0].replace("@K@", "0"))
        write_broker_logs(checked, block, VALIDATE_REBALANCES, groups)
        validation = _validate_rate(run_logs, spark_session, checked, work / "out-validate")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    one, two = rows
    ratio = two["mb_s"] / one["mb_s"] if one["mb_s"] else 0.0
    notes = [
        f"local[2]/local[1] = {ratio:.2f} on this machine; target >= {TARGET_MB_S:.0f} MB/s on local[2]: "
        + ("met" if two["mb_s"] >= TARGET_MB_S else "NOT met")
        + (" (--quick: sizes too small for timing claims)" if options.quick else ""),
        f"--validate on local[2]: {validation['groups']} groups explained in {validation['seconds']} s of TLC "
        f"({validation['groups_s']} groups/s)",
    ]
    return BenchResult(
        name="logs",
        ok=True,
        columns=["master", "mib", "lines", "events", "seconds", "mb_s"],
        rows=rows,
        summary={
            "mb_s_local1": one["mb_s"],
            "mb_s_local2": two["mb_s"],
            "ratio": round(ratio, 2),
            "validate_groups_s": validation["groups_s"],
        },
        notes=notes,
        labels={"mb_s": "MB/s", "mib": "MiB"},
        data={"validate": validation},
    )


def _validate_rate(run_logs: Any, spark_session: Any, data: Path, out: Path) -> dict[str, Any]:
    """Groups validated per second by `run_logs(validate=True)`: timed from its progress line
    announcing the TLC step to its return."""
    marks: dict[str, float] = {}

    def progress(text: str) -> None:
        if text.startswith("validating"):
            marks["validate"] = time.perf_counter()

    with spark_session("local[2]", app_name="kgc-bench-logs-validate", partitions=2) as spark:
        outcome = run_logs(spark, [str(data)], out, progress=progress, validate=True)
    seconds = time.perf_counter() - marks["validate"]
    verdicts = [v.verdict for v in outcome.verdicts]
    explained = verdicts.count("explained")
    if not verdicts or explained != len(verdicts) or len(verdicts) != outcome.summary["groups"]:
        raise BenchCheckFailed(
            f"--validate: {explained} of {len(verdicts)} histories explained ({outcome.summary['groups']} groups); "
            "every generated history is legal"
        )
    return {"groups": explained, "seconds": round(seconds, 2), "groups_s": round(explained / seconds, 2)}
