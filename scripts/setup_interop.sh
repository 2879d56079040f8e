#!/usr/bin/env bash
# Installs the real engines the interop suites drive (tests/interop/engines/<suite>/), pinned and
# cached between runs on one machine:
#   - each <suite>/requirements.txt (exact versions with hashes) becomes a virtualenv under
#     $SKADE_CACHE/venv/<suite>-<hash of the file>, installed with --require-hashes;
#   - each <suite>/pom.xml (exact Maven coordinates) has its jars copied to
#     $SKADE_CACHE/jars/<suite>-<hash of the file>/;
#   - each <suite>/server.txt (one Maven artifact with its SHA-256) is unpacked, in part, into
#     $SKADE_CACHE/servers/<suite>-<hash of the file>/.
# A suite reads its folders from scripts/interop_env.sh. Idempotent: an existing, complete
# virtualenv, jar folder or server is kept (a stamp file marks completion).
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

# A server distribution (e.g. Trino's tarball): <suite>/server.txt names one Maven artifact
# (`artifact G:A:V:TYPE`), its SHA-256 (`sha256 HEX`) and the paths of the unpacked tree to keep
# (`keep PATH`, one a line); they go to $CACHE/servers/<suite>-<hash of the file>/. The tarball
# is checked against the pinned hash before anything of it is used, and not kept afterwards.
for spec in "$ROOT"/tests/interop/engines/*/server.txt; do
  [ -f "$spec" ] || continue
  suite="$(basename "$(dirname "$spec")")"
  hash="$(sha256sum "$spec" | cut -c1-16)"
  dest="$CACHE/servers/$suite-$hash"
  [ -f "$dest/.complete" ] && continue
  artifact="$(awk '$1 == "artifact" { print $2 }' "$spec")"
  want="$(awk '$1 == "sha256" { print $2 }' "$spec")"
  mapfile -t keep < <(awk '$1 == "keep" { print $2 }' "$spec")
  if [ -z "$artifact" ] || [ -z "$want" ] || [ "${#keep[@]}" -eq 0 ]; then
    echo "setup_interop: $spec needs artifact, sha256 and keep lines" >&2
    exit 1
  fi
  echo "setup_interop: $suite: fetching $artifact"
  part="$dest.part"
  rm -rf "$dest" "$part"
  mkdir -p "$part/download" "$part/unpacked" "$dest"
  mvn -q -B -Dmaven.repo.local="$CACHE/m2" \
    org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
    -Dartifact="$artifact" -DoutputDirectory="$part/download"
  tarball="$(find "$part/download" -maxdepth 1 -type f | head -n 1)"
  got="$(sha256sum "$tarball" | cut -d' ' -f1)"
  if [ "$got" != "$want" ]; then
    echo "setup_interop: $suite: $(basename "$tarball") has SHA-256 $got, pinned $want" >&2
    rm -rf "$part" "$dest"
    exit 1
  fi
  # The whole tree first: the tarball hard-links files shared between plugins, so extracting
  # only the kept members could miss a link's target.
  tar -xzf "$tarball" -C "$part/unpacked" --strip-components=1
  for path in "${keep[@]}"; do
    mkdir -p "$dest/$(dirname "$path")"
    mv "$part/unpacked/$path" "$dest/$path"
  done
  rm -rf "$part"
  # Maven's local repository would keep a second copy of the tarball; the unpacked tree suffices.
  IFS=: read -r group name version _ <<< "$artifact"
  rm -rf "$CACHE/m2/${group//.//}/$name/$version"
  touch "$dest/.complete"
done
echo "setup_interop: ok"
