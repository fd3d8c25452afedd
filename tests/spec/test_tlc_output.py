"""The -tool output parser on outputs recorded from real TLC 2.15 runs of the fixture specs."""

from __future__ import annotations

import json

import pytest
from specsupport import OUTPUT, SPEC, recorded

from kgc.spec.tlc_messages import Message, ToolOutputParser
from kgc.spec.tlc_output import ResultBuilder, config_properties, parse_tool_output
from kgc.spec.tlc_result import Outcome
from kgc.spec.values import ModelValue, Record

EXIT_CODES = json.loads((OUTPUT / "exit_codes.json").read_text())
SOURCES = {p.stem: f"spec/{p.relative_to(SPEC)}" for p in SPEC.rglob("*.tla")}


def parse(name: str, config: str | None = None):
    cfg = SPEC / "models" / f"{config or name}.cfg"
    return parse_tool_output(recorded(name), EXIT_CODES[name], SOURCES, f"spec/models/{cfg.name}", cfg.read_text())


@pytest.mark.parametrize(
    "name, outcome, violated, generated, distinct, depth",
    [
        ("Ok", Outcome.PASSED, None, 65, 24, 7),
        ("plain", Outcome.PASSED, None, 5, 4, 4),
        ("Values", Outcome.INVARIANT_VIOLATED, "FewMembers", 4, 4, 3),
        ("InitInvariant", Outcome.INVARIANT_VIOLATED, "SmallGeneration", None, None, None),
        ("ActionProperty", Outcome.ACTION_PROPERTY_VIOLATED, "GenerationNeverDecreases", 4, 3, 3),
        ("Liveness", Outcome.LIVENESS_VIOLATED, "EventuallyStable", 4, 3, None),
        ("Stuttering", Outcome.LIVENESS_VIOLATED, "EventuallyStable", 3, 2, None),
        ("Deadlock", Outcome.DEADLOCK, None, 3, 3, 3),
        ("Assert", Outcome.ASSERTION_FAILED, None, 2, 2, None),
        ("EvalError", Outcome.EVALUATION_ERROR, None, 1, 1, None),
        ("NoInit", Outcome.NO_INITIAL_STATES, None, 0, 0, 1),
        ("ParseError", Outcome.PARSE_ERROR, None, None, None, None),
        ("SemanticError", Outcome.PARSE_ERROR, None, None, None, None),
        ("ExtendsBroken", Outcome.PARSE_ERROR, None, None, None, None),
        ("ConfigError", Outcome.CONFIG_ERROR, None, None, None, None),
        ("ConfigSyntax", Outcome.CONFIG_ERROR, None, None, None, None),
    ],
)
def test_outcome_and_statistics(name, outcome, violated, generated, distinct, depth) -> None:
    result = parse(name)
    assert result.outcome is outcome
    assert result.violated == violated
    assert (result.states_generated, result.distinct_states) == (generated, distinct)
    if depth is not None:
        assert result.depth == depth
    assert result.tlc_version and result.tlc_version.startswith("TLC2 Version 2.15")
    assert result.warnings == []


@pytest.mark.parametrize(
    "name, location, words",
    [
        ("ParseError", "spec/models/MCParseError.tla:5:20", 'Encountered "1"'),
        ("SemanticError", "spec/models/MCSemanticError.tla:5:18", "Unknown operator: `undefinedThing'"),
        # The error is in a module the root EXTENDS: it must name that file, not the root.
        ("ExtendsBroken", "spec/Broken.tla:5:1", "parse error"),
        ("ConfigError", "spec/models/ConfigError.cfg:2", "NoSuchInvariant"),
        ("ConfigSyntax", "spec/models/ConfigSyntax.cfg:2", "expecting a value"),
        ("EvalError", "spec/models/MCEvalError.tla:5:16", "Head to the empty sequence"),
        ("Assert", "spec/models/MCAssert.tla:5:32", '"x must never reach 2"'),
    ],
)
def test_errors_name_file_and_place_on_one_line(name: str, location: str, words: str) -> None:
    result = parse(name)
    line = result.error_line
    assert line is not None and "\n" not in line
    assert line.startswith(location + ": ")
    assert words in line


def test_invariant_trace_states_actions_and_values() -> None:
    trace = parse("Values").trace
    assert [(s.index, s.action) for s in trace.states] == [(1, "Initial predicate"), (2, "Join"), (3, "Join")]
    assert trace.states[1].location == "line 26, col 5 to line 40, col 52 of module MCValues"
    last = trace.states[-1].values
    assert last["members"] == frozenset({ModelValue("m1"), ModelValue("m2")})
    assert last["rec"] == Record({"generation": 2, "state": "PreparingRebalance", "leader": ModelValue("m2")})
    assert last["lastAction"] == Record({"name": "Join", "member": ModelValue("m2")})
    assert len(trace.variables) == 13
    assert trace.loop_to is None and not trace.stuttering


def test_liveness_lasso_goes_back_to_a_state() -> None:
    trace = parse("Liveness").trace
    assert [s.values["phase"] for s in trace.states] == ["Empty", "PreparingRebalance", "CompletingRebalance"]
    assert (trace.loop_to, trace.loop_action, trace.stuttering) == (2, "Next", False)


def test_liveness_stuttering() -> None:
    trace = parse("Stuttering").trace
    assert len(trace.states) == 1 and trace.stuttering and trace.loop_to is None


def test_initial_invariant_violation_carries_the_state() -> None:
    trace = parse("InitInvariant").trace
    assert [s.values for s in trace.states] == [{"generation": 5}]


def test_zero_initial_states_is_not_success() -> None:
    result = parse("NoInit")
    assert EXIT_CODES["NoInit"] == 0  # TLC itself calls this a success...
    assert result.initial_states == 0
    assert result.outcome is Outcome.NO_INITIAL_STATES  # ...kgc does not


def test_assert_arrives_nested_inside_a_general_message() -> None:
    general = next(m for m in parse("Assert").messages if m.code == 1000)
    assert [c.code for c in general.children] == [2132]
    assert "x must never reach 2" in general.children[0].body


def test_coverage_per_action() -> None:
    result = parse("OkCoverage", config="Ok")
    by_action = {c.action: (c.distinct, c.generated) for c in result.coverage}
    assert by_action == {"Init": (1, 1), "Join": (20, 33), "Leave": (3, 27), "Reset": (0, 4)}


def test_killed_run_keeps_partial_statistics() -> None:
    """TLC killed by the timeout after its first progress report (a few seconds in)."""
    lines = recorded("ForeverTimeout")
    parser, builder = ToolOutputParser(), ResultBuilder()
    for line in lines:
        for event in parser.feed(line):
            builder.feed(event)
    for event in parser.close():
        builder.feed(event)
    result = builder.finish(None, timed_out=True)
    assert result.outcome is Outcome.TIMEOUT
    assert result.distinct_states and result.distinct_states > 1000
    assert result.states_generated >= result.distinct_states
    assert result.depth and result.depth > 10


def test_results_fill_in_while_the_output_streams() -> None:
    parser, builder = ToolOutputParser(), ResultBuilder()
    seen = []
    for line in recorded("Values"):
        for event in parser.feed(line):
            builder.feed(event)
        seen.append((builder.result.phase, builder.result.initial_states, builder.result.outcome))
    assert ("parsing", None, None) in seen
    assert ("exploring", 1, None) in seen
    assert seen[-1][2] is Outcome.INVARIANT_VIOLATED


def test_parser_splits_markers_in_the_middle_of_a_line() -> None:
    parser = ToolOutputParser()
    events = []
    for line in [
        "loose text\n",
        "@!@!@STARTMSG 1000:1 @!@!@\n",
        "The exception was a tlc2.tool.EvalException\n",
        ": @!@!@STARTMSG 2132:0 @!@!@\n",
        "inner\n",
        "@!@!@ENDMSG 2132 @!@!@\n",
        "@!@!@ENDMSG 1000 @!@!@\n",
        'Exception in thread "main": @!@!@STARTMSG 2162:0 @!@!@\n',
        "never closed\n",
    ]:
        events += parser.feed(line)
    events += parser.close()
    assert events[0] == "loose text"
    outer = events[1]
    assert isinstance(outer, Message) and (outer.code, outer.severity) == (1000, 1)
    assert outer.body == "The exception was a tlc2.tool.EvalException\n: "
    assert [(c.code, c.body) for c in outer.children] == [(2132, "inner\n")]
    assert events[2] == 'Exception in thread "main": '
    assert isinstance(events[3], Message) and events[3].code == 2162 and events[3].body == "never closed\n"


def test_config_properties() -> None:
    cfg = "SPECIFICATION Spec\n\\* PROPERTY Hidden\nPROPERTY A\nPROPERTIES B (* C *) D\nINVARIANT E\n"
    assert config_properties(cfg) == ["A", "B", "D"]


def test_several_temporal_properties_are_not_guessed() -> None:
    result = parse_tool_output(recorded("Liveness"), 13, config_text="PROPERTY P\nPROPERTY Q\n")
    assert result.outcome is Outcome.LIVENESS_VIOLATED and result.violated is None
