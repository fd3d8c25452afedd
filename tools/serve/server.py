"""The asyncio server: connections, and the clock that drives the coordinator's timing wheel.

Time: the coordinator runs on a VirtualClock that the event loop moves along the monotonic clock
in whole time units (`time_unit_ms`, 100 ms by default: Kafka's purgatory reaper also advances
its wheel in steps, every 200 ms). Each move fires every timer due on the way, in deadline order,
with the clock reading each timer's deadline while it runs (SystemTimer.advance_to), and every
request is handled after the clock has been moved to the current unit. So a run is exactly
reproducible from its requests and the units between them, which is what `--record` writes.

Connections: Kafka processes one request per connection at a time (the broker mutes a channel
until its response is sent) and answers in order; so does this server. A JoinGroup or SyncGroup
parked in the coordinator's purgatory keeps only its own connection waiting: every other
connection is served meanwhile. Frames are read ahead (to see a client go away at once); a frame
that cannot be used (a length below zero or above the limit, an unknown API key or version, a
body that does not decode) and a client that vanishes close that connection with a log line,
and the server goes on serving everyone else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgc.conformance.driver import Driver
from kgc.impl.clock import VirtualClock
from kgc.impl.coordinator import GroupConfig, GroupCoordinator
from kgc.impl.group import GroupState
from kgc.impl.timer import SystemTimer
from kgc.tools.serve.broker import NODE_ID, Broker
from kgc.tools.serve.codec import (
    API_VERSIONS_KEY,
    SERVED,
    FrameError,
    decode_request,
    encode_response,
    peek_header,
)
from kgc.tools.serve.offsets import OffsetLog
from kgc.tools.serve.recording import Recorder

__all__ = ["ServeConfig", "Server"]

log = logging.getLogger("kgc.serve")

DEFAULT_MAX_REQUEST_BYTES = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes


@dataclass(frozen=True)
class ServeConfig:
    host: str = "127.0.0.1"
    port: int = 9092
    partitions: int = 3
    record: Path | None = None
    store: Path | None = None
    group: GroupConfig = GroupConfig()
    time_unit_ms: int = 100
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES


class KafkaLog:
    """The coordinator's observer: Kafka-style log lines for the group's life."""

    def __init__(self, coordinator_ref: Callable[[], GroupCoordinator]) -> None:
        self._c = coordinator_ref

    def on_request(self, kind: str, group_id: str, args: dict) -> None:
        pass

    def on_response(self, kind: str, group_id: str, result: object) -> None:
        pass

    def on_timer(self, kind: str, group_id: str, member_id: str | None) -> None:
        if kind == "heartbeat":
            log.info(
                "[GroupCoordinator %d]: Member %s in group %s has failed, removing it from the group",
                NODE_ID,
                member_id,
                group_id,
            )
        else:
            log.info(
                "[GroupCoordinator %d]: %s timer expired in group %s (member %s)", NODE_ID, kind, group_id, member_id
            )

    def on_transition(self, group_id: str, old: GroupState, new: GroupState) -> None:
        g = self._c().group(group_id)
        gen = g.generation_id if g is not None else -1
        if new is GroupState.PreparingRebalance:
            log.info(
                "[GroupCoordinator %d]: Preparing to rebalance group %s in state %s with old generation %d",
                NODE_ID,
                group_id,
                new.name,
                gen,
            )
        elif new is GroupState.CompletingRebalance:
            n = len(g.members) if g is not None else 0
            log.info(
                "[GroupCoordinator %d]: Stabilized group %s generation %d with %d members", NODE_ID, group_id, gen, n
            )
        elif new is GroupState.Stable:
            log.info(
                "[GroupCoordinator %d]: Assignment received from leader %s for group %s for generation %d",
                NODE_ID,
                g.leader_id if g is not None else None,
                group_id,
                gen,
            )
        else:
            log.info("[GroupCoordinator %d]: Group %s moved from %s to %s", NODE_ID, group_id, old.name, new.name)


class Server:
    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.store: Any = None
        if config.store is not None:
            from kgc.impl.durable_store import FileGroupStore

            self.store = FileGroupStore(config.store)
            log.info("group store %s", self.store.recovery.summary())
        # member ids must not repeat those of a previous run whose groups the store brings back
        seed = secrets.randbits(63)
        driver = Driver(
            config.group, store=self.store, member_id_seed=seed, listeners=[KafkaLog(lambda: self.coordinator)]
        )
        self.clock: VirtualClock = driver.clock
        self.timer: SystemTimer = driver.timer
        self.coordinator: GroupCoordinator = driver.coordinator
        self.recorder = Recorder(config.record, config.group) if config.record is not None else None
        self.broker: Broker | None = None
        self.offset_log: Any = None
        self.connections: set[asyncio.Task[None]] = set()
        self.closed_connections = 0
        self._t0 = time.monotonic()
        self._server: asyncio.AbstractServer | None = None
        self.port = config.port

    # -- time ----------------------------------------------------------------------------------
    def advance(self) -> None:
        """Move the coordinator's clock to the current whole unit of monotonic time."""
        unit = self.config.time_unit_ms
        target = int((time.monotonic() - self._t0) * 1000) // unit * unit
        if target > self.clock.now_ms():
            if self.recorder is not None:
                self.recorder.tick(target)
            self.timer.advance_to(target)

    async def _drive_clock(self) -> None:
        while True:
            await asyncio.sleep(self.config.time_unit_ms / 1000)
            try:
                self.advance()
            except Exception:  # the coordinator counts its own errors; the clock must go on
                log.exception("timer expiry raised")

    # -- lifecycle -----------------------------------------------------------------------------
    async def start(self) -> None:
        self._server = await asyncio.start_server(self._connection, self.config.host, self.config.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self.broker = Broker(
            self.coordinator, self.config.host, self.port, self.config.partitions, self.recorder, self.advance
        )
        if self.store is not None:
            assert self.config.store is not None
            self.offset_log = OffsetLog(self.config.store.with_name(self.config.store.name + ".offsets"))
            self.broker.offset_log = self.offset_log
            for group, committed in self.offset_log.offsets.items():
                self.coordinator.offsets.setdefault(group, {}).update(committed)
            for group_id in self.store.group_ids():
                self.coordinator.on_group_loaded(group_id)
                g = self.coordinator.group(group_id)
                log.info(
                    "[GroupCoordinator %d]: Loaded group %s generation %s state %s from the store",
                    NODE_ID,
                    group_id,
                    g.generation_id if g else None,
                    g.state.name if g else None,
                )
        self._clock_task = asyncio.create_task(self._drive_clock())
        log.info("[KafkaServer id=%d] started, listening on %s:%d", NODE_ID, self.config.host, self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        self._clock_task.cancel()
        for task in list(self.connections):
            task.cancel()
        await asyncio.gather(*self.connections, return_exceptions=True)
        with contextlib.suppress(asyncio.CancelledError):
            await self._clock_task
        if self._server is not None:
            await self._server.wait_closed()
        if self.recorder is not None:
            self.advance()
            self.recorder.write()
        if self.store is not None:
            self.store.close()
            self.offset_log.close()
        log.info("[KafkaServer id=%d] shut down", NODE_ID)

    # -- connections ---------------------------------------------------------------------------
    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.connections.add(task)
        peer = writer.get_extra_info("peername")
        name = f"{peer[0]}:{peer[1]}" if peer else "?"
        frames: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=16)
        reading = asyncio.create_task(self._read_frames(reader, frames, name))
        serving = asyncio.create_task(self._serve(frames, writer, peer[0] if peer else "", name))
        try:
            await asyncio.wait({reading, serving}, return_when=asyncio.FIRST_COMPLETED)
            if reading.done() and not serving.done():
                # the client is gone (or sent an unusable length): a request it left parked is
                # dropped here; the coordinator keeps the member until its timeouts, as Kafka does
                serving.cancel()
            await asyncio.gather(serving, return_exceptions=False)
        except FrameError as err:
            log.warning("closing connection %s: %s", name, err)
        except (ConnectionError, OSError) as err:
            log.info("connection %s went away: %s", name, err)
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("closing connection %s: the server failed on its request", name)
        finally:
            for t in (reading, serving):
                t.cancel()
                with contextlib.suppress(BaseException):
                    await t
            writer.close()
            self.closed_connections += 1
            self.connections.discard(task)

    async def _read_frames(self, reader: asyncio.StreamReader, frames: asyncio.Queue[bytes | None], name: str) -> None:
        """Read ahead; put None when the connection is over (EOF or an unusable length)."""
        try:
            while True:
                head = await reader.readexactly(4)
                (size,) = struct.unpack(">i", head)
                if size < 0 or size > self.config.max_request_bytes:
                    log.warning(
                        "closing connection %s: request length %d outside 0..%d",
                        name,
                        size,
                        self.config.max_request_bytes,
                    )
                    break
                await frames.put(await reader.readexactly(size))
        except asyncio.IncompleteReadError as err:
            if err.partial:
                log.info("connection %s closed in the middle of a request (%d bytes of it)", name, len(err.partial))
        except (ConnectionError, OSError) as err:
            log.info("connection %s went away: %s", name, err)

    async def _serve(
        self, frames: asyncio.Queue[bytes | None], writer: asyncio.StreamWriter, host: str, name: str
    ) -> None:
        assert self.broker is not None
        while True:
            frame = await frames.get()
            if frame is None:
                return
            head = peek_header(frame)
            api = SERVED.get(head.api_key)
            if api is None:
                raise FrameError(f"unknown or unserved API key {head.api_key}")
            if not api.min_version <= head.api_version <= api.max_version:
                if head.api_key == API_VERSIONS_KEY and head.api_version > api.max_version:
                    writer.write(encode_response(self.broker.unsupported_api_versions(), 0, head.correlation_id))
                    await writer.drain()
                    continue
                raise FrameError(f"{api.name} v{head.api_version} is not served ({api.min_version}-{api.max_version})")
            req = decode_request(api, head.api_version, frame)
            log.debug("%s %s v%d from %s (%s)", name, api.name, head.api_version, head.client_id, head.correlation_id)
            response = await self.broker.handle(head.api_key, head.api_version, req, head.client_id, host)
            if writer.is_closing():
                raise ConnectionError("the client closed the connection before its answer")
            writer.write(encode_response(response, head.api_version, head.correlation_id))
            await writer.drain()
