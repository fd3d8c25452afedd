"""The coordinator's own fault counters as findings of every detector.

GroupCoordinator never raises to its caller: an exception inside a handler or a delayed
operation is caught, the request (if still unanswered) gets UNKNOWN_SERVER_ERROR, and the
traceback goes to `internal_errors`; a callback answered twice is dropped and counted in
`duplicate_answers`. That keeps a broker alive, but it also hides the fault from any detector
that looks only at states and responses: an exception swallowed after the member was already
removed leaves a state the spec allows. So replay, conform, validate (the recorder), the
Hypothesis machine and the pipeline all read these counters after every step and report the
first fault as the step's failure.
"""

from __future__ import annotations

from typing import Any

__all__ = ["fault_count", "new_faults"]


def fault_count(coordinator: Any) -> int:
    """Internal errors plus duplicate answers recorded so far (0 for an object without them)."""
    return len(getattr(coordinator, "internal_errors", ())) + int(getattr(coordinator, "duplicate_answers", 0))


def _one_line(text: str) -> str:
    """'where: Type: message' from `where: <traceback>` (the traceback's last line)."""
    where, _, trace = text.partition(": ")
    lines = [line.strip() for line in trace.strip().splitlines() if line.strip()]
    return f"internal error in {where}: {lines[-1] if lines else trace.strip()}"


def new_faults(coordinator: Any, seen: int) -> list[str]:
    """One line per fault recorded after the first `seen` (as counted by fault_count)."""
    errors = getattr(coordinator, "internal_errors", ())
    duplicates = int(getattr(coordinator, "duplicate_answers", 0))
    if len(errors) + duplicates <= seen:
        return []  # the common case, after every step of a conform run: nothing new
    lines = [_one_line(e) for e in errors] + [
        f"a request answered twice (duplicate answer {n + 1})" for n in range(duplicates)
    ]
    return lines[seen:]
