#!/usr/bin/env bash
# Sets everything up and runs the main job on an embedded default lake: builds skade, creates
# a small sample Iceberg table under ./lake (if it is not there yet) and reads it with the
# skade CLI. (Later: `skade serve` on the same lake.)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
"$ROOT/scripts/setup.sh"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
# Hits across clones in different folders (CI clones afresh): hash paths relative to the root.
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=true
"$ROOT/scripts/build.sh" -j "${SKADE_JOBS:-$(nproc)}" skade skade_gen_table

SKADE="$ROOT/build/src/skade"
LAKE="${SKADE_WAREHOUSE:-$ROOT/lake}"
TABLE="$LAKE/sample/orders"
if [ ! -f "$TABLE/metadata/version-hint.text" ]; then
  echo "== creating sample table $TABLE"
  "$ROOT/build/bench/skade_gen_table" --out "$TABLE" --rows 100000 --files 4 --manifests 2
fi
echo "== skade inspect $TABLE"
"$SKADE" inspect "$TABLE" | head -40
echo "== skade scan $TABLE --limit 10"
"$SKADE" scan "$TABLE" --limit 10
echo "== skade scan $TABLE --count"
"$SKADE" scan "$TABLE" --count -v
echo "== skade scan $TABLE --where 'id < 1000' --count"
"$SKADE" scan "$TABLE" --where 'id < 1000' --count -v
