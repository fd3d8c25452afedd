"""A TLC counterexample replayed on the implementation: does the coordinator do the same?

`replay_counterexample` drives the implementation through the counterexample's actions
(abstraction.apply_spec_step), and after every step compares the abstract state with the spec's
(mbt.compare_states) and evaluates the spec's properties on the implementation's state
(conformance.properties). It keeps going after the first deviation, as long as the next spec
step can happen in the implementation's state (abstraction.not_enabled), so that the verdict
says what the implementation does with the same inputs:

    SAME       the implementation violates the property the counterexample violates
    DIFFERENT  it violates another property, not that one
    NONE       it violates no property (on a seeded-bug model: the defect is not in the
               implementation, as far as this input goes)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgc.conformance import properties
from kgc.conformance.abstraction import SpecConstants, World, abstract_state, apply_spec_step, not_enabled
from kgc.conformance.mbt import compare_states, describe_action, load_trace
from kgc.impl.coordinator import GroupCoordinator
from kgc.spec.values import Record

__all__ = ["CexReport", "CexStep", "replay_counterexample"]

SAME, DIFFERENT, NONE = "SAME", "DIFFERENT", "NONE"


@dataclass
class CexStep:
    index: int
    action: str
    follows: bool
    skipped: str | None = None  # why the step could not be performed
    diffs: list[tuple[str, str, str]] = field(default_factory=list)
    violations: dict[str, list[str]] = field(default_factory=dict)  # on the impl's state
    requests: list[str] = field(default_factory=list)
    impl_state: dict[str, Any] | None = None  # the implementation's abstract state after the step

    def line(self) -> str:
        head = f"step {self.index} {self.action}: "
        if self.skipped:
            text = head + f"SKIPPED: not possible in the implementation ({self.skipped})"
        elif self.follows:
            text = head + "follows"
        else:
            var, spec, impl = self.diffs[0]
            more = (
                f" (+{len(self.diffs) - 1} more: {', '.join(d[0] for d in self.diffs[1:])})"
                if len(self.diffs) > 1
                else ""
            )
            text = head + f"DEVIATES: {var}: spec {spec}, implementation {impl}{more}"
        for name, what in self.violations.items():
            text += f"\n    implementation violates {name}: {'; '.join(what)}"
        return text


@dataclass
class CexReport:
    file: str
    model: str | None
    violated: str | None  # what the spec's counterexample violates
    implementation: str
    steps: list[CexStep] = field(default_factory=list)
    loop: int | None = None  # a lasso: the state (0-based) the last one goes back to
    stuttering: bool = False  # the behaviour ends by stuttering for ever

    @property
    def temporal(self) -> bool:
        """The violated property is not one conformance.properties evaluates on states or
        steps (a liveness property): the implementation shows it by following the trace,
        loop included."""
        return (
            self.violated is not None
            and self.violated not in properties.INVARIANTS
            and self.violated not in properties.ACTION_PROPERTIES
            and self.violated not in properties.FINDINGS
        )

    @property
    def first_deviation(self) -> CexStep | None:
        return next((s for s in self.steps if not s.follows), None)

    @property
    def follows(self) -> bool:
        return self.first_deviation is None

    def first_violation(self, name: str | None = None) -> CexStep | None:
        return next((s for s in self.steps if s.violations and (name is None or name in s.violations)), None)

    @property
    def verdict(self) -> str:
        if self.violated is not None and self.first_violation(self.violated) is not None:
            return SAME
        if self.temporal and self.follows:
            return SAME
        if self.first_violation() is not None:
            return DIFFERENT
        return NONE

    def conclusion(self) -> str:
        dev = self.first_deviation
        follow = (
            "the implementation follows the counterexample to its end"
            if dev is None
            else f"the implementation does not follow the counterexample (first deviation "
            f"at step {dev.index} {dev.action})"
        )
        target = self.violated or "(no property named)"
        verdict = self.verdict
        if verdict == SAME and self.temporal:
            shows = (
                f"it can repeat the same {'stuttering end' if self.stuttering else 'loop'}, so it violates {target} too"
            )
        elif verdict == SAME:
            at = self.first_violation(self.violated)
            shows = f"it shows the same violation, {target}, at step {at.index}"
        elif verdict == DIFFERENT:
            at = self.first_violation()
            shows = f"it does not violate {target} but violates {', '.join(at.violations)} at step {at.index}"
        elif self.temporal:
            shows = (
                f"it does not show this violation of {target} (a liveness property: "
                f"shown only by following the whole lasso) and violates no safety property"
            )
        else:
            shows = f"it shows no violation of {target} (nor of any other property)"
        return f"{follow}; {shows}: {verdict}"


def _schedule(states: list[Any], loop: int | None, stuttering: bool) -> list[int]:
    """Indices of the spec states to reach, in order: the trace, then for a lasso (the last
    state goes back to state `loop`) the way round the loop once more and back to its start,
    so that following it means the implementation can repeat the loop for ever."""
    order = list(range(1, len(states)))
    if loop is not None and not stuttering and 0 <= loop < len(states):
        order += [loop] + list(range(loop + 1, len(states))) + [loop]
    return order


def replay_counterexample(
    path: Path, coordinator_class: type[GroupCoordinator] = GroupCoordinator, constants: SpecConstants | None = None
) -> CexReport:
    k, states, meta = load_trace(Path(path), constants)
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    report = CexReport(str(path), meta.get("model"), meta.get("violated"), coordinator_class.__name__)
    report.loop = document.get("loop")
    report.stuttering = bool(meta.get("stuttering"))
    world = World(k, coordinator_class)
    pk = k.properties_constants()
    impl = abstract_state(world)
    impl["lastAction"] = states[0].get("lastAction", Record({"name": "Init"}))
    first = CexStep(0, "Init", True)
    first.diffs = compare_states(states[0], impl, world, world.ops)
    first.follows = not first.diffs
    first.impl_state = impl
    # a finding (a property Kafka itself lacks) is checked only when it is the one violated
    names = list(properties.INVARIANTS) + list(properties.ACTION_PROPERTIES)
    if report.violated in properties.FINDINGS:
        names.append(report.violated)
    first.violations = properties.check_state(impl, pk, names).violations
    report.steps.append(first)
    prev = 0
    for n in _schedule(states, report.loop, report.stuttering):
        la = states[n]["lastAction"]
        step = CexStep(n, describe_action(la), False)
        report.steps.append(step)
        reason = not_enabled(world, la)
        if reason is not None:
            step.skipped = reason
            step.diffs = [("(step)", "taken", "not possible")]
            continue
        before = impl
        try:
            res = apply_spec_step(world, states[prev], states[n])
        except Exception as e:  # noqa: BLE001 - the implementation crashed on this input
            step.diffs = [("(exception)", "a next state", f"{type(e).__name__}: {e}")]
            break
        step.requests = res.requests
        impl = abstract_state(world)
        impl["lastAction"] = res.last_action
        step.impl_state = impl
        step.diffs = compare_states(states[n], impl, world, world.ops)
        step.follows = not step.diffs
        step.violations = properties.check_step(before, impl, pk, names).violations
        prev = n
    return report


def spec_violations(path: Path, constants: SpecConstants | None = None) -> dict[str, Any]:
    """The properties the counterexample's own last state (or last step) violates, evaluated
    with conformance.properties: a cross-check that the Python properties agree with TLC."""
    k, states, _ = load_trace(Path(path), constants)
    pk = k.properties_constants()
    if len(states) >= 2:
        return properties.check_step(states[-2], states[-1], pk).violations
    return properties.check_state(states[-1], pk).violations
