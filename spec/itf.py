"""Counterexamples as ITF JSON (Apalache's Informal Trace Format, ADR-015), and back.

ITF is what conformance reads, and what Apalache and Quint tools understand. Encodings:

    TLA+ value                 ITF JSON
    integer                    {"#bigint": "-3"}       (always; ITF forbids bare numbers)
    string, boolean            JSON string, JSON boolean
    model value m1             "m1"                    (as Apalache writes uninterpreted
                                                        constants; names listed in
                                                        #meta.modelValues so reading back
                                                        restores them; a string spelled
                                                        like one of them comes back as
                                                        the model value)
    set                        {"#set": [...]}         (elements in a fixed order)
    sequence / tuple           [...]                   (TLC cannot tell them apart, so all
                                                        are ITF lists; #tup is never written)
    record                     {"field": value, ...}
    other function             {"#map": [[k, v], ...]}

A record whose only fields are `tag` and `value` reads back through itf_py as a variant, as
ITF prescribes; the spec should avoid that pair of field names.

Trace: {"#meta": {...}, "vars": [...], "states": [{"#meta": {"index": i, "action": ...},
var: value, ...}], "loop": k?}. Indices are 0-based as in ITF, while TLC numbers states from 1.
`loop` is the index the last state goes back to: the lasso's target, or the last state itself
when the trace ends in stuttering.

Writing is done here rather than with itf_py.trace_to_json because itf_py's writer maps Python
tuples to #tup, wants records as namedtuples (which reject fields named like Python keywords)
and has no notion of model values; reading back, and the tests, use itf_py's reader to check
that what is written is ITF others can parse.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from kgc.spec.jsonfile import InputError, read_json
from kgc.spec.tlc_result import Trace, TraceState
from kgc.spec.values import ModelValue, Record, TlaFunction, TlaValue, sort_key

__all__ = ["ITF_FORMAT_DESCRIPTION", "read_itf", "trace_to_itf", "value_from_itf", "value_to_itf", "write_itf"]

ITF_FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"


def value_to_itf(value: TlaValue, model_values: set[str] | None = None) -> Any:
    """JSON-ready ITF for one value; model value names seen are added to `model_values`."""
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, int):
        return {"#bigint": str(value)}
    if isinstance(value, ModelValue):
        if model_values is not None:
            model_values.add(value.name)
        return value.name
    if isinstance(value, frozenset):
        return {"#set": [value_to_itf(v, model_values) for v in sorted(value, key=sort_key)]}
    if isinstance(value, tuple):
        return [value_to_itf(v, model_values) for v in value]
    if isinstance(value, Record) and value:
        return {name: value_to_itf(v, model_values) for name, v in value.items()}
    if isinstance(value, TlaFunction):
        return {"#map": [[value_to_itf(k, model_values), value_to_itf(v, model_values)] for k, v in value.items()]}
    raise TypeError(f"not a TLA+ value: {value!r}")


def value_from_itf(data: Any, model_values: Collection[str] = ()) -> TlaValue:
    """The inverse of value_to_itf; strings named in `model_values` become ModelValues."""
    if isinstance(data, bool):
        return data
    if isinstance(data, str):
        return ModelValue(data) if data in model_values else data
    if isinstance(data, int):
        return data  # not ITF, but harmless to accept
    if isinstance(data, list):
        return tuple(value_from_itf(v, model_values) for v in data)
    if isinstance(data, dict):
        if "#bigint" in data:
            return int(data["#bigint"])
        if "#set" in data:
            return frozenset(value_from_itf(v, model_values) for v in data["#set"])
        if "#tup" in data:
            return tuple(value_from_itf(v, model_values) for v in data["#tup"])
        if "#map" in data:
            return TlaFunction(
                (value_from_itf(k, model_values), value_from_itf(v, model_values)) for k, v in data["#map"]
            )
        if "#unserializable" in data:
            raise ValueError(f"ITF value cannot be read back: {data['#unserializable']}")
        return Record({name: value_from_itf(v, model_values) for name, v in data.items()})
    raise TypeError(f"not ITF: {data!r}")


def _state_meta(index: int, state: TraceState) -> dict[str, Any]:
    meta: dict[str, Any] = {"index": index, "action": state.action}
    if state.location:
        meta["location"] = state.location
    return meta


def trace_to_itf(
    trace: Trace, *, source: str, description: str = "", meta: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    variables = trace.variables
    model_values: set[str] = set()
    states = []
    for index, state in enumerate(trace.states):
        encoded: dict[str, Any] = {"#meta": _state_meta(index, state)}
        for name in variables:
            if name in state.values:
                encoded[name] = value_to_itf(state.values[name], model_values)
        states.append(encoded)
    trace_meta: dict[str, Any] = {
        "format": "ITF",
        "format-description": ITF_FORMAT_DESCRIPTION,
        "source": source,
        "description": description,
        "modelValues": sorted(model_values),
    }
    if trace.stuttering:
        trace_meta["stuttering"] = True
    if trace.loop_action:
        trace_meta["loopAction"] = trace.loop_action
    trace_meta.update(meta or {})
    document: dict[str, Any] = {"#meta": trace_meta, "vars": variables, "states": states}
    if trace.loop_to is not None:
        document["loop"] = trace.loop_to - 1
    elif trace.stuttering and trace.states:
        document["loop"] = len(trace.states) - 1
    return document


def write_itf(
    path: Path, trace: Trace, *, source: str, description: str = "", meta: Mapping[str, Any] | None = None
) -> None:
    """One state per line: compact enough for long traces, and a diff shows which step changed."""
    document = trace_to_itf(trace, source=source, description=description, meta=meta)
    states = document.pop("states")
    head = json.dumps(document, ensure_ascii=False)[:-1]
    body = ",\n".join("  " + json.dumps(state, ensure_ascii=False) for state in states)
    path.write_text(f'{head}, "states": [\n{body}\n]}}\n', encoding="utf-8")


def read_itf(path: Path) -> tuple[dict[str, Any], list[dict[str, TlaValue]]]:
    """(trace #meta, states as {var: value}) with model values restored from #meta."""
    file = str(path)
    document = read_json(path)
    if not isinstance(document, dict):
        raise InputError(file, None, f"an ITF trace is a JSON object, not a {type(document).__name__}")
    meta = document.get("#meta", {})
    if not isinstance(meta, dict):
        raise InputError(file, "#meta", "must be an object")
    raw_states = document.get("states")
    if not isinstance(raw_states, list):
        raise InputError(file, "states", "missing, or not a list")
    variables = document.get("vars")
    if variables is not None and not (isinstance(variables, list) and all(isinstance(v, str) for v in variables)):
        raise InputError(file, "vars", "must be a list of variable names")
    try:
        model_values = set(meta.get("modelValues", []))
    except TypeError:
        raise InputError(file, "#meta.modelValues", "must be a list of names") from None
    states: list[dict[str, TlaValue]] = []
    for index, state in enumerate(raw_states):
        if not isinstance(state, dict):
            raise InputError(file, f"state {index}", f"a state is an object, not {json.dumps(state)[:40]}")
        if variables is not None and (missing := [v for v in variables if v not in state]):
            raise InputError(file, f"state {index}", f"variable {missing[0]} missing")
        converted: dict[str, TlaValue] = {}
        for name, v in state.items():
            if name == "#meta":
                continue
            try:
                converted[name] = value_from_itf(v, model_values)
            except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as err:
                raise InputError(file, f"state {index} variable {name}", f"not an ITF value ({err})") from None
        states.append(converted)
    return meta, states
