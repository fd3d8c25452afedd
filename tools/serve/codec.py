"""The wire format, through kafka-python's `kafka.protocol` classes (generated from Kafka's JSON
message specs, flexible versions included): which APIs and versions kgc serve answers, reading a
request frame and writing a response frame.

Why these versions: the ones Kafka 3.9 serves for a consumer, down to each API's lowest version,
so old clients (aiokafka has no flexible versions at all) find a version in common, and up to
the highest this server answers correctly (OffsetFetch stops before the batched v8, Fetch before
topic ids). A request header is read by hand only as far as Kafka's RequestHeader itself fixes
it (api key, version, correlation id, client id: the same in every header version), because the
request class that decodes the rest is chosen by those fields.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)

__all__ = [
    "API_VERSIONS_KEY",
    "SERVED",
    "UNSUPPORTED_VERSION",
    "Api",
    "FrameError",
    "RequestHeaderFields",
    "api_versions_entries",
    "decode_request",
    "encode_response",
    "peek_header",
]

UNSUPPORTED_VERSION = 35
API_VERSIONS_KEY = 18


@dataclass(frozen=True)
class Api:
    key: int
    name: str
    request: Any
    response: Any
    min_version: int
    max_version: int


SERVED: dict[int, Api] = {
    a.key: a
    for a in (
        Api(1, "Fetch", FetchRequest, FetchResponse, 4, 12),
        Api(2, "ListOffsets", ListOffsetsRequest, ListOffsetsResponse, 1, 7),
        Api(3, "Metadata", MetadataRequest, MetadataResponse, 0, 12),
        Api(8, "OffsetCommit", OffsetCommitRequest, OffsetCommitResponse, 2, 8),
        Api(9, "OffsetFetch", OffsetFetchRequest, OffsetFetchResponse, 1, 7),
        Api(10, "FindCoordinator", FindCoordinatorRequest, FindCoordinatorResponse, 0, 4),
        Api(11, "JoinGroup", JoinGroupRequest, JoinGroupResponse, 0, 9),
        Api(12, "Heartbeat", HeartbeatRequest, HeartbeatResponse, 0, 4),
        Api(13, "LeaveGroup", LeaveGroupRequest, LeaveGroupResponse, 0, 5),
        Api(14, "SyncGroup", SyncGroupRequest, SyncGroupResponse, 0, 5),
        Api(18, "ApiVersions", ApiVersionsRequest, ApiVersionsResponse, 0, 3),
    )
}


class FrameError(Exception):
    """A frame this server cannot read: the connection it came on is closed."""


@dataclass(frozen=True)
class RequestHeaderFields:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


_HEAD = struct.Struct(">hhih")


def peek_header(frame: bytes) -> RequestHeaderFields:
    """api key, version, correlation id and client id: the fields every request header version
    starts with (the client id is a nullable int16-length string even in the flexible header v2,
    which only adds tagged fields after it)."""
    if len(frame) < _HEAD.size:
        raise FrameError(f"request of {len(frame)} bytes is shorter than a request header")
    key, version, corr, n = _HEAD.unpack_from(frame)
    client_id = None
    if n >= 0:
        raw = frame[_HEAD.size : _HEAD.size + n]
        if len(raw) != n:
            raise FrameError(f"client id of {n} bytes runs past the end of the request")
        client_id = raw.decode("utf-8", "replace")
    return RequestHeaderFields(key, version, corr, client_id)


def decode_request(api: Api, version: int, frame: bytes) -> Any:
    """The request object (header included), or FrameError if the bytes are not one."""
    try:
        return api.request.decode(frame, version=version, header=True)
    except Exception as err:  # the generated decoders raise struct.error, ValueError, IndexError...
        raise FrameError(f"{api.name} v{version} does not decode: {type(err).__name__}: {err}") from None


def encode_response(response: Any, version: int, correlation_id: int) -> bytes:
    """A framed response (4-byte length, header, body) for `version` of its API."""
    if response.API_VERSION != version:
        raise ValueError(f"{type(response).__name__} is version {response.API_VERSION}, the request {version}")
    response.with_header(correlation_id=correlation_id)
    # the version is the object's own: encode(version=...) with a response header set fails in
    # kafka-python 3.0.12 (it sets request_api_version on the ResponseHeader)
    return bytes(response.encode(header=True, framed=True))


def api_versions_entries() -> list[Any]:
    return [
        ApiVersionsResponse.ApiVersion(api_key=a.key, min_version=a.min_version, max_version=a.max_version)
        for a in sorted(SERVED.values(), key=lambda a: a.key)
    ]
