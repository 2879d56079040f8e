#!/usr/bin/env bash
# Builds the skade Python package (python/) with skade's library inside it, so that it loads
# outside the build tree (the library finds libduckdb.so beside itself: its run path is $ORIGIN):
#   scripts/build_python.sh [OUT]
# OUT (default build/python) gets pkg/ (the package folder with libskade.so, debug info stripped,
# and libduckdb.so beside its modules: importable with PYTHONPATH=OUT/pkg) and, unless
# SKADE_PY_WHEEL=0, dist/skade-*.whl (pip install it). Build the library first:
# `scripts/build.sh skade_c`. SKADE_LIBRARY_FILE names another libskade.so; PYTHON an interpreter
# with setuptools (default: the pypkg test suite's pinned virtualenv when set up, else python3).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/build/python}"
LIB="${SKADE_LIBRARY_FILE:-$ROOT/build/src/libskade.so}"
DUCKDB="$ROOT/third_party/duckdb/lib/libduckdb.so"
if [ ! -f "$LIB" ]; then
  echo "build_python: no $LIB: run scripts/build.sh skade_c first" >&2
  exit 1
fi
if [ -z "${PYTHON:-}" ]; then
  if venv="$("$ROOT/scripts/interop_env.sh" pypkg venv 2>/dev/null)"; then PYTHON="$venv/bin/python"; else PYTHON=python3; fi
fi
rm -rf "$OUT/pkg" "$OUT/dist"
mkdir -p "$OUT/pkg" "$OUT/dist"
cp -r "$ROOT/python/pyproject.toml" "$ROOT/python/setup.py" "$ROOT/python/skade" "$OUT/pkg/"
find "$OUT/pkg" -name __pycache__ -prune -exec rm -rf {} +
strip --strip-debug -o "$OUT/pkg/skade/libskade.so" "$LIB"
cp "$DUCKDB" "$OUT/pkg/skade/libduckdb.so"
if [ "${SKADE_PY_WHEEL:-1}" != 0 ]; then
  "$PYTHON" -m pip wheel --quiet --disable-pip-version-check --no-build-isolation --no-deps --no-index \
    -w "$OUT/dist" "$OUT/pkg"
  rm -rf "$OUT/pkg/build" "$OUT/pkg"/*.egg-info
  ls "$OUT"/dist/*.whl
fi
