"""A real single-node Kafka 3.9.1 broker (KRaft: broker and controller in one JVM), run from the
Maven artifacts of reference/kafka-broker (`kgc kafka start|stop`, and the real-client tests).

The in-process reference (kafka_coordinator.py) checks kgc's coordinator against Kafka's code
step by step; this one lets the same consumer programs that talk to `kgc serve` talk to Kafka
itself, network, purgatories, wall clock and all. The broker runs in its own process group with
its pid in its folder, so `stop` (or the context manager, or Ctrl-C while it starts) ends the
whole JVM and nothing outlives the caller by accident.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from kgc.conformance.reference.kafka_coordinator import MAVEN_HINT, ReferenceMissingError
from kgc.spec.tlc import parent_death_prefix

__all__ = [
    "PID_FILE",
    "BrokerRunningError",
    "BrokerSettings",
    "BrokerStartError",
    "BrokerStopResult",
    "JavaMissingError",
    "KafkaBroker",
    "broker_classpath_dir",
    "start_broker",
    "stop_broker",
]

PID_FILE = "broker.pid"
INFO_FILE = "broker.json"
LOG_FILE = "broker.log"
START_TIMEOUT_S = 180.0
STOP_GRACE_S = 30.0
MAIN_CLASS = "kafka.Kafka"
# Small and quick to start on a shared 2-core machine: a bounded heap, the serial collector, C1 only.
JVM_OPTIONS = ("-Xms64m", "-Xshare:auto", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
# Kafka's config/log4j.properties, to stdout (the broker's log file) only.
LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.log.LogCleaner=WARN
log4j.logger.state.change.logger=WARN
"""


class JavaMissingError(ReferenceMissingError):
    """No java on PATH: the broker cannot run at all (exit code 23, as for TLC)."""


class BrokerStartError(RuntimeError):
    """The broker exited or did not answer in time; the message names its log file."""


class BrokerRunningError(RuntimeError):
    """A broker started in the same folder is still running (one folder, one broker)."""


@dataclass(frozen=True)
class BrokerSettings:
    """The broker's settings a consumer-group test needs; the rest are Kafka's defaults."""

    port: int = 0  # 0: any free port
    initial_rebalance_delay_ms: int = 0
    min_session_timeout_ms: int = 1000
    max_session_timeout_ms: int = 300000
    auto_create_topics: bool = True
    num_partitions: int = 1
    heap_mb: int = 512


@dataclass(frozen=True)
class BrokerStopResult:
    """How `stop_broker` ended the broker: 'terminated' (SIGTERM sufficed), 'killed' (SIGKILL after
    the grace), or 'not running' (the pid file was stale)."""

    pid: int
    how: str


def broker_classpath_dir() -> Path:
    """reference/kafka-broker of this checkout (KGC_KAFKA_BROKER overrides it)."""
    override = os.environ.get("KGC_KAFKA_BROKER")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "reference" / "kafka-broker"


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        raise JavaMissingError(f"java not found on PATH; {MAVEN_HINT}")
    return java


def _classpath(root: Path | None = None) -> str:
    listing = (root or broker_classpath_dir()) / "target" / "classpath.txt"
    if not listing.is_file():
        hint = MAVEN_HINT.replace("reference/kafka-coordinator", "reference/kafka-broker")
        raise ReferenceMissingError(f"{listing}: the Kafka broker's classpath is not built; {hint}")
    return listing.read_text().strip()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cluster_id() -> str:
    """A random cluster id in Kafka's Uuid text form (16 bytes, URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def server_properties(settings: BrokerSettings, data: Path, port: int, controller_port: int) -> str:
    """server.properties of a one-node KRaft cluster with the group settings of `settings`;
    internal topics with one replica and one partition (a single broker, and less to load)."""
    props = {
        "process.roles": "broker,controller",
        "node.id": 1,
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": data,
        "num.network.threads": 2,
        "num.io.threads": 2,
        "background.threads": 2,
        "num.partitions": settings.num_partitions,
        "auto.create.topics.enable": str(settings.auto_create_topics).lower(),
        # the classic protocol only: the Scala GroupCoordinator kgc models answers the groups
        "group.coordinator.rebalance.protocols": "classic",
        "group.initial.rebalance.delay.ms": settings.initial_rebalance_delay_ms,
        "group.min.session.timeout.ms": settings.min_session_timeout_ms,
        "group.max.session.timeout.ms": settings.max_session_timeout_ms,
        "offsets.topic.replication.factor": 1,
        "offsets.topic.num.partitions": 1,
        "transaction.state.log.replication.factor": 1,
        "transaction.state.log.min.isr": 1,
        "transaction.state.log.num.partitions": 1,
    }
    return "".join(f"{key}={value}\n" for key, value in props.items())


def api_versions_answered(port: int, timeout: float = 2.0) -> bool:
    """Whether a Kafka broker on 127.0.0.1:port answers ApiVersions v0 (with no error): it does
    only once it has caught up with the metadata and enabled request processing."""
    request = struct.pack(">hhih", 18, 0, 1, 3) + b"kgc"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(struct.pack(">i", len(request)) + request)
            head = _read_exactly(sock, 4)
            body = _read_exactly(sock, struct.unpack(">i", head)[0])
    except OSError:
        return False
    correlation, error = struct.unpack(">ih", body[:6])
    return correlation == 1 and error == 0


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def _format_storage(java: str, classpath: str, config: Path, log: Path, log4j: Path) -> None:
    """kafka.tools.StorageTool format, as `kafka-storage.sh format -t ID -c server.properties`;
    an already formatted folder is kept (a restarted broker keeps its topics and groups)."""
    argv = [java, "-Xmx256m", *JVM_OPTIONS, f"-Dlog4j.configuration=file:{log4j}"]
    argv += ["-cp", classpath, "kafka.tools.StorageTool"]
    argv += ["format", "-t", _cluster_id(), "-c", str(config), "--ignore-formatted"]
    with log.open("ab") as out:
        done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=START_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise BrokerStartError(f"{log}: kafka.tools.StorageTool format exited {done.returncode}")


def _pid_alive(pid: int, folder: Path) -> bool:
    """Whether `pid` is still this folder's broker JVM (not a recycled pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    zombie = stat.rsplit(")", 1)[-1].split()[0] == "Z"
    return not zombie and MAIN_CLASS.encode() in cmdline and str(folder / "server.properties").encode() in cmdline


def running_pid(folder: Path) -> int | None:
    """The pid of the broker started in `folder`, if it is still running."""
    try:
        pid = int((folder / PID_FILE).read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _pid_alive(pid, folder) else None


class KafkaBroker:
    """One broker in `folder` (created if needed): `start` formats the storage, launches the JVM
    in its own session and waits until it answers ApiVersions; `stop` ends it. As a context
    manager it is stopped on the way out, Ctrl-C and errors included; `die_with_parent` (the
    tests) also ends it when the caller is killed outright. `kgc kafka start` leaves it off: the
    broker outlives the command by design."""

    def __init__(
        self,
        folder: Path,
        settings: BrokerSettings | None = None,
        classpath_dir: Path | None = None,
        *,
        die_with_parent: bool = False,
    ) -> None:
        self.folder = folder.resolve()
        self.die_with_parent = die_with_parent
        self.settings = settings or BrokerSettings()
        self.classpath_dir = classpath_dir
        self.port = 0
        self.controller_port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.start_seconds = 0.0

    @property
    def log(self) -> Path:
        return self.folder / LOG_FILE

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = START_TIMEOUT_S) -> KafkaBroker:
        """Launch and wait until the broker answers; on any failure (Ctrl-C too) the JVM is ended."""
        java, classpath = _java(), _classpath(self.classpath_dir)
        pid = running_pid(self.folder)
        if pid is not None:
            raise BrokerRunningError(f"{self.folder / PID_FILE}: a broker is already running there (pid {pid})")
        began = time.monotonic()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = self.settings.port or _free_port()
        self.controller_port = _free_port()
        config = self.folder / "server.properties"
        config.write_text(server_properties(self.settings, self.folder / "data", self.port, self.controller_port))
        log4j = self.folder / "log4j.properties"
        log4j.write_text(LOG4J_PROPERTIES)
        with self.log.open("a") as out:  # a restart appends: an earlier run's log is kept
            out.write(f"=== kgc kafka start {time.strftime('%Y-%m-%dT%H:%M:%S%z')} ===\n")
        _format_storage(java, classpath, config, self.log, log4j)
        argv = [*self._parent_death_prefix(), java, f"-Xmx{self.settings.heap_mb}m", *JVM_OPTIONS]
        argv += [f"-Dlog4j.configuration=file:{log4j}", f"-Dkafka.logs.dir={self.folder}"]
        argv += ["-cp", classpath, MAIN_CLASS, str(config)]
        try:
            with self.log.open("ab") as out:
                self.proc = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
            (self.folder / PID_FILE).write_text(f"{self.proc.pid}\n")
            self._wait_until_answering(timeout - (time.monotonic() - began))
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - began
        (self.folder / INFO_FILE).write_text(json.dumps(self.info()) + "\n")
        return self

    def _parent_death_prefix(self) -> list[str]:
        """With die_with_parent, the JVM gets SIGTERM when this process dies, even by SIGKILL, when
        no `finally` runs (a test run killed by a CI timeout); see kgc.spec.tlc.parent_death_prefix.
        Without setpriv on PATH the broker is stopped by the usual paths only."""
        return parent_death_prefix() if self.die_with_parent else []

    def _wait_until_answering(self, timeout: float) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                raise BrokerStartError(f"{self.log}: the broker exited with code {code} before answering")
            if api_versions_answered(self.port):
                return
            time.sleep(0.25)
        raise BrokerStartError(f"{self.log}: the broker did not answer on {self.bootstrap} within {timeout:.0f} s")

    def info(self) -> dict[str, object]:
        """What `kgc kafka start --json` prints and broker.json holds."""
        return {
            "bootstrap": self.bootstrap,
            "port": self.port,
            "controller_port": self.controller_port,
            "pid": self.proc.pid if self.proc else None,
            "dir": str(self.folder),
            "log": str(self.log),
            "start_seconds": round(self.start_seconds, 2),
        }

    def stop(self, grace: float = STOP_GRACE_S) -> BrokerStopResult | None:
        """SIGTERM the broker's process group (Kafka shuts down cleanly on it), SIGKILL after `grace`."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        how = _end_group(proc.pid, grace, lambda t: _wait_child(proc, t))
        (self.folder / PID_FILE).unlink(missing_ok=True)
        return BrokerStopResult(proc.pid, how)

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _wait_child(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    try:
        proc.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        return False


def _wait_gone(pid: int, folder: Path, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _pid_alive(pid, folder):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def _end_group(pid: int, grace: float, wait: Callable[[float], bool]) -> str:
    """SIGTERM the process group `pid`; SIGKILL it if `wait(grace)` says it is still there."""
    for sig, how in ((signal.SIGTERM, "terminated"), (signal.SIGKILL, "killed")):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return how
        if wait(grace if sig == signal.SIGTERM else 10.0):
            return how
    return "killed"


def start_broker(folder: Path, settings: BrokerSettings, timeout: float = START_TIMEOUT_S) -> KafkaBroker:
    """`kgc kafka start`: a broker left running in `folder` after this returns."""
    return KafkaBroker(folder, settings).start(timeout)


def stop_broker(folder: Path, grace: float = STOP_GRACE_S) -> BrokerStopResult:
    """`kgc kafka stop`: end the broker whose pid file is in `folder` (FileNotFoundError: none was
    started there)."""
    folder = folder.resolve()
    pid = int((folder / PID_FILE).read_text().strip())
    if not _pid_alive(pid, folder):
        (folder / PID_FILE).unlink(missing_ok=True)
        return BrokerStopResult(pid, "not running")
    how = _end_group(pid, grace, lambda t: _wait_gone(pid, folder, t))
    (folder / PID_FILE).unlink(missing_ok=True)
    return BrokerStopResult(pid, how)
