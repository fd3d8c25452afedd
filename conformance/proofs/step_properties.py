"""The action properties ([][P]_vars in spec/GroupCoordinator.tla): predicates of one step.

An invariant cannot say "the generation never goes down" or "Stable is left for
PreparingRebalance only by one of Kafka's triggers": both read the pre-state, the post-state
and (for the trigger) which action ran with which arguments, as the spec reads lastAction'.
`kgc prove` checks Inv(pre) /\\ Next_a(pre, post) => P(pre, post, a) per action a; Inv is the
inductive conjunction of invariants.INVARIANTS, so the step starts in a reachable-like state.
The Python twins are conformance/properties.py's ACTION_PROPERTIES.

NoSyncInPreparingRebalance is an action property in the spec too; here it is a state invariant
over the syncedInState ghost (a SyncGroup answered NONE since the group entered its state),
which says the same of every step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import z3

from kgc.conformance.proofs.invariants import Invariant, Vars
from kgc.conformance.proofs.model import Signature, State

Args = dict[str, z3.ExprRef]
StepBody = Callable[[Signature, State, State, str, Args, Vars], z3.BoolRef]


@dataclass(frozen=True)
class StepProperty:
    """`bound` as in Invariant (universally quantified witnesses); `body` gets the pre-state,
    the post-state, the action's name and its arguments."""

    name: str
    doc: str
    bound: tuple[tuple[str, str], ...]
    body: StepBody
    main: bool = True

    def at(self, pre: State, action: str, args: Args) -> Invariant:
        """The property of one step as an invariant of its post-state, so that Invariant's
        quantifier handling and witness naming serve for both."""
        return Invariant(
            self.name,
            self.doc,
            self.bound,
            lambda sig, post, v: self.body(sig, pre, post, action, args, v),
            main=self.main,
        )


def _generation_monotonic(sig: Signature, pre: State, post: State, action: str, a: Args, v: Vars) -> z3.BoolRef:
    """Within one coordinator incarnation (owned before and after) the generation never
    decreases: load and unload cross incarnations (the spec's `loaded` /\\ `loaded'`)."""
    return z3.Implies(z3.And(pre.owned, post.owned), post.generation >= pre.generation)


#: The actions _trigger lets move a Stable group to PreparingRebalance (each under its condition).
TRIGGER_ACTIONS: tuple[str, ...] = (
    "JoinGroupUnknownMember",
    "JoinGroupPendingMember",
    "JoinGroupKnownMember",
    "LeaveGroup",
    "SessionTimeoutExpiry",
    "DelayedSyncExpiry",
)


def _trigger(sig: Signature, pre: State, post: State, action: str, a: Args) -> z3.BoolRef:
    """Kafka 3.x's reasons to move a Stable group to PreparingRebalance, per handler (the spec's
    StableRebalanceOnlyByTrigger lists the same; the Z3 actions' names are the spec's):
    doNewMemberJoinGroup / addMemberAndRebalance (a new member, or a pending one, is added),
    doCurrentMemberJoinGroup -> updateMemberAndRebalance (the leader, or a member whose
    metadata changed, rejoins), removeMemberAndUpdateGroup (LeaveGroup, session expiry: the
    member is removed), onExpirePendingSync (DelayedSync expiry with members that never synced)."""
    if action == "JoinGroupUnknownMember":
        return post.members[a["member"]]
    if action == "JoinGroupPendingMember":
        return z3.And(pre.pending[a["member"]], post.members[a["member"]])
    if action == "JoinGroupKnownMember":
        m = a["member"]
        return z3.And(pre.members[m], z3.Or(sig.is_leader(pre.leader, m), a["changedMetadata"]))
    if action in ("LeaveGroup", "SessionTimeoutExpiry"):
        return z3.And(pre.members[a["member"]], z3.Not(post.members[a["member"]]))
    if action == "DelayedSyncExpiry":
        return sig.exists_member("trigger_x", lambda x: pre.pending_sync[x])
    return z3.BoolVal(False)


def _stable_rebalance_only_by_trigger(
    sig: Signature, pre: State, post: State, action: str, a: Args, v: Vars
) -> z3.BoolRef:
    leaves_stable = z3.And(
        pre.owned, pre.group_state == sig.st("Stable"), post.group_state == sig.st("PreparingRebalance")
    )
    return z3.Implies(leaves_stable, _trigger(sig, pre, post, action, a))


STEP_PROPERTIES: tuple[StepProperty, ...] = (
    StepProperty(
        "GenerationMonotonic",
        "within one coordinator incarnation the generation never decreases",
        (),
        _generation_monotonic,
    ),
    StepProperty(
        "StableRebalanceOnlyByTrigger",
        "Stable -> PreparingRebalance only by a join that adds or changes a member (or the leader's), "
        "a member's removal, or DelayedSync expiry",
        (),
        _stable_rebalance_only_by_trigger,
    ),
)

STEP_PROPERTIES_BY_NAME: dict[str, StepProperty] = {p.name: p for p in STEP_PROPERTIES}
