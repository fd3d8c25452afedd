"""The fast reader of TLC's `-simulate file=` output (mbt.parse_simulation_file) gives exactly
what the reference parser (kgc.spec.values.parse_state) gives, state by state, with one memo
shared by several files; bad headers and lines are errors, not wrong states."""

from __future__ import annotations

import gc

import pytest

from kgc.conformance.mbt import parse_simulation_file
from kgc.spec.values import parse_state

STATE_1 = """/\\ now = 0
/\\ cphase = (c1 :> "Unjoined" @@ c2 :> "Unjoined")
/\\ store = [leader |-> 0, members |-> {}, plan |-> {}, gen |-> 0, exists |-> FALSE]
/\\ lastAction = [ gen |-> -1,
  name |-> "Init",
  client |-> NoClient ]
/\\ timers = <<>>"""
STATE_2 = """/\\ now = 0
/\\ cphase = (c1 :> "JoinWait" @@ c2 :> "Unjoined")
/\\ store = [leader |-> 0, members |-> {}, plan |-> {}, gen |-> 0, exists |-> FALSE]
/\\ lastAction = [ name |-> "JoinGroupUnknownMember",
  client |-> c1,
  gen |-> -1 ]
/\\ timers = << [ deadline |-> 1,
     kind |-> "InitialJoin",
     olds |-> {} ],
   [ deadline |-> 3,
     kind |-> "Heartbeat",
     olds |-> {1, 2} ] >>"""


def _file(*states: str) -> str:
    body = "".join(f"STATE_{n} == \n{s}\n\n\n" for n, s in enumerate(states, 1))
    return f"---------------- MODULE tr_0_0 -----------------\n{body}=============================================\n"


def test_states_are_what_the_reference_parser_reads() -> None:
    memo: dict = {}
    for _ in range(2):  # the second file is read from the memo
        trace = parse_simulation_file(_file(STATE_1, STATE_2), memo)
        assert [s.values for s in trace.states] == [parse_state(STATE_1), parse_state(STATE_2)]
        assert [s.action for s in trace.states] == ["Init", "JoinGroupUnknownMember"]
        assert [s.index for s in trace.states] == [1, 2]


STATE_3_REORDERED = """/\\ cphase = (c1 :> "JoinWait" @@ c2 :> "Unjoined")
/\\ now = 1
/\\ timers = <<>>"""


def test_lines_reused_from_the_previous_state_only_where_equal() -> None:
    """A state's line equal to the previous state's at its place takes that line's value; one
    that differs, or a state with another set or order of variables, is read afresh."""
    states = (STATE_1, STATE_2, STATE_2, STATE_1, STATE_3_REORDERED, STATE_1)
    trace = parse_simulation_file(_file(*states), {})
    assert [s.values for s in trace.states] == [parse_state(s) for s in states]
    assert list(trace.states[4].values) == ["cphase", "now", "timers"]


def test_the_garbage_collector_is_left_as_it_was() -> None:
    assert gc.isenabled()
    parse_simulation_file(_file(STATE_1, STATE_2))
    assert gc.isenabled()
    with pytest.raises(ValueError):
        parse_simulation_file(_file(STATE_1, "/\\ 1x = 2\n/\\ y = 1"))
    assert gc.isenabled()
    gc.disable()
    try:
        parse_simulation_file(_file(STATE_1, STATE_2))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_single_variable_state_and_an_empty_file() -> None:
    assert parse_simulation_file(_file("x = 1")).states[0].values == {"x": 1}
    assert parse_simulation_file("").states == []


@pytest.mark.parametrize("text", [_file("/\\ 1x = 2\n/\\ y = 1"), "x\nSTATE_a == \n/\\ x = 1\n"])
def test_malformed_output_is_an_error(text: str) -> None:
    with pytest.raises(ValueError):
        parse_simulation_file(text)
