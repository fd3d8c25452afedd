"""The offsets file of `kgc serve --store`: the last commit per partition comes back after a
restart, and a torn last line (a crash in the middle of a write) is dropped and cut off."""

from __future__ import annotations

from pathlib import Path

from kgc.tools.serve.offsets import OffsetLog


def test_offsets_come_back_and_a_torn_tail_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "s.offsets"
    log = OffsetLog(path)
    log.append("g", {"t-0": 5, "t-1": 7})
    log.append("g", {"t-0": 9})
    log.append("h", {"u-0": 1})
    log.close()
    size = path.stat().st_size
    with path.open("ab") as f:
        f.write(b'{"g":"g","p":"t-1","o":1')  # torn: no end of line
    again = OffsetLog(path)
    assert again.offsets == {"g": {"t-0": 9, "t-1": 7}, "h": {"u-0": 1}}
    assert path.stat().st_size == size
    again.append("g", {"t-1": 8})
    again.close()
    assert OffsetLog(path).offsets["g"] == {"t-0": 9, "t-1": 8}
