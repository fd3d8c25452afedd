"""A counterexample as a person reads it: each step's action and only what it changed.

Kafka group state is a few large records and maps; printing whole states buries the one
field a step touched. So changes are found per record field and per function key
(`groups[g1].state: "Empty" -> "PreparingRebalance"`), and whole values are printed only for
the initial state and for sets and sequences.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kgc.spec.tlc_result import Trace
from kgc.spec.values import Record, TlaFunction, TlaValue, format_value

__all__ = ["Change", "render_trace", "short_location", "state_changes"]


@dataclass(frozen=True)
class Change:
    """`old`/`new` are TLA+ text; None means the key is absent on that side."""

    path: str
    old: str | None
    new: str | None

    def __str__(self) -> str:
        if self.old is None:
            return f"{self.path}: added {self.new}"
        if self.new is None:
            return f"{self.path}: removed (was {self.old})"
        return f"{self.path}: {self.old} -> {self.new}"


def _diff(path: str, old: TlaValue, new: TlaValue, out: list[Change]) -> None:
    if old == new:
        return
    if isinstance(old, TlaFunction) and isinstance(new, TlaFunction):
        for key in list(old) + [k for k in new if k not in old]:
            sub = (
                f"{path}.{key}" if isinstance(old, Record) and isinstance(key, str) else f"{path}[{format_value(key)}]"
            )
            if key not in new:
                out.append(Change(sub, format_value(old[key]), None))
            elif key not in old:
                out.append(Change(sub, None, format_value(new[key])))
            else:
                _diff(sub, old[key], new[key], out)
        return
    out.append(Change(path, format_value(old), format_value(new)))


def state_changes(old: Mapping[str, TlaValue], new: Mapping[str, TlaValue]) -> list[Change]:
    changes: list[Change] = []
    for name in list(old) + [n for n in new if n not in old]:
        if name not in new:
            changes.append(Change(name, format_value(old[name]), None))
        elif name not in old:
            changes.append(Change(name, None, format_value(new[name])))
        else:
            _diff(name, old[name], new[name], changes)
    return changes


_LOCATION = re.compile(r"line (\d+), col (\d+) to line \d+, col \d+ of module (\S+)")


def short_location(location: str) -> str:
    """TLC's "line 26, col 5 to line 40, col 52 of module M" as "M.tla:26:5"."""
    match = _LOCATION.fullmatch(location.strip())
    return f"{match.group(3)}.tla:{match.group(1)}:{match.group(2)}" if match else location


def render_trace(trace: Trace) -> list[str]:
    """Plain lines (no markup) so the same text can go to a terminal, a log or a test."""
    lines: list[str] = []
    previous: Mapping[str, TlaValue] | None = None
    for state in trace.states:
        where = f"  ({short_location(state.location)})" if state.location else ""
        lines.append(f"State {state.index}: {state.action}{where}")
        if previous is None:
            lines.extend(f"  {name} = {format_value(value)}" for name, value in state.values.items())
        else:
            changes = state_changes(previous, state.values)
            lines.extend(f"  {change}" for change in changes)
            if not changes:
                lines.append("  (no variable changed)")
        previous = state.values
    if trace.loop_to is not None:
        via = f" via {trace.loop_action}" if trace.loop_action else ""
        lines.append(f"Back to state {trace.loop_to}{via}: the behaviour repeats from there forever")
    elif trace.stuttering:
        lines.append(f"State {len(trace.states) + 1}: Stuttering (nothing happens any more, forever)")
    return lines
