#!/usr/bin/env bash
# Sets everything up and runs every test: setup, build, ctest (unit + integration tests with
# real DuckDB, fixtures and Node.js readers), then the bad-input tests under ASan+UBSan.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
"$ROOT/scripts/setup.sh"

JOBS="${SKADE_JOBS:-$(nproc)}"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
# Hits across clones in different folders (CI clones afresh): hash paths relative to the root.
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=true

echo "== build"
"$ROOT/scripts/build.sh" -j "$JOBS"

echo "== tests"
(cd "$ROOT/build" && ctest --output-on-failure -j "$JOBS" --timeout 600)

echo "== sanitizers (ASan+UBSan): iceberg parsers and readers on bad input"
SKADE_BUILD_DIR="$ROOT/build-asan" SKADE_BUILD_TYPE=Debug \
  SKADE_CXX_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
  "$ROOT/scripts/build.sh" -j "$JOBS" iceberg_test
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 "$ROOT/build-asan/tests/iceberg_test" --gtest_brief=1
echo "== all tests passed"
