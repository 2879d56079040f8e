#!/usr/bin/env bash
# The same DuckDB statements on three builds (bench/RESULTS.md, section au): the DuckDB library
# skade embeds (scripts/fetch_duckdb.sh) through its C API alone, DuckDB's Python package at the
# same release (bench/python/requirements-duckdb-embedded.txt), and the Python package of the
# scan benchmark's virtualenv (bench/python/requirements.txt). No skade code runs in the timed
# loops: the gap between the first two is the build's, not skade's. Not run by ctest.
#   bench/duckdb_builds.sh --dir LAKE [--repeat 15]
# LAKE is the lake bench/python_scan_bench.sh --dir made (its table's files are read directly).
# Build first: scripts/build.sh duckdb_build_bench.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${SKADE_BUILD_DIR:-$ROOT/build}"
dir="" repeat=15
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    *) echo "duckdb_builds: unknown argument $1" >&2; exit 2 ;;
  esac
done
files="$dir/bench/scan10m/data"
if [ -z "$dir" ] || ! compgen -G "$files/*.parquet" > /dev/null; then
  echo "duckdb_builds: no data files under $files: run bench/python_scan_bench.sh --dir DIR first" >&2
  exit 1
fi
bench="$BUILD_DIR/bench/duckdb_build_bench"
if [ ! -x "$bench" ]; then
  echo "duckdb_builds: no $bench: run scripts/build.sh duckdb_build_bench first" >&2
  exit 1
fi

# shellcheck source=bench/python/venv.sh
source "$ROOT/bench/python/venv.sh"
venv="$(bench_python_venv duckdb_builds)"
cache="${SKADE_CACHE:-$HOME/.cache/skade}"
req="$ROOT/bench/python/requirements-duckdb-embedded.txt"
embedded="$cache/pydeps/duckdb-embedded-$(sha256sum "$req" | cut -c1-16)"
if [ ! -f "$embedded/.complete" ]; then
  echo "duckdb_builds: installing DuckDB's Python package at skade's release into $embedded" >&2
  rm -rf "$embedded"
  mkdir -p "$cache/pip"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --cache-dir "$cache/pip" \
    --require-hashes --no-deps --target "$embedded" -r "$req" >&2
  touch "$embedded/.complete"
fi

src="read_parquet('$files/*.parquet')"
shown="read_parquet(<the table's 10 files>)"
echo "== skade's DuckDB library: $(readelf -p .comment "$ROOT/third_party/duckdb/lib/libduckdb.so" | sed -n 's/^ *\[ *0\] *//p')"
echo "== load average $(cut -d' ' -f1-3 /proc/loadavg)"
for sql in \
  "SELECT sum(id), sum(qty), count(*) FROM $src WHERE big < 10000000" \
  "SELECT sum(id), sum(qty), sum(amount), count(*) FROM $src WHERE id < 100000" \
  "SELECT sum(id), sum(qty), sum(price), sum(big), count(*) FROM $src"; do
  echo "${sql/"$src"/"$shown"}"
  for round in 1 2; do
    echo "  round $round"
    echo "    $("$bench" --sql "$sql" --repeat "$repeat")"
    echo "    $(PYTHONPATH="$embedded" "$venv/bin/python" "$ROOT/bench/python/duckdb_build_query.py" --sql "$sql" --repeat "$repeat")"
    echo "    $("$venv/bin/python" "$ROOT/bench/python/duckdb_build_query.py" --sql "$sql" --repeat "$repeat")"
  done
done
