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
  offset, failovers and ids handed out unchanged); any other step recomputes them in full;
- client variables (state.CLIENT_VARIABLES): each is a function of one ClientView field per
  client; the fields of every client are read at once (one attrgetter per client) and a
  variable is rebuilt only when its field of some client changed (compared by value), or when
  the current generation moved under Normalize (World.gen reads it);
- any other spec variable (one added to abstract_state without a rule here): taken from a
  full abstract_state on every step, so a new variable is correct before it is fast.

`changed` holds the variables whose value object is new in the last update: a variable
outside it is the very object of the previous state, which the caller already compared.

Check mode (`check=True`, or KGC_CHECK_INCREMENTAL=1 in the environment): every update also
computes the full abstract_state and raises AbstractionError naming the variables that differ.
tests/conformance/test_incremental_abstraction.py runs it over simulated traces and
Hypothesis-drawn random runs.
"""

from __future__ import annotations

import os
from operator import attrgetter
from typing import Any

from kgc.conformance.abstraction.actions import VIEW_ONLY_ACTIONS
from kgc.conformance.abstraction.constants import SPEC_VARIABLES, AbstractionError
from kgc.conformance.abstraction.state import (
    CLIENT_VARIABLES,
    abstract_state,
    client_variable,
    coordinator_variables,
    history_kept,
)
from kgc.conformance.abstraction.world import World
from kgc.spec.values import TlaValue

__all__ = ["CLIENT_ONLY_ACTIONS", "IncrementalAbstraction", "check_incremental_default"]

CLIENT_ONLY_ACTIONS = VIEW_ONLY_ACTIONS


def check_incremental_default() -> bool:
    """KGC_CHECK_INCREMENTAL=1: check every incremental update against the full abstraction."""
    return os.environ.get("KGC_CHECK_INCREMENTAL", "") not in ("", "0")


class IncrementalAbstraction:
    """abstract_state(world, failover_history) maintained across the steps of one world."""

    def __init__(
        self, world: World, failover_history: bool | None = None, check: bool | None = None, rebuild: bool = False
    ) -> None:
        self.world = world
        self.rebuild = rebuild  # every update a full abstract_state (the baseline kgc bench pipeline measures)
        self.history = history_kept(world, failover_history)
        self.check = check_incremental_default() if check is None else check
        self._coordinator: dict[str, TlaValue] = {}
        self._coordinator_key: tuple[Any, ...] | None = None
        self._raws: dict[str, tuple[Any, ...]] = {}
        self._keys: tuple[Any, ...] = ()
        self._gen_key: Any = None
        self.state: dict[str, TlaValue] = {}
        self.changed: frozenset[str] = frozenset(SPEC_VARIABLES)
        self.full_updates = 0  # updates that recomputed the coordinator variables
        self._missing: list[str] = []  # spec variables with no incremental rule

    def _counters(self) -> tuple[Any, ...]:
        w = self.world
        return (w._tokens, w.clock.now_ms(), w.offset_ms, w.failovers, len(w.ids))

    def update(self, action: str | None = None) -> dict[str, TlaValue]:
        """The abstract state after a step of spec action `action` (None: unknown, recompute
        the coordinator variables). Returns `state`, read-only: the previous dict itself when
        nothing changed, else a new one sharing the unchanged values."""
        w = self.world
        if self.rebuild:
            self.state, self.changed = abstract_state(w, self.history), frozenset(SPEC_VARIABLES)
            return self.state
        group = w.group
        gen_key = group.generation_id if w.k.normalize and group is not None else None
        regen = gen_key != self._gen_key
        keys = tuple(_CLIENT_FIELDS(w.clients[c]) for c in w.k.clients)
        old = self.state
        reuse = action in CLIENT_ONLY_ACTIONS and bool(self._coordinator) and self._counters() == self._coordinator_key
        if reuse and keys == self._keys and not regen and not self._missing and not self.check:
            self.changed = frozenset()
            return old  # the step changed nothing the spec sees
        changed: set[str] = set()
        if reuse:
            state = dict(self._coordinator)
        else:
            coordinator = coordinator_variables(w, self.history)
            previous = self._coordinator
            changed.update(n for n, v in coordinator.items() if previous.get(n) is not v)
            self._coordinator, self._coordinator_key = coordinator, self._counters()
            self.full_updates += 1
            state = dict(coordinator)
        self._gen_key = gen_key
        if keys == self._keys and not regen and old:
            for name in CLIENT_VARIABLES:
                state[name] = old[name]
        else:
            for i, name in enumerate(CLIENT_VARIABLES):
                raws = tuple(k[i] for k in keys)
                if not regen and old and self._raws.get(name) == raws:
                    state[name] = old[name]
                else:
                    state[name] = client_variable(w, name, raws)
                    self._raws[name] = raws
                    changed.add(name)
            self._keys = keys
        missing = self._missing = [n for n in SPEC_VARIABLES if n not in state]
        full = abstract_state(w, self.history) if missing or self.check else None
        if full is not None:
            for n in missing:
                state[n] = full[n]
                changed.add(n)
            if self.check:
                differ = [n for n in SPEC_VARIABLES if state[n] != full[n]]
                if differ:
                    raise AbstractionError(
                        f"incremental abstraction differs from the full one after {action}: {', '.join(differ)}"
                    )
        self.state = {n: state[n] for n in SPEC_VARIABLES}
        self.changed = frozenset(changed) if old else frozenset(SPEC_VARIABLES)
        return self.state


_CLIENT_FIELDS = attrgetter(*(field for field, _ in CLIENT_VARIABLES.values()))
