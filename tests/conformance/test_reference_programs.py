"""Random client programs and spec traces as scenarios for `kgc diff` (conformance/reference/programs.py):
made on kgc's coordinator, with its member ids replaced by the joins that gave them."""

from __future__ import annotations

from kgc.conformance.reference.program_steps import Advance, Expire, send_on_kgc
from kgc.conformance.reference.programs import KAFKA_NEW_MEMBER_JOIN_TIMEOUT_MS, kafka_clock, random_program
from kgc.conformance.replay import World
from kgc.conformance.scenario import Commit, Heartbeat, Join, Leave, Ref, Sync
from kgc.conformance.stateful import DEFAULT_CONSTANTS


def test_a_program_is_the_same_for_the_same_seed_and_names_members_by_their_join() -> None:
    a, b = random_program(5), random_program(5)
    assert a.steps == b.steps
    assert a.steps != random_program(6).steps
    members = [s.member for s in a.steps if isinstance(s, (Join, Sync, Heartbeat, Leave, Commit))]
    members += [s.member for s in a.steps if isinstance(s, Expire) and s.member is not None]
    assert any(isinstance(m, Ref) for m in members)
    assert all(isinstance(m, Ref) or m == "" for m in members), members
    assert any(isinstance(s, Advance) for s in a.steps)
    assert {s.operation for s in a.steps if isinstance(s, Expire)} <= {"DelayedJoin", "DelayedHeartbeat", "DelayedSync"}


def test_a_program_replays_on_kgc_with_every_reference_answered() -> None:
    """The references resolve on a fresh kgc coordinator (a join referred to was answered before),
    and every logged expiry names an operation due at that step."""
    expiries = 0
    for seed in range(10):
        scenario = random_program(seed)
        world = World(scenario)
        for index, step in enumerate(scenario.steps):
            fired = send_on_kgc(world, index, step)
            assert fired is (True if isinstance(step, Expire) else None), (seed, index, step)
            expiries += isinstance(step, Expire)
        assert world.responses
    assert expiries > 10


def test_an_expiry_not_due_is_reported_not_run() -> None:
    """Expire runs only an operation due now: the same heartbeat expiry one millisecond early,
    or for another member, is not due, and the group keeps the member."""
    scenario = random_program(0)
    first = next(i for i, s in enumerate(scenario.steps) if isinstance(s, Expire) and s.operation == "DelayedHeartbeat")
    before, expiry = scenario.steps[first - 1], scenario.steps[first]
    assert isinstance(before, Advance) and before.ms > 1
    world = World(scenario)
    for index, step in enumerate(scenario.steps[: first - 1]):
        send_on_kgc(world, index, step)
    send_on_kgc(world, first - 1, Advance(before.ms - 1))
    members = world.group_view("g")["members"]
    assert send_on_kgc(world, first, expiry) is False
    send_on_kgc(world, first, Advance(1))
    assert send_on_kgc(world, first, Expire("DelayedHeartbeat", "g", "client-not-a-member")) is False
    assert world.group_view("g")["members"] == members
    assert send_on_kgc(world, first, expiry) is True
    assert len(world.group_view("g")["members"]) < len(members)


def test_the_clock_unit_makes_new_member_timeout_kafkas() -> None:
    k = kafka_clock(DEFAULT_CONSTANTS)
    assert k.ms(k.new_member_timeout) == KAFKA_NEW_MEMBER_JOIN_TIMEOUT_MS
