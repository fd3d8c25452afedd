"""An ITF trace checked against the model it claims to be of, before anything runs it.

Why here and not in kgc.spec.itf: the variables and their types are the spec's, and the one
place that knows them for a given model is the abstraction (the state a fresh coordinator maps
to is an Init state of the spec). Deriving the expected shape from it keeps this check in step
with the spec as variables are added, with no second list to maintain.
A trace that fails is an invalid input (exit 2), not a divergence: `states: []` used to
"conform", and a state missing a variable gave a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kgc.spec.jsonfile import InputError
from kgc.spec.values import ModelValue, Record, TlaFunction, TlaValue

__all__ = ["check_trace_shape", "value_kind"]

# Variables the conformance driver adds beside the abstraction's (the step that led here).
_EXTRA_VARIABLES = {"lastAction": "record"}


def value_kind(value: TlaValue) -> str:
    """The TLA+ kind of a value, as far as a type check needs it. Empty functions, sequences
    and sets print alike in TLC (<<>>, {}) and are compatible with each other."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, (str, ModelValue)):
        return "string"
    if isinstance(value, Record):
        return "record"
    if isinstance(value, (frozenset, set)):
        return "set" if value else "empty"
    if isinstance(value, tuple):
        return "sequence" if value else "empty"
    if isinstance(value, TlaFunction):
        return "function" if len(value) else "empty"
    return type(value).__name__


def _compatible(expected: str, got: str) -> bool:
    if expected == got or "empty" in (expected, got):
        return expected not in ("boolean", "integer", "string", "record") or expected == got
    # a sequence is a function on 1..n in TLA+; TLC may print either
    return {expected, got} == {"sequence", "function"}


def check_trace_shape(file: str, states: Sequence[Mapping[str, TlaValue]], init: Mapping[str, TlaValue]) -> None:
    """Raise InputError unless every state has exactly the model's variables, each of the kind
    the model's Init gives it. `init` is the abstraction of a fresh coordinator."""
    if not states:
        raise InputError(file, "states", "no states: a trace has at least its initial state")
    expected = {name: value_kind(v) for name, v in init.items()}
    expected.update(_EXTRA_VARIABLES)
    for index, state in enumerate(states):
        missing = sorted(set(expected) - set(state) - set(_EXTRA_VARIABLES))
        if missing:
            raise InputError(
                file,
                f"state {index}",
                f"variable {missing[0]} missing" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""),
            )
        unknown = sorted(set(state) - set(expected))
        if unknown:
            raise InputError(file, f"state {index}", f"variable {unknown[0]} is not a variable of the model")
        for name, value in state.items():
            kind = value_kind(value)
            if not _compatible(expected[name], kind):
                raise InputError(
                    file, f"state {index} variable {name}", f"a {kind} where the model has a {expected[name]}"
                )
