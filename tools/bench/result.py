"""What every benchmark hands back to `kgc bench`: plain data, printable and JSON-able."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any


class BenchUnavailable(RuntimeError):
    """A benchmark whose subject is not built yet; `kgc bench all` skips it, naming why."""


class BenchCheckFailed(AssertionError):
    """A benchmark's correctness check failed (e.g. purgatories disagree): its numbers are void."""


@dataclass(frozen=True)
class BenchOptions:
    quick: bool = False  # small sizes: checks that everything runs and agrees, no timing claims
    seed: int = 0
    # The cyclic garbage collector during timed passes: "on" (the interpreter's default, the
    # headline), "off", or "both" (each timed pass run twice). Both sides always identical.
    gc: str = "on"
    progress: Callable[[str], None] | None = None
    # A git revision whose harness rates the replay benchmark measures in turns with this tree's
    # (baseline.py): the rate targets as same-run ratios, on a machine whose speed drifts.
    baseline: str | None = None

    def say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)


@dataclass
class BenchResult:
    """One benchmark's outcome.

    `ok` is the benchmark's own correctness verdict (for the purgatory: the three agree), not a
    performance verdict; `rows` are the table, `columns` the keys to show and their order,
    `summary` the headline numbers, `data` anything else worth keeping in the JSON.
    """

    name: str
    ok: bool
    columns: list[str]
    rows: list[dict[str, Any]]
    summary: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # short table headers, by column

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
