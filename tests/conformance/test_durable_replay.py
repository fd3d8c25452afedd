"""kgc replay --durable-store: every shipped scenario passes with group metadata kept in a
FileGroupStore, and a `load` really recovers the group from the file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from kgc.conformance.replay import run_scenario
from kgc.conformance.scenario import Load, load_scenario, shipped_scenarios

KGC = Path(sys.executable).with_name("kgc")
UNLOAD_LOAD = shipped_scenarios() / "unload-stable-group-and-load-restores-it-with-fresh-sessions.json"


def test_every_shipped_scenario_passes_on_the_durable_store() -> None:
    files = sorted(str(p) for p in shipped_scenarios().glob("*.json"))
    done = subprocess.run([str(KGC), "replay", "--durable-store", *files], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert done.stdout.count("PASS ") == len(files)


def test_load_reads_the_group_back_from_the_file(tmp_path: Path) -> None:
    """Damage the file's last record just before the `load`: the scenario must then fail,
    since the group comes back from the file (an older generation, or none), not from memory."""
    scenario = load_scenario(UNLOAD_LOAD)
    store = tmp_path / "groups.log"
    assert run_scenario(scenario, store_path=store).passed

    def damage_before_load(index: int, step: Any, world: Any) -> None:
        if isinstance(step, Load):
            data = bytearray(store.read_bytes())
            data[-3] ^= 0xFF
            store.write_bytes(bytes(data))

    again = tmp_path / "again"
    again.mkdir()
    store = again / "groups.log"
    assert not run_scenario(scenario, before_step=damage_before_load, store_path=store).passed
