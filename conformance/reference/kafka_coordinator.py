"""The client of the Kafka reference coordinator (reference/kafka-coordinator in the repository).

That Java program drives Kafka 3.9.1's own Scala GroupCoordinator in-process, as Kafka's
GroupCoordinatorTest does (Mockito ReplicaManager, purgatories on a virtual timer), and speaks JSON
lines. This module starts it in its own process group and kills the group on close, on Ctrl-C and
on every error path, so no JVM outlives kgc.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = [
    "ReferenceMissingError",
    "ReferenceProtocolError",
    "KafkaReference",
    "reference_dir",
    "reference_command",
]

KILL_GRACE_SECONDS = 5.0
MAVEN_HINT = (
    "install Maven 3 and a JDK 17 (apt-get install -y maven openjdk-17-jdk-headless) "
    "and re-run scripts/setup.sh, which builds reference/kafka-coordinator"
)


class ReferenceMissingError(RuntimeError):
    """The reference program is not built (no mvn when scripts/setup.sh ran) or java is missing."""


class ReferenceProtocolError(RuntimeError):
    """The reference program refused a command or died: a bug in kgc's use of it, not a difference."""


def reference_dir() -> Path:
    """reference/kafka-coordinator of this checkout (KGC_KAFKA_REFERENCE overrides it)."""
    override = os.environ.get("KGC_KAFKA_REFERENCE")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "reference" / "kafka-coordinator"


def reference_command(root: Path | None = None) -> list[str]:
    """java -cp <jar>:<Kafka's jars> kgc.reference.ReferenceCoordinator, from the Maven build."""
    base = root or reference_dir()
    jar = base / "target" / "kafka-reference-coordinator-1.0.jar"
    classpath = base / "target" / "classpath.txt"
    if not jar.is_file() or not classpath.is_file():
        raise ReferenceMissingError(f"{jar}: the Kafka reference coordinator is not built; {MAVEN_HINT}")
    java = shutil.which("java")
    if java is None:
        raise ReferenceMissingError(f"java not found on PATH; {MAVEN_HINT}")
    cp = f"{jar}{os.pathsep}{classpath.read_text().strip()}"
    return [java, "-Xshare:auto", "-XX:+UseSerialGC", "-Xss4m", "-cp", cp, "kgc.reference.ReferenceCoordinator"]


class KafkaReference:
    """One running reference coordinator. `call` sends one command and returns its reply;
    `init` (re)creates Kafka's coordinator with a scenario's config, so one JVM serves many
    scenarios (a JVM start costs seconds)."""

    def __init__(self, root: Path | None = None) -> None:
        self._proc = subprocess.Popen(
            reference_command(root),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            start_new_session=True,
        )

    def call(self, command: dict[str, Any]) -> dict[str, Any]:
        """Send one command; raise ReferenceProtocolError if Kafka's side refused it or the JVM died."""
        proc = self._proc
        if proc.stdin is None or proc.stdout is None or proc.poll() is not None:
            raise ReferenceProtocolError("the reference coordinator is not running")
        try:
            proc.stdin.write(json.dumps(command) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
        except (BrokenPipeError, OSError) as exc:
            raise ReferenceProtocolError(f"the reference coordinator died: {exc}") from exc
        if not line:
            raise ReferenceProtocolError(f"the reference coordinator exited (code {proc.poll()})")
        reply: dict[str, Any] = json.loads(line)
        if not reply.get("ok"):
            raise ReferenceProtocolError(f"{command.get('op')}: {reply.get('error')}")
        return reply

    def close(self) -> None:
        """Ask the JVM to quit; SIGTERM then SIGKILL its process group if it does not."""
        proc = self._proc
        if proc.poll() is None:
            try:
                if proc.stdin is not None:
                    proc.stdin.write('{"op":"quit"}\n')
                    proc.stdin.close()
                proc.wait(timeout=KILL_GRACE_SECONDS)
            except (OSError, subprocess.TimeoutExpired):
                pass
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if proc.poll() is not None:
                break
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=KILL_GRACE_SECONDS)
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        if proc.stdout is not None:
            proc.stdout.close()

    def __enter__(self) -> KafkaReference:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
