"""`kgc bench serve`: consumer groups against `kgc serve` over TCP.

200 consumers in 20 groups of 10 (quick: 20 in 2) speak the group protocol on their own
connections (kafka-python's protocol classes, asyncio, in this process): JoinGroup v5 (through
MEMBER_ID_REQUIRED), SyncGroup (the leader assigns), Heartbeat every 100 ms (session 3 s), and
a rejoin whenever a heartbeat says REBALANCE_IN_PROGRESS. Churn keeps every group rebalancing:
once a group's generation is complete, one of its members leaves (LeaveGroup) and joins again
as a new member. Measured over the window: JoinGroups answered per second, rebalances
(generations every member synced) per second, the JoinGroup-to-assignment latency of each
member in each generation (p50, p99; from its first JoinGroup of the round to its SyncGroup
answer, MEMBER_ID_REQUIRED and the wait for the others included), and the server's CPU (its
process's user + system time over the window, in cores).

Baseline measured in the same run: the same rebalances (same groups, members, requests) driven
straight on a GroupCoordinator in this process, no wire, no clock: the coordinator's own ceiling;
the ratio says what the protocol server, the sockets and the clients' pacing cost. The load
generator shares the machine with the server (2 cores here), so the figures are a floor.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgc.tools.bench.result import BenchCheckFailed, BenchOptions, BenchResult

__all__ = ["serve_benchmark"]

SESSION_MS = 3000
HEARTBEAT_S = 0.1


@dataclass
class _Stats:
    joins: int = 0
    requests: int = 0
    latencies: list[float] = field(default_factory=list)
    synced: dict[tuple[str, int], int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    measuring: bool = False


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stats: _Stats) -> None:
        self.reader, self.writer, self.corr, self.stats = reader, writer, 0, stats

    async def call(self, msg: Any, cls: Any, version: int) -> Any:
        self.corr += 1
        if self.stats.measuring:
            self.stats.requests += 1
        msg.with_header(correlation_id=self.corr, client_id="bench")
        self.writer.write(bytes(msg.encode(header=True, framed=True)))
        n = struct.unpack(">i", await self.reader.readexactly(4))[0]
        return cls.decode(await self.reader.readexactly(n), version=version, header=True)


async def _member(
    port: int, group: str, size: int, stats: _Stats, stop: asyncio.Event, churn: asyncio.Queue[int], me: int
) -> None:
    from kafka.protocol.consumer import (
        HeartbeatRequest,
        HeartbeatResponse,
        JoinGroupRequest,
        JoinGroupResponse,
        LeaveGroupRequest,
        LeaveGroupResponse,
        SyncGroupRequest,
        SyncGroupResponse,
    )

    conn = _Conn(*await asyncio.open_connection("127.0.0.1", port), stats)
    member = ""
    proto = [JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"m")]
    while not stop.is_set():
        started = time.perf_counter()
        while True:
            r = await conn.call(
                JoinGroupRequest[5](
                    group_id=group,
                    session_timeout_ms=SESSION_MS,
                    rebalance_timeout_ms=SESSION_MS,
                    member_id=member,
                    group_instance_id=None,
                    protocol_type="consumer",
                    protocols=proto,
                ),
                JoinGroupResponse,
                5,
            )
            if r.error_code == 79:  # MEMBER_ID_REQUIRED
                member = r.member_id
                continue
            break
        if r.error_code != 0:
            stats.errors[f"join {r.error_code}"] = stats.errors.get(f"join {r.error_code}", 0) + 1
            member = "" if r.error_code == 25 else member
            continue
        if stats.measuring:
            stats.joins += 1
        assignments = []
        if r.leader == member:
            assignments = [
                SyncGroupRequest.SyncGroupRequestAssignment(member_id=m.member_id, assignment=b"a") for m in r.members
            ]
        s = await conn.call(
            SyncGroupRequest[3](
                group_id=group,
                generation_id=r.generation_id,
                member_id=member,
                group_instance_id=None,
                assignments=assignments,
            ),
            SyncGroupResponse,
            3,
        )
        if s.error_code != 0:
            continue
        key = (group, r.generation_id)
        stats.synced[key] = stats.synced.get(key, 0) + 1
        if stats.measuring:
            stats.latencies.append(time.perf_counter() - started)
        if stats.synced[key] == size:  # the generation is complete: churn one member
            churn.put_nowait(random.randrange(size))
        while not stop.is_set():
            await asyncio.sleep(HEARTBEAT_S)
            if not churn.empty() and churn._queue[0] == me:  # type: ignore[attr-defined]
                churn.get_nowait()
                await conn.call(LeaveGroupRequest[1](group_id=group, member_id=member), LeaveGroupResponse, 1)
                member = ""
                break
            h = await conn.call(
                HeartbeatRequest[1](group_id=group, generation_id=r.generation_id, member_id=member),
                HeartbeatResponse,
                1,
            )
            if h.error_code != 0:
                if h.error_code == 25:
                    member = ""
                break
    conn.writer.close()


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _baseline(groups: int, size: int, seconds: float) -> float:
    """Rebalances/s of the same shape straight on the coordinator (no wire)."""
    from kgc.conformance.driver import Driver
    from kgc.impl.coordinator import GroupConfig

    driver = Driver(GroupConfig(min_session_timeout_ms=10, initial_rebalance_delay_ms=0))
    coord, timer, clock = driver.coordinator, driver.timer, driver.clock
    protos = [("range", "m")]
    members: dict[str, list[str]] = {}
    for g in range(groups):
        got: list[Any] = []
        for _ in range(size):
            coord.handle_join_group(
                f"g{g}", "", None, False, "c", "h", SESSION_MS, SESSION_MS, "consumer", protos, got.append
            )
        timer.advance_to(clock.now_ms() + 1)
        members[f"g{g}"] = [r.member_id for r in got if r.member_id]
    done, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        for g, ids in members.items():
            results: list[Any] = []
            for m in ids:
                coord.handle_join_group(
                    g, m, None, False, "c", "h", SESSION_MS, SESSION_MS, "consumer", protos, results.append
                )
            gen = coord.group(g).generation_id  # type: ignore[union-attr]
            leader = coord.group(g).leader_id  # type: ignore[union-attr]
            coord.handle_sync_group(g, gen, leader, None, None, None, {m: "a" for m in ids}, lambda r: None)
            for m in ids:
                if m != leader:
                    coord.handle_sync_group(g, gen, m, None, None, None, {}, lambda r: None)
                coord.handle_heartbeat(g, m, None, gen, lambda e: None)
            done += 1
    return done / seconds


def serve_benchmark(options: BenchOptions) -> BenchResult:
    groups, size = (2, 10) if options.quick else (20, 10)
    warmup, window = (2.0, 3.0) if options.quick else (5.0, 20.0)
    kgc = Path(sys.executable).with_name("kgc")
    with tempfile.TemporaryDirectory(prefix="kgc-bench-serve-") as tmp:
        server = subprocess.Popen(
            [
                str(kgc),
                "serve",
                "--port",
                "0",
                "--initial-rebalance-delay-ms",
                "0",
                "--min-session-timeout-ms",
                "100",
                "--log-level",
                "WARNING",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=tmp,
        )
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            if "listening on" not in line:
                raise BenchCheckFailed(f"kgc serve did not start: {line!r}")
            port = int(line.rsplit(":", 1)[1])
            options.say(f"serve: {groups * size} consumers in {groups} groups on port {port}")
            stats = _Stats()

            async def run() -> tuple[float, float]:
                stop = asyncio.Event()
                churns = {g: asyncio.Queue[int]() for g in range(groups)}
                tasks = [
                    asyncio.create_task(_member(port, f"g{g}", size, stats, stop, churns[g], m))
                    for g in range(groups)
                    for m in range(size)
                ]
                await asyncio.sleep(warmup)
                stats.measuring, cpu0, t0 = True, _cpu_seconds(server.pid), time.perf_counter()
                synced0 = {k for k, v in stats.synced.items() if v >= size}
                await asyncio.sleep(window)
                stats.measuring = False
                cpu, wall = _cpu_seconds(server.pid) - cpu0, time.perf_counter() - t0
                complete = {k for k, v in stats.synced.items() if v >= size} - synced0
                stop.set()
                await asyncio.wait(tasks, timeout=5)
                for t in tasks:
                    t.cancel()
                return len(complete) / wall, cpu / wall

            rebalances, cores = asyncio.run(run())
        finally:
            server.terminate()
            server.wait(10)
    if not stats.latencies or rebalances == 0:
        raise BenchCheckFailed(f"no rebalance completed in the window (errors: {stats.errors})")
    options.say("serve: baseline (the coordinator in process)")
    baseline = _baseline(groups, size, 1.0 if options.quick else 3.0)
    lat = sorted(stats.latencies)
    p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1000
    p50 = statistics.median(lat) * 1000
    joins = stats.joins / window
    cpu_per_k = cores * window / max(1, stats.requests) * 1000 * 1000
    rows = [
        {"what": "JoinGroups answered", "rate": round(joins, 1), "unit": "/s"},
        {"what": "rebalances completed", "rate": round(rebalances, 1), "unit": "/s"},
        {"what": "JoinGroup->assignment p50", "rate": round(p50, 1), "unit": "ms"},
        {"what": "JoinGroup->assignment p99", "rate": round(p99, 1), "unit": "ms"},
        {"what": "requests answered", "rate": round(stats.requests / window), "unit": "/s"},
        {"what": "server CPU", "rate": round(cores, 2), "unit": "cores"},
        {"what": "server CPU per 1,000 requests", "rate": round(cpu_per_k, 1), "unit": "ms"},
        {"what": "baseline: rebalances in process", "rate": round(baseline, 1), "unit": "/s"},
    ]
    summary = {
        "consumers": groups * size,
        "groups": groups,
        "window_s": window,
        "joins_per_s": round(joins, 1),
        "rebalances_per_s": round(rebalances, 1),
        "join_to_assignment_p50_ms": round(p50, 1),
        "join_to_assignment_p99_ms": round(p99, 1),
        "requests_per_s": round(stats.requests / window),
        "server_cpu_cores": round(cores, 2),
        "server_cpu_ms_per_1000_requests": round(cpu_per_k, 1),
        "baseline_rebalances_per_s": round(baseline, 1),
        "serve_over_baseline": round(rebalances / baseline, 4),
        "errors": stats.errors,
    }
    notes = [
        f"heartbeat every {HEARTBEAT_S * 1000:.0f} ms: a member learns of a rebalance at its next heartbeat",
        "the load generator runs on the same cores as the server",
    ]
    if options.quick:
        notes.append("quick mode: sizes too small for timing claims")
    return BenchResult("serve", True, ["what", "rate", "unit"], rows, summary, notes)
