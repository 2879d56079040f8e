#!/usr/bin/env bash
# Runs pytest of the skade Python package's suite in its pinned virtualenv
# (scripts/setup_interop.sh), with the package from the sources (python/):
#   run_pytest.sh [pytest args, e.g. test files]
# SKADE_LIBRARY names libskade.so and SKADE_BIN the skade binary (ctest passes both; default
# build/src/).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../../.." && pwd)"
venv="$("$ROOT/scripts/interop_env.sh" pypkg venv)"
export SKADE_LIBRARY="${SKADE_LIBRARY:-$ROOT/build/src/libskade.so}"
export SKADE_BIN="${SKADE_BIN:-$ROOT/build/src/skade}"
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
# Nothing is written into the source tree: no bytecode, no pytest cache, temp dirs under TMPDIR.
export PYTHONDONTWRITEBYTECODE=1
cd "$HERE"
exec "$venv/bin/python" -m pytest -p no:cacheprovider -q -rsxXf --durations=5 "$@"
