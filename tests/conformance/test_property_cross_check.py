"""One property, three definitions (TLA+ in spec/GroupCoordinator.tla, Python in
conformance/properties.py, Z3 in conformance/proofs/invariants.py), run on the same states:
every state TLC reaches in simulation of `failover` satisfies the Python invariants and the
Z3 invariants (TLC has checked the TLA+ ones on them), and the last state of each spec bug's
counterexample, which breaks the TLA+ property, breaks the Python and the Z3 definition too.
If one definition is weakened or drifts, one of the two directions fails. The action
properties have no Z3 form: every step of those simulated traces satisfies their Python
definitions (TLC has checked the TLA+ ones on every step), and test_cex.py checks that each
spec bug's counterexample breaks the Python definition of the property TLC found broken.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kgc.conformance import properties
from kgc.conformance.abstraction.constants import SpecConstants
from kgc.conformance.mbt import simulate
from kgc.conformance.proofs.abstraction import from_spec_state, violated_invariants
from kgc.spec.itf import read_itf

pytestmark = pytest.mark.slow

#: TLA+ property -> (the Z3 invariants that state it, the spec bug model that breaks it).
CROSS = {
    "LeaderIsMember": (("LeaderIsMember",), "bug_leader_not_reassigned"),
    "EmptyIffNoMembers": (("EmptyIffNoMembers",), "bug_last_leave_no_rebalance"),
    "SingleLeaderPerGeneration": (("SingleLeaderPerGeneration",), "bug_two_leaders"),
}


def _traces(model: str, out: Path, traces: int, depth: int, seed: int) -> tuple[list[list[dict]], dict | None]:
    result = simulate(model, traces, depth, seed, out)
    behaviours = [read_itf(Path(f))[1] for f in result.files]
    last = read_itf(result.counterexample)[1][-1] if result.counterexample is not None else None
    return behaviours, last


def _states(model: str, out: Path, traces: int, depth: int, seed: int) -> tuple[list[dict], dict | None]:
    behaviours, last = _traces(model, out, traces, depth, seed)
    return [s for b in behaviours for s in b], last


def test_reachable_states_satisfy_all_three(tmp_path: Path) -> None:
    behaviours, cex = _traces("failover", tmp_path, 100, 40, 11)
    states = [s for b in behaviours for s in b]
    assert cex is None and len(states) >= 2000
    k = SpecConstants.from_model("failover").properties_constants()
    after_acknowledgement = 0  # steps naming a leader once some generation was acknowledged
    for b in behaviours:
        for s, t in zip(b, b[1:]):
            for name, step_prop in properties.ACTION_PROPERTIES.items():
                assert not step_prop(s, t, k), f"Python {name} fails on a step TLC took: {step_prop(s, t, k)}"
            after_acknowledgement += bool(s["ackLog"] and t["leaderLog"] - s["leaderLog"])
    assert after_acknowledgement >= 1  # 3 on these 100 traces: AcknowledgedGenerationLeaderUnique is not vacuous
    checked_z3 = 0
    seen = set()
    for s in states:
        for name, prop in properties.INVARIANTS.items():
            assert not prop(s, k), f"Python {name} fails on a state TLC reached: {prop(s, k)}"
        a = from_spec_state(s, leaders=True)
        if repr(a) in seen:
            continue
        seen.add(repr(a))
        if len(seen) <= 150:  # Z3 on the first 150 distinct group states
            assert violated_invariants(a) == [], a
            checked_z3 += 1
    assert checked_z3 >= 100


@pytest.mark.parametrize("prop", sorted(CROSS))
def test_a_counterexample_breaks_all_three(tmp_path: Path, prop: str) -> None:
    z3_names, model = CROSS[prop]
    _, last = _states(model, tmp_path, 400, 30, 1)
    assert last is not None, f"simulation of {model} found no counterexample"
    k = SpecConstants.from_model(model).properties_constants()
    assert properties.INVARIANTS[prop](last, k), f"Python {prop} holds on the counterexample's last state"
    broken = violated_invariants(from_spec_state(last, leaders=True))
    assert set(z3_names) & set(broken), f"Z3 {' and '.join(z3_names)} hold there (broken: {broken})"
