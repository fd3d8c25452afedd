"""Crash test of the durable group store: a coordinator in a child process under random client
load is SIGKILLed at random moments and restarted from its file, again and again.

Checked across every kill: each acknowledged SyncGroup is recovered exactly (generation, leader,
assignment), or superseded by a later record that the child had started to append; acknowledged
generations of a group keep growing; no acknowledged generation is ever reused with another
leader (the spec's AcknowledgedGenerationLeaderUnique: an unacknowledged generation may be
reused, as Kafka 3.x does, finding_generation_reuse); recovered groups go on (acks after
recovery).

KGC_CRASH_KILLS sets the number of kills (200 in CI; the README's long run used 1,000).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

CHILD = Path(__file__).with_name("crash_child.py")
KILLS = int(os.environ.get("KGC_CRASH_KILLS", "200"))


class Incarnation:
    """One run of the child: its stdout lines, read on a thread until the pipe closes."""

    def __init__(self, store: Path, seed: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD), str(store), str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.lines: list[dict[str, Any]] = []
        self.started = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                self.lines.append(json.loads(raw))
            except json.JSONDecodeError:  # the kill cut a line: it was never complete
                continue
            self.started.set()

    def kill_after(self, seconds: float) -> None:
        try:
            self.started.wait(timeout=30)
            time.sleep(seconds)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
            self.reader.join(timeout=30)
            assert self.proc.stderr is not None
            err = self.proc.stderr.read().decode(errors="replace")
            self.proc.stderr.close()
            assert self.proc.returncode == -signal.SIGKILL, (
                f"child ended by itself ({self.proc.returncode}): {err[-2000:]}"
            )


def test_acknowledged_assignments_survive_sigkill(tmp_path: Path) -> None:
    store = tmp_path / "groups.log"
    rng = random.Random(2026)
    last_ack: dict[str, dict[str, Any]] = {}  # group -> last acknowledged record
    appended_since_ack: dict[str, list[dict[str, Any]]] = {}
    leader_of: dict[tuple[str, int], str] = {}  # (group, acked generation) -> leader
    acks = acks_after_recovery = torn = 0
    for kill in range(KILLS):
        child = Incarnation(store, seed=kill)
        child.kill_after(rng.uniform(0.0, 0.06))
        assert child.lines and "recovered" in child.lines[0], f"kill {kill}: child printed nothing"
        recovered = child.lines[0]["recovered"]
        torn += recovered["problem"] is not None
        for group, ack in last_ack.items():
            got = recovered["groups"].get(group)
            assert got is not None, f"kill {kill}: acknowledged group {group} lost"
            if got != ack:
                assert got in appended_since_ack.get(group, []), (
                    f"kill {kill}: {group} recovered as generation {got['generation_id']}, neither the acknowledged "
                    f"generation {ack['generation_id']} nor a later append"
                )
                assert got["generation_id"] >= ack["generation_id"]
        for group, got in recovered["groups"].items():
            # what the file holds now is the state later recoveries may legitimately return
            appended_since_ack[group] = [] if got == last_ack.get(group) else [got]
        for line in child.lines[1:]:
            if "append" in line:
                appended_since_ack.setdefault(line["append"]["group_id"], []).append(line["append"])
            elif "ack" in line:
                ack = line["ack"]
                group, generation = ack["group"], ack["generation"]
                stored = ack["stored"]
                assert stored is not None and stored["generation_id"] == generation
                assert stored["leader_id"] == ack["leader"]
                assert {m["member_id"]: m["assignment"] for m in stored["members"]} == {
                    m: ack["assignment"].get(m, "") for m in (x["member_id"] for x in stored["members"])
                }
                previous = last_ack.get(group)
                if previous is not None and generation == previous["generation_id"]:
                    # the leader's SyncGroup again in Stable: answered from the stored generation
                    assert stored == previous, (
                        f"kill {kill}: generation {generation} of {group} acknowledged twice, differently"
                    )
                    continue
                assert previous is None or generation > previous["generation_id"], (
                    f"kill {kill}: {group} acknowledged generation {generation} after {previous['generation_id']}"
                )
                assert leader_of.setdefault((group, generation), ack["leader"]) == ack["leader"], (
                    f"kill {kill}: generation {generation} of {group} acknowledged with two leaders"
                )
                last_ack[group] = stored
                appended_since_ack[group] = []
                acks += 1
                acks_after_recovery += bool(recovered["groups"])
    print(
        f"{KILLS} kills: {acks} acknowledged assignments checked, {acks_after_recovery} after a recovery, "
        f"{torn} recoveries discarded a torn tail"
    )
    assert acks > KILLS // 4, "the load acknowledged too few assignments to test anything"
    assert acks_after_recovery > 0, "no group went on after a recovery"


@pytest.mark.parametrize("kills", [3])
def test_children_do_not_survive(tmp_path: Path, kills: int) -> None:
    """The harness itself leaves nothing running."""
    for seed in range(kills):
        child = Incarnation(tmp_path / "s.log", seed)
        child.kill_after(0.01)
        assert child.proc.poll() is not None
