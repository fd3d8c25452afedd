"""`kgc bench replay --baseline REV`: a past commit's handler and replay rates measured in turns
with this tree's, each in its own worktree, venv and process, and the rate targets as ratios."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgc.tools.bench import BenchUnavailable
from kgc.tools.bench.baseline import KNOWN_BASELINES, compare_with_baseline
from kgc.tools.cli import app
from kgc.tools.cmd_bench import EXIT_UNAVAILABLE

pytestmark = pytest.mark.slow  # builds a venv of the baseline commit

FILED = "1e94583"  # the commit issue 18's rate targets were set against


def _worktrees() -> str:
    root = Path(__file__).resolve().parents[2]
    return subprocess.run(["git", "-C", str(root), "worktree", "list"], capture_output=True, text=True).stdout


def test_both_trees_are_measured_in_turns_and_the_worktree_goes_away() -> None:
    before = _worktrees()
    said: list[str] = []
    cmp = compare_with_baseline(FILED, pairs=2, requests=4_000, seconds=0.2, say=said.append)
    assert cmp.commit.startswith(FILED) and len(cmp.commit) == 40
    assert len(cmp.pairs) == 2
    for pair in cmp.pairs:  # each side measured both rates, in its own process
        assert set(pair) == {"this", "baseline"}
        assert all(pair[side][m] > 0 for side in pair for m in ("handlers", "replay"))
    assert cmp.ratios("replay") == [p["this"]["replay"] / p["baseline"]["replay"] for p in cmp.pairs]
    assert cmp.known() == KNOWN_BASELINES[FILED]
    # the turns: this tree, then the baseline, pair after pair
    turns = [m for m in said if "pair" in m]
    assert [t.rsplit(", ", 1)[1] for t in turns] == ["this tree", cmp.commit[:12]] * 2
    assert _worktrees() == before, "the baseline's worktree is removed after the run"


def test_a_revision_that_does_not_exist_is_named_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(BenchUnavailable, match="--baseline: git rev-parse .*no-such-rev"):
        compare_with_baseline("no-such-rev", pairs=1)
    result = CliRunner().invoke(
        app, ["bench", "replay", "--quick", "--baseline", "no-such-rev", "--out", str(tmp_path)]
    )
    assert result.exit_code == EXIT_UNAVAILABLE, result.output
    assert "no-such-rev" in result.output
