#!/usr/bin/env bash
# The main job: set up, then the whole harness on the default model (kgc all).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/kgc all "$@"
