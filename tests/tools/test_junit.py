"""`--junit FILE` on replay, check, conform, validate, prove and all: every file validates
against the common JUnit XML schema (tests/tools/fixtures/junit/junit.xsd, checked with the
pinned xmlschema), holds one test case per scenario / model / trace / invariant x action, and
its failures carry the first divergence or counterexample summary and the page's path."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from toolsupport import run_kgc

from kgc.tools.junit import Case, Suite, read_junit, write_junit

ROOT = Path(__file__).parents[2]
SCHEMA = xmlschema.XMLSchema(Path(__file__).parent / "fixtures" / "junit" / "junit.xsd")
SHOW = Path(__file__).parent / "fixtures" / "show"
SCENARIOS = ROOT / "conformance" / "scenarios"


def valid(path: Path) -> ET.Element:
    SCHEMA.validate(str(path))  # raises XMLSchemaValidationError naming the offending node
    return ET.parse(path).getroot()


def cases(root: ET.Element) -> list[ET.Element]:
    return list(root.iter("testcase"))


def failures(root: ET.Element) -> list[ET.Element]:
    return [tc for tc in cases(root) if tc.find("failure") is not None]


def test_the_schema_rejects_what_ci_systems_would_not_read(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text('<testsuites><testsuite name="s" tests="x"><testcase/></testsuite></testsuites>')
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        SCHEMA.validate(str(bad))
    two = tmp_path / "two.xml"
    two.write_text(
        '<testsuites><testsuite name="s" tests="1"><testcase name="t"><failure/><error/></testcase>'
        "</testsuite></testsuites>"
    )
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        SCHEMA.validate(str(two))


def test_writer_counts_and_cleans_what_xml_cannot_hold(tmp_path: Path) -> None:
    suite = Suite(
        "s",
        [
            Case("ok", "k"),
            Case("bad\x00name", "k", 1.5, failure="step 3: \x1b[31mred\x1b[0m", details="x\x07y", page="/p.html"),
            Case("err", "k", failure="cannot read", error=True),
            Case("skip", "k", skipped="not modelled"),
        ],
    )
    path = write_junit(tmp_path / "out" / "j.xml", [suite])
    root = valid(path)
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("4", "1", "1", "1")
    back = read_junit(path)[0].cases
    assert back[1].name == "bad\ufffdname" and back[1].failure == "step 3: \ufffd[31mred\ufffd[0m"
    assert back[1].details == "x\ufffdy\npage: /p.html"
    assert back[2].errored and back[3].skipped == "not modelled"


def test_replay_one_case_per_scenario_with_the_failing_step(tmp_path: Path) -> None:
    files = sorted(str(p) for p in SCENARIOS.glob("*.json"))
    out = tmp_path / "replay.xml"
    done = run_kgc("replay", *files, "--bug", "generation_not_bumped", "--junit", str(out), cwd=tmp_path)
    lines = done.stdout.splitlines()
    assert done.returncode == (2 if any(ln.startswith("ERROR ") for ln in lines) else 1)
    root = valid(out)
    assert len(cases(root)) == len(files)
    failed = failures(root)
    assert failed and len(failed) == sum(ln.startswith("FAIL ") for ln in lines)
    assert int(root.get("errors")) == sum(ln.startswith("ERROR ") for ln in lines)
    assert all(tc.find("failure").get("message", "").startswith("step ") for tc in failed)
    invalid = tmp_path / "invalid.json"
    invalid.write_text('{"format": 1}')
    done = run_kgc("replay", str(invalid), "--junit", str(out), cwd=tmp_path)
    assert done.returncode == 2
    root = valid(out)
    assert root.get("errors") == "1" and "missing required key" in root.find(".//error").get("message")


def test_conform_failure_names_the_divergence_and_its_page(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    shutil.copy(SHOW / "simulated-default.itf.json", traces / "t.itf.json")
    out = tmp_path / "conform.xml"
    done = run_kgc("conform", str(traces), "--bug", "generation_not_bumped", "--junit", str(out), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    page = traces / "t.divergence.html"
    assert f"  page: {page}" in done.stdout.splitlines()
    root = valid(out)
    (case,) = cases(root)
    failure = case.find("failure")
    assert failure.get("message") == "step 2 InitialDelayedJoin(dt=1): generation: spec 1, implementation 0"
    assert failure.text.endswith(f"page: {page}")
    # the page shows the same first divergence, spec and implementation side by side
    assert '"divergence": {"row": 2, "step": 2' in page.read_text()


def test_prove_one_case_per_invariant_and_action(tmp_path: Path) -> None:
    out = tmp_path / "prove.xml"
    done = run_kgc("prove", "--bug", "generation_not_bumped", "--junit", str(out), cwd=tmp_path)
    assert done.returncode == 10
    root = valid(out)
    names = [tc.get("name") for tc in cases(root)]
    assert len(names) == len(set(names)) > 100 and all(" x " in n for n in names)
    failed = failures(root)
    assert failed
    assert failed[0].find("failure").get("message").startswith("not inductive: counterexample to induction: ")
    assert "pre-state:" in failed[0].find("failure").text


def test_unwritable_junit_is_a_usage_error_before_any_work(tmp_path: Path) -> None:
    done = run_kgc("prove", "--junit", "/proc/kgc/j.xml", cwd=tmp_path)
    assert done.returncode == 1 and "--junit" in done.stderr and done.stdout == ""


@pytest.mark.slow
def test_check_and_validate_and_all(tmp_path: Path) -> None:
    out = tmp_path / "check.xml"
    done = run_kgc(
        "check", "--model", "bug_two_leaders", "--out", str(tmp_path / "run"), "--junit", str(out), cwd=tmp_path
    )
    assert done.returncode == 10
    page = tmp_path / "run" / "counterexample.html"
    assert "  page: run/counterexample.html  (kgc show: the counterexample as a diagram)" in done.stdout.splitlines()
    (case,) = cases(valid(out))
    failure = case.find("failure")
    assert failure.get("message") == "INVARIANT VIOLATED: SingleLeaderPerGeneration"
    assert failure.text.startswith("State 1: Initial predicate") and failure.text.endswith(f"page: {page}")

    out = tmp_path / "validate.xml"
    scenario = SCENARIOS / "completing-rebalance-follower-sync-waits-for-leader.json"
    done = run_kgc(
        "validate", "--scenarios", str(scenario), "--bug", "generation_not_bumped", "--junit", str(out), cwd=tmp_path
    )
    assert done.returncode == 10, done.stderr
    (case,) = cases(valid(out))
    page = tmp_path / "pages" / "completing-rebalance-follower-sync-waits-for-leader.html"
    assert case.find("failure").get("message").startswith("step 5 InitialDelayedJoin")
    assert case.find("failure").text.endswith(f"page: {page}") and page.is_file()

    out = tmp_path / "all.xml"
    done = run_kgc(
        "all", "--model", "bug_two_leaders", "--only", "replay,check,prove", "--out", str(tmp_path / "all"),
        "--junit", str(out), cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert done.returncode == 10, done.stderr
    root = valid(out)
    suites = [s.get("name") for s in root.iter("testsuite")]
    assert suites == ["kgc replay", "kgc check bug_two_leaders", "kgc prove"]
    assert root.get("failures") == "1"
    assert valid(tmp_path / "all" / "junit.xml").get("tests") == root.get("tests")
    assert f"junit: {out}" in done.stderr and "report: " in done.stderr
    assert f"page: {tmp_path / 'all' / 'check' / 'counterexample.html'}" in done.stderr
    report = (tmp_path / "all" / "report.html").read_text()
    assert "<iframe class='viewer'" in report and "#bigint" not in report
    assert "results: 87/87 passed" in report or "results: " in report
