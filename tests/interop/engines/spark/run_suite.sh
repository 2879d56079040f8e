#!/usr/bin/env bash
# Runs the Spark interop suite with its pinned engines (scripts/setup_interop.sh installs them):
#   SKADE_BIN=build/src/skade tests/interop/engines/spark/run_suite.sh [pytest args…]
# ctest runs it as `engines_spark` (suite.cmake). SKADE_KEEP_TMP=1 keeps the lake and logs.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../../.." && pwd)"
venv="$("$ROOT/scripts/interop_env.sh" spark venv)"
jars="$("$ROOT/scripts/interop_env.sh" spark jars)"
export SKADE_BIN="${SKADE_BIN:-$ROOT/build/src/skade}"
export SKADE_SPARK_JARS="$jars"
# Timestamps compare in UTC everywhere (Python, the JVM, skade); Spark binds to loopback only.
export TZ=UTC SPARK_LOCAL_IP=127.0.0.1
# Nothing of the machine's own Spark or Python setup leaks in.
unset SPARK_HOME PYTHONPATH PYSPARK_SUBMIT_ARGS
cd "$HERE"
exec "$venv/bin/python" -m pytest -p no:cacheprovider -o console_output_style=classic \
  --durations=0 -rfEsxX "$@" .
