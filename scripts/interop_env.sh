#!/usr/bin/env bash
# Prints the folders of one interop suite's pinned engines (see scripts/setup_interop.sh):
#   scripts/interop_env.sh SUITE venv|jars|server
# Exits 1 (with a message) when setup_interop.sh has not installed them.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${SKADE_CACHE:-$HOME/.cache/skade}"
suite="$1" kind="$2"
case "$kind" in
  venv) file="$ROOT/tests/interop/engines/$suite/requirements.txt"; dir="$CACHE/venv" ;;
  jars) file="$ROOT/tests/interop/engines/$suite/pom.xml"; dir="$CACHE/jars" ;;
  server) file="$ROOT/tests/interop/engines/$suite/server.txt"; dir="$CACHE/servers" ;;
  *) echo "interop_env: kind must be venv, jars or server" >&2; exit 2 ;;
esac
hash="$(sha256sum "$file" | cut -c1-16)"
if [ ! -f "$dir/$suite-$hash/.complete" ]; then
  echo "interop_env: $suite $kind not installed: run scripts/setup_interop.sh" >&2
  exit 1
fi
echo "$dir/$suite-$hash"
