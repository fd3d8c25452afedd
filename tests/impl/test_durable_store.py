"""FileGroupStore: what survives a torn or corrupted file, compaction, and a failing disk."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kgc.impl.clock import VirtualClock
from kgc.impl.coordinator import GroupConfig, GroupCoordinator
from kgc.impl.durable_store import MAGIC, FileGroupStore, encode_record
from kgc.impl.errors import Errors
from kgc.impl.group import GroupState
from kgc.impl.store import StoredGroup, StoredMember
from kgc.impl.timer import SystemTimer


def record(group: str, generation: int, leader: str = "m-1") -> StoredGroup:
    member = StoredMember(leader, None, "client", "host", 1000, 1000, "sub", f"{group}:{generation}")
    return StoredGroup(group, generation, "consumer", "range", leader, (member,))


def store_all(store: FileGroupStore, records: list[StoredGroup]) -> list[Errors]:
    answers: list[Errors] = []
    for r in records:
        store.store_group(r, answers.append)
    return answers


RECORDS = [record("a", 1), record("b", 1), record("a", 2), record("b", 2, "m-2"), record("a", 3)]


def expected_after(n: int) -> dict[str, StoredGroup]:
    """The last record per group among the first n appended."""
    last: dict[str, StoredGroup] = {}
    for r in RECORDS[:n]:
        last[r.group_id] = r
    return last


def recovered(path: Path) -> dict[str, StoredGroup]:
    with FileGroupStore(path) as store:
        return {g: r for g in store.group_ids() if (r := store.load_group(g)) is not None}


@pytest.fixture
def full_file(tmp_path: Path) -> tuple[bytes, list[int]]:
    """The bytes of a store holding RECORDS and the offset where each record ends."""
    path = tmp_path / "full.log"
    with FileGroupStore(path) as store:
        assert store_all(store, RECORDS) == [Errors.NONE] * len(RECORDS)
    ends, offset = [], len(MAGIC)
    for r in RECORDS:
        offset += len(encode_record(r))
        ends.append(offset)
    data = path.read_bytes()
    assert len(data) == ends[-1]
    return data, ends


def test_records_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "s.log"
    with FileGroupStore(path) as store:
        store_all(store, RECORDS)
    with FileGroupStore(path) as again:
        assert again.recovery.problem is None and again.recovery.records == len(RECORDS)
        assert {g: again.load_group(g) for g in again.group_ids()} == expected_after(len(RECORDS))


def test_truncation_at_every_offset_recovers_the_last_whole_record(
    tmp_path: Path, full_file: tuple[bytes, list[int]]
) -> None:
    data, ends = full_file
    for cut in range(len(data) + 1):
        path = tmp_path / f"cut{cut}.log"
        path.write_bytes(data[:cut])
        whole = sum(1 for end in ends if end <= cut)
        assert recovered(path) == expected_after(whole), f"cut at {cut}"
        torn = cut not in (0, len(MAGIC), *ends)
        with FileGroupStore(path) as store:  # the torn tail was cut off: reopening is clean
            assert store.recovery.problem is None, f"cut at {cut}: tail still there after recovery"
            assert (path.stat().st_size == ends[whole - 1]) if whole else True
        if torn:
            path.write_bytes(data[:cut])
            with FileGroupStore(path) as store:
                assert store.recovery.problem is not None and store.recovery.discarded_bytes > 0


def test_a_flipped_byte_anywhere_recovers_the_records_before_it(
    tmp_path: Path, full_file: tuple[bytes, list[int]]
) -> None:
    data, ends = full_file
    for offset in range(len(data)):
        damaged = bytearray(data)
        damaged[offset] ^= 0x5A
        path = tmp_path / f"flip{offset}.log"
        path.write_bytes(bytes(damaged))
        intact = sum(1 for end in ends if end <= offset) if offset >= len(MAGIC) else 0
        assert recovered(path) == expected_after(intact), f"flip at {offset}"
        with FileGroupStore(path) as store:  # and appending after the recovery works
            store_all(store, [record("c", 9)])
        assert recovered(path) == {**expected_after(intact), "c": record("c", 9)}, f"append after flip at {offset}"


def test_compaction_keeps_the_last_record_per_group(tmp_path: Path) -> None:
    path = tmp_path / "c.log"
    with FileGroupStore(path, compact_ratio=2, compact_min_records=8) as store:
        for generation in range(1, 40):
            store_all(store, [record("a", generation), record("b", generation)])
        assert store.compactions > 0
        assert store.records_in_file() <= 8
    assert recovered(path) == {"a": record("a", 39), "b": record("b", 39)}
    assert path.stat().st_size < 12 * len(encode_record(record("a", 39)))


def test_a_compaction_that_crashed_before_its_rename_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "c.log"
    with FileGroupStore(path) as store:
        store_all(store, RECORDS)
    path.with_name("c.log.compacting").write_bytes(MAGIC + b"half a record")
    assert recovered(path) == expected_after(len(RECORDS))
    assert not path.with_name("c.log.compacting").exists()


def test_a_failing_disk_answers_not_coordinator_and_keeps_what_was_acknowledged(tmp_path: Path) -> None:
    """The kernel refuses writes past RLIMIT_FSIZE (EFBIG): a real failing write, in a child."""
    path = tmp_path / "full.log"
    script = textwrap.dedent(f"""
        import resource, signal
        from kgc.impl.durable_store import FileGroupStore
        from kgc.impl.store import StoredGroup, StoredMember
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))
        store = FileGroupStore({str(path)!r})
        answers = []
        for g in range(100):
            m = StoredMember("m", None, "c", "h", 1, 1, "s", "x" * 50)
            store.store_group(StoredGroup("a", g, "consumer", "range", "m", (m,)), lambda e: answers.append(e.name))
        acked = max(i for i, a in enumerate(answers) if a == "NONE")
        print(acked, answers[acked + 1])
    """)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    acked, next_answer = int(out[0]), out[1]
    assert next_answer == "NOT_COORDINATOR"
    with FileGroupStore(path) as store:
        assert store.recovery.problem is None, "a failed write left a partial record"
        last = store.load_group("a")
        assert last is not None and last.generation_id == acked


def test_a_coordinator_restarted_on_the_file_loads_the_stored_generation(tmp_path: Path) -> None:
    path = tmp_path / "g.log"
    with FileGroupStore(path) as store:
        store_all(store, [record("grp", 7, "leader-1")])
    clock = VirtualClock(0)
    with FileGroupStore(path) as store:
        coordinator = GroupCoordinator(GroupConfig(), clock, SystemTimer(clock), store)
        for group_id in store.group_ids():
            coordinator.on_group_loaded(group_id)
        group = coordinator.group("grp")
        assert group is not None and group.generation_id == 7 and group.leader_id == "leader-1"
        assert group.state is GroupState.Stable
