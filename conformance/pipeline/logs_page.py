"""The timeline page of `kgc pipeline logs`: one row per group, its states over time as coloured
segments, findings marked on them and listed with their file and line.

A static HTML file with inline SVG (no script, no network), so it opens from an incident ticket.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kgc.conformance.pipeline.logs_history import Finding, GroupHistory, parse_ts_ms

__all__ = ["write_page"]

_COLOURS = {
    "PreparingRebalance": "#f0ad4e",
    "CompletingRebalance": "#5bc0de",
    "Stable": "#5cb85c",
    "Empty": "#cccccc",
    "Dead": "#333333",
    "Loaded": "#9b59b6",
}
_WIDTH = 900
_MAX_GROUPS = 500


def _bar(history: GroupHistory, findings: Sequence[Finding], start: int, span: int) -> str:
    parts = [f'<svg width="{_WIDTH}" height="18" role="img">']
    times = [(parse_ts_ms(ts), state, gen) for ts, state, gen in history.timeline]
    end = start + span
    for i, (at, state, gen) in enumerate(times):
        if at is None:
            continue
        nxt = next((t for t, _, _ in times[i + 1 :] if t is not None), parse_ts_ms(history.last_ts) or at)
        x = (at - start) * _WIDTH / span
        w = max(1.0, (max(nxt, at) - at) * _WIDTH / span)
        label = html.escape(f"{state} gen {gen}")
        parts.append(
            f'<rect x="{x:.1f}" y="2" width="{w:.1f}" height="14" fill="{_COLOURS.get(state, "#999")}">'
            f"<title>{label}</title></rect>"
        )
    for finding in findings:
        mark = next((parse_ts_ms(ts) for ts in _finding_ts(finding)), None)
        if mark is None or not start <= mark <= end:
            continue
        x = (mark - start) * _WIDTH / span
        colour = {"violation": "#d9534f", "unexplained": "#31708f"}.get(finding.kind, "#8a6d3b")
        parts.append(
            f'<polygon points="{x - 4:.1f},0 {x + 4:.1f},0 {x:.1f},8" fill="{colour}">'
            f"<title>{html.escape(finding.rule)}: line {finding.line}</title></polygon>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _finding_ts(finding: Finding) -> list[str]:
    import re

    found = []
    for line in reversed(finding.lines):
        match = re.search(r"\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d{1,3})?)", line)
        if match:
            found.append(match.group(1))
    return found


def write_page(
    path: Path, summary: dict[str, Any], findings: Sequence[Finding], histories: Sequence[GroupHistory]
) -> None:
    by_group: dict[str, list[Finding]] = {}
    for finding in findings:
        by_group.setdefault(finding.group, []).append(finding)
    stamps = [t for h in histories for t in (parse_ts_ms(h.first_ts), parse_ts_ms(h.last_ts)) if t is not None]
    start, end = (min(stamps), max(stamps)) if stamps else (0, 1)
    span = max(1, end - start)
    shown = sorted(histories, key=lambda h: (-len(by_group.get(h.group, [])), h.group))[:_MAX_GROUPS]
    rows = []
    for history in shown:
        marks = by_group.get(history.group, [])
        rows.append(
            f"<tr><td>{html.escape(history.group)}</td><td>{history.rebalances}</td>"
            f"<td>{html.escape(', '.join(map(str, history.generations[-5:])))}</td>"
            f"<td>{_bar(history, marks, start, span)}</td></tr>"
        )
    items = "".join(
        f'<li class="{f.kind}"><b>{f.kind}</b> {html.escape(f.rule)} &mdash; {html.escape(f.group)} at '
        f"{html.escape(f.file)}:{f.line}: {html.escape(f.message)}</li>"
        for f in findings[:2000]
    )
    legend = " ".join(
        f'<span style="background:{c};padding:0 6px;margin-right:4px">{s}</span>' for s, c in _COLOURS.items()
    )
    cats = ", ".join(f"{k} {v}" for k, v in summary.get("categories", {}).items())
    path.write_text(
        "<!doctype html><meta charset=utf-8><title>kgc pipeline logs</title>"
        "<style>body{font-family:sans-serif}td{padding:2px 6px}.violation{color:#a94442}"
        ".warning{color:#8a6d3b}.unexplained{color:#31708f}</style>"
        f"<h1>Coordinator logs: {summary.get('groups', 0)} groups, {summary.get('violations', 0)} violations, "
        f"{summary.get('warnings', 0)} warnings</h1>"
        f"<p>{summary.get('files', 0)} files, {summary.get('lines', 0)} lines: {html.escape(cats)}</p>"
        f"<p>{legend}</p><table><tr><th>group</th><th>rebalances</th><th>generations</th><th>timeline</th></tr>"
        + "".join(rows)
        + f"</table><h2>Findings</h2><ul>{items}</ul>\n"
    )
