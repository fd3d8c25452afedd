"""kgc.impl.fake_operation: Kafka's FakeOperation, the purgatory benchmark's operation.

It is compiled with the purgatory when the native build is present (so the benchmark times the
purgatory, not the interpreter's method calls), and behaves like any DelayedOperation either way.
"""

from __future__ import annotations

import os
import subprocess
import sys

import kgc.impl
from kgc.impl.clock import VirtualClock
from kgc.impl.fake_operation import FakeFlags, FakeOperation
from kgc.impl.purgatory import DelayedOperationPurgatory
from kgc.impl.timer import SystemTimer


def _purgatory() -> tuple[VirtualClock, SystemTimer, DelayedOperationPurgatory]:
    clock = VirtualClock()
    timer = SystemTimer(clock)
    return clock, timer, DelayedOperationPurgatory("bench", timer)


def test_it_is_compiled_exactly_when_the_purgatory_is():
    compiled = not hasattr(FakeOperation.try_complete, "__code__")
    assert compiled == kgc.impl.COMPILED


def test_an_operation_completes_once_its_flag_is_set_and_its_key_checked():
    satisfied, expired = bytearray(3), bytearray(3)
    flags = FakeFlags(satisfied, expired)
    clock, timer, purgatory = _purgatory()
    ops = [FakeOperation(10, i, flags) for i in range(3)]
    for i, op in enumerate(ops):
        assert purgatory.try_complete_else_watch(op, (i,)) is False
    satisfied[1] = 1
    assert purgatory.check_and_complete(1) == 1
    assert purgatory.check_and_complete(1) == 0  # completed once
    assert ops[1].is_completed() and not ops[0].is_completed()
    assert purgatory.num_delayed() == 2
    timer.advance_to(clock.now_ms() + 10)
    assert expired == bytearray([1, 0, 1])  # the completed one never expires
    assert purgatory.num_delayed() == 0


def test_an_operation_whose_flag_is_already_set_completes_without_being_watched():
    flags = FakeFlags(bytearray([1]), bytearray(1))
    _, timer, purgatory = _purgatory()
    assert purgatory.try_complete_else_watch(FakeOperation(5, 0, flags), (0,)) is True
    assert purgatory.num_delayed() == 0 and len(timer) == 0


def test_the_sources_run_the_same_benchmark_stream_to_the_same_expirations():
    """The benchmark's wheel, compiled and pure (KGC_PURE=1 in a child), against the heap on one stream."""
    script = (
        "from kgc.tools.bench.purgatory_bench import run_purgatory_bench\n"
        "from kgc.tools.bench.purgatories import HeapPurgatory, WheelPurgatory\n"
        "import kgc.impl\n"
        "d = run_purgatory_bench((2000,), purgatories={'wheel': WheelPurgatory, 'heap': HeapPurgatory}, memory=False)\n"
        "print(kgc.impl.COMPILED, sorted((m['purgatory'], m['timing_pass']['expires']) for m in d['measurements']))\n"
    )
    outs = [
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "KGC_PURE": pure},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split(" ", 1)
        for pure in ("0", "1")
    ]
    assert outs[1][0] == "False"
    assert outs[0][1] == outs[1][1]  # the same expirations per purgatory (the bench checks wheel == heap)
    assert "('wheel', 0)" not in outs[0][1]
