"""SeededDraws gives exactly random.Random(seed)'s draws, whatever the readers do."""

from __future__ import annotations

import random

import pytest

from kgc.impl import seeded_draws
from kgc.impl.clock import VirtualClock
from kgc.impl.coordinator import GroupConfig, GroupCoordinator
from kgc.impl.seeded_draws import SeededDraws
from kgc.impl.timer import SystemTimer


def test_interleaved_readers_of_one_seed_each_see_a_fresh_randoms_draws() -> None:
    readers = [SeededDraws(7) for _ in range(3)]
    twins = [random.Random(7) for _ in range(3)]
    for step in range(300):
        i = (step * 7 + step // 5) % 3  # uneven interleaving: the table is extended by any reader
        assert readers[i].getrandbits(128) == twins[i].getrandbits(128)


def test_other_sizes_and_long_runs_go_on_from_the_same_position() -> None:
    mixed, twin = SeededDraws(3), random.Random(3)
    for _ in range(5):
        assert mixed.getrandbits(128) == twin.getrandbits(128)
    assert mixed.getrandbits(32) == twin.getrandbits(32)  # off the table, at draw 5
    assert [mixed.getrandbits(128) for _ in range(20)] == [twin.getrandbits(128) for _ in range(20)]
    long, twin = SeededDraws(4), random.Random(4)
    n = seeded_draws.MAX_SHARED + 10  # past the shared table
    assert [long.getrandbits(128) for _ in range(n)] == [twin.getrandbits(128) for _ in range(n)]


def test_a_restarted_table_and_a_non_int_seed_still_give_the_same_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seeded_draws, "MAX_SEEDS", 2)
    early, twin = SeededDraws(11), random.Random(11)
    assert early.getrandbits(128) == twin.getrandbits(128)
    for seed in (12, 13, 14):  # the table starts again: `early`'s list is no longer the shared one
        SeededDraws(seed).getrandbits(128)
    assert [early.getrandbits(128) for _ in range(40)] == [twin.getrandbits(128) for _ in range(40)]
    text, twin_text = SeededDraws("a seed"), random.Random("a seed")  # type: ignore[arg-type]
    assert [text.getrandbits(128) for _ in range(3)] == [twin_text.getrandbits(128) for _ in range(3)]


def test_two_coordinators_with_one_seed_name_members_alike() -> None:
    """Replays stay the same: each coordinator's ids are random.Random(seed)'s, not the next ones."""
    ids = []
    for _ in range(2):
        clock = VirtualClock(0)
        coord = GroupCoordinator(GroupConfig(initial_rebalance_delay_ms=0), clock, SystemTimer(clock), member_id_seed=5)
        got: list[str] = []

        def answer(r: object, got: list[str] = got) -> None:
            got.append(r.member_id)  # type: ignore[attr-defined]

        for n in range(3):
            # require_known_member: answered at once, MEMBER_ID_REQUIRED with the new id
            coord.handle_join_group(
                "g",
                "",
                None,
                True,
                f"c{n}",
                "h",
                10_000,
                10_000,
                "consumer",
                [("range", "")],
                answer,
            )
        ids.append(got)
    twin = random.Random(5)
    from kgc.impl.group import GroupMetadata

    assert ids[0] == ids[1] == [GroupMetadata.generate_member_id(f"c{n}", None, twin) for n in range(3)]
