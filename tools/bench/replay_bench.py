"""`kgc bench replay`: how fast the harness drives the implementation, and validates its runs.

Four measurements, each on real work:
- coordinator: requests/s through the GroupCoordinator's handlers alone (a stable group of 10
  members heartbeating, with a rejoin-driven rebalance every 200 requests) -- the ceiling for any
  replay;
- replay: scenario steps/s through `kgc replay`'s library path (parse once, run many times);
- conform: spec steps/s of `kgc conform` on traces TLC simulated from the `small` model (each step
  drives the implementation and recomputes and compares the whole abstract state);
- validate: traces/min of `kgc validate` on random recorded runs of 50 steps, batched (one TLC
  run per batch) against one TLC run per trace, measured on the same traces.
The coordinator and replay rates are per second of this thread's CPU time (time.thread_time), so
other processes on a shared machine do not count against them (wall time gave a fourth of the rate
on a 2-core machine running ten busy processes). Targets from the issue: >= 100k implementation
steps/s per core (issue 18: handlers >= 300k requests/s, replay >= 150k steps/s); >= 3,000 traces of 50 steps
validated per minute.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from kgc.conformance.scenario import shipped_scenarios
from kgc.tools.bench.baseline import BaselineComparison, compare_with_baseline
from kgc.tools.bench.result import BenchCheckFailed, BenchOptions, BenchResult

__all__ = ["replay_benchmark"]

STEPS_TARGET = 100_000
HANDLERS_TARGET = 300_000  # issue 18
REPLAY_TARGET = 150_000  # issue 18
VALIDATE_TARGET = 3_000


def _coordinator_rate(requests: int) -> tuple[float, int]:
    from kgc.conformance.driver import Driver
    from kgc.impl.coordinator import GroupConfig
    from kgc.impl.errors import Errors

    driver = Driver(GroupConfig(min_session_timeout_ms=10, initial_rebalance_delay_ms=0))
    clock, timer, coord = driver.clock, driver.timer, driver.coordinator
    answers: dict[str, Any] = {}
    protos = [("range", "")]
    for i in range(10):
        coord.handle_join_group(
            "g", "", None, False, f"c{i}", "h", 1000, 1000, "consumer", protos, lambda r, i=i: answers.__setitem__(i, r)
        )
    timer.advance_to(clock.now_ms() + 1)
    g = coord.group("g")
    if g is None or len(g.members) != 10:
        raise BenchCheckFailed("coordinator benchmark: group did not form")
    members = list(g.members)
    gen = g.generation_id
    errors = 0
    for mm in members:
        coord.handle_sync_group(
            "g",
            gen,
            mm,
            "consumer",
            "range",
            None,
            {x: "a" for x in members} if mm == g.leader_id else {},
            lambda r: None,
        )

    # bound once: `Errors.X` is a slow lookup (EnumType.__getattr__), and this callback runs
    # inside the measured loop (~1k of a heartbeat's ~36k instructions, valgrind)
    ok, rebalancing = Errors.NONE, Errors.REBALANCE_IN_PROGRESS

    def count(e: Errors) -> None:
        nonlocal errors
        errors += e is not ok and e is not rebalancing

    started = time.thread_time()
    for n in range(requests):
        m = members[n % len(members)]
        if n % 200 == 199:  # one member's rejoin starts a rebalance; every member rejoins it
            for mm in members:
                coord.handle_join_group("g", mm, None, False, "c", "h", 1000, 1000, "consumer", protos, lambda r: None)
            gen = coord.group("g").generation_id
            leader = coord.group("g").leader_id
            coord.handle_sync_group(
                "g", gen, leader, "consumer", "range", None, {x: "a" for x in members}, lambda r: None
            )
            for mm in members:
                if mm != leader:
                    coord.handle_sync_group("g", gen, mm, "consumer", "range", None, {}, lambda r: None)
        else:
            coord.handle_heartbeat("g", m, None, gen, count)
        if n % 1000 == 0:
            timer.advance_to(clock.now_ms() + 1)
    seconds = time.thread_time() - started
    g = coord.group("g")
    if g is None or len(g.members) != 10 or g.state.value != "Stable":
        raise BenchCheckFailed(
            f"coordinator benchmark: group ended {g and g.state} with {g and len(g.members)} members"
        )
    if errors:
        raise BenchCheckFailed(f"coordinator benchmark: {errors} requests answered with an error")
    return requests / seconds, requests


def _replay_rate(min_seconds: float) -> tuple[float, int]:
    from kgc.conformance.replay import run_scenario
    from kgc.conformance.scenario import load_scenario

    files = sorted(shipped_scenarios().glob("*.json"))
    if not files:
        raise BenchCheckFailed("replay benchmark: no scenarios shipped in kgc.conformance")
    scenarios = [load_scenario(f) for f in files]
    steps_per_round = sum(len(s.steps) for s in scenarios)
    rounds, started = 0, time.thread_time()
    while True:
        for s in scenarios:
            if not run_scenario(s).passed:
                raise BenchCheckFailed(f"replay benchmark: scenario {s.name} failed")
        rounds += 1
        if time.thread_time() - started >= min_seconds:
            break
    seconds = time.thread_time() - started
    return rounds * steps_per_round / seconds, rounds * steps_per_round


def _conform_rate(traces: int, seed: int, work: Path) -> tuple[float, int, dict[str, int]]:
    from kgc.conformance.mbt import conform, simulate

    simulate("small", traces, 30, seed, work / "sim")
    report = conform([work / "sim"])
    if not report.ok:
        raise BenchCheckFailed(f"conform benchmark: {report.summary()}")
    counts = {v: report.count(v) for v in ("CONFORMS", "DIVERGED")}
    return report.steps_per_second, report.steps, counts


def _validate_rates(traces: int, single: int, seed: int, work: Path) -> dict[str, Any]:
    from kgc.conformance.recorder import RANDOM_RUN_CONSTANTS, random_run
    from kgc.conformance.validate import validate_traces

    recorded = [random_run(RANDOM_RUN_CONSTANTS, 50, s) for s in range(seed, seed + traces)]
    batched = validate_traces(recorded, work_dir=work / "batched")
    if not batched.ok:
        raise BenchCheckFailed(f"validate benchmark: batched run rejected a correct run: {batched.errors[:1]}")
    started = time.monotonic()
    for n, t in enumerate(recorded[:single]):
        one = validate_traces([t], work_dir=work / f"single{n}", jobs=1)
        if not one.ok:
            raise BenchCheckFailed(f"validate benchmark: trace {t.name} rejected alone")
    single_seconds = time.monotonic() - started
    return {
        "batched_traces": traces,
        "batched_seconds": round(batched.seconds, 2),
        "batched_per_min": traces / batched.seconds * 60,
        "tlc_runs": batched.tlc_runs,
        "single_traces": single,
        "single_seconds": round(single_seconds, 2),
        "single_per_min": single / single_seconds * 60,
    }


def _baseline_rows(
    cmp: BaselineComparison, summary: dict[str, Any], notes: list[str], data: dict[str, Any]
) -> list[dict[str, Any]]:
    """`--baseline REV`: this tree's handler and replay rates over REV's, measured in turns;
    the target of each is the rate target's ratio to REV's own rate on its day, when on record."""
    known = cmp.known()
    rows = []
    for measure, label, target in (
        ("handlers", "coordinator handlers", HANDLERS_TARGET),
        ("replay", "kgc replay", REPLAY_TARGET),
    ):
        ratio = cmp.median_ratio(measure)
        wanted = target / known[measure] if known is not None else None
        rows.append(
            {
                "what": f"{label}, this tree / {cmp.commit[:7]}",
                "amount": len(cmp.pairs),
                "rate": ratio,
                "unit": "x (median of pairs)",
                "target": wanted,
                "vs_target": ratio / wanted if wanted is not None else None,
            }
        )
        summary[f"{measure}_over_baseline"] = round(ratio, 3)
        if known is not None:  # the rate this tree would show on the day the target was set
            summary[f"{measure}_at_baseline_day"] = round(ratio * known[measure])
    notes.append(
        f"baseline {cmp.commit[:12]}: {len(cmp.pairs)} pairs in turns, each side in its own process; "
        "a ratio row's target is the rate target over the baseline's rate on its own day"
    )
    data["baseline"] = {"rev": cmp.rev, "commit": cmp.commit, "pairs": cmp.pairs, "on_its_day": known}
    return rows


def replay_benchmark(options: BenchOptions) -> BenchResult:
    quick = options.quick
    baseline = None
    if options.baseline is not None:  # first: a revision that cannot be built fails before the long work
        baseline = compare_with_baseline(
            options.baseline,
            pairs=1 if quick else 3,
            requests=20_000 if quick else 400_000,
            seconds=0.5 if quick else 8.0,
            say=options.say,
        )
    with tempfile.TemporaryDirectory(prefix="kgc-bench-replay-") as tmp:
        work = Path(tmp)
        options.say("coordinator handlers ...")
        coord_rate, coord_n = _coordinator_rate(20_000 if quick else 400_000)
        options.say("scenario replay ...")
        replay_rate, replay_n = _replay_rate(0.5 if quick else 10.0)
        options.say("conform (TLC simulate + conform) ...")
        conform_rate, conform_n, verdicts = _conform_rate(20 if quick else 1000, options.seed + 1, work)
        options.say("validate, batched vs one TLC run per trace ...")
        val = _validate_rates(30 if quick else 3000, 3 if quick else 10, options.seed + 1, work)
    rows = [
        {
            "what": "coordinator handlers",
            "amount": coord_n,
            "rate": coord_rate,
            "unit": "requests/s",
            "target": HANDLERS_TARGET,
            "vs_target": coord_rate / HANDLERS_TARGET,
        },
        {
            "what": "kgc replay (scenarios)",
            "amount": replay_n,
            "rate": replay_rate,
            "unit": "steps/s",
            "target": REPLAY_TARGET,
            "vs_target": replay_rate / REPLAY_TARGET,
        },
        {
            "what": "kgc conform",
            "amount": conform_n,
            "rate": conform_rate,
            "unit": "steps/s",
            "target": STEPS_TARGET,
            "vs_target": conform_rate / STEPS_TARGET,
        },
        {
            "what": "kgc validate, batched",
            "amount": val["batched_traces"],
            "rate": val["batched_per_min"],
            "unit": "traces/min",
            "target": VALIDATE_TARGET,
            "vs_target": val["batched_per_min"] / VALIDATE_TARGET,
        },
        {
            "what": "kgc validate, 1 TLC run/trace",
            "amount": val["single_traces"],
            "rate": val["single_per_min"],
            "unit": "traces/min",
            "target": VALIDATE_TARGET,
            "vs_target": val["single_per_min"] / VALIDATE_TARGET,
        },
    ]
    summary = {
        "coordinator_requests_per_s": round(coord_rate),
        "replay_steps_per_s": round(replay_rate),
        "conform_steps_per_s": round(conform_rate),
        "validate_batched_traces_per_min": round(val["batched_per_min"]),
        "validate_single_traces_per_min": round(val["single_per_min"], 1),
        "batched_over_single": round(val["batched_per_min"] / val["single_per_min"], 1),
        "conform_verdicts": verdicts,
    }
    notes = ["coordinator and replay rates: per second of this thread's CPU time (time.thread_time)"]
    data: dict[str, Any] = {"validate": val}
    if baseline is not None:
        rows += _baseline_rows(baseline, summary, notes, data)
    if quick:
        notes.append("quick mode: sizes too small for timing claims")
    return BenchResult(
        "replay",
        True,
        ["what", "amount", "rate", "unit", "target", "vs_target"],
        rows,
        summary,
        notes,
        data,
    )
