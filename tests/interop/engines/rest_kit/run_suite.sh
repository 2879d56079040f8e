#!/usr/bin/env bash
# Runs Iceberg's REST Compatibility Kit (RCK) against `skade serve --rest-port`:
#   SKADE_BIN=build/src/skade tests/interop/engines/rest_kit/run_suite.sh
# ctest runs it as `engines_rest_kit` (suite.cmake). The kit is Iceberg's own catalog test suites
# (CatalogTests and ViewCatalogTests, wrapped as RESTCompatibilityKit{,View}CatalogTests) taken
# from the published jars pinned in pom.xml (scripts/setup_interop.sh copies them into a cache
# folder) and run by the JUnit console launcher on the machine's Java (17 to 22; JAVA_HOME wins
# over PATH).
#
# One server on a fresh warehouse serves both kit classes in one JVM (the kit shares one catalog
# between its tests, as against any real server), except the tests expectations.txt marks `skip`.
# check_results.py then compares the JUnit reports with expectations.txt: the run fails on any
# failure that is not listed there with the text it must show, on a listed failure that passed
# (the list is kept exact), and when the server died or did not stop cleanly.
# SKADE_KEEP_TMP=1 keeps the warehouse, the server's log and the reports.
#
# With SKADE_BALANCED=1 (ctest `engines_rest_kit_balanced`) the kit's server is three `skade serve`
# on the one warehouse, sharing a key, behind nginx (round robin, no affinity), started by
# ../python/balanced_serve.py as for engines_python_balanced: every call of the kit may land on
# any server. The same expectations hold, and the run also fails when a server answered no call,
# when nginx had to pass a call on to another server, or when a server did not stop cleanly; it
# is skipped (exit 77) when nginx or the Python interop virtualenv is missing.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../../.." && pwd)"
if ! jars="$("$ROOT/scripts/interop_env.sh" rest_kit jars)"; then
  echo "rest_kit: the kit's jars are not installed (pom.xml beside this script): run scripts/setup_interop.sh" >&2
  exit 1
fi
for jar in iceberg-open-api-*-tests.jar iceberg-core-*-tests.jar junit-platform-console-standalone-*.jar; do
  if ! compgen -G "$jars/$jar" >/dev/null; then
    echo "rest_kit: $jars has no $jar: run scripts/setup_interop.sh" >&2
    exit 1
  fi
done
SKADE_BIN="${SKADE_BIN:-$ROOT/build/src/skade}"
if [ ! -x "$SKADE_BIN" ]; then
  echo "rest_kit: skade binary not found at $SKADE_BIN (set SKADE_BIN)" >&2
  exit 1
fi
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
java_major="$("$JAVA" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')" ||
  java_major=""
# 17 for the kit's classes; at most 22 for Hadoop 3.4, whose UserGroupInformation (the client's
# HadoopFileIO) calls Subject.getSubject, which Java 23 and later refuse.
if [ -z "$java_major" ] || [ "${java_major%%.*}" -lt 17 ] || [ "${java_major%%.*}" -gt 22 ]; then
  echo "rest_kit: needs Java 17 to 22 (found '${java_major:-none}' at $JAVA): set JAVA_HOME" >&2
  exit 1
fi
PYTHON="${SKADE_PYTHON:-python3}"

BALANCED="${SKADE_BALANCED:-0}"
if [ "$BALANCED" = 1 ]; then
  # shellcheck source=../python/balanced_serve.sh
  . "$HERE/../python/balanced_serve.sh"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/skade-rest-kit.XXXXXX")"
server_pid=""
cleanup() {
  # In a balanced run server_pid is the launcher's: on SIGTERM it stops nginx and the servers.
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [ -n "${SKADE_KEEP_TMP:-}" ]; then
    echo "rest_kit: kept $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

# Nothing of the machine's own catalog settings leaks into the kit (it reads every CATALOG_*
# variable as a catalog property), and no request of the server may leave this machine.
while read -r name; do unset "$name"; done < <(env | sed -n 's/^\(CATALOG_[A-Za-z0-9_]*\)=.*/\1/p')
export AWS_ENDPOINT_URL=http://127.0.0.1:9 AWS_ENDPOINT_URL_S3=http://127.0.0.1:9 \
  AWS_ACCESS_KEY_ID=none AWS_SECRET_ACCESS_KEY=none AWS_REGION=us-east-1 \
  AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null TZ=UTC

# start_server DIR: `skade serve` over DIR/lake on free loopback ports; sets server_pid and
# rest_uri once the REST catalog listens (60 s at most).
start_server() {
  local dir="$1"
  mkdir -p "$dir"
  if [ "$BALANCED" = 1 ]; then
    local rc=0
    balanced_start "$dir" --warehouse "$dir/lake" --expect rest || rc=$?
    if [ "$rc" -eq 77 ]; then
      echo "rest_kit: skipped: the balanced run needs nginx and the Python interop virtualenv (above)" >&2
      exit 77
    fi
    [ "$rc" -eq 0 ] || return 1
    server_pid="$balanced_pid"
    rest_uri="$balanced_rest"
    return 0
  fi
  "$SKADE_BIN" --warehouse "$dir/lake" serve --host 127.0.0.1 --flight-port 0 --rest-port 0 \
    >"$dir/serve.stdout" 2>"$dir/serve.stderr" &
  server_pid=$!
  rest_uri=""
  local i
  for i in $(seq 1 600); do
    rest_uri="$(sed -n 's/^rest catalog listening on \(http:\/\/[0-9.]*:[0-9]*\).*/\1/p' "$dir/serve.stdout")"
    [ -n "$rest_uri" ] && return 0
    if ! kill -0 "$server_pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  echo "rest_kit: skade serve did not start in $dir:" >&2
  cat "$dir/serve.stdout" "$dir/serve.stderr" >&2
  return 1
}

# stop_server DIR: SIGTERM; a server that had died, or exits non-zero, or ignores SIGTERM for
# 30 s, is recorded in DIR/server-failed (a crash is a skade bug, not noise).
stop_server() {
  local dir="$1" i rc=0
  if [ "$BALANCED" = 1 ]; then
    # The launcher's verdict: which server answered how many calls, and whether all was well.
    balanced_stop "$dir" >"$dir/balanced.report" || rc=$?
    sed "s|^|  |" "$dir/balanced.report"
    server_pid=""
    if [ "$rc" -ne 0 ]; then
      { echo "the balanced servers failed (exit $rc):"; tail -n 40 "$dir/balanced.err"; } >"$dir/server-failed"
    fi
    return 0
  fi
  if ! kill -0 "$server_pid" 2>/dev/null; then
    wait "$server_pid" || rc=$?
    echo "skade serve died during the run (exit $rc)" >"$dir/server-failed"
  else
    kill -TERM "$server_pid"
    for i in $(seq 1 300); do
      kill -0 "$server_pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$server_pid" 2>/dev/null; then
      kill -KILL "$server_pid"
      echo "skade serve ignored SIGTERM for 30 s" >"$dir/server-failed"
    fi
    wait "$server_pid" || rc=$?
    if [ "$rc" -ne 0 ] && [ ! -f "$dir/server-failed" ]; then
      echo "skade serve exited $rc on SIGTERM" >"$dir/server-failed"
    fi
  fi
  server_pid=""
  if [ -f "$dir/server-failed" ]; then tail -n 40 "$dir/serve.stderr" >>"$dir/server-failed"; fi
}

# run_kit DIR SELECTORS...: the JUnit console launcher against the server at $rest_uri, its XML
# reports in DIR/reports and its console tree in DIR/launcher.log (5 minutes at most).
run_kit() {
  local dir="$1"
  shift
  mkdir -p "$dir/jvm-tmp"
  local rc=0
  # rck.local=false: no in-process reference server, the kit talks to CATALOG_URI.
  # rck.requires-namespace-create: skade creates tables only in namespaces that exist (the REST
  # spec's 404 NoSuchNamespaceException), so the kit creates the namespaces it uses.
  # java.io.tmpdir: the kit's @TempDir folders stay inside this run's folder.
  CATALOG_URI="$rest_uri" CATALOG_WAREHOUSE="$dir/lake" timeout 300 \
    "$JAVA" -Xmx1g -Djava.io.tmpdir="$dir/jvm-tmp" -Drck.requires-namespace-create=true \
    -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -cp "$jars/*" org.junit.platform.console.ConsoleLauncher execute \
    --disable-banner --disable-ansi-colors --details=tree --details-theme=ascii --fail-if-no-tests \
    --config=rck.local=false --reports-dir="$dir/reports" "$@" >"$dir/launcher.log" 2>&1 || rc=$?
  # 0: all passed, 1: some failed (judged below); anything else is the launcher's own failure.
  if [ "$rc" -gt 1 ]; then
    echo "rest_kit: the JUnit launcher failed (exit $rc) in $dir:" >&2
    tail -n 60 "$dir/launcher.log" >&2
    return 1
  fi
  sed -n '/^Test run finished/,$p' "$dir/launcher.log" | sed "s|^|  |"
}

expectations="$HERE/expectations.txt"
catalog_class=org.apache.iceberg.rest.RESTCompatibilityKitCatalogTests
view_class=org.apache.iceberg.rest.RESTCompatibilityKitViewCatalogTests
excludes=()
while read -r method; do
  # The launcher matches the whole name with the declaring class, e.g.
  # org.apache.iceberg.catalog.CatalogTests#testLoadTable (parameter types only if any).
  excludes+=("--exclude-methodname=.*#${method}(\\(.*)?")
done < <("$PYTHON" "$HERE/check_results.py" --list-skipped "$expectations")

start=$SECONDS
if [ "$BALANCED" = 1 ]; then
  echo "rest_kit: the kit against three skade serve behind nginx (${#excludes[@]} tests not run)"
else
  echo "rest_kit: the kit against skade serve (${#excludes[@]} tests not run)"
fi
start_server "$work/main"
run_kit "$work/main" --select-class="$catalog_class" --select-class="$view_class" "${excludes[@]}"
stop_server "$work/main"
echo "rest_kit: the kit took $((SECONDS - start)) s"
rc=0
"$PYTHON" "$HERE/check_results.py" "$expectations" "$work" || rc=$?
exit "$rc"
