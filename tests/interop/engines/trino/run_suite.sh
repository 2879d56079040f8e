#!/usr/bin/env bash
# Runs the Trino interop suite with its pinned server (scripts/setup_interop.sh installs it):
#   SKADE_BIN=build/src/skade tests/interop/engines/trino/run_suite.sh [pytest args…]
# ctest runs it as `engines_trino` (suite.cmake). SKADE_KEEP_TMP=1 keeps the lake and the logs.
# Trino 476 needs Java 24 or later: SKADE_JAVA25_HOME, else the machine's Temurin 25 JDK.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../../.." && pwd)"
venv="$("$ROOT/scripts/interop_env.sh" trino venv)"
home="$("$ROOT/scripts/interop_env.sh" trino server)"
jdk="${SKADE_JAVA25_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
if [ ! -x "$jdk/bin/java" ]; then
  echo "run_suite: no Java 25 JDK at $jdk (set SKADE_JAVA25_HOME)" >&2
  exit 1
fi
export SKADE_BIN="${SKADE_BIN:-$ROOT/build/src/skade}"
export SKADE_TRINO_HOME="$home" SKADE_TRINO_JAVA="$jdk/bin/java"
# The JDK's AOT class cache of this server, trained by the first run, is only valid for the JDK
# that wrote it: its name carries the JDK's version.
jdk_version="$(sed -n 's/^JAVA_RUNTIME_VERSION="\(.*\)"$/\1/p' "$jdk/release")"
export SKADE_TRINO_AOT="$home/trino-${jdk_version:-unknown}.aot"
# Timestamps compare in UTC everywhere (Python, the JVM, skade).
export TZ=UTC PYTHONDONTWRITEBYTECODE=1
unset PYTHONPATH JAVA_TOOL_OPTIONS
cd "$HERE"
exec "$venv/bin/python" -m pytest -p no:cacheprovider -o console_output_style=classic \
  --durations=0 -rfEsxX "$@" .
