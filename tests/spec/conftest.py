from __future__ import annotations

from collections.abc import Iterator

import pytest
from specsupport import SPEC


@pytest.fixture
def spec_snapshot() -> Iterator[None]:
    """Fails the test if anything was written beside the fixture spec (TLC must work on copies)."""
    before = sorted(p.relative_to(SPEC) for p in SPEC.rglob("*"))
    yield
    after = sorted(p.relative_to(SPEC) for p in SPEC.rglob("*"))
    assert after == before, f"files appeared beside the spec: {set(after) - set(before)}"
