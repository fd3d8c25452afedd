"""`kgc show` pages in a real browser: Debian's chromium driven by Playwright through its
executable path (scripts/setup.sh installs both; no browser download). For each kind of input
the DOM must hold a lifeline per client plus the coordinator, an arrow per request and
response of the page model, the violated step marked and selected, keyboard stepping that
moves the selection and the #step-N link, and no console error. A screenshot of each page
goes to $KGC_ARTIFACTS (default tests/artifacts/, ignored by git) for CI to keep.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kgc.tools.trace_page import page_from_file, write_page

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
FIXTURES = Path(__file__).parent / "fixtures" / "show"
SCENARIO = ROOT / "conformance" / "scenarios" / "completing-rebalance-follower-sync-waits-for-leader.json"
CHROMIUM = os.environ.get("KGC_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
INPUTS = {
    "counterexample": (FIXTURES / "safety-bug_two_leaders.itf.json", False),
    "liveness": (FIXTURES / "liveness-bug_no_delayed_sync.itf.json", False),
    "simulated": (FIXTURES / "simulated-default.itf.json", False),
    "recorded": (FIXTURES / "recorded-follower-sync-waits.itf.json", False),
    "scenario": (SCENARIO, False),
    "replay-cex": (FIXTURES / "safety-bug_two_leaders.itf.json", True),
}


def artifacts() -> Path:
    folder = Path(os.environ.get("KGC_ARTIFACTS") or ROOT / "tests" / "artifacts") / "show"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        pytest.fail(f"{CHROMIUM} missing: scripts/setup.sh installs Debian's chromium (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class Opened:
    def __init__(self, browser: Any, path: Path, model: dict[str, Any], hash_: str = "") -> None:
        self.model = model
        self.errors: list[str] = []
        self.page = browser.new_page(viewport={"width": 1900 if len(model["sides"]) > 1 else 1500, "height": 900})
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(path.resolve().as_uri() + hash_)

    def count(self, selector: str) -> int:
        return int(self.page.locator(selector).count())

    def current_row(self) -> int:
        rows = self.page.locator('svg[data-side="0"] .step.current').evaluate_all(
            "nodes => nodes.map(n => Number(n.dataset.row))"
        )
        assert len(rows) == 1, rows
        return int(rows[0])


def open_page(browser: Any, tmp_path: Path, kind: str, hash_: str = "") -> Opened:
    source, replay = INPUTS[kind]
    model = page_from_file(source, replay=replay)
    path = write_page(tmp_path / f"{kind}.html", model)
    return Opened(browser, path, model, hash_)


@pytest.mark.parametrize("kind", list(INPUTS))
def test_page_draws_the_model_and_steps_by_keyboard(browser: Any, tmp_path: Path, kind: str) -> None:
    opened = open_page(browser, tmp_path, kind)
    model, page = opened.model, opened.page
    for n, side in enumerate(model["sides"]):
        assert opened.count(f'svg[data-side="{n}"] .lifeline') == len(side["lifelines"])
        assert opened.count(f'svg[data-side="{n}"] .arrow') == sum(len(s["arrows"]) for s in side["steps"])
        assert opened.count(f'svg[data-side="{n}"] .step') == len(side["steps"])
    assert opened.count(".side") == len(model["sides"])
    # the page opens on the step that matters: the violation, else the divergence, else the start
    marked = (
        model["violation"]["step"] if model["violation"] else model["divergence"]["row"] if model["divergence"] else 0
    )
    assert opened.current_row() == marked
    if model["violation"]:
        assert page.locator('svg[data-side="0"] .step.violated').get_attribute("data-row") == str(
            model["violation"]["step"]
        )
        assert model["violation"]["property"] in page.locator("#violation-mark").inner_text()
    if model["loop"]:
        assert opened.count("#loop") == 1
    if model["divergence"]:
        assert opened.count(".step.diverged") == len(model["sides"])
    # keyboard: back with k and the up arrow, forward with j and the down arrow
    page.keyboard.press("Home")  # nothing bound: must not move
    assert opened.current_row() == marked
    if marked == 0:
        page.keyboard.press("j")
        page.keyboard.press("ArrowDown")
        assert opened.current_row() == 2
        page.keyboard.press("k")
        assert opened.current_row() == 1
    else:
        page.keyboard.press("k")
        page.keyboard.press("ArrowUp")
        assert opened.current_row() == marked - 2
        page.keyboard.press("j")
        assert opened.current_row() == marked - 1
    assert page.evaluate("location.hash") == f"#step-{opened.current_row()}"
    assert page.locator("#current-step").first.inner_text().startswith("step ")
    page.screenshot(path=str(artifacts() / f"{kind}.png"), full_page=True)
    assert opened.errors == []


def test_step_link_hidden_members_and_action_filter(browser: Any, tmp_path: Path) -> None:
    opened = open_page(browser, tmp_path, "counterexample", "#step-2")
    page = opened.page
    assert opened.current_row() == 2
    assert "step 2: JoinGroupUnknownMember" in page.locator("#current-step").inner_text()
    # hiding c2 removes its lifeline and every arrow to or from it
    page.locator('input[data-member="c2"]').uncheck()
    assert opened.count(".lifeline") == 2
    side = opened.model["sides"][0]
    assert opened.count(".arrow") == sum(
        1 for s in side["steps"] for a in s["arrows"] if "c2" not in (a["from"], a["to"])
    )
    page.locator('input[data-member="c2"]').check()
    # hiding a variable drops its rows from the diff table
    page.evaluate("location.hash = '#step-7'")
    page.wait_for_function("document.querySelector('#current-step').textContent.startsWith('step 7')")
    assert opened.count('#details tr[data-variable="genLeaders"]') == 1
    page.locator("#controls details summary").click()
    page.locator('input[data-variable="genLeaders"]').uncheck()
    assert opened.count('#details tr[data-variable="genLeaders"]') == 0
    # filtering by action keeps only its steps, and the keyboard walks through them only
    page.locator("#action-filter").select_option("JoinGroupUnknownMember")
    assert opened.count(".step") == 2
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("j")
    assert opened.current_row() == 2
    assert opened.errors == []


def test_kgc_all_report_embeds_a_working_viewer(browser: Any, tmp_path: Path) -> None:
    """The report's check section holds the counterexample viewer (an iframe's srcdoc): it draws,
    steps by keyboard inside the frame, and does not scroll the report to it on load."""
    from kgc.tools.cmd_all import StageResult
    from kgc.tools.report import write_report

    cex = tmp_path / "check" / "counterexample.itf.json"
    cex.parent.mkdir()
    shutil.copy(INPUTS["counterexample"][0], cex)
    summary = {"model": "bug_two_leaders", "result": "invariant_violated", "counterexample": str(cex)}
    stage = StageResult("check", ["kgc", "check"], 10, 1.0, "violated SingleLeaderPerGeneration", summary, "")
    report = write_report(tmp_path, [stage])
    errors: list[str] = []
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(report.resolve().as_uri())
    frame = page.frame_locator("iframe.viewer")
    assert frame.locator(".lifeline").count() == 3
    assert frame.locator(".step.violated").get_attribute("data-row") == "7"
    assert page.evaluate("window.scrollY") == 0
    frame.locator("#step-3").click()
    frame.locator("body").press("j")
    assert frame.locator("#current-step").inner_text().startswith("step 4")
    frame.locator("#violation-mark a").click()  # a #step-N link inside the embedded copy
    page.wait_for_timeout(200)
    assert frame.locator(".lifeline").count() == 3
    assert frame.locator("#current-step").inner_text().startswith("step 7")
    page.screenshot(path=str(artifacts() / "report.png"), full_page=True)
    assert errors == []
