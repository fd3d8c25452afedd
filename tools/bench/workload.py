"""A purgatory workload modelled on Kafka's own purgatory benchmark, on a virtual clock.

Kafka measured its timing-wheel purgatory with TestPurgatoryPerformance
(core/src/test/scala/other/kafka/TestPurgatoryPerformance.scala in apache/kafka): requests arrive
as a Poisson process (exponential inter-arrival times, whole milliseconds with the fraction
carried over), each takes a log-normally distributed time to be satisfied (the distribution fixed
by its 50th and 75th percentiles, sampled then truncated to whole ms), requests whose latency is
below the timeout are completed by an outside event (`forceComplete` from a completion queue) and
the rest expire. The Purgatory Redesign Proposal (cwiki.apache.org, KAFKA "Purgatory Redesign
Proposal") ran it with timeout 200 ms and, for the low-timeout case, pct75 = 60 ms, pct50 = 20 ms:
about 7.9% of requests expire. Those are the defaults here.

What differs from Kafka's run: time is virtual (so results are repeatable and measure the data
structure, not sleeps), everything is drawn from one seeded `random.Random`, and the arrival rate
is not a free input: it is derived from the target number of outstanding operations by Little's
law, `rate = target / E[min(floor(L), timeout)]`, so a 10k, 100k or 1M workload really holds
that many operations in the purgatory once the first `timeout_ms` has passed.

The stream is `advance(t)`, then the arrivals of tick t, then the completions of tick t, for every
tick t. Arrivals of one tick are a contiguous id range, so the stream is stored per tick (arrays of
ids), which keeps a 1M-outstanding workload (about 8M requests) in tens of megabytes instead of
gigabytes of tuples.
"""

from __future__ import annotations

import math
import random
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field

# 0.674490 is the 75th percentile point of N(0, 1), the constant Kafka's benchmark uses.
_Z75 = 0.674490


@dataclass(frozen=True)
class WorkloadSpec:
    """The knobs of one workload; the arrival rate follows from them (see `rate_per_ms`)."""

    target_outstanding: int
    seed: int = 0
    timeout_ms: int = 200
    pct50_ms: float = 20.0
    pct75_ms: float = 60.0
    # Steady-state measurement window; arrivals stop at its end and the stream then drains.
    # Defaults to half a timeout.
    window_ms: int | None = None

    def __post_init__(self) -> None:
        if self.target_outstanding < 1:
            raise ValueError("target_outstanding must be positive")
        if self.timeout_ms < 1:
            raise ValueError("timeout_ms must be positive")
        if not 0 < self.pct50_ms < self.pct75_ms:
            raise ValueError("need 0 < pct50_ms < pct75_ms (a log-normal with positive spread)")

    @property
    def mu(self) -> float:
        """Mean of the underlying normal (Kafka: log(pct50))."""
        return math.log(self.pct50_ms)

    @property
    def sigma(self) -> float:
        """Standard deviation of the underlying normal (Kafka: (log pct75 - log pct50) / z75)."""
        return (math.log(self.pct75_ms) - self.mu) / _Z75

    @property
    def window(self) -> int:
        return self.window_ms if self.window_ms is not None else max(1, self.timeout_ms // 2)

    def latency_at_least(self, k: float) -> float:
        """P(L >= k) for the log-normal latency L."""
        if k <= 0:
            return 1.0
        return 0.5 * math.erfc((math.log(k) - self.mu) / (self.sigma * math.sqrt(2.0)))

    @property
    def mean_residence_ms(self) -> float:
        """E[min(floor(L), timeout)]: how long an operation stays outstanding, in ticks.

        A request completed after floor(L) ms is outstanding for floor(L) ticks, an expiring one
        for timeout ticks; sum over k of P(floor(L) >= k) = P(L >= k) gives the mean exactly.
        """
        return sum(self.latency_at_least(k) for k in range(1, self.timeout_ms + 1))

    @property
    def rate_per_ms(self) -> float:
        """Arrival rate that makes the steady-state outstanding count equal the target."""
        return self.target_outstanding / self.mean_residence_ms

    @property
    def expiry_fraction(self) -> float:
        return self.latency_at_least(self.timeout_ms)


@dataclass
class Workload:
    """A generated operation stream, stored per tick.

    Tick t holds: `advance(t)`, then `arrive(id, timeout_ms)` for id in
    range(arrival_start[t], arrival_start[t + 1]), then `complete(id)` for id in completions[t].
    """

    spec: WorkloadSpec
    arrival_start: array  # 'q', num_ticks + 1 entries
    completions: list[array]  # 'i' per tick
    expected_expired: bytearray  # 1 for ids whose latency >= timeout: the ground truth
    num_ticks: int
    window: tuple[int, int]  # [first, end) ticks of the steady-state window
    _outstanding: array | None = field(default=None, repr=False)

    @property
    def num_requests(self) -> int:
        return len(self.expected_expired)

    @property
    def num_expected_expired(self) -> int:
        return self.expected_expired.count(1)

    def arrivals(self, t: int) -> range:
        return range(self.arrival_start[t], self.arrival_start[t + 1])

    def deadline_prefix(self, t: int) -> int:
        """Number of ids (a prefix, since ids follow arrival order) whose deadline is <= t."""
        arrived_by = t - self.spec.timeout_ms
        if arrived_by < 0:
            return 0
        return self.arrival_start[min(arrived_by + 1, self.num_ticks)]

    def events(self) -> Iterator[tuple]:
        """The stream as ("advance", t) / ("arrive", id, timeout_ms) / ("complete", id) tuples.

        For inspection and tests; the benchmark iterates the per-tick arrays directly.
        """
        timeout = self.spec.timeout_ms
        for t in range(self.num_ticks):
            yield ("advance", t)
            for op_id in self.arrivals(t):
                yield ("arrive", op_id, timeout)
            for op_id in self.completions[t]:
                yield ("complete", op_id)

    def outstanding_by_tick(self) -> array:
        """Operations outstanding at the end of each tick, from the stream alone (no purgatory)."""
        if self._outstanding is None:
            timeout = self.spec.timeout_ms
            expired_by_arrival = array("q", bytes(8 * self.num_ticks))
            expected = self.expected_expired
            for t in range(self.num_ticks):
                start, stop = self.arrival_start[t], self.arrival_start[t + 1]
                expired_by_arrival[t] = expected.count(1, start, stop) if stop > start else 0
            out = array("q")
            live = 0
            for t in range(self.num_ticks):
                if t >= timeout:
                    live -= expired_by_arrival[t - timeout]
                live += self.arrival_start[t + 1] - self.arrival_start[t]
                live -= len(self.completions[t])
                out.append(live)
            self._outstanding = out
        return self._outstanding


def generate(spec: WorkloadSpec) -> Workload:
    """Draws the stream for `spec`; the same spec (seed included) gives the same stream."""
    rng = random.Random(spec.seed)
    expo, lognorm = rng.expovariate, rng.lognormvariate
    rate, mu, sigma = spec.rate_per_ms, spec.mu, spec.sigma
    timeout = spec.timeout_ms
    arrival_end = timeout + spec.window  # arrivals in [0, timeout + window)
    num_ticks = arrival_end + timeout  # the last deadline is arrival_end - 1 + timeout

    per_tick = [0] * num_ticks
    completions = [array("i") for _ in range(num_ticks)]
    expected = bytearray()
    append_expected = expected.append
    op_id = 0
    arrival_clock = 0.0
    while True:
        arrival_clock += expo(rate)
        if arrival_clock >= arrival_end:
            break
        tick = int(arrival_clock)
        latency = int(lognorm(mu, sigma))
        per_tick[tick] += 1
        if latency < timeout:
            completions[tick + latency].append(op_id)
            append_expected(0)
        else:
            append_expected(1)
        op_id += 1

    arrival_start = array("q", [0])
    running = 0
    for count in per_tick:
        running += count
        arrival_start.append(running)
    return Workload(
        spec=spec,
        arrival_start=arrival_start,
        completions=completions,
        expected_expired=expected,
        num_ticks=num_ticks,
        window=(timeout, arrival_end),
    )
