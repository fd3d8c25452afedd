"""The abstraction kept up to date step by step: recompute only what a step can have changed.

Rebuilding every spec variable after every step (state.abstract_state) was the largest cost of
kgc conform (about 45 % of a step). Most steps of a simulated trace touch one client and
nothing else (ClientCrash, ClientRestart, NoIdLeft, ClientAbandon, ClientRejoin: over half of
the steps of model default's traces), and one client at most changes a few of its variables.
`IncrementalAbstraction.update(action)` therefore:

- coordinator variables (everything state.coordinator_variables computes: the group, timers,
  clock, store, ghost history): reused as they are when the step was a client-only action
  (CLIENT_ONLY_ACTIONS, the actions apply_action performs on a ClientView alone) AND the
  world's own counters say nothing reached the coordinator (no request token issued; clock,
  offset, failovers and ids handed out unchanged); any other step recomputes them, except
  that a timer record is reused while its op's inputs are unchanged (`_timers`: the records
  were the largest part of that recomputation), and a new live op's record is taken from a
  memo by content shared by every world (`_shared_record`: a rescheduled heartbeat's record
  is, most often, one made before);
- client variables (state.CLIENT_VARIABLES): each is a function of one ClientView field per
  client; the fields of every client are read at once (one attrgetter per client) and only
  the entries of the clients whose field changed (compared by value) are replaced
  (TlaFunction.updated), all of them when the current generation moved under Normalize
  (World.gen reads it);
- any other spec variable (one added to abstract_state without a rule here): taken from a
  full abstract_state on every step, so a new variable is correct before it is fast.

The first update of a world conform just made (`fresh=True`) takes the state every such world
starts in from a memo (`_INITIAL`, by constants and coordinator class), once it was computed.

`client_event(action, client)` is update(action) for such a client event when the caller
knows the coordinator was not called (apply_client_event): only that client's fields are read.

`changed` holds the variables whose value object is new in the last update: a variable
outside it is the very object of the previous state, which the caller already compared.

Check mode (`check=True`, or KGC_CHECK_INCREMENTAL=1 in the environment): every update also
computes the full abstract_state and raises AbstractionError naming the variables that differ.
tests/conformance/test_incremental_abstraction.py runs it over simulated traces and
Hypothesis-drawn random runs.
"""

from __future__ import annotations

import os
from itertools import compress
from operator import attrgetter, is_, is_not, ne
from typing import Any

from kgc.conformance.abstraction.actions import _CLIENT_EVENT_MEMO_LIMIT, VIEW_ONLY_ACTIONS
from kgc.conformance.abstraction.constants import NO_GEN, NO_MEMBER, SPEC_VARIABLES, AbstractionError
from kgc.conformance.abstraction.state import (
    CLIENT_VARIABLES,
    abstract_state,
    client_variable,
    coordinator_variables,
    history_kept,
    timer_dur,
    timer_record,
)
from kgc.conformance.abstraction.world import World
from kgc.impl.delayed import DelayedHeartbeat, DelayedSync, InitialDelayedJoin
from kgc.spec.values import ModelValue, Record, TlaValue

__all__ = ["CLIENT_ONLY_ACTIONS", "IncrementalAbstraction", "check_incremental_default"]

CLIENT_ONLY_ACTIONS = VIEW_ONLY_ACTIONS


def check_incremental_default() -> bool:
    """KGC_CHECK_INCREMENTAL=1: check every incremental update against the full abstraction."""
    return os.environ.get("KGC_CHECK_INCREMENTAL", "") not in ("", "0")


class IncrementalAbstraction:
    """abstract_state(world, failover_history) maintained across the steps of one world."""

    def __init__(
        self,
        world: World,
        failover_history: bool | None = None,
        check: bool | None = None,
        rebuild: bool = False,
        fresh: bool = False,
    ) -> None:
        self.world = world
        # `fresh`: the world was just made and nothing has run on it (conform's own worlds):
        # its first state is the one every such world of its constants and coordinator class
        # starts in, taken from _INITIAL once computed (the first update was ~2 % of a trace)
        self.fresh = fresh
        self.rebuild = rebuild  # every update a full abstract_state (the baseline kgc bench pipeline measures)
        self.history = history_kept(world, failover_history)
        self.check = check_incremental_default() if check is None else check
        self._coordinator: dict[str, TlaValue] = {}
        self._coordinator_key: tuple[Any, ...] | None = None
        self._views = [world.clients[c] for c in world.k.clients]
        self._clients = [ModelValue(c) for c in world.k.clients]
        self._index = {c: i for i, c in enumerate(world.k.clients)}
        self._keys: tuple[Any, ...] = ()
        self._gen_key: Any = None
        self.state: dict[str, TlaValue] = {}
        self.changed: frozenset[str] = frozenset(SPEC_VARIABLES)
        self.full_updates = 0  # updates that recomputed the coordinator variables
        self._missing: list[str] = []  # spec variables with no incremental rule
        self._timer_memo: dict[int, tuple[Any, tuple[Any, ...], Record]] = {}  # id(op) -> (op, inputs, record)

    def _counters(self) -> tuple[Any, ...]:
        w = self.world
        return (w._tokens, w.clock.now_ms(), w.offset_ms, w.failovers, w.ids.seen)  # seen: len(ids), no frame

    def update(self, action: str | None = None, observed: bool = False) -> dict[str, TlaValue]:
        """The abstract state after a step of spec action `action` (None: unknown, recompute
        the coordinator variables). `observed`: nothing changed since the world's last
        observe (coordinator_variables). Returns `state`, read-only: the previous dict itself
        when nothing changed, else a new one sharing the unchanged values."""
        w = self.world
        if self.rebuild:
            self.state, self.changed = abstract_state(w, self.history), frozenset(SPEC_VARIABLES)
            return self.state
        group = w.group
        gen_key = group.generation_id if w.k.normalize and group is not None else None
        regen = gen_key != self._gen_key
        keys = tuple(map(_CLIENT_FIELDS, self._views))
        old = self.state
        reuse = action in CLIENT_ONLY_ACTIONS and bool(self._coordinator) and self._counters() == self._coordinator_key
        if reuse and keys == self._keys and not regen and not self._missing and not self.check:
            self.changed = frozenset()
            return old  # the step changed nothing the spec sees
        if not old:
            return self._first(keys, gen_key)
        changed: set[str] = set()
        state = dict(old)  # in SPEC_VARIABLES order; the values replaced below keep it
        if not reuse:
            previous = self._coordinator
            coordinator = self._recompute_coordinator(observed)
            if tuple(previous) == tuple(coordinator):  # the same names in the same order: one C-level pass
                changed.update(compress(coordinator, map(is_not, coordinator.values(), previous.values())))
            else:
                changed.update(n for n, v in coordinator.items() if previous.get(n) is not v)
            state.update(coordinator)
        self._gen_key = gen_key
        if regen:
            for name in CLIENT_VARIABLES:
                state[name] = client_variable(w, name, tuple(k[_FIELD_INDEX[name]] for k in keys))
            changed.update(CLIENT_VARIABLES)
        elif keys != self._keys:
            changed.update(self._update_clients(state, keys))
        self._keys = keys
        if self._missing or self.check:
            self._fill_missing(state, changed, action)
        self.state = state
        self.changed = frozenset(changed)
        return state

    def client_event(self, action: str, client: str) -> dict[str, TlaValue]:
        """update(action) after a VIEW_ONLY_ACTIONS step of `client` (apply_client_event):
        only that client's view moved, so only its fields are read and compared. The
        coordinator was not called, so its variables, counters and current generation are
        as the last update left them; update's checks of them are skipped (check mode still
        compares the result with the full abstract_state)."""
        if self.rebuild or self._missing or not self.state:
            return self.update(action)
        i = self._index[client]
        key, before = _CLIENT_FIELDS(self._views[i]), self._keys[i]
        if key == before:
            self.changed = frozenset()
        else:
            state = dict(self.state)
            self.changed = frozenset(self._replace_entries(state, [(self._clients[i], key, before)]))
            self._keys = (*self._keys[:i], key, *self._keys[i + 1 :])
            self.state = state
        if self.check:
            self._fill_missing(self.state, set(), action)
        return self.state

    def _first(self, keys: tuple[Any, ...], gen_key: Any) -> dict[str, TlaValue]:
        """The first update: every variable computed, in SPEC_VARIABLES order; for a fresh
        world, the memo's (_INITIAL) when it has one. A fresh world has no live op and no
        member id yet, so what skipping its observe leaves undone (world.ops, op_born, the
        ids, per_id_memo) is empty or recomputed by the next update all the same."""
        w = self.world
        memo_key = (id(w.k), type(w.coordinator), self.history) if self.fresh and not self.check else None
        hit = _INITIAL.get(memo_key) if memo_key is not None else None
        if hit is not None and hit[0] is w.k and hit[1] == keys and hit[4] == self._counters() and _untouched(w):
            self._coordinator, self._coordinator_key = hit[2], hit[4]
            self.full_updates += 1
            self._gen_key, self._keys, self._missing = gen_key, keys, []
            self.state, self.changed = hit[3], frozenset(SPEC_VARIABLES)
            return self.state
        state = dict(self._recompute_coordinator())
        for name in CLIENT_VARIABLES:
            state[name] = client_variable(self.world, name, tuple(k[_FIELD_INDEX[name]] for k in keys))
        self._gen_key, self._keys = gen_key, keys
        self._missing = [n for n in SPEC_VARIABLES if n not in state]
        self._fill_missing(state, set(), None)
        self.state = {n: state[n] for n in SPEC_VARIABLES}
        self.changed = frozenset(SPEC_VARIABLES)
        if memo_key is not None and not self._missing and _untouched(w):
            if len(_INITIAL) >= _CLIENT_EVENT_MEMO_LIMIT:
                _INITIAL.clear()
            _INITIAL[memo_key] = (w.k, keys, self._coordinator, self.state, self._coordinator_key)
        return self.state

    def _recompute_coordinator(self, observed: bool = False) -> dict[str, TlaValue]:
        coordinator = coordinator_variables(self.world, self.history, self._timers, observed)
        self._coordinator, self._coordinator_key = coordinator, self._counters()
        self.full_updates += 1
        return coordinator  # kept as `_coordinator`: read-only to callers

    def _timers(self, world: World, ops: list[Any]) -> tuple[Record, ...]:
        """timer_records, each record reused while its op's inputs stay as they were: the
        clock base its deadline is measured from, whether it is stale (and then its group's
        newMemberAdded), its orphan flag, its dur, Normalize's current generation. Everything
        else a record holds is fixed when its op is made (kind, member, delay, deadline,
        remaining, generation) or, once stale, by the unload (World.unloaded_ops/_groups).
        A live heartbeat's dur and orphan flag read the group: they are computed each time,
        the record (the larger cost) is not. Returns the previous tuple itself when every
        record is the same, so that conform skips comparing the timers again."""
        group = world.group
        normalize = world.k.normalize
        base = world.clock.now_ms() if normalize else world.offset_ms
        gen_key = group.generation_id if normalize and group is not None else None
        orphaned = world.orphaned
        memo, fresh = self._timer_memo, {}
        records = []
        for op in ops:
            stale = op.group is not group
            # is_orphan and timer_dur are False and "none" for any op but a heartbeat: not called;
            # a live heartbeat's is_orphan written out, the orphaned paths (mostly none) first
            heartbeat = isinstance(op, DelayedHeartbeat)
            key = (
                base,
                op.deadline_ms(),
                stale,
                (
                    op.group.new_member_added
                    if stale
                    else heartbeat
                    and op.member_id in orphaned
                    and op.member_id not in (group.pending_members if op.is_pending else group.members)  # type: ignore[union-attr]
                ),
                timer_dur(world, op, group) if heartbeat else "none",
                gen_key,
            )
            hit = memo.get(id(op))
            if hit is not None and hit[0] is op and hit[1] == key:
                record = hit[2]
            elif stale:
                record = timer_record(world, op)
            else:
                record = _shared_record(world, op, heartbeat, key)
            fresh[id(op)] = (op, key, record)
            records.append(record)
        self._timer_memo = fresh
        previous = self._coordinator.get("timers")
        if isinstance(previous, tuple) and len(previous) == len(records) and all(map(is_, previous, records)):
            return previous
        return tuple(records)

    def _update_clients(self, state: dict[str, TlaValue], keys: tuple[Any, ...]) -> set[str]:
        """Replace, in each client variable, the entries of the clients whose field of it
        changed (one client per step, mostly: rebuilding the others' values cost more than the
        comparison). Returns the variables replaced."""
        moved = [(client, new, before) for client, new, before in zip(self._clients, keys, self._keys) if new != before]
        return self._replace_entries(state, moved)

    def _replace_entries(self, state: dict[str, TlaValue], moved: list[tuple[ModelValue, Any, Any]]) -> set[str]:
        """The entries of the `moved` clients ((client, fields now, fields before)) replaced
        in each client variable whose field changed; returns the variables replaced."""
        if len(moved) == 1:  # one client (a client event, most steps): its changed fields found at C level
            client, new, before = moved[0]
            names = []
            for j in compress(_FIELD_NUMBERS, map(ne, new, before)):
                name = _CLIENT_NAMES[j]
                state[name] = state[name].updated({client: _CLIENT_VALUE[j](self.world, new[j])})  # type: ignore[union-attr]
                names.append(name)
            return set(names)
        updates: dict[str, dict[ModelValue, TlaValue]] = {}
        # variable by variable, as client_variable goes: the order new ids are registered in
        for j, name in enumerate(CLIENT_VARIABLES):
            for client, new, before in moved:
                if new[j] != before[j]:
                    updates.setdefault(name, {})[client] = _CLIENT_VALUE[j](self.world, new[j])
        for name, entries in updates.items():
            state[name] = state[name].updated(entries)  # type: ignore[union-attr]
        return set(updates)

    def _fill_missing(self, state: dict[str, TlaValue], changed: set[str], action: str | None) -> None:
        """Variables without an incremental rule from a full abstract_state; in check mode,
        the whole state checked against it."""
        if not (self._missing or self.check):
            return
        full = abstract_state(self.world, self.history)
        for n in self._missing:
            state[n] = full[n]
            changed.add(n)
        if self.check:
            differ = [n for n in SPEC_VARIABLES if state[n] != full[n]]
            if differ:
                raise AbstractionError(
                    f"incremental abstraction differs from the full one after {action}: {', '.join(differ)}"
                )


def _untouched(world: World) -> bool:
    """No group, no live op, no step taken: a world as World() made it (see `fresh`)."""
    return world.step == 0 and world.group is None and not world.timer.size()


def _shared_record(world: World, op: Any, heartbeat: bool, key: tuple[Any, ...]) -> Record:
    """timer_record of a live op (not stale) whose record is not in the memo yet (a new op,
    most often: a rescheduled heartbeat), from a memo by content shared by every world: a
    live op's record is a function of its type, member, pending flag, deadline from the
    clock base, delay, remaining, generation (under Normalize, against the current one),
    orphan flag and dur (`key`, _timers') and the unit, and the same records recur step
    after step and trace after trace. A record is memoized once timer_record made it (a
    deadline or delay that is no whole number of units raises there, each time)."""
    content = (
        type(op),
        world.ids.spec(op.member_id) if heartbeat else NO_MEMBER,
        heartbeat and op.is_pending,
        key[1] - key[0],
        key[3],
        key[4],
        key[5],
        op.delay_ms,
        op.remaining_ms if isinstance(op, InitialDelayedJoin) else 0,
        op.generation_id if isinstance(op, DelayedSync) else NO_GEN,
        world.k.ms_per_unit,
    )
    record = _SHARED_RECORDS.get(content)
    if record is None:
        record = timer_record(world, op)
        if len(_SHARED_RECORDS) >= _CLIENT_EVENT_MEMO_LIMIT:
            _SHARED_RECORDS.clear()
        _SHARED_RECORDS[content] = record
    return record


#: (id(constants), coordinator class, history kept) -> (constants, client fields, coordinator
#: variables, state, counters) of a fresh world's first update (IncrementalAbstraction(fresh=True));
#: both dicts are read-only to every user, as `state` and `_coordinator` always are
_INITIAL: dict[tuple[Any, ...], tuple[Any, ...]] = {}

#: a live op's timer record by its content (_shared_record), bounded as the client events' memo
_SHARED_RECORDS: dict[tuple[Any, ...], Record] = {}

_CLIENT_FIELDS = attrgetter(*(field for field, _ in CLIENT_VARIABLES.values()))
_CLIENT_VALUE = tuple(value for _, value in CLIENT_VARIABLES.values())
_FIELD_INDEX = {name: j for j, name in enumerate(CLIENT_VARIABLES)}
_CLIENT_NAMES = tuple(CLIENT_VARIABLES)
_FIELD_NUMBERS = range(len(CLIENT_VARIABLES))
