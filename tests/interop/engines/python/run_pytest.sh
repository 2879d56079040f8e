#!/usr/bin/env bash
# Runs pytest of the Python interop suite in its pinned virtualenv (scripts/setup_interop.sh):
#   run_pytest.sh [pytest args, e.g. test files]
# SKADE_BIN names the skade binary (ctest passes it; default build/src/skade).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../../.." && pwd)"
venv="$("$ROOT/scripts/interop_env.sh" python venv)"
# Nothing is written into the source tree: no bytecode, no pytest cache, temp dirs under TMPDIR.
export PYTHONDONTWRITEBYTECODE=1
cd "$HERE"
exec "$venv/bin/python" -m pytest -p no:cacheprovider -q -rsxXf --durations=8 "$@"
