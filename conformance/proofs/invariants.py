"""The safety properties and the strengthening invariants that make them inductive.

The spec's properties stated here (main=True, named as in spec/GroupCoordinator.tla) are
SingleLeaderPerGeneration, NoSyncInPreparingRebalance, LeaderIsMember and EmptyIffNoMembers;
the action properties are in step_properties.py. SingleLeaderPerGeneration is not inductive
alone (a pre-state may, for instance, hold a leader named for a generation the group has not
reached yet); the conjunction of everything in INVARIANTS is, which `kgc prove` checks action
by action. Each invariant is a body over bound
variables so that a failed check can name the witnesses (which generation, which members).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import z3

from kgc.conformance.proofs.model import Signature, State

Vars = dict[str, z3.ExprRef]


@dataclass(frozen=True)
class Invariant:
    """`bound` lists (name, kind) with kind member | int; `main` marks the protocol's safety
    properties (the rest only strengthen them)."""

    name: str
    doc: str
    bound: tuple[tuple[str, str], ...]
    body: Callable[[Signature, State, Vars], z3.BoolRef]
    main: bool = False

    def _vars(self, sig: Signature, suffix: str) -> Vars:
        return {
            n: (sig.member_var(f"{self.name}_{n}{suffix}") if k == "member" else z3.Int(f"{self.name}_{n}{suffix}"))
            for n, k in self.bound
        }

    def holds(self, sig: Signature, s: State) -> z3.BoolRef:
        """The invariant as a formula; over an enumerated sort the member variables are
        expanded, leaving only Int quantifiers."""
        if not self.bound:
            return self.body(sig, s, {})
        ints = [(n, k) for n, k in self.bound if k == "int"]
        mems = [n for n, k in self.bound if k == "member"]
        ivars = {n: z3.Int(f"{self.name}_{n}") for n, _ in ints}
        if sig.finite:
            parts = []
            for combo in itertools.product(sig.member_values, repeat=len(mems)):
                body = self.body(sig, s, {**ivars, **dict(zip(mems, combo))})
                parts.append(z3.ForAll(list(ivars.values()), body) if ivars else body)
            return z3.And(parts)
        mvars = {n: sig.member_var(f"{self.name}_{n}") for n in mems}
        return z3.ForAll(list(ivars.values()) + list(mvars.values()), self.body(sig, s, {**ivars, **mvars}))

    def violated(self, sig: Signature, s: State, suffix: str = "_cex") -> tuple[z3.BoolRef, Vars]:
        """~Inv with the witnesses as named constants (skolemised by hand)."""
        w = self._vars(sig, suffix)
        return z3.Not(self.body(sig, s, w)), w


def _in(sig: Signature, s: State, *names: str) -> z3.BoolRef:
    return z3.Or([s.group_state == sig.st(n) for n in names])


def _single_leader(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    return z3.Implies(z3.And(s.named[v["e"], v["g"], v["m1"]], s.named[v["e"], v["g"], v["m2"]]), v["m1"] == v["m2"])


def _no_sync_in_preparing(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    preparing = s.group_state == sig.st("PreparingRebalance")
    return z3.And(
        z3.Implies(s.synced_in_state, z3.Not(preparing)), z3.Implies(preparing, z3.Not(s.awaiting_sync[v["m"]]))
    )


def _sync_only_when_stable(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    return z3.Implies(s.synced_in_state, s.group_state == sig.st("Stable"))


def _unowned_is_dead(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    return z3.Implies(z3.Not(s.owned), s.group_state == sig.st("Dead"))


def _dead_holds_nothing(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    m = v["m"]
    return z3.Implies(
        s.group_state == sig.st("Dead"),
        z3.And(s.generation == 0, s.leader == sig.no_leader(), z3.Not(s.members[m]), z3.Not(s.pending[m])),
    )


def _empty_iff_no_members(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    """The spec's EmptyIffNoMembers without its timer half: "no rebalance under way" (no live
    DelayedJoin) is, with timers abstracted away, "not PreparingRebalance", so the group is
    Empty with no member and no leader, and CompletingRebalance / Stable with one (its leader)."""
    return z3.And(
        z3.Implies(s.group_state == sig.st("Empty"), z3.And(z3.Not(s.members[v["m"]]), s.leader == sig.no_leader())),
        z3.Implies(
            _in(sig, s, "CompletingRebalance", "Stable"),
            z3.And(sig.has_leader(s.leader), s.members[sig.leader_id(s.leader)]),
        ),
    )


def _leader_is_member(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    """The spec's LeaderIsMember: a leader exactly when there are members, and it is one."""
    m = v["m"]
    return z3.And(
        z3.Implies(sig.is_leader(s.leader, m), s.members[m]), z3.Implies(s.members[m], sig.has_leader(s.leader))
    )


def _pending_not_member(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    return z3.Implies(s.pending[v["m"]], z3.Not(s.members[v["m"]]))


def _awaiting_join_only_preparing(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    m = v["m"]
    return z3.Implies(s.awaiting_join[m], z3.And(s.members[m], s.group_state == sig.st("PreparingRebalance")))


def _awaiting_sync_only_completing(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    m = v["m"]
    return z3.Implies(s.awaiting_sync[m], z3.And(s.members[m], s.group_state == sig.st("CompletingRebalance")))


def _pending_sync_members(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    m = v["m"]
    return z3.Implies(s.pending_sync[m], z3.And(s.members[m], _in(sig, s, "CompletingRebalance", "Stable")))


def _stored_leader_is_stored_member(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    m = v["m"]
    return z3.And(
        z3.Implies(sig.is_leader(s.stored_leader, m), s.stored_members[m]),
        z3.Implies(s.stored_members[m], sig.has_leader(s.stored_leader)),
    )


def _named_epochs_past(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    return z3.Implies(s.named[v["e"], v["g"], v["m"]], v["e"] <= s.epoch)


def _named_generations_not_ahead(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    return z3.Implies(s.named[s.epoch, v["g"], v["m"]], v["g"] <= s.generation)


def _nothing_named_while_dead(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    return z3.Implies(s.group_state == sig.st("Dead"), z3.Not(s.named[s.epoch, v["g"], v["m"]]))


def _named_leader_is_current(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    m = v["m"]
    return z3.Implies(
        z3.And(_in(sig, s, "CompletingRebalance", "Stable"), s.named[s.epoch, s.generation, m]),
        sig.is_leader(s.leader, m),
    )


def _belief_was_named(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    m = v["m"]
    return z3.Implies(s.believes_leader[m], s.named[s.known_epoch[m], s.known_generation[m], m])


def _known_generation_not_ahead(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    m = v["m"]
    return z3.Implies(s.known_epoch[m] == s.epoch, s.known_generation[m] <= s.generation)


def _known_epoch_not_ahead(sig: Signature, s: State, v: Vars) -> z3.BoolRef:
    m = v["m"]
    return z3.And(s.known_epoch[m] <= s.epoch, z3.Implies(s.group_state == sig.st("Dead"), s.known_epoch[m] < s.epoch))


_M = (("m", "member"),)

INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        "SingleLeaderPerGeneration",
        "JoinGroup responses name at most one leader per generation (per coordinator incarnation)",
        (("e", "int"), ("g", "int"), ("m1", "member"), ("m2", "member")),
        _single_leader,
        main=True,
    ),
    Invariant(
        "NoSyncInPreparingRebalance",
        "no SyncGroup is answered NONE, nor parked (the spec's form), while the group is PreparingRebalance",
        _M,
        _no_sync_in_preparing,
        main=True,
    ),
    Invariant(
        "SyncOnlyWhenStable",
        "a SyncGroup answered NONE since the last state change means Stable",
        (),
        _sync_only_when_stable,
    ),
    Invariant("UnownedIsDead", "a group this coordinator does not serve is Dead", (), _unowned_is_dead),
    Invariant(
        "DeadHoldsNothing",
        "a Dead group has no generation, leader, members or pending members",
        _M,
        _dead_holds_nothing,
    ),
    Invariant(
        "EmptyIffNoMembers",
        "Empty: no members and no leader; CompletingRebalance/Stable: a leader that is a member",
        _M,
        _empty_iff_no_members,
        main=True,
    ),
    Invariant(
        "LeaderIsMember",
        "a group has a leader exactly when it has members, and the leader is one",
        _M,
        _leader_is_member,
        main=True,
    ),
    Invariant("PendingNotMember", "a pending member id is not (yet) a member", _M, _pending_not_member),
    Invariant(
        "AwaitingJoinOnlyInPreparing",
        "parked JoinGroups exist only in PreparingRebalance, for members",
        _M,
        _awaiting_join_only_preparing,
    ),
    Invariant(
        "AwaitingSyncOnlyInCompleting",
        "parked SyncGroups exist only in CompletingRebalance, for members",
        _M,
        _awaiting_sync_only_completing,
    ),
    Invariant(
        "PendingSyncAreMembers",
        "pending-sync members are members of a CompletingRebalance/Stable group",
        _M,
        _pending_sync_members,
    ),
    Invariant(
        "StoredLeaderIsStoredMember",
        "the stored leader is a stored member; stored members have a leader",
        _M,
        _stored_leader_is_stored_member,
    ),
    Invariant(
        "NamedEpochsPast",
        "leaders are named only in the current or earlier incarnations",
        (("e", "int"), ("g", "int"), ("m", "member")),
        _named_epochs_past,
    ),
    Invariant(
        "NamedGenerationsNotAhead",
        "leaders are named only for generations <= current",
        (("g", "int"), ("m", "member")),
        _named_generations_not_ahead,
    ),
    Invariant(
        "NothingNamedWhileDead",
        "a Dead group's incarnation has named no leader",
        (("g", "int"), ("m", "member")),
        _nothing_named_while_dead,
    ),
    Invariant(
        "NamedLeaderIsCurrentLeader",
        "in CompletingRebalance/Stable, a leader named for the current generation is the leader",
        _M,
        _named_leader_is_current,
    ),
    Invariant(
        "LeaderBeliefWasNamed",
        "a member believes it leads only a generation it was named leader of",
        _M,
        _belief_was_named,
    ),
    Invariant(
        "KnownGenerationNotAhead",
        "a member's known generation never exceeds the group's (same incarnation)",
        _M,
        _known_generation_not_ahead,
    ),
    Invariant(
        "KnownEpochNotAhead",
        "clients learnt generations only from this or earlier incarnations",
        _M,
        _known_epoch_not_ahead,
    ),
)

INVARIANTS_BY_NAME: dict[str, Invariant] = {i.name: i for i in INVARIANTS}


def conjunction(sig: Signature, s: State) -> z3.BoolRef:
    return z3.And([i.holds(sig, s) for i in INVARIANTS])
