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

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional

import z3

from kgc.conformance.proofs.model import GROUP_STATES, Signature, State, fresh_state, signature
from kgc.conformance.proofs.transitions import ACTIONS, Action, check_bugs


@dataclass(frozen=True)
class AbstractState:
    """Values of the encoding's state variables (model.State) over concrete member ids."""

    group_state: str
    generation: int
    leader: Optional[str]
    members: frozenset[str]
    pending: frozenset[str]
    awaiting_join: frozenset[str]
    awaiting_sync: frozenset[str]
    pending_sync: frozenset[str]
    owned: bool
    epoch: int
    stored: bool
    stored_generation: int
    stored_leader: Optional[str]
    stored_members: frozenset[str]
    known_generation: Mapping[str, int]
    known_epoch: Mapping[str, int]
    believes_leader: frozenset[str]
    named: frozenset[tuple[int, int, str]]
    synced_in_state: bool

    def member_ids(self) -> set[str]:
        ids = set(self.members | self.pending | self.awaiting_join | self.awaiting_sync | self.pending_sync
                  | self.stored_members | self.believes_leader)
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

    def on_timer(self, kind: str, group_id: str, member_id: Optional[str]) -> None:
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


def constrain(sig: Signature, s: State, a: AbstractState, ids: Mapping[str, z3.ExprRef]) -> z3.BoolRef:
    """`s` takes the values `a` (member ids mapped to the enumerated sort by `ids`)."""
    if a.group_state not in GROUP_STATES:
        raise ValueError(f"unknown group state {a.group_state!r}")

    def opt(x: Optional[str]) -> z3.ExprRef:
        return sig.no_leader() if x is None else sig.some_leader(ids[x])

    def as_set(arr: z3.ArrayRef, values: Iterable[str]) -> list[z3.BoolRef]:
        vs = set(values)
        return [arr[ref] == z3.BoolVal(mid in vs) for mid, ref in ids.items()]

    e, g = z3.Ints("abs_e abs_g")
    x = sig.member_var("abs_x")
    named = z3.Lambda([e, g, x], z3.Or([z3.And(e == ee, g == gg, x == ids[mm]) for ee, gg, mm in sorted(a.named)]
                                       + [z3.BoolVal(False)]))
    parts = [
        s.group_state == sig.st(a.group_state),
        s.generation == a.generation,
        s.leader == opt(a.leader),
        s.owned == z3.BoolVal(a.owned),
        s.epoch == a.epoch,
        s.stored == z3.BoolVal(a.stored),
        s.stored_generation == a.stored_generation,
        s.stored_leader == opt(a.stored_leader),
        s.synced_in_state == z3.BoolVal(a.synced_in_state),
        s.named == named,
    ]
    for arr, vals in ((s.members, a.members), (s.pending, a.pending), (s.awaiting_join, a.awaiting_join),
                      (s.awaiting_sync, a.awaiting_sync), (s.pending_sync, a.pending_sync),
                      (s.stored_members, a.stored_members), (s.believes_leader, a.believes_leader)):
        parts += as_set(arr, vals)
    for mid, ref in ids.items():
        parts.append(s.known_generation[ref] == a.known_generation.get(mid, -1))
        parts.append(s.known_epoch[ref] == a.known_epoch.get(mid, -1))
    return z3.And(parts)


@dataclass(frozen=True)
class StepVerdict:
    accepted: bool
    actions: tuple[str, ...]   # the chain found (empty: stuttering); () also when not accepted
    ms: float


def _action_step(sig: Signature, a: Action, pre: State, post: State, suffix: str, bugs: frozenset[str]) -> z3.BoolRef:
    from kgc.conformance.proofs.model import equal_states

    guard, after = a.apply(sig, pre, a.args(sig, suffix), bugs)
    return z3.And(guard, equal_states(after, post, sig))


_PATHS: dict[tuple, tuple[list[z3.BoolRef], list[State], list[list[z3.BoolRef]]]] = {}


def _path(sig: Signature, k: int, bugs: frozenset[str], actions: tuple[Action, ...]
          ) -> tuple[list[z3.BoolRef], list[State], list[list[z3.BoolRef]]]:
    """The formula "k encoded actions lead from states[0] to states[k]", built once per
    universe size: building terms in Python costs far more than solving. (A fresh solver per
    query: an incremental solver skips the preprocessing these queries need.)"""
    key = (len(sig.member_values), k, bugs, tuple(a.name for a in actions))
    if key not in _PATHS:
        states = [fresh_state(sig, f"_t{i}") for i in range(k + 1)]
        parts: list[z3.BoolRef] = []
        choice_vars = []
        for i in range(k):
            picks = [z3.Bool(f"took_{i}_{a.name}") for a in actions]
            choice_vars.append(picks)
            parts.append(z3.Or(picks))
            for p, a in zip(picks, actions):
                parts.append(z3.Implies(p, _action_step(sig, a, states[i], states[i + 1], f"_s{i}", bugs)))
        _PATHS[key] = (parts, states, choice_vars)
    return _PATHS[key]


def accepts(before: AbstractState, after: AbstractState, bugs: Iterable[str] = (), max_steps: int = 3,
            timeout_ms: int = 10000, actions: tuple[Action, ...] = ACTIONS) -> StepVerdict:
    """Is (before, after) stuttering, one encoded action, or a chain of up to `max_steps`?
    The chain found is returned by name (first the shortest)."""
    import time

    bugset = check_bugs(tuple(bugs))
    t0 = time.perf_counter()
    if before == after:
        return StepVerdict(True, (), (time.perf_counter() - t0) * 1000)
    sig, ids = _universe(before, after)
    for k in range(1, max_steps + 1):
        path, states, choice_vars = _path(sig, k, bugset, actions)
        solver = z3.Solver()
        solver.set(timeout=timeout_ms)
        solver.add(*path)
        solver.add(constrain(sig, states[0], before, ids), constrain(sig, states[k], after, ids))
        r = solver.check()
        if r == z3.sat:
            m = solver.model()
            chain = tuple(next(a.name for p, a in zip(picks, actions) if z3.is_true(m.eval(p, model_completion=True)))
                          for picks in choice_vars)
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
    s = fresh_state(sig, "_chk")
    solver = z3.Solver()
    solver.set(timeout=timeout_ms)
    solver.add(constrain(sig, s, state, ids))
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
