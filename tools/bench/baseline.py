"""A past commit's harness rates measured beside this tree's, in turns, in one run.

This machine's speed is not a constant: on one day the same tree ran `kgc replay` at 137k steps/s
and, on a different CPU another day, at 52-63k. A rate target set on one day (issue 18: handlers
>= 300k requests/s and replay >= 150k steps/s, set when commit 1e94583 measured 181.7k and 88.6k)
is therefore only checkable as a ratio: this tree's rate over the commit's, both measured now,
against the target's ratio to the commit's rate on its own day. Each side runs in its own
process and interpreter (a git worktree of the commit with its own venv: the two trees'
`kgc` packages cannot share one), the sides alternating A B A B, and each pair gives one ratio,
so a drift in the machine's speed lands on both sides of a pair.

The measurement is the replay benchmark's own `_coordinator_rate` and `_replay_rate`, which the
baseline commit has under the same names: each side measures its own handlers on the same
workload and replays its own shipped scenarios. One difference is kept, not hidden: 1e94583
timed its replay loop by the wall clock, later trees by the thread's CPU time; on an idle
machine the two agree for a single-threaded loop (the load is in the result).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgc.tools.bench.result import BenchUnavailable

__all__ = ["KNOWN_BASELINES", "BaselineComparison", "compare_with_baseline"]

# What a commit measured on its own day, from its result file: the base of a rate target.
KNOWN_BASELINES: dict[str, dict[str, float]] = {
    # bench/results/replay-20261124-155234.json, the figures issue 18 was filed on
    "1e94583": {"handlers": 181_688.1, "replay": 88_606.7},
}

# Run by each side's interpreter in its own tree: prints one JSON line of its rates.
_DRIVER = """
import json, sys
from kgc.tools.bench import replay_bench as rb
requests, seconds = int(sys.argv[1]), float(sys.argv[2])
print(json.dumps({"handlers": rb._coordinator_rate(requests)[0], "replay": rb._replay_rate(seconds)[0]}))
"""


@dataclass(frozen=True)
class BaselineComparison:
    """Per measure, this tree's and the baseline's rate in each pair and the pairs' ratios."""

    rev: str
    commit: str
    pairs: list[dict[str, dict[str, float]]]  # [{"this": {...}, "baseline": {...}}, ...]

    def ratios(self, measure: str) -> list[float]:
        return [p["this"][measure] / p["baseline"][measure] for p in self.pairs]

    def median_ratio(self, measure: str) -> float:
        return statistics.median(self.ratios(measure))

    def known(self) -> dict[str, float] | None:
        """The baseline's rates on its own day, when this commit's are on record."""
        return next((v for k, v in KNOWN_BASELINES.items() if self.commit.startswith(k)), None)


def _git(repo: Path, *args: str) -> str:
    """git's answer, or BenchUnavailable with one line: a failed, missing or hung git alike."""
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise BenchUnavailable(f"--baseline: git {' '.join(args)}: {err}") from err
    if done.returncode != 0:
        raise BenchUnavailable(f"--baseline: git {' '.join(args)}: {done.stderr.strip() or 'failed'}")
    return done.stdout.strip()


def _checkout_root() -> Path:
    """The git checkout this kgc runs from (an editable install); a wheel has no history."""
    here = Path(__file__).resolve().parent
    try:
        return Path(_git(here, "rev-parse", "--show-toplevel"))
    except BenchUnavailable as err:
        raise BenchUnavailable(f"--baseline needs kgc run from its git checkout ({here} is not in one)") from err


@contextmanager
def _baseline_python(repo: Path, commit: str, say: Callable[[str], None]) -> Iterator[Path]:
    """A worktree of `commit` with a venv holding it: its interpreter, removed again after."""
    work = Path(tempfile.mkdtemp(prefix="kgc-bench-baseline-"))
    tree = work / "tree"
    try:
        say(f"baseline: a worktree of {commit[:12]} and a venv for it")
        _git(repo, "worktree", "add", "--detach", str(tree), commit)
        subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True, capture_output=True)
        python = work / "venv" / "bin" / "python"
        env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        native = (tree / "tools" / "build_native.py").exists()  # a commit that compiles its hot modules
        target = f"{tree}[test]" if native else str(tree)  # mypyc comes with the test extra
        pip = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-e", target], capture_output=True, text=True, env=env
        )
        if pip.returncode != 0:
            tail = (pip.stderr.strip().splitlines() or ["no output"])[-1]
            raise BenchUnavailable(f"--baseline: installing {commit[:12]} failed: {tail}")
        if native:  # as its setup.sh did; without a compiler it runs its sources, as it would have
            subprocess.run([str(python), "-m", "kgc.tools.build_native"], capture_output=True, env=env)
        yield python
    finally:
        subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(tree)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def _rates(python: Path, requests: int, seconds: float, cwd: Path) -> dict[str, float]:
    done = subprocess.run(
        [str(python), "-c", _DRIVER, str(requests), str(seconds)], capture_output=True, text=True, cwd=cwd
    )
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise BenchUnavailable(f"--baseline: the rates of {python} failed: {tail}")
    rates: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return rates


def compare_with_baseline(
    rev: str, *, pairs: int = 3, requests: int = 400_000, seconds: float = 8.0, say: Callable[[str], None] = print
) -> BaselineComparison:
    """Handlers and replay rates of this tree and of commit `rev`, `pairs` times in turns."""
    repo = _checkout_root()
    commit = _git(repo, "rev-parse", "--verify", f"{rev}^{{commit}}")
    out: list[dict[str, dict[str, Any]]] = []
    with _baseline_python(repo, commit, say) as baseline, tempfile.TemporaryDirectory() as cwd:
        for n in range(pairs):
            say(f"baseline: pair {n + 1}/{pairs}, this tree")
            this = _rates(Path(sys.executable), requests, seconds, Path(cwd))
            say(f"baseline: pair {n + 1}/{pairs}, {commit[:12]}")
            out.append({"this": this, "baseline": _rates(baseline, requests, seconds, Path(cwd))})
    return BaselineComparison(rev, commit, out)
