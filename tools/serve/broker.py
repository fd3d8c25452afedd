"""One broker's answers to a consumer's requests. The group requests (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit) go to kgc.impl's GroupCoordinator; the rest is the least a
broker must say for a consumer to get that far: itself as the only node, leader of every
partition and coordinator of every group; topics created on first mention (Kafka's
auto.create.topics.enable) with `partitions` partitions; offsets from the coordinator's commits;
every log empty (ListOffsets 0, Fetch answers no records after waiting its max wait).

Bytes the coordinator treats as opaque (protocol metadata, assignments) cross into it as latin-1
strings, which map every byte to one character and back, so nothing is lost either way.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import Any

from kafka.protocol.consumer import (
    FetchResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListOffsetsResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
)
from kafka.protocol.metadata import ApiVersionsResponse, FindCoordinatorResponse, MetadataResponse

from kgc.impl.coordinator import (
    GroupCoordinator,
    JoinGroupResult,
    LeaveGroupResult,
    LeaveMemberIdentity,
    SyncGroupResult,
)
from kgc.impl.errors import Errors
from kgc.tools.serve.codec import UNSUPPORTED_VERSION, api_versions_entries
from kgc.tools.serve.offsets import OffsetLog
from kgc.tools.serve.recording import Recorder

__all__ = ["Broker", "partition_key", "split_partition_key"]

log = logging.getLogger("kgc.serve")

NODE_ID = 0
CLUSTER_ID = "kgc-serve"
MAX_FETCH_WAIT_MS = 500
UNKNOWN_TOPIC_OR_PARTITION = 3


def partition_key(topic: str, partition: int) -> str:
    """The coordinator keeps offsets per partition name, as the scenario format writes them."""
    return f"{topic}-{partition}"


def split_partition_key(key: str) -> tuple[str, int]:
    topic, _, p = key.rpartition("-")
    return topic, int(p)


def _bytes(text: str | None) -> bytes:
    return (text or "").encode("latin-1")


def _text(data: bytes | None) -> str:
    return bytes(data or b"").decode("latin-1")


class Broker:
    """Answers requests; `handle` returns the response object (awaiting a parked JoinGroup or
    SyncGroup until the coordinator completes it)."""

    def __init__(
        self,
        coordinator: GroupCoordinator,
        host: str,
        port: int,
        partitions: int,
        recorder: Recorder | None = None,
        before_request: Callable[[], None] = lambda: None,
    ) -> None:
        self.coordinator = coordinator
        self.host = host
        self.port = port
        self.partitions = partitions
        self.recorder = recorder
        self.before_request = before_request
        self.offset_log: OffsetLog | None = None
        self.topics: dict[str, tuple[int, uuid.UUID]] = {}
        self.requests = 0
        self._rid = 0

    # -- plumbing ------------------------------------------------------------------------------
    def _topic(self, name: str) -> tuple[int, uuid.UUID]:
        if name not in self.topics:
            self.topics[name] = (self.partitions, uuid.uuid5(uuid.NAMESPACE_URL, f"kgc-serve/{name}"))
            log.info("[KafkaApis %d] Auto-created topic %s with %d partitions", NODE_ID, name, self.partitions)
        return self.topics[name]

    def _call(
        self, kind: str, group: str, fields: dict[str, Any], send: Callable[[Callable[[Any], None]], None]
    ) -> asyncio.Future[Any]:
        """Call the coordinator with a callback that resolves a future (and is recorded)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        self._rid += 1
        rid = f"{kind[0]}{self._rid}"
        if self.recorder is not None:
            self.recorder.request(kind, rid, group, fields)

        def answer(result: Any) -> None:
            if self.recorder is not None:
                self.recorder.response(rid, kind, result)
            if not fut.done():
                fut.set_result(result)

        send(answer)
        return fut

    async def handle(self, api_key: int, version: int, req: Any, client_id: str | None, client_host: str) -> Any:
        self.requests += 1
        self.before_request()
        handler = getattr(self, f"_api_{api_key}")
        return await handler(version, req, client_id or "", client_host)

    # -- ApiVersions, Metadata, FindCoordinator -------------------------------------------------
    async def _api_18(self, version: int, req: Any, client_id: str, host: str) -> Any:
        return ApiVersionsResponse[version](error_code=0, api_keys=api_versions_entries(), throttle_time_ms=0)

    @staticmethod
    def unsupported_api_versions() -> Any:
        """KIP-511: an ApiVersions version this server does not know is answered with a v0 body
        (and v0 header) carrying UNSUPPORTED_VERSION and the ranges served."""
        return ApiVersionsResponse[0](error_code=UNSUPPORTED_VERSION, api_keys=api_versions_entries())

    async def _api_3(self, version: int, req: Any, client_id: str, host: str) -> Any:
        if req.topics is None or (version == 0 and not req.topics):
            names = sorted(self.topics)
        else:
            names = [t.name for t in req.topics if t.name is not None]
        topics = []
        for name in names:
            n, topic_id = self._topic(name)
            parts = [
                MetadataResponse.MetadataResponseTopic.MetadataResponsePartition(
                    error_code=0,
                    partition_index=p,
                    leader_id=NODE_ID,
                    leader_epoch=0,
                    replica_nodes=[NODE_ID],
                    isr_nodes=[NODE_ID],
                    offline_replicas=[],
                )
                for p in range(n)
            ]
            topics.append(
                MetadataResponse.MetadataResponseTopic(
                    error_code=0, name=name, topic_id=topic_id, is_internal=False, partitions=parts
                )
            )
        broker = MetadataResponse.MetadataResponseBroker(node_id=NODE_ID, host=self.host, port=self.port, rack=None)
        return MetadataResponse[version](
            throttle_time_ms=0, brokers=[broker], cluster_id=CLUSTER_ID, controller_id=NODE_ID, topics=topics
        )

    async def _api_10(self, version: int, req: Any, client_id: str, host: str) -> Any:
        if version >= 4:
            coordinators = [
                FindCoordinatorResponse.Coordinator(
                    key=k, node_id=NODE_ID, host=self.host, port=self.port, error_code=0, error_message=None
                )
                for k in req.coordinator_keys
            ]
            return FindCoordinatorResponse[version](throttle_time_ms=0, coordinators=coordinators)
        return FindCoordinatorResponse[version](
            throttle_time_ms=0, error_code=0, error_message=None, node_id=NODE_ID, host=self.host, port=self.port
        )

    # -- the group requests ---------------------------------------------------------------------
    async def _api_11(self, version: int, req: Any, client_id: str, host: str) -> Any:
        protocols = [(p.name, _text(p.metadata)) for p in req.protocols]
        instance = req.group_instance_id if version >= 5 else None
        rebalance = req.rebalance_timeout_ms if version >= 1 else req.session_timeout_ms
        require_known = version >= 4 and instance is None
        fields = {
            "member": req.member_id,
            "client": client_id,
            "instance": instance,
            "session_timeout_ms": req.session_timeout_ms,
            "rebalance_timeout_ms": rebalance,
            "protocol_type": req.protocol_type,
            "protocols": [list(p) for p in protocols],
            "version": version,
        }
        c = self.coordinator
        result: JoinGroupResult = await self._call(
            "join",
            req.group_id,
            fields,
            lambda cb: c.handle_join_group(
                req.group_id,
                req.member_id,
                instance,
                require_known,
                client_id,
                host,
                rebalance,
                req.session_timeout_ms,
                req.protocol_type,
                protocols,
                cb,
                supports_skip_assignment=version >= 9,
            ),
        )
        members = [
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=_bytes(m.metadata)
            )
            for m in result.members
        ]
        return JoinGroupResponse[version](
            throttle_time_ms=0,
            error_code=result.error.code,
            generation_id=result.generation_id,
            protocol_type=result.protocol_type,
            protocol_name=result.protocol_name if version >= 7 else (result.protocol_name or ""),
            leader=result.leader_id,
            skip_assignment=result.skip_assignment,
            member_id=result.member_id,
            members=members,
        )

    async def _api_14(self, version: int, req: Any, client_id: str, host: str) -> Any:
        instance = req.group_instance_id if version >= 3 else None
        ptype = req.protocol_type if version >= 5 else None
        pname = req.protocol_name if version >= 5 else None
        assignment = {a.member_id: _text(a.assignment) for a in req.assignments}
        fields = {
            "member": req.member_id,
            "generation": req.generation_id,
            "assignment": assignment,
            "instance": instance,
            "protocol_type": ptype,
            "protocol": pname,
        }
        c = self.coordinator
        result: SyncGroupResult = await self._call(
            "sync",
            req.group_id,
            fields,
            lambda cb: c.handle_sync_group(
                req.group_id, req.generation_id, req.member_id, ptype, pname, instance, assignment, cb
            ),
        )
        return SyncGroupResponse[version](
            throttle_time_ms=0,
            error_code=result.error.code,
            protocol_type=result.protocol_type,
            protocol_name=result.protocol_name,
            assignment=_bytes(result.member_assignment),
        )

    async def _api_12(self, version: int, req: Any, client_id: str, host: str) -> Any:
        instance = req.group_instance_id if version >= 3 else None
        fields = {"member": req.member_id, "generation": req.generation_id, "instance": instance}
        c = self.coordinator
        error: Errors = await self._call(
            "heartbeat",
            req.group_id,
            fields,
            lambda cb: c.handle_heartbeat(req.group_id, req.member_id, instance, req.generation_id, cb),
        )
        return HeartbeatResponse[version](throttle_time_ms=0, error_code=error.code)

    async def _api_13(self, version: int, req: Any, client_id: str, host: str) -> Any:
        if version >= 3:
            leaving = [LeaveMemberIdentity(m.member_id, m.group_instance_id) for m in req.members]
        else:
            leaving = [LeaveMemberIdentity(req.member_id, None)]
        c = self.coordinator
        fields = {"members": [[m.member_id, m.group_instance_id] for m in leaving]}
        result: LeaveGroupResult = await self._call(
            "leave", req.group_id, fields, lambda cb: c.handle_leave_group(req.group_id, leaving, cb)
        )
        if version >= 3:
            members = [
                LeaveGroupResponse.MemberResponse(member_id=m, group_instance_id=i, error_code=e.code)
                for m, i, e in result.member_responses
            ]
            return LeaveGroupResponse[version](throttle_time_ms=0, error_code=result.error.code, members=members)
        error = result.error
        if error is Errors.NONE and result.member_responses:
            error = result.member_responses[0][2]
        return LeaveGroupResponse[version](throttle_time_ms=0, error_code=error.code)

    async def _api_8(self, version: int, req: Any, client_id: str, host: str) -> Any:
        offsets = {
            partition_key(t.name, p.partition_index): p.committed_offset for t in req.topics for p in t.partitions
        }
        instance = req.group_instance_id if version >= 7 else None
        generation = req.generation_id_or_member_epoch
        fields = {"member": req.member_id, "generation": generation, "instance": instance, "offsets": offsets}
        c = self.coordinator
        errors: dict[str, Errors] = await self._call(
            "commit",
            req.group_id,
            fields,
            lambda cb: c.handle_commit_offsets(req.group_id, req.member_id, instance, generation, offsets, cb),
        )
        accepted = {p: o for p, o in offsets.items() if errors.get(p, Errors.NONE) is Errors.NONE}
        if self.offset_log is not None and accepted:
            self.offset_log.append(req.group_id, accepted)
        topics = [
            OffsetCommitResponse.OffsetCommitResponseTopic(
                name=t.name,
                partitions=[
                    OffsetCommitResponse.OffsetCommitResponseTopic.OffsetCommitResponsePartition(
                        partition_index=p.partition_index,
                        error_code=errors.get(partition_key(t.name, p.partition_index), Errors.NONE).code,
                    )
                    for p in t.partitions
                ],
            )
            for t in req.topics
        ]
        return OffsetCommitResponse[version](throttle_time_ms=0, topics=topics)

    # -- offsets and the (empty) logs -------------------------------------------------------------
    async def _api_9(self, version: int, req: Any, client_id: str, host: str) -> Any:
        committed = self.coordinator.offsets.get(req.group_id, {})
        if req.topics is None:
            wanted: dict[str, list[int]] = {}
            for key in committed:
                t, p = split_partition_key(key)
                wanted.setdefault(t, []).append(p)
        else:
            wanted = {t.name: list(t.partition_indexes) for t in req.topics}
        error = Errors.NONE
        if self.coordinator.is_loading(req.group_id):
            error = Errors.COORDINATOR_LOAD_IN_PROGRESS
        topics = [
            OffsetFetchResponse.OffsetFetchResponseTopic(
                name=t,
                partitions=[
                    OffsetFetchResponse.OffsetFetchResponseTopic.OffsetFetchResponsePartition(
                        partition_index=p,
                        committed_offset=committed.get(partition_key(t, p), -1),
                        committed_leader_epoch=-1,
                        metadata="",
                        error_code=error.code if version < 2 else 0,
                    )
                    for p in sorted(ps)
                ],
            )
            for t, ps in sorted(wanted.items())
        ]
        return OffsetFetchResponse[version](throttle_time_ms=0, topics=topics, error_code=error.code)

    async def _api_2(self, version: int, req: Any, client_id: str, host: str) -> Any:
        topics = []
        for t in req.topics:
            n, _ = self._topic(t.name)
            topics.append(
                ListOffsetsResponse.ListOffsetsTopicResponse(
                    name=t.name,
                    partitions=[
                        ListOffsetsResponse.ListOffsetsTopicResponse.ListOffsetsPartitionResponse(
                            partition_index=p.partition_index,
                            error_code=0 if p.partition_index < n else UNKNOWN_TOPIC_OR_PARTITION,
                            timestamp=-1,
                            offset=0,
                            leader_epoch=0,
                        )
                        for p in t.partitions
                    ],
                )
            )
        return ListOffsetsResponse[version](throttle_time_ms=0, topics=topics)

    async def _api_1(self, version: int, req: Any, client_id: str, host: str) -> Any:
        """Every log is empty: wait the request's max wait (capped, as nothing will arrive), then
        answer each partition with no records. Session id 0: no fetch session (a full answer)."""
        await asyncio.sleep(min(max(req.max_wait_ms, 0), MAX_FETCH_WAIT_MS) / 1000)
        PartitionData = FetchResponse.FetchableTopicResponse.PartitionData
        responses = []
        for t in req.topics:
            n, _ = self._topic(t.topic)
            responses.append(
                FetchResponse.FetchableTopicResponse(
                    topic=t.topic,
                    partitions=[
                        PartitionData(
                            partition_index=p.partition,
                            error_code=0 if p.partition < n else UNKNOWN_TOPIC_OR_PARTITION,
                            high_watermark=0,
                            last_stable_offset=0,
                            log_start_offset=0,
                            aborted_transactions=None,
                            preferred_read_replica=-1,
                            records=b"",
                        )
                        for p in t.partitions
                    ],
                )
            )
        return FetchResponse[version](throttle_time_ms=0, error_code=0, session_id=0, responses=responses)
