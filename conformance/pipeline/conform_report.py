"""The page `kgc pipeline conform` writes next to its Parquet tables (DIR/report.html): the
signature table first (what to read), then the coverage heat maps (what the corpus reached and
what it never did). One self-contained file, no scripts, so it opens from anywhere.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["write_report"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.zero { background: #fbe3e3; color: #a33; }
.summary span { margin-right: 1.5em; }
"""


def _heat(hits: int, top: int) -> str:
    if hits == 0:
        return ' class="n zero"'
    shade = int(235 - 150 * math.log1p(hits) / math.log1p(max(top, 1)))
    return f' class="n" style="background: rgb({shade}, {min(255, shade + 25)}, 255)"'


def _signature_table(table: Sequence[dict[str, Any]]) -> str:
    if not table:
        return "<p>No divergences: every trace conformed.</p>"
    head = "".join(
        f"<th>{h}</th>" for h in ("#", "action", "variable", "kind", "traces", "shortest", "replay", "example")
    )
    rows = []
    for t in table:
        link = f'<a href="{html.escape(t["file"])}">{html.escape(t["file"])}</a>' if t.get("file") else ""
        if t.get("scenario"):
            fails = t.get("scenario_fails_at")
            where = f" (fails at step {fails})" if fails is not None else ""
            link += f'<br><a href="{html.escape(t["scenario"])}">{html.escape(t["scenario"])}</a>{where}'
        elif t.get("scenario_note"):
            link += f"<br>no scenario: {html.escape(t['scenario_note'])}"
        rows.append(
            f"<tr><td>{t['signature']}</td><td>{html.escape(str(t['action']))}</td>"
            f"<td>{html.escape(str(t['variable']))}</td><td>{t['kind']}</td><td class=n>{t['count']}</td>"
            f"<td>{html.escape(str(t['shortest_trace']))} (step {t['shortest_step']})<br>{link}</td>"
            f"<td><code>{html.escape(t['replay'])}</code>"
            + (f"<br><code>{html.escape(t['scenario_replay'])}</code>" if t.get("scenario_replay") else "")
            + "</td>"
            f"<td>{html.escape(str(t['example'] or '')[:300])}</td></tr>"
        )
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _spec_actions(coverage: Sequence[tuple[str, str, int]]) -> str:
    actions = sorted((c, h) for k, c, h in coverage if k == "spec_action")
    top = max((h for _, h in actions), default=1)
    rows = "".join(f"<tr><td>{html.escape(a)}</td><td{_heat(h, top)}>{h:,}</td></tr>" for a, h in actions)
    return f"<table><tr><th>spec action</th><th>steps</th></tr>{rows}</table>"


def _impl_grid(coverage: Sequence[tuple[str, str, int]]) -> str:
    """One heat map per request: group state (rows) x response (columns)."""
    cells: dict[str, dict[tuple[str, str], int]] = {}
    for kind, cell, hits in coverage:
        if kind != "impl_cell" or cell.count("|") != 2:
            continue
        state, request, response = cell.split("|")
        cells.setdefault(request, {})[(state, response)] = hits
    top = max((h for grid in cells.values() for h in grid.values()), default=1)
    out = []
    for request in sorted(cells):
        grid = cells[request]
        states = sorted({s for s, _ in grid})
        responses = sorted({r for _, r in grid}, key=lambda r: (r not in ("NONE", "PARKED"), r))
        head = "".join(f"<th>{html.escape(r)}</th>" for r in responses)
        body = "".join(
            f"<tr><th>{html.escape(s)}</th>"
            + "".join(f"<td{_heat(grid.get((s, r), 0), top)}>{grid.get((s, r), 0):,}</td>" for r in responses)
            + "</tr>"
            for s in states
        )
        out.append(f"<h3>{html.escape(request)}</h3><table><tr><th>group state</th>{head}</tr>{body}</table>")
    return "".join(out)


def write_report(path: Path, summary: Any) -> None:
    """`summary`: conform_job.ConformSummary (with its coverage rows)."""
    s = summary
    facts = (
        f"<span>{s.traces:,} traces</span><span>{s.conforms:,} conform</span>"
        f"<span>{s.diverged:,} diverge</span><span>{s.not_behaviour:,} not a spec behaviour</span>"
        f"<span>{s.malformed:,} malformed</span><span>{s.steps:,} steps</span>"
        f"<span>{s.seconds:.1f} s ({s.traces_per_s:,.1f} traces/s) on {html.escape(s.master)}</span>"
    )
    never = [c for k, c, h in s.coverage if k == "spec_action" and h == 0]
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>kgc pipeline conform</title>
<style>{_STYLE}</style></head><body>
<h1>kgc pipeline conform</h1><p class="summary">{facts}</p>
<h2>Divergence signatures ({s.signatures})</h2>{_signature_table(s.signature_table)}
<h2>Coverage: spec actions</h2>
<p>Never reached: {html.escape(", ".join(never)) or "none"}.</p>{_spec_actions(s.coverage)}
<h2>Coverage: implementation (group state x request x response)</h2>
<p>Red cells were never reached by this corpus.</p>{_impl_grid(s.coverage)}
</body></html>
"""
    Path(path).write_text(page, encoding="utf-8")
