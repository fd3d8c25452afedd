"""The page model of `kgc show` (kgc.tools.trace_page), without a browser: lifelines, arrows,
notes, marks and values for each kind of input, and the HTML it is inlined in.

Fixtures (tests/tools/fixtures/show/): a safety counterexample of bug_two_leaders and a
liveness one of bug_no_delayed_sync (`kgc check`), a simulated default-model trace
(`kgc simulate --seed 7`), and the recorded run of a shipped scenario (record_scenario_file).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from toolsupport import run_kgc

from kgc.conformance.abstraction.constants import SPEC_VARIABLES
from kgc.tools.trace_page import COORDINATOR, page_from_file, render_html

FIXTURES = Path(__file__).parent / "fixtures" / "show"
SAFETY = FIXTURES / "safety-bug_two_leaders.itf.json"
LIVENESS = FIXTURES / "liveness-bug_no_delayed_sync.itf.json"
SIMULATED = FIXTURES / "simulated-default.itf.json"
RECORDED = FIXTURES / "recorded-follower-sync-waits.itf.json"
SCENARIO = (
    Path(__file__).parents[2] / "conformance" / "scenarios" / "completing-rebalance-follower-sync-waits-for-leader.json"
)


def arrows(page: dict[str, Any], side: int = 0) -> list[tuple[int, str, str, str]]:
    return [(s["index"], a["from"], a["to"], a["label"]) for s in page["sides"][side]["steps"] for a in s["arrows"]]


def test_safety_counterexample_lifelines_arrows_and_violation() -> None:
    page = page_from_file(SAFETY)
    side = page["sides"][0]
    assert [lifeline["id"] for lifeline in side["lifelines"]] == [COORDINATOR, "c1", "c2"]
    assert page["kind"] == "counterexample"
    assert page["violation"] == {"property": "SingleLeaderPerGeneration", "step": 7, "text": "at step 7"}
    assert page["loop"] is None
    drawn = arrows(page)
    assert len(drawn) == 7
    # the two JoinGroups parked in steps 1-2 are answered by the InitialDelayedJoin in step 4
    assert drawn[2] == (
        4,
        COORDINATOR,
        "c1",
        "JoinGroup response: NONE (memberId=1, generationId=1, leader, members={1, 2})",
    )
    assert drawn[3] == (4, COORDINATOR, "c2", "JoinGroup response: NONE (memberId=2, generationId=1)")
    # the rejoin answered at once, naming c2 leader of generation 1 a second time
    assert drawn[-2:] == [
        (7, "c2", COORDINATOR, "JoinGroup(memberId=2)"),
        (7, COORDINATOR, "c2", "JoinGroup response: NONE (memberId=2, generationId=1, leader, members={1, 2})"),
    ]
    steps = side["steps"]
    assert [s["kind"] for s in steps] == [
        "init",
        "request",
        "request",
        "timer",
        "timer",
        "request",
        "client",
        "request",
    ]
    assert steps[3]["notes"] == [{"on": COORDINATOR, "kind": "timer", "text": "InitialDelayedJoin expired at t=1"}]
    assert steps[6]["notes"] == [{"on": "c2", "kind": "client", "text": "ClientAbandon"}]
    assert [s["band"] for s in steps[3:5]] == [
        {"state": "PreparingRebalance", "generation": "0"},
        {"state": "CompletingRebalance", "generation": "1"},
    ]


def test_changes_are_nested_paths_in_tla_syntax() -> None:
    page = page_from_file(SAFETY)
    step7 = page["sides"][0]["steps"][7]
    changes = {c["path"]: (c["var"], c["old"], c["new"]) for c in step7["changes"]}
    assert changes["genLeaders"] == ("genLeaders", "{1}", "{1, 2}")
    assert changes["cphase[c2]"] == ("cphase", '"Unjoined"', '"Joined"')
    assert changes["cleader[c2]"] == ("cleader", "FALSE", "TRUE")
    # the initial state lists every variable, whole
    assert len(page["sides"][0]["steps"][0]["changes"]) == len(SPEC_VARIABLES) + 1  # + lastAction
    assert "genLeaders" in page["variables"] and "lastAction" in page["variables"]


@pytest.mark.parametrize("path", [SAFETY, LIVENESS, SIMULATED, RECORDED, SCENARIO])
def test_values_are_tla_text_not_itf(path: Path) -> None:
    text = json.dumps(page_from_file(path))
    assert "#bigint" not in text and "#set" not in text and "#map" not in text


def test_liveness_counterexample_marks_the_lasso() -> None:
    page = page_from_file(LIVENESS)
    assert page["loop"] == {"from": 6, "to": 8, "stuttering": False}
    assert page["violation"]["property"] == "SyncCompletes"
    assert page["violation"]["text"] == "along the loop, steps 6..8"
    steps = page["sides"][0]["steps"]
    assert [n["kind"] for n in steps[7]["notes"]] == ["time"]
    # a liveness model keeps no error codes: heartbeats are answered all the same, unnamed
    assert [a["label"] for a in steps[8]["arrows"]] == [
        "Heartbeat(memberId=1)",
        "Heartbeat response (error code not kept by this model)",
    ]
    # the follower's SyncGroup stays parked: no answer in the loop
    assert [a["kind"] for a in steps[5]["arrows"]] == ["request"]


def test_simulated_trace_has_no_violation_and_three_clients() -> None:
    page = page_from_file(SIMULATED)
    assert page["kind"] == "simulated"
    assert page["violation"] is None and page["loop"] is None
    assert len(page["sides"][0]["lifelines"]) == 4
    assert len(page["sides"][0]["steps"]) == 25
    # GROUP_MAX_SIZE_REACHED is answered at once and drawn as an error
    errors = [a for s in page["sides"][0]["steps"] for a in s["arrows"] if a["error"] == "GROUP_MAX_SIZE_REACHED"]
    assert errors and all(a["to"] != COORDINATOR for a in errors)


def test_scenario_answers_the_parked_follower_when_the_leader_syncs() -> None:
    page = page_from_file(SCENARIO)
    assert page["kind"] == "scenario"
    side = page["sides"][0]
    assert len(side["lifelines"]) == 4
    leader_sync = side["steps"][8]
    assert leader_sync["origin"] == "step 10 sync sa"
    assert [(a["from"], a["to"]) for a in leader_sync["arrows"]] == [
        ("c1", COORDINATOR),
        (COORDINATOR, "c1"),
        (COORDINATOR, "c2"),
    ]
    assert leader_sync["band"] == {"state": "Stable", "generation": "1"}


def test_recorded_run_keeps_the_implementation_events() -> None:
    page = page_from_file(RECORDED)
    assert page["kind"] == "recorded"
    origins = [s.get("origin") for s in page["sides"][0]["steps"]]
    assert origins[0] == "initial state" and origins[-1] == "step 14 sync sc"
    assert len(arrows(page)) == len(arrows(page_from_file(SCENARIO)))


def test_cex_replay_puts_spec_and_implementation_side_by_side() -> None:
    page = page_from_file(SAFETY, replay=True)
    spec, impl = page["sides"]
    assert len(spec["steps"]) == len(impl["steps"]) == 8
    assert page["divergence"] == {"row": 7, "step": 7, "text": "genLeaders: spec {1, 2}, implementation {1}"}
    assert page["title"].endswith(": NONE")
    assert [s["replay"]["follows"] for s in impl["steps"]] == [True] * 7 + [False]
    # the real coordinator does not name c2 leader again
    assert impl["steps"][7]["arrows"][1]["label"] == "JoinGroup response: NONE (memberId=2, generationId=1)"


def test_html_is_self_contained_and_cannot_be_broken_out_of() -> None:
    page = page_from_file(SAFETY)
    page["summary"] = "</script><script>alert(1)</script><!--"
    text = render_html(page)
    assert text.count("</script>") == 2  # the page's own two script elements
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert "<link" not in text and "@import" not in text
    data = re.search(r'<script type="application/json" id="kgc-page">(.*?)</script>', text, re.S)
    assert data is not None and json.loads(data.group(1))["summary"] == page["summary"]


def test_kgc_show_writes_the_page_and_refuses_bad_input(tmp_path: Path) -> None:
    out = tmp_path / "cex.html"
    done = run_kgc("show", str(SAFETY), "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"page: {out}"
    assert "SingleLeaderPerGeneration" in out.read_text()
    bad = tmp_path / "bad.json"
    bad.write_text('{"states": [1]}')
    done = run_kgc("show", str(bad), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"kgc show: error: {bad}: state 0: a state is an object, not 1"]
    done = run_kgc("show", str(SAFETY), "-o", "/proc/kgc-show.html", cwd=tmp_path)
    assert done.returncode == 1 and "cannot write" in done.stderr
