"""The driver's world: a coordinator on a VirtualClock, the spec's clients as Kafka consumers
(ClientView), and the history the spec keeps as ghost variables (what was produced, the
snapshot of an unloaded group)."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from kgc.conformance.abstraction.constants import GROUP_ID, NO_GEN, AbstractionError, SpecConstants
from kgc.conformance.abstraction.ids import IdMap
from kgc.conformance.driver import Driver
from kgc.impl.coordinator import (
    GroupCoordinator,
    JoinGroupResult,
)
from kgc.impl.errors import Errors
from kgc.impl.group import GroupMetadata, GroupState
from kgc.impl.store import DeferredGroupStore


@dataclass
class ClientView:
    """What a consumer (one spec client) knows: the spec's client variables, in impl ids."""

    name: str
    phase: str = "Unjoined"
    member: str = ""
    gen: int = NO_GEN
    leader: bool = False
    members: frozenset[str] = frozenset()
    assign: frozenset[str] = frozenset()
    wait: str = ""
    request: int = 0  # token of its parked JoinGroup/SyncGroup (0: none)
    calling: int = 0  # token of the request being handled right now
    answered: bool = False  # the request being handled has had its response
    subscription: int = 0  # version of its subscription metadata

    def reset(self, phase: str) -> None:
        """ResetClient: a new consumer, or one told its member id is unknown."""
        self.phase, self.member, self.gen, self.leader = phase, "", NO_GEN, False
        self.members, self.assign, self.wait, self.request = frozenset(), frozenset(), "", 0
        self.calling = 0

    def rejoins(self) -> None:
        """ClientRejoins (requestRejoin; also ILLEGAL_GENERATION): keep the member id only;
        generation, leadership, member list and assignment are not read again before the
        next JoinGroup response overwrites them."""
        self.phase, self.gen, self.leader, self.wait, self.request = ("Unjoined", NO_GEN, False, "", 0)
        self.members, self.assign = frozenset(), frozenset()

    def loses_generation(self) -> None:
        self.rejoins()


@dataclass(frozen=True)
class Produced:
    """One response the coordinator produced (callback fired), whether or not delivered."""

    step: int
    client: str
    kind: str  # "join" | "sync" | "heartbeat" | "leave" | "commit"
    token: int
    result: Any
    delivered: bool


@dataclass
class _Snapshot:
    """A live op's bookkeeping fields as they were when its group was unloaded."""

    op: Any
    orphan: bool
    olds: frozenset[str]
    nma: bool


class _GenerationFormed:
    """Listener: notes the group and its members when a generation is formed (the spec's
    genMembers)."""

    def __init__(self, world: World) -> None:
        self.world = world

    def on_transition(self, group_id: str, old: GroupState, new: GroupState) -> None:
        if old is GroupState.PreparingRebalance and new in (GroupState.CompletingRebalance, GroupState.Empty):
            group = self.world.coordinator.group(group_id)
            if group is not None:
                self.world.formed = (group, frozenset(group.members))


class _GenerationAcknowledged:
    """Listener: notes <<generation, leader>> when the leader's SyncGroup is answered as stored
    (the spec's ackLog): CompletingRebalance -> Stable happens only in doSyncGroup's store
    callback with NONE on the live group."""

    def __init__(self, world: World) -> None:
        self.world = world

    def on_transition(self, group_id: str, old: GroupState, new: GroupState) -> None:
        if old is GroupState.CompletingRebalance and new is GroupState.Stable:
            group = self.world.coordinator.group(group_id)
            if group is not None and group.leader_id:
                self.world.acknowledged.append((group.generation_id, group.leader_id))


class _OrphanPaths:
    """Listener: the member ids whose delayed operations Kafka leaves behind on purpose, on
    exactly the spec's orphaning paths (OrphanTimers): a JoinGroup answered
    GROUP_MAX_SIZE_REACHED for a known or pending member id (the member is dropped without its
    heartbeat being completed), and a LeaveGroup of a pending member (its pending expiration is
    not completed: the id is no member). Every other timer that outlives its member is a leak."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.join_member: str | None = None

    def on_request(self, kind: str, group_id: str, args: dict) -> None:
        if group_id != GROUP_ID:
            return
        self.join_member = args.get("member_id") if kind == "join" else None
        if kind == "leave":
            group = self.world.coordinator.group(group_id)
            for leaving in args.get("leaving_members", ()):
                if group is not None and leaving.member_id in group.pending_members:
                    self.world.orphaned.add(leaving.member_id)

    def on_response(self, kind: str, group_id: str, result: object) -> None:
        error = getattr(result, "error", None)
        if kind == "join" and self.join_member and getattr(error, "name", None) == "GROUP_MAX_SIZE_REACHED":
            self.world.orphaned.add(self.join_member)


class World:
    """One coordinator hosting group "g", its clock and timer, and the spec's clients.

    `coordinator_class` lets the tests run a seeded-bug subclass (seeded_bugs.py).
    """

    def __init__(
        self,
        constants: SpecConstants,
        coordinator_class: type[GroupCoordinator] = GroupCoordinator,
        observer: Any = None,
        member_id_seed: int = 0,
        observers: tuple[Any, ...] = (),
    ) -> None:
        self.k = constants
        self.driver = Driver(
            constants.group_config(),
            coordinator_class,
            member_id_seed=member_id_seed,
            listeners=(
                _GenerationFormed(self),
                _GenerationAcknowledged(self),
                _OrphanPaths(self),
                observer,
                *observers,
            ),
        )
        self.clock = self.driver.clock
        self.timer = self.driver.timer
        self.coordinator = self.driver.coordinator
        if constants.store_async:
            # The spec's StoreAsync: every append waits for a StoreCallback step.
            self.coordinator.store = DeferredGroupStore(self.coordinator.store)
        self.clients: dict[str, ClientView] = {c: ClientView(c) for c in constants.clients}
        self.ids = IdMap()
        self.failovers = 0
        self.orphaned: set[str] = set()  # member ids Kafka drops on an orphaning path
        # (session, rebalance) ms of every member id as last seen in the group: the spec's
        # mtimeouts keeps them after the member is gone, the coordinator does not
        self.member_timeouts: dict[str, tuple[int, int]] = {}
        # protocol names of every member id as last seen in the group (the spec's mprotocols)
        self.member_protocols: dict[str, tuple[str, ...]] = {}
        # group.instance.id of every member id seen with one: the spec's minstance keeps it
        # after the member is gone (replaced, removed or unloaded), GroupMetadata does not
        self.member_instances: dict[str, str] = {}
        # bumped whenever member_timeouts or member_protocols change: mtimeouts and mprotocols
        # (functions of these, of the ids handed out and of nothing else) are kept in
        # per_id_memo under (variable, len(ids), this version) and rebuilt only when it moves
        self.per_member_version = 0
        self.per_id_memo: dict[str, tuple[Any, Any]] = {}
        # static member ids replaced in Stable -> their new ids: the plan a leader handed out
        # names the old id, which the spec relabels (ReplaceStaticMember)
        self.renamed: dict[str, str] = {}
        self.offset_ms = 0
        self.step = 0
        self.produced: list[Produced] = []
        self.formed: tuple[GroupMetadata | None, frozenset[str]] = (None, frozenset())
        self.self_leaders: list[tuple[GroupMetadata, int, str]] = []
        # <<generation, leader id>> of every generation acknowledged as stored (the spec's ackLog)
        self.acknowledged: list[tuple[int, str]] = []
        self.unloaded_ops: dict[int, _Snapshot] = {}
        self.unloaded_groups: dict[int, tuple[GroupMetadata, frozenset[str]]] = {}
        self.op_born: dict[int, tuple[Any, int]] = {}
        # ops made on their own in a step that also made a batch of timers for several members
        # (a replaced static member's new DelayedHeartbeat); kept out of that batch's re-sort
        self.made_alone: dict[int, Any] = {}
        self.ops: list[Any] = []  # the live ops as of the last observe()
        self.observed_step = -1  # `step` at the last observe()
        self._tokens = 0
        self._step_token = 0
        self.step_response: Any = None  # the requester's own response, if it came in-step

    # -- views --------------------------------------------------------------------------------
    @property
    def group(self) -> GroupMetadata | None:
        # the coordinator's own table, read directly: GroupCoordinator.group(GROUP_ID) is this
        # lookup behind one more Python frame, and conform reads the group several times a step
        return self.coordinator._groups.get(GROUP_ID)

    def gen(self, generation: int) -> int:
        """A generation as the spec writes it: as is, or with Normalize 1 for the current
        one (0 before the first) and 0 for every older one; NoGen stays -1."""
        if not self.k.normalize or generation == NO_GEN:
            return generation
        group = self.group
        current = group.generation_id if group is not None else 0
        if generation >= current:
            return min(generation, 1)
        return 0

    def born_step(self, op: Any) -> int | None:
        """The step in which a live op was first seen (ops made in one step form a batch)."""
        entry = self.op_born.get(id(op))
        return entry[1] if entry is not None and entry[0] is op else None

    # -- responses ----------------------------------------------------------------------------
    def _request(self, view: ClientView | None) -> int:
        """A token for a request about to be sent; its response is delivered to `view` if it
        comes while the request is handled, or later while the request is parked."""
        self._tokens += 1
        self._step_token = self._tokens
        if view is not None:
            view.calling, view.answered = self._tokens, False
        return self._tokens

    def _callback(self, client: str, token: int, kind: str) -> Callable[[Any], None]:
        def respond(result: Any) -> None:
            view = self.clients[client]
            delivered = token in (view.request, view.calling)
            self.produced.append(Produced(self.step, client, kind, token, result, delivered))
            if kind == "join":
                self._note_join(result)
            if token == self._step_token:
                self.step_response = result
            if delivered:
                if view.request == token:
                    view.request = 0
                if view.calling == token:
                    view.answered = True
                DELIVER[kind](self, view, result)

        return respond

    def _parks(self, view: ClientView, token: int) -> bool:
        """After the handler returned: True if the request is parked (no response yet)."""
        view.calling = 0
        if view.answered:
            return False
        view.request = token
        return True

    def _note_join(self, result: JoinGroupResult) -> None:
        """Register the id first, and keep the history genLeaders is made of."""
        if result.member_id:
            self.ids.spec(result.member_id)
        if result.error is Errors.NONE and result.member_id and result.leader_id == result.member_id:
            group = self.group
            if group is not None:
                self.self_leaders.append((group, result.generation_id, result.member_id))

    def replaced_static_member(self, group: GroupMetadata, generation: int, old: str, new: str) -> None:
        """GroupMetadata.replaceStaticMember moved old's MemberMetadata to new: old's
        DelayedHeartbeat is left to expire without effect (an orphan, as the spec's
        ReplaceStaticMember makes it), and the leadership old was told of in this generation
        is new's (the spec relabels genLeaders, leaderLog and ackLog at `generation`, the group's
        when the JoinGroup came, before any rebalance it completed)."""
        if new in group.members and old not in group.members:
            self.orphaned.add(old)
        if group.state is GroupState.Stable:
            # the plan, the generation's members and the clients' lists and assignments name
            # the new id (in the other states no plan is installed: the stored one keeps old)
            self.renamed[old] = new
            formed_group, formed = self.formed
            if old in formed:
                self.formed = (formed_group, (formed - {old}) | {new})
            for view in self.clients.values():
                if old in view.assign:
                    view.assign = (view.assign - {old}) | {new}
                if old in view.members:
                    view.members = (view.members - {old}) | {new}
        self.self_leaders = [
            (g, g_gen, new if g_gen == generation and m == old else m) for g, g_gen, m in self.self_leaders
        ]
        self.acknowledged = [(g_gen, new if g_gen == generation and m == old else m) for g_gen, m in self.acknowledged]
        if group.state is not GroupState.CompletingRebalance:
            # updateStaticMemberAndRebalance scheduled new's heartbeat on its own, before a
            # prepareRebalance in CompletingRebalance re-made the heartbeats of the members
            # awaiting sync (unless the join completed the rebalance: then new's came with those)
            for op in self.timer.live_tasks():
                if getattr(op, "member_id", None) == new:
                    self.made_alone[id(op)] = op

    def is_made_alone(self, op: Any) -> bool:
        """Whether a live op was made on its own (see made_alone), not in a loop over members."""
        return self.made_alone.get(id(op)) is op

    def current_id(self, member_id: str, within: AbstractSet[str] = frozenset()) -> str:
        """The id a member named in an assignment plan has now (see `renamed`), or the first
        id on the way there that is `within` (the members of a record written meanwhile)."""
        seen = {member_id}
        while member_id in self.renamed and member_id not in within:
            member_id = self.renamed[member_id]
            if member_id in seen:
                break
            seen.add(member_id)
        return member_id

    # -- failover and idle time ---------------------------------------------------------------
    def unload(self) -> None:
        """The spec's GroupUnload: the coordinator resigns the group's partition."""
        self.snapshot_unload()
        self.coordinator.on_group_unloaded(GROUP_ID)
        self.failovers += 1

    def load(self) -> None:
        """The spec's GroupLoad: the coordinator takes the group over from the store."""
        before = self.group
        self.coordinator.on_group_loaded(GROUP_ID)
        group = self.group
        if group is not None and group is not before:
            self.formed = (group, frozenset(group.members))

    def deferred_store(self) -> DeferredGroupStore | None:
        store = self.coordinator.store
        return store if isinstance(store, DeferredGroupStore) else None

    def complete_write(self, append_error: Errors) -> None:
        """The spec's StoreCallback: acknowledge the oldest append of the group in flight."""
        store = self.deferred_store()
        if store is None or not store.complete_next(GROUP_ID, append_error):
            raise AbstractionError("StoreCallback with no group-metadata append in flight")

    def advance_idle(self, ms: int) -> None:
        """Let time pass while no timer task is live: invisible to the spec (its `now` only
        moves towards a live deadline), so the clock runs ahead of `now` by offset_ms."""
        if self.timer.size():
            raise AbstractionError("advance_idle with live timer tasks: use AdvanceTime")
        self.timer.advance_to(self.clock.now_ms() + ms)
        self.offset_ms += ms

    # -- bookkeeping after every step ---------------------------------------------------------
    def observe(self) -> list[Any]:
        """Register new member ids (order of first appearance) and note new timer ops;
        returns the live ops (also kept as `ops`)."""
        group = self.group
        spec = self.ids.spec
        if group is not None:
            for m in sorted(group.pending_members):
                spec(m)
            for m, member in group.members.items():
                spec(m)
                if member.group_instance_id is not None:
                    self.member_instances.setdefault(m, member.group_instance_id)
        ops = self.timer.live_tasks()
        born = self.op_born
        for op in ops:
            entry = born.get(id(op))
            if entry is None or entry[0] is not op:
                born[id(op)] = (op, self.step)
            member = getattr(op, "member_id", None)
            if member:
                spec(member)
        self.ops = ops
        self.observed_step = self.step
        return ops

    def snapshot_unload(self) -> None:
        """Before an unload: what the spec's GroupUnload writes into the timers it makes
        stale (orphan as it stands, olds = members, nma = newMemberAdded)."""
        group = self.group
        if group is None:
            return
        olds = frozenset(group.members)
        self.unloaded_groups[id(group)] = (group, olds)
        from kgc.conformance.abstraction.state import is_orphan  # here: state imports this module

        for op in self.timer.live_tasks():
            if getattr(op, "group", None) is group:
                self.unloaded_ops[id(op)] = _Snapshot(
                    op, is_orphan(op, group, self.orphaned), olds, group.new_member_added
                )


DELIVER: dict[str, Callable[[World, ClientView, Any], None]] = {}


# ----------------------------------------------------------------------------------------------
# The abstraction function
# ----------------------------------------------------------------------------------------------
