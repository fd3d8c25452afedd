"""The incremental abstraction equals the full one on every step: over Hypothesis-drawn random
runs (every spec action the recorder can take, faults and failovers included) and over TLC's
own simulated traces (kgc conform's path); a variable with no incremental rule falls back to
the full computation; and check mode does catch a wrong rule."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgc.conformance.abstraction import AbstractionError, World, abstract_state, apply_action
from kgc.conformance.abstraction import incremental as inc
from kgc.conformance.recorder import RANDOM_RUN_CONSTANTS, random_run
from kgc.spec.values import ModelValue


@contextmanager
def _checking() -> Iterator[None]:
    """KGC_CHECK_INCREMENTAL=1: every update is compared with abstract_state (raises if not)."""
    before = os.environ.get("KGC_CHECK_INCREMENTAL")
    os.environ["KGC_CHECK_INCREMENTAL"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["KGC_CHECK_INCREMENTAL"]
        else:
            os.environ["KGC_CHECK_INCREMENTAL"] = before


_WEIGHTS = st.fixed_dictionaries(
    {
        "ClientCrash": st.sampled_from([0.05, 0.5, 2.0]),
        "ClientRestart": st.sampled_from([0.5, 2.0]),
        "ClientAbandon": st.sampled_from([0.1, 1.0]),
        "ClientRejoin": st.sampled_from([0.2, 1.0]),
        "GroupUnload": st.sampled_from([0.05, 0.5]),
        "LeaveGroup": st.sampled_from([0.15, 1.0]),
    }
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), steps=st.integers(5, 60), weights=_WEIGHTS, failovers=st.sampled_from([0, 1]))
def test_incremental_equals_full_on_every_step_of_random_runs(
    seed: int, steps: int, weights: dict[str, float], failovers: int
) -> None:
    constants = replace(RANDOM_RUN_CONSTANTS, max_failovers=failovers)
    with _checking():
        trace = random_run(constants, steps, seed, weights=weights)
    assert len(trace.states) >= 2


def test_a_request_declared_client_only_is_still_recomputed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defence in depth: an action wrongly listed as client-only (a JoinGroup is a request)
    still recomputes the coordinator's variables, as the world's request counter moved."""
    monkeypatch.setattr(inc, "CLIENT_ONLY_ACTIONS", inc.CLIENT_ONLY_ACTIONS | {"JoinGroupUnknownMember"})
    world = World(RANDOM_RUN_CONSTANTS)
    abstraction = inc.IncrementalAbstraction(world, check=True)
    abstraction.update()
    apply_action(world, {"name": "JoinGroupUnknownMember", "client": ModelValue("c1"), "flag": False})
    assert abstraction.update("JoinGroupUnknownMember") == abstract_state(world)
    assert abstraction.full_updates == 2


def test_check_mode_catches_a_wrong_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """With both guards defeated (the action listed client-only, the counters blind), the
    incremental state is stale after a JoinGroup: check mode must say so, naming the step."""
    monkeypatch.setattr(inc, "CLIENT_ONLY_ACTIONS", inc.CLIENT_ONLY_ACTIONS | {"JoinGroupUnknownMember"})
    monkeypatch.setattr(inc.IncrementalAbstraction, "_counters", lambda self: ())
    world = World(RANDOM_RUN_CONSTANTS)
    abstraction = inc.IncrementalAbstraction(world, check=True)
    abstraction.update()
    apply_action(world, {"name": "JoinGroupUnknownMember", "client": ModelValue("c1"), "flag": False})
    with pytest.raises(AbstractionError, match="differs from the full one after JoinGroupUnknownMember: .*timers"):
        abstraction.update("JoinGroupUnknownMember")


def test_a_variable_without_a_rule_comes_from_the_full_computation(monkeypatch: pytest.MonkeyPatch) -> None:
    """A variable coordinator_variables no longer yields (as one another change would add to
    abstract_state only) is taken from abstract_state on every step, and is right."""
    real = inc.coordinator_variables

    def without_leader_log(world: World, history: bool, *rest: Any) -> dict:
        out = real(world, history, *rest)
        del out["leaderLog"]
        return out

    monkeypatch.setattr(inc, "coordinator_variables", without_leader_log)
    world = World(RANDOM_RUN_CONSTANTS)
    abstraction = inc.IncrementalAbstraction(world, check=True)
    abstraction.update()
    for name, client in [("JoinGroupUnknownMember", "c1"), ("ClientCrash", "c2"), ("ClientRestart", "c2")]:
        apply_action(world, {"name": name, "client": ModelValue(client), "flag": False})
        state = abstraction.update(name)
        assert "leaderLog" in abstraction.changed
        assert state == abstract_state(world)


def test_a_client_only_step_reuses_the_coordinator_variables() -> None:
    """The point of the exercise: after ClientCrash the coordinator's variables are not
    recomputed (the very same objects), and only the crashed client's variables changed."""
    world = World(RANDOM_RUN_CONSTANTS)
    abstraction = inc.IncrementalAbstraction(world)
    apply_action(world, {"name": "JoinGroupUnknownMember", "client": ModelValue("c1"), "flag": False})
    before = abstraction.update("JoinGroupUnknownMember")
    full_updates = abstraction.full_updates
    apply_action(world, {"name": "ClientCrash", "client": ModelValue("c1"), "flag": False})
    after = abstraction.update("ClientCrash")
    assert abstraction.full_updates == full_updates
    assert after["timers"] is before["timers"] and after["members"] is before["members"]
    assert "cphase" in abstraction.changed and abstraction.changed <= set(inc.CLIENT_VARIABLES)
    assert after == abstract_state(world)


def test_unchanged_timers_are_the_same_objects() -> None:
    """The timer memo: recomputing the coordinator's variables with nothing changed gives the
    previous timers tuple itself (conform then skips comparing it), and still the right one."""
    world = World(RANDOM_RUN_CONSTANTS)
    abstraction = inc.IncrementalAbstraction(world, check=True)
    apply_action(world, {"name": "JoinGroupUnknownMember", "client": ModelValue("c1"), "flag": False})
    first = abstraction.update("JoinGroupUnknownMember")
    assert first["timers"]
    again = abstraction.update(None)  # None: recompute the coordinator's variables
    assert abstraction.full_updates == 2
    assert again["timers"] is first["timers"] and "timers" not in abstraction.changed


@pytest.mark.slow
@pytest.mark.parametrize("model", ["default", "small"])  # small: Normalize (relative deadlines)
def test_incremental_equals_full_on_simulated_traces(tmp_path: Path, model: str) -> None:
    """TLC's traces through kgc conform's path, checked on every step."""
    from kgc.conformance.mbt import conform_states, parse_simulation_file
    from kgc.conformance.pipeline.conform_task import WorkUnit, simulate_raw

    _, constants, files = simulate_raw(WorkUnit("simulate", 11, 40, model, 40), tmp_path)
    memo: dict = {}
    steps = 0
    with _checking():
        for f in files:
            states = [s.values for s in parse_simulation_file(f.read_text(encoding="utf-8"), memo).states]
            outcome, _ = conform_states(f.name, states, constants)
            assert outcome.verdict == "CONFORMS", (f.name, outcome.divergence, outcome.error)
            steps += outcome.steps
    assert steps > 40 * 10


@pytest.mark.slow
def test_the_lean_comparison_reports_what_comparing_everything_does(tmp_path: Path) -> None:
    """conform's lean path (only the variables moved on either side compared, client events
    compared on their own, the abstraction updated in place) gives, trace by
    trace, the outcome of rebuilding and comparing every variable on every step
    (incremental=False): on TLC's traces as they are, under each seeded bug, and with the
    spec's side of one step changed (a value another state of the corpus has there)."""
    import random

    from kgc.conformance.abstraction import SPEC_VARIABLES
    from kgc.conformance.mbt import conform_states, parse_simulation_file
    from kgc.conformance.pipeline.conform_task import WorkUnit, simulate_raw
    from kgc.conformance.seeded_bugs import BUGS, coordinator_class

    _, constants, files = simulate_raw(WorkUnit("simulate", 12, 30, "default", 40), tmp_path)
    memo: dict = {}
    traces = [[s.values for s in parse_simulation_file(f.read_text(encoding="utf-8"), memo).states] for f in files]

    def outcome(states: list[dict], cls: Any, incremental: bool) -> tuple:
        got, _ = conform_states("t", states, constants, cls, incremental=incremental)
        return got.verdict, got.steps, got.divergence, got.error

    cases = [(t, coordinator_class("none")) for t in traces]
    cases += [(t, coordinator_class(bug)) for bug in sorted(set(BUGS) - {"none"}) for t in traces[:4]]
    rng = random.Random(13)
    for name in SPEC_VARIABLES:
        if name in ("timers", "leader"):
            continue  # read by the driver itself (the head timer, the leader to prefer)
        for _ in range(3):
            t = rng.choice(traces)
            n = rng.randrange(1, len(t))
            others = [s[name] for u in traces for s in u if s[name] != t[n][name]]
            if others:
                changed = [dict(s) for s in t]  # dict() keeps the order of the names
                changed[n][name] = rng.choice(others)
                cases.append((changed, coordinator_class("none")))
    diverged = 0
    for states, cls in cases:
        lean = outcome(states, cls, True)
        assert lean == outcome(states, cls, False), (cls, lean)
        diverged += lean[0] == "DIVERGED"
    assert diverged >= 40  # the comparison did meet divergences, of bugs and of changed states
