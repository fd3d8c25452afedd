"""An aiokafka consumer for the kgc serve tests (same arguments and output as
kafka_python_consumer.py, `roundrobin` included). aiokafka has no flexible versions: it needs the server's low minimums."""

from __future__ import annotations

import asyncio
import json
import signal
import sys

from aiokafka import AIOKafkaConsumer
from aiokafka.abc import ConsumerRebalanceListener
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from diagnostics import diagnosable


def say(**event: object) -> None:
    print(json.dumps(event), flush=True)


async def main() -> None:
    diagnosable("aiokafka.consumer.group_coordinator")
    bootstrap, group, topic, name = sys.argv[1:5]
    session_ms = int(sys.argv[5]) if len(sys.argv) > 5 else 6000
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):  # type: ignore[no-untyped-def]
            say(event="revoked", client=name, partitions=sorted(p.partition for p in revoked))

        def on_partitions_assigned(self, assigned):  # type: ignore[no-untyped-def]
            say(event="assigned", client=name, partitions=sorted(p.partition for p in assigned))

    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=name,
        enable_auto_commit=False,
        session_timeout_ms=session_ms,
        heartbeat_interval_ms=max(100, session_ms // 6),
        max_poll_interval_ms=session_ms * 5,
        rebalance_timeout_ms=session_ms * 5,
        request_timeout_ms=session_ms * 5 + 5000,
        partition_assignment_strategy=(
            RoundRobinPartitionAssignor if "roundrobin" in sys.argv[6:] else RangePartitionAssignor,
        ),
    )
    consumer.subscribe([topic], listener=Listener())
    await consumer.start()
    say(event="started", client=name)
    while not stop.is_set():
        await consumer.getmany(timeout_ms=200)
    await consumer.stop()
    say(event="closed", client=name)


if __name__ == "__main__":
    asyncio.run(main())
