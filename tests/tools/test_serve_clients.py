"""`kgc serve` with Kafka's own clients: consumer processes of one group against the server,
each step checked from the clients' side (their rebalance callbacks), and the server's recorded
run replayed (`kgc replay`) and validated against the spec (`kgc validate`)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from serve_support import KGC, balanced, consumer, first_since, start_server, wait_for

pytestmark = pytest.mark.slow

PARTITIONS = 6
SESSION_MS = 3000
UNIT_S = 0.1


def _group_lifecycle(tmp_path: Path, kinds: list[str]) -> None:
    rec = tmp_path / "rec"
    server, port = start_server(
        tmp_path,
        "--record",
        str(rec),
        "--partitions",
        str(PARTITIONS),
        "--initial-rebalance-delay-ms",
        "0",
        "--min-session-timeout-ms",
        "1000",
    )
    procs = []
    try:
        procs = [consumer(k, port, "g", "t", f"{k}-{n}", SESSION_MS) for n, k in enumerate(kinds)]
        wait_for("the first assignment", lambda: balanced(procs, PARTITIONS), 60, procs)

        # SIGKILL one: the rest rebalance only once its session has timed out
        victim, rest = procs[0], procs[1:]
        victim.signal(signal.SIGKILL)
        killed = time.monotonic()
        wait_for("the rest to be revoked", lambda: first_since(rest, "revoked", killed) is not None, 30, rest)
        noticed = (first_since(rest, "revoked", killed) or 0) - killed
        wait_for("a rebalance without the killed one", lambda: balanced(rest, PARTITIONS), 30, rest)
        heartbeat_s = SESSION_MS / 6000
        assert noticed >= SESSION_MS / 1000 - heartbeat_s - 2 * UNIT_S, f"rebalanced {noticed:.2f} s after the kill"

        # a clean close sends LeaveGroup: the others rebalance at once, long before a session
        leaver, rest = rest[0], rest[1:]
        left = time.monotonic()
        leaver.signal(signal.SIGTERM)
        wait_for("a rebalance after the leave", lambda: first_since(rest, "revoked", left) is not None, 30, rest)
        took = (first_since(rest, "revoked", left) or 0) - left
        assert took < SESSION_MS / 1000 - 0.5, f"the leave took {took:.2f} s to rebalance"
        wait_for("a rebalance without the leaver", lambda: balanced(rest, PARTITIONS), 30, rest)
        assert leaver.proc.wait(20) == 0

        # a new member joins
        newcomer = consumer(kinds[0], port, "g", "t", "newcomer", SESSION_MS)
        procs.append(newcomer)
        group = [*rest, newcomer]
        wait_for("the newcomer's assignment", lambda: balanced(group, PARTITIONS), 60, group)
        for p in group:
            p.stop()
    finally:
        for p in procs:
            p.stop()
        server.stop()
    assert server.proc.returncode == 0, "".join(server.err)

    scenario = rec / "scenarios" / "g.json"
    steps = json.loads(scenario.read_text())["steps"]
    joins = {s["id"]: s for s in steps if s.get("do") == "join"}
    required = [s for s in steps if s.get("error") == "MEMBER_ID_REQUIRED"]
    assert any(j.get("version", 0) >= 4 for j in joins.values())
    assert required, "no JoinGroup v4+ went through MEMBER_ID_REQUIRED"
    for r in required:  # each was followed by a join with the id it was given
        assert any(j["member"] == "@" + r["expect"] for j in joins.values())
    assert any(s.get("do") == "leave" for s in steps)

    replay = subprocess.run([str(KGC), "replay", str(scenario)], capture_output=True, text=True, timeout=120)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    traces = rec / "traces"
    trace = json.loads((traces / "g.json").read_text())
    assert trace.get("stopped") is None, trace.get("stopped")
    validate = subprocess.run([str(KGC), "validate", str(traces)], capture_output=True, text=True, timeout=600)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    assert "1 behaviours of the spec, 0 not" in validate.stdout


GROUPS = {
    "kafka-python": ["kafka_python"] * 3,
    "aiokafka": ["aiokafka"] * 3,
    "confluent-kafka": ["confluent"] * 3,
    "mixed": ["kafka_python", "aiokafka", "confluent"],
}


@pytest.mark.parametrize("clients", sorted(GROUPS))
def test_group_of_kafka_clients(tmp_path: Path, clients: str) -> None:
    _group_lifecycle(tmp_path, GROUPS[clients])
