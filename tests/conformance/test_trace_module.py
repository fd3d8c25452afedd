"""The trace-validation module is checked in (spec/TraceGroupCoordinator.tla) and only its data
is written per batch: these keep the Python side (action codes, the data module) and the .tla in
step without running TLC (test_validate.py runs TLC on both)."""

from __future__ import annotations

import re
from pathlib import Path

from kgc.conformance.recorder import RANDOM_RUN_CONSTANTS, random_run
from kgc.conformance.validate import ACTIONS, DATA_MODULE, SPEC_MODULE, TRACE_MODULE, build_module, trace_module_calls

SPEC = Path(__file__).resolve().parents[2] / "spec"


def _text(name: str) -> str:
    return (SPEC / f"{name}.tla").read_text(encoding="utf-8")


def test_the_trace_module_numbers_the_actions_as_the_action_codes_do() -> None:
    calls = trace_module_calls(_text(TRACE_MODULE))
    expected = {n: call for n, call in enumerate(ACTIONS.values(), start=1)}
    assert calls == expected


def test_every_action_the_trace_module_takes_is_an_action_of_the_spec() -> None:
    spec = _text(SPEC_MODULE)
    for call in trace_module_calls(_text(TRACE_MODULE)).values():
        name = call.split("(")[0]
        assert re.search(rf"^{name}(\(|\s*==)", spec, re.M), f"{name} is not defined in {SPEC_MODULE}.tla"


def test_the_trace_module_extends_the_spec_and_the_data_module() -> None:
    extends = re.search(r"^EXTENDS (.+)$", _text(TRACE_MODULE), re.M)
    assert extends is not None
    assert [m.strip() for m in extends.group(1).split(",")] == [SPEC_MODULE, DATA_MODULE]


def test_the_data_module_holds_data_only() -> None:
    """What is written per batch names no spec action and defines no step: the checking logic
    lives in the checked-in module, where it can be read and reviewed."""
    traces = [random_run(RANDOM_RUN_CONSTANTS, 20, seed) for seed in range(3)]
    module, cfg = build_module(traces, _text(SPEC_MODULE))
    assert module.startswith(f"---- MODULE {DATA_MODULE} ----")
    defined = set(re.findall(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\(.*?\))? ==", module, re.M))
    assert defined >= {"Acts", "CLs", "Diagnosing", "SC", "CI", "View"}
    assert not defined & {"Do", "TraceInit", "TraceNext", "Matches", "TraceDone"}
    assert "INIT TraceInit" in cfg and "NEXT TraceNext" in cfg
    assert "Diagnosing == FALSE" in module
    diag, _ = build_module(traces, _text(SPEC_MODULE), stop_at=[3, 4, 5])
    assert "Diagnosing == TRUE" in diag
