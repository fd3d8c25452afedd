#!/usr/bin/env bash
# Creates .venv (if missing) and installs kgc with its pinned dependencies into it.
# Needs python3 >= 3.11 and java (17) on PATH; everything else comes from PyPI (Kafka's clients too: the `clients`
# extra, for the kgc serve tests; PySpark, the `spark` extra, for the kgc pipeline tests), except the
# browser the page tests drive (Debian's chromium, installed with apt-get when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
PIP_DISABLE_PIP_VERSION_CHECK=1 .venv/bin/python -m pip install -q -e ".[test,bench,browser,clients,spark${KGC_EXTRAS:+,$KGC_EXTRAS}]"
.venv/bin/python -c "import kgc.impl, kgc.tools" || { echo "setup: kgc did not install" >&2; exit 1; }
# The timer, purgatory, delayed operations and group metadata compiled with mypyc (python -m kgc.tools.build_native; a no-op when the
# build is current). Without a C compiler the pure-Python sources run, as they do with KGC_PURE=1.
.venv/bin/python -m kgc.tools.build_native \
  || echo "setup: kgc.impl.timer, purgatory, delayed and group stay pure Python (the reason is on the line above)" >&2
# `kgc show` pages are tested in a real browser: Playwright drives the system chromium through
# its executable path (no `playwright install`: it downloads, which a closed network refuses).
if [ ! -x /usr/bin/chromium ] && [ -z "${KGC_CHROMIUM:-}" ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "setup: installing chromium (apt-get) for the browser tests" >&2
    apt-get install -y -q chromium >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; } \
      || echo "setup: could not install chromium; the browser tests (tests/tools/test_trace_page_browser.py) will fail" >&2
  else
    echo "setup: /usr/bin/chromium missing: run 'apt-get install -y chromium' as root, or set KGC_CHROMIUM" >&2
  fi
fi
# The reference coordinator (reference/kafka-coordinator): Kafka 3.9.1's own GroupCoordinator driven
# in-process, the oracle `kgc replay --reference kafka` runs scenarios on. Built with Maven from
# pinned Maven Central artifacts; without mvn the rest of kgc works and the reference commands say
# how to get it (exit code 25).
if command -v mvn >/dev/null 2>&1; then
  (cd reference/kafka-coordinator && mvn -q -B package >/dev/null 2>&1) \
    || echo "setup: the reference coordinator did not build (cd reference/kafka-coordinator && mvn -B package shows why)" >&2
  # The classpath of a real Kafka 3.9.1 broker (`kgc kafka start`, the real-client tests): the same
  # artifacts plus Kafka's log4j binding; no code, target/classpath.txt only.
  (cd reference/kafka-broker && mvn -q -B package >/dev/null 2>&1) \
    || echo "setup: the Kafka broker classpath did not build (cd reference/kafka-broker && mvn -B package shows why)" >&2
else
  echo "setup: mvn not found: the Kafka reference coordinator is not built; install Maven 3 and a JDK 17 (apt-get install -y maven openjdk-17-jdk-headless) and re-run scripts/setup.sh" >&2
fi
