#!/usr/bin/env bash
# The Python scan benchmark (bench/RESULTS.md, section y): one 10M-row Iceberg table in a skade
# lake read into pyarrow by skade's Python package, by PyIceberg (SqlCatalog on the lake's
# catalog.db) and by DuckDB's read_parquet of the table's data files, in one run. Not run by ctest.
#   bench/python_scan_bench.sh [bench/python_scan_bench.py options: --rows, --files, --repeat]
# Build first: scripts/build.sh skade_c skade skade_gen_table scan_bench (SKADE_BUILD_DIR, default
# build/). The pinned packages of bench/python/requirements.txt go into a virtualenv cached under
# $SKADE_CACHE/venv/bench-python-<hash of the file> (made once, as scripts/setup_interop.sh makes
# the test suites' ones); skade's wheel (scripts/build_python.sh) is built and installed into a
# temporary folder, beside the table, both removed afterwards. With scan_bench built, the C++
# scan benchmark (section a) runs on the same table at the end: skade against the DuckDB it embeds.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${SKADE_BUILD_DIR:-$ROOT/build}"

for f in "$BUILD_DIR/src/libskade.so" "$BUILD_DIR/src/skade" "$BUILD_DIR/bench/skade_gen_table"; do
  if [ ! -f "$f" ]; then
    echo "python_scan_bench: no $f: run scripts/build.sh skade_c skade skade_gen_table first" >&2
    exit 1
  fi
done

# shellcheck source=bench/python/venv.sh
source "$ROOT/bench/python/venv.sh"
venv="$(bench_python_venv python_scan_bench)"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/skade-pybench.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
SKADE_LIBRARY_FILE="$BUILD_DIR/src/libskade.so" "$ROOT/scripts/build_python.sh" "$TMP/python" >/dev/null
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --no-index \
  --target "$TMP/site" "$TMP"/python/dist/skade-*.whl
rm -rf "$TMP/python"

extra=()
if [ -x "$BUILD_DIR/bench/scan_bench" ]; then extra=(--scan-bench "$BUILD_DIR/bench/scan_bench"); fi
PYTHONPATH="$TMP/site" PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" "$ROOT/bench/python_scan_bench.py" \
  --gen-table "$BUILD_DIR/bench/skade_gen_table" --skade "$BUILD_DIR/src/skade" --dir "$TMP/lake" \
  "${extra[@]}" "$@"
