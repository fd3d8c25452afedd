"""The one driver: a coordinator on a VirtualClock with its SystemTimer and group store, and the
listeners that observe it. Every harness that runs the implementation builds it through here
(replay's scenario steps, the spec-action world of conform / validate / fuzz, the recorder),
so they all run the coordinator the same way and observe it through one fan-out.

Listeners implement only the coordinator events they need (on_request, on_response, on_timer,
on_transition; kgc.impl.coordinator.CoordinatorObserver); the fan hands each event to every
listener in the order given, skipping those that lack the method.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kgc.impl.clock import VirtualClock
from kgc.impl.coordinator import GroupConfig, GroupCoordinator
from kgc.impl.group import GroupState
from kgc.impl.store import GroupStore
from kgc.impl.timer import SystemTimer

__all__ = ["Driver", "ObserverFan"]


class ObserverFan:
    """The coordinator's one observer: every event to every listener, in order.

    Each hook's listeners are looked up once, here: the fan sees several events a step, and a
    getattr per listener per event was a visible part of a conform step. `listeners` is fixed
    from construction on (a tuple), so the lookups cannot go stale."""

    def __init__(self, listeners: Iterable[Any] = ()) -> None:
        self.listeners: tuple[Any, ...] = tuple(x for x in listeners if x is not None)
        self._request = self._each("on_request")
        self._response = self._each("on_response")
        self._timer = self._each("on_timer")
        self._transition = self._each("on_transition")

    def _each(self, hook: str) -> tuple[Any, ...]:
        return tuple(f for x in self.listeners if (f := getattr(x, hook, None)) is not None)

    def on_request(self, kind: str, group_id: str, args: dict[str, Any]) -> None:
        for f in self._request:
            f(kind, group_id, args)

    def on_response(self, kind: str, group_id: str, result: object) -> None:
        for f in self._response:
            f(kind, group_id, result)

    def on_timer(self, kind: str, group_id: str, member_id: str | None) -> None:
        for f in self._timer:
            f(kind, group_id, member_id)

    def on_transition(self, group_id: str, old: GroupState, new: GroupState) -> None:
        for f in self._transition:
            f(group_id, old, new)


class Driver:
    """A coordinator under test: VirtualClock from 0, SystemTimer, the given store (the
    coordinator's in-memory one when None), observed by `listeners`."""

    def __init__(
        self,
        config: GroupConfig,
        coordinator_class: type[GroupCoordinator] | None = None,
        *,
        store: GroupStore | None = None,
        member_id_seed: int = 0,
        listeners: Iterable[Any] = (),
    ) -> None:
        self.clock = VirtualClock(0)
        self.timer = SystemTimer(self.clock)
        self.observers = ObserverFan(listeners)
        cls = coordinator_class or GroupCoordinator
        # No listener, no observer: the coordinator then skips its notifications altogether.
        observer = self.observers if self.observers.listeners else None
        self.coordinator = cls(
            config, self.clock, self.timer, store=store, member_id_seed=member_id_seed, observer=observer
        )
        # the timer the coordinator runs on (a seeded bug may bring its own, seeded_timer)
        self.timer = self.coordinator.timer
