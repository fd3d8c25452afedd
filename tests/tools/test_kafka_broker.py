"""`kgc kafka start|stop`: a real Kafka 3.9.1 broker (KRaft) from reference/kafka-broker's Maven
classpath, started, checked on the wire and in its own log, stopped cleanly; Ctrl-C while it
starts leaves no JVM; a broker that cannot start, a missing java or classpath, and a stop where
nothing was started each end in one line and the documented exit code."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kgc.conformance.reference.kafka_broker import PID_FILE, api_versions_answered

pytestmark = pytest.mark.slow

KGC = Path(sys.executable).with_name("kgc")


def kgc(*argv: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KGC), *argv], capture_output=True, text=True, timeout=timeout, env=env)


def jvm_alive(pid: int) -> bool:
    try:
        return b"kafka.Kafka" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def test_start_answers_with_the_settings_given_and_stop_shuts_down_cleanly(tmp_path: Path) -> None:
    folder = tmp_path / "kafka"
    started = kgc("kafka", "start", "--dir", str(folder), "--min-session-timeout-ms", "1500", "--json")
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    pid = int(info["pid"])
    try:
        assert jvm_alive(pid)
        assert int((folder / PID_FILE).read_text()) == pid
        assert os.getpgid(pid) == pid, "the broker is not in a process group of its own"
        assert api_versions_answered(int(info["port"]))
        log = (folder / "broker.log").read_text()
        # the classic Scala coordinator kgc models answers the groups, with the settings asked for
        assert "[GroupCoordinator 1]: Startup complete." in log
        assert "group.min.session.timeout.ms = 1500" in log
        assert "group.initial.rebalance.delay.ms = 0" in log
        again = kgc("kafka", "start", "--dir", str(folder))
        assert again.returncode == 1 and "already running" in again.stderr, again.stderr
    finally:
        stopped = kgc("kafka", "stop", "--dir", str(folder))
    assert stopped.returncode == 0, stopped.stderr
    assert f"broker {pid} terminated" in stopped.stdout
    assert not jvm_alive(pid)
    assert not (folder / PID_FILE).exists()
    assert "[GroupCoordinator 1]: Shutdown complete." in (folder / "broker.log").read_text()
    nothing = kgc("kafka", "stop", "--dir", str(folder))
    assert nothing.returncode == 1 and nothing.stderr.count("\n") == 1, nothing.stderr
    assert PID_FILE in nothing.stderr


def test_interrupt_while_starting_leaves_no_jvm(tmp_path: Path) -> None:
    folder = tmp_path / "kafka"
    proc = subprocess.Popen(
        [str(KGC), "kafka", "start", "--dir", str(folder)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not (folder / PID_FILE).exists():
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        pid = int((folder / PID_FILE).read_text())
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert not jvm_alive(pid)


def test_a_broker_that_cannot_listen_is_reported_with_its_log(tmp_path: Path) -> None:
    folder = tmp_path / "kafka"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = kgc("kafka", "start", "--dir", str(folder), "--port", str(port), "--timeout", "120")
    assert done.returncode == 26, done.stderr
    assert done.stderr.count("\n") == 1 and str(folder / "broker.log") in done.stderr, done.stderr
    assert "Address already in use" in (folder / "broker.log").read_text()
    assert not (folder / PID_FILE).exists()


def test_without_java_or_the_classpath(tmp_path: Path) -> None:
    no_java = dict(os.environ, PATH=str(Path(sys.executable).parent))
    done = kgc("kafka", "start", "--dir", str(tmp_path / "a"), env=no_java)
    assert done.returncode == 23 and done.stderr.count("\n") == 1 and "java" in done.stderr, done.stderr
    unbuilt = dict(os.environ, KGC_KAFKA_BROKER=str(tmp_path / "nowhere"))
    done = kgc("kafka", "start", "--dir", str(tmp_path / "b"), env=unbuilt)
    assert done.returncode == 25 and done.stderr.count("\n") == 1, done.stderr
    assert "classpath.txt" in done.stderr and "scripts/setup.sh" in done.stderr


def test_foreground_stops_the_broker_on_sigterm(tmp_path: Path) -> None:
    folder = tmp_path / "kafka"
    proc = subprocess.Popen(
        [str(KGC), "kafka", "start", "--dir", str(folder), "--foreground"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("kgc kafka: listening on 127.0.0.1:"), first + (
            proc.stderr.read() if proc.stderr else ""
        )
        pid = int((folder / PID_FILE).read_text())
        assert jvm_alive(pid)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert f"broker {pid} terminated" in out
    assert not jvm_alive(pid)
    assert not (folder / PID_FILE).exists()


def test_a_killed_owner_takes_its_broker_along(tmp_path: Path) -> None:
    """KafkaBroker(die_with_parent=True), as the tests use it: the owner SIGKILLed (no `finally`
    runs) still leaves no JVM behind."""
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path;"
            "from kgc.conformance.reference.kafka_broker import KafkaBroker;"
            "b = KafkaBroker(Path(sys.argv[1]), die_with_parent=True).start();"
            "print(b.proc.pid, flush=True); time.sleep(600)",
            str(tmp_path / "kafka"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None
        pid = int(owner.stdout.readline())
        assert jvm_alive(pid)
    finally:
        owner.kill()
        owner.wait(10)
    deadline = time.monotonic() + 60
    while jvm_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not jvm_alive(pid)


def test_stop_with_a_stale_or_bad_pid_file_and_start_in_a_file(tmp_path: Path) -> None:
    folder = tmp_path / "kafka"
    folder.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    (folder / PID_FILE).write_text(f"{dead.pid}\n")  # no kafka.Kafka of this folder has it now
    done = kgc("kafka", "stop", "--dir", str(folder))
    assert done.returncode == 0 and f"broker {dead.pid} not running" in done.stdout, done.stderr
    assert not (folder / PID_FILE).exists()
    (folder / PID_FILE).write_text("twelve\n")
    done = kgc("kafka", "stop", "--dir", str(folder))
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "not a pid" in done.stderr, done.stderr
    a_file = tmp_path / "file"
    a_file.write_text("")
    done = kgc("kafka", "start", "--dir", str(a_file))
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and str(a_file) in done.stderr, done.stderr
