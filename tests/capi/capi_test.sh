#!/usr/bin/env bash
# Drives tests/capi/capi_test.c: prepares a warehouse with the CLI, then runs the C program.
set -euo pipefail
SKADE="$1"
CAPI_TEST="$2"
WH="$(mktemp -d)"
trap 'rm -rf "$WH"' EXIT
"$SKADE" --warehouse "$WH" ns create db >/dev/null
"$SKADE" --warehouse "$WH" create db.src --schema "id BIGINT NOT NULL, name VARCHAR" >/dev/null
"$SKADE" --warehouse "$WH" ingest db.src --sql "SELECT range AS id, 'n' || range AS name FROM range(100)" >/dev/null
"$SKADE" --warehouse "$WH" create db.dst --schema "id BIGINT NOT NULL, name VARCHAR" >/dev/null
"$CAPI_TEST" "$WH"
