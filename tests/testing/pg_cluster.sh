#!/usr/bin/env bash
# Throwaway PostgreSQL 15 cluster for tests (TOOLCHAIN §8).
#
#   pg_cluster.sh start DIR PORT       initdb (or copy the cached template) into DIR/data and
#                                      start postgres on 127.0.0.1:PORT (socket dir DIR)
#   pg_cluster.sh stop DIR PORT        stop it (immediate) and remove DIR
#   pg_cluster.sh createdb DIR PORT NAME
#
# initdb and postgres refuse to run as root: as root, they run as the `postgres` user through
# runuser and DIR is chowned to it. If SKADE_PG_TEMPLATE names a folder, the first start
# initdb's into it (under a flock) and every start copies it, which is ~4x cheaper than initdb.
# Every step has a timeout.
set -euo pipefail

cmd=${1:?usage: pg_cluster.sh start|stop|createdb DIR PORT [NAME]}
dir=${2:?DIR}
port=${3:?PORT}

pgbin=${SKADE_PG_BIN:-/usr/lib/postgresql/15/bin}
if [ ! -x "$pgbin/initdb" ]; then
  pgbin=$(dirname "$(command -v initdb 2>/dev/null || command -v pg_ctl 2>/dev/null || echo /nonexistent/x)")
fi
[ -x "$pgbin/pg_ctl" ] || { echo "pg_cluster.sh: no PostgreSQL binaries (set SKADE_PG_BIN)" >&2; exit 2; }

as_pg() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

own() {
  if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$@"; fi
}

initdb_into() {
  as_pg timeout 60 "$pgbin/initdb" -D "$1" -U postgres -A trust -E UTF8 --locale=C --no-sync \
    >"$1.initdb.log" 2>&1 || { cat "$1.initdb.log" >&2; return 1; }
}

case "$cmd" in
  start)
    mkdir -p "$dir"
    chmod 0755 "$dir"
    own "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      template=${SKADE_PG_TEMPLATE:-}
      if [ -n "$template" ]; then
        mkdir -p "$(dirname "$template")"
        (
          flock -w 120 9 || { echo "pg_cluster.sh: template lock timeout" >&2; exit 1; }
          if [ ! -f "$template/PG_VERSION" ]; then
            rm -rf "$template.tmp" "$template"
            mkdir -p "$template.tmp"
            own "$template.tmp" "$(dirname "$template")"
            initdb_into "$template.tmp"
            mv "$template.tmp" "$template"
          fi
        ) 9>"$template.lock"
        cp -a "$template" "$dir/data"
      else
        mkdir -p "$dir/data"
        own "$dir/data"
        initdb_into "$dir/data"
      fi
    fi
    as_pg timeout 60 "$pgbin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
      start >"$dir/pg_ctl.log" 2>&1 || {
        cat "$dir/pg_ctl.log" >&2
        [ -f "$dir/server.log" ] && tail -20 "$dir/server.log" >&2
        exit 1
      }
    ;;
  stop)
    if [ -f "$dir/data/postmaster.pid" ]; then
      as_pg timeout 60 "$pgbin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
  createdb)
    name=${4:?NAME}
    timeout 30 "$pgbin/createdb" -h 127.0.0.1 -p "$port" -U postgres "$name"
    ;;
  *)
    echo "pg_cluster.sh: unknown command $cmd" >&2
    exit 2
    ;;
esac
