"""The tie between the Z3 encoding and the code: random runs of the real coordinator
(VirtualClock, SystemTimer, GroupCoordinator: joins, syncs, heartbeats, leaves, timer
firings, unload/load) are mapped through conformance/proofs/abstraction.py, and Z3 must accept
every (before, after) pair as stuttering or a short chain of encoded actions; every state
reached must satisfy the inductive invariant. If the implementation and the encoding drift
apart, a step stops being accepted and this test fails with the two states and their diff.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from kgc.conformance.proofs.abstraction import AbstractState, ClientViews, abstract, accepts, violated_invariants
from kgc.conformance.proofs.model import GROUP_STATES
from kgc.impl.clock import VirtualClock
from kgc.impl.coordinator import GroupConfig, GroupCoordinator, LeaveMemberIdentity
from kgc.impl.store import InMemoryGroupStore
from kgc.impl.timer import SystemTimer

GROUP = "g"
EXAMPLES = int(os.environ.get("KGC_TIE_EXAMPLES", "150"))
DERANDOMIZE = os.environ.get("KGC_TIE_RANDOM", "") == ""  # CI: the same seeds every run
# A fixed seed rather than Hypothesis' derandomize, whose seed is a digest of the test's source:
# reformatting the file changed which examples ran, and the coverage assertions with them.
FIXED_SEED = 2


def fixed(test: Any) -> Any:
    return seed(FIXED_SEED)(test) if DERANDOMIZE else test


PROTOCOLS = ([("range", "")], [("range", "v2")], [("range", ""), ("roundrobin", "")], [("roundrobin", "")])
SESSION_TIMEOUTS = (50, 200, 1000)
REBALANCE_TIMEOUTS = (20, 50, 200)


@dataclass
class Harness:
    """The real coordinator plus what its clients learnt (the observer is the ClientViews)."""

    seed: int
    initial_delay_ms: int
    views: ClientViews = field(init=False)
    ids: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.clock = VirtualClock()
        self.timer = SystemTimer(self.clock)
        self.store = InMemoryGroupStore()
        self.views = ClientViews(GROUP)
        config = GroupConfig(
            min_session_timeout_ms=10, max_session_timeout_ms=600000, initial_rebalance_delay_ms=self.initial_delay_ms
        )
        self.coord = GroupCoordinator(
            config, self.clock, self.timer, self.store, member_id_seed=self.seed, observer=self.views
        )

    def state(self) -> AbstractState:
        return abstract(self.coord.group(GROUP), self.store.load_group(GROUP), self.views)

    def _learn(self, result: Any) -> None:
        if getattr(result, "member_id", "") and result.member_id not in self.ids:
            self.ids.append(result.member_id)

    def _who(self, i: int) -> str | None:
        """Mostly a current member or pending id (index i among them), sometimes any id ever
        handed out (a stale client), so requests mostly reach the protocol's interesting paths."""
        group = self.coord.group(GROUP)
        live = sorted(set(group.members) | group.pending_members) if group is not None else []
        pool = live if live and i % 5 != 4 else self.ids
        return pool[(i // 5) % len(pool)] if pool else None

    def _generation(self, member: str, choice: int) -> int:
        group = self.coord.group(GROUP)
        current = group.generation_id if group is not None else 0
        known = self.views.known_generation.get(member, -1)
        return (known, current, known - 1, current + 1)[choice % 4]

    def run(self, op: tuple) -> str:
        """Apply one request or timer firing; returns a short description of it."""
        self.views.begin_step()
        try:
            return self._apply(op)
        finally:
            self.views.end_step()
            assert not self.coord.internal_errors, self.coord.internal_errors
            assert self.coord.duplicate_answers == 0

    def _apply(self, op: tuple) -> str:
        kind = op[0]
        who = self._who(op[1]) if len(op) > 1 and kind not in ("join_new",) else None
        if kind in ("join", "sync", "heartbeat", "leave") and who is None:
            kind = "fire"
        if kind == "join_new":
            _, require_known, proto, session, rebalance = op
            self.coord.handle_join_group(
                GROUP,
                "",
                None,
                require_known,
                "c",
                "h",
                rebalance,
                session,
                "consumer",
                list(PROTOCOLS[proto]),
                self._learn,
            )
            return f"join(new, require_known={require_known}, protocols={proto})"
        if kind == "join":
            _, _, proto, session, rebalance = op
            self.coord.handle_join_group(
                GROUP, who, None, False, "c", "h", rebalance, session, "consumer", list(PROTOCOLS[proto]), self._learn
            )
            return f"join({who}, protocols={proto})"
        if kind == "sync":
            group = self.coord.group(GROUP)
            if group is not None and group.leader_id and op[1] % 2 == 0:
                who = group.leader_id  # the leader's SyncGroup is what moves a rebalance on
            gen = self._generation(who, op[2])
            group = self.coord.group(GROUP)
            assignment = {m: f"a-{m[-4:]}" for m in (group.members if group is not None else {})}
            self.coord.handle_sync_group(GROUP, gen, who, None, None, None, assignment, lambda r: None)
            return f"sync({who}, generation={gen})"
        if kind == "heartbeat":
            gen = self._generation(who, op[2])
            self.coord.handle_heartbeat(GROUP, who, None, gen, lambda r: None)
            return f"heartbeat({who}, generation={gen})"
        if kind == "leave":
            self.coord.handle_leave_group(GROUP, [LeaveMemberIdentity(who)], lambda r: None)
            return f"leave({who})"
        if kind == "fire":
            before = self.clock.now_ms()
            fired = self.timer.fire_next()
            return f"fire(t={before}->{self.clock.now_ms()}, fired={fired})"
        if kind == "unload":
            self.coord.on_group_unloaded(GROUP)
            return "unload"
        if kind == "load":
            self.coord.on_group_loaded(GROUP)
            return "load"
        raise ValueError(op)


# Op kinds and their weights: requests that move the group forward come up more often than an
# unload, which throws the group away until a load.
KINDS = {"join_new": 5, "join": 6, "sync": 8, "heartbeat": 2, "leave": 2, "fire": 6, "unload": 1, "load": 1}


def random_op(rng: random.Random, owned: bool = True) -> tuple:
    """One request or timer firing, drawn from a seeded Random (Hypothesis draws the seeds:
    its own generation favours tiny values, which here would mostly mean no-ops). A group that
    was unloaded is loaded again soon, as after a real failover."""
    if not owned and rng.random() < 0.5:
        return ("load",)
    kind = rng.choices(list(KINDS), weights=list(KINDS.values()))[0]
    who = rng.randrange(40)
    if kind == "join_new":
        return (
            kind,
            rng.random() < 0.3,
            rng.choice((0, 0, 1, 2, 3)),
            rng.choice(SESSION_TIMEOUTS),
            rng.choice(REBALANCE_TIMEOUTS),
        )
    if kind == "join":
        return (kind, who, rng.choice((0, 0, 0, 1, 2, 3)), rng.choice(SESSION_TIMEOUTS), rng.choice(REBALANCE_TIMEOUTS))
    if kind == "sync":
        return (kind, who, rng.choice((0, 0, 0, 1, 2, 3)))
    if kind == "heartbeat":
        return (kind, who, rng.choice((0, 1, 2)))
    if kind == "leave":
        return (kind, who)
    return (kind,)


def _explain(before: AbstractState, after: AbstractState, what: str, trail: list[str]) -> str:
    diff = "\n".join(f"  {k}: {a!r} -> {b!r}" for k, (a, b) in before.diff(after).items())
    return (
        f"the implementation took a step the Z3 encoding does not allow: {what}\n"
        f"after: {' ; '.join(trail[-12:])}\nbefore: {before}\nchanged:\n{diff}"
    )


def test_every_implementation_step_is_a_step_of_the_encoding() -> None:
    seen: Counter[str] = Counter()
    states: Counter[str] = Counter()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @fixed
    @given(seed=st.integers(0, 2**32 - 1), length=st.integers(3, 50), initial_delay=st.sampled_from((0, 30)))
    def run(seed: int, length: int, initial_delay: int) -> None:
        rng = random.Random(seed)
        h = Harness(seed, initial_delay)
        trail: list[str] = []
        for _ in range(length):
            trail.append(h.run(random_op(rng, h.views.owned)))
        before = h.state()
        assert violated_invariants(before) == [], f"{before} after {trail}"
        what = h.run(random_op(rng, h.views.owned))
        after = h.state()
        verdict = accepts(before, after)
        assert verdict.accepted, _explain(before, after, what, trail)
        assert violated_invariants(after) == [], f"{after} after {trail + [what]}"
        seen.update(verdict.actions or ("(stutter)",))
        states[after.group_state] += 1

    run()
    print("encoded actions matched:", dict(seen), "states reached:", dict(states))
    # The random runs must reach the interesting parts of the protocol, or the test proves little.
    must = {
        "JoinGroupUnknownMember",
        "JoinGroupKnownMember",
        "SyncGroupLeader",
        "SyncGroupFollower",
        "LeaveGroup",
        "GroupUnload",
        "GroupLoad",
    }
    # Only the last step of each run is checked here, so a rarer action may not come last in
    # any of them: test_whole_runs_step_by_step requires every one of them over whole runs.
    assert len(must & set(seen)) >= len(must) - 2, f"never matched {must - set(seen)}; matched {dict(seen)}"
    assert {"CompleteJoin", "RebalanceTimeout"} & set(seen)
    assert {"PreparingRebalance", "CompletingRebalance", "Stable"} <= set(states)


def test_whole_runs_step_by_step() -> None:
    """Fewer, longer runs where every step is checked, not only the last one."""
    seen: Counter[str] = Counter()

    @settings(
        max_examples=max(5, EXAMPLES // 10),
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @fixed
    @given(seed=st.integers(0, 2**32 - 1), length=st.integers(10, 50))
    def run(seed: int, length: int) -> None:
        rng = random.Random(seed)
        h = Harness(seed, rng.choice((0, 30)))
        trail: list[str] = []
        before = h.state()
        for _ in range(length):
            what = h.run(random_op(rng, h.views.owned))
            trail.append(what)
            after = h.state()
            verdict = accepts(before, after)
            assert verdict.accepted, _explain(before, after, what, trail)
            seen.update(verdict.actions)
            before = after

    run()
    must = {
        "JoinGroupUnknownMember",
        "JoinGroupKnownMember",
        "SyncGroupLeader",
        "SyncGroupFollower",
        "LeaveGroup",
        "GroupUnload",
        "GroupLoad",
        "CompleteJoin",
    }
    assert must <= set(seen), f"whole runs never matched {must - set(seen)}; matched {dict(seen)}"


@pytest.mark.parametrize("bad", ["two-leaders-named", "generation-skipped", "sync-ok-while-preparing"])
def test_the_tie_rejects_steps_the_protocol_does_not_take(bad: str) -> None:
    """Real states, tampered: the check must be able to fail."""
    h = Harness(7, 0)
    for op in [("join_new", False, 0, 50, 50), ("join_new", False, 0, 50, 50), ("fire",)]:
        h.run(op)
    before = h.state()
    assert before.group_state in GROUP_STATES
    h.run(("fire",)) if before.group_state == "PreparingRebalance" else None
    before = h.state()
    assert before.group_state == "CompletingRebalance", before
    from dataclasses import replace

    other = next(m for m in before.members if m != before.leader)
    if bad == "two-leaders-named":
        after = replace(before, named=before.named | {(before.epoch, before.generation, other)})
    elif bad == "generation-skipped":
        after = replace(before, generation=before.generation + 2)
    else:
        after = replace(before, group_state="PreparingRebalance", synced_in_state=True, pending_sync=frozenset())
    assert not accepts(before, after).accepted


def test_a_generation_number_is_named_twice_across_a_failover() -> None:
    """Why the encoding's leader history is per coordinator incarnation (epoch): Kafka stores
    the group only when the leader's SyncGroup completes a rebalance, so after unload/load the
    group is back at its last stored generation and hands the next one out again, here with
    another leader. Per (epoch, generation) there is still one leader."""
    h = Harness(11, 0)
    results: dict[str, Any] = {}

    def join(key: str, member: str = "") -> None:
        h.views.begin_step()
        h.coord.handle_join_group(
            GROUP,
            member,
            None,
            False,
            key,
            "h",
            100,
            1000,
            "consumer",
            [("range", "")],
            lambda r: results.__setitem__(key, r),
        )
        h.views.end_step()

    def step(fn: Any) -> None:
        h.views.begin_step()
        fn()
        h.views.end_step()

    join("a")
    join("b")
    while "a" not in results:  # InitialDelayedJoin (maybe extended)
        step(h.timer.fire_next)
    a, b = results["a"].member_id, results["b"].member_id
    assert results["a"].generation_id == 1 and results["a"].leader_id == a
    step(lambda: h.coord.handle_sync_group(GROUP, 1, a, None, None, None, {a: "x", b: "y"}, lambda r: None))
    assert h.coord.group(GROUP).state.value == "Stable" and h.store.load_group(GROUP).generation_id == 1
    join("a2", a)  # the leader rejoins: rebalance
    join("b2", b)  # everyone rejoined: generation 2, leader a
    assert (results["a2"].generation_id, results["a2"].leader_id) == (2, a)
    step(lambda: h.coord.on_group_unloaded(GROUP))
    step(lambda: h.coord.on_group_loaded(GROUP))  # back at the stored generation 1
    assert h.coord.group(GROUP).generation_id == 1
    step(lambda: h.coord.handle_leave_group(GROUP, [LeaveMemberIdentity(a)], lambda r: None))
    join("b3", b)  # generation 2 again, leader b
    assert (results["b3"].generation_id, results["b3"].leader_id) == (2, b)
    assert {(0, 2, a), (1, 2, b)} <= h.views.named
    assert h.views.believes_leader == {a, b}  # both clients believe they lead "generation 2"
    assert violated_invariants(h.state()) == []
