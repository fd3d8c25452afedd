"""`kgc serve --store PATH` (issue 15): the server is SIGKILLed under a running group and
restarted on the same file; the clients' committed group state survives. The group comes back
at its generation with its members and assignments, the consumers (which kept running) go on
heartbeating in that generation without a rebalance, committed offsets are still there, and the
next rebalance gives the next generation."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition
from serve_support import Proc, balanced, consumer, first_since, free_port, start_server, wait_for

pytestmark = pytest.mark.slow

PARTITIONS = 4
SESSION_MS = 3000


def _server(tmp: Path, port: int, store: Path) -> Proc:
    proc, _ = start_server(
        tmp,
        "--port",
        str(port),
        "--store",
        str(store),
        "--partitions",
        str(PARTITIONS),
        "--initial-rebalance-delay-ms",
        "0",
        "--min-session-timeout-ms",
        "1000",
    )
    return proc


def _generations(proc: Proc, pattern: str) -> list[int]:
    return [int(m.group(1)) for line in proc.err for m in [re.search(pattern, line)] if m]


def test_restarted_server_recovers_the_group(tmp_path: Path) -> None:
    port, store = free_port(), tmp_path / "groups.log"
    server = _server(tmp_path, port, store)
    procs: list[Proc] = []
    try:
        procs = [consumer("kafka_python", port, "g", "t", f"c{n}", SESSION_MS, "commit") for n in range(2)]
        wait_for("the first assignment", lambda: balanced(procs, PARTITIONS), 60, procs)
        wait_for(
            "the commits",
            lambda: all(any(e.get("event") == "committed" for e in p.events) for p in procs),
            30,
            procs,
        )
        before = {p.name: p.assignment() for p in procs}
        generation = max(_generations(server, r"for generation (\d+)"))

        server.signal(signal.SIGKILL)  # the crash: no clean stop, nothing flushed on the way out
        server.proc.wait(10)
        time.sleep(0.5)
        restarted = time.monotonic()
        server = _server(tmp_path, port, store)
        loaded = _generations(server, r"Loaded group g generation (\d+) state Stable")
        assert loaded == [generation], "".join(server.err)

        # the consumers reconnect and go on in their generation: no rebalance for two sessions
        time.sleep(2 * SESSION_MS / 1000)
        assert first_since(procs, "revoked", restarted) is None, [p.events for p in procs]
        assert {p.name: p.assignment() for p in procs} == before
        assert not _generations(server, r"Preparing to rebalance group g .* old generation (\d+)")

        probe = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", group_id="g", enable_auto_commit=False)
        try:
            committed = {p: probe.committed(TopicPartition("t", p)) for p in range(PARTITIONS)}
        finally:
            probe.close()
        assert committed == {p: 100 + p for p in range(PARTITIONS)}

        # the group goes on: a newcomer makes the next generation, not a reused one
        procs.append(consumer("kafka_python", port, "g", "t", "newcomer", SESSION_MS))
        wait_for("the newcomer's assignment", lambda: balanced(procs, PARTITIONS), 60, procs)
        assert max(_generations(server, r"Stabilized group g generation (\d+)")) == generation + 1
    finally:
        for p in procs:
            p.stop()
        server.stop()
