"""The state signature of the Z3 encoding and the level of abstraction it works at.

The encoding sits at the level of the TLA+ spec (spec/GroupCoordinator.tla): one group, the
coordinator's view of it (GroupMetadata without timers, protocols or assignments), the ghost
history the safety properties talk about, and what each client last learnt from a JoinGroup
response. Timers are not state here: every delayed operation (DelayedHeartbeat, DelayedJoin,
DelayedSync) may expire at any moment, an over-approximation that keeps the proofs independent
of timeouts. Members are dynamic (no group.instance.id) and the group size is unbounded.

Members are an uninterpreted sort for the proofs (so a proof covers any number of members) or
an enumerated sort of a few named members for readable counterexamples and for checking
concrete implementation states (conformance/proofs/abstraction.py).

Coordinator incarnations: Kafka's classic coordinator stores the group only when the leader's
SyncGroup completes a rebalance (and when a rebalance empties the group), so after `unload` /
`load` the group comes back at its last *stored* generation and a generation number can be
handed out a second time, possibly with another leader. `epoch` counts incarnations (it is
bumped by `unload`), and the leader history and the client views carry the epoch in which a
generation was named, so SingleLeaderPerGeneration reads "one leader per generation per
coordinator incarnation" -- the strongest form Kafka 3.x actually keeps.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields

import z3

GROUP_STATES: tuple[str, ...] = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")

# Field name (Python) -> the name printed states use: spec/GroupCoordinator.tla's variable where
# the spec has the same thing (gstate, loaded, pending, store...); knownGeneration, knownEpoch
# and believesLeader are per member id (the spec's cgen / cleader are per client process);
# leaderNamed holds every leader a NONE JoinGroup response named, per (epoch, generation) (the
# spec's genLeaders holds the self-named ones of the current generation); epoch counts
# unloads (the spec's failovers).
TLA_NAMES: dict[str, str] = {
    "group_state": "gstate",
    "generation": "generation",
    "leader": "leader",
    "members": "members",
    "pending": "pending",
    "awaiting_join": "awaitingJoin",
    "awaiting_sync": "awaitingSync",
    "pending_sync": "pendingSync",
    "owned": "loaded",
    "epoch": "epoch",
    "stored": "store.exists",
    "stored_generation": "store.gen",
    "stored_leader": "store.leader",
    "stored_members": "store.members",
    "known_generation": "knownGeneration",
    "known_epoch": "knownEpoch",
    "believes_leader": "believesLeader",
    "named": "leaderNamed",
    "synced_in_state": "syncedInState",
}


_GROUP_STATE_SORT: tuple[z3.SortRef, dict[str, z3.ExprRef]] | None = None


def group_state_sort() -> tuple[z3.SortRef, dict[str, z3.ExprRef]]:
    """One GroupState enum per Z3 context: declaring it twice would make two distinct sorts."""
    global _GROUP_STATE_SORT
    if _GROUP_STATE_SORT is None:
        sort, consts = z3.EnumSort("GroupState", list(GROUP_STATES))
        _GROUP_STATE_SORT = (sort, dict(zip(GROUP_STATES, consts)))
    return _GROUP_STATE_SORT


@dataclass(frozen=True)
class Signature:
    """The sorts one encoding is built over.

    `member_values` is empty for the uninterpreted sort (proofs) and lists the members of an
    enumerated sort (counterexamples, concrete checks).
    """

    name: str
    member: z3.SortRef
    member_values: tuple[z3.ExprRef, ...]
    gstate: z3.SortRef
    states: dict[str, z3.ExprRef]
    leader_opt: z3.DatatypeSortRef

    @property
    def finite(self) -> bool:
        return bool(self.member_values)

    def st(self, name: str) -> z3.ExprRef:
        return self.states[name]

    def no_leader(self) -> z3.ExprRef:
        return self.leader_opt.none

    def some_leader(self, m: z3.ExprRef) -> z3.ExprRef:
        return self.leader_opt.some(m)

    def is_leader(self, opt: z3.ExprRef, m: z3.ExprRef) -> z3.BoolRef:
        return opt == self.leader_opt.some(m)

    def has_leader(self, opt: z3.ExprRef) -> z3.BoolRef:
        return self.leader_opt.is_some(opt)

    def leader_id(self, opt: z3.ExprRef) -> z3.ExprRef:
        return self.leader_opt.val(opt)

    def member_var(self, name: str) -> z3.ExprRef:
        return z3.Const(name, self.member)

    def forall_members(self, name: str, body) -> z3.BoolRef:
        """ForAll over members; expanded to a conjunction over an enumerated sort (faster, and
        keeps concrete checks quantifier-free where the Int parts allow)."""
        if self.finite:
            return z3.And([body(v) for v in self.member_values])
        x = self.member_var(name)
        return z3.ForAll([x], body(x))

    def exists_member(self, name: str, body) -> z3.BoolRef:
        if self.finite:
            return z3.Or([body(v) for v in self.member_values])
        x = self.member_var(name)
        return z3.Exists([x], body(x))


_SIGNATURES: dict[int, Signature] = {}


def signature(members: int | None = None) -> Signature:
    """The uninterpreted signature (members=None) or an enumerated one with `members` members
    named m1..mN. Cached: Z3 sorts must be declared once per context."""
    key = 0 if members is None else members
    if key in _SIGNATURES:
        return _SIGNATURES[key]
    gstate, states = group_state_sort()
    if members is None:
        name = "Member"
        member = z3.DeclareSort(name)
        values: tuple[z3.ExprRef, ...] = ()
    else:
        if members < 1:
            raise ValueError("an enumerated Member sort needs at least one member")
        name = f"Member{members}"
        member, consts = z3.EnumSort(name, [f"m{i}" for i in range(1, members + 1)])
        values = tuple(consts)
    opt = z3.Datatype(f"LeaderOpt_{name}")
    opt.declare("none")
    opt.declare("some", ("val", member))
    leader_opt = opt.create()
    sig = Signature(name, member, values, gstate, states, leader_opt)
    _SIGNATURES[key] = sig
    return sig


@dataclass(frozen=True)
class State:
    """One state of the encoding: every field is a Z3 term.

    Coordinator side (GroupMetadata): group_state, generation, leader (LeaderOpt), members,
    pending (pendingMembers: told MEMBER_ID_REQUIRED, not yet rejoined), awaiting_join (a
    parked JoinGroup), awaiting_sync (a parked SyncGroup), pending_sync (pendingSyncMembers:
    no SyncGroup yet in this generation), owned (the coordinator serves the group's offsets
    partition). Store: the last snapshot written by storeGroup. Ghosts: epoch, named (the
    leaders named in JoinGroup responses, (epoch, generation, member) -> Bool), synced_in_state
    (a SyncGroup was answered NONE since the group entered its current state). Clients: the
    generation, epoch and leadership each member id last learnt from a JoinGroup response.
    """

    group_state: z3.ExprRef
    generation: z3.ArithRef
    leader: z3.ExprRef
    members: z3.ArrayRef
    pending: z3.ArrayRef
    awaiting_join: z3.ArrayRef
    awaiting_sync: z3.ArrayRef
    pending_sync: z3.ArrayRef
    owned: z3.BoolRef
    epoch: z3.ArithRef
    stored: z3.BoolRef
    stored_generation: z3.ArithRef
    stored_leader: z3.ExprRef
    stored_members: z3.ArrayRef
    known_generation: z3.ArrayRef
    known_epoch: z3.ArrayRef
    believes_leader: z3.ArrayRef
    named: z3.ArrayRef
    synced_in_state: z3.BoolRef
    # Not a state variable: the leader the step into this state named, as (flag, epoch,
    # generation, member) terms (None: none). An action names at most one leader, so a step
    # can be checked against concrete histories without comparing Int-indexed arrays (whose
    # extensionality makes Z3 reason with quantifiers); see abstraction.accepts.
    named_delta: tuple[z3.BoolRef, z3.ArithRef, z3.ArithRef, z3.ExprRef] | None = field(default=None, compare=False)

    def items(self) -> Iterator[tuple[str, z3.ExprRef]]:
        for name in STATE_FIELDS:
            yield name, getattr(self, name)


STATE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(State) if f.name != "named_delta")


def field_names() -> list[str]:
    return list(STATE_FIELDS)


def fresh_state(sig: Signature, suffix: str) -> State:
    """Unconstrained constants for every state variable, named `<tlaName><suffix>`."""
    m, b, i = sig.member, z3.BoolSort(), z3.IntSort()
    sorts: dict[str, z3.SortRef] = {
        "group_state": sig.gstate,
        "generation": i,
        "leader": sig.leader_opt,
        "members": z3.ArraySort(m, b),
        "pending": z3.ArraySort(m, b),
        "awaiting_join": z3.ArraySort(m, b),
        "awaiting_sync": z3.ArraySort(m, b),
        "pending_sync": z3.ArraySort(m, b),
        "owned": b,
        "epoch": i,
        "stored": b,
        "stored_generation": i,
        "stored_leader": sig.leader_opt,
        "stored_members": z3.ArraySort(m, b),
        "known_generation": z3.ArraySort(m, i),
        "known_epoch": z3.ArraySort(m, i),
        "believes_leader": z3.ArraySort(m, b),
        "named": z3.ArraySort(i, i, m, b),
        "synced_in_state": b,
    }
    return State(**{k: z3.Const(f"{TLA_NAMES[k]}{suffix}", s) for k, s in sorts.items()})


def empty_set(sig: Signature) -> z3.ArrayRef:
    return z3.K(sig.member, z3.BoolVal(False))


def init(sig: Signature, s: State) -> z3.BoolRef:
    """Init: the coordinator owns the group's partition and has never seen the group (Dead,
    as the scenario contract reports an unknown group); no client has joined anything."""
    nothing = empty_set(sig)
    e, g = z3.Ints("init_e init_g")
    x = sig.member_var("init_x")
    return z3.And(
        s.group_state == sig.st("Dead"),
        s.generation == 0,
        s.leader == sig.no_leader(),
        s.members == nothing,
        s.pending == nothing,
        s.awaiting_join == nothing,
        s.awaiting_sync == nothing,
        s.pending_sync == nothing,
        s.owned,
        s.epoch == 0,
        z3.Not(s.stored),
        s.stored_generation == 0,
        s.stored_leader == sig.no_leader(),
        s.stored_members == nothing,
        s.known_generation == z3.K(sig.member, z3.IntVal(-1)),
        s.known_epoch == z3.K(sig.member, z3.IntVal(-1)),
        s.believes_leader == nothing,
        s.named == z3.Lambda([e, g, x], z3.BoolVal(False)),
        z3.Not(s.synced_in_state),
    )


def equal_states(a: State, b: State, sig: Signature | None = None, skip: tuple[str, ...] = ()) -> z3.BoolRef:
    """Field-wise equality (but the fields in `skip`). Over an enumerated sort, member-indexed
    arrays are compared member by member: extensional array equality makes multi-step queries
    much slower."""
    parts = []
    for (k, va), (_, vb) in zip(a.items(), b.items()):
        if k in skip:
            continue
        srt = va.sort()
        if sig is not None and sig.finite and isinstance(srt, z3.ArraySortRef) and srt.domain() == sig.member:
            parts += [va[v] == vb[v] for v in sig.member_values]
        else:
            parts.append(va == vb)
    return z3.And(parts)
