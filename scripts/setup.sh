#!/usr/bin/env bash
# Creates .venv (if missing) and installs kgc with its pinned dependencies into it.
# Needs python3 >= 3.11 and java (17) on PATH; everything else comes from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
PIP_DISABLE_PIP_VERSION_CHECK=1 .venv/bin/python -m pip install -q -e ".[test,bench${KGC_EXTRAS:+,$KGC_EXTRAS}]"
.venv/bin/python -c "import kgc.impl, kgc.tools" || { echo "setup: kgc did not install" >&2; exit 1; }
