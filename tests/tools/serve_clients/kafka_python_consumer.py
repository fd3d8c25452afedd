"""A kafka-python consumer for the kgc serve tests: joins GROUP on TOPIC and prints one JSON line
per rebalance callback ({"event": "assigned"|"revoked", "partitions": [...], "client": NAME}).
SIGTERM closes it cleanly (LeaveGroup); SIGKILL is the crash. Words after the 6th argument:
`commit` commits offset 100 + partition for each partition it is assigned (and says
"committed"); `roundrobin` uses the roundrobin assignor instead of range."""

from __future__ import annotations

import json
import signal
import sys
import time

from diagnostics import diagnosable
from kafka import ConsumerRebalanceListener, KafkaConsumer
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.structs import OffsetAndMetadata


def say(**event: object) -> None:
    print(json.dumps(event), flush=True)


def main() -> None:
    diagnosable("kafka.coordinator")
    bootstrap, group, topic, name = sys.argv[1:5]
    session_ms = int(sys.argv[5]) if len(sys.argv) > 5 else 6000
    options = sys.argv[6:]
    commit = "commit" in options
    to_commit: list = []
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):  # type: ignore[no-untyped-def]
            say(event="revoked", client=name, partitions=sorted(p.partition for p in revoked))

        def on_partitions_assigned(self, assigned):  # type: ignore[no-untyped-def]
            say(event="assigned", client=name, partitions=sorted(p.partition for p in assigned))
            if commit and assigned:
                to_commit.append(list(assigned))

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=name,
        enable_auto_commit=False,
        session_timeout_ms=session_ms,
        heartbeat_interval_ms=max(100, session_ms // 6),
        max_poll_interval_ms=session_ms * 5,
        request_timeout_ms=session_ms * 5 + 5000,
        partition_assignment_strategy=[
            RoundRobinPartitionAssignor if "roundrobin" in options else RangePartitionAssignor
        ],
    )
    # Learn the topic's partitions before joining, where the broker lists them (a topic created
    # through the admin API): a leader that joined without them assigned nothing, rejoined when
    # the metadata arrived, and in two CI runs hung after "Elected group leader -- performing
    # partition assignments" of that second generation (kafka-python 3.0.12: its main thread
    # waiting in ensure_coordinator_ready for good, the IO thread polling). kgc serve creates a
    # topic when it is first named, so there the wait ends at its bound and nothing changes.
    deadline = time.monotonic() + 5
    while not consumer.partitions_for_topic(topic) and time.monotonic() < deadline:
        time.sleep(0.1)
    consumer.subscribe([topic], listener=Listener())
    say(event="started", client=name)
    while not stop:
        consumer.poll(timeout_ms=200)
        while to_commit:
            tps = to_commit.pop(0)
            consumer.commit({tp: OffsetAndMetadata(100 + tp.partition, "", -1) for tp in tps})
            say(event="committed", client=name, partitions=sorted(tp.partition for tp in tps))
    consumer.close()
    say(event="closed", client=name)


if __name__ == "__main__":
    main()
