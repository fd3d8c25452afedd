"""Helpers for the kgc serve tests: the server and the consumers as real processes, each
consumer's rebalance callbacks read as JSON lines."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

KGC = Path(sys.executable).with_name("kgc")
CLIENTS = Path(__file__).parent / "serve_clients"


class Proc:
    """A child process whose stdout lines are collected by a thread (JSON ones parsed)."""

    def __init__(self, argv: Sequence[str], name: str, cwd: Path | None = None, *, dumps_stacks: bool = False) -> None:
        self.name = name
        self.dumps_stacks = dumps_stacks  # SIGUSR1 prints its threads' stacks (serve_clients/diagnostics.py)
        self.argv = list(argv)
        self.proc = subprocess.Popen(
            self.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            start_new_session=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.events: list[dict[str, Any]] = []
        self.err: list[str] = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, True), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, False), daemon=True).start()

    def _pump(self, stream: Any, out: bool) -> None:
        for line in stream:
            if not out:
                self.err.append(line)
                continue
            self.lines.put(line)
            if line.startswith("{"):
                try:
                    event = json.loads(line)
                    event["_t"] = time.monotonic()
                    self.events.append(event)
                except ValueError:
                    pass

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 20) -> int:
        self.signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            return self.proc.wait(5)

    def assignment(self) -> list[int] | None:
        """The partitions of the last assignment, None when revoked since (or never assigned)."""
        current = None
        for e in self.events:
            if e.get("event") == "assigned":
                current = list(e["partitions"])
            elif e.get("event") in ("revoked", "closed"):
                current = None
        return current


def first_since(procs: Sequence[Proc], kind: str, since: float) -> float | None:
    """When the first `kind` event after `since` arrived from any of `procs` (None: not yet)."""
    times = [e["_t"] for p in procs for e in p.events if e.get("event") == kind and e["_t"] >= since]
    return min(times) if times else None


def start_server(tmp: Path, *extra: str) -> tuple[Proc, int]:
    server = Proc([str(KGC), "serve", "--port", "0", *extra], "server", cwd=tmp)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            line = server.lines.get(timeout=0.5)
        except queue.Empty:
            if server.proc.poll() is not None:
                raise RuntimeError("kgc serve exited: " + "".join(server.err)) from None
            continue
        if line.startswith("kgc serve: listening on "):
            return server, int(line.rsplit(":", 1)[1])
    server.stop()
    raise RuntimeError("kgc serve did not start: " + "".join(server.err))


def consumer(kind: str, port: int, group: str, topic: str, name: str, session_ms: int, *extra: str) -> Proc:
    script = CLIENTS / f"{kind}_consumer.py"
    argv = [sys.executable, str(script), f"127.0.0.1:{port}", group, topic, name, str(session_ms), *extra]
    return Proc(argv, name, dumps_stacks=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(
    what: str,
    check: Callable[[], bool],
    timeout: float,
    procs: Sequence[Proc] = (),
    context: Callable[[], str] | None = None,
) -> float:
    """Seconds until check() held; after timeout an AssertionError with what the wait was for:
    each process's events and the end of its stderr (a consumer's client log and, asked by
    SIGUSR1, its threads' stacks) and `context()` (the coordinator's log), so a failure in CI
    says which side stalled."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():
            return time.monotonic() - start
        time.sleep(0.05)
    asked = [p for p in procs if p.dumps_stacks and p.proc.poll() is None]
    for p in asked:
        p.signal(signal.SIGUSR1)
    if asked:
        time.sleep(1.0)  # the stacks arrive through the stderr pump
    detail = "\n".join(f"--- {p.name}: events {p.events}\n{''.join(p.err[-60:])}" for p in procs)
    if context is not None:
        detail += "\n--- the coordinator:\n" + context()
    raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{detail}")


def balanced(members: Sequence[Proc], partitions: int) -> bool:
    """Every member holds an assignment; together they are disjoint and cover the partitions."""
    held = [p.assignment() for p in members]
    if any(h is None for h in held):
        return False
    flat = [x for h in held for x in (h or [])]
    return sorted(flat) == list(range(partitions))
