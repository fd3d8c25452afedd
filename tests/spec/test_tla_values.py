"""The TLA+ value parser on text TLC really printed, and the Python <-> TLA+ round trip."""

from __future__ import annotations

import keyword

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from specsupport import recorded

from kgc.spec.tlc_output import parse_tool_output
from kgc.spec.values import (
    ModelValue,
    Record,
    TlaFunction,
    ValueParseError,
    format_value,
    parse_state,
    parse_value,
)

M1, M2, NO = ModelValue("m1"), ModelValue("m2"), ModelValue("NoMember")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("-3", -3),
        ('"a \\"quoted\\" \\\\ string"', 'a "quoted" \\ string'),
        ('"line\\nbreak\\ttab"', "line\nbreak\ttab"),
        ("TRUE", True),
        ("NoMember", NO),
        ("{}", frozenset()),
        ("<<>>", ()),
        ("<< >>", ()),  # the empty function, as TLC prints it
        ("1..3", frozenset({1, 2, 3})),
        ("<<{m1}, [a |-> <<m1>>], {<<m1, 1>>}>>", (frozenset({M1}), Record({"a": (M1,)}), frozenset({(M1, 1)}))),
        ('[member |-> m1, name |-> "Join"]', Record({"name": "Join", "member": M1})),
        ("(m1 :> 1 @@ m2 :> 0)", TlaFunction({M1: 1, M2: 0})),
        ("(2 :> 4 @@ 3 :> 9)", TlaFunction({2: 4, 3: 9})),
        ('("a-b" :> "a-b" @@ "x" :> "x")', TlaFunction({"a-b": "a-b", "x": "x"})),
        ("(<<3>> :> <<3>> @@ <<1, 2>> :> <<1, 2>>)", TlaFunction({(3,): (3,), (1, 2): (1, 2)})),
        ("[m \\in {m1, m2} |-> {m}]", TlaFunction({M1: frozenset({M1}), M2: frozenset({M2})})),
        ('(1 :> "a" @@ 2 :> "b")', ("a", "b")),  # a function on 1..n is a sequence
        ('("x" :> 1)', Record({"x": 1})),  # identifier keys: a record, as TLC would print it
        # what TLC 2.15 printed for PrintT(("_" :> 0)) etc.: a key without a letter is no field
        ('("_" :> 0)', TlaFunction({"_": 0})),
        ('("__" :> 0)', TlaFunction({"__": 0})),
        ("[_a |-> 0]", Record({"_a": 0})),
        ("[a_ |-> 0]", Record({"a_": 0})),
    ],
)
def test_parse_tlc_printed_values(text: str, expected: object) -> None:
    assert parse_value(text) == expected


def test_model_value_is_not_the_string() -> None:
    assert parse_value("m1") != parse_value('"m1"')
    assert parse_value("{m1}") != parse_value('{"m1"}')


def test_record_equality_ignores_field_order_like_tlc() -> None:
    # TLC printed [name |-> "Init"] then [member |-> m1, name |-> "Join"]: order is TLC's own.
    assert parse_value("[a |-> 1, b |-> 2]") == parse_value("[b |-> 2, a |-> 1]")
    assert hash(parse_value("[a |-> 1, b |-> 2]")) == hash(parse_value("[b |-> 2, a |-> 1]"))


@pytest.mark.parametrize("bad", ["", "{1, 2", "[a |-> ]", "<<1 2>>", "1..x", "(1 :> 2", "@@", "[S -> T]"])
def test_garbage_is_rejected_with_a_position(bad: str) -> None:
    with pytest.raises(ValueParseError):
        parse_value(bad)


def test_state_with_multiline_values_from_real_output() -> None:
    result = parse_tool_output(recorded("Printing"), 12)
    assert result.warnings == []
    state = result.trace.states[0].values
    assert len(state["members"]) == 12  # printed over 48 indented lines
    assert state["members"][11] == Record(
        {
            "memberId": 12,
            "groupInstanceId": "consumer-instance",
            "rebalanceTimeoutMs": 12000,
            "protocols": ("range", "roundrobin"),
        }
    )
    assert state["interval"] == frozenset({1, 2, 3})
    assert state["fnset"] == frozenset(TlaFunction({M1: a, M2: b}) for a in (0, 1) for b in (0, 1))
    assert state["powerset"] == frozenset({frozenset(), frozenset({1}), frozenset({2}), frozenset({1, 2})})
    assert state["recset"] == frozenset({Record({"x": 1, "y": "p"}), Record({"x": 2, "y": "p"})})
    assert state["emptyfn"] == () and state["emptyseq"] == ()
    assert state["text"] == "line\nbreak\ttab"
    assert state["strfn"] == TlaFunction({"x": "x", "a-b": "a-b"})
    assert state["oddfn"] == TlaFunction({1: 1, 3: 3})


def test_single_variable_state_has_no_conjunction_prefix() -> None:
    assert parse_state('phase = "Empty"\n') == {"phase": "Empty"}


@pytest.mark.parametrize("name", ["Values", "Printing", "Liveness", "ActionProperty"])
def test_every_recorded_value_survives_format_and_parse(name: str) -> None:
    result = parse_tool_output(recorded(name))
    values = [v for state in result.trace.states for v in state.values.values()]
    assert values
    for value in values:
        assert parse_value(format_value(value)) == value


@pytest.mark.parametrize(
    "text",
    [
        "(2 :> 4 @@ 3 :> 9)",
        '[generation |-> 0, state |-> "Empty", leader |-> NoMember]',
        "<<{1, 2}, [a |-> <<>>], {}>>",
        '"a \\"quoted\\" \\\\ string"',
        "{<<m2, 2>>}",
        "-12",
        '("_" :> 0)',
        "[_a |-> 0]",
    ],
)
def test_format_reproduces_tlc_text(text: str) -> None:
    assert format_value(parse_value(text)) == text


# -- round trip over generated values ---------------------------------------------------------

# Not Python keywords, and not "tag": itf_py reads records through namedtuples and treats
# {tag, value} records as variants (limits of that reader, checked in test_itf.py).
_names = st.from_regex(r"[a-z][A-Za-z0-9_]{0,6}", fullmatch=True).filter(
    lambda s: s not in ("TRUE", "FALSE", "tag") and not keyword.iskeyword(s)
)
_scalars = st.one_of(
    st.integers(-(10**20), 10**20),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8),
    st.booleans(),
    _names.map(ModelValue),
)


def _compound(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    keys = st.one_of(st.integers(-5, 50), st.text(max_size=4), _names.map(ModelValue))
    return st.one_of(
        st.frozensets(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(_names, children, min_size=1, max_size=4).map(Record),
        st.dictionaries(keys, children, min_size=1, max_size=4).map(
            lambda d: parse_value(format_value(TlaFunction(d)))
        ),
    )


tla_values = st.recursive(_scalars, _compound, max_leaves=12)


@settings(database=None, max_examples=300, deadline=None)
@given(tla_values)
def test_round_trip(value: object) -> None:
    text = format_value(value)
    assert parse_value(text) == value
    assert format_value(parse_value(text)) == text


def test_updated_replaces_some_values_and_keeps_the_original() -> None:
    """TlaFunction.updated (a TLA+ EXCEPT): a new function, the original untouched, the type
    kept, equal and hashed as the function built from scratch; lookups answer as a dict's."""
    c1, c2 = ModelValue("c1"), ModelValue("c2")
    f = TlaFunction({c1: "Down", c2: "Joined"})
    g = f.updated({c2: "Down"})
    assert f == TlaFunction({c1: "Down", c2: "Joined"}) and g == TlaFunction({c1: "Down", c2: "Down"})
    assert hash(g) == hash(TlaFunction({c2: "Down", c1: "Down"})) and hash(f) != hash(g)
    r = Record({"a": 1, "b": 2}).updated({"b": 3})
    assert type(r) is Record and r == Record({"a": 1, "b": 3})
    assert "a" in r and "z" not in r and r.get("b") == 3 and r.get("z", 0) == 0 and r.get("z") is None
