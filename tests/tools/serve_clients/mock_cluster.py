"""librdkafka's built-in mock cluster (confluent-kafka, `test.mock.num.brokers`), kept up for
other processes: creates the topics ARGV[2:] (by producing to them: the mock has no CreateTopics
and auto-creates a topic with 4 partitions), prints its bootstrap address, then lives until
killed (or ARGV[1] seconds)."""

from __future__ import annotations

import sys
import time

from confluent_kafka import Producer


def main() -> None:
    producer = Producer({"test.mock.num.brokers": 1, "log_level": 3})
    for topic in sys.argv[2:]:
        producer.produce(topic, b"x")
    producer.flush(10)
    brokers = producer.list_topics(timeout=10).brokers.values()
    print(",".join(f"{b.host}:{b.port}" for b in brokers), flush=True)
    time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 600)


if __name__ == "__main__":
    main()
