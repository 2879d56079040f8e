#!/usr/bin/env bash
# Installs everything skade needs on a fresh Debian 12 machine (run as root). Idempotent.
#   Debian packages by name, DuckDB 1.4.4 from pinned npm packages (integrity-checked) into
#   third_party/duckdb/, the pinned Node.js interop clients in tests/interop/, and the web
#   console's packages in web/ (Debian's chromium runs its browser test).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

APT_PACKAGES=(
  build-essential cmake ninja-build ccache lld pkg-config git ca-certificates
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libflatbuffers-dev flatbuffers-compiler
  libavro-dev avro-bin zlib1g-dev libdeflate-dev libzstd-dev liblz4-dev
  libsqlite3-dev libpq-dev postgresql
  nlohmann-json3-dev libsimdjson-dev libcpp-httplib-dev libmicrohttpd-dev libcurl4-openssl-dev libssl-dev
  libcli11-dev libspdlog-dev libfmt-dev uuid-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev
  python3-botocore s3cmd
  nginx
  chromium
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v node >/dev/null 2>&1; then missing+=(nodejs npm); fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

"$ROOT/scripts/fetch_duckdb.sh"

if [ -f "$ROOT/tests/interop/package-lock.json" ]; then
  stamp="$ROOT/tests/interop/node_modules/.skade-lock.sha"
  want="$(sha256sum "$ROOT/tests/interop/package-lock.json" | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "setup: installing Node.js interop clients (npm ci)"
    (cd "$ROOT/tests/interop" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
    echo "$want" > "$stamp"
  fi
fi
# The web console's front end (pinned npm packages, bundled by esbuild; skade embeds it).
"$ROOT/scripts/build_web.sh"
echo "setup: ok"
