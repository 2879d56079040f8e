#!/usr/bin/env bash
# Runs the JDBC interop suite: the Arrow Flight SQL JDBC driver pinned in pom.xml (installed by
# scripts/setup_interop.sh) against three `skade serve` processes on one fresh warehouse in a temp
# dir: plain, --auth basic, and --auth basic with TLS (a self-signed certificate made here).
#   SKADE_BIN=build/src/skade tests/interop/engines/jdbc/run_suite.sh
# ctest runs it as `engines_jdbc` (suite.cmake). JdbcSuite.java is compiled into the temp dir on
# each run (about a second). A missing driver jar fails the run; it is never skipped.
# SKADE_KEEP_TMP=1 keeps the warehouse, the classes and the servers' logs.
#
# With SKADE_BALANCED=1 (ctest `engines_jdbc_balanced`) the plain and the --auth basic server are
# each three `skade serve` on the warehouse, sharing a key, behind nginx (round robin, no
# affinity), started by ../python/balanced_serve.py as for engines_python_balanced: every call of
# the driver may land on any server. The TLS cases are skipped then (TLS would end at nginx, which
# speaks h2c to the servers). The run also fails when a server answered no call, when nginx had
# to pass a call on to another server, or when a server did not stop cleanly; it is skipped
# (exit 77) when nginx or the Python interop virtualenv is missing.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../../.." && pwd)"

fail() { echo "engines_jdbc: FAIL: $*" >&2; exit 1; }

if ! jars="$("$ROOT/scripts/interop_env.sh" jdbc jars)"; then
  fail "the pinned JDBC driver is not installed (run scripts/setup_interop.sh)"
fi
shopt -s nullglob
driver=("$jars"/flight-sql-jdbc-driver-*.jar)
shopt -u nullglob
[ "${#driver[@]}" -eq 1 ] || fail "expected one flight-sql-jdbc-driver jar in $jars"
SKADE_BIN="${SKADE_BIN:-$ROOT/build/src/skade}"
[ -x "$SKADE_BIN" ] || fail "skade binary not found at $SKADE_BIN (set SKADE_BIN)"
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
JAVAC="${JAVA_HOME:+$JAVA_HOME/bin/}javac"
command -v "$JAVAC" >/dev/null || fail "javac (JDK 17 or later) not found"
command -v openssl >/dev/null || fail "openssl not found (it makes the test certificate)"

# Instants compare in UTC everywhere (the JVM, skade's CLI). No request leaves this machine: an
# S3 location goes to a closed loopback port and no AWS profile is read.
export TZ=UTC
export AWS_ENDPOINT_URL=http://127.0.0.1:9 AWS_ENDPOINT_URL_S3=http://127.0.0.1:9 AWS_ACCESS_KEY_ID=none \
  AWS_SECRET_ACCESS_KEY=none AWS_REGION=us-east-1 AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null

BALANCED="${SKADE_BALANCED:-0}"
if [ "$BALANCED" = 1 ]; then
  # shellcheck source=../python/balanced_serve.sh
  . "$HERE/../python/balanced_serve.sh"
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/skade-jdbc.XXXXXX")"
pids=()
launchers=()  # balanced runs: on SIGTERM each stops its nginx and servers
cleanup() {
  for pid in "${pids[@]}" "${launchers[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${launchers[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "${SKADE_KEEP_TMP:-0}" = 1 ]; then echo "engines_jdbc: kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

mkdir -p "$tmp/lake" "$tmp/classes" "$tmp/work"
"$JAVAC" -nowarn -encoding UTF-8 -d "$tmp/classes" -cp "${driver[0]}" "$HERE/JdbcSuite.java" &
javac_pid=$!
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 \
  -subj /CN=localhost -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" >/dev/null 2>&1 \
  || fail "openssl could not make the test certificate"
printf 'alice:s3cret\nbob:hunter2\n' >"$tmp/users"

# start NAME ARGS…: `skade serve` on port 0 in the background; its port goes to $tmp/NAME.port.
start() {
  local name="$1"
  shift
  "$SKADE_BIN" --warehouse "$tmp/lake" serve --flight-port 0 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" </dev/null &
  pids+=("$!")
  echo "$!" >"$tmp/$name.pid"
}
# wait_port NAME: the port the server printed, within 30 s; fails if it exits first.
wait_port() {
  local name="$1" pid line
  pid="$(cat "$tmp/$name.pid")"
  for _ in $(seq 300); do
    line="$(grep -m1 '^flight sql listening on' "$tmp/$name.out" || true)"
    if [ -n "$line" ]; then
      echo "${line##*:}" | cut -d' ' -f1
      return
    fi
    kill -0 "$pid" 2>/dev/null || { cat "$tmp/$name.err" >&2; fail "skade serve ($name) exited before listening"; }
    sleep 0.1
  done
  cat "$tmp/$name.err" >&2
  fail "skade serve ($name) did not listen within 30 s"
}
# start_balanced NAME ARGS…: three servers behind nginx (balanced_serve.sh); sets NAME_port (the
# balancer's Flight SQL port) and NAME_pids.
start_balanced() {
  local name="$1" rc=0
  shift
  balanced_start "$tmp/$name" --warehouse "$tmp/lake" --no-rest --expect flight -- "$@" || rc=$?
  if [ "$rc" -eq 77 ]; then
    echo "engines_jdbc: skipped: the balanced run needs nginx and the Python interop virtualenv (above)" >&2
    exit 77
  fi
  [ "$rc" -eq 0 ] || fail "the balanced servers ($name) did not start"
  launchers+=("$balanced_pid")
  printf -v "${name}_port" '%s' "${balanced_flight##*:}"
  printf -v "${name}_pids" '%s' "$balanced_pids"
  printf -v "${name}_launcher" '%s' "$balanced_pid"
}
if [ "$BALANCED" = 1 ]; then
  start_balanced plain
  start_balanced auth --auth basic --users-file "$tmp/users"
  tls_port=0
else
  start plain
  start auth --auth basic --users-file "$tmp/users"
  start tls --auth basic --users-file "$tmp/users" --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem"
  plain_port="$(wait_port plain)"
  auth_port="$(wait_port auth)"
  tls_port="$(wait_port tls)"
  plain_pids="$(cat "$tmp/plain.pid")"
fi
wait "$javac_pid" || fail "JdbcSuite.java does not compile"

cat >"$tmp/logging.properties" <<'PROPS'
handlers = java.util.logging.ConsoleHandler
.level = OFF
java.util.logging.ConsoleHandler.level = OFF
PROPS

# Arrow's memory needs java.nio opened to it on Java 17 (without it the first result fails with
# "Failed to initialize MemoryUtil").
status=0
"$JAVA" --add-opens=java.base/java.nio=ALL-UNNAMED -Duser.timezone=UTC \
  -Djava.util.logging.config.file="$tmp/logging.properties" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -cp "$tmp/classes:${driver[0]}" JdbcSuite \
  --skade "$SKADE_BIN" --warehouse "$tmp/lake" --work "$tmp/work" --users "$tmp/users" \
  --plain-port "$plain_port" --auth-port "$auth_port" --tls-port "$tls_port" --cert "$tmp/cert.pem" \
  --plain-pid "$plain_pids" || status=$?

if [ "$BALANCED" = 1 ]; then
  # Each launcher's verdict: which server answered how many calls, and whether all was well. Both
  # stop at once, so that their bounded stops (balanced_serve.sh) add up to one, not two.
  balanced_signal "${launchers[@]}"
  for name in plain auth; do
    launcher_var="${name}_launcher"
    balanced_pid="${!launcher_var}"
    rc=0
    balanced_stop "$tmp/$name" >"$tmp/$name/balanced.report" || rc=$?
    sed "s|^|      |" "$tmp/$name/balanced.report"
    if [ "$rc" -ne 0 ]; then
      echo "FAIL  balanced.$name: the servers behind nginx failed (exit $rc, above)"; status=1
    else
      echo "PASS  balanced.$name: every server answered calls, nginx passed none on, clean exits"
    fi
  done
  launchers=()
  exit "$status"
fi

# Every server must still be up and stop cleanly on SIGTERM (a crash is a skade bug, not noise).
for name in plain auth tls; do
  pid="$(cat "$tmp/$name.pid")"
  if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid" && rc=0 || rc=$?
    echo "FAIL  server.$name: skade serve died during the run (exit $rc)"; tail -20 "$tmp/$name.err"; status=1
    continue
  fi
  kill -TERM "$pid"
  for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    echo "FAIL  server.$name: skade serve ignored SIGTERM for 30 s"; status=1
  fi
  wait "$pid" && rc=0 || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "FAIL  server.$name: skade serve exited $rc on SIGTERM"; tail -20 "$tmp/$name.err"; status=1
  else
    echo "PASS  server.$name: up to the end, clean exit on SIGTERM"
  fi
done
exit "$status"
