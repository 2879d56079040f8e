#!/usr/bin/env bash
# Installs the web console's pinned npm packages (web/package-lock.json: esbuild, uPlot, TypeScript
# and, for the browser test, playwright-core) with `npm ci`, when the lock changed, checks the
# types and bundles the console into web/dist (the CMake build bundles it again into the build
# folder and embeds it in skade). The npm cache lives under ~/.cache; nothing else is downloaded
# (no browser: the browser test drives Debian's chromium).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WEB="$ROOT/web"
stamp="$WEB/node_modules/.skade-lock.sha"
want="$(sha256sum "$WEB/package-lock.json" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "build_web: installing the web console's packages (npm ci)"
  (cd "$WEB" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error --cache "$HOME/.cache/npm")
  echo "$want" > "$stamp"
fi
# Types are checked (strict) before bundling: esbuild only strips them.
"$WEB/node_modules/.bin/tsc" -p "$WEB"
node "$WEB/build.mjs" "$WEB/dist"
