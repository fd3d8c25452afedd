"""Where the real-client tests send their consumers: `kgc serve` (kgc's coordinator) or a real
Kafka 3.9.1 broker (`kgc kafka start`'s KafkaBroker), behind one interface, so one client program
runs unchanged on both and what each coordinator did can be compared."""

from __future__ import annotations

import re
import time
from pathlib import Path

from serve_support import start_server

from kgc.conformance.reference.kafka_broker import BrokerSettings, KafkaBroker

# Both log it in Kafka's words (GroupCoordinator.onCompleteJoin: "Stabilized group ... generation N").
STABILIZED = re.compile(r"Stabilized group (\S+) generation (\d+)")
# The group settings both targets run with: no initial rebalance delay, short sessions allowed.
MIN_SESSION_MS = 1000
BROKER_SETTINGS = BrokerSettings(
    initial_rebalance_delay_ms=0, min_session_timeout_ms=MIN_SESSION_MS, auto_create_topics=False
)


def generations_in(lines: list[str], group: str) -> list[int]:
    """The generations `group` stabilised at, in the order the coordinator logged them."""
    found = (STABILIZED.search(line) for line in lines)
    return [int(m.group(2)) for m in found if m is not None and m.group(1) == group]


class ServeTarget:
    """`kgc serve` for one test: topics are auto-created with `partitions` partitions."""

    name = "serve"

    def __init__(self, tmp: Path, partitions: int, *extra: str) -> None:
        self.partitions = partitions
        self.server, self.port = start_server(
            tmp,
            "--partitions",
            str(partitions),
            "--initial-rebalance-delay-ms",
            "0",
            "--min-session-timeout-ms",
            str(MIN_SESSION_MS),
            *extra,
        )

    def create_topic(self, topic: str, partitions: int) -> None:
        if partitions != self.partitions:
            raise ValueError(f"kgc serve auto-creates topics with {self.partitions} partitions, not {partitions}")

    def generations(self, group: str) -> list[int]:
        return generations_in(list(self.server.err), group)

    def log_tail(self, lines: int = 80) -> str:
        """The end of kgc serve's log, for a failed wait's message."""
        return "".join(self.server.err[-lines:])

    def stop(self) -> None:
        self.server.stop()


class BrokerTarget:
    """A real broker shared by a test module (its start costs seconds): topics are created by the
    test through Kafka's admin API, groups and topics named apart per test."""

    name = "kafka"

    def __init__(self, broker: KafkaBroker) -> None:
        self.broker = broker
        self.port = broker.port

    def create_topic(self, topic: str, partitions: int) -> None:
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=self.broker.bootstrap, client_id="kgc-test-admin")
        try:
            admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
            deadline = time.monotonic() + 30
            while topic not in admin.list_topics():
                if time.monotonic() > deadline:
                    raise AssertionError(f"topic {topic} not listed 30 s after it was created")
                time.sleep(0.2)
        finally:
            admin.close()

    def log_lines(self) -> list[str]:
        return self.broker.log.read_text(errors="replace").splitlines()

    def generations(self, group: str) -> list[int]:
        return generations_in(self.log_lines(), group)

    def log_tail(self, lines: int = 80) -> str:
        """The end of the broker's coordinator lines, for a failed wait's message."""
        return "\n".join([x for x in self.log_lines() if "Group" in x][-lines:])

    def stop(self) -> None:
        """The module's fixture stops the broker."""


Target = ServeTarget | BrokerTarget
