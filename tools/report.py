"""The page `kgc all` leaves behind: what people would rather see than read.

One self-contained HTML file (no external assets, so it opens from a CI artifact): the stage
table, TLC's numbers, a counterexample in the `kgc show` viewer (embedded as an iframe's srcdoc,
so the report stays one file), the proof matrix (invariant x action), and per stage every
result (its JUnit test cases) and its whole output, each collapsible -- nothing cut to a tail.
Written by hand with html.escape rather than a template engine: the page is small and a
dependency for it is not.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

__all__ = ["write_report"]


class _StageLike(Protocol):
    name: str
    exit_code: int
    seconds: float
    headline: str
    summary: dict[str, Any]
    output_tail: str

    @property
    def passed(self) -> bool: ...


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}.pass{background:#e6f6e6}.fail{background:#fbe3e3}.unknown{background:#fff4d6}
.changed{background:#fff0b3}code,pre{font-family:ui-monospace,monospace;font-size:90%}
pre{background:#f7f7f7;padding:0.6em;overflow-x:auto}h2{margin-top:1.6em}
.m{font-size:80%;text-align:center;width:1.5em}
details{margin:0.4em 0}summary{cursor:pointer;color:#124}
iframe.viewer{width:100%;height:720px;border:1px solid #ccc}
"""


def _e(value: object) -> str:
    return html.escape(str(value))


def _stage_table(results: Iterable[_StageLike]) -> str:
    rows = "".join(
        f"<tr class='{'pass' if r.passed else 'fail'}'><td>{_e(r.name)}</td>"
        f"<td>{'PASS' if r.passed else f'FAIL (exit {r.exit_code})'}</td><td>{r.seconds:.1f} s</td>"
        f"<td>{_e(r.headline)}</td></tr>"
        for r in results
    )
    return f"<table><tr><th>stage</th><th>verdict</th><th>time</th><th>what it says</th></tr>{rows}</table>"


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 160 else text[:157] + "..."


def _counterexample(path: Path) -> str:
    """Each step a row; a variable's cell is highlighted when the step changed it."""
    try:
        trace = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        return f"<p>counterexample {_e(path)} unreadable: {_e(exc)}</p>"
    states = trace.get("states", [])
    names = trace.get("vars") or sorted({k for s in states for k in s if k != "#meta"})
    head = "".join(f"<th>{_e(n)}</th>" for n in names)
    rows, prev = [], None
    for i, state in enumerate(states):
        action = (state.get("#meta") or {}).get("action", "")
        cells = "".join(
            f"<td class='{'changed' if prev is not None and prev.get(n) != state.get(n) else ''}'>"
            f"<code>{_e(_short(state.get(n)))}</code></td>"
            for n in names
        )
        rows.append(f"<tr><td>{i}</td><td>{_e(action)}</td>{cells}</tr>")
        prev = state
    return f"<div style='overflow-x:auto'><table><tr><th>#</th><th>action</th>{head}</tr>{''.join(rows)}</table></div>"


def _viewer(counterexample: Path, page: Path | None) -> str:
    """The counterexample in the `kgc show` viewer, inline; a link to its own page too."""
    from kgc.tools.trace_page import page_from_itf, render_html

    try:
        document = render_html(page_from_itf(counterexample))
    except Exception as exc:  # noqa: BLE001 - the report is written whatever the trace holds
        return f"<p>counterexample {_e(counterexample)} cannot be drawn: {_e(exc)}</p>" + _counterexample(
            counterexample
        )
    link = f"<p>page: <a href='{_e(page.resolve().as_uri())}'>{_e(page)}</a></p>" if page else ""
    return (
        f"{link}<iframe class='viewer' title='counterexample' srcdoc=\"{html.escape(document, quote=True)}\"></iframe>"
    )


def _check_section(stage: _StageLike) -> str:
    s = stage.summary
    if not s:
        return f"<pre>{_e(stage.output_tail)}</pre>"
    keys = [
        "model",
        "result",
        "violated",
        "states_generated",
        "distinct_states",
        "depth",
        "wall_seconds",
        "states_per_second",
        "workers",
        "tlc_version",
        "run_dir",
    ]
    rows = "".join(f"<tr><th>{k}</th><td>{_e(s.get(k))}</td></tr>" for k in keys if s.get(k) is not None)
    out = f"<table>{rows}</table>"
    if s.get("counterexample"):
        page = Path(s["page"]) if s.get("page") else None
        out += "<h3>Counterexample</h3>" + _viewer(Path(s["counterexample"]), page)
    return out


def _prove_section(stage: _StageLike) -> str:
    checks = stage.summary.get("checks") or []
    if not checks:
        return f"<pre>{_e(stage.output_tail)}</pre>"
    grid: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    actions: list[str] = []
    for c in checks:
        grid[c["invariant"]][c["action"]] = c
        if c["action"] not in actions:
            actions.append(c["action"])
    head = "".join(f"<th class='m' title='{_e(a)}'>{i}</th>" for i, a in enumerate(actions))
    legend = ", ".join(f"{i}: {_e(a)}" for i, a in enumerate(actions))
    rows = []
    for inv, by_action in grid.items():
        cells = []
        for a in actions:
            c = by_action.get(a)
            status = (c or {}).get("status", "")
            cls = {"proved": "pass", "not inductive": "fail", "not_inductive": "fail"}.get(
                status, "unknown" if c else ""
            )
            mark = {"proved": "✓", "": ""}.get(status, "✗" if cls == "fail" else "?")
            cells.append(f"<td class='m {cls}' title='{_e(status)} {_e((c or {}).get('ms', ''))} ms'>{mark}</td>")
        rows.append(f"<tr><td>{_e(inv)}</td>{''.join(cells)}</tr>")
    return f"<table><tr><th>invariant \\ action</th>{head}</tr>{''.join(rows)}</table><p><small>{legend}</small></p>"


def _plain_section(stage: _StageLike) -> str:
    return ""


def _results(run_dir: Path, name: str) -> str:
    """Every test case the stage's JUnit file holds, failures first and open."""
    from kgc.tools.junit import read_junit

    path = run_dir / f"{name}.junit.xml"
    try:
        suites = read_junit(path)
    except Exception:  # noqa: BLE001 - no file (stage not run, crashed): nothing to list
        return ""
    cases = [c for s in suites for c in s.cases]
    bad = [c for c in cases if c.failure is not None]
    rows = []
    for c in sorted(cases, key=lambda c: c.failure is None):
        verdict = "ERROR" if c.errored else "FAIL" if c.failed else "skipped" if c.skipped is not None else "PASS"
        cls = "pass" if verdict == "PASS" else "unknown" if verdict == "skipped" else "fail"
        detail = f"<details><summary>{_e(c.failure)}</summary><pre>{_e(c.details)}</pre></details>" if c.failure else ""
        rows.append(f"<tr class='{cls}'><td>{_e(c.name)}</td><td>{verdict}</td><td>{detail or _e(c.output)}</td></tr>")
    summary = f"results: {len(cases) - len(bad)}/{len(cases)} passed" + (f", {len(bad)} not" if bad else "")
    return (
        f"<details{' open' if bad else ''}><summary>{_e(summary)} ({_e(path.name)})</summary>"
        f"<table><tr><th>test case</th><th>verdict</th><th>detail</th></tr>{''.join(rows)}</table></details>"
    )


def _output(run_dir: Path, stage: _StageLike) -> str:
    """The stage's whole stdout (kept in NAME.out), collapsed."""
    path = run_dir / f"{stage.name}.out"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = stage.output_tail
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    return f"<details><summary>whole output ({lines} lines, {_e(path.name)})</summary><pre>{_e(text)}</pre></details>"


_SECTIONS = {"check": _check_section, "prove": _prove_section}


def write_report(run_dir: Path, results: list[_StageLike]) -> Path:
    """Write run_dir/report.html and return its path."""
    ok = all(r.passed for r in results)
    body = [
        f"<h1>kgc all: {'all stages passed' if ok else 'FAILED'}</h1>",
        _stage_table(results),
    ]
    for r in results:
        body.append(
            f"<h2>{_e(r.name)}</h2>"
            + _SECTIONS.get(r.name, _plain_section)(r)
            + _results(run_dir, r.name)
            + _output(run_dir, r)
        )
    page = run_dir / "report.html"
    page.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>kgc report</title>"
        f"<style>{_CSS}</style></head><body>{''.join(body)}</body></html>"
    )
    return page
