"""EventuallyStable on a finite run: the Hypothesis machine's prompt phase.

The spec's `EventuallyStable == Prompt => <>[](gstate = "Stable")` has a premise no finite prefix
shows: every client prompt *from some point on*. The machine makes that point explicit. From
the step its `clients_turn_prompt` rule runs, nothing disturbs the group (no crash, leave,
abandon, rejoin, commit, unload, failed append), the partition is loaded, every append is
acknowledged at once, and every live client sends what the protocol asks of it before time
moves on (a restart, its JoinGroup, the leader's and the followers' SyncGroup, a heartbeat in
every time unit, which is far inside its session); time then moves one spec unit and the
timers due fire. The finite version of the property, with the bounds named after the timeouts
that make them:

within `settle` time units of the first prompt step, the group is Stable in every state of
`hold` consecutive units (a session and a rebalance timeout: every member heartbeats in each
unit). `settle` is SETTLE_ROUNDS_PER_CLIENT * (clients + 2) * (initial delay + rebalance +
session timeout): each departed member's session expires at most once (a rebalance each), and
each client that comes back (a restart, a rejoin refused, a pending member) costs at most one
more rebalance. A group may well leave Stable on the way (a prompt client rejoining with its
old member id is a rebalance), which is why the property asks for a Stable stretch, not for
Stable from the first Stable state on.

A group that a member's prompt heartbeat sends back to rebalancing (the implementation twin of
`stable_heartbeat_rebalance_in_progress`: a Heartbeat in Stable answered REBALANCE_IN_PROGRESS,
so the leader rejoins and the group rebalances for ever) has no such stretch, nor does a
rebalance that never completes. When the premise cannot hold -- a client left without a member
id by the model's id bound (the spec's NoIdLeft) -- nothing is claimed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kgc.conformance.abstraction.constants import GROUP_ID
from kgc.conformance.recorder import RunRecorder, enabled_actions

__all__ = ["PromptPhase", "PromptWindow"]

#: the time units per client (and two more) a prompt group may take to be Stable: a session
#: expiry, a rebalance timeout and an initial delay each (see the module docstring)
SETTLE_ROUNDS_PER_CLIENT = 1

#: a prompt client's one step, by preference: what its phase asks for (never a disturbance)
_PROMPT_STEPS = (
    "ClientRestart",
    "SyncGroupLeader",
    "SyncGroupFollower",
    "JoinGroupKnownMember",
    "JoinGroupPendingMember",
    "JoinGroupUnknownMember",
    "Heartbeat",
)


@dataclass
class PromptWindow:
    """What the prompt phase found, by the index of the state it is about (so the machine
    reports it with that state's other properties)."""

    verdicts: dict[int, str] = field(default_factory=dict)

    def observe(self, index: int) -> dict[str, list[str]]:
        found = self.verdicts.pop(index, None)
        return {"EventuallyStable": [found]} if found else {}


class PromptPhase:
    """Runs the prompt phase on a recorder; `tick(units)` and `acknowledge()` (complete the
    oldest append in flight with NONE) are the machine's own, so its scenario log keeps them;
    `stepped()` runs after every step (the machine's response oracle judges each step on its
    own, as it does at the end of every rule: a reload and the join after it are two steps)."""

    def __init__(
        self,
        rec: RunRecorder,
        tick: Callable[[int], None],
        writes_in_flight: Callable[[], int],
        acknowledge: Callable[[], None],
        stepped: Callable[[], None] = lambda: None,
    ) -> None:
        self.rec = rec
        self.tick = tick
        self.writes_in_flight = writes_in_flight
        self.acknowledge = acknowledge
        self.stepped = stepped
        self.no_claim = ""  # why the phase claimed nothing (the premise failed), if it did not

    def _state(self) -> dict[str, Any]:
        return self.rec.states[-1]

    def _settle_store(self) -> None:
        while self.writes_in_flight() > 0 and self.rec.stopped is None:
            self.acknowledge()
            self.stepped()

    def _round(self) -> bool:
        """Every client takes its prompt step (if it has one), then one time unit passes.
        False when a client needs a member id the model has none left for."""
        options = enabled_actions(self.rec, faults=(), allow_failover=False)
        for c in self.rec.constants.clients:
            if self.rec.stopped is not None:
                return True
            mine = {name: flag for name, client, flag in options if client == c}
            step = next((name for name in _PROMPT_STEPS if name in mine), None)
            if step is None:
                if self.rec.world.clients[c].phase == "Unjoined":
                    # the model's id bound: NoIdLeft, not a prompt client
                    self.no_claim = f"{c} has no member id left to join with"
                    return False
                continue
            self.rec.step(step, c, mine[step])
            self.stepped()
            self._settle_store()
            options = enabled_actions(self.rec, faults=(), allow_failover=False)
        self.tick(1)
        self.stepped()
        self._settle_store()
        return True

    def run(self, window: PromptWindow) -> None:
        """The prompt phase; its verdict, if the property fails, goes into `window`."""
        k = self.rec.constants
        coordinator = self.rec.world.coordinator
        if not coordinator.is_coordinator_for(GROUP_ID):
            self.rec.step("GroupLoad")
            self.stepped()
        self._settle_store()
        start = len(self.rec.states) - 1
        settle = SETTLE_ROUNDS_PER_CLIENT * (len(k.clients) + 2) * (k.initial_delay + k.rebalance + k.session)
        hold = k.session + k.rebalance
        stable_rounds = 0
        left = ""  # the latest step that took the group out of Stable (or kept it out)
        for _ in range(settle + hold):
            before = len(self.rec.states)
            if not self._round():
                return
            if self.rec.stopped is not None:
                self.no_claim = f"the recording stopped: {self.rec.stopped}"
                return
            states = self.rec.states[before:] or self.rec.states[-1:]  # a round may record nothing
            out = [s for s in states if str(s["gstate"]) != "Stable"]
            if out:
                stable_rounds = 0
                left = f"{out[-1]['gstate']} after {out[-1]['lastAction']['name']}"
            else:
                stable_rounds += 1
                if stable_rounds == hold:
                    return
        window.verdicts[len(self.rec.states) - 1] = (
            f"never Stable for {hold} time units in the {settle + hold} after every client turned "
            f"prompt (state {start}); latest: {left}"
        )
