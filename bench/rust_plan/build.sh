#!/usr/bin/env bash
# Builds bench/rust_plan (iceberg-rust's planner timed on one table; bench/engines_plan_bench.sh)
# with the crates pinned in Cargo.toml and Cargo.lock. The target folder is kept under
# $SKADE_CACHE/rust_plan/target (default ~/.cache/skade), so a second build only links. The build
# runs under nice -n 19 on one job, not to starve C++ builds on a 2-core machine, and does not
# take the C++ build lock. Prints the path of the binary on its last line.
#   bench/rust_plan/build.sh
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${SKADE_CACHE:-$HOME/.cache/skade}"
export CARGO_TARGET_DIR="$CACHE/rust_plan/target"
mkdir -p "$CARGO_TARGET_DIR"
if ! command -v cargo >/dev/null; then
  echo "rust_plan/build.sh: no cargo on PATH (a Rust toolchain >= 1.94 is needed by iceberg 0.10.1)" >&2
  exit 1
fi
( cd "$HERE" && nice -n 19 cargo build --release --locked -j1 --manifest-path "$HERE/Cargo.toml" >&2 )
echo "$CARGO_TARGET_DIR/release/rust_plan"
