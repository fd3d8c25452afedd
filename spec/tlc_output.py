"""TLC's `-tool` output, turned into a CheckResult one event at a time.

`ToolOutputParser` (tlc_messages) cuts the stream into frames and loose text; `ResultBuilder`
reads them as they arrive, so a live display can follow a run and a killed run still leaves a
partial result. Every format matched here was recorded from real TLC 2.15 output
(tests/spec/fixtures/output/).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from kgc.spec.tlc_messages import (
    ACTION_PROPERTY_VIOLATED,
    ASSERT_FAILED,
    ASSUMPTION_FALSE,
    BACK_TO_STATE,
    BEHAVIOR_UP_TO_THIS_POINT,
    CHECKING_TEMPORAL_PROPS,
    COMPUTING_INIT,
    CONFIG_CODES,
    COUNTER_EXAMPLE,
    COVERAGE_INIT,
    COVERAGE_NEXT,
    COVERAGE_START,
    CRASH_CODES,
    DEADLOCK,
    EVALUATION_CODES,
    GENERAL,
    INIT_GENERATED,
    INVARIANT_VIOLATED,
    INVARIANT_VIOLATED_INITIAL,
    NESTED_EXPRESSION,
    NO_STATES_SATISFYING_INIT,
    PARSING_FAILED,
    PARSING_FAILED2,
    PROGRESS,
    PROPERTY_VIOLATED_INITIAL,
    SANY_END,
    SANY_START,
    SEARCH_DEPTH,
    SEVERITY_ERROR,
    SEVERITY_TLCBUG,
    STATE_PRINT,
    STATS,
    STUTTERING,
    SUCCESS,
    TEMPORAL_PROPERTY_VIOLATED,
    VERSION,
    Message,
    ToolOutputParser,
)
from kgc.spec.tlc_result import CheckResult, Coverage, Outcome, SourceLocation, Trace, TraceState
from kgc.spec.values import TlaValue, ValueParseError, parse_state

__all__ = ["ResultBuilder", "config_properties", "parse_tool_output"]

_NUM = r"([\d,]+)"
_PROGRESS = re.compile(
    r"Progress\((\d+)\).*?: "
    + _NUM
    + r" states generated.*?, "
    + _NUM
    + r" distinct states found.*?, "
    + _NUM
    + r" states left on queue"
)
_STATS = re.compile(
    _NUM + r" states generated, " + _NUM + r" distinct states found, " + _NUM + r" states left on queue"
)
_INIT = re.compile(r"Finished computing initial states: " + _NUM + r" distinct state")
_DEPTH = re.compile(r"depth of the complete state graph search is (\d+)")
_ACTION = re.compile(r"^(.*?) (line \d+, col \d+ to line \d+, col \d+ of module \S+)$")
_STATE_HEADER = re.compile(r"^(\d+): <(.*)>\s*$")
_BACK_TO = re.compile(r"^(\d+): Back to state(?:: <(.*)>)?")
_COVERAGE = re.compile(r"^<(.*)>: (\d+):(\d+)")
_NESTED_POSITION = re.compile(r"Line (\d+), column (\d+) to line \d+, column \d+ in (\S+)")
_SEMANTIC_POSITION = re.compile(r"line (\d+), col (\d+) to line \d+, col \d+ of module (\S+)")
_PARSE_POSITION = re.compile(r"at line (\d+), column (\d+)")
_PARSING_FILE = re.compile(r"^Parsing file (.*?)\s*$", re.MULTILINE)
_PARSE_MODULE = re.compile(r"Could not parse module (\S+)|Fatal errors while parsing TLA\+ spec in file (\S+)")
_CONFIG_LINE = re.compile(r"configuration file at line (\d+)")
_CONFIG_NAME = re.compile(
    r"The (?:invariant|property|operator|constant parameter|specification|constraint|action constraint) (\S+)"
)
_CFG_KEYWORDS = frozenset(
    "SPECIFICATION INIT NEXT INVARIANT INVARIANTS PROPERTY PROPERTIES CONSTANT CONSTANTS CONSTRAINT "
    "CONSTRAINTS ACTION_CONSTRAINT ACTION_CONSTRAINTS SYMMETRY VIEW CHECK_DEADLOCK POSTCONDITION ALIAS".split()
)


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def _split_action(text: str) -> tuple[str, str | None]:
    match = _ACTION.match(text.strip())
    if match:
        return match.group(1), match.group(2)
    return text.strip(), None


def config_properties(cfg_text: str) -> list[str]:
    """The names listed under PROPERTY/PROPERTIES in a .cfg, in order.

    TLC 2.15's 2116 message does not name the temporal property that failed; when a model
    checks exactly one, this is how kgc can still name it."""
    text = re.sub(r"\(\*.*?\*\)", " ", cfg_text, flags=re.DOTALL)
    text = re.sub(r"\\\*[^\n]*", " ", text)
    names: list[str] = []
    collecting = False
    for word in text.split():
        if word in _CFG_KEYWORDS:
            collecting = word in ("PROPERTY", "PROPERTIES")
        elif collecting:
            names.append(word)
    return names


class ResultBuilder:
    """Turns the parser's events into a CheckResult, one event at a time.

    `sources` maps a module name to the file to name in error messages (the shipped file,
    not the per-run copy TLC actually read); `config_file` and `config_text` do the same for
    the .cfg, whose text is also searched to place config errors on a line.
    """

    def __init__(
        self,
        sources: Mapping[str, str] | None = None,
        config_file: str | None = None,
        config_text: str = "",
    ) -> None:
        self.result = CheckResult()
        self._sources = dict(sources or {})
        self._config_file = config_file
        self._config_text = config_text
        self._properties = config_properties(config_text)
        self._sany_text: list[str] = []
        self._in_sany = False
        self._positions: list[SourceLocation] = []

    # -- events ------------------------------------------------------------------------------

    def feed(self, event: Message | str) -> None:
        if isinstance(event, str):
            self.result.loose_text.append(event)
            if self._in_sany:
                self._sany_text.append(event)
            return
        self.result.messages.append(event)
        self._message(event)

    def finish(self, exit_code: int | None, timed_out: bool = False, wall_seconds: float | None = None) -> CheckResult:
        """Settle the outcome once TLC has exited (or been killed)."""
        r = self.result
        r.tlc_exit_code = exit_code
        r.timed_out = timed_out
        r.wall_seconds = wall_seconds
        r.phase = "finished"
        violation = r.outcome not in (None, Outcome.PASSED)
        if timed_out and not violation:
            r.outcome = Outcome.TIMEOUT
            r.error = "TLC did not finish within the timeout"
        elif r.outcome is None:
            self._outcome_from_exit_code(exit_code)
        elif r.outcome is Outcome.PASSED and exit_code not in (0, None):
            r.outcome = Outcome.CRASHED
            r.error = f"TLC reported success but exited with code {exit_code}"
        if r.outcome is Outcome.PASSED and r.initial_states == 0:
            self._no_initial_states()
        return r

    # -- messages ----------------------------------------------------------------------------

    def _message(self, msg: Message) -> None:
        r = self.result
        code, body = msg.code, msg.body.strip()
        if code == VERSION:
            r.tlc_version = body.splitlines()[0] if body else None
        elif code == SANY_START:
            self._in_sany, r.phase = True, "parsing"
        elif code == SANY_END:
            self._in_sany = False
        elif code == COMPUTING_INIT:
            r.phase = "computing initial states"
        elif code == INIT_GENERATED:
            match = _INIT.search(body)
            if match:
                r.initial_states = _int(match.group(1))
            r.phase = "exploring"
        elif code == PROGRESS:
            match = _PROGRESS.search(body)
            if match:
                r.depth = int(match.group(1))
                r.states_generated, r.distinct_states, r.queue = (_int(match.group(i)) for i in (2, 3, 4))
        elif code == STATS:
            match = _STATS.search(body)
            if match:
                r.states_generated, r.distinct_states, r.queue = (_int(match.group(i)) for i in (1, 2, 3))
        elif code == SEARCH_DEPTH:
            match = _DEPTH.search(body)
            if match:
                r.depth = int(match.group(1))
        elif code == CHECKING_TEMPORAL_PROPS:
            r.phase = "checking temporal properties"
        elif code == SUCCESS:
            self._decide(Outcome.PASSED)
        elif code in (BEHAVIOR_UP_TO_THIS_POINT, COUNTER_EXAMPLE):
            r.trace = Trace()
        elif code == STATE_PRINT:
            self._trace_state(body)
        elif code == STUTTERING:
            self._current_trace().stuttering = True
        elif code == BACK_TO_STATE:
            match = _BACK_TO.match(body)
            if match:
                trace = self._current_trace()
                trace.loop_to = int(match.group(1))
                trace.loop_action = _split_action(match.group(2))[0] if match.group(2) else None
        elif code == COVERAGE_START:
            r.coverage = []
        elif code in (COVERAGE_NEXT, COVERAGE_INIT):
            match = _COVERAGE.match(body)
            if match:
                action, location = _split_action(match.group(1))
                r.coverage.append(Coverage(action, location, int(match.group(2)), int(match.group(3))))
        elif code == NESTED_EXPRESSION:
            self._nested_positions(body)
        else:
            self._verdict(msg)

    def _verdict(self, msg: Message) -> None:
        code, body = msg.code, msg.body.strip()
        first_line = body.splitlines()[0] if body else ""
        if code == INVARIANT_VIOLATED:
            self._decide(Outcome.INVARIANT_VIOLATED, _word_after(first_line, "Invariant"), first_line)
        elif code == INVARIANT_VIOLATED_INITIAL:
            self._decide(Outcome.INVARIANT_VIOLATED, _word_after(first_line, "Invariant"), first_line.rstrip(":"))
            self._initial_state_trace(body)
        elif code == PROPERTY_VIOLATED_INITIAL:
            self._decide(
                Outcome.PROPERTY_VIOLATED_INITIALLY, _word_after(first_line, "Property"), first_line.rstrip(":")
            )
            self._initial_state_trace(body)
        elif code == ACTION_PROPERTY_VIOLATED:
            self._decide(Outcome.ACTION_PROPERTY_VIOLATED, _word_after(first_line, "property"), first_line)
        elif code == DEADLOCK:
            self._decide(Outcome.DEADLOCK, None, "Deadlock reached")
        elif code == TEMPORAL_PROPERTY_VIOLATED:
            name = self._properties[0] if len(self._properties) == 1 else None
            self._decide(Outcome.LIVENESS_VIOLATED, name, first_line)
        elif code == NO_STATES_SATISFYING_INIT:
            self._no_initial_states()
        elif code in (PARSING_FAILED, PARSING_FAILED2):
            self._parse_error(first_line)
        elif code == ASSUMPTION_FALSE:
            self._decide(Outcome.ASSUMPTION_FAILED, None, body)
        elif code in CONFIG_CODES:
            self._config_error(body)
        elif code == GENERAL or any(m.code == ASSERT_FAILED for m in msg.walk()):
            self._general(msg)
        elif code in EVALUATION_CODES:
            self._decide(Outcome.EVALUATION_ERROR, None, body)
        elif code in CRASH_CODES or msg.severity in (SEVERITY_ERROR, SEVERITY_TLCBUG):
            self._decide(Outcome.CRASHED, None, msg.full_text)

    def _general(self, msg: Message) -> None:
        """Code 1000 wraps whatever exception TLC caught; the nested frame says what it was."""
        inner = [m for m in msg.walk() if m is not msg]
        text = "\n".join(m.body.strip() for m in inner) or msg.body.strip()
        if any(m.code == ASSERT_FAILED for m in inner + [msg]):
            assert_msg = next(m for m in msg.walk() if m.code == ASSERT_FAILED)
            self._decide(Outcome.ASSERTION_FAILED, None, " ".join(assert_msg.body.split()))
        elif "ConfigFileException" in msg.body or any(m.code in CONFIG_CODES for m in inner):
            self._config_error(text)
        elif "EvalException" in msg.body or any(m.code in EVALUATION_CODES for m in inner):
            self._decide(Outcome.EVALUATION_ERROR, None, text)
        else:
            self._decide(Outcome.CRASHED, None, msg.full_text)

    # -- pieces --------------------------------------------------------------------------------

    def _decide(self, outcome: Outcome, violated: str | None = None, error: str | None = None) -> None:
        r = self.result
        if r.outcome not in (None, Outcome.PASSED):
            return  # the first verdict stands; later messages are consequences of it
        r.outcome = outcome
        r.violated = violated
        if outcome is not Outcome.PASSED:
            r.error = error
            if r.error_location is None and self._positions:
                r.error_location = self._positions[-1]

    def _outcome_from_exit_code(self, exit_code: int | None) -> None:
        """Only when no message decided: TLC 2.15's own exit codes (toolchain.md)."""
        r = self.result
        outcome = _EXIT_CODE_OUTCOMES.get(exit_code) if exit_code is not None else None
        tail = _tail(r.loose_text)
        if outcome is None:
            r.outcome = Outcome.CRASHED
            what = (
                "TLC produced no verdict"
                if exit_code is None
                else f"TLC exited with code {exit_code} without a verdict"
            )
            r.error = what + (f": {tail}" if tail else "")
        else:
            r.outcome = outcome
            r.error = f"TLC exited with code {exit_code}" + (f": {tail}" if tail else "")

    def _no_initial_states(self) -> None:
        r = self.result
        r.outcome = Outcome.NO_INITIAL_STATES
        r.error = "no initial state satisfies Init (TLC reports this as success with 0 distinct states)"

    def _current_trace(self) -> Trace:
        if self.result.trace is None:
            self.result.trace = Trace()
        return self.result.trace

    def _trace_state(self, body: str) -> None:
        header, _, rest = body.partition("\n")
        match = _STATE_HEADER.match(header)
        if match is None:
            self.result.warnings.append(f"unrecognised state header: {header!r}")
            return
        action, location = _split_action(match.group(2))
        self._current_trace().states.append(
            TraceState(int(match.group(1)), action, location, self._values(rest), raw=rest)
        )

    def _initial_state_trace(self, body: str) -> None:
        rest = body.partition("\n")[2]
        if rest.strip():
            trace = Trace(states=[TraceState(1, "Initial predicate", None, self._values(rest), raw=rest)])
            self.result.trace = trace

    def _values(self, text: str) -> dict[str, TlaValue]:
        try:
            return parse_state(text)
        except ValueParseError as exc:
            self.result.warnings.append(f"could not parse a state: {exc}")
            return {}

    def _nested_positions(self, body: str) -> None:
        for match in _NESTED_POSITION.finditer(body):
            line, column, module = int(match.group(1)), int(match.group(2)), match.group(3)
            self._positions.append(SourceLocation(self._module_file(module), line, column))
        r = self.result
        if r.outcome not in (None, Outcome.PASSED) and self._positions:
            r.error_location = self._positions[-1]  # the innermost expression is the most precise

    def _module_file(self, module: str) -> str:
        module = module.removesuffix(".tla")
        return self._sources.get(module, f"{module}.tla")

    def _parse_error(self, fallback: str) -> None:
        """SANY's own words are loose text printed between 2220 and 2219; pick out the place."""
        text = "\n".join(self._sany_text)
        location: SourceLocation | None = None
        message = fallback
        semantic = _SEMANTIC_POSITION.search(text)
        parse = _PARSE_POSITION.search(text)
        module = _failing_module(text)
        if "***Parse Error***" in text and parse:
            location = SourceLocation(self._module_file(module or "?"), int(parse.group(1)), int(parse.group(2)))
            encountered = next((ln for ln in text.splitlines() if ln.startswith("Encountered")), "")
            expecting = next((ln for ln in text.splitlines() if ln.startswith("Was expecting")), "")
            message = f"parse error: {encountered.strip()}" + (f"; {expecting.strip()}" if expecting else "")
        elif semantic:
            location = SourceLocation(
                self._module_file(semantic.group(3)), int(semantic.group(1)), int(semantic.group(2))
            )
            after = text[semantic.end() :].strip().splitlines()
            message = after[0] if after else fallback
        elif "Lexical error" in text and parse:
            location = SourceLocation(self._module_file(module or "?"), int(parse.group(1)), int(parse.group(2)))
            message = next(ln for ln in text.splitlines() if "Lexical error" in ln).strip()
        else:
            details = [
                ln.strip()
                for ln in text.splitlines()
                if ln.strip() and not ln.startswith(("Parsing file", "Semantic processing"))
            ]
            useful = [ln for ln in details if "Cannot find" in ln or "Could not" in ln or "error" in ln.lower()]
            message = (useful or details or [fallback])[-1]
            if module:
                location = SourceLocation(self._module_file(module))
        self._decide(Outcome.PARSE_ERROR, None, message)
        self.result.error_location = location

    def _config_error(self, text: str) -> None:
        location: SourceLocation | None = None
        if self._config_file is not None:
            line: int | None = None
            match = _CONFIG_LINE.search(text)
            if match:
                line = int(match.group(1))
                text = text[match.end() :].strip() or text
            else:
                name = _CONFIG_NAME.search(text)
                if name:
                    line = _line_of_word(self._config_text, name.group(1))
            location = SourceLocation(self._config_file, line)
        self._decide(Outcome.CONFIG_ERROR, None, text)
        self.result.error_location = location


_EXIT_CODE_OUTCOMES: dict[int, Outcome] = {
    10: Outcome.ASSUMPTION_FAILED,
    11: Outcome.DEADLOCK,
    12: Outcome.INVARIANT_VIOLATED,
    13: Outcome.LIVENESS_VIOLATED,
    14: Outcome.ASSERTION_FAILED,
    75: Outcome.EVALUATION_ERROR,
    76: Outcome.EVALUATION_ERROR,
    77: Outcome.EVALUATION_ERROR,
    150: Outcome.PARSE_ERROR,
    151: Outcome.CONFIG_ERROR,
}


def _tail(lines: Sequence[str], count: int = 3) -> str:
    meaningful = [ln.strip() for ln in lines if ln.strip()]
    return " | ".join(meaningful[-count:])


def _failing_module(sany_text: str) -> str | None:
    """The module SANY was reading when it failed: the last "Parsing file" before the error
    (an EXTENDed module fails while the root's name is still in "Fatal errors ... in file")."""
    cut = sany_text.find("***Parse Error***")
    if cut < 0:
        cut = sany_text.find("Lexical error")
    files = _PARSING_FILE.findall(sany_text[: cut if cut >= 0 else len(sany_text)])
    if cut >= 0 and files:
        return files[-1].rsplit("/", 1)[-1].removesuffix(".tla")
    for match in _PARSE_MODULE.finditer(sany_text):
        if match.group(1):
            return match.group(1)
    first = _PARSE_MODULE.search(sany_text)
    return (first.group(1) or first.group(2)) if first else None


def _word_after(line: str, word: str) -> str | None:
    match = re.search(rf"\b{word} (\S+)", line)
    return match.group(1) if match else None


def _line_of_word(text: str, word: str) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", line):
            return number
    return None


def parse_tool_output(
    lines: Iterable[str],
    exit_code: int | None = None,
    sources: Mapping[str, str] | None = None,
    config_file: str | None = None,
    config_text: str = "",
) -> CheckResult:
    """Parse a whole recorded `-tool` output at once (tests, and re-reading a run's tlc.out)."""
    parser = ToolOutputParser()
    builder = ResultBuilder(sources, config_file, config_text)
    for line in lines:
        for event in parser.feed(line):
            builder.feed(event)
    for event in parser.close():
        builder.feed(event)
    return builder.finish(exit_code)
