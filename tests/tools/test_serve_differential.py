"""The differential run: one client script (serve_clients/probe.py: the same group requests on
raw connections) against librdkafka's mock cluster and against `kgc serve`. Where they agree the
test says so; where they differ it pins each difference as docs/serve-differential.md lists it,
so a change on either side shows up here and in that table."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from serve_support import CLIENTS, Proc, balanced, consumer, first_since, start_server, wait_for

pytestmark = pytest.mark.slow

SESSION_MS = 3000
VOTE = "protocol chosen (votes: range 1, roundrobin 2; leader prefers range)"
AGREE = {
    "heartbeat wrong generation (CompletingRebalance)": "ILLEGAL_GENERATION",
    "sync unknown member": "UNKNOWN_MEMBER_ID",
    "leader sync": ["NONE", "a"],
    "leave": "NONE",
    "heartbeat after leaving": "UNKNOWN_MEMBER_ID",
}
KGC_SERVE = {
    "join v5 without member id": "MEMBER_ID_REQUIRED",
    "first generation": 1,
    "join with session timeout 1 ms": "INVALID_SESSION_TIMEOUT",
    VOTE: ["roundrobin"],
    "join with no common protocol": "INCONSISTENT_GROUP_PROTOCOL",
}
MOCK = {
    "join v5 without member id": "NONE",
    "first generation": 2,
    "join with session timeout 1 ms": "no answer within 10 s",
    VOTE: "connection closed: the broker is gone",
}


def probe(addr: str) -> dict[str, Any]:
    run = subprocess.run([sys.executable, str(CLIENTS / "probe.py"), addr], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return dict(json.loads(run.stdout.strip().splitlines()[-1]))


def test_mock_cluster_and_kgc_serve(tmp_path: Path) -> None:
    mock = Proc([sys.executable, str(CLIENTS / "mock_cluster.py"), "120"], "mock")
    server, port = start_server(tmp_path)
    try:
        addr = mock.lines.get(timeout=30).strip()
        on_mock = probe(addr)
        on_kgc = probe(f"127.0.0.1:{port}")
    finally:
        mock.stop()
        server.stop()
    for key, value in AGREE.items():
        assert on_mock[key] == on_kgc[key] == value, key
    for key, value in KGC_SERVE.items():
        assert on_kgc[key] == value, key
    for key, value in MOCK.items():
        assert on_mock[key] == value, key
    # Kafka's group.initial.rebalance.delay.ms (3 s) and the mock's own wait happen to agree
    assert on_kgc["first join answered after (s)"] >= 2.9 and on_mock["first join answered after (s)"] >= 2.9


def lifecycle(port: int, partitions: int) -> dict[str, float]:
    """The same confluent-kafka consumers against a broker: seconds to the first balanced
    assignment of three, from a SIGKILL to the rest's rebalance, from a clean close to it."""
    procs = [consumer("confluent", port, "lg", "t", f"c{n}", SESSION_MS) for n in range(3)]
    try:
        first = wait_for("a balanced group", lambda: balanced(procs, partitions), 90, procs)
        procs[0].signal(signal.SIGKILL)
        killed = time.monotonic()
        wait_for("the kill noticed", lambda: first_since(procs[1:], "revoked", killed) is not None, 60, procs)
        kill = (first_since(procs[1:], "revoked", killed) or 0) - killed
        wait_for("a balanced pair", lambda: balanced(procs[1:], partitions), 60, procs)
        left = time.monotonic()
        procs[1].signal(signal.SIGTERM)
        wait_for("the leave noticed", lambda: first_since(procs[2:], "revoked", left) is not None, 60, procs)
        leave = (first_since(procs[2:], "revoked", left) or 0) - left
    finally:
        for p in procs:
            p.stop()
    return {"first balanced (s)": first, "SIGKILL to rebalance (s)": kill, "clean close to rebalance (s)": leave}


def test_confluent_consumers_on_mock_cluster_and_kgc_serve(tmp_path: Path) -> None:
    """The client-level run: the same consumer processes and steps on both brokers. Both get
    there; the times are printed (docs/serve-differential.md has a run's)."""
    mock = Proc([sys.executable, str(CLIENTS / "mock_cluster.py"), "300", "t"], "mock")
    try:
        mock_port = int(mock.lines.get(timeout=30).strip().rsplit(":", 1)[1])
        on_mock = lifecycle(mock_port, 4)  # the mock auto-creates topics with 4 partitions
    finally:
        mock.stop()
    server, port = start_server(tmp_path, "--partitions", "4", "--min-session-timeout-ms", "1000")
    try:
        on_kgc = lifecycle(port, 4)
    finally:
        server.stop()
    print(json.dumps({"mock": on_mock, "kgc serve": on_kgc}, indent=1))
    heartbeat_s = SESSION_MS / 6000
    for times in (on_mock, on_kgc):
        assert times["SIGKILL to rebalance (s)"] >= SESSION_MS / 1000 - heartbeat_s - 0.3
        assert times["clean close to rebalance (s)"] < SESSION_MS / 1000
