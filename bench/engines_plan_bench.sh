#!/usr/bin/env bash
# Scan planning and count(*) from metadata: skade against PyIceberg and iceberg-rust on the same
# generated tables, in one run (bench/RESULTS.md, section aj; issue 36, item 5). Not run by ctest.
#   bench/engines_plan_bench.sh [bench/engines_plan_bench.py bench options: --repeat, --warmup,
#                                --threads 1,2, --filters none,id,ts]
# Build first: scripts/build.sh skade skade_gen_table engines_plan_skade (SKADE_BUILD_DIR, default
# build/). iceberg-rust's side is built here by bench/rust_plan/build.sh (cached under
# $SKADE_CACHE/rust_plan; SKADE_NO_RUST=1 leaves it out). The pinned packages of
# bench/python/requirements.txt go into the virtualenv that bench/python_scan_bench.sh uses,
# $SKADE_CACHE/venv/bench-python-<hash of the file>, made here if missing. The two tables
# (13,000 and 100,000 fake data files: manifests only, the data files are never written) are
# generated under $TMPDIR and removed afterwards; SKADE_ENGINES_SIZES="13000:130 100000:1000"
# (files:manifests) chooses them.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${SKADE_BUILD_DIR:-$ROOT/build}"
SIZES="${SKADE_ENGINES_SIZES:-13000:130 100000:1000}"

for f in "$BUILD_DIR/src/skade" "$BUILD_DIR/bench/skade_gen_table" "$BUILD_DIR/bench/engines_plan_skade"; do
  if [ ! -f "$f" ]; then
    echo "engines_plan_bench: no $f: run scripts/build.sh skade skade_gen_table engines_plan_skade first" >&2
    exit 1
  fi
done

# shellcheck source=bench/python/venv.sh
source "$ROOT/bench/python/venv.sh"
venv="$(bench_python_venv engines_plan_bench)"

rust=()
if [ "${SKADE_NO_RUST:-0}" != 1 ]; then
  rust_bin="$("$ROOT/bench/rust_plan/build.sh" | tail -n 1)"
  rust=(--rust-plan "$rust_bin")
  echo "# iceberg-rust: $(grep -A1 '^name = "iceberg"$' "$ROOT/bench/rust_plan/Cargo.lock.in" | tail -n 1)," \
    "$(rustc --version)"
fi

TMP="$(mktemp -d "${TMPDIR:-/tmp}/skade-engines.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
tables=()
for size in $SIZES; do
  files="${size%%:*}"
  manifests="${size##*:}"
  rows=$((files * 1000))
  name="$((files / 1000))k"
  # One writer thread and nice: the machine is shared, and the manifests take seconds to write.
  nice -n 10 "$BUILD_DIR/bench/skade_gen_table" --out "$TMP/$name" --rows "$rows" --files "$files" \
    --manifests "$manifests" --partition-by-day --fake-data-files --threads 1 >&2
  tables+=(--table "$name=$TMP/$name:$files:$rows")
done

echo "# skade $(git -C "$ROOT" rev-parse --short HEAD) ($BUILD_DIR), $(nproc) cores, $(uptime)"
PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" "$ROOT/bench/engines_plan_bench.py" bench \
  --skade-plan "$BUILD_DIR/bench/engines_plan_skade" --skade "$BUILD_DIR/src/skade" \
  "${tables[@]}" "${rust[@]}" "$@"
