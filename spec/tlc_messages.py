"""TLC's `-tool` output framing: message codes, and a line-by-line parser for the frames.

TLC 2.15 frames everything it reports as `@!@!@STARTMSG code:severity @!@!@ ... @!@!@ENDMSG
code @!@!@`. Frames nest, and a nested frame can start in the middle of a line (an Assert
failure arrives as `...EvalException` then `: @!@!@STARTMSG 2132:0 @!@!@` inside a 1000 frame).
SANY's parse errors and Java's own crashes are printed outside any frame, so loose text is
returned too. The codes are tlc2.output.EC's, read from the 2.15 jar.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["Message", "ToolOutputParser"]  # plus the code constants, imported by name

# Severities as TLC's MP class numbers them.
SEVERITY_NONE, SEVERITY_ERROR, SEVERITY_TLCBUG, SEVERITY_WARNING, SEVERITY_STATE = 0, 1, 2, 3, 4

# Message codes (tlc2.output.EC in the 2.15 jar).
GENERAL = 1000
OUT_OF_MEMORY, OUT_OF_MEMORY_INIT, STACK_OVERFLOW = 1001, 1002, 1005
NESTED_EXPRESSION = 2103
ASSUMPTION_FALSE, ASSUMPTION_EVALUATION_ERROR = 2104, 2105
INVARIANT_VIOLATED_INITIAL, PROPERTY_VIOLATED_INITIAL = 2107, 2108
INVARIANT_VIOLATED, INVARIANT_EVALUATION_FAILED = 2110, 2111
ACTION_PROPERTY_VIOLATED, ACTION_PROPERTY_EVALUATION_FAILED = 2112, 2113
DEADLOCK = 2114
TEMPORAL_PROPERTY_VIOLATED = 2116
NO_STATES_SATISFYING_INIT = 2118
BEHAVIOR_UP_TO_THIS_POINT, BACK_TO_STATE = 2121, 2122
ASSERT_FAILED = 2132
PARSING_FAILED2 = 2171
STARTING, FINISHED = 2185, 2186
COMPUTING_INIT, INIT_GENERATED = 2189, 2190
CHECKING_TEMPORAL_PROPS, SUCCESS, SEARCH_DEPTH = 2192, 2193, 2194
STATS, PROGRESS = 2199, 2200
COVERAGE_START = 2201
STATE_PRINT, STUTTERING = 2217, 2218
SANY_END, SANY_START = 2219, 2220
VERSION, COUNTER_EXAMPLE = 2262, 2264
COVERAGE_NEXT, COVERAGE_INIT = 2772, 2773
PARSING_FAILED = 3002

CONFIG_CODES = frozenset(range(2222, 2244)) | {2280, 2281} | frozenset(range(5000, 5100))
EVALUATION_CODES = frozenset(range(2145, 2185)) | {2111, 2113, 2105, 2246, 2247, 2248, 2251, 2252, 2265, 2266, 2283}
CRASH_CODES = frozenset({OUT_OF_MEMORY, OUT_OF_MEMORY_INIT, STACK_OVERFLOW, 2128})


@dataclass
class Message:
    """One `-tool` frame. `body` is its own text; frames nested inside it are `children`."""

    code: int
    severity: int
    body: str = ""
    children: list[Message] = field(default_factory=list)

    def walk(self) -> Iterable[Message]:
        yield self
        for child in self.children:
            yield from child.walk()

    @property
    def full_text(self) -> str:
        parts = [self.body.strip()] + [child.full_text for child in self.children]
        return "\n".join(p for p in parts if p)


class ToolOutputParser:
    """Incremental: feed lines as TLC prints them, get back finished frames and loose text.

    Only top-level frames are returned; nested ones are attached to their parent. Text outside
    any frame comes back as plain strings (SANY errors, Java stack traces).
    """

    _MARKER = re.compile(r"@!@!@(?:STARTMSG (\d+):(\d+)|ENDMSG (\d+)) @!@!@")

    def __init__(self) -> None:
        self._open: list[Message] = []

    def feed(self, line: str) -> list[Message | str]:
        line = line.rstrip("\r\n")
        events: list[Message | str] = []
        pos = 0
        for match in self._MARKER.finditer(line):
            self._text(line[pos : match.start()], events, end_of_line=False)
            if match.group(1) is not None:
                self._open.append(Message(int(match.group(1)), int(match.group(2))))
            elif self._open:
                # TLC closes what it opened; a mismatched code would be a TLC bug, so just pop.
                done = self._open.pop()
                if self._open:
                    self._open[-1].children.append(done)
                else:
                    events.append(done)
            pos = match.end()
        rest = line[pos:]
        if pos == 0 or rest:
            self._text(rest, events, end_of_line=True)
        return events

    def close(self) -> list[Message | str]:
        """Frames left open at the end (TLC killed mid-message, or a Java exception that
        embedded a STARTMSG with no ENDMSG) are returned as they stand."""
        events: list[Message | str] = []
        while self._open:
            done = self._open.pop()
            if self._open:
                self._open[-1].children.append(done)
            else:
                events.append(done)
        return events

    def _text(self, text: str, events: list[Message | str], end_of_line: bool) -> None:
        if self._open:
            self._open[-1].body += text + ("\n" if end_of_line else "")
        elif end_of_line or text:
            events.append(text)
