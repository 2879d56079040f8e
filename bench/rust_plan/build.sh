#!/usr/bin/env bash
# Builds bench/rust_plan (iceberg-rust's planner timed on one table; bench/engines_plan_bench.sh)
# with the crates pinned in Cargo.toml and Cargo.lock.in. Cargo.lock.in is the lock file with
# each package's registry written as @REGISTRY@: the build copies the crate into
# $SKADE_CACHE/rust_plan/src (default ~/.cache/skade), lets cargo resolve it once to learn how
# it names its default registry, and writes Cargo.lock from the template with that name, so
# every package, version and checksum is the pinned one (`--locked`). The target folder is
# kept beside it, so a second build only links. The build runs under nice -n 19 on one job,
# not to starve C++ builds on a 2-core machine, and does not take the C++ build lock. Prints
# the path of the binary on its last line.
#   bench/rust_plan/build.sh
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${SKADE_CACHE:-$HOME/.cache/skade}"
SRC="$CACHE/rust_plan/src"
export CARGO_TARGET_DIR="$CACHE/rust_plan/target"
if ! command -v cargo >/dev/null; then
  echo "rust_plan/build.sh: no cargo on PATH (a Rust toolchain >= 1.94 is needed by iceberg 0.10.1)" >&2
  exit 1
fi
mkdir -p "$SRC/src" "$CARGO_TARGET_DIR"
cp "$HERE/Cargo.toml" "$SRC/Cargo.toml"
cp "$HERE/src/main.rs" "$SRC/src/main.rs"
if [ ! -f "$SRC/registry" ]; then
  rm -f "$SRC/Cargo.lock"
  ( cd "$SRC" && cargo generate-lockfile --quiet >&2 )
  registry="$(sed -n 's/^source = "\(registry+[^"]*\)"$/\1/p' "$SRC/Cargo.lock" | sed -n 1p)"
  if [ -z "$registry" ]; then
    echo "rust_plan/build.sh: cargo named no registry in a fresh lock file" >&2
    exit 1
  fi
  printf '%s\n' "$registry" > "$SRC/registry"
fi
registry="$(cat "$SRC/registry")"
awk -v r="$registry" '{ gsub(/@REGISTRY@/, r); print }' "$HERE/Cargo.lock.in" > "$SRC/Cargo.lock"
( cd "$SRC" && nice -n 19 cargo build --release --locked -j1 >&2 )
echo "$CARGO_TARGET_DIR/release/rust_plan"
