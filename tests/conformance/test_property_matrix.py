"""The README's property x detector matrix says which seeded bug each detector catches; this
keeps it true: every property of the spec has a row, and every bug a cell names is one the
detector's own test in CI runs (so a cell cannot claim a detection nobody checks)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from kgc.conformance import properties, seeded_bugs
from kgc.conformance.proofs import transitions

ROOT = Path(__file__).resolve().parents[2]
DETECTORS = ("TLC", "conform", "validate", "fuzz", "prove")
LIVENESS = ("RebalanceCompletes", "SyncCompletes", "SilentMemberRemoved", "EventuallyStable")
#: prove cells where test_proofs shows a strengthening invariant of the property broken, not
#: the property itself: a leader handed over without a rebalance breaks NamedLeaderIsCurrentLeader
#: (the generation's named leader is no longer the leader), which the next JoinGroup response of
#: that generation turns into two leaders.
PROVED_VIA = {("SingleLeaderPerGeneration", "leader_replaced_without_rebalance"): "NamedLeaderIsCurrentLeader"}


def _test_module(relative: str) -> ModuleType:
    path = ROOT / relative
    name = "matrix_" + path.stem
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _matrix() -> dict[str, dict[str, list[str]]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Properties and the detectors", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, dict[str, list[str]]] = {}
    for line in section.splitlines():
        m = re.match(r"\| `(\w+)` \|(.*)\|$", line)
        if not m:
            continue
        cells = [c.strip() for c in m.group(2).split("|")]
        assert len(cells) == len(DETECTORS), line
        rows[m.group(1)] = {d: re.findall(r"`(\w+)`", c) for d, c in zip(DETECTORS, cells)}
    return rows


def test_every_property_has_a_row() -> None:
    spec_properties = set(properties.INVARIANTS) | set(properties.ACTION_PROPERTIES) | set(LIVENESS)
    assert set(_matrix()) == spec_properties


def test_every_cell_is_backed_by_the_detectors_test() -> None:
    models = _test_module("tests/spec/test_models.py").BUGS
    validate_tests = _test_module("tests/conformance/test_validate.py")
    validated = (
        set(validate_tests.SEEDED)
        | set(validate_tests.STATIC_SEEDED)
        | set(validate_tests.JOIN_TIMEOUT_SEEDED)
        | set(validate_tests.PROTOCOL_SEEDED)
        | set(validate_tests.STORE_SEEDED)
    )
    # test_stateful's derandomized hunts, or test_fuzz_time_to_find's example sequences
    proved = _test_module("tests/conformance/test_proofs.py").EXPECTED
    fuzzed = set(_test_module("tests/conformance/test_stateful.py").ASSERTED) | set(
        _test_module("tests/conformance/test_fuzz_time_to_find.py").HUNTED
    )
    for prop, cells in _matrix().items():
        for bug in cells["TLC"]:
            expect = models.get(f"bug_{bug}")
            assert expect is not None and expect.prop == prop, f"{prop}: TLC model bug_{bug} targets {expect}"
        for bug in cells["conform"]:
            # tests/conformance/test_mbt.py runs every implementation bug through conform
            assert bug in seeded_bugs.BUGS, f"{prop}: {bug} has no implementation variant"
        for bug in cells["validate"]:
            assert bug in validated, f"{prop}: test_validate does not run {bug}"
        for bug in cells["fuzz"]:
            assert bug in fuzzed, f"{prop}: neither test_stateful nor test_fuzz_time_to_find hunts {bug}"
        for bug in cells["prove"]:
            assert bug in transitions.BUGS, f"{prop}: {bug} has no Z3 variant"
            shown = PROVED_VIA.get((prop, bug), prop)
            assert shown in proved[bug][1], f"{prop}: test_proofs does not show {bug} breaking {shown}"


def test_every_seeded_bug_appears_in_the_matrix() -> None:
    named = {bug for cells in _matrix().values() for bugs in cells.values() for bug in bugs}
    spec_models = {name.removeprefix("bug_") for name in _test_module("tests/spec/test_models.py").BUGS}
    implementation = set(seeded_bugs.BUGS) - {"none"}
    assert spec_models | implementation | set(transitions.BUGS) <= named
