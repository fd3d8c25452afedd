"""The process the crash test kills: a coordinator on a FileGroupStore under random client load.

Run as `python crash_child.py STORE SEED`. It prints JSON lines on stdout, each written and
flushed before the next step, so the parent knows exactly what happened up to the kill:
  {"recovered": {group: record}, "problem": ...}    once, after opening the store
  {"append": record}                                 before every store write
  {"ack": record}                                    a leader's SyncGroup answered NONE
and then runs until it is killed. Clients keep their member ids across a coordinator restart,
as Kafka clients do across a coordinator failover, so recovered groups see their members rejoin.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import sys
from typing import Any

from kgc.impl.clock import VirtualClock
from kgc.impl.coordinator import GroupConfig, GroupCoordinator, JoinGroupResult, LeaveMemberIdentity, SyncGroupResult
from kgc.impl.durable_store import FileGroupStore
from kgc.impl.errors import Errors
from kgc.impl.store import StoreCallback, StoredGroup
from kgc.impl.timer import SystemTimer

GROUPS = ("g0", "g1", "g2")
SESSION_MS = 10_000


def emit(kind: str, value: Any) -> None:
    try:
        sys.stdout.write(json.dumps({kind: value}, sort_keys=True) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # nobody is listening any more: nothing left to do
        os._exit(3)


def as_json(record: StoredGroup) -> dict[str, Any]:
    return dataclasses.asdict(record)


class LoggedStore(FileGroupStore):
    """Says what it is about to append, so the parent can tell a recovered record that was
    written but never acknowledged from one that was never written."""

    def store_group(self, record: StoredGroup, callback: StoreCallback) -> None:
        emit("append", as_json(record))
        super().store_group(record, callback)


class Client:
    def __init__(self, group: str, member_id: str = "", generation: int = -1) -> None:
        self.group = group
        self.member_id = member_id
        self.generation = generation
        self.leader = False
        self.members: list[str] = []
        self.busy = False  # a join or sync is parked at the coordinator


def main() -> None:
    path, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    store = LoggedStore(path, compact_min_records=16)
    emit(
        "recovered",
        {"groups": {g: as_json(store.load_group(g)) for g in store.group_ids()}, "problem": store.recovery.problem},
    )
    clock = VirtualClock(0)
    timer = SystemTimer(clock)
    coordinator = GroupCoordinator(GroupConfig(initial_rebalance_delay_ms=0), clock, timer, store, member_id_seed=seed)
    clients: list[Client] = []
    for group in store.group_ids():
        coordinator.on_group_loaded(group)
        record = store.load_group(group)
        assert record is not None
        clients += [Client(group, m.member_id, record.generation_id) for m in record.members]
    for group in GROUPS:
        clients += [Client(group) for _ in range(rng.randint(1, 2))]

    def join(c: Client) -> None:
        def done(r: JoinGroupResult) -> None:
            c.busy = False
            if r.error is Errors.NONE:
                c.member_id, c.generation = r.member_id, r.generation_id
                c.leader = r.leader_id == r.member_id
                c.members = [m.member_id for m in r.members]
            elif r.error is Errors.MEMBER_ID_REQUIRED:
                c.member_id = r.member_id
            elif r.error is Errors.UNKNOWN_MEMBER_ID:
                c.member_id, c.generation = "", -1

        c.busy = True
        coordinator.handle_join_group(
            c.group,
            c.member_id,
            None,
            False,
            "client",
            "host",
            SESSION_MS,
            SESSION_MS,
            "consumer",
            [("range", "")],
            done,
        )

    def sync(c: Client) -> None:
        assignment = {m: f"{m}@{c.generation}" for m in c.members} if c.leader else {}
        generation, leader = c.generation, c.leader

        def done(r: SyncGroupResult) -> None:
            c.busy = False
            if r.error is Errors.NONE and leader:
                record = store.load_group(c.group)
                ack: dict[str, Any] | None = as_json(record) if record is not None else None
                emit(
                    "ack",
                    {
                        "group": c.group,
                        "generation": generation,
                        "leader": c.member_id,
                        "assignment": assignment,
                        "stored": ack,
                    },
                )

        c.busy = True
        coordinator.handle_sync_group(c.group, c.generation, c.member_id, "consumer", "range", None, assignment, done)

    def heartbeat(c: Client) -> None:
        coordinator.handle_heartbeat(c.group, c.member_id, None, c.generation, lambda e: None)

    def leave(c: Client) -> None:
        coordinator.handle_leave_group(c.group, [LeaveMemberIdentity(c.member_id)], lambda r: None)
        c.member_id, c.generation = "", -1

    while True:
        c = rng.choice(clients)
        roll = rng.random()
        if roll < 0.05:
            timer.advance_to(clock.now_ms() + rng.choice((100, 1000, SESSION_MS // 2, SESSION_MS + 1)))
        elif c.busy:
            heartbeat(c) if c.member_id else None
        elif roll < 0.45 or not c.member_id:
            join(c)
        elif roll < 0.8:
            sync(c)
        elif roll < 0.97:
            heartbeat(c)
        else:
            leave(c)
        timer.advance_to(clock.now_ms() + 1)


if __name__ == "__main__":
    main()
