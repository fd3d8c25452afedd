#!/usr/bin/env bash
# Set up, then run the test suite (with arguments: pytest with them, in this process).
#
# Without arguments, in two phases:
# 1. every file but the draw-sensitive ones, in parallel (pytest-xdist): one worker per core up to 4
#    (KGC_TEST_WORKERS overrides; 0 runs them in this process), each file on one worker
#    (--dist loadfile), so module fixtures (a Spark cluster, a Kafka broker, the fuzz hunts) are
#    made once;
# 2. the files whose tests assert that Hypothesis FINDS something (and the real Kafka clients), in this
#    process, in a fixed order.
#    Hypothesis mixes the literal constants of every local module imported so far into its draws, so
#    an example sequence depends on what the process imported before it: on a worker that depends
#    on which files the scheduler gave it first; here it is the same on every run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PYTEST=(.venv/bin/python -m pytest -q -p no:cacheprovider)
RANKED=(--durations=15)  # the slowest tests, printed after each phase: where the CI's time goes
if [ "$#" -gt 0 ]; then
  exec "${PYTEST[@]}" "$@"
fi
DRAWS=(
  tests/conformance/test_stateful.py
  tests/conformance/test_responses.py
  tests/conformance/test_eventually_stable.py
  tests/conformance/test_timed_liveness.py
  tests/conformance/test_property_matrix.py
  tests/conformance/test_internal_errors.py
  tests/conformance/test_fuzz_budget.py
  tests/conformance/test_mutate.py
  tests/conformance/test_mutate_spark.py
  # not draw-sensitive: real Kafka clients against a real broker, whose rebalances a loaded machine
  # slowed past the test's minute when they shared the cores with a second worker
  tests/tools/test_serve_clients.py
)
workers=${KGC_TEST_WORKERS:-$(.venv/bin/python -c 'import os; n = len(os.sched_getaffinity(0)); print(min(n, 4) if n > 1 else 0)')}
parallel=()
if [ "$workers" -gt 0 ]; then
  parallel=(-n "$workers" --dist loadfile)
fi
ignores=()
for f in "${DRAWS[@]}"; do ignores+=(--ignore "$f"); done
status=0
"${PYTEST[@]}" "${RANKED[@]}" "${parallel[@]}" "${ignores[@]}" || status=$?
"${PYTEST[@]}" "${RANKED[@]}" "${DRAWS[@]}" || status=$?
exit "$status"
