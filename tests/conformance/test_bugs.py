"""The one registry of seeded bugs agrees with the spec's Bug constants, the models folder, the
implementation's seeded coordinators and the Z3 encoding, in one naming style."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kgc.conformance.bugs import NAME_STYLE, UnknownBug, all_bugs, require

SPEC = Path(__file__).resolve().parents[2] / "spec" / "GroupCoordinator.tla"
KGC = Path(sys.executable).with_name("kgc")


def spec_bug_literals() -> set[str]:
    """Every "NAME" the spec compares its Bug constant with."""
    text = SPEC.read_text()
    return set(re.findall(r'Bug\s*(?:=|#)\s*"([a-z0-9_]+)"', text)) - {"none"}


def test_names_are_one_style() -> None:
    for name in all_bugs():
        assert NAME_STYLE.fullmatch(name), name


def test_every_spec_bug_has_its_model_and_every_model_its_bug() -> None:
    spec_models = {b.name for b in all_bugs().values() if b.spec_model}
    assert spec_models == spec_bug_literals()


def test_the_layers_are_found() -> None:
    bugs = all_bugs()
    assert bugs["generation_not_bumped"].layers == ["spec", "implementation", "proof"]
    assert bugs["sync_in_preparing_rebalance"].layers == ["spec", "implementation"]
    assert bugs["sync_answered_in_preparing_rebalance"].layers == ["spec", "implementation", "proof"]


def test_a_bug_a_layer_lacks_is_refused_with_where_it_exists() -> None:
    with pytest.raises(UnknownBug, match="exists in: proof"):
        require("leader_replaced_without_rebalance", "implementation")
    with pytest.raises(UnknownBug, match="kgc bugs"):
        require("no_such_bug", "spec")


def test_kgc_bugs_lists_the_registry() -> None:
    done = subprocess.run([str(KGC), "bugs", "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout.splitlines()[-1])
    assert [b["name"] for b in listed] == sorted(all_bugs())
