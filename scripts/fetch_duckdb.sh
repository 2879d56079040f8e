#!/usr/bin/env bash
# Fetches DuckDB 1.4.4 (shared library + C/C++ headers) from two pinned npm packages, checks
# their sha512 integrity, and unpacks them into third_party/duckdb/{lib,include}. Idempotent.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/third_party/duckdb"
VERSION_TAG="1.4.4-r.4+headers-1.4.4"

LIB_PKG="@duckdb/node-bindings-linux-x64@1.4.4-r.4"
LIB_SHA512="jBTL/WvfwxLToFa/pVHfT6elMtltJGnc3wSuxZD9OfMltit9YUdVFS37vBFQzXMT1Z8OWjtSjMh+zPKxOwHLHA=="
HDR_PKG="duckdb@1.4.4"
HDR_SHA512="hEJJ5hyVF0VLj3dmOLpsWrQR0b3d4Ykqtygm6iUXjHJDDnSqg/USKxcb5qvNrOhFYPgktayU6dXCtgPqcmmpog=="

if [ -f "$DEST/.version" ] && [ "$(cat "$DEST/.version")" = "$VERSION_TAG" ] &&
   [ -f "$DEST/lib/libduckdb.so" ] && [ -f "$DEST/include/duckdb.hpp" ]; then
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fetch() {  # $1 package spec, $2 expected sha512 (base64)
  local tgz
  tgz="$(cd "$work" && npm pack --silent "$1" | tail -n 1)"
  local got
  got="$(openssl dgst -sha512 -binary "$work/$tgz" | base64 -w0)"
  if [ "$got" != "$2" ]; then
    echo "fetch_duckdb: integrity mismatch for $1: got sha512-$got" >&2
    exit 1
  fi
  echo "$work/$tgz"
}
echo "fetch_duckdb: fetching $LIB_PKG and $HDR_PKG"
lib_tgz="$(fetch "$LIB_PKG" "$LIB_SHA512")"
hdr_tgz="$(fetch "$HDR_PKG" "$HDR_SHA512")"

rm -rf "$DEST.tmp" && mkdir -p "$DEST.tmp/lib" "$DEST.tmp/unpack"
tar -xzf "$lib_tgz" -C "$DEST.tmp/unpack" package/libduckdb.so
mv "$DEST.tmp/unpack/package/libduckdb.so" "$DEST.tmp/lib/"
tar -xzf "$hdr_tgz" -C "$DEST.tmp/unpack" package/src/duckdb/src/include
mv "$DEST.tmp/unpack/package/src/duckdb/src/include" "$DEST.tmp/include"
rm -rf "$DEST.tmp/unpack"
echo "$VERSION_TAG" > "$DEST.tmp/.version"
rm -rf "$DEST" && mv "$DEST.tmp" "$DEST"
echo "fetch_duckdb: installed into $DEST"
