"""The member-id draws of `random.Random(seed)`, shared by every coordinator with that seed.

Why: replay builds one coordinator per scenario, all with the same member-id seed, and seeding
a Mersenne Twister (`random.Random(0)`: 36k instructions, valgrind) cost ~2.1k instructions of
each replayed scenario step (~4.6 %), while a scenario draws only two or three member ids. So
the 128-bit draws of a seed are made once per process, in order, and each coordinator reads
them from its own position: its ids, and so every replay, are those a fresh
`random.Random(seed)` of its own would give.
"""

from __future__ import annotations

import random
from itertools import repeat
from typing import Protocol

__all__ = ["SeededDraws", "UuidDraws"]


class UuidDraws(Protocol):
    """Where member ids' uuids come from: a `random.Random`, or a SeededDraws."""

    def getrandbits(self, k: int, /) -> int: ...


#: Draws kept per seed; a coordinator that draws more goes on with a Random of its own.
MAX_SHARED = 4096
#: Seeds kept; when more are asked for, the table starts again (fuzz runs may use many seeds).
MAX_SEEDS = 64
#: Draws made at once: one C call (list.extend over map), so no thread switch splits it.
CHUNK = 16
#: The draw size the table holds (a uuid4's 128 bits).
BITS = 128

#: seed -> (a Random that has made exactly len(draws) draws, the draws)
_SHARED: dict[int, tuple[random.Random, list[int]]] = {}


def _shared(seed: int) -> list[int]:
    hit = _SHARED.get(seed)
    if hit is None:
        if len(_SHARED) >= MAX_SEEDS:
            _SHARED.clear()
        hit = _SHARED[seed] = (random.Random(seed), [])
    return hit[1]


class SeededDraws:
    """What the coordinator asks of `random.Random(seed)` -- `getrandbits` -- answered with the
    same results, in the same order, as a `random.Random(seed)` of its own would give."""

    __slots__ = ("_seed", "_draws", "_n", "_own")

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._n = 0  # draws read from the shared table so far
        # a Random of this reader's own, once off the table (another size asked, past
        # MAX_SHARED, the table started again, or a seed that is not an int)
        self._own: random.Random | None = None
        self._draws: list[int] = _shared(seed) if type(seed) is int else []
        if type(seed) is not int:
            self._own = random.Random(seed)

    def getrandbits(self, k: int) -> int:
        """`random.Random(seed).getrandbits(k)` after the draws made so far."""
        n = self._n
        if k == BITS and self._own is None:
            draws = self._draws
            if n < len(draws):
                self._n = n + 1
                return draws[n]
            hit = _SHARED.get(self._seed)
            if n < MAX_SHARED and hit is not None and hit[1] is draws:
                source = hit[0]
                while len(draws) <= n:
                    draws.extend(map(source.getrandbits, repeat(BITS, CHUNK)))
                self._n = n + 1
                return draws[n]
        return self._private().getrandbits(k)

    def _private(self) -> random.Random:
        """A Random of this reader's own, at the position of the draws read so far."""
        own = self._own
        if own is None:
            own = self._own = random.Random(self._seed)
            for _ in range(self._n):
                own.getrandbits(BITS)
        return own
