#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang (coverage + ASan + UBSan) in build-fuzz and
# runs each one for SECONDS (default 60) on its seed corpus in fuzz/corpus/<target>.
#   scripts/fuzz.sh [SECONDS]
# Inputs the fuzzer finds go to a scratch folder (SKADE_FUZZ_WORK, default a new temporary
# folder), never into the repository. Fails if a target crashes, leaks, times out or runs out
# of memory, and prints the reproducer: rerun it with build-fuzz/fuzz/<target> <file>.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_PER_TARGET="${1:-60}"
BUILD_DIR="${SKADE_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
WORK="${SKADE_FUZZ_WORK:-$(mktemp -d -t skade-fuzz.XXXXXX)}"
# The target names; each has fuzz/corpus/<name minus "fuzz_"> and may have fuzz/<that>.dict.
TARGETS=(fuzz_arrow_ipc fuzz_table_metadata fuzz_manifest fuzz_puffin fuzz_parquet_pages fuzz_flight_data fuzz_sql_classifier fuzz_rest_api)
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-20G}"

if ! command -v clang++ > /dev/null; then
  echo "fuzz: clang++ is required (Debian: clang-14, with libclang-rt-14-dev for libFuzzer)" >&2
  exit 1
fi
start=$(date +%s)
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  # -O1 with assertions on (no NDEBUG): the usual fuzzing trade-off of build time, speed and checks.
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DSKADE_BUILD_TESTS=OFF -DSKADE_FUZZ=ON
fi
# Only the fuzz targets and the libraries they link (base, arrow, io, iceberg, the Flight SQL
# protobuf messages).
ninja -C "$BUILD_DIR" -j "${SKADE_JOBS:-$(nproc)}" "${TARGETS[@]}"
echo "fuzz: build took $(( $(date +%s) - start )) s; scratch folder $WORK"

failed=0
for target in "${TARGETS[@]}"; do
  name="${target#fuzz_}"
  mkdir -p "$WORK/$name/new" "$WORK/$name/crashes"
  args=(-max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=25 -print_final_stats=1
        -artifact_prefix="$WORK/$name/crashes/")
  [ -f "$ROOT/fuzz/$name.dict" ] && args+=(-dict="$ROOT/fuzz/$name.dict")
  log="$WORK/$name/fuzz.log"
  echo "fuzz: $target for ${SECONDS_PER_TARGET} s"
  # The first corpus folder receives new inputs: the scratch one, not fuzz/corpus.
  if ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" \
      "$BUILD_DIR/fuzz/$target" "${args[@]}" "$WORK/$name/new" "$ROOT/fuzz/corpus/$name" > "$log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$log" | tr '\n' ' ' || true
    echo
  else
    failed=1
    echo "fuzz: $target FAILED; last lines of $log:" >&2
    grep -vE "^#[0-9]+" "$log" | tail -n 40 >&2
    for crash in "$WORK/$name/crashes/"*; do
      [ -e "$crash" ] && echo "fuzz: reproducer: $crash (rerun: $BUILD_DIR/fuzz/$target $crash)" >&2
    done
  fi
done
echo "fuzz: total $(( $(date +%s) - start )) s"
exit "$failed"
