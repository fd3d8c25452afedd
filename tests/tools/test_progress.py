"""Progress in logs (tools/progress.py): a line every KGC_PROGRESS_SECONDS while long work goes
on, none for short work, and the uncountable kind (TLC) keeps saying what it is at."""

from __future__ import annotations

import time

import pytest

from kgc.tools.progress import counted, ticking


def test_counted_prints_by_time_not_by_tenths(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KGC_PROGRESS_SECONDS", "0.2")
    with counted("job", 9, "items") as advance:
        for _ in range(9):
            advance(1)  # fast: no line
    assert capsys.readouterr().err == ""
    with counted("job", 3, "items") as advance:
        advance(1)
        time.sleep(0.3)
        advance(1)  # 0.3 s after the start: one line
        advance(1)  # done: the summary is the caller's, no line
    assert capsys.readouterr().err.splitlines() == ["job: 2/3 items (0 s)"]


def test_ticking_says_what_it_is_at(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGC_PROGRESS_SECONDS", "0.2")
    with ticking("kgc check", spinner=False) as status:
        status("Computing reachable states 1.2k distinct")
        time.sleep(0.5)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) >= 2
    assert all(line.startswith("kgc check: Computing reachable states 1.2k distinct (") for line in lines)
    with ticking("quick"):
        pass
    assert capsys.readouterr().err == ""
