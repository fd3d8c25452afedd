"""Counterexamples written as ITF are read back by itf_py (the reference reader) and by us."""

from __future__ import annotations

import json
import keyword
from pathlib import Path

import itf_py
from hypothesis import assume, example, given, settings
from specsupport import recorded
from test_tla_values import tla_values

from kgc.spec.itf import read_itf, trace_to_itf, value_from_itf, value_to_itf, write_itf
from kgc.spec.tlc_output import parse_tool_output
from kgc.spec.values import ModelValue, Record, TlaFunction


def written(tmp_path: Path, name: str) -> tuple[Path, object]:
    trace = parse_tool_output(recorded(name)).trace
    path = tmp_path / f"{name}.itf.json"
    write_itf(path, trace, source=f"MC{name}.tla", description="test")
    return path, trace


def test_itf_py_reads_an_invariant_counterexample(tmp_path: Path) -> None:
    path, trace = written(tmp_path, "Values")
    itf = itf_py.trace_from_json(json.loads(path.read_text()))
    assert itf.vars == trace.variables
    assert [s.meta for s in itf.states] == [
        {"index": 0, "action": "Initial predicate"},
        {"index": 1, "action": "Join", "location": "line 26, col 5 to line 40, col 52 of module MCValues"},
        {"index": 2, "action": "Join", "location": "line 26, col 5 to line 40, col 52 of module MCValues"},
    ]
    assert itf.loop is None
    first, last = itf.states[0].values, itf.states[-1].values
    assert first["num"] == -3 and first["flag"] is True  # #bigint and booleans
    assert first["str"] == 'a "quoted" \\ string'
    assert first["member"] == "NoMember"  # model values are strings in ITF
    assert last["members"] == frozenset({"m1", "m2"})  # #set
    assert list(last["seq"]) == ["m1", "m2"]  # sequences are JSON lists
    assert last["rec"].generation == 2 and last["rec"].state == "PreparingRebalance"  # records
    assert dict(last["fun"]) == {"m1": 1, "m2": 1}  # #map
    assert dict(last["ifun"]) == {2: 4, 3: 9}
    assert itf.meta["format"] == "ITF" and itf.meta["modelValues"] == ["NoMember", "m1", "m2"]


def test_lasso_and_stuttering_become_itf_loops(tmp_path: Path) -> None:
    lasso, _ = written(tmp_path, "Liveness")
    assert itf_py.trace_from_json(json.loads(lasso.read_text())).loop == 1  # TLC's "Back to state 2"
    stutter, _ = written(tmp_path, "Stuttering")
    data = json.loads(stutter.read_text())
    assert data["loop"] == 0 and data["#meta"]["stuttering"] is True


def test_reading_back_restores_model_values(tmp_path: Path) -> None:
    path, trace = written(tmp_path, "Values")
    meta, states = read_itf(path)
    assert states == [s.values for s in trace.states]
    assert states[1]["member"] == ModelValue("m1") and states[1]["str"] == 'a "quoted" \\ string'


def test_one_state_per_line(tmp_path: Path) -> None:
    path, trace = written(tmp_path, "Values")
    lines = path.read_text().splitlines()
    assert sum(1 for line in lines if line.lstrip().startswith('{"#meta": {"index"')) == len(trace.states)


def test_record_fields_named_like_python_keywords() -> None:
    # itf_py's own writer would need a namedtuple, which rejects "from"; ours writes plain JSON.
    encoded = value_to_itf(Record({"from": 1, "class": "x"}))
    assert encoded == {"from": {"#bigint": "1"}, "class": "x"}
    assert value_from_itf(encoded) == Record({"from": 1, "class": "x"})


def test_function_keys_of_any_kind() -> None:
    value = TlaFunction({(1, 2): frozenset({ModelValue("m1")}), (3,): frozenset()})
    encoded = value_to_itf(value)
    assert encoded["#map"][0][0] == [{"#bigint": "1"}, {"#bigint": "2"}]
    assert value_from_itf(encoded, {"m1"}) == value


@settings(database=None, max_examples=300, deadline=None)
@given(tla_values)
@example(Record({"_": 0}))  # drawn in a CI run: itf_py's namedtuple refused the field
@example(TlaFunction({"_": 0, "__": 1}))
def test_value_round_trip_through_itf_json(value: object) -> None:
    names: set[str] = set()
    encoded = json.loads(json.dumps(value_to_itf(value, names)))
    # Model values travel as strings: a string spelled like one reads back as the model value.
    assume(not names & _strings(value))
    assert value_from_itf(encoded, names) == value
    if not _fields_itf_py_cannot_name(value):
        # the reference reader accepts everything we write, but for record fields named like a
        # Python keyword ("if") or starting with "_": it builds a namedtuple per record (see the
        # test above)
        itf_py.value_from_json(encoded)


def _fields_itf_py_cannot_name(value: object) -> bool:
    """A record field named like a Python keyword or starting with "_" (a TLA+ name, e.g. _a):
    itf_py's records are namedtuples, which refuse both."""
    if isinstance(value, Record):
        return any(keyword.iskeyword(k) or k.startswith("_") for k in value) or any(
            _fields_itf_py_cannot_name(v) for v in value.values()
        )
    if isinstance(value, (frozenset, tuple)):
        return any(_fields_itf_py_cannot_name(v) for v in value)
    if isinstance(value, TlaFunction):
        return any(_fields_itf_py_cannot_name(k) or _fields_itf_py_cannot_name(v) for k, v in value.items())
    return False


def _strings(value: object) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, (frozenset, tuple)):
        return set().union(*(_strings(v) for v in value))
    if isinstance(value, TlaFunction):
        return set().union(*(_strings(k) | _strings(v) for k, v in value.items()))
    return set()


def test_trace_document_shape() -> None:
    trace = parse_tool_output(recorded("Deadlock")).trace
    doc = trace_to_itf(trace, source="MCDeadlock.tla", meta={"model": "Deadlock"})
    assert set(doc) == {"#meta", "vars", "states"}
    assert doc["vars"] == ["x"]
    assert [s["x"] for s in doc["states"]] == [{"#bigint": "0"}, {"#bigint": "1"}, {"#bigint": "2"}]
    assert doc["#meta"]["model"] == "Deadlock" and doc["#meta"]["source"] == "MCDeadlock.tla"
