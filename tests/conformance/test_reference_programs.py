"""Random client programs and spec traces as scenarios for `kgc diff` (conformance/reference/programs.py):
made on kgc's coordinator, with its member ids replaced by the joins that gave them."""

from __future__ import annotations

from kgc.conformance.reference.programs import KAFKA_NEW_MEMBER_JOIN_TIMEOUT_MS, kafka_clock, random_program
from kgc.conformance.replay import World
from kgc.conformance.scenario import Commit, Heartbeat, Join, Leave, Ref, Sync, Tick
from kgc.conformance.stateful import DEFAULT_CONSTANTS


def test_a_program_is_the_same_for_the_same_seed_and_names_members_by_their_join() -> None:
    a, b = random_program(5), random_program(5)
    assert a.steps == b.steps
    assert a.steps != random_program(6).steps
    members = [s.member for s in a.steps if isinstance(s, (Join, Sync, Heartbeat, Leave, Commit))]
    assert any(isinstance(m, Ref) for m in members)
    assert all(isinstance(m, Ref) or m == "" for m in members), members
    assert any(isinstance(s, Tick) for s in a.steps)


def test_a_program_replays_on_kgc_with_every_reference_answered() -> None:
    """The references resolve on a fresh kgc coordinator (a join referred to was answered before)."""
    for seed in range(10):
        scenario = random_program(seed)
        world = World(scenario)
        for index, step in enumerate(scenario.steps):
            world.send(index, step)
        assert world.responses


def test_the_clock_unit_makes_new_member_timeout_kafkas() -> None:
    k = kafka_clock(DEFAULT_CONSTANTS)
    assert k.ms(k.new_member_timeout) == KAFKA_NEW_MEMBER_JOIN_TIMEOUT_MS
