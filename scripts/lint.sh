#!/usr/bin/env bash
# Static checks, as CI runs them (tests/test_static_checks.py): ruff lint and format, and mypy
# on kgc.impl and kgc.spec (the layers under conformance). mypy cannot see the package-dir
# mapping (impl/ -> kgc.impl), so it checks a kgc/ tree of symlinks to the folders.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
py=${PYTHON:-$root/.venv/bin/python}
"$py" -m ruff check .
"$py" -m ruff format --check .
farm=$(mktemp -d)
trap 'rm -rf "$farm"' EXIT
mkdir "$farm/kgc"
for layer in impl spec conformance tools; do ln -s "$root/$layer" "$farm/kgc/$layer"; done
(cd "$farm" && "$py" -m mypy --config-file "$root/pyproject.toml" -p kgc.impl -p kgc.spec)
