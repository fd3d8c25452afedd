"""TLC counterexamples of the seeded-bug spec models, replayed on the implementation.

The real coordinator must not follow any of them (it has none of those defects); a
coordinator with the same defect seeded (seeded_bugs.py) must show the same violation.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kgc.conformance import properties
from kgc.conformance.cex import NONE, SAME, replay_counterexample, spec_violations
from kgc.conformance.seeded_bugs import coordinator_class
from kgc.spec.catalog import available_models, resolve_model, spec_root
from kgc.spec.itf import write_itf
from kgc.spec.tlc import TlcJob, run_tlc
from kgc.spec.tlc_result import Outcome

pytestmark = pytest.mark.slow  # runs TLC (the fast lane is `pytest -m "not slow"`)

KGC = Path(sys.executable).with_name("kgc")
BUG_MODELS = [m for m in available_models() if m.startswith("bug_")]
FINDING_MODELS = [m for m in available_models() if m.startswith("finding_")]
TLC_SECONDS = 300

#: Spec models whose counterexample the real coordinator follows, with the reason; each
#: should be fixed in the spec (strict: the test fails once the model no longer needs it).
SPEC_ISSUES: dict[str, str] = {}

LIVENESS = {"RebalanceCompletes", "SyncCompletes", "SilentMemberRemoved", "EventuallyStable"}

#: spec model -> seeded implementation bug with the same defect
SAME_DEFECT = {
    "bug_sync_in_preparing_rebalance": "sync_in_preparing_rebalance",
    "bug_generation_not_bumped": "generation_not_bumped",
    "bug_leader_not_reassigned": "leader_not_reassigned",
    "bug_commit_from_unknown_member_accepted": "commit_from_unknown_member_accepted",
    "bug_vote_ignores_candidates": "vote_ignores_candidates",
    "bug_sync_acknowledged_not_stored": "sync_acknowledged_not_stored",
}

_found: dict[str, Path | None] = {}


def counterexample(model: str, folder: Path) -> Path | None:
    """Check the model with TLC (once per session) and return its counterexample as ITF,
    None if TLC found none."""
    if model not in _found:
        found = resolve_model(model)
        run_dir = folder / model
        run_dir.mkdir(parents=True)
        result = run_tlc(
            TlcJob(module=found.module, config=found.config, modules=found.modules, timeout=TLC_SECONDS), run_dir
        )
        if result.outcome is Outcome.TIMEOUT:
            pytest.fail(f"{model}: TLC found nothing within {TLC_SECONDS} s")
        path = None
        if result.trace is not None and result.trace.states:
            path = run_dir / "counterexample.itf.json"
            write_itf(
                path,
                result.trace,
                source=found.module.name,
                description=result.error or "",
                meta={"model": found.name, "outcome": result.outcome.value, "violated": result.violated},
            )
        _found[model] = path
    return _found[model]


@pytest.fixture(scope="module")
def cex_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cex")


def _need(model: str, cex_dir: Path) -> Path:
    path = counterexample(model, cex_dir)
    if path is None:
        pytest.fail(f"{model}: TLC found no counterexample (the model's properties do not catch its Bug)")
    return path


@pytest.mark.parametrize(
    "model",
    [
        pytest.param(m, marks=pytest.mark.xfail(reason=SPEC_ISSUES[m], strict=True)) if m in SPEC_ISSUES else m
        for m in BUG_MODELS
    ],
)
def test_real_coordinator_does_not_follow_a_seeded_bug_counterexample(model: str, cex_dir: Path) -> None:
    report = replay_counterexample(_need(model, cex_dir))
    assert report.violated, "the counterexample names no violated property"
    assert not report.follows, "the real coordinator followed the whole counterexample"
    assert report.verdict == NONE, report.conclusion()
    dev = report.first_deviation
    assert dev.diffs and dev.index >= 1
    assert "does not follow the counterexample" in report.conclusion()


@pytest.mark.parametrize("model", FINDING_MODELS)
def test_real_coordinator_reproduces_a_finding_about_kafka(model: str, cex_dir: Path) -> None:
    """A finding model is unmodified Kafka 3.x: the real coordinator must follow its
    counterexample and break the same property (else the spec or the coordinator is wrong)."""
    report = replay_counterexample(_need(model, cex_dir))
    # the property the model's header says Kafka lacks: a finding's own (properties.FINDINGS) or
    # an invariant Kafka breaks on one path (finding_admin_leave_unanswered_sync)
    target = re.search(r"expected to FAIL (\w+)", (spec_root() / "models" / f"{model}.cfg").read_text())
    assert target is not None and report.violated == target.group(1)
    assert report.violated in properties.FINDINGS or report.violated in properties.INVARIANTS
    assert report.follows, report.conclusion()
    assert report.verdict == SAME, report.conclusion()
    assert report.first_violation(report.violated) is not None


@pytest.mark.parametrize("model, bug", sorted(SAME_DEFECT.items()))
def test_coordinator_with_the_same_defect_shows_the_same_violation(model: str, bug: str, cex_dir: Path) -> None:
    if model not in BUG_MODELS:
        pytest.skip(f"no spec model {model}")
    report = replay_counterexample(_need(model, cex_dir), coordinator_class(bug))
    assert report.verdict == SAME, report.conclusion()
    assert report.first_violation(report.violated) is not None


@pytest.mark.parametrize("model", BUG_MODELS)
def test_python_properties_agree_with_tlc_on_the_counterexample(model: str, cex_dir: Path) -> None:
    """conformance/properties.py is what judges the implementation: on the spec's own
    counterexample it must find the violation TLC found (safety properties only)."""
    path = _need(model, cex_dir)
    report = replay_counterexample(path)
    if report.temporal:
        # properties.py judges safety only; a lasso must at least name one of the spec's
        # liveness properties (each liveness bug model lists exactly one).
        assert report.violated in LIVENESS, report.violated
        return
    assert report.violated in spec_violations(path)


def test_replay_cex_cli_exit_codes_and_report(cex_dir: Path, tmp_path: Path) -> None:
    model = "bug_sync_in_preparing_rebalance"
    if model not in BUG_MODELS:
        pytest.skip(f"no spec model {model}")
    path = _need(model, cex_dir)
    run = lambda *a, env=None: subprocess.run(  # noqa: E731
        [str(KGC), "replay-cex", str(path), *a],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env if env is not None else os.environ.copy(),
    )
    real = run()
    assert real.returncode == 0, real.stdout + real.stderr
    lines = real.stdout.splitlines()
    assert lines[1].strip() == "step 0 Init: follows"
    assert any("DEVIATES" in line for line in lines)
    assert lines[-2].endswith(f": {NONE}")
    # the spec | implementation page (kgc show --replay) beside the counterexample
    page = path.with_name(path.name.removesuffix(".json").removesuffix(".itf") + ".replay.html")
    assert lines[-1] == f"page: {page}" and page.is_file()
    buggy = run(env=dict(os.environ, KGC_IMPL_BUG="sync_in_preparing_rebalance"))
    assert buggy.returncode == 1 and buggy.stdout.splitlines()[-2].endswith(f": {SAME}")
    assert "implementation violates NoSyncInPreparingRebalance" in buggy.stdout
    missing = subprocess.run([str(KGC), "replay-cex", "nope.itf.json"], capture_output=True, text=True, cwd=tmp_path)
    assert missing.returncode == 2 and "kgc replay-cex: error:" in missing.stderr
