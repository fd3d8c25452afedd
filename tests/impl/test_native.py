"""The mypyc-compiled timer, purgatory, delayed operations and group metadata against the
pure-Python sources (kgc.impl.native).

The compiled modules are what the coordinator runs when scripts/setup.sh could build them, so
they must behave exactly like the sources: the same firing order (deadline, add order), the
same completions, expirations, cancellations, purges and counts on random programs, and the
same answers, timer expiries and transitions from a coordinator on random request programs.
Both are loaded in one process -- the sources under their own names, just for this comparison,
with a second copy of coordinator.py bound to them -- and Hypothesis drives the same program
through each. Where no compiler is present the "compiled"
side is the sources again, and test_the_compiled_modules_are_loaded_when_they_can_be (slow, run
by CI after setup) says so.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kgc.impl
import kgc.impl.native as native
from kgc.impl import coordinator as loaded_coordinator
from kgc.impl import delayed as loaded_delayed
from kgc.impl import group as loaded_group
from kgc.impl import purgatory as loaded_purgatory
from kgc.impl import timer as loaded_timer
from kgc.impl.clock import VirtualClock
from kgc.impl.store import InMemoryGroupStore

ROOT = Path(__file__).resolve().parents[2]
IMPL = Path(native.__file__).resolve().parent


def _load_sources() -> tuple[ModuleType, ...]:
    """timer.py, purgatory.py, group.py, delayed.py and coordinator.py from source, whatever kgc.impl
    loaded; each bound to the source copies before it. sys.modules is restored afterwards, so
    nothing else sees them."""
    names = ("kgc.impl.timer", "kgc.impl.purgatory", "kgc.impl.group", "kgc.impl.delayed", "kgc.impl.coordinator")
    saved = {n: sys.modules.pop(n) for n in names if n in sys.modules}
    try:
        mods = []
        for n in names:
            spec = importlib.util.spec_from_file_location(n, IMPL / f"{n.rsplit('.', 1)[1]}.py")
            assert spec is not None and spec.loader is not None
            mod = importlib.util.module_from_spec(spec)
            sys.modules[n] = mod
            spec.loader.exec_module(mod)
            mods.append(mod)
        return tuple(mods)
    finally:
        for n in names:
            sys.modules.pop(n, None)
        sys.modules.update(saved)


PURE_TIMER, PURE_PURGATORY, PURE_GROUP, PURE_DELAYED, PURE_COORDINATOR = _load_sources()
SIDES = {
    "loaded": (loaded_timer, loaded_purgatory),
    "source": (PURE_TIMER, PURE_PURGATORY),
}
COORDINATORS = {
    "loaded": (loaded_timer, loaded_coordinator),
    "source": (PURE_TIMER, PURE_COORDINATOR),
}


def test_the_comparison_really_has_two_sides_when_compiled():
    assert PURE_TIMER.SystemTimer is not loaded_timer.SystemTimer
    if kgc.impl.COMPILED:
        assert not hasattr(loaded_timer.SystemTimer.add, "__code__")  # a compiled method
        assert hasattr(PURE_TIMER.SystemTimer.add, "__code__")
        assert not hasattr(loaded_delayed.DelayedHeartbeat.try_complete, "__code__")
        assert hasattr(PURE_DELAYED.DelayedHeartbeat.try_complete, "__code__")
        assert not hasattr(loaded_group.GroupMetadata.add, "__code__")
        assert hasattr(PURE_GROUP.GroupMetadata.add, "__code__")
    assert issubclass(PURE_PURGATORY.DelayedOperation, PURE_TIMER.TimerTask)
    assert issubclass(PURE_DELAYED.DelayedHeartbeat, PURE_PURGATORY.DelayedOperation)
    assert PURE_COORDINATOR.DelayedHeartbeat is PURE_DELAYED.DelayedHeartbeat
    assert loaded_coordinator.DelayedHeartbeat is loaded_delayed.DelayedHeartbeat


def _operation_class(purgatory_module: ModuleType) -> type:
    class Op(purgatory_module.DelayedOperation):  # type: ignore[name-defined,misc]
        """Completable once its key is marked ready; records every callback."""

        def __init__(self, delay_ms: int, key: int, world: dict) -> None:
            super().__init__(delay_ms)
            self.key = key
            self.world = world
            self.serial = len(world["log"]) * 1_000 + world.setdefault("made", 0)  # unique, same on both sides
            world["made"] += 1

        def try_complete(self) -> bool:
            if self.key in self.world["ready"]:
                return self.force_complete()
            return False

        def on_complete(self) -> None:
            self.world["log"].append(("complete", self.serial, self.world["clock"].now_ms()))

        def on_expiration(self) -> None:
            w = self.world
            w["log"].append(("expire", self.serial, w["clock"].now_ms()))
            if self.key % 7 == 3:  # an expiry that schedules more work, counted from its deadline
                w["spawn"](self.key + 1_000_000, 5)

    return Op


# A program: steps over a small key space, so keys collide (multi-op keys, re-watching).
STEP = st.one_of(
    st.tuples(st.just("watch"), st.integers(0, 40), st.sampled_from([0, 1, 3, 19, 20, 21, 399, 400, 8_000, 10**7])),
    st.tuples(st.just("watch2"), st.integers(0, 40), st.integers(0, 40), st.integers(-3, 600)),
    st.tuples(st.just("burst"), st.integers(0, 40), st.integers(32, 120), st.integers(0, 30_000), st.booleans()),
    st.tuples(st.just("ready"), st.integers(0, 40)),
    st.tuples(st.just("check"), st.integers(0, 40)),
    st.tuples(st.just("cancel"), st.integers(0, 40)),
    st.tuples(st.just("force"), st.integers(0, 300)),
    st.tuples(st.just("advance"), st.sampled_from([0, 1, 2, 19, 20, 21, 400, 5_000, 10**6, 10**7])),
    st.tuples(st.just("fire_next")),
)


def run(side: str, program: list[tuple], start: int, tick: int, wheel: int) -> list:
    """Runs ``program`` on one side; returns everything observable, step by step."""
    timer_mod, purgatory_mod = SIDES[side]
    clock = VirtualClock(start)
    timer = timer_mod.SystemTimer(clock, tick, wheel)
    purgatory = purgatory_mod.DelayedOperationPurgatory("p", timer, purge_interval=8)
    Op = _operation_class(purgatory_mod)
    world: dict = {"ready": set(), "log": [], "clock": clock}
    ops: list = []

    def spawn(key: int, delay: int) -> None:
        op = Op(delay, key, world)
        ops.append(op)
        purgatory.try_complete_else_watch(op, [key])

    world["spawn"] = spawn
    seen: list = []
    for step in program:
        kind = step[0]
        out: object = None
        if kind == "watch":
            op = Op(step[2], step[1], world)
            ops.append(op)
            out = purgatory.try_complete_else_watch(op, [step[1]])
        elif kind == "watch2":
            op = Op(step[3], step[1], world)
            ops.append(op)
            out = purgatory.try_complete_else_watch(op, [step[1], step[2]])
        elif kind == "burst":
            # one deadline, three keys: readying two of them leaves a bucket mostly dead
            for i in range(step[2]):
                op = Op(step[3], step[1] + i % 3, world)
                ops.append(op)
                purgatory.try_complete_else_watch(op, [step[1] + i % 3])
            if step[4]:  # thin it at once: compaction with live entries left behind
                for key in (step[1], step[1] + 1):
                    world["ready"].add(key)
                    purgatory.check_and_complete(key)
        elif kind == "ready":
            world["ready"].add(step[1])
        elif kind == "check":
            out = purgatory.check_and_complete(step[1])
        elif kind == "cancel":
            out = [o.key for o in purgatory.cancel_for_key(step[1])]
        elif kind == "force" and ops:
            out = ops[step[1] % len(ops)].force_complete()
        elif kind == "advance":
            out = timer.advance_to(clock.now_ms() + step[1])
        elif kind == "fire_next":
            out = timer.fire_next()
        seen.append(
            (
                out,
                clock.now_ms(),
                timer.size(),
                timer.next_deadline_ms(),
                [t.serial for t in timer.live_tasks()],
                purgatory.num_delayed(),
                purgatory.watched(),
                sorted(purgatory.watch_keys()),
            )
        )
    timer.advance_to(clock.now_ms() + 10**8)
    seen.append((timer.size(), purgatory.num_delayed()))
    return [world["log"], seen]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    program=st.lists(STEP, max_size=60),
    start=st.sampled_from([0, 7, 10**9 + 13]),
    shape=st.sampled_from([(1, 20), (1, 2), (3, 4), (10, 20)]),
)
def test_compiled_and_source_modules_fire_and_complete_identically(program, start, shape):
    assert run("loaded", program, start, *shape) == run("source", program, start, *shape)


@pytest.mark.parametrize("side", list(SIDES))
def test_a_mostly_completed_bucket_compacts_the_same_way(side):
    timer_mod, purgatory_mod = SIDES[side]
    clock = VirtualClock()
    timer = timer_mod.SystemTimer(clock)
    Op = _operation_class(purgatory_mod)
    world: dict = {"ready": set(), "log": [], "clock": clock, "spawn": lambda key, delay: None}
    ops = [Op(300, i, world) for i in range(500)]
    for op in ops:
        timer.add(op)
    bucket = ops[0]._bucket
    for op in ops[::2] + ops[1::4] + ops[3::8]:
        op.force_complete()
    assert len(bucket.entries) < 500 and bucket.dead * 4 <= 3 * len(bucket.entries)
    assert [t.key for t in timer.live_tasks()] == [i for i in range(500) if i % 8 == 7]
    world["log"].clear()
    timer.advance_to(300)
    assert [ops[i].serial for i in range(500) if i % 8 == 7] == [s for kind, s, _ in world["log"] if kind == "expire"]


# A coordinator program: requests from four clients to two groups, and time passing, with
# timeouts that make sessions, pending members, initial joins and syncs expire in between.
CLIENT = st.integers(0, 3)
GROUP = st.sampled_from(["g", "h"])
REQUEST = st.one_of(
    st.tuples(
        st.just("join"),
        CLIENT,
        GROUP,
        st.booleans(),  # require_known_member
        st.sampled_from([None, "i0", "i1"]),  # group.instance.id
        st.sampled_from([5, 10, 30, 200]),  # session timeout (min 10: 5 is refused)
        st.sampled_from([0, 15, 60]),  # rebalance timeout
    ),
    st.tuples(st.just("sync"), CLIENT, GROUP, st.booleans()),
    st.tuples(st.just("heartbeat"), CLIENT, GROUP),
    st.tuples(st.just("leave"), CLIENT, GROUP),
    st.tuples(st.just("advance"), st.sampled_from([1, 9, 10, 11, 20, 51, 300])),
)


class _Observed:
    """Everything a coordinator tells its observer, as plain text."""

    def __init__(self, log: list) -> None:
        self.log = log

    def on_request(self, kind: str, group_id: str, args: dict) -> None:
        self.log.append(("request", kind, group_id, repr(sorted(args.items()))))

    def on_response(self, kind: str, group_id: str, result: object) -> None:
        self.log.append(("response", kind, group_id, repr(result)))

    def on_timer(self, kind: str, group_id: str, member_id: str | None) -> None:
        self.log.append(("timer", kind, group_id, member_id))

    def on_transition(self, group_id: str, old: object, new: object) -> None:
        self.log.append(("transition", group_id, repr(old), repr(new)))


def run_coordinator(side: str, program: list[tuple]) -> list:
    """Runs ``program`` on one side's coordinator; returns what it answered and observed."""
    timer_mod, coordinator_mod = COORDINATORS[side]
    clock = VirtualClock()
    timer = timer_mod.SystemTimer(clock)
    log: list = []
    config = coordinator_mod.GroupConfig(
        min_session_timeout_ms=10, max_session_timeout_ms=1000, initial_rebalance_delay_ms=50
    )
    c = coordinator_mod.GroupCoordinator(config, clock, timer, InMemoryGroupStore(), observer=_Observed(log))
    known: dict[tuple[int, str], tuple[str, int]] = {}  # (client, group) -> (member id, generation)

    def answer(client: int, group: str):  # type: ignore[no-untyped-def]
        def respond(result: object) -> None:
            log.append(("answer", client, group, repr(result)))
            member_id = getattr(result, "member_id", None)
            if member_id:
                known[(client, group)] = (member_id, getattr(result, "generation_id", -1))

        return respond

    for step in program:
        kind = step[0]
        if kind == "advance":
            timer.advance_to(clock.now_ms() + step[1])
            continue
        client, group = step[1], step[2]
        member_id, generation = known.get((client, group), ("", -1))
        if kind == "join":
            _, _, _, require_known, instance, session, rebalance = step
            c.handle_join_group(
                group, member_id, instance, require_known, f"c{client}", "host", rebalance, session,
                "consumer", [("range", "")], answer(client, group),
            )  # fmt: skip
        elif kind == "sync":
            assignment = {m: f"a-{m}" for m, _ in known.values()} if step[3] else {}
            c.handle_sync_group(group, generation, member_id, None, None, None, assignment, answer(client, group))
        elif kind == "heartbeat":
            c.handle_heartbeat(group, member_id, None, generation, answer(client, group))
        else:
            c.handle_leave_group(group, [coordinator_mod.LeaveMemberIdentity(member_id)], answer(client, group))
    timer.advance_to(clock.now_ms() + 10_000)
    log.append(("end", c.internal_errors, c.duplicate_answers, sorted(c.group_ids())))
    return log


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=st.lists(REQUEST, max_size=50))
def test_compiled_and_source_coordinators_answer_identically(program):
    loaded = run_coordinator("loaded", program)
    assert loaded == run_coordinator("source", program)
    assert loaded[-1][1] == []  # no internal error on either side


def test_the_coordinator_program_reaches_every_delayed_operation():
    """The comparison above covers what delayed.py compiles: each kind of operation expires."""
    program = [
        ("join", 0, "g", False, None, 200, 60),  # InitialDelayedJoin, then a DelayedSync
        ("join", 1, "g", False, None, 200, 60),
        ("advance", 51),
        ("advance", 51),
        ("sync", 0, "g", True),  # the other member never syncs: DelayedSync expires, a DelayedJoin
        ("advance", 300),  # waits for members that never rejoin, and removes them
        ("join", 2, "h", True, None, 30, 60),  # MEMBER_ID_REQUIRED: a pending member
        ("advance", 300),
        ("join", 3, "h", False, None, 30, 60),  # a member that stops heartbeating once stable
        ("advance", 51),
        ("advance", 51),
        ("sync", 3, "h", True),
        ("advance", 300),
    ]
    kinds = {e[1] for e in run_coordinator("loaded", program) if e[0] == "timer"}
    assert kinds == {"initial_join", "sync", "join", "heartbeat", "pending_member"}, kinds
    assert run_coordinator("loaded", program) == run_coordinator("source", program)


def test_a_stale_or_missing_build_is_never_loaded(tmp_path, monkeypatch):
    """kgc.impl.native loads the extensions only when the stamp matches the sources."""
    monkeypatch.setattr(native, "NATIVE_DIR", tmp_path)
    monkeypatch.delenv("KGC_PURE", raising=False)  # this test sets it itself, below
    assert native.native_path() is None  # nothing built
    (tmp_path / native.STAMP).write_text('{"sources": {"timer.py": "0", "purgatory.py": "0", "delayed.py": "0"}}')
    assert native.native_path() is None  # built from other sources
    current = {n: native.source_digest(IMPL / n) for n in native.COMPILED_MODULES}
    import json

    (tmp_path / native.STAMP).write_text(json.dumps({"sources": current}))
    assert native.native_path() == str(tmp_path)
    monkeypatch.setenv("KGC_PURE", "1")
    assert native.native_path() is None
    monkeypatch.setenv("KGC_PURE", "0")
    assert native.native_path() == str(tmp_path)
    # every module the stamp lists must still be its source: the benchmark's operation too
    from kgc.tools.build_native import BENCH_MODULES

    bench = {n: native.source_digest(IMPL / n) for n in BENCH_MODULES}
    (tmp_path / native.STAMP).write_text(json.dumps({"sources": {**current, **bench}}))
    assert native.native_path() == str(tmp_path)
    (tmp_path / native.STAMP).write_text(json.dumps({"sources": {**current, **dict.fromkeys(bench, "0")}}))
    assert native.native_path() is None


def _compiler_available() -> bool:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    return shutil.which(cc) is not None and headers.exists() and importlib.util.find_spec("mypyc") is not None


@pytest.mark.slow
def test_the_compiled_modules_are_loaded_when_they_can_be():
    """CI runs scripts/setup.sh, which builds them: with a compiler here they must be in use.

    Each mode is checked in a child of its own, so the test holds whichever mode this run is in
    (the pure-Python run, KGC_PURE=1, asserts the same two facts as the compiled one).
    """

    def compiled_with(pure: str) -> str:
        out = subprocess.run(
            [sys.executable, "-c", "import kgc.impl; print(kgc.impl.COMPILED)"],
            env={**os.environ, "KGC_PURE": pure},
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()

    assert kgc.impl.COMPILED == (_compiler_available() and os.environ.get("KGC_PURE", "") in ("", "0"))
    assert compiled_with("0") == str(_compiler_available()), (
        "kgc.impl.timer/purgatory/delayed/group are not compiled: run python -m kgc.tools.build_native"
    )
    assert compiled_with("1") == "False"


@pytest.mark.slow
def test_the_timer_and_purgatory_tests_pass_on_the_sources_too():
    """The same test files, in the other mode (KGC_PURE=1 when this run is compiled)."""
    env = {**os.environ, "KGC_PURE": "0" if os.environ.get("KGC_PURE", "") not in ("", "0") else "1"}
    files = ["test_timer.py", "test_timer_buckets.py", "test_timer_live_tasks.py", "test_purgatory.py"]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            *(str(ROOT / "tests" / "impl" / f) for f in files),
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert " passed" in out.stdout and "failed" not in out.stdout


@pytest.mark.slow
def test_a_failed_build_says_why_in_one_line_and_keeps_the_current_build(tmp_path):
    """No working compiler (CC pointing nowhere): exit 1, one line naming the modules."""
    before = sorted(p.name for p in native.NATIVE_DIR.iterdir()) if native.NATIVE_DIR.exists() else []
    out = subprocess.run(
        [sys.executable, "-m", "kgc.tools.build_native", "--force"],
        env={**os.environ, "CC": str(tmp_path / "no-such-cc"), "LDSHARED": str(tmp_path / "no-such-cc") + " -shared"},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "build_native: could not compile kgc.impl.timer/purgatory/delayed/group/fake_operation"
    )
    after = sorted(p.name for p in native.NATIVE_DIR.iterdir()) if native.NATIVE_DIR.exists() else []
    assert after == before


@pytest.mark.parametrize("side", list(COORDINATORS))
@pytest.mark.parametrize(
    ("owner", "attribute", "where"),
    [
        ("MemberMetadata", "has_satisfied_heartbeat", "try_complete_heartbeat"),
        ("GroupMetadata", "has_all_members_joined", "try_complete_join"),
    ],
)
def test_a_try_complete_that_raises_is_recorded_and_leaves_the_operation_pending(
    side: str, owner: str, attribute: str, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tryComplete predicates live in delayed.py (compiled): an error in one is recorded
    under Kafka's name with its traceback, as the coordinator's never-raise wrapper did, and
    the request is still answered. The predicate breaks in an interpreted subclass of the
    group or member (group.py may be compiled: a class patched in place would not reach
    compiled callers), which the coordinator makes through its metadata classes."""
    timer_mod, coordinator_mod = COORDINATORS[side]
    broken = {"on": False}
    base = getattr(coordinator_mod, owner)

    def predicate(self: object) -> bool:
        if broken["on"]:
            raise RuntimeError("broken predicate")
        return getattr(super(broken_class, self), attribute)  # type: ignore[no-any-return]

    broken_class = type(f"Broken{owner}", (base,), {attribute: property(predicate)})
    coordinator_class = type(
        "BrokenCoordinator",
        (coordinator_mod.GroupCoordinator,),
        {"group_metadata_class" if owner == "GroupMetadata" else "member_metadata_class": broken_class},
    )
    clock = VirtualClock()
    timer = timer_mod.SystemTimer(clock)
    config = coordinator_mod.GroupConfig(min_session_timeout_ms=10, initial_rebalance_delay_ms=0)
    c = coordinator_class(config, clock, timer, InMemoryGroupStore())
    answers: list = []
    join = ("g", None, False, "c", "h", 100, 1_000, "consumer", [("range", "")], answers.append)
    c.handle_join_group(join[0], "", *join[1:])
    timer.advance_to(clock.now_ms() + 1)
    member_id, generation = answers[0].member_id, answers[0].generation_id
    c.handle_sync_group("g", generation, member_id, None, None, None, {member_id: "a"}, answers.append)
    assert [a.error.name for a in answers] == ["NONE", "NONE"] and c.internal_errors == []
    broken["on"] = True
    if where == "try_complete_heartbeat":
        c.handle_heartbeat("g", member_id, None, generation, answers.append)
    else:
        c.handle_join_group(join[0], member_id, *join[1:])  # a rejoin: a DelayedJoin is tried
    assert c.internal_errors, "the broken predicate was never called"
    first = c.internal_errors[0]
    assert first.startswith(f"{where}: Traceback") and "broken predicate" in first, first
    broken["on"] = False
    timer.advance_to(clock.now_ms() + 2_000)  # the pending operation expires: the request is answered
    assert len(answers) == 3, answers
