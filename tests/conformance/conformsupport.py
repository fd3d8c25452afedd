"""Helpers for the spec <-> implementation tests (imported by name: tests/ is no package)."""

from __future__ import annotations

import shutil
from pathlib import Path

from kgc.spec.catalog import spec_root

#: Every client fault and one failover: the model the seeded implementation bugs are hunted
#: with (the shipped `small` model may leave faults out to keep model checking fast). Ids are
#: plenty, so that random behaviours do not end in clients that can only crash and restart.
FULL_CFG = """\\* conform_full: every client fault, one failover (written by the conformance tests)
SPECIFICATION Spec
CONSTANTS
    Clients = {c1, c2}
    NoClient = NoClient
    NumIds = 8
    Session = 2
    Rebalance = 3
    InitialDelay = 1
    NewMemberTimeout = 3
    MaxGroupSize = 2
    JoinFlavours = {TRUE, FALSE}
    ClientFaults = {"crash", "abandon", "leave", "rejoin", "change", "resync", "early-rejoin"}
    MaxFailovers = 1
    Normalize = FALSE
    MaxGen = 6
    MaxTime = 20
    Bug = "none"
CONSTRAINT StateBound
"""


def full_spec_dir(folder: Path) -> Path:
    """A spec folder with the shipped .tla files and models/conform_full.cfg."""
    folder.mkdir(parents=True, exist_ok=True)
    for tla in spec_root().glob("*.tla"):
        shutil.copyfile(tla, folder / tla.name)
    (folder / "models").mkdir(exist_ok=True)
    (folder / "models" / "conform_full.cfg").write_text(FULL_CFG, encoding="utf-8")
    return folder
