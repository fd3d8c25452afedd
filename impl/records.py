"""Frozen records that are cheap to make: the coordinator answers every request with one.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__``
(the class's own ``__setattr__`` refuses): in CPython 3.11 that is ~1.7k instructions a
field, so a JoinGroupResult cost ~14k instructions to make, four times a plain class's, and a
replayed scenario step made about one result record. `fast_init` gives such a class an
``__init__`` with the same parameters and defaults that writes the instance's ``__dict__``
directly (~5k for a JoinGroupResult); everything else the dataclass made -- the refusing
``__setattr__``, ``__eq__``, ``__hash__``, ``__repr__``, ``dataclasses.replace`` -- is kept.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["fast_init"]

T = TypeVar("T")


def fast_init(cls: type[T]) -> type[T]:
    """Replace a frozen dataclass's ``__init__`` (apply above ``@dataclass(frozen=True)``).

    Only plain classes are taken: a ``__post_init__``, an ``init=False`` or keyword-only
    field, an InitVar or ``__slots__`` would each need what the generated ``__init__`` does
    for them, so such a class is refused (TypeError) rather than half supported."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen:
        raise TypeError(f"fast_init: {cls.__name__} is not a frozen dataclass")
    if hasattr(cls, "__post_init__") or hasattr(cls, "__slots__"):
        raise TypeError(f"fast_init: {cls.__name__} has __post_init__ or __slots__")
    declared = cls.__dict__.get("__annotations__", {})
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if len(fields) != len(declared) or any(not f.init or f.kw_only for f in fields):
        raise TypeError(f"fast_init: {cls.__name__} has an InitVar, init=False or keyword-only field")
    namespace: dict[str, Any] = {"_MISSING": dataclasses.MISSING}
    parameters, body = [], ["    d = self.__dict__"]
    for f in fields:
        if f.default is not dataclasses.MISSING:
            namespace[f"_default_{f.name}"] = f.default
            parameters.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{f.name}"] = f.default_factory
            parameters.append(f"{f.name}=_MISSING")
            body.append(f"    if {f.name} is _MISSING:\n        {f.name} = _factory_{f.name}()")
        else:
            parameters.append(f.name)
        body.append(f"    d[{f.name!r}] = {f.name}")
    exec(f"def __init__(self, {', '.join(parameters)}):\n" + "\n".join(body) + "\n", namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
