"""_never_raise: the exact-signature wrapper the coordinator's delayed-operation entry points use."""

from __future__ import annotations

from kgc.impl.coordinator import _never_raise


class Host:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def _record_internal_error(self, where: str) -> None:
        self.errors.append(where)

    @_never_raise(default=False)
    def exact(self, a: int, b: int) -> bool:
        """Doc kept."""
        return 10 // (a - b) > 0

    @_never_raise(default="d")
    def with_default(self, a: int, b: int = 1) -> str:
        return str(10 // (a - b))


def test_exact_wrapper_returns_records_and_defaults() -> None:
    h = Host()
    assert h.exact(3, 1) is True
    assert h.exact(b=1, a=3) is True  # keywords still work: the wrapper has the real parameters
    assert h.exact(2, 2) is False  # ZeroDivisionError: recorded, the default returned
    assert h.errors == ["exact"]
    assert Host.exact.__name__ == "exact" and Host.exact.__doc__ == "Doc kept."
    assert Host.exact.__wrapped__.__name__ == "exact"


def test_functions_with_defaults_get_the_generic_wrapper() -> None:
    h = Host()
    assert h.with_default(6) == "2"
    assert h.with_default(1) == "d"
    assert h.errors == ["with_default"]
