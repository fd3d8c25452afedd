"""The per-group history rules: what no run of the protocol can log is a violation, known failure
patterns are warnings, and a partial history (mid-rebalance start, gaps, moves) is neither."""

from __future__ import annotations

from datetime import datetime

from hypothesis import given
from hypothesis import strategies as st

from kgc.conformance.pipeline.logs_history import Event, check_group, parse_ts_ms, state_sequence


def ev(
    line: int, kind: str, generation: int | None = None, *, sec: float = 0.0, broker: str = "0", **kw: object
) -> Event:
    ms = int(round(sec * 1000))
    ts = f"2024-01-01 00:{ms // 60000:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"
    return Event("f.log", line, ts, broker, kind, "g", generation, text=f"line {line}", **kw)  # type: ignore[arg-type]


def rules(events: list[Event]) -> list[tuple[str, str, int]]:
    findings, _ = check_group("g", events)
    return [(f.kind, f.rule, f.line) for f in findings]


def test_a_normal_history_has_no_finding() -> None:
    events = [
        ev(1, "prepare", 0, sec=0),
        ev(2, "stabilized", 1, sec=3, members=2),
        ev(3, "assignment", 1, sec=3.1),
        ev(4, "member_expired", sec=40),
        ev(5, "prepare", 1, sec=40),
        ev(6, "empty", 2, sec=45),
    ]
    assert rules(events) == []


def test_mid_rebalance_start_is_not_a_violation() -> None:
    assert rules([ev(1, "stabilized", 8, sec=0, members=1), ev(2, "assignment", 8, sec=1)]) == []


def test_generation_completed_twice_is_a_violation() -> None:
    events = [ev(1, "stabilized", 5, members=1), ev(2, "prepare", 5, sec=10), ev(3, "stabilized", 5, sec=11, members=1)]
    assert ("violation", "generation_completed_twice", 3) in rules(events)


def test_generation_going_backwards_is_a_violation_unless_reset() -> None:
    back = [ev(1, "stabilized", 5, members=1), ev(2, "prepare", 3, sec=10)]
    assert ("violation", "generation_backwards", 2) in rules(back)
    for reset in ("dead", "unloaded", "loaded"):
        moved = [ev(1, "stabilized", 5, members=1), ev(2, reset, 5, sec=5), ev(3, "prepare", 0, sec=10)]
        assert rules(moved) == [], reset


def test_a_group_moving_to_another_broker_may_start_over() -> None:
    events = [ev(1, "stabilized", 5, members=1), ev(2, "prepare", 4, sec=10, broker="2")]
    assert rules(events) == []


def test_stabilized_without_members_is_a_violation() -> None:
    assert ("violation", "stabilized_without_members", 1) in rules([ev(1, "stabilized", 5, members=0)])


def test_rebalance_storm_is_a_warning() -> None:
    burst = [ev(i, "prepare" if i % 2 else "stabilized", 10 + i // 2, sec=i * 0.002, members=1) for i in range(1, 8)]
    found = rules(burst)
    assert ("warning", "rebalance_storm", 5) in found
    assert all(kind == "warning" for kind, _, _ in found)


def test_metadata_write_failure_after_stabilize_is_a_warning() -> None:
    events = [ev(1, "stabilized", 5, members=1), ev(2, "assignment", 5, sec=1), ev(3, "store_error", 5, sec=1.5)]
    assert rules(events) == [("warning", "metadata_write_failed", 3)]


def test_stuck_in_completing_rebalance_is_a_warning() -> None:
    events = [ev(1, "stabilized", 5, members=2), ev(2, "prepare", 5, sec=400, state="PreparingRebalance")]
    assert rules(events) == [("warning", "stuck_completing_rebalance", 2)]
    ok = [ev(1, "stabilized", 5, members=2), ev(2, "prepare", 5, sec=100, state="PreparingRebalance")]
    assert rules(ok) == []


def test_members_expiring_over_and_over_is_a_warning() -> None:
    events = [ev(i, "member_expired", sec=i * 30) for i in range(1, 6)]
    assert rules(events) == [("warning", "repeated_member_expiry", 5)]


def test_state_sequence_and_time_in_state() -> None:
    events = [
        ev(1, "prepare", 0, sec=0),
        ev(2, "stabilized", 1, sec=3, members=1),
        ev(3, "assignment", 1, sec=4),
        ev(4, "unloaded", 1, sec=10),
    ]
    assert state_sequence(events) == [
        ("PreparingRebalance", 0),
        ("CompletingRebalance", 1),
        ("Stable", 1),
        ("Dead", 1),
    ]
    _, history = check_group("g", events)
    assert history.state_ms == {"PreparingRebalance": 3000, "CompletingRebalance": 1000, "Stable": 6000, "Dead": 0}
    assert history.rebalances == 1 and history.generations == [0, 1]


def test_a_completion_that_does_not_start_a_new_generation_is_a_violation() -> None:
    events = [ev(1, "prepare", 3), ev(2, "stabilized", 3, sec=1, members=1)]
    assert ("violation", "generation_not_incremented", 2) in rules(events)
    assert ("violation", "generation_not_incremented", 1) in rules([ev(1, "empty", 0)])


def _strptime_ms(ts: str) -> int | None:
    """What parse_ts_ms returned before its fast path: the reference it must agree with."""
    if not ts:
        return None
    text = ts.replace("T", " ").replace(",", ".")
    for layout in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S"):
        try:
            return int(datetime.strptime(text, layout).timestamp() * 1000)
        except ValueError:
            continue
    return None


_TS_PART = st.sampled_from(
    ["2024", "1999", "24", "0", "00", "1", "01", "9", "12", "13", "23", "24", "31", "32", "59", "60"]
)


@given(
    st.lists(_TS_PART, min_size=6, max_size=6),
    st.sampled_from([" ", "T", "  ", "\t", "x", ""]),
    st.sampled_from(["", ",5", ".123", ",123456", ",1234567", ",", ".x", " ", "Z"]),
)
def test_parse_ts_ms_reads_what_strptime_read(parts: list[str], sep: str, tail: str) -> None:
    year, month, day, hour, minute, second = parts
    ts = f"{year}-{month}-{day}{sep}{hour}:{minute}:{second}{tail}"
    assert parse_ts_ms(ts) == _strptime_ms(ts)


def test_parse_ts_ms_kafka_layouts() -> None:
    assert parse_ts_ms("2021-06-09 10:00:01,250") == parse_ts_ms("2021-06-09 10:00:00,000") + 1250  # type: ignore[operator]
    assert parse_ts_ms("2021-06-09T10:00:00.5") == _strptime_ms("2021-06-09 10:00:00,500")
    assert parse_ts_ms("") is None and parse_ts_ms("yesterday") is None and parse_ts_ms("2021-02-30 10:00:00") is None


def test_an_event_parses_its_time_once() -> None:
    event = ev(1, "prepare", 0, sec=1.5)
    assert event.ts_ms == event.ts_ms == parse_ts_ms(event.ts)
    assert "ts_ms" in vars(event)  # cached on the event: the window rules read it again and again


@given(
    st.lists(_TS_PART, min_size=6, max_size=6),
    st.lists(st.sampled_from(["", ",5", ".123", ",123456", ",999", ".000001"]), min_size=2, max_size=6),
)
def test_parse_ts_ms_of_a_cached_second_is_what_strptime_read(parts: list[str], tails: list[str]) -> None:
    """One whole second parsed once, then its cached value with each fraction (and a second read)."""
    year, month, day, hour, minute, second = parts
    for tail in tails:
        ts = f"{year}-{month}-{day} {hour}:{minute}:{second}{tail}"
        assert parse_ts_ms(ts) == parse_ts_ms(ts) == _strptime_ms(ts)


def test_event_of_is_the_constructor_with_its_time_parsed() -> None:
    made = Event("server.log", 7, "2021-06-09 10:00:01,250", "1", "stabilized", "g", 3, "m", "", "", 2, "", "t")
    built = Event.of("server.log", 7, "2021-06-09 10:00:01,250", "1", "stabilized", "g", 3, "m", "", "", 2, "", "t")
    assert built == made and hash(built) == hash(made) and repr(built) == repr(made)
    assert vars(built)["ts_ms"] == made.ts_ms == parse_ts_ms(made.ts)
