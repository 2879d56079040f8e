#!/usr/bin/env bash
# Configures and builds skade with CMake + Ninja (+ ccache when installed).
#   SKADE_BUILD_DIR (default: build), SKADE_BUILD_TYPE (default: RelWithDebInfo) and
#   SKADE_CXX_FLAGS (e.g. sanitizers) apply to a new build folder;
#   extra arguments go to ninja (e.g. a target name).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${SKADE_BUILD_DIR:-$ROOT/build}"
BUILD_TYPE="${SKADE_BUILD_TYPE:-RelWithDebInfo}"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
    -DCMAKE_CXX_FLAGS="${SKADE_CXX_FLAGS:-}"
fi
ninja -C "$BUILD_DIR" "$@"
