"""From the implementation to the Z3 encoding: the abstraction function and the step check.

`abstract` maps the coordinator's GroupMetadata, its store and the client-side views a caller
tracks (ClientViews: what each member id last learnt from a JoinGroup response, which leaders
responses named, the coordinator incarnation, whether a SyncGroup was answered NONE since the
group's last state change) to the values of the encoding's state variables over the member ids
that occur. `accepts` asks Z3 whether a (before, after) pair of such values is a step of the
encoded protocol: one action, a short chain of actions (a Kafka handler that ends in
checkAndComplete is the handler then CompleteJoin here), or stuttering. A test that feeds it
real handler runs keeps the encoding from drifting away from kgc.impl.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import z3

from kgc.conformance.proofs.model import GROUP_STATES, Signature, State, fresh_state, signature
from kgc.conformance.proofs.transitions import ACTIONS, Action, check_bugs


@dataclass(frozen=True)
class AbstractState:
    """Values of the encoding's state variables (model.State) over concrete member ids."""

    group_state: str
    generation: int
    leader: str | None
    members: frozenset[str]
    pending: frozenset[str]
    awaiting_join: frozenset[str]
    awaiting_sync: frozenset[str]
    pending_sync: frozenset[str]
    owned: bool
    epoch: int
    stored: bool
    stored_generation: int
    stored_leader: str | None
    stored_members: frozenset[str]
    known_generation: Mapping[str, int]
    known_epoch: Mapping[str, int]
    believes_leader: frozenset[str]
    named: frozenset[tuple[int, int, str]]
    synced_in_state: bool

    def member_ids(self) -> set[str]:
        ids = set(
            self.members
            | self.pending
            | self.awaiting_join
            | self.awaiting_sync
            | self.pending_sync
            | self.stored_members
            | self.believes_leader
        )
        ids |= set(self.known_generation) | set(self.known_epoch) | {m for _, _, m in self.named}
        ids |= {x for x in (self.leader, self.stored_leader) if x is not None}
        return ids

    def diff(self, other: AbstractState) -> dict[str, tuple[Any, Any]]:
        out = {}
        for k in self.__dataclass_fields__:
            a, b = getattr(self, k), getattr(other, k)
            if a != b:
                out[k] = (a, b)
        return out


@dataclass
class ClientViews:
    """What the clients (and a ghost observer) know about one group, learnt from the
    coordinator's observer stream: pass an instance as the GroupCoordinator's `observer`.

    JoinGroup responses answered NONE name a leader for their generation and teach the member
    its generation and leadership; SyncGroup responses answered NONE and state transitions give
    syncedInState; `unload` / `load` requests end and start coordinator incarnations. Call
    `begin_step` / `end_step` around each request or timer firing.
    """

    group_id: str
    owned: bool = True
    epoch: int = 0
    known_generation: dict[str, int] = field(default_factory=dict)
    known_epoch: dict[str, int] = field(default_factory=dict)
    believes_leader: set[str] = field(default_factory=set)
    named: set[tuple[int, int, str]] = field(default_factory=set)
    synced_in_state: bool = False
    _sync_ok_in_step: bool = False
    _transitions_in_step: int = 0

    # -- CoordinatorObserver ---------------------------------------------------------------
    def on_request(self, kind: str, group_id: str, args: dict) -> None:
        if group_id != self.group_id:
            return
        if kind == "unload" and self.owned:
            self.owned = False
            self.epoch += 1
        elif kind == "load":
            self.owned = True

    def on_response(self, kind: str, group_id: str, result: object) -> None:
        if group_id != self.group_id:
            return
        if kind == "join":
            self.join_response(result)
        elif kind == "sync" and _error_name(result) == "NONE":
            self._sync_ok_in_step = True

    def on_timer(self, kind: str, group_id: str, member_id: str | None) -> None:
        pass

    def on_transition(self, group_id: str, old: Any, new: Any) -> None:
        if group_id == self.group_id:
            self._transitions_in_step += 1

    # -- views -------------------------------------------------------------------------------
    def join_response(self, result: Any) -> None:
        if _error_name(result) != "NONE":
            return
        member, gen, leader = result.member_id, result.generation_id, result.leader_id
        if leader:
            self.named.add((self.epoch, gen, leader))
        self.known_generation[member] = gen
        self.known_epoch[member] = self.epoch
        if leader == member:
            self.believes_leader.add(member)
        else:
            self.believes_leader.discard(member)

    def begin_step(self) -> None:
        self._sync_ok_in_step = False
        self._transitions_in_step = 0

    def end_step(self) -> None:
        """syncedInState: a SyncGroup answered NONE since the group entered its state."""
        self.synced_in_state = self._sync_ok_in_step or (self.synced_in_state and self._transitions_in_step == 0)


def _error_name(result: Any) -> str:
    err = getattr(result, "error", result)
    return getattr(err, "name", str(err))


def abstract(group: Any, stored: Any, views: ClientViews) -> AbstractState:
    """impl GroupMetadata (or None), the store's last record of the group (StoredGroup or None)
    and the client views -> the encoding's state. A group the coordinator does not hold (never
    created, unloaded, or Dead) is Dead with nothing in it, as the encoding has it."""
    dead = group is None or not views.owned or getattr(group.state, "value", str(group.state)) == "Dead"
    none: frozenset[str] = frozenset()
    if dead:
        gs, gen, leader = "Dead", 0, None
        members = pending = awaiting_join = awaiting_sync = pending_sync = none
    else:
        gs = getattr(group.state, "value", str(group.state))
        gen = group.generation_id
        leader = group.leader_id
        members = frozenset(group.members)
        pending = frozenset(group.pending_members)
        awaiting_join = frozenset(m for m, md in group.members.items() if md.is_awaiting_join)
        awaiting_sync = frozenset(m for m, md in group.members.items() if md.is_awaiting_sync)
        pending_sync = frozenset(getattr(group, "pending_sync_members", ()))
    return AbstractState(
        group_state=gs,
        generation=gen,
        leader=leader,
        members=members,
        pending=pending,
        awaiting_join=awaiting_join,
        awaiting_sync=awaiting_sync,
        pending_sync=pending_sync,
        owned=views.owned,
        epoch=views.epoch,
        stored=stored is not None,
        stored_generation=stored.generation_id if stored is not None else 0,
        stored_leader=stored.leader_id if stored is not None else None,
        stored_members=frozenset(m.member_id for m in stored.members) if stored is not None else none,
        known_generation=dict(views.known_generation),
        known_epoch=dict(views.known_epoch),
        believes_leader=frozenset(views.believes_leader),
        named=frozenset(views.named),
        synced_in_state=views.synced_in_state,
    )


# ------------------------------------------------------------------------------ Z3 side


def concrete_state(sig: Signature, a: AbstractState, ids: Mapping[str, z3.ExprRef]) -> State:
    """`a` as a State of literal terms (member ids mapped to the enumerated sort by `ids`)."""
    if a.group_state not in GROUP_STATES:
        raise ValueError(f"unknown group state {a.group_state!r}")

    def opt(x: str | None) -> z3.ExprRef:
        return sig.no_leader() if x is None else sig.some_leader(ids[x])

    def as_set(values: Iterable[str]) -> z3.ArrayRef:
        arr = z3.K(sig.member, z3.BoolVal(False))
        for mid in sorted(set(values)):
            arr = z3.Store(arr, ids[mid], True)
        return arr

    def as_map(values: Mapping[str, int]) -> z3.ArrayRef:
        arr = z3.K(sig.member, z3.IntVal(-1))
        for mid, v in sorted(values.items()):
            arr = z3.Store(arr, ids[mid], z3.IntVal(v))
        return arr

    e, g = z3.Ints("abs_e abs_g")
    x = sig.member_var("abs_x")
    named = z3.Lambda(
        [e, g, x],
        z3.Or([z3.And(e == ee, g == gg, x == ids[mm]) for ee, gg, mm in sorted(a.named)] + [z3.BoolVal(False)]),
    )
    return State(
        group_state=sig.st(a.group_state),
        generation=z3.IntVal(a.generation),
        leader=opt(a.leader),
        members=as_set(a.members),
        pending=as_set(a.pending),
        awaiting_join=as_set(a.awaiting_join),
        awaiting_sync=as_set(a.awaiting_sync),
        pending_sync=as_set(a.pending_sync),
        owned=z3.BoolVal(a.owned),
        epoch=z3.IntVal(a.epoch),
        stored=z3.BoolVal(a.stored),
        stored_generation=z3.IntVal(a.stored_generation),
        stored_leader=opt(a.stored_leader),
        stored_members=as_set(a.stored_members),
        known_generation=as_map(a.known_generation),
        known_epoch=as_map(a.known_epoch),
        believes_leader=as_set(a.believes_leader),
        named=named,
        synced_in_state=z3.BoolVal(a.synced_in_state),
    )


def constrain(
    sig: Signature, s: State, a: AbstractState, ids: Mapping[str, z3.ExprRef], skip: tuple[str, ...] = ()
) -> z3.BoolRef:
    """`s` takes the values `a` (but the fields in `skip`)."""
    from kgc.conformance.proofs.model import equal_states

    return equal_states(s, concrete_state(sig, a, ids), sig, skip=skip)


@dataclass(frozen=True)
class StepVerdict:
    accepted: bool
    actions: tuple[str, ...]  # the chain found (empty: stuttering); () also when not accepted
    ms: float


_SKIP_NAMED = ("named",)
Delta = tuple[z3.BoolRef, z3.ArithRef, z3.ArithRef, z3.ExprRef]


def _action_step(
    sig: Signature, a: Action, pre: State, post: State, suffix: str, bugs: frozenset[str], delta: Delta
) -> z3.BoolRef:
    """The action leads from `pre` to `post` (the leader history aside) and names the leader
    `delta` says (flag false: it names none)."""
    from kgc.conformance.proofs.model import equal_states

    guard, after = a.apply(sig, pre, a.args(sig, suffix), bugs)
    flag, e, g, m = delta
    if after.named_delta is None:
        named = z3.Not(flag)
    else:
        af, ae, ag, am = after.named_delta
        named = z3.And(flag == af, z3.Implies(af, z3.And(e == ae, g == ag, m == am)))
    return z3.And(guard, equal_states(after, post, sig, skip=_SKIP_NAMED), named)


_PATHS: dict[tuple, tuple[list[z3.BoolRef], list[State], list[list[z3.BoolRef]], list[Delta]]] = {}


def _path(
    sig: Signature, k: int, bugs: frozenset[str], actions: tuple[Action, ...]
) -> tuple[list[z3.BoolRef], list[State], list[list[z3.BoolRef]], list[Delta]]:
    """The formula "k encoded actions lead from states[0] to states[k], naming the leaders
    deltas[i]", built once per universe size: building terms in Python costs far more than
    solving. (A fresh solver per query: an incremental one skips preprocessing these need.)"""
    key = (len(sig.member_values), k, bugs, tuple(a.name for a in actions))
    if key not in _PATHS:
        states = [fresh_state(sig, f"_t{i}") for i in range(k + 1)]
        parts: list[z3.BoolRef] = []
        choice_vars, deltas = [], []
        for i in range(k):
            picks = [z3.Bool(f"took_{i}_{a.name}") for a in actions]
            delta = (
                z3.Bool(f"names_{i}"),
                z3.Int(f"names_epoch_{i}"),
                z3.Int(f"names_gen_{i}"),
                sig.member_var(f"names_member_{i}"),
            )
            choice_vars.append(picks)
            deltas.append(delta)
            parts.append(z3.Or(picks))
            for p, a in zip(picks, actions):
                parts.append(z3.Implies(p, _action_step(sig, a, states[i], states[i + 1], f"_s{i}", bugs, delta)))
        _PATHS[key] = (parts, states, choice_vars, deltas)
    return _PATHS[key]


def _history(
    deltas: list[Delta], before: AbstractState, after: AbstractState, ids: Mapping[str, z3.ExprRef]
) -> z3.BoolRef:
    """The leaders the chain names are exactly the entries `after` adds to `before`'s history."""

    def at(d: Delta, t: tuple[int, int, str]) -> z3.BoolRef:
        return z3.And(d[1] == t[0], d[2] == t[1], d[3] == ids[t[2]])

    parts = [z3.Implies(d[0], z3.Or([at(d, t) for t in sorted(after.named)] + [z3.BoolVal(False)])) for d in deltas]
    parts += [z3.Or([z3.And(d[0], at(d, t)) for d in deltas]) for t in sorted(after.named - before.named)]
    return z3.And(parts)


#: The encoding's client-side and history fields (what clients learnt, the leader history, the
#: SyncGroup ghost): GroupCoordinator.tla keeps these otherwise (per client, and forgotten on a
#: crash), so a spec state fixes only the other fields (from_spec_state).
CLIENT_FIELDS = ("known_generation", "known_epoch", "believes_leader", "named", "synced_in_state")


def _fixed_equal(a: AbstractState, b: AbstractState, free: tuple[str, ...]) -> bool:
    return all(getattr(a, k) == getattr(b, k) for k in a.__dataclass_fields__ if k not in free)


def accepts(
    before: AbstractState,
    after: AbstractState,
    bugs: Iterable[str] = (),
    max_steps: int = 3,
    timeout_ms: int = 10000,
    actions: tuple[Action, ...] = ACTIONS,
    free: tuple[str, ...] = (),
) -> StepVerdict:
    """Is (before, after) stuttering, one encoded action, or a chain of up to `max_steps`?
    The chain found is returned by name (first the shortest). The encoding's leader history
    only grows, one entry per action at most: it is compared entry by entry, so the queries
    are quantifier-free. Fields named in `free` are not constrained in either state (Z3 may
    pick any values for them)."""
    import time

    bugset = check_bugs(tuple(bugs))
    t0 = time.perf_counter()
    if _fixed_equal(before, after, free):
        return StepVerdict(True, (), (time.perf_counter() - t0) * 1000)
    if "named" not in free and not before.named <= after.named:
        return StepVerdict(False, (), (time.perf_counter() - t0) * 1000)
    sig, ids = _universe(before, after)
    for k in range(1, max_steps + 1):
        path, states, choice_vars, deltas = _path(sig, k, bugset, actions)
        solver = z3.Solver()
        solver.set(timeout=timeout_ms)
        solver.add(*path)
        solver.add(
            constrain(sig, states[0], before, ids, skip=_SKIP_NAMED + free),
            constrain(sig, states[k], after, ids, skip=_SKIP_NAMED + free),
        )
        if "named" not in free:
            solver.add(_history(deltas, before, after, ids))
        r = solver.check()
        if r == z3.sat:
            m = solver.model()
            chain = tuple(
                next(a.name for p, a in zip(picks, actions) if z3.is_true(m.eval(p, model_completion=True)))
                for picks in choice_vars
            )
            return StepVerdict(True, chain, (time.perf_counter() - t0) * 1000)
        if r == z3.unknown:
            raise RuntimeError(f"Z3 could not decide a {k}-step chain: {solver.reason_unknown()}")
    return StepVerdict(False, (), (time.perf_counter() - t0) * 1000)


def _universe(*states: AbstractState) -> tuple[Signature, dict[str, z3.ExprRef]]:
    names = sorted(set().union(*(s.member_ids() for s in states))) or ["_nobody"]
    sig = signature(len(names))
    return sig, dict(zip(names, sig.member_values))


def violated_invariants(state: AbstractState, timeout_ms: int = 10000) -> list[str]:
    """Names of the invariants (invariants.INVARIANTS) that `state` breaks."""
    from kgc.conformance.proofs.invariants import INVARIANTS

    sig, ids = _universe(state)
    s = concrete_state(sig, state, ids)
    solver = z3.Solver()
    solver.set(timeout=timeout_ms)
    out = []
    for inv in INVARIANTS:
        solver.push()
        solver.add(z3.Not(inv.holds(sig, s)))
        r = solver.check()
        if r == z3.unknown:
            raise RuntimeError(f"Z3 could not evaluate {inv.name}: {solver.reason_unknown()}")
        if r == z3.sat:
            out.append(inv.name)
        solver.pop()
    return out


def violated_step_properties(
    before: AbstractState,
    after: AbstractState,
    action: str,
    args: Mapping[str, Any],
    timeout_ms: int = 10000,
) -> list[str]:
    """Names of the action properties (step_properties.STEP_PROPERTIES) the step `before` ->
    `after` by `action` breaks. `args` are the action's arguments as plain values (member ids,
    ints, bools; as counterexamples print them). An argument left out is free (the step breaks
    the property if it does for some value of it): leave out only those the properties do not
    read. An action the encoding does not have triggers nothing."""
    from kgc.conformance.proofs.step_properties import STEP_PROPERTIES
    from kgc.conformance.proofs.transitions import ACTIONS_BY_NAME

    known = ACTIONS_BY_NAME.get(action)
    kinds = dict(known.params) if known is not None else {}
    named = {str(v) for k, v in args.items() if kinds.get(k) == "member"}
    sig, ids = _universe(before, after, _only_ids(named))
    pre, post = concrete_state(sig, before, ids), concrete_state(sig, after, ids)
    terms: dict[str, z3.ExprRef] = known.args(sig, "_free") if known is not None else {}
    for k, v in args.items():
        kind = kinds.get(k)
        if kind == "member":
            terms[k] = ids[str(v)]
        elif kind == "int":
            terms[k] = z3.IntVal(int(v))
        elif kind == "bool":
            terms[k] = z3.BoolVal(bool(v))
    out = []
    for prop in STEP_PROPERTIES:
        solver = z3.Solver()
        solver.set(timeout=timeout_ms)
        solver.add(z3.Not(prop.at(pre, action, terms).holds(sig, post)))
        r = solver.check()
        if r == z3.unknown:
            raise RuntimeError(f"Z3 could not evaluate {prop.name}: {solver.reason_unknown()}")
        if r == z3.sat:
            out.append(prop.name)
    return out


def _only_ids(names: Iterable[str]) -> AbstractState:
    """A Dead state holding only the member ids `names` (to put them in a universe)."""
    none: frozenset[str] = frozenset()
    return AbstractState(
        "Dead",
        0,
        None,
        frozenset(names),
        none,
        none,
        none,
        none,
        False,
        0,
        False,
        0,
        None,
        none,
        {},
        {},
        none,
        frozenset(),
        False,
    )


def from_spec_state(state: Mapping[str, Any], leaders: bool = False) -> AbstractState:
    """A GroupCoordinator.tla state (variable -> value, as TLC prints it) in the encoding's
    terms, for its group-side fields: member ids become their numbers as strings, an unloaded
    group is Dead with nothing in it, the epoch counts unloads. The CLIENT_FIELDS are left
    empty (check steps with accepts(..., free=CLIENT_FIELDS)), but with `leaders` the leader
    history holds the current generation's (the spec's genLeaders), so that a state's
    SingleLeaderPerGeneration can be evaluated in Z3."""

    def mid(m: Any) -> str | None:
        return None if m == 0 else str(m)

    def ids(values: Iterable[Any]) -> frozenset[str]:
        return frozenset(str(m) for m in values)

    loaded = bool(state["loaded"])
    dead = not loaded or state["gstate"] == "Dead"
    store = state["store"]
    none: frozenset[str] = frozenset()
    return AbstractState(
        group_state="Dead" if dead else str(state["gstate"]),
        generation=0 if dead else int(state["generation"]),
        leader=None if dead else mid(state["leader"]),
        members=none if dead else ids(state["members"]),
        pending=none if dead else ids(state["pending"]),
        awaiting_join=none if dead else ids(state["awaitingJoin"]),
        awaiting_sync=none if dead else ids(state["awaitingSync"]),
        pending_sync=none if dead else ids(state["pendingSync"]),
        owned=loaded,
        epoch=int(state["failovers"]),
        stored=bool(store["exists"]),
        stored_generation=int(store["gen"]) if store["exists"] else 0,
        stored_leader=mid(store["leader"]) if store["exists"] else None,
        stored_members=ids(store["members"]) if store["exists"] else none,
        known_generation={},
        known_epoch={},
        believes_leader=none,
        named=frozenset((int(state["failovers"]), int(state["generation"]), str(m)) for m in state["genLeaders"])
        if leaders and not dead
        else frozenset(),
        synced_in_state=False,
    )


def from_tla_values(values: Mapping[str, Any]) -> AbstractState:
    """An AbstractState from a printed state (TLA+ variable names -> values), as counterexamples
    carry them."""
    from kgc.conformance.proofs.model import TLA_NAMES

    v = {py: values[tla] for py, tla in TLA_NAMES.items()}
    sets = ("members", "pending", "awaiting_join", "awaiting_sync", "pending_sync", "stored_members", "believes_leader")
    for k in sets:
        v[k] = frozenset(v[k])
    v["named"] = frozenset((int(e), int(g), str(m)) for e, g, m in v["named"])
    v["known_generation"] = {k: x for k, x in v["known_generation"].items() if x != -1 or v["known_epoch"][k] != -1}
    v["known_epoch"] = {k: x for k, x in v["known_epoch"].items() if k in v["known_generation"]}
    return AbstractState(**v)
