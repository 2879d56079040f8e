#!/usr/bin/env bash
# Sets everything up and runs the main job on an embedded default lake (./lake, or
# $SKADE_WAREHOUSE): builds skade, creates a sample table in the lake's SQLite catalog if it
# is not there yet, then queries it and shows the commit log. (Later: `skade serve`.)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
"$ROOT/scripts/setup.sh"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
# Hits across clones in different folders: hash paths relative to the root.
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=true
"$ROOT/scripts/build.sh" -j "${SKADE_JOBS:-$(nproc)}" skade

LAKE="${SKADE_WAREHOUSE:-$ROOT/lake}"
skade() { "$ROOT/build/src/skade" --warehouse "$LAKE" "$@"; }

if ! skade tables 2>/dev/null | grep -qx 'demo.orders'; then
  echo "== creating demo.orders in $LAKE"
  skade ns create demo >/dev/null 2>&1 || true
  skade create demo.orders --partition-by "day(ts)" \
    --schema "id BIGINT NOT NULL, customer VARCHAR, ts TIMESTAMPTZ, amount DECIMAL(12,2)"
  skade ingest demo.orders --sql "SELECT range AS id, 'customer_' || (range % 97) AS customer,
      TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_minutes(range) AS ts,
      (range % 1000) / 10 AS amount FROM range(100000)"
  skade ingest demo.orders --mode upsert --key id,ts --sql "SELECT id, customer, ts, amount * 2 AS amount
      FROM demo.orders WHERE id < 10"
fi
echo "== skade tables"; skade tables
echo "== skade snapshots demo.orders"; skade snapshots demo.orders
echo "== skade sql"
skade sql "SELECT date_trunc('day', ts) AS day, count(*) AS orders, sum(amount) AS revenue
           FROM demo.orders GROUP BY 1 ORDER BY 1 LIMIT 5"
echo "== skade scan demo.orders --where 'id < 10' --columns id,amount"
skade scan demo.orders --where 'id < 10' --columns id,amount
echo "== skade scan demo.orders --count"; skade scan demo.orders --count -v
echo "== skade log"; skade log
