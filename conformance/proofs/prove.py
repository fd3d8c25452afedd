"""Run the inductiveness checks and turn failures into readable counterexamples to induction.

For every invariant I of INVARIANTS: Init => I, and for every action a: Inv /\\ a => I', where
Inv is the conjunction of all invariants; for every action property P of STEP_PROPERTIES and
every action a: Inv /\\ a => P(pre, post, a). Proofs use the uninterpreted Member sort (so they hold
for any number of members); a check that comes back sat is re-run over an enumerated sort of
three members, whose model prints as a pre-state, the action with its arguments, the post-state
and the conjuncts it breaks. Every action is also checked to be enabled in some state satisfying
Inv, so a guard encoded as false cannot make its checks pass vacuously.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import z3

from kgc.conformance.proofs import invariants as inv_mod
from kgc.conformance.proofs.invariants import INVARIANTS, INVARIANTS_BY_NAME, Invariant
from kgc.conformance.proofs.model import TLA_NAMES, Signature, State, fresh_state, init, signature
from kgc.conformance.proofs.step_properties import STEP_PROPERTIES, STEP_PROPERTIES_BY_NAME, StepProperty
from kgc.conformance.proofs.transitions import ACTIONS, Action, check_bugs

PROVED = "proved"
NOT_INDUCTIVE = "not inductive"
UNKNOWN = "unknown"
VACUOUS = "vacuous"  # the action is enabled in no state satisfying Inv

EXIT_OK = 0
EXIT_FAILED = 10
EXIT_UNKNOWN = 21

INIT = "Init"
Checked = Invariant | StepProperty  # what a row of the report states
CEX_MEMBERS = (3, 4)  # enumerated sizes tried for a readable counterexample


@dataclass
class Counterexample:
    invariant: str
    action: str
    members: list[str]
    args: dict[str, Any]
    pre: dict[str, Any]
    post: dict[str, Any]
    broken: list[str]
    witnesses: dict[str, Any]
    sort: str

    def lines(self) -> list[str]:
        out = [
            f"counterexample to induction: {self.action} breaks {self.invariant} "
            f"(members {', '.join(self.members)}; {self.sort})"
        ]
        if self.action != INIT:
            out.append("pre-state:")
            out += [f"  {k} = {_show(v)}" for k, v in self.pre.items()]
            arg_text = ", ".join(f"{k}={_show(v)}" for k, v in self.args.items())
            out.append(f"action: {self.action}({arg_text})")
        out.append("post-state:" if self.action != INIT else "initial state:")
        for k, v in self.post.items():
            mark = "" if self.action == INIT or self.pre.get(k) == v else "   <- changed"
            out.append(f"  {k} = {_show(v)}{mark}")
        out.append(f"broken conjuncts: {', '.join(self.broken)}")
        if self.witnesses:
            out.append("witnesses: " + ", ".join(f"{k}={_show(v)}" for k, v in self.witnesses.items()))
        return out


@dataclass
class CheckResult:
    invariant: str
    action: str
    status: str
    ms: float
    reason: str = ""
    counterexample: Counterexample | None = None


@dataclass
class ProofReport:
    bugs: list[str]
    invariants: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)  # Init first
    checks: list[CheckResult] = field(default_factory=list)
    enabled: dict[str, str] = field(default_factory=dict)  # action -> sat/unsat/unknown
    total_ms: float = 0.0

    @property
    def exit_code(self) -> int:
        if any(c.status in (NOT_INDUCTIVE, VACUOUS) for c in self.checks):
            return EXIT_FAILED
        if any(c.status == UNKNOWN for c in self.checks):
            return EXIT_UNKNOWN
        return EXIT_OK

    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if c.status != PROVED]

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.exit_code == EXIT_OK,
            "exit_code": self.exit_code,
            "bugs": self.bugs,
            "total_ms": round(self.total_ms, 1),
            "invariants": self.invariants,
            "actions": self.actions,
            "enabled": self.enabled,
            "checks": [
                {
                    "invariant": c.invariant,
                    "action": c.action,
                    "status": c.status,
                    "ms": round(c.ms, 1),
                    **({"reason": c.reason} if c.reason else {}),
                }
                for c in self.checks
            ],
            "counterexamples": [asdict(c.counterexample) for c in self.checks if c.counterexample],
        }


# ------------------------------------------------------------------------------- checking


def _solver(timeout_ms: int) -> z3.Solver:
    s = z3.Solver()
    s.set(timeout=timeout_ms)
    return s


def prove(
    bugs: frozenset[str] | set[str] | list[str] = frozenset(),
    timeout_ms: int = 5000,
    counterexamples: bool = True,
    invariants: tuple[Invariant, ...] = INVARIANTS,
    actions: tuple[Action, ...] = ACTIONS,
    step_properties: tuple[StepProperty, ...] = STEP_PROPERTIES,
) -> ProofReport:
    """Check every invariant against Init and every action, and every action property against
    every action, assuming the conjunction of `invariants` in the pre-state. Never raises on a
    failed check: the report carries proved / not inductive / unknown per cell (a subset of
    invariants is for showing that the strengthening is needed)."""
    bugset = check_bugs(bugs)
    t_start = time.perf_counter()
    report = ProofReport(
        bugs=sorted(bugset),
        invariants=[i.name for i in invariants] + [p.name for p in step_properties],
        actions=[INIT] + [a.name for a in actions],
    )
    sig = signature(None)
    pre, post0 = fresh_state(sig, ""), fresh_state(sig, "_0")

    quick = min(QUICK_MS, timeout_ms)
    for i in invariants:
        s = _solver(quick)
        s.add(init(sig, post0))
        bad, _ = i.violated(sig, post0)
        s.add(bad)
        report.checks.append(_decide(s, i, None, bugset, timeout_ms, counterexamples, invariants))

    inv_pre = z3.And([i.holds(sig, pre) for i in invariants])
    for a in actions:
        args = a.args(sig, "")
        guard, post = a.apply(sig, pre, args, bugset)
        report.enabled[a.name] = _enabled(a, bugset, timeout_ms)
        s = _solver(quick)
        s.add(inv_pre, guard)
        targets: list[tuple[Checked, Invariant]] = [(i, i) for i in invariants]
        targets += [(p, p.at(pre, a.name, args)) for p in step_properties]
        for checked, as_invariant in targets:
            s.push()
            bad, _ = as_invariant.violated(sig, post)
            s.add(bad)
            res = _decide(s, checked, a, bugset, timeout_ms, counterexamples, invariants)
            if res.status == PROVED and report.enabled[a.name] == "unsat":
                res.status, res.reason = VACUOUS, "the action is enabled in no state satisfying the invariants"
            report.checks.append(res)
            s.pop()
    report.total_ms = (time.perf_counter() - t_start) * 1000
    return report


QUICK_MS = 1000  # first attempt at a proof before looking for a small counterexample


def _decide(
    s: z3.Solver,
    i: Checked,
    a: Action | None,
    bugs: frozenset[str],
    timeout_ms: int,
    want_cex: bool,
    invariants: tuple[Invariant, ...],
) -> CheckResult:
    """Proved needs unsat over the uninterpreted sort. Refuting is easier over a finite sort
    (a counterexample with three members is a counterexample for "any number of members"),
    and Z3's model search with quantifiers over an uninterpreted sort can take seconds: so a
    short proof attempt first, then a small counterexample, then the rest of the time budget."""
    name = a.name if a else INIT
    t0 = time.perf_counter()
    r = s.check()  # the solver was made with the quick timeout (setting it per check is costly)
    if r == z3.unsat:
        return CheckResult(i.name, name, PROVED, (time.perf_counter() - t0) * 1000)
    cex = counterexample(i, a, bugs, timeout_ms, invariants) if (want_cex or r == z3.unknown) else None
    if r == z3.unknown and cex is None:
        left = timeout_ms - int((time.perf_counter() - t0) * 1000)
        if left > 0:
            s.set(timeout=left)
            r = s.check()
            s.set(timeout=min(QUICK_MS, timeout_ms))
        if r == z3.unsat:
            return CheckResult(i.name, name, PROVED, (time.perf_counter() - t0) * 1000)
        if r == z3.unknown:
            return CheckResult(i.name, name, UNKNOWN, (time.perf_counter() - t0) * 1000, reason=s.reason_unknown())
    res = CheckResult(i.name, name, NOT_INDUCTIVE, (time.perf_counter() - t0) * 1000)
    if want_cex:
        res.counterexample = cex if cex is not None else counterexample(i, a, bugs, timeout_ms, invariants)
    return res


def _enabled(a: Action, bugs: frozenset[str], timeout_ms: int) -> str:
    sig = signature(CEX_MEMBERS[0])
    pre = fresh_state(sig, "_en")
    guard, _ = a.apply(sig, pre, a.args(sig, "_en"), bugs)
    s = _solver(timeout_ms)
    s.add(inv_mod.conjunction(sig, pre), guard)
    return str(s.check())


def counterexample(
    i: Checked,
    a: Action | None,
    bugs: frozenset[str],
    timeout_ms: int,
    invariants: tuple[Invariant, ...] = INVARIANTS,
) -> Counterexample | None:
    """Re-check over small enumerated Member sorts for a readable model: first with small
    numbers and as few ghost entries as possible (tidy), then without those preferences."""
    for n in CEX_MEMBERS:
        for tidy in (True, False):
            found = _counterexample(i, a, bugs, timeout_ms, n, tidy, invariants)
            if found is not None:
                return found
    return None


_BOX_EPOCHS = range(0, 3)
_BOX_GENERATIONS = range(-1, 6)


def _tidy(sig: Signature, s: State, solver: z3.Solver) -> bool:
    """Small epochs and generations (hard: False if impossible), then greedily as few ghost
    entries and client views as the counterexample allows, for an uncluttered pre-state."""
    e, g = z3.Ints("tidy_e tidy_g")
    x = sig.member_var("tidy_x")
    top = max(_BOX_EPOCHS)
    solver.add(
        s.epoch >= 0,
        s.epoch <= top,
        s.generation >= 0,
        s.generation <= 4,
        s.stored_generation >= 0,
        s.stored_generation <= 4,
    )
    solver.add(z3.ForAll([e, g, x], z3.Implies(s.named[e, g, x], z3.And(e >= 0, e <= top, g >= 0, g <= 4))))
    for v in sig.member_values:
        solver.add(
            s.known_generation[v] >= -1, s.known_generation[v] <= 4, s.known_epoch[v] >= -1, s.known_epoch[v] <= s.epoch
        )
    if solver.check() != z3.sat:
        return False
    prefs: list[z3.BoolRef] = [s.epoch == 0, z3.Not(s.stored)]
    for v in sig.member_values:
        prefs += [
            z3.Not(z3.Or([s.named[ee, gg, v] for ee in _BOX_EPOCHS for gg in range(0, 5)])),
            z3.And(s.known_generation[v] == -1, s.known_epoch[v] == -1),
            z3.Not(s.believes_leader[v]),
            z3.Not(s.pending[v]),
            z3.Not(s.stored_members[v]),
        ]
    for p in prefs:
        solver.push()
        solver.add(p)
        if solver.check() != z3.sat:
            solver.pop()
    return True


def _counterexample(
    i: Checked,
    a: Action | None,
    bugs: frozenset[str],
    timeout_ms: int,
    n: int,
    tidy: bool,
    invariants: tuple[Invariant, ...],
) -> Counterexample | None:
    sig = signature(n)
    pre, post_vars = fresh_state(sig, "_p"), fresh_state(sig, "_i")
    s = _solver(timeout_ms)
    args: dict[str, z3.ExprRef] = {}
    if a is None:
        s.add(init(sig, post_vars))
        post = post_vars
    else:
        args = a.args(sig, "_x")
        guard, post = a.apply(sig, pre, args, bugs)
        s.add(z3.And([j.holds(sig, pre) for j in invariants]), guard)
    if isinstance(i, StepProperty):
        if a is None:
            return None  # an action property says nothing of the initial state
        bad, wit = i.at(pre, a.name, args).violated(sig, post, "_w")
    else:
        bad, wit = i.violated(sig, post, "_w")
    s.add(bad)
    if tidy and a is not None:
        for v in args.values():
            if v.sort() == z3.IntSort():
                s.add(v >= -1, v <= 5)
        if not _tidy(sig, pre, s):
            return None
    if s.check() != z3.sat:
        return None
    return _read(s.model(), sig, i, a, args, pre, post, wit, invariants)


def _read(
    m: z3.ModelRef,
    sig: Signature,
    i: Checked,
    a: Action | None,
    args: dict[str, z3.ExprRef],
    pre: State,
    post: State,
    wit: dict[str, z3.ExprRef],
    invariants: tuple[Invariant, ...],
) -> Counterexample:
    values = list(sig.member_values)
    epochs, gens = _interesting_ints(m, [pre, post] if a else [post], values, wit)
    ints = (sorted(set(epochs) | set(_BOX_EPOCHS)), sorted(set(gens) | set(_BOX_GENERATIONS)))
    broken = [j.name for j in invariants if z3.is_false(m.eval(j.holds(sig, post), model_completion=True))]
    if isinstance(i, StepProperty):
        broken.append(i.name)  # the query asserted the step breaks it
    return Counterexample(
        invariant=i.name,
        action=a.name if a else INIT,
        members=[str(v) for v in values],
        args={k: _value(m, sig, v, values) for k, v in args.items()},
        pre=_state_values(m, sig, pre, values, ints) if a else {},
        post=_state_values(m, sig, post, values, ints),
        broken=broken or [i.name],
        witnesses={k: _value(m, sig, v, values) for k, v in wit.items()},
        sort=f"Member = {{{', '.join(str(v) for v in values)}}}",
    )


# ------------------------------------------------------------------------- model reading


def _value(m: z3.ModelRef, sig: Signature, term: z3.ExprRef, members: list[z3.ExprRef]) -> Any:
    v = m.eval(term, model_completion=True)
    if z3.is_bool(v):
        return z3.is_true(v)
    if z3.is_int_value(v):
        return v.as_long()
    if v.sort() == sig.leader_opt:
        if z3.is_true(m.eval(sig.has_leader(v), model_completion=True)):
            return str(m.eval(sig.leader_id(v), model_completion=True))
        return None
    return str(v)


def _interesting_ints(
    m: z3.ModelRef, states: list[State], members: list[z3.ExprRef], wit: dict[str, z3.ExprRef]
) -> tuple[list[int], list[int]]:
    """The epochs and generations worth showing leaderNamed at: the named history of a
    counterexample to induction may be infinite; only these points matter to the invariants."""

    def ev(t: z3.ExprRef) -> int | None:
        v = m.eval(t, model_completion=True)
        return v.as_long() if z3.is_int_value(v) else None

    epochs: set[int] = set()
    gens: set[int] = set()
    for s in states:
        epochs.add(ev(s.epoch))
        g = ev(s.generation)
        gens.update({g - 1, g, g + 1})
        gens.add(ev(s.stored_generation))
        for x in members:
            epochs.add(ev(s.known_epoch[x]))
            gens.add(ev(s.known_generation[x]))
    for k, t in wit.items():
        if t.sort() == z3.IntSort():
            (epochs if k.startswith("e") else gens).add(ev(t))
    return sorted(e for e in epochs if e is not None), sorted(g for g in gens if g is not None)


def _state_values(
    m: z3.ModelRef, sig: Signature, s: State, members: list[z3.ExprRef], ints: tuple[list[int], list[int]]
) -> dict[str, Any]:
    epochs, gens = ints
    out: dict[str, Any] = {}
    for k, term in s.items():
        name = TLA_NAMES[k]
        if k == "named":
            out[name] = sorted(
                [e, g, str(x)]
                for e in epochs
                for g in gens
                for x in members
                if z3.is_true(m.eval(term[e, g, x], model_completion=True))
            )
        elif k in ("known_generation", "known_epoch"):
            out[name] = {str(x): _value(m, sig, term[x], members) for x in members}
        elif isinstance(term.sort(), z3.ArraySortRef):
            out[name] = sorted(str(x) for x in members if z3.is_true(m.eval(term[x], model_completion=True)))
        else:
            out[name] = _value(m, sig, term, members)
    return out


def _show(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, list):
        if v and isinstance(v[0], list):
            return "{" + ", ".join(f"<<{e}, {g}, {x}>>" for e, g, x in v) + "}"
        return "{" + ", ".join(str(x) for x in v) + "}"
    if isinstance(v, dict):
        return "[" + ", ".join(f"{k} |-> {_show(x)}" for k, x in v.items()) + "]"
    return str(v)


# ---------------------------------------------------------------------------------- output


SHORT = {
    "JoinGroupUnknownMember": "JoinUnknown",
    "JoinGroupPendingMember": "JoinPending",
    "JoinGroupKnownMember": "JoinKnown",
    "CompleteJoin": "CompleteJoin",
    "RebalanceTimeout": "RebalanceTO",
    "SyncGroupLeader": "SyncLeader",
    "SyncGroupFollower": "SyncFollower",
    "Heartbeat": "Heartbeat",
    "LeaveGroup": "Leave",
    "SessionTimeoutExpiry": "SessionTO",
    "PendingMemberExpiry": "PendingTO",
    "DelayedSyncExpiry": "SyncTO",
    "GroupUnload": "Unload",
    "GroupLoad": "Load",
}


def render(report: ProofReport, console: Any | None = None) -> None:
    """A rich table invariant x action (Init first), then the counterexamples."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    cols = report.actions
    table = Table(
        title="kgc prove: Inv /\\ Next_a => I' (ms)" + (f"  bugs: {', '.join(report.bugs)}" if report.bugs else "")
    )
    table.add_column("invariant", no_wrap=True, min_width=max(len(n) for n in report.invariants))
    for c in cols:
        table.add_column(SHORT.get(c, c), justify="right", no_wrap=True, min_width=len(SHORT.get(c, c)))
    cells = {(c.invariant, c.action): c for c in report.checks}
    style = {PROVED: "green", NOT_INDUCTIVE: "bold red", UNKNOWN: "yellow", VACUOUS: "bold red"}
    mark = {PROVED: "✓", NOT_INDUCTIVE: "✗", UNKNOWN: "?", VACUOUS: "∅"}
    for name in report.invariants:
        main = name in STEP_PROPERTIES_BY_NAME or (name in INVARIANTS_BY_NAME and INVARIANTS_BY_NAME[name].main)
        row = [f"[bold]{name}[/bold]" if main else name]
        for c in cols:
            r = cells.get((name, c))
            if r is None:  # an action property has no Init cell
                row.append("–")
                continue
            row.append(f"[{style[r.status]}]{mark[r.status]} {r.ms:.0f}[/{style[r.status]}]")
        table.add_row(*row)
    console.print(table)
    console.print(
        "columns: " + ", ".join(f"{SHORT.get(c, c)} = {c}" for c in cols if SHORT.get(c, c) != c),
        markup=False,
        highlight=False,
    )
    n = len(report.checks)
    counts = {st: sum(1 for c in report.checks if c.status == st) for st in (PROVED, NOT_INDUCTIVE, UNKNOWN, VACUOUS)}
    console.print(
        f"{n} checks: {counts[PROVED]} proved, {counts[NOT_INDUCTIVE]} not inductive, "
        f"{counts[UNKNOWN]} unknown, {counts[VACUOUS]} vacuous; {report.total_ms:.0f} ms"
    )
    for c in report.failures():
        if c.status == UNKNOWN:
            console.print(f"[yellow]unknown[/yellow]: {c.invariant} under {c.action} ({c.reason})")
        elif c.status == VACUOUS:
            console.print(f"[red]vacuous[/red]: {c.action}: {c.reason}")
        elif c.counterexample:
            console.print()
            for line in c.counterexample.lines():
                console.print(line, markup=False, highlight=False)
        else:
            console.print(f"[red]not inductive[/red]: {c.invariant} under {c.action} (no small counterexample found)")
