"""The plain dataclasses a TLC run is parsed into (see tlc_output.ResultBuilder)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from kgc.spec.tlc_messages import Message
from kgc.spec.values import TlaValue

__all__ = ["CheckResult", "Coverage", "Outcome", "SourceLocation", "Trace", "TraceState"]


class Outcome(str, Enum):
    """What a TLC run amounted to; exit_codes.py maps each to kgc's exit code."""

    PASSED = "passed"
    INVARIANT_VIOLATED = "invariant_violated"
    ACTION_PROPERTY_VIOLATED = "action_property_violated"
    PROPERTY_VIOLATED_INITIALLY = "property_violated_initially"
    ASSERTION_FAILED = "assertion_failed"
    DEADLOCK = "deadlock"
    LIVENESS_VIOLATED = "liveness_violated"
    NO_INITIAL_STATES = "no_initial_states"
    PARSE_ERROR = "parse_error"
    CONFIG_ERROR = "config_error"
    ASSUMPTION_FAILED = "assumption_failed"
    EVALUATION_ERROR = "evaluation_error"
    CRASHED = "crashed"
    TIMEOUT = "timeout"


@dataclass(frozen=True)
class SourceLocation:
    """A place in a spec or config file, as one `file:line:column` string for error messages."""

    file: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        parts = [self.file] + [str(p) for p in (self.line, self.column) if p is not None]
        return ":".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "column": self.column}


@dataclass
class TraceState:
    """One state of a counterexample. `index` is TLC's (1-based); `action` is the name TLC
    gives the step (the defining operator, or "Initial predicate"); TLC 2.15 never prints
    action parameters, so specs that need them keep a `lastAction` variable."""

    index: int
    action: str
    location: str | None
    values: dict[str, TlaValue]
    raw: str = ""


@dataclass
class Trace:
    """A counterexample. A lasso ends by going back to state `loop_to` (1-based, via
    `loop_action`); a stuttering trace ends by repeating its last state forever."""

    states: list[TraceState] = field(default_factory=list)
    loop_to: int | None = None
    loop_action: str | None = None
    stuttering: bool = False

    @property
    def variables(self) -> list[str]:
        names: list[str] = []
        for state in self.states:
            names.extend(n for n in state.values if n not in names)
        return names


@dataclass(frozen=True)
class Coverage:
    """One line of TLC's per-action coverage: how many distinct and generated states it made."""

    action: str
    location: str | None
    distinct: int
    generated: int


@dataclass
class CheckResult:
    """Everything kgc knows about a TLC run, filled in while the output streams."""

    outcome: Outcome | None = None
    violated: str | None = None
    phase: str = "starting"
    tlc_version: str | None = None
    initial_states: int | None = None
    states_generated: int | None = None
    distinct_states: int | None = None
    queue: int | None = None
    depth: int | None = None
    trace: Trace | None = None
    error: str | None = None
    error_location: SourceLocation | None = None
    coverage: list[Coverage] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    loose_text: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    tlc_exit_code: int | None = None
    timed_out: bool = False
    wall_seconds: float | None = None

    @property
    def error_line(self) -> str | None:
        """The error as one line, prefixed with the file and place when TLC gave one."""
        if self.error is None:
            return None
        text = " ".join(self.error.split())
        return f"{self.error_location}: {text}" if self.error_location else text
