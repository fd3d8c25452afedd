"""One Z3 transition per protocol action, mirroring Kafka 3.x's GroupCoordinator handlers.

Each action is a function of the pre-state and its arguments returning a guard and the
post-state as terms, so `Inv(pre) /\\ guard /\\ ~Inv(post)` is the whole induction query.
Arguments are request fields (the member id, a generation, whether the JoinGroup metadata
matches) and the coordinator's own choices (a freshly generated member id, the member Kafka's
`members.keys.headOption` happens to return): both are existentially quantified.

Requests answered with an error change nothing at this level and are stuttering steps, so the
guards describe only the branches that change state. A Kafka handler that ends in
`checkAndComplete` of the join purgatory is two steps here: the handler, then CompleteJoin.
Timers are not modelled: every delayed operation may expire whenever its group is in a state
where Kafka would still act on it (see model.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import z3

from kgc.conformance.proofs.model import Signature, State

# Seeded bugs: each one is a deliberate deviation from Kafka that `kgc prove --bug NAME` must
# catch with a counterexample to induction naming the action.
BUGS: dict[str, str] = {
    "sync_answered_in_preparing_rebalance": "SyncGroup in PreparingRebalance answers NONE instead of "
    "REBALANCE_IN_PROGRESS",
    "leader_replaced_without_rebalance": "when the leader leaves or times out during CompletingRebalance/Stable, "
    "another member becomes leader without a rebalance (same generation)",
    "generation_not_bumped": "initNextGeneration keeps the generation id instead of incrementing it",
    "leader_not_reassigned": "when the leader is removed (LeaveGroup, session expiry, DelayedSync expiry), the "
    "group keeps naming it leader",
    "last_leave_no_rebalance": "the last member leaving (or expiring from) a Stable or CompletingRebalance group "
    "leaves it in that state with no member, instead of rebalancing it to Empty",
    "rebalance_rollback": "a rebalance started from CompletingRebalance rolls the generation back by one",
    "heartbeat_rebalances_stable": "a Heartbeat of a current member in Stable starts a rebalance",
    "pending_leave_rebalances": "a pending member's LeaveGroup rebalances the group (maybePrepareRebalance) "
    "instead of only re-checking a join in progress",
}

Args = dict[str, z3.ExprRef]
Body = Callable[[Signature, State, Args, frozenset[str]], tuple[z3.BoolRef, State]]


@dataclass(frozen=True)
class Action:
    """A protocol action: `params` are (name, kind) with kind in member | int | bool."""

    name: str
    kafka: str
    params: tuple[tuple[str, str], ...]
    body: Body

    def args(self, sig: Signature, suffix: str) -> Args:
        out: Args = {}
        for pname, kind in self.params:
            full = f"{self.name}_{pname}{suffix}"
            if kind == "member":
                out[pname] = sig.member_var(full)
            elif kind == "int":
                out[pname] = z3.Int(full)
            elif kind == "bool":
                out[pname] = z3.Bool(full)
            else:
                raise ValueError(f"unknown parameter kind {kind!r}")
        return out

    def apply(
        self, sig: Signature, pre: State, args: Args, bugs: frozenset[str] = frozenset()
    ) -> tuple[z3.BoolRef, State]:
        return self.body(sig, pre, args, bugs)


# ---------------------------------------------------------------- helpers (GroupMetadata ops)


def _add(arr: z3.ArrayRef, m: z3.ExprRef) -> z3.ArrayRef:
    return z3.Store(arr, m, True)


def _del(arr: z3.ArrayRef, m: z3.ExprRef) -> z3.ArrayRef:
    return z3.Store(arr, m, False)


def _minus(sig: Signature, a: z3.ArrayRef, b: z3.ArrayRef) -> z3.ArrayRef:
    x = sig.member_var("set_x")
    return z3.Lambda([x], z3.And(a[x], z3.Not(b[x])))


def _inter(sig: Signature, a: z3.ArrayRef, b: z3.ArrayRef) -> z3.ArrayRef:
    x = sig.member_var("set_x")
    return z3.Lambda([x], z3.And(a[x], b[x]))


def _empty(sig: Signature) -> z3.ArrayRef:
    return z3.K(sig.member, z3.BoolVal(False))


def _choose(sig: Signature, among: z3.ArrayRef, has: z3.BoolRef, pick: z3.ExprRef) -> z3.BoolRef:
    """`has` <=> the set is non-empty, and then `pick` is in it (Kafka's headOption)."""
    return z3.And(
        z3.Implies(has, among[pick]),
        z3.Implies(z3.Not(has), sig.forall_members("choose_x", lambda x: z3.Not(among[x]))),
    )


def _finish(pre: State, post: State, sync_ok: z3.BoolRef | bool) -> State:
    """syncedInState: a SyncGroup answered NONE since the group entered its current state."""
    ok = z3.BoolVal(sync_ok) if isinstance(sync_ok, bool) else sync_ok
    synced = z3.If(post.group_state == pre.group_state, z3.Or(pre.synced_in_state, ok), ok)
    return replace(post, synced_in_state=synced)


def _serving(sig: Signature, s: State) -> z3.BoolRef:
    return z3.And(s.owned, s.group_state != sig.st("Dead"))


def _prepare_rebalance(sig: Signature, s: State, bugs: frozenset[str]) -> State:
    """prepareRebalance: parked SyncGroups are answered REBALANCE_IN_PROGRESS
    (resetAndPropagateAssignmentError, CompletingRebalance only), the pending-sync set is
    cleared (removeSyncExpiration) and the group enters PreparingRebalance."""
    completing = s.group_state == sig.st("CompletingRebalance")
    return replace(
        s,
        awaiting_sync=z3.If(completing, _empty(sig), s.awaiting_sync),
        pending_sync=_empty(sig),
        group_state=sig.st("PreparingRebalance"),
        generation=z3.If(completing, s.generation - 1, s.generation) if "rebalance_rollback" in bugs else s.generation,
    )


def _maybe_prepare_rebalance(sig: Signature, s: State, bugs: frozenset[str]) -> State:
    """maybePrepareRebalance: only from a state PreparingRebalance may be entered from."""
    p = _prepare_rebalance(sig, s, bugs)
    can = z3.Or(
        s.group_state == sig.st("Empty"),
        s.group_state == sig.st("Stable"),
        s.group_state == sig.st("CompletingRebalance"),
    )
    return _ite_state(can, p, s)


def _ite_state(c: z3.BoolRef, a: State, b: State) -> State:
    merged = State(**{k: z3.If(c, va, vb) for (k, va), (_, vb) in zip(a.items(), b.items())})
    if a.named_delta is None and b.named_delta is None:
        return merged
    da, db = a.named_delta, b.named_delta
    ref = da if da is not None else db
    da = da if da is not None else (z3.BoolVal(False),) + tuple(ref[1:])
    db = db if db is not None else (z3.BoolVal(False),) + tuple(ref[1:])
    return replace(merged, named_delta=tuple(z3.If(c, x, y) for x, y in zip(da, db)))


def _name_leader(s: State, cond: z3.BoolRef, epoch: z3.ArithRef, gen: z3.ArithRef, lid: z3.ExprRef) -> dict:
    """A JoinGroup response (when `cond`) names `lid` leader of (`epoch`, `gen`)."""
    e, g, x = z3.Int("nl_e"), z3.Int("nl_g"), z3.Const("nl_x", lid.sort())
    named = z3.Lambda([e, g, x], z3.Or(s.named[e, g, x], z3.And(cond, e == epoch, g == gen, x == lid)))
    return {"named": named, "named_delta": (cond, epoch, gen, lid)}


def _base_for_join(sig: Signature, s: State) -> State:
    """getOrMaybeCreateGroup: a JoinGroup with an unknown member id for a group the coordinator
    does not hold creates it, Empty at generation 0."""
    absent = s.group_state == sig.st("Dead")
    created = replace(
        s,
        group_state=sig.st("Empty"),
        generation=z3.IntVal(0),
        leader=sig.no_leader(),
        members=_empty(sig),
        pending=_empty(sig),
        awaiting_join=_empty(sig),
        awaiting_sync=_empty(sig),
        pending_sync=_empty(sig),
    )
    return _ite_state(absent, created, s)


def _add_member_and_rebalance(sig: Signature, s: State, m: z3.ExprRef, bugs: frozenset[str]) -> State:
    """addMemberAndRebalance: group.add (the first member becomes leader; a pending id stops
    being pending), its JoinGroup is parked, then maybePrepareRebalance."""
    added = replace(
        s,
        members=_add(s.members, m),
        awaiting_join=_add(s.awaiting_join, m),
        pending=_del(s.pending, m),
        leader=z3.If(sig.has_leader(s.leader), s.leader, sig.some_leader(m)),
    )
    return _maybe_prepare_rebalance(sig, added, bugs)


def _remove_member(
    sig: Signature, s: State, m: z3.ExprRef, has_next: z3.BoolRef, next_leader: z3.ExprRef, bugs: frozenset[str]
) -> tuple[z3.BoolRef, State]:
    """group.remove(m) after its parked JoinGroup (if any) is answered UNKNOWN_MEMBER_ID; a
    removed leader is replaced by any remaining member (headOption) or by none. A parked
    SyncGroup of a removed member is never answered: it leaves awaitingSync with the member."""
    remaining = _del(s.members, m)
    was_leader = sig.is_leader(s.leader, m)
    choice = z3.Implies(was_leader, _choose(sig, remaining, has_next, next_leader))
    new_leader = z3.If(was_leader, z3.If(has_next, sig.some_leader(next_leader), sig.no_leader()), s.leader)
    if "leader_not_reassigned" in bugs:
        new_leader = s.leader
    return choice, replace(
        s,
        members=remaining,
        awaiting_join=_del(s.awaiting_join, m),
        awaiting_sync=_del(s.awaiting_sync, m),
        pending_sync=_del(s.pending_sync, m),
        pending=_del(s.pending, m),
        leader=new_leader,
    )


def _remove_member_and_update_group(
    sig: Signature, s: State, m: z3.ExprRef, has_next: z3.BoolRef, next_leader: z3.ExprRef, bugs: frozenset[str]
) -> tuple[z3.BoolRef, State]:
    """removeMemberAndUpdateGroup: remove, then Stable/CompletingRebalance rebalance
    (PreparingRebalance only re-checks the join purgatory: the separate CompleteJoin step)."""
    choice, removed = _remove_member(sig, s, m, has_next, next_leader, bugs)
    rebalanced = _maybe_prepare_rebalance(sig, removed, bugs)
    if "last_leave_no_rebalance" in bugs:
        nobody_left = sig.forall_members("ll_x", lambda x: z3.Not(removed.members[x]))
        rebalanced = _ite_state(nobody_left, removed, rebalanced)
    if "leader_replaced_without_rebalance" in bugs:
        handover = z3.And(
            sig.is_leader(s.leader, m),
            has_next,
            z3.Or(s.group_state == sig.st("Stable"), s.group_state == sig.st("CompletingRebalance")),
        )
        rebalanced = _ite_state(handover, removed, rebalanced)
    return choice, rebalanced


def _respond_join(sig: Signature, s: State, m: z3.ExprRef) -> State:
    """A JoinGroup answered NONE at once with the current generation and leaderOrNull: the
    response names the leader, and member m learns generation and leadership."""
    lid = sig.leader_id(s.leader)
    return replace(
        s,
        **_name_leader(s, sig.has_leader(s.leader), s.epoch, s.generation, lid),
        known_generation=z3.Store(s.known_generation, m, s.generation),
        known_epoch=z3.Store(s.known_epoch, m, s.epoch),
        believes_leader=z3.Store(s.believes_leader, m, sig.is_leader(s.leader, m)),
    )


# ---------------------------------------------------------------------------------- actions


def join_unknown_member(sig: Signature, s: State, a: Args, bugs: frozenset[str]) -> tuple[z3.BoolRef, State]:
    """doNewMemberJoinGroup (dynamic): a fresh member id; with requireKnownMemberId it only
    becomes pending (MEMBER_ID_REQUIRED), else addMemberAndRebalance."""
    m, require_known = a["member"], a["requireKnownMemberId"]
    b = _base_for_join(sig, s)
    guard = z3.And(s.owned, z3.Not(b.members[m]), z3.Not(b.pending[m]))
    pending_only = replace(b, pending=_add(b.pending, m))
    return guard, _finish(s, _ite_state(require_known, pending_only, _add_member_and_rebalance(sig, b, m, bugs)), False)


def join_pending_member(sig: Signature, s: State, a: Args, bugs: frozenset[str]) -> tuple[z3.BoolRef, State]:
    m = a["member"]
    guard = z3.And(_serving(sig, s), s.pending[m])
    return guard, _finish(s, _add_member_and_rebalance(sig, s, m, bugs), False)


def join_known_member(sig: Signature, s: State, a: Args, bugs: frozenset[str]) -> tuple[z3.BoolRef, State]:
    m, same = a["member"], z3.Not(a["changedMetadata"])
    st = s.group_state
    guard = z3.And(
        s.owned,
        s.members[m],
        z3.Or(st == sig.st("PreparingRebalance"), st == sig.st("CompletingRebalance"), st == sig.st("Stable")),
    )
    updated = replace(s, awaiting_join=_add(s.awaiting_join, m))  # updateMember with a callback
    rebalance = _maybe_prepare_rebalance(sig, updated, bugs)
    answered = _respond_join(sig, s, m)
    answer_now = z3.Or(
        z3.And(st == sig.st("CompletingRebalance"), same),
        z3.And(st == sig.st("Stable"), same, z3.Not(sig.is_leader(s.leader, m))),
    )
    return guard, _finish(s, _ite_state(answer_now, answered, rebalance), False)


def _on_complete_join(sig: Signature, s: State, a: Args, bugs: frozenset[str]) -> State:
    """onCompleteJoin + initNextGeneration: members that did not rejoin are removed, the leader
    stays if it rejoined (else any rejoined member: maybeElectNewJoinedLeader), the generation
    is bumped, every parked JoinGroup is answered with it and the leader, and the group enters
    CompletingRebalance -- or Empty, stored as such, when nobody rejoined."""
    has_next, nxt = a["hasNewLeader"], a["newLeader"]
    joined = _inter(sig, s.members, s.awaiting_join)
    retained = z3.And(sig.has_leader(s.leader), joined[sig.leader_id(s.leader)])
    leader = z3.If(retained, s.leader, z3.If(has_next, sig.some_leader(nxt), sig.no_leader()))
    non_empty = z3.Or(retained, has_next)
    gen = s.generation if "generation_not_bumped" in bugs else s.generation + 1
    lid = sig.leader_id(leader)
    y = sig.member_var("cj_y")
    post = replace(
        s,
        members=joined,
        leader=leader,
        generation=gen,
        group_state=z3.If(non_empty, sig.st("CompletingRebalance"), sig.st("Empty")),
        awaiting_join=_empty(sig),
        awaiting_sync=_inter(sig, s.awaiting_sync, joined),
        pending_sync=z3.If(non_empty, joined, _empty(sig)),
        **_name_leader(s, non_empty, s.epoch, gen, lid),
        known_generation=z3.Lambda([y], z3.If(joined[y], gen, s.known_generation[y])),
        known_epoch=z3.Lambda([y], z3.If(joined[y], s.epoch, s.known_epoch[y])),
        believes_leader=z3.Lambda([y], z3.If(joined[y], leader == sig.some_leader(y), s.believes_leader[y])),
        stored=z3.Or(s.stored, z3.Not(non_empty)),
        stored_generation=z3.If(non_empty, s.stored_generation, gen),
        stored_leader=z3.If(non_empty, s.stored_leader, sig.no_leader()),
        stored_members=z3.If(non_empty, s.stored_members, _empty(sig)),
    )
    return _finish(s, post, False)


def _complete_join_choice(sig: Signature, s: State, a: Args) -> z3.BoolRef:
    joined = _inter(sig, s.members, s.awaiting_join)
    retained = z3.And(sig.has_leader(s.leader), joined[sig.leader_id(s.leader)])
    return z3.Implies(z3.Not(retained), _choose(sig, joined, a["hasNewLeader"], a["newLeader"]))


def complete_join(sig: Signature, s: State, a: Args, bugs: frozenset[str]) -> tuple[z3.BoolRef, State]:
    all_joined = sig.forall_members(
        "aj_x", lambda x: z3.And(z3.Implies(s.members[x], s.awaiting_join[x]), z3.Not(s.pending[x]))
    )
    guard = z3.And(s.owned, s.group_state == sig.st("PreparingRebalance"), all_joined, _complete_join_choice(sig, s, a))
    return guard, _on_complete_join(sig, s, a, bugs)


def rebalance_timeout(sig: Signature, s: State, a: Args, bugs: frozenset[str]) -> tuple[z3.BoolRef, State]:
    guard = z3.And(s.owned, s.group_state == sig.st("PreparingRebalance"), _complete_join_choice(sig, s, a))
    return guard, _on_complete_join(sig, s, a, bugs)


def _sync_group(sig: Signature, s: State, a: Args, bugs: frozenset[str]) -> tuple[z3.BoolRef, State]:
    m, gen = a["member"], a["generation"]
    st = s.group_state
    ok_states = [st == sig.st("CompletingRebalance"), st == sig.st("Stable")]
    if "sync_answered_in_preparing_rebalance" in bugs:
        ok_states.append(st == sig.st("PreparingRebalance"))
    guard = z3.And(s.owned, s.members[m], gen == s.generation, z3.Or(ok_states))
    is_leader = sig.is_leader(s.leader, m)
    completing = st == sig.st("CompletingRebalance")
    # CompletingRebalance: park the SyncGroup; the leader's assignment is stored and every
    # parked SyncGroup is answered NONE (setAndPropagateAssignment), then Stable.
    parked = replace(s, awaiting_sync=_add(s.awaiting_sync, m), pending_sync=_del(s.pending_sync, m))
    stabilised = replace(
        parked,
        awaiting_sync=_empty(sig),
        group_state=sig.st("Stable"),
        stored=z3.BoolVal(True),
        stored_generation=s.generation,
        stored_leader=s.leader,
        stored_members=s.members,
    )
    completing_post = _ite_state(is_leader, stabilised, parked)
    # Stable: answered NONE with the current assignment.
    stable_post = replace(s, pending_sync=_del(s.pending_sync, m))
    post = _ite_state(completing, completing_post, stable_post)
    sync_ok = z3.Or(z3.Not(completing), is_leader)
    return guard, _finish(s, post, sync_ok)


def sync_group_leader(sig: Signature, s: State, a: Args, bugs: frozenset[str]) -> tuple[z3.BoolRef, State]:
    guard, post = _sync_group(sig, s, a, bugs)
    return z3.And(guard, sig.is_leader(s.leader, a["member"])), post


def sync_group_follower(sig: Signature, s: State, a: Args, bugs: frozenset[str]) -> tuple[z3.BoolRef, State]:
    guard, post = _sync_group(sig, s, a, bugs)
    return z3.And(guard, z3.Not(sig.is_leader(s.leader, a["member"]))), post


def heartbeat(sig: Signature, s: State, a: Args, bugs: frozenset[str]) -> tuple[z3.BoolRef, State]:
    """A valid Heartbeat only completes and reschedules the member's DelayedHeartbeat."""
    guard = z3.And(_serving(sig, s), s.members[a["member"]], a["generation"] == s.generation)
    post = s
    if "heartbeat_rebalances_stable" in bugs:
        post = _ite_state(s.group_state == sig.st("Stable"), _prepare_rebalance(sig, s, bugs), s)
    return guard, _finish(s, post, False)


def leave_group(sig: Signature, s: State, a: Args, bugs: frozenset[str]) -> tuple[z3.BoolRef, State]:
    m = a["member"]
    guard = z3.And(_serving(sig, s), z3.Or(s.pending[m], s.members[m]))
    choice, removed = _remove_member_and_update_group(sig, s, m, a["hasNewLeader"], a["newLeader"], bugs)
    pending_left = replace(s, pending=_del(s.pending, m))  # removePendingMemberAndUpdateGroup
    if "pending_leave_rebalances" in bugs:
        pending_left = _maybe_prepare_rebalance(sig, pending_left, bugs)
    post = _ite_state(s.pending[m], pending_left, removed)
    return z3.And(guard, z3.Implies(z3.Not(s.pending[m]), choice)), _finish(s, post, False)


def session_timeout(sig: Signature, s: State, a: Args, bugs: frozenset[str]) -> tuple[z3.BoolRef, State]:
    """DelayedHeartbeat expiry of a member (onExpireHeartbeat)."""
    m = a["member"]
    choice, post = _remove_member_and_update_group(sig, s, m, a["hasNewLeader"], a["newLeader"], bugs)
    return z3.And(_serving(sig, s), s.members[m], choice), _finish(s, post, False)


def pending_member_timeout(sig: Signature, s: State, a: Args, bugs: frozenset[str]) -> tuple[z3.BoolRef, State]:
    """DelayedHeartbeat expiry of a pending member (isPending): it is forgotten."""
    m = a["member"]
    return z3.And(_serving(sig, s), s.pending[m]), _finish(s, replace(s, pending=_del(s.pending, m)), False)


def sync_timeout(sig: Signature, s: State, a: Args, bugs: frozenset[str]) -> tuple[z3.BoolRef, State]:
    """DelayedSync expiry (onExpirePendingSync): members that sent no SyncGroup in this
    generation are removed and the group rebalances."""
    st = s.group_state
    some_pending = sig.exists_member("ps_x", lambda x: s.pending_sync[x])
    remaining = _minus(sig, s.members, s.pending_sync)
    leader_gone = z3.And(sig.has_leader(s.leader), s.pending_sync[sig.leader_id(s.leader)])
    has_next, nxt = a["hasNewLeader"], a["newLeader"]
    choice = z3.Implies(leader_gone, _choose(sig, remaining, has_next, nxt))
    guard = z3.And(s.owned, z3.Or(st == sig.st("CompletingRebalance"), st == sig.st("Stable")), some_pending, choice)
    removed = replace(
        s,
        members=remaining,
        awaiting_join=_minus(sig, s.awaiting_join, s.pending_sync),
        awaiting_sync=_minus(sig, s.awaiting_sync, s.pending_sync),
        leader=s.leader
        if "leader_not_reassigned" in bugs
        else z3.If(leader_gone, z3.If(has_next, sig.some_leader(nxt), sig.no_leader()), s.leader),
    )
    return guard, _finish(s, _prepare_rebalance(sig, removed, bugs), False)


def unload(sig: Signature, s: State, a: Args, bugs: frozenset[str]) -> tuple[z3.BoolRef, State]:
    """onGroupUnloaded: the partition moves away; parked requests are answered NOT_COORDINATOR
    and this coordinator holds nothing of the group. The incarnation ends (epoch + 1)."""
    e = _empty(sig)
    post = replace(
        s,
        owned=z3.BoolVal(False),
        group_state=sig.st("Dead"),
        generation=z3.IntVal(0),
        leader=sig.no_leader(),
        members=e,
        pending=e,
        awaiting_join=e,
        awaiting_sync=e,
        pending_sync=e,
        epoch=s.epoch + 1,
    )
    return s.owned, _finish(s, post, False)


def load(sig: Signature, s: State, a: Args, bugs: frozenset[str]) -> tuple[z3.BoolRef, State]:
    """onGroupLoaded: the group comes back from the store at its last stored generation,
    leader and members, Stable if it had members else Empty; never stored: nothing (Dead)."""
    has_members, witness = a["hasStoredMembers"], a["storedMember"]
    choice = _choose(sig, s.stored_members, has_members, witness)
    e = _empty(sig)
    post = replace(
        s,
        owned=z3.BoolVal(True),
        group_state=z3.If(s.stored, z3.If(has_members, sig.st("Stable"), sig.st("Empty")), sig.st("Dead")),
        generation=z3.If(s.stored, s.stored_generation, 0),
        leader=z3.If(s.stored, s.stored_leader, sig.no_leader()),
        members=z3.If(s.stored, s.stored_members, e),
        pending=e,
        awaiting_join=e,
        awaiting_sync=e,
        pending_sync=e,
    )
    return z3.And(z3.Not(s.owned), choice), _finish(s, post, False)


_LEADER_CHOICE = (("hasNewLeader", "bool"), ("newLeader", "member"))

# Names follow spec/GroupCoordinator.tla's actions where there is one; CompleteJoin is a step
# of its own here (the spec folds DelayedJoin completion into the step that triggers it), and
# RebalanceTimeout also covers the spec's InitialDelayedJoin and SessionTimeoutExpiry its
# NewMemberJoinTimeout (same effect at this level).
ACTIONS: tuple[Action, ...] = (
    Action(
        "JoinGroupUnknownMember",
        "handleJoinGroup (unknown member id) -> doNewMemberJoinGroup",
        (("member", "member"), ("requireKnownMemberId", "bool")),
        join_unknown_member,
    ),
    Action(
        "JoinGroupPendingMember",
        "handleJoinGroup (pending member id) -> addMemberAndRebalance",
        (("member", "member"),),
        join_pending_member,
    ),
    Action(
        "JoinGroupKnownMember",
        "handleJoinGroup (known member id) -> doCurrentMemberJoinGroup",
        (("member", "member"), ("changedMetadata", "bool")),
        join_known_member,
    ),
    Action(
        "CompleteJoin",
        "DelayedJoin.tryComplete (all joined) -> onCompleteJoin + initNextGeneration",
        _LEADER_CHOICE,
        complete_join,
    ),
    Action(
        "RebalanceTimeout",
        "DelayedJoin / InitialDelayedJoin expiry -> onCompleteJoin + initNextGeneration",
        _LEADER_CHOICE,
        rebalance_timeout,
    ),
    Action(
        "SyncGroupLeader",
        "handleSyncGroup -> doSyncGroup, from the leader",
        (("member", "member"), ("generation", "int")),
        sync_group_leader,
    ),
    Action(
        "SyncGroupFollower",
        "handleSyncGroup -> doSyncGroup, from a follower",
        (("member", "member"), ("generation", "int")),
        sync_group_follower,
    ),
    Action("Heartbeat", "handleHeartbeat", (("member", "member"), ("generation", "int")), heartbeat),
    Action(
        "LeaveGroup",
        "handleLeaveGroup -> removeMemberAndUpdateGroup / removePendingMemberAndUpdateGroup",
        (("member", "member"),) + _LEADER_CHOICE,
        leave_group,
    ),
    Action(
        "SessionTimeoutExpiry",
        "DelayedHeartbeat expiry -> onExpireHeartbeat -> removeMemberAndUpdateGroup",
        (("member", "member"),) + _LEADER_CHOICE,
        session_timeout,
    ),
    Action(
        "PendingMemberExpiry",
        "DelayedHeartbeat expiry (pending) -> removePendingMemberAndUpdateGroup",
        (("member", "member"),),
        pending_member_timeout,
    ),
    Action("DelayedSyncExpiry", "DelayedSync expiry -> onExpirePendingSync", _LEADER_CHOICE, sync_timeout),
    Action("GroupUnload", "onGroupUnloaded", (), unload),
    Action("GroupLoad", "onGroupLoaded", (("hasStoredMembers", "bool"), ("storedMember", "member")), load),
)

ACTIONS_BY_NAME: dict[str, Action] = {a.name: a for a in ACTIONS}


def check_bugs(bugs: frozenset[str] | set[str] | list[str] | tuple[str, ...]) -> frozenset[str]:
    unknown = sorted(set(bugs) - set(BUGS))
    if unknown:
        raise ValueError(f"unknown bug(s) {', '.join(unknown)}; known: {', '.join(sorted(BUGS))}")
    return frozenset(bugs)
