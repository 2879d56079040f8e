#!/usr/bin/env bash
# Sets everything up and runs every test: setup, build, ctest (unit + integration tests with
# real DuckDB, fixtures and Node.js readers), the bad-input tests under ASan+UBSan, then the
# libFuzzer targets (scripts/fuzz.sh, 30 s each).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
START=$(date +%s)
# Prints each phase's start with the seconds since the start (CI keeps no timings of its own).
phase() { echo "== $* (at $(( $(date +%s) - START )) s)"; }
"$ROOT/scripts/setup.sh"
# The real engines the interop suites drive (Spark, PyIceberg, drivers), pinned and cached.
"$ROOT/scripts/setup_interop.sh"

JOBS="${SKADE_JOBS:-$(nproc)}"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
# Hits across clones in different folders (CI clones afresh): hash paths relative to the root.
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=true

phase build
"$ROOT/scripts/build.sh" -j "$JOBS"

phase tests
(cd "$ROOT/build" && ctest --output-on-failure -j "$JOBS" --timeout 600)

phase "sanitizers (ASan+UBSan): parsers, catalog, engine, table, SQL, CLI, Flight SQL, REST and console tests"
# The CLI and Flight SQL tests run the sanitized skade binary of the same build folder; the
# Flight SQL interop groups run with cookie-echoing clients only here (both modes above).
SANITIZED=(base_test io_test arrow_test iceberg_test catalog_test engine_test table_test sql_test cli_test
           flightsql_test flightsql_interop_test rest_test console_test)
# Not position-independent: a sanitized PIE binary applies millions of relocations (UBSan's and
# ASan's per-site data) at each start, 0.3 s of the 0.75 s every test process and skade child took.
SKADE_BUILD_DIR="$ROOT/build-asan" SKADE_BUILD_TYPE=Debug \
  SKADE_CXX_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
  SKADE_EXE_LINKER_FLAGS="-no-pie" \
  "$ROOT/scripts/build.sh" -j "$JOBS" skade "${SANITIZED[@]}"
phase "sanitized tests"
labels="$(IFS='|'; echo "^(${SANITIZED[*]})\$")"
(cd "$ROOT/build-asan" &&
  ASAN_OPTIONS=detect_leaks=1:quarantine_size_mb=16 LSAN_OPTIONS="suppressions=$ROOT/tests/lsan.supp" \
    UBSAN_OPTIONS=print_stacktrace=1 \
    SKADE_CRASH_ROUNDS=20 SKADE_FLIGHTSQL_MODES=cookies ctest --output-on-failure -j "$JOBS" --timeout 900 -L "$labels")

phase "fuzz (libFuzzer, clang, ASan+UBSan): Arrow IPC, Flight DoPut data, metadata JSON, manifests, Puffin, SQL"
SKADE_JOBS="$JOBS" "$ROOT/scripts/fuzz.sh" 30
phase "all tests passed"
