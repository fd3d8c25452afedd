"""fast_init: a frozen dataclass made by the fast __init__ is the object the generated one makes."""

from __future__ import annotations

import dataclasses
from dataclasses import FrozenInstanceError, dataclass, field

import pytest

from kgc.impl.coordinator import JoinGroupResponseMember, JoinGroupResult, LeaveGroupResult, SyncGroupResult
from kgc.impl.errors import Errors
from kgc.impl.records import fast_init
from kgc.impl.store import StoredGroup, StoredMember


@dataclass(frozen=True)
class Plain:
    a: int
    b: str = "b"
    c: list[int] = field(default_factory=list)


@fast_init
@dataclass(frozen=True)
class Fast:
    a: int
    b: str = "b"
    c: list[int] = field(default_factory=list)


@pytest.mark.parametrize(
    "args, kwargs",
    [((1,), {}), ((1, "x"), {}), ((1, "x", [2]), {}), ((), {"a": 3, "c": [4]}), ((5,), {"b": "y"})],
)
def test_the_fast_init_sets_what_the_generated_one_sets(args: tuple, kwargs: dict) -> None:
    plain, fast = Plain(*args, **kwargs), Fast(*args, **kwargs)
    assert dataclasses.astuple(fast) == dataclasses.astuple(plain)
    assert repr(fast).removeprefix("Fast") == repr(plain).removeprefix("Plain")


def test_the_record_stays_frozen_hashable_and_comparable() -> None:
    one = Fast(1, "x", [])
    with pytest.raises(FrozenInstanceError):
        one.a = 2  # type: ignore[misc]
    assert one == Fast(1, "x", []) and one != Fast(2, "x", [])
    assert hash(Fast(1, "x", ())) == hash(Fast(1, "x", ()))  # type: ignore[arg-type]
    assert dataclasses.replace(one, b="z") == Fast(1, "z", [])


def test_a_default_factory_makes_a_new_value_per_record() -> None:
    first, second = Fast(1), Fast(1)
    first.c.append(1)
    assert second.c == []


def test_missing_and_unknown_arguments_are_refused_as_before() -> None:
    with pytest.raises(TypeError):
        Fast()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Fast(1, d=2)  # type: ignore[call-arg]


def test_classes_it_cannot_copy_the_init_of_are_refused() -> None:
    @dataclass
    class NotFrozen:
        a: int

    @dataclass(frozen=True)
    class WithPostInit:
        a: int

        def __post_init__(self) -> None:
            pass

    @dataclass(frozen=True)
    class KeywordOnly:
        a: int = field(kw_only=True)

    @dataclass(frozen=True)
    class NotInit:
        a: int = field(init=False, default=0)

    for cls in (NotFrozen, WithPostInit, KeywordOnly, NotInit):
        with pytest.raises(TypeError, match="fast_init"):
            fast_init(cls)


def test_the_coordinator_results_use_it() -> None:
    result = JoinGroupResult.error_result("m", Errors.UNKNOWN_MEMBER_ID)
    assert (result.member_id, result.generation_id, result.error, result.skip_assignment) == (
        "m",
        -1,
        Errors.UNKNOWN_MEMBER_ID,
        False,
    )
    assert JoinGroupResult.__init__.__qualname__ == "JoinGroupResult.__init__"
    assert LeaveGroupResult(Errors.NONE).member_responses == []
    # dataclasses' frozen __init__ sets fields through object.__setattr__, bound in its closure
    setter = "__dataclass_builtins_object__"
    assert setter in Plain.__init__.__code__.co_freevars
    for cls in (JoinGroupResponseMember, JoinGroupResult, SyncGroupResult, LeaveGroupResult, StoredMember, StoredGroup):
        code = cls.__init__.__code__
        assert setter not in code.co_freevars + code.co_names, cls
