#!/usr/bin/env bash
# Builds the benchmark programs and runs the benchmarks (bench/RESULTS.md) on tables generated
# into a temporary folder, which is removed afterwards. Not run by ctest.
#   bench/run.sh                       # defaults below
#   BUILD_DIR=/work/build-bench JOBS=1 SCAN_ROWS=10000000 REPEAT=5 bench/run.sh
#   INGEST_ROWS=10000000 INGEST_REPEAT=3 WRITERS=8 COMMITS=50 CAS_COMMITS=200 bench/run.sh
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC/../build-bench}
JOBS=${JOBS:-1}
SCAN_ROWS=${SCAN_ROWS:-10000000}
SCAN_FILES=${SCAN_FILES:-10}
PLAN_FILES=${PLAN_FILES:-100000}
PLAN_MANIFESTS=${PLAN_MANIFESTS:-1000}
REPEAT=${REPEAT:-5}
INGEST_ROWS=${INGEST_ROWS:-10000000}
INGEST_REPEAT=${INGEST_REPEAT:-3}
WRITERS=${WRITERS:-8}
COMMITS=${COMMITS:-50}
CAS_COMMITS=${CAS_COMMITS:-200}

cmake -S "$SRC" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$BUILD_DIR" -j"$JOBS" skade skade_gen_table scan_bench plan_bench ingest_bench metadata_bench

TMP=$(mktemp -d "${TMPDIR:-/tmp}/skade-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
SKADE="$BUILD_DIR/src/skade"
BIN="$BUILD_DIR/bench"

echo "== machine"
echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(free -g | awk '/Mem:/{print $2}') GB RAM"
echo "build: $BUILD_DIR ($(grep CMAKE_BUILD_TYPE: "$BUILD_DIR/CMakeCache.txt" | cut -d= -f2))"

echo "== a) scan: $SCAN_ROWS rows, 10 columns, $SCAN_FILES files"
"$BIN/skade_gen_table" --out "$TMP/scan" --rows "$SCAN_ROWS" --files "$SCAN_FILES" --manifests 2
"$SKADE" scan "$TMP/scan" --count -v
"$SKADE" scan "$TMP/scan" --where 'id < 100' --count -v
"$BIN/scan_bench" --table "$TMP/scan" --repeat "$REPEAT" --where 'id < 100000'
rm -rf "$TMP/scan"

echo "== b) plan: $PLAN_MANIFESTS manifests, $PLAN_FILES fake data files (day(ts) partitions)"
"$BIN/skade_gen_table" --out "$TMP/plan" --rows $((PLAN_FILES * 1000)) --files "$PLAN_FILES" \
  --manifests "$PLAN_MANIFESTS" --partition-by-day --fake-data-files
time "$SKADE" scan "$TMP/plan" --count -v
"$BIN/plan_bench" --table "$TMP/plan" --repeat 3 --where 'id < 1000' \
  --where "ts < TIMESTAMPTZ '2020-01-11 00:00:00+00'"

echo "== c) ingest: $INGEST_ROWS rows bulk (median of $INGEST_REPEAT); $WRITERS writers x $COMMITS one-row appends; catalog CAS"
TMPDIR="$TMP" "$BIN/ingest_bench" --rows "$INGEST_ROWS" --repeat "$INGEST_REPEAT" --writers "$WRITERS" \
  --commits "$COMMITS" --cas-commits "$CAS_COMMITS"
echo "== c') one-row Arrow batches written as files: schema seen before vs new vs DuckDB's COPY"
TMPDIR="$TMP" "$BIN/ingest_bench" --only arrow --commits 400

echo "== d) a commit's metadata work against the table's history (shared vs unshared snapshots, write+fsync)"
"$BIN/metadata_bench" --repeat 21 --dir "$TMP"
