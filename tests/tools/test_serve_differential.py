"""The differential run: one client script (serve_clients/probe.py: the same group requests on
raw connections) against librdkafka's mock cluster and against `kgc serve`. Where they agree the
test says so; where they differ it pins each difference as docs/serve-differential.md lists it,
so a change on either side shows up here and in that table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from serve_support import CLIENTS, Proc, start_server

pytestmark = pytest.mark.slow

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
