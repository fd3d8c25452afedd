"""A confluent-kafka (librdkafka) consumer for the kgc serve tests (same arguments and output as
kafka_python_consumer.py, `roundrobin` included). With `mock` as BOOTSTRAP it runs against librdkafka's own mock
cluster instead (test.mock.num.brokers), for the differential run."""

from __future__ import annotations

import json
import signal
import sys

from confluent_kafka import Consumer
from diagnostics import diagnosable


def say(**event: object) -> None:
    print(json.dumps(event), flush=True)


def main() -> None:
    diagnosable()
    bootstrap, group, topic, name = sys.argv[1:5]
    session_ms = int(sys.argv[5]) if len(sys.argv) > 5 else 6000
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": name,
        "enable.auto.commit": False,
        "session.timeout.ms": session_ms,
        "heartbeat.interval.ms": max(100, session_ms // 6),
        "max.poll.interval.ms": session_ms * 5,
        "partition.assignment.strategy": "roundrobin" if "roundrobin" in sys.argv[6:] else "range",
        "group.protocol": "classic",
        "topic.metadata.refresh.interval.ms": 1000,
    }
    consumer = Consumer(conf)

    def on_assign(c, partitions):  # type: ignore[no-untyped-def]
        say(event="assigned", client=name, partitions=sorted(p.partition for p in partitions))

    def on_revoke(c, partitions):  # type: ignore[no-untyped-def]
        say(event="revoked", client=name, partitions=sorted(p.partition for p in partitions))

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    say(event="started", client=name)
    while not stop:
        consumer.poll(0.2)
    consumer.close()
    say(event="closed", client=name)


if __name__ == "__main__":
    main()
