#!/usr/bin/env bash
# Configures and builds skade with CMake + Ninja (+ ccache when installed).
#   SKADE_BUILD_DIR (default: build), SKADE_BUILD_TYPE (default: RelWithDebInfo),
#   SKADE_CXX_FLAGS (e.g. sanitizers) and SKADE_EXE_LINKER_FLAGS apply to a new build folder;
#   extra arguments go to ninja (e.g. a target name).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${SKADE_BUILD_DIR:-$ROOT/build}"
BUILD_TYPE="${SKADE_BUILD_TYPE:-RelWithDebInfo}"
# ccache hashes paths relative to the root, so a build here warms the cache of every other clone
# (CI builds a fresh clone in another folder); three build folders (release, ASan, fuzz) need
# more than ccache's default 5 GB.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-20G}"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
    -DCMAKE_CXX_FLAGS="${SKADE_CXX_FLAGS:-}" -DCMAKE_EXE_LINKER_FLAGS="${SKADE_EXE_LINKER_FLAGS:-}"
fi
ninja -C "$BUILD_DIR" "$@"
