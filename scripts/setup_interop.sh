#!/usr/bin/env bash
# Installs the real engines the interop suites drive (tests/interop/engines/<suite>/), pinned and
# cached between runs on one machine:
#   - each <suite>/requirements.txt (exact versions with hashes) becomes a virtualenv under
#     $SKADE_CACHE/venv/<suite>-<hash of the file>, installed with --require-hashes;
#   - each <suite>/pom.xml (exact Maven coordinates) has its jars copied to
#     $SKADE_CACHE/jars/<suite>-<hash of the file>/.
# A suite reads its folders from scripts/interop_env.sh. Idempotent: an existing, complete
# virtualenv or jar folder is kept (a stamp file marks completion).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${SKADE_CACHE:-$HOME/.cache/skade}"
# Debian's python3 (3.11) has venv; pyenv's python3 on PATH does too. Prefer an explicit one.
PYTHON="${SKADE_PYTHON:-python3}"
mkdir -p "$CACHE/venv" "$CACHE/jars" "$CACHE/pip"

for req in "$ROOT"/tests/interop/engines/*/requirements.txt; do
  [ -f "$req" ] || continue
  suite="$(basename "$(dirname "$req")")"
  hash="$(sha256sum "$req" | cut -c1-16)"
  venv="$CACHE/venv/$suite-$hash"
  if [ ! -f "$venv/.complete" ]; then
    echo "setup_interop: $suite: installing $(grep -cE '^[A-Za-z0-9]' "$req") pinned Python packages"
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      --cache-dir "$CACHE/pip" --require-hashes --no-deps -r "$req"
    touch "$venv/.complete"
  fi
done

for pom in "$ROOT"/tests/interop/engines/*/pom.xml; do
  [ -f "$pom" ] || continue
  suite="$(basename "$(dirname "$pom")")"
  hash="$(sha256sum "$pom" | cut -c1-16)"
  jars="$CACHE/jars/$suite-$hash"
  if [ ! -f "$jars/.complete" ]; then
    echo "setup_interop: $suite: resolving Maven artifacts"
    rm -rf "$jars"
    mkdir -p "$jars"
    mvn -q -B -f "$pom" -Dmaven.repo.local="$CACHE/m2" dependency:copy-dependencies \
      -DoutputDirectory="$jars" -DincludeScope=runtime
    touch "$jars/.complete"
  fi
done
echo "setup_interop: ok"
