"""kgc mutate's mutator and runner: mutants differ from the source in one place, reach the
detector only through the import hook (the repository is untouched), a known-bad mutant is
killed, and on a fixed sample the kill rates stay above the floor measured when it was built."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from procsupport import alive, children

from kgc.conformance.mutate import IMPL_DIR, mutant_bootstrap, mutants_of, sample_mutants
from kgc.conformance.mutate_run import detector_argv, run_detector, run_mutants, scores


def test_every_mutant_of_delayed_changes_exactly_one_place() -> None:
    mutants = list(mutants_of("delayed"))
    assert len(mutants) >= 20
    assert len({m.ident for m in mutants}) == len(mutants)
    for m in mutants:
        diff = m.diff()
        removed = [ln for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
        assert m.source != m.original and removed, m.ident


def test_sample_is_fixed_by_its_seed() -> None:
    a = [m.ident for m in sample_mutants(["coordinator", "delayed"], 8, seed=3)]
    b = [m.ident for m in sample_mutants(["coordinator", "delayed"], 8, seed=3)]
    c = [m.ident for m in sample_mutants(["coordinator", "delayed"], 8, seed=4)]
    assert a == b and len(a) == 8 and a != c


def _copy_impl(tmp_path: Path, edit: dict[str, str]) -> Path:
    """A copy of impl/'s coordinator.py and delayed.py, with `edit[name]` in place of a file."""
    tmp_path.mkdir()
    for name in ("coordinator.py", "delayed.py"):
        (tmp_path / name).write_text(edit.get(name, (IMPL_DIR / name).read_text()))
    return tmp_path


def test_the_draw_stays_put_when_code_elsewhere_moves(tmp_path: Path) -> None:
    """Lines inserted at the top of coordinator.py and a new function with mutation sites of its
    own in the middle of it move every line number below; the draw keys sites by content, so the
    sample (by key) of the old code is unchanged except where the new function's sites hash
    lower than the n-th and push out the last ones. (The shuffle of all sites it replaced
    redrew the whole sample on such an edit.)"""
    mods = ["coordinator", "delayed"]
    source = (IMPL_DIR / "coordinator.py").read_text()
    cut = source.index("\ndef ", len(source) // 2)
    added = "\n\ndef _inserted_for_the_test(a, b):\n    x = a + b\n    return x < 3 and not b\n"
    edited = '# one\n# two\nX_INSERTED = "x"\n' + source[:cut] + added + source[cut:]
    for seed in (11, 12):
        before = sample_mutants(mods, 30, seed, impl_dir=_copy_impl(tmp_path / f"a{seed}", {}))
        after = sample_mutants(mods, 30, seed, impl_dir=_copy_impl(tmp_path / f"b{seed}", {"coordinator.py": edited}))
        new = [m for m in after if "_inserted_for_the_test" in m.key or "X_INSERTED" in m.key]
        old = [m for m in after if m not in new]
        assert len(after) == 30
        assert {m.key for m in old} <= {m.key for m in before}, seed
        lines = {m.key: m.line for m in before}
        assert all(m.line > lines[m.key] for m in old if m.module == "coordinator"), seed


def test_the_import_hook_serves_the_mutant_and_leaves_the_repository_alone(tmp_path: Path) -> None:
    before = (IMPL_DIR / "delayed.py").read_text()
    src = tmp_path / "delayed.py"
    src.write_text(before + "\nMUTANT_MARK = 42\n")
    code = mutant_bootstrap("kgc.impl.delayed", str(src)) + "import kgc.impl.delayed as d\nprint(d.MUTANT_MARK)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "42"
    assert (IMPL_DIR / "delayed.py").read_text() == before


def _sync_never_parked() -> object:
    # The sync of a member in CompletingRebalance is never parked: it is never answered.
    for m in mutants_of("coordinator"):
        if m.operator == "drop-stmt" and "awaiting_sync_callback = respond" in m.diff():
            return m
    raise AssertionError("the known-bad mutant is no longer generated")


@pytest.mark.slow
def test_a_known_bad_mutant_is_killed_by_replay(tmp_path: Path) -> None:
    mutant = _sync_never_parked()
    baseline, _, _ = run_detector(detector_argv("replay", tmp_path, None, 1), None, 300, tmp_path / "base")
    outcome, _, evidence = run_detector(detector_argv("replay", tmp_path, None, 1), mutant, 300, tmp_path / "m")  # type: ignore[arg-type]
    assert baseline == "survived"
    assert outcome == "killed", evidence


def test_an_offset_commit_answered_none_is_a_finding_not_a_checker_crash() -> None:
    """`_commit_offsets` returning None where it accepts: the coordinator answers the commit
    {partition: None}. The fuzz machine's abstraction once took the answer's `.name` and the run
    ended as a checker crash (exit 21); the answer is a response no spec action has, which
    ResponseAllowed reports (exit 10). Run with `first_kill`, so replay, after fuzz, is skipped."""
    mutant = next(
        m
        for m in mutants_of("coordinator", within="GroupCoordinator._commit_offsets")
        if m.operator == "return-none" and "ERROR_NONE" in m.key
    )
    [result] = run_mutants([mutant], ["fuzz", "replay"], 300, 1, None, 100, first_kill=True)
    evidence = result.evidence["fuzz"]
    assert result.outcomes["fuzz"] == "killed" and evidence.startswith("exit 10:"), evidence
    assert "ResponseAllowed: commit" in evidence, evidence
    assert result.outcomes["replay"] == "skipped"


# The sample: seed 20, 20 mutants of coordinator.py + delayed.py, less the sites below that no
# detector can kill because the mutant behaves as the original (named by site: module, function,
# operator, target text; a line-free key, so edits elsewhere do not rename them):
EQUIVALENT = {
    # the kept MemberKey is rebuilt when its group *is* the member's: an equal key, so the same watch list
    ("coordinator", "_heartbeat_key", "cmp:IsNot", "key[1] is not group_id"),
    # DelayedJoin.on_expiration's call of on_expire_join, which is a no-op
    ("delayed", "DelayedJoin.on_expiration", "drop-stmt", "self.coordinator.on_expire_join(self.group)"),
    # DelayedSync.try_complete answering None for force_complete's result: the operation is
    # complete either way, and a completed operation left on a watch list is only purged later
    ("delayed", "DelayedSync.try_complete", "return-none", "return self.force_complete()"),
    # DelayedSync.try_complete's `return False` after an internal error, None being as falsy
    ("delayed", "DelayedSync.try_complete", "return-none", "return False"),
}
# Measured on the rest (30 fuzz examples, profile ci, derandomized; `kgc mutate --sample 20 --seed
# 20 --detectors replay,fuzz --fuzz-examples 30 --jobs 2 --budget 240`, whose 20 include the four
# above). The draw is by content (bottom-k over line-free site keys, since db4d652), so an edit to
# impl/ redraws only the sites of the functions it edits, and a renamed constant the sites that
# name it; the floors before (history in git and the README) were for other draws: 18 / 14 / 18
# of 20 with two equivalent (on f4f1183). The edit that gave MemberKey one helper
# (`_heartbeat_key`) and the states and errors one place each redrew four sites, two of them
# equivalent; on it (load ~17): of the 16 others replay kills 16 (coordinator:875,
# on_complete_initial_join's `new_member_added = False` dropped, by the 240 s budget running out),
# fuzz 11, together 16. Fuzz alone misses coordinator:90 (the new-member join timeout 300000 ->
# 300001 ms: 1 ms late, which the machine's timed-liveness bounds, in scaled time units, do not
# resolve), 1114 (SyncGroup v5's protocol-name check), 1323 (a LeaveGroup by instance id), 1514
# and 1552 (a stored group's load) in these 30 examples. The floors are one mutant below.
FLOOR = {"replay": 93.0, "fuzz": 62.0, "all": 93.0}


@pytest.mark.slow
def test_kill_rates_on_a_fixed_sample_stay_above_the_floor() -> None:
    sample = sample_mutants(["coordinator", "delayed"], 20, seed=20)
    mutants = [m for m in sample if tuple(m.key.split("\0")[:4]) not in EQUIVALENT]
    assert len(mutants) == 16, [m.ident for m in sample]  # the sample the floors were measured on
    results = run_mutants(mutants, ["replay", "fuzz"], budget=240, jobs=2, traces=None, fuzz_examples=30)
    rates = scores(results, ["replay", "fuzz"])
    for detector, floor in FLOOR.items():
        assert rates[detector] >= floor, (detector, rates)


def test_ctrl_c_ends_the_detectors_running_in_their_own_sessions(tmp_path: Path) -> None:
    """The detectors run in sessions of their own, which a Ctrl-C at the terminal does not
    reach: run_mutants kills them when interrupted and starts no other (before, it waited for
    each to end or use up its budget, and the pool went on to the next detector)."""
    import os
    import signal
    import time

    # A terminal's Python turns SIGINT into KeyboardInterrupt; a child of a background job
    # (nohup, CI) inherits SIGINT ignored, and Python then installs no handler: restore it.
    code = (
        "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from kgc.conformance.mutate import mutants_of\n"
        "from kgc.conformance.mutate_run import run_mutants\n"
        "ms = list(mutants_of('coordinator', within='GroupCoordinator._commit_offsets'))[:2]\n"
        "print('start', flush=True)\n"
        "run_mutants(ms, ['fuzz', 'replay'], 600, 2, None, 1000000)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    detectors: list[int] = []
    try:
        deadline = time.monotonic() + 240
        while len(children(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        detectors = children(proc.pid)
        assert len(detectors) == 2, proc.stderr.read() if proc.poll() is not None else "no detector started"
        time.sleep(2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert "KeyboardInterrupt" in err
        for pid in detectors:
            assert not alive(pid), pid
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for pid in detectors:  # each leads its own process group (start_new_session)
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_an_unknown_module_is_a_one_line_usage_error() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "kgc.tools.entry", "mutate", "--modules", "nosuch", "--detectors", "replay"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1
    assert out.stderr.strip().count("\n") == 0 and "nosuch" in out.stderr


def test_a_detector_failing_on_the_unmutated_code_stops_the_run_with_its_own_exit_code() -> None:
    """Kills against a detector that already fails would mean nothing: kgc mutate stops before
    the first mutant, exit 27 (not TLC_ERROR's 21: nothing to do with TLC)."""
    import os

    env = dict(os.environ, KGC_IMPL_BUG="two_leaders")  # replay's baseline fails on a seeded-bug coordinator
    out = subprocess.run(
        [sys.executable, "-m", "kgc.tools.entry", "mutate", "--detectors", "replay", "--sample", "1"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 27, out.stderr[-2000:]
    assert "replay fails on the unmutated code" in out.stderr
    assert "[1/1]" not in out.stderr


def test_a_detector_whose_parent_is_killed_ends_itself() -> None:
    """A Spark task's Python worker is SIGKILLed when the job is cancelled or the driver stops,
    with no chance to kill its detectors, which run in sessions of their own: each detector ends
    its own process group once its parent is gone (run_detector's orphan guard). The stand-in
    detector sleeps and writes nothing (as one waiting on a quiet TLC run), so no broken pipe
    would end it otherwise."""
    import os
    import signal
    import time

    spawner = (
        "import os, subprocess, sys\n"
        "from kgc.conformance.mutate_run import _orphan_guard\n"
        "code = _orphan_guard(os.getpid()) + 'import time\\ntime.sleep(300)\\n'\n"
        "p = subprocess.Popen([sys.executable, '-c', code], start_new_session=True)\n"
        "print(p.pid, flush=True)\n"
        "p.wait()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", spawner], stdout=subprocess.PIPE, text=True)
    detector = 0
    try:
        assert proc.stdout is not None
        detector = int(proc.stdout.readline())
        time.sleep(1)
        assert alive(detector)
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 30
        while alive(detector) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not alive(detector), "the orphaned detector is still running"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if detector:
            try:
                os.killpg(detector, signal.SIGKILL)
            except ProcessLookupError:
                pass
