"""Hostile inputs, table-driven, across the commands: each gets its documented exit code and a
one-line message naming the file (or option) and what is wrong, never a traceback.

Each case builds its input in a fresh folder, runs the real `kgc` console script there, and
checks (exit code, a fragment of the message). A valid ITF trace to corrupt comes from a real
`kgc simulate` run of the smoke model, once per module.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

KGC = Path(sys.executable).with_name("kgc")
ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "conformance" / "scenarios" / "stable-leave.json"

Build = Callable[[Path, dict[str, Any]], list[str]]


@dataclass(frozen=True)
class Case:
    id: str
    build: Build  # (folder, fixtures) -> argv after `kgc`
    code: int
    message: str  # a fragment the output (stdout + stderr) must contain
    env: dict[str, str] | None = None


def write(folder: Path, name: str, data: str | bytes) -> str:
    path = folder / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(path)


def deep(n: int) -> str:
    return "[" * n + "]" * n


def scenario(**changes: Any) -> str:
    raw = json.loads(SCENARIO.read_text())
    raw.update(changes)
    return json.dumps(raw)


def itf(fx: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> str:
    raw = json.loads(json.dumps(fx["itf"]))
    change(raw)
    return json.dumps(raw)


def drop_var_in_state(raw: dict[str, Any]) -> None:
    del raw["states"][1]["generation"]


def drop_var_everywhere(raw: dict[str, Any]) -> None:
    for s in raw["states"]:
        del s["generation"]
    raw["vars"].remove("generation")


def wrong_type(raw: dict[str, Any]) -> None:
    raw["states"][1]["generation"] = "seven"


def no_java_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    java = shutil.which("java")
    dirs = [d for d in env.get("PATH", "").split(os.pathsep) if not (java and Path(d, "java").exists())]
    env["PATH"] = os.pathsep.join([str(KGC.parent), *dirs])
    return env


def old_java_env() -> dict[str, str]:
    """A PATH whose first java is a Java 8 (the version line a real 8u392 prints)."""
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"kgc-old-java-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    java = folder / "java"
    java.write_text(
        "#!/bin/sh\necho 'openjdk version \"1.8.0_392\"' >&2\necho 'OpenJDK Runtime Environment (build 1.8.0_392-b08)' >&2\n"
    )
    java.chmod(0o755)
    env = no_java_env()
    env["PATH"] = os.pathsep.join([str(folder), env["PATH"]])
    return env


R = "replay"
CASES: list[Case] = [
    # --- scenario files (kgc replay) -------------------------------------------------------
    Case("scenario-empty", lambda d, fx: [R, write(d, "s.json", "")], 2, "s.json"),
    Case("scenario-not-json", lambda d, fx: [R, write(d, "s.json", "{not json")], 2, "s.json"),
    Case("scenario-array", lambda d, fx: [R, write(d, "s.json", "[1, 2]")], 2, "s.json"),
    Case("scenario-deep-100k", lambda d, fx: [R, write(d, "s.json", deep(100_000))], 2, "nested"),
    Case("scenario-deep-then-good", lambda d, fx: [R, write(d, "a.json", deep(100_000)), str(SCENARIO)], 2, "PASS"),
    Case("scenario-binary", lambda d, fx: [R, write(d, "s.json", bytes(range(256)) * 4)], 2, "s.json"),
    Case("scenario-bad-utf8", lambda d, fx: [R, write(d, "s.json", b'{"format": 1, "name": "\xff\xfe"}')], 2, "s.json"),
    Case("scenario-huge", lambda d, fx: [R, write(d, "s.json", b" " * (59 * 1024 * 1024) + b"{}")], 2, "too large"),
    Case("scenario-no-format", lambda d, fx: [R, write(d, "s.json", json.dumps({"steps": []}))], 2, "s.json"),
    Case("scenario-format-99", lambda d, fx: [R, write(d, "s.json", scenario(format=99))], 2, "format"),
    Case("scenario-steps-not-list", lambda d, fx: [R, write(d, "s.json", scenario(steps={"a": 1}))], 2, "steps"),
    Case(
        "scenario-step-unknown",
        lambda d, fx: [R, write(d, "s.json", scenario(steps=[{"do": "dance", "id": "x"}]))],
        2,
        "step",
    ),
    Case(
        "scenario-step-wrong-type",
        lambda d, fx: [R, write(d, "s.json", scenario(steps=[{"do": "join", "id": 5, "group": "g"}]))],
        2,
        "step",
    ),
    Case("scenario-duplicate-keys", lambda d, fx: [R, write(d, "s.json", '{"format": 1, "format": 1}')], 2, "s.json"),
    Case("scenario-nan", lambda d, fx: [R, write(d, "s.json", '{"format": NaN}')], 2, "s.json"),
    Case("scenario-huge-int", lambda d, fx: [R, write(d, "s.json", scenario(steps=[{"tick": 10**400}]))], 2, "s.json"),
    Case("scenario-negative-tick", lambda d, fx: [R, write(d, "s.json", scenario(steps=[{"tick": -5}]))], 2, "s.json"),
    Case("scenario-directory", lambda d, fx: [R, str(d)], 2, str(Path("x")).replace("x", "")),
    Case("scenario-missing", lambda d, fx: [R, str(d / "nope.json")], 2, "nope.json"),
    Case("scenario-symlink-loop", lambda d, fx: [R, _loop(d)], 2, "loop.json"),
    Case("scenario-unknown-bug", lambda d, fx: [R, "--bug", "no_such_bug", str(SCENARIO)], 2, "no_such_bug"),
    # --- ITF traces (kgc conform, kgc replay-cex) ------------------------------------------
    Case(
        "itf-states-empty",
        lambda d, fx: ["conform", write(d, "t.itf.json", itf(fx, lambda r: r.update(states=[])))],
        2,
        "t.itf.json",
    ),
    Case(
        "itf-states-missing",
        lambda d, fx: ["conform", write(d, "t.itf.json", itf(fx, lambda r: r.pop("states")))],
        2,
        "states",
    ),
    Case(
        "itf-state-missing-var",
        lambda d, fx: ["conform", write(d, "t.itf.json", itf(fx, drop_var_in_state))],
        2,
        "generation",
    ),
    Case(
        "itf-var-missing-everywhere",
        lambda d, fx: ["conform", write(d, "t.itf.json", itf(fx, drop_var_everywhere))],
        2,
        "generation",
    ),
    Case("itf-wrong-type", lambda d, fx: ["conform", write(d, "t.itf.json", itf(fx, wrong_type))], 2, "generation"),
    Case("itf-not-json", lambda d, fx: ["conform", write(d, "t.itf.json", "{{")], 2, "t.itf.json"),
    Case("itf-empty-file", lambda d, fx: ["conform", write(d, "t.itf.json", "")], 2, "t.itf.json"),
    Case("itf-deep", lambda d, fx: ["conform", write(d, "t.itf.json", deep(100_000))], 2, "nested"),
    Case(
        "itf-bad-bigint",
        lambda d, fx: [
            "conform",
            write(d, "t.itf.json", itf(fx, lambda r: r["states"][0].update(generation={"#bigint": "x1"}))),
        ],
        2,
        "t.itf.json",
    ),
    Case(
        "itf-vars-not-list",
        lambda d, fx: ["conform", write(d, "t.itf.json", itf(fx, lambda r: r.update(vars="generation")))],
        2,
        "vars",
    ),
    Case(
        "itf-state-not-object",
        lambda d, fx: ["conform", write(d, "t.itf.json", itf(fx, lambda r: r["states"].append(7)))],
        2,
        "t.itf.json",
    ),
    Case("itf-top-array", lambda d, fx: ["conform", write(d, "t.itf.json", "[]")], 2, "t.itf.json"),
    Case(
        "itf-unknown-action",
        lambda d, fx: [
            "conform",
            write(d, "t.itf.json", itf(fx, lambda r: r["states"][1]["lastAction"].update(name="Dance"))),
        ],
        2,
        "t.itf.json",
    ),
    Case("itf-folder-empty", lambda d, fx: ["conform", str(d)], 2, "no *.itf.json"),
    Case("itf-missing", lambda d, fx: ["conform", str(d / "none.itf.json")], 2, "none.itf.json"),
    Case(
        "cex-states-empty",
        lambda d, fx: ["replay-cex", write(d, "c.itf.json", itf(fx, lambda r: r.update(states=[])))],
        2,
        "c.itf.json",
    ),
    Case(
        "cex-missing-var",
        lambda d, fx: ["replay-cex", write(d, "c.itf.json", itf(fx, drop_var_in_state))],
        2,
        "generation",
    ),
    Case(
        "cex-var-missing-everywhere",
        lambda d, fx: ["replay-cex", write(d, "c.itf.json", itf(fx, drop_var_everywhere))],
        2,
        "generation",
    ),
    Case("cex-not-json", lambda d, fx: ["replay-cex", write(d, "c.itf.json", "nope")], 2, "c.itf.json"),
    # --- kgc show: any trace kind, and --junit on every command ------------------------------
    Case("show-not-json", lambda d, fx: ["show", write(d, "c.itf.json", "nope")], 2, "c.itf.json"),
    Case("show-array", lambda d, fx: ["show", write(d, "c.json", "[1, 2]")], 2, "neither a trace"),
    Case("show-neither", lambda d, fx: ["show", write(d, "c.json", '{"x": 1}')], 2, "neither a trace"),
    Case(
        "show-missing-var",
        lambda d, fx: ["show", write(d, "c.itf.json", itf(fx, drop_var_in_state))],
        2,
        "generation",
    ),
    Case(
        "show-bad-bigint",
        lambda d, fx: [
            "show",
            write(d, "c.itf.json", itf(fx, lambda r: r["states"][0].update(now={"#bigint": "x"}))),
        ],
        2,
        "c.itf.json",
    ),
    Case(
        "show-scenario-invalid",
        lambda d, fx: ["show", write(d, "s.json", scenario(steps=[{"do": "dance"}]))],
        2,
        "s.json",
    ),
    Case("show-missing", lambda d, fx: ["show", str(d / "none.itf.json")], 2, "none.itf.json"),
    Case("show-out-proc", lambda d, fx: ["show", fx["itf_path"], "-o", "/proc/kgc/x.html"], 1, "/proc/kgc/x.html"),
    Case("junit-proc", lambda d, fx: ["replay", str(SCENARIO), "--junit", "/proc/kgc/j.xml"], 1, "--junit"),
    Case("junit-is-folder", lambda d, fx: ["prove", "--junit", str(d)], 1, "is a folder"),
    # --- recorded runs (kgc validate) ------------------------------------------------------
    Case("validate-not-json", lambda d, fx: ["validate", write(d, "r.itf.json", "nope")], 2, "r.itf.json"),
    Case(
        "validate-states-empty",
        lambda d, fx: ["validate", write(d, "r.itf.json", itf(fx, lambda r: r.update(states=[])))],
        2,
        "r.itf.json",
    ),
    Case("validate-missing", lambda d, fx: ["validate", str(d / "gone.itf.json")], 2, "gone.itf.json"),
    Case("validate-bad-scenario", lambda d, fx: ["validate", "--scenarios", write(d, "s.json", "{")], 2, "s.json"),
    # --- models and options ----------------------------------------------------------------
    Case("model-relative-path", lambda d, fx: ["check", "--model", "../../x"], 1, "model"),
    Case("model-absolute-path", lambda d, fx: ["check", "--model", "/etc/passwd"], 1, "model"),
    Case("model-unknown", lambda d, fx: ["check", "--model", "no_such_model"], 1, "no_such_model"),
    Case("model-dotdot-inside", lambda d, fx: ["check", "--model", "../models/smoke"], 1, "not a model name"),
    Case("model-empty", lambda d, fx: ["check", "--model", ""], 1, "model"),
    Case("simulate-model-path", lambda d, fx: ["simulate", "--model", "../smoke", "--out", str(d / "o")], 1, "model"),
    Case("workers-huge", lambda d, fx: ["check", "--model", "smoke", "--workers", "1e20"], 1, "workers"),
    Case("workers-zero", lambda d, fx: ["check", "--model", "smoke", "--workers", "0"], 1, "workers"),
    Case("workers-negative", lambda d, fx: ["check", "--model", "smoke", "--workers", "-3"], 1, "workers"),
    Case("timeout-negative", lambda d, fx: ["check", "--model", "smoke", "--timeout", "-5"], 1, "timeout"),
    Case(
        "traces-zero",
        lambda d, fx: ["simulate", "--model", "smoke", "--traces", "0", "--out", str(d / "o")],
        1,
        "traces",
    ),
    Case(
        "seed-text", lambda d, fx: ["simulate", "--model", "smoke", "--seed", "abc", "--out", str(d / "o")], 1, "seed"
    ),
    Case("out-proc", lambda d, fx: ["check", "--model", "smoke", "--out", "/proc/kgc-nowhere"], 1, "/proc/kgc-nowhere"),
    Case("out-is-file", lambda d, fx: ["check", "--model", "smoke", "--out", write(d, "f", "x")], 1, "f"),
    Case(
        "simulate-out-proc",
        lambda d, fx: ["simulate", "--model", "smoke", "--out", "/proc/kgc-nowhere"],
        1,
        "/proc/kgc-nowhere",
    ),
    Case(
        "conform-record-proc",
        lambda d, fx: ["conform", fx["itf_path"], "--record", "/proc/kgc-nowhere"],
        1,
        "/proc/kgc-nowhere",
    ),
    Case("fuzz-unknown-bug", lambda d, fx: ["fuzz", "--bug", "no_such_bug", "--examples", "1"], 1, "no_such_bug"),
    Case("fuzz-examples-zero", lambda d, fx: ["fuzz", "--examples", "0"], 1, "examples"),
    Case(
        "fuzz-save-proc",
        lambda d, fx: ["fuzz", "--examples", "1", "--save", "/proc/kgc-nowhere"],
        1,
        "/proc/kgc-nowhere",
    ),
    Case("prove-unknown-bug", lambda d, fx: ["prove", "--bug", "no_such_bug"], 1, "no_such_bug"),
    Case("all-unknown-stage", lambda d, fx: ["all", "--only", "dance"], 1, "dance"),
    Case(
        "all-out-proc", lambda d, fx: ["all", "--only", "prove", "--out", "/proc/kgc-nowhere"], 1, "/proc/kgc-nowhere"
    ),
    # --- Java missing ----------------------------------------------------------------------
    Case("java-missing-check", lambda d, fx: ["check", "--model", "smoke"], 23, "java", env=no_java_env()),
    Case(
        "java-missing-simulate",
        lambda d, fx: ["simulate", "--model", "smoke", "--out", str(d / "o")],
        23,
        "java",
        env=no_java_env(),
    ),
    Case("java-too-old-check", lambda d, fx: ["check", "--model", "smoke"], 23, "Java 8", env=old_java_env()),
    Case(
        "java-too-old-simulate",
        lambda d, fx: ["simulate", "--model", "smoke", "--out", str(d / "o")],
        23,
        "Java 8",
        env=old_java_env(),
    ),
    Case("java-missing-validate", lambda d, fx: ["validate", "--random", "1"], 23, "java", env=no_java_env()),
]


def _loop(d: Path) -> str:
    link = d / "loop.json"
    link.symlink_to(link)
    return str(link)


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("sim")
    done = subprocess.run(
        [
            str(KGC),
            "simulate",
            "--model",
            "smoke",
            "--traces",
            "1",
            "--depth",
            "6",
            "--seed",
            "1",
            "--out",
            str(folder / "t"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    path = folder / "t" / "trace-00000.itf.json"
    return {"itf": json.loads(path.read_text()), "itf_path": str(path)}


def test_the_table_is_big_enough() -> None:
    assert len(CASES) >= 60
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(case: Case, tmp_path: Path, fixtures: dict[str, Any]) -> None:
    argv = case.build(tmp_path, fixtures)
    done = subprocess.run(
        [str(KGC), *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=case.env if case.env is not None else os.environ.copy(),
    )
    text = done.stdout + done.stderr
    assert "Traceback" not in text, text[-3000:]
    assert done.returncode == case.code, f"exit {done.returncode}, expected {case.code}:\n{text[-2000:]}"
    assert case.message in text, f"{case.message!r} not in:\n{text[-2000:]}"
