"""One client script for the differential run: the same group requests, sent on raw connections
through kafka-python's protocol classes, to any broker (kgc serve, or librdkafka's mock cluster),
with what each answer was printed as one JSON object. Deterministic on purpose: it asks the
questions where Kafka's coordinator and a reference could differ, and nothing else.

Usage: probe.py HOST:PORT  ->  one JSON line {probe name: observation}.
"""

from __future__ import annotations

import json
import socket
import struct
import sys
import time
from typing import Any

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
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

ERRORS = {
    0: "NONE",
    22: "ILLEGAL_GENERATION",
    23: "INCONSISTENT_GROUP_PROTOCOL",
    25: "UNKNOWN_MEMBER_ID",
    26: "INVALID_SESSION_TIMEOUT",
    27: "REBALANCE_IN_PROGRESS",
    35: "UNSUPPORTED_VERSION",
    79: "MEMBER_ID_REQUIRED",
}


class Conn:
    def __init__(self, addr: str) -> None:
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=30)
        self.corr = 0

    def send(self, msg: Any) -> int:
        self.corr += 1
        msg.with_header(correlation_id=self.corr, client_id="probe")
        self.s.sendall(bytes(msg.encode(header=True, framed=True)))
        return self.corr

    def recv(self, cls: Any, version: int) -> Any:
        n = struct.unpack(">i", self._exactly(4))[0]
        return cls.decode(self._exactly(n), version=version, header=True)

    def call(self, msg: Any, cls: Any, version: int) -> Any:
        self.send(msg)
        return self.recv(cls, version)

    def _exactly(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf


def err(code: int) -> str:
    return ERRORS.get(code, str(code))


def join(
    group: str, member: str = "", version: int = 5, protocols: tuple[str, ...] = ("range",), session: int = 10000
) -> Any:
    return JoinGroupRequest[version](
        group_id=group,
        session_timeout_ms=session,
        rebalance_timeout_ms=10000,
        member_id=member,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=p, metadata=b"") for p in protocols],
    )


def answer_or_silence(conn: Conn, msg: Any, wait_s: float = 10) -> str:
    """The error of a JoinGroup v1 answer, or what happened instead."""
    conn.s.settimeout(wait_s)
    try:
        return err(conn.call(msg, JoinGroupResponse, 1).error_code)
    except TimeoutError:
        return f"no answer within {wait_s:.0f} s"
    except (ConnectionError, OSError):
        return "connection closed"


def main() -> None:
    addr = sys.argv[1]
    out: dict[str, Any] = {}
    c = Conn(addr)
    versions = c.call(ApiVersionsRequest[0](), ApiVersionsResponse, 0)
    out["JoinGroup versions"] = [[k.min_version, k.max_version] for k in versions.api_keys if k.api_key == 11][0]

    # 1. a first JoinGroup v5 without a member id
    t = time.monotonic()
    first = c.call(join("p1"), JoinGroupResponse, 5)
    out["join v5 without member id"] = err(first.error_code)
    member = first.member_id
    if first.error_code == 79:
        first = c.call(join("p1", member), JoinGroupResponse, 5)
    out["first generation"] = first.generation_id
    out["first join answered after (s)"] = round(time.monotonic() - t, 1)

    # 2. heartbeat with a wrong generation, sync of an unknown member, then the real sync
    hb = c.call(
        HeartbeatRequest[1](group_id="p1", generation_id=first.generation_id + 7, member_id=member),
        HeartbeatResponse,
        1,
    )
    out["heartbeat wrong generation (CompletingRebalance)"] = err(hb.error_code)
    sync_unknown = c.call(
        SyncGroupRequest[1](group_id="p1", generation_id=first.generation_id, member_id="nobody", assignments=[]),
        SyncGroupResponse,
        1,
    )
    out["sync unknown member"] = err(sync_unknown.error_code)
    assignment = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=member, assignment=b"a")]
    sync = c.call(
        SyncGroupRequest[1](group_id="p1", generation_id=first.generation_id, member_id=member, assignments=assignment),
        SyncGroupResponse,
        1,
    )
    out["leader sync"] = [err(sync.error_code), bytes(sync.assignment).decode()]

    # 4. leave of the single member of p1: an empty group
    leave = c.call(LeaveGroupRequest[1](group_id="p1", member_id=member), LeaveGroupResponse, 1)
    out["leave"] = err(leave.error_code)
    hb2 = c.call(
        HeartbeatRequest[1](group_id="p1", generation_id=first.generation_id, member_id=member), HeartbeatResponse, 1
    )
    out["heartbeat after leaving"] = err(hb2.error_code)
    # 3. a session timeout below the broker's minimum
    out["join with session timeout 1 ms"] = answer_or_silence(Conn(addr), join("p3", version=1, session=1))

    # last, as it may take the broker down: the protocol vote: three members (v1: no member id needed) with different preferences
    conns = [Conn(addr) for _ in range(3)]
    for conn in conns:
        conn.s.settimeout(15)
    prefs = [("range", "roundrobin"), ("roundrobin", "range"), ("roundrobin", "range")]
    for conn, p in zip(conns, prefs):
        conn.send(join("p2", version=1, protocols=p))
        time.sleep(0.2)
    try:
        answers = [conn.recv(JoinGroupResponse, 1) for conn in conns]
    except (ConnectionError, OSError) as e:
        what = "no answer" if isinstance(e, TimeoutError) else "connection closed: the broker is gone"
        out["protocol chosen (votes: range 1, roundrobin 2; leader prefers range)"] = what
        print(json.dumps(out), flush=True)
        return
    out["protocol chosen (votes: range 1, roundrobin 2; leader prefers range)"] = sorted(
        {a.protocol_name for a in answers}
    )
    out["vote join errors"] = [err(a.error_code) for a in answers]

    # a join whose protocols the group does not support
    out["join with no common protocol"] = answer_or_silence(Conn(addr), join("p2", version=1, protocols=("sticky",)))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
