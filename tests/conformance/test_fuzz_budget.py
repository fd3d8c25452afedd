"""kgc fuzz's --examples is a budget for the whole run, shrinking included: a failure found early
must not let Hypothesis re-run thousands of examples while shrinking it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgc.conformance.seeded_bugs import coordinator_class
from kgc.conformance.stateful import fuzz

pytestmark = pytest.mark.slow


def test_examples_cap_the_work_after_a_failure(tmp_path: Path) -> None:
    result = fuzz(coordinator_class("generation_not_bumped"), profile="deep", examples=300, save_dir=tmp_path)
    assert result.violation is not None, "the seeded bug was not found within 300 examples"
    assert result.examples <= 300
    assert result.steps > 0
    saved = list(tmp_path.glob("hypothesis-*.json"))
    assert saved and result.violation.scenario in saved


def test_the_real_coordinator_counts_sequences_and_steps(tmp_path: Path) -> None:
    result = fuzz(profile="ci", examples=30, save_dir=tmp_path)
    assert result.ok and result.examples >= 30 and result.steps >= result.examples
