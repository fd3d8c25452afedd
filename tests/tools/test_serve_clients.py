"""Kafka's own clients (kafka-python, aiokafka, confluent-kafka) in one group, against `kgc serve`
and against a real Kafka 3.9.1 broker (`kgc kafka start`'s KafkaBroker, one per module): each step
checked from the clients' side (their rebalance callbacks), the generations from the coordinator's
log. On `kgc serve` the recorded run is also replayed (`kgc replay`) and validated against the
spec (`kgc validate`); and one client program runs on both, its observations compared."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from serve_support import KGC, Proc, balanced, consumer, first_since, wait_for
from serve_targets import BROKER_SETTINGS, BrokerTarget, ServeTarget, Target

from kgc.conformance.reference.kafka_broker import KafkaBroker

pytestmark = pytest.mark.slow

PARTITIONS = 6
SESSION_MS = 3000
UNIT_S = 0.1
# Longer than the consumers' heartbeat interval (SESSION_MS / 6): a rebalance still under way
# after a balanced moment shows up as a revocation within it.
SETTLE_S = 1.0
MEMBER_ID_GIVEN = re.compile(r"joins group (\S+) in \w+ state\. Created a new member id (\S+) and request")


@dataclass(frozen=True)
class Step:
    """What a step of the program left: the consumers' partitions (as a sorted list of sets: which
    consumer holds which follows member ids, random on Kafka) and how many generations the group
    stabilised at during the step."""

    what: str
    held: tuple[tuple[int, ...], ...]
    generations: int
    seconds: float = field(compare=False)  # from the step's action to a settled group, for the record

    @property
    def counts(self) -> tuple[int, ...]:
        return tuple(sorted(len(h) for h in self.held))


class GroupWatch:
    """Waits for the group to settle after each step and notes what the step left."""

    def __init__(self, target: Target, group: str) -> None:
        self.target = target
        self.group = group
        self.steps: list[Step] = []
        self._seen = len(target.generations(group))
        self._since = time.monotonic()

    def mark(self) -> None:
        """The step's action happens now."""
        self._since = time.monotonic()

    def settled(self, what: str, members: list[Proc], timeout: float = 60) -> None:
        wait_for(what, lambda: balanced(members, PARTITIONS), timeout, members, self.target.log_tail)
        seconds = time.monotonic() - self._since
        time.sleep(SETTLE_S)
        wait_for(what, lambda: balanced(members, PARTITIONS), timeout, members, self.target.log_tail)
        generations = len(self.target.generations(self.group))
        held = tuple(sorted(tuple(p.assignment() or []) for p in members))
        self.steps.append(Step(what, held, generations - self._seen, round(seconds, 2)))
        self._seen = generations


def _group_lifecycle(
    target: Target, kinds: list[str], name: str, *, staggered: bool = False, options: tuple[str, ...] = ()
) -> list[Step]:
    """The consumers join (all at once, or one at a time when `staggered`), the first is
    SIGKILLed (the rest rebalance only after its session), the next closes cleanly (LeaveGroup:
    a rebalance at once), a newcomer joins; balanced after each step. `options` go to every
    consumer script (`roundrobin`)."""
    group, topic = f"g-{name}", f"t-{name}"
    target.create_topic(topic, PARTITIONS)
    watch = GroupWatch(target, group)
    procs: list[Proc] = []
    try:
        if staggered:
            for n, k in enumerate(kinds):
                watch.mark()
                procs.append(consumer(k, target.port, group, topic, f"{k}-{n}", SESSION_MS, *options))
                watch.settled(f"join {k}", procs)
        else:
            procs = [
                consumer(k, target.port, group, topic, f"{k}-{n}", SESSION_MS, *options) for n, k in enumerate(kinds)
            ]
            watch.settled("the first assignment", procs)

        victim, rest = procs[0], procs[1:]
        watch.mark()
        victim.signal(signal.SIGKILL)
        killed = time.monotonic()
        wait_for("the rest to be revoked", lambda: first_since(rest, "revoked", killed) is not None, 30, rest)
        noticed = (first_since(rest, "revoked", killed) or 0) - killed
        watch.settled("a rebalance without the killed one", rest, 30)
        heartbeat_s = SESSION_MS / 6000
        assert noticed >= SESSION_MS / 1000 - heartbeat_s - 2 * UNIT_S, f"rebalanced {noticed:.2f} s after the kill"

        leaver, rest = rest[0], rest[1:]
        left = time.monotonic()
        watch.mark()
        leaver.signal(signal.SIGTERM)
        wait_for("a rebalance after the leave", lambda: first_since(rest, "revoked", left) is not None, 30, rest)
        took = (first_since(rest, "revoked", left) or 0) - left
        assert took < SESSION_MS / 1000 - 0.5, f"the leave took {took:.2f} s to rebalance"
        watch.settled("a rebalance without the leaver", rest, 30)
        assert leaver.proc.wait(20) == 0

        watch.mark()
        newcomer = consumer(kinds[0], target.port, group, topic, "newcomer", SESSION_MS, *options)
        procs.append(newcomer)
        watch.settled("the newcomer's assignment", [*rest, newcomer])
    finally:
        for p in procs:
            p.stop()
    return watch.steps


def _check_generations(target: Target, group: str, steps: list[Step]) -> None:
    """Every step rebalanced, and the generations the coordinator logged count up by one."""
    assert all(s.generations >= 1 for s in steps), steps
    logged = target.generations(group)
    assert logged == list(range(1, len(logged) + 1)), logged


def _check_member_id_required(broker: BrokerTarget, group: str, consumers: int) -> None:
    """What _check_recording checks of kgc serve's run, read from Kafka's log: every consumer's
    first JoinGroup (v4+) got MEMBER_ID_REQUIRED with a new id (GroupCoordinator.
    doNewMemberJoinGroup logs it) and each such id is heard of again (it joined: "Adding new
    member ID", led, failed or left)."""
    lines = broker.log_lines()
    given = []
    for n, line in enumerate(lines):
        m = MEMBER_ID_GIVEN.search(line)
        if m is not None and m.group(1) == group:
            given.append((n, m.group(2)))
    assert len(given) >= consumers, f"{len(given)} JoinGroups went through MEMBER_ID_REQUIRED, {consumers} consumers"
    for n, member in given:
        assert any(member in line for line in lines[n + 1 :]), f"{member} never joined with the id it was given"


def _check_recording(rec: Path, group: str) -> None:
    """kgc serve's recorded run: JoinGroup v4+ went through MEMBER_ID_REQUIRED, it replays on the
    coordinator and is a behaviour of the spec."""
    scenario = rec / "scenarios" / f"{group}.json"
    steps = json.loads(scenario.read_text())["steps"]
    joins = {s["id"]: s for s in steps if s.get("do") == "join"}
    required = [s for s in steps if s.get("error") == "MEMBER_ID_REQUIRED"]
    assert any(j.get("version", 0) >= 4 for j in joins.values())
    assert required, "no JoinGroup v4+ went through MEMBER_ID_REQUIRED"
    for r in required:  # each was followed by a join with the id it was given
        assert any(j["member"] == "@" + r["expect"] for j in joins.values())
    assert any(s.get("do") == "leave" for s in steps)

    replay = subprocess.run([str(KGC), "replay", str(scenario)], capture_output=True, text=True, timeout=120)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    traces = rec / "traces"
    trace = json.loads((traces / f"{group}.json").read_text())
    assert trace.get("stopped") is None, trace.get("stopped")
    validate = subprocess.run([str(KGC), "validate", str(traces)], capture_output=True, text=True, timeout=600)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    assert "1 behaviours of the spec, 0 not" in validate.stdout


@pytest.fixture(scope="module")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    with KafkaBroker(tmp_path_factory.mktemp("kafka"), BROKER_SETTINGS, die_with_parent=True) as broker:
        yield broker


GROUPS = {
    "kafka-python": ["kafka_python"] * 3,
    "aiokafka": ["aiokafka"] * 3,
    "confluent-kafka": ["confluent"] * 3,
    "mixed": ["kafka_python", "aiokafka", "confluent"],
}


@pytest.mark.parametrize("clients", sorted(GROUPS))
@pytest.mark.parametrize("on", ["serve", "kafka"])
def test_group_of_kafka_clients(request: pytest.FixtureRequest, tmp_path: Path, on: str, clients: str) -> None:
    group = f"g-{clients}"
    if on == "kafka":
        broker = BrokerTarget(request.getfixturevalue("kafka_broker"))
        _check_generations(broker, group, _group_lifecycle(broker, GROUPS[clients], clients))
        _check_member_id_required(broker, group, len(GROUPS[clients]) + 1)
        return
    rec = tmp_path / "rec"
    serve = ServeTarget(tmp_path, PARTITIONS, "--record", str(rec))
    try:
        _check_generations(serve, group, _group_lifecycle(serve, GROUPS[clients], clients))
    finally:
        serve.stop()
    assert serve.server.proc.returncode == 0, "".join(serve.server.err)
    _check_recording(rec, group)


# Four consumers on six partitions: an uneven split (2, 2, 1, 1) on the way. librdkafka first: it
# fetches the topic's metadata before it joins, so as the first leader it assigns once (a
# kafka-python leader may assign before its metadata answer and rejoin: docs/kafka-reference.md).
COMPARED = ["confluent", "kafka_python", "aiokafka", "confluent"]


def _assigned_by(assignor: str, held: tuple[tuple[int, ...], ...]) -> bool:
    """Whether the sets look like the assignor's work: range hands out consecutive blocks,
    roundrobin every n-th partition to each of n consumers."""
    n = len(held)
    if assignor == "range":
        return all(list(h) == list(range(h[0], h[0] + len(h))) for h in held if h)
    return all(len({p % n for p in h}) <= 1 for h in held)


@pytest.mark.parametrize("assignor", ["range", "roundrobin"])
def test_same_program_on_kafka_and_serve(kafka_broker: KafkaBroker, tmp_path: Path, assignor: str) -> None:
    """One client program, its consumers joining one at a time, on both: after every join, kill,
    leave and newcomer the same partition sets (up to which consumer holds which) and the same
    number of new generations (docs/kafka-reference.md says what may differ: member ids, timings)."""
    name, options = f"compared-{assignor}", (assignor,)
    serve = ServeTarget(tmp_path, PARTITIONS)
    try:
        on_serve = _group_lifecycle(serve, COMPARED, name, staggered=True, options=options)
    finally:
        serve.stop()
    broker = BrokerTarget(kafka_broker)
    on_kafka = _group_lifecycle(broker, COMPARED, name, staggered=True, options=options)
    assert [s.counts for s in on_kafka] == [(6,), (3, 3), (2, 2, 2), (1, 1, 2, 2), (2, 2, 2), (3, 3), (2, 2, 2)]
    assert all(_assigned_by(assignor, s.held) for s in on_kafka + on_serve), (on_kafka, on_serve)
    reasons = "\n".join(line for line in broker.log_lines() if f"Preparing to rebalance group g-{name}" in line)
    for k, v in zip(on_kafka, on_serve, strict=False):  # seconds to settle, shown with -s
        print(f"{assignor} {k.what}: Kafka {k.seconds} s, kgc serve {v.seconds} s")
    assert on_kafka == on_serve, f"Kafka: {on_kafka}\nkgc serve: {on_serve}\nKafka's rebalances:\n{reasons}"
