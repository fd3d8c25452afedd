"""`kgc serve` at the wire: KIP-511, parked requests that keep only their own connection
waiting, and hostile frames (oversized or negative lengths, unknown API keys, bodies that do not
decode, clients vanishing mid-request) that close their connection and nothing else."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.consumer import JoinGroupRequest, JoinGroupResponse
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse
from serve_support import Proc, start_server

INITIAL_DELAY_MS = 3000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Proc, int]]:
    tmp = tmp_path_factory.mktemp("serve")
    proc, port = start_server(tmp, "--initial-rebalance-delay-ms", str(INITIAL_DELAY_MS))
    yield proc, port
    assert proc.stop() == 0, "".join(proc.err)


def connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def request(msg: Any, corr: int = 1) -> bytes:
    msg.with_header(correlation_id=corr, client_id="wire-test")
    return bytes(msg.encode(header=True, framed=True))


def read_frame(s: socket.socket) -> bytes:
    head = recv_exactly(s, 4)
    return recv_exactly(s, struct.unpack(">i", head)[0])


def recv_exactly(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def closed_by_server(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def still_serving(port: int) -> None:
    with connect(port) as s:
        s.sendall(request(ApiVersionsRequest[0]()))
        resp = ApiVersionsResponse.decode(read_frame(s), version=0, header=True)
        assert resp.error_code == 0


def log_has(proc: Proc, text: str, timeout: float = 5) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if any(text in line for line in proc.err):
            return True
        time.sleep(0.05)
    return False


def test_api_versions_advertises_what_is_served(server: tuple[Proc, int]) -> None:
    _, port = server
    with connect(port) as s:
        s.sendall(request(ApiVersionsRequest[3](client_software_name="t", client_software_version="1")))
        resp = ApiVersionsResponse.decode(read_frame(s), version=3, header=True)
    assert resp.error_code == 0
    ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert ranges[11] == (0, 9) and ranges[14] == (0, 5) and ranges[12] == (0, 4)
    assert ranges[3][0] == 0, "aiokafka needs the lowest Metadata versions"
    assert 0 not in ranges and 19 not in ranges, "Produce and CreateTopics are not served"


def test_unsupported_api_versions_version_is_answered_the_kip_511_way(server: tuple[Proc, int]) -> None:
    _, port = server
    with connect(port) as s:
        s.sendall(request(ApiVersionsRequest[4](client_software_name="t", client_software_version="1"), corr=7))
        frame = read_frame(s)
        # a v0 header (correlation id only) and a v0 body
        assert struct.unpack(">i", frame[:4])[0] == 7
        resp = ApiVersionsResponse.decode(frame[4:], version=0)
        assert resp.error_code == 35
        assert {k.api_key: k.max_version for k in resp.api_keys}[18] == 3
        # the connection stays open: the client retries with a version it was told
        s.sendall(request(ApiVersionsRequest[3](client_software_name="t", client_software_version="1"), corr=8))
        assert ApiVersionsResponse.decode(read_frame(s), version=3, header=True).error_code == 0


def _join(member: str = "") -> Any:
    return JoinGroupRequest[3](
        group_id="wire",
        session_timeout_ms=10000,
        rebalance_timeout_ms=10000,
        member_id=member,
        protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"m")],
    )


def test_a_parked_join_keeps_only_its_own_connection_waiting(server: tuple[Proc, int]) -> None:
    _, port = server
    with connect(port) as a, connect(port) as b:
        sent = time.monotonic()
        a.sendall(request(_join(), corr=1))  # parked for the initial rebalance delay
        b.sendall(request(MetadataRequest[1](topics=[MetadataRequest.MetadataRequestTopic(name="wire-t")]), corr=2))
        meta = MetadataResponse.decode(read_frame(b), version=1, header=True)
        assert time.monotonic() - sent < INITIAL_DELAY_MS / 1000, "the other connection waited for the join"
        assert [t.name for t in meta.topics] == ["wire-t"] and len(meta.topics[0].partitions) == 3
        joined = JoinGroupResponse.decode(read_frame(a), version=3, header=True)
        waited = time.monotonic() - sent
    assert joined.error_code == 0 and joined.generation_id == 1 and joined.leader == joined.member_id
    assert waited >= INITIAL_DELAY_MS / 1000 - 0.2


HOSTILE = {
    "oversized length": struct.pack(">i", 0x7FFFFFF0),
    "negative length": struct.pack(">i", -5),
    "unknown api key": struct.pack(">i", 10) + struct.pack(">hhih", 99, 0, 1, -1),
    "unserved version": struct.pack(">i", 10) + struct.pack(">hhih", 11, 10, 1, -1),
    "body that does not decode": struct.pack(">i", 13) + struct.pack(">hhih", 11, 5, 1, -1) + b"\x00\x05g",
    "header shorter than a header": struct.pack(">i", 3) + b"\x00\x0b\x00",
}
LOG_LINE = {
    "oversized length": "outside 0..",
    "negative length": "request length -5",
    "unknown api key": "unknown or unserved API key 99",
    "unserved version": "JoinGroup v10 is not served",
    "body that does not decode": "JoinGroup v5 does not decode",
    "header shorter than a header": "shorter than a request header",
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_frames_close_their_connection_only(server: tuple[Proc, int], case: str) -> None:
    proc, port = server
    with connect(port) as bystander, connect(port) as s:
        s.sendall(HOSTILE[case])
        assert closed_by_server(s)
        assert log_has(proc, LOG_LINE[case]), "".join(proc.err[-10:])
        bystander.sendall(request(ApiVersionsRequest[0]()))
        assert ApiVersionsResponse.decode(read_frame(bystander), version=0, header=True).error_code == 0
    still_serving(port)


def test_clients_vanishing_mid_request(server: tuple[Proc, int]) -> None:
    proc, port = server
    with connect(port) as s:  # half a frame, then gone
        s.sendall(struct.pack(">i", 100) + b"\x00" * 10)
    assert log_has(proc, "closed in the middle of a request (10 bytes of it)")
    with connect(port) as s:  # gone while its JoinGroup is parked
        s.sendall(request(_join(), corr=1))
        time.sleep(0.2)
    time.sleep(INITIAL_DELAY_MS / 1000 + 0.3)  # the join completes with nobody to answer
    still_serving(port)
    assert proc.proc.poll() is None
