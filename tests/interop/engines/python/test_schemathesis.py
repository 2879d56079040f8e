"""Property-based fuzzing of skade's Iceberg REST catalog with schemathesis, against the Iceberg
REST OpenAPI document: no 5xx, no crash, every status and response as the document says.

The document is not shipped by any pinned package; it is read from ../shared/fixtures/openapi/
(beside the repository) and the fuzz test says it was skipped when that folder is absent. The
run is bounded and reproducible (fixed seed, a few examples per operation, a time budget).

What is left out, and why:
- operations skade does not advertise in /v1/config `endpoints` (views, functions, remote
  signing, credentials, unregister) and the deprecated OAuth token endpoint;
- one defect of the document itself is patched in a temporary copy: `PrimitiveTypeValue` is a
  `oneOf` of IntegerTypeValue, LongTypeValue, … so that no integer partition value (in every
  planned file) can ever validate (0 matches several branches); the copy says `anyOf`;
- status_code_conformance for registerTable and updateTable, whose two known skade bugs
  (undocumented 406) have their own strict xfail tests below.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

import skade_harness as sk

SPEC = sk.REPO.parent / "shared" / "fixtures" / "openapi" / "iceberg-rest-catalog-open-api.yaml"
SEED = 20261204
MAX_EXAMPLES = int(os.environ.get("SKADE_FUZZ_EXAMPLES", "10"))
TIME_BUDGET_S = int(os.environ.get("SKADE_FUZZ_SECONDS", "75"))
METHODS = {"get", "put", "post", "delete", "head", "patch"}


def _seed_lake(warehouse: Path) -> None:
    """Something for the requests to find: nested namespaces and a partitioned table with rows."""
    sk.run(warehouse, "ns", "create", "fuzz.inner")
    sk.run(warehouse, "create", "fuzz.t", "--schema", "id BIGINT NOT NULL, s VARCHAR", "--partition-by", "bucket(4, id)")
    sk.run(warehouse, "sql", "INSERT INTO fuzz.t VALUES (1, 'a'), (2, 'b')")


def _post(url: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


@pytest.mark.skipif(not SPEC.is_file(),
                    reason=f"skipped: the Iceberg REST OpenAPI document is absent ({SPEC}); no pinned package ships it")
def test_rest_api_conforms_under_fuzzing(serve, warehouse, tmp_path):
    _seed_lake(warehouse)
    server = serve(warehouse, "--rest-prefix", "skade")  # the harness keeps any S3 access on loopback
    with urllib.request.urlopen(f"{server.rest_uri}/v1/config") as r:
        advertised = set(json.load(r)["endpoints"])
    assert any("/views" in e for e in advertised)  # fuzzed with the rest

    spec = yaml.safe_load(SPEC.read_text())
    spec["components"]["schemas"]["PrimitiveTypeValue"]["anyOf"] = \
        spec["components"]["schemas"]["PrimitiveTypeValue"].pop("oneOf")
    # The view operations' own 404/409 responses name the bare ErrorModel as their schema, while
    # their examples (NoSuchViewError, …), every other error response and the Java client and
    # server use the IcebergErrorResponse wrapper {"error": ErrorModel}: checked as the wrapper.
    for item in spec["paths"].values():
        for op in item.values():
            for response in (op.get("responses", {}) if isinstance(op, dict) else {}).values():
                for media in response.get("content", {}).values() if isinstance(response, dict) else []:
                    if media.get("schema") == {"$ref": "#/components/schemas/ErrorModel"}:
                        media["schema"] = {"$ref": "#/components/schemas/IcebergErrorResponse"}
    patched = tmp_path / "iceberg-rest-catalog-open-api.yaml"
    patched.write_text(yaml.safe_dump(spec, sort_keys=False))
    left_out = []
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if method in METHODS and path != "/v1/config" and f"{method.upper()} {path}" not in advertised:
                left_out.append(op["operationId"])
    print(f"operations skade does not advertise, left out: {sorted(left_out)}")

    config = tmp_path / "schemathesis.toml"
    config.write_text(textwrap.dedent(f"""\
        seed = {SEED}
        [dictionaries.namespaces]
        values = ["fuzz", "fuzz\\u001finner", "fuzz.inner", "missing"]
        [dictionaries.tables]
        values = ["t", "missing"]
        [parameters]
        "path.prefix" = "skade"
        "path.namespace" = {{ dictionary = "namespaces", probability = 0.6 }}
        "path.table" = {{ dictionary = "tables", probability = 0.6 }}
        [[operations]]
        include-operation-id = ["registerTable", "updateTable"]
        checks.status_code_conformance.enabled = false
        """))
    # One worker: with two, Hypothesis parses lambdas' source (ast.parse) on both threads at once,
    # and CPython 3.11 then fails now and then with "SystemError: AST constructor recursion depth
    # mismatch" (CPython gh-106905), a runtime error of the tool, not a finding about skade.
    cmd = [str(Path(sys.executable).parent / "schemathesis"), "--config-file", str(config), "run", str(patched),
           "--url", server.rest_uri, "--no-color",
           "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,"
                       "response_schema_conformance,response_headers_conformance",
           "--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED), "--generation-database", "none",
           "--phases", "examples,coverage,fuzzing", "--workers", "1", "--max-time", str(TIME_BUDGET_S),
           "--request-timeout", "20", "--suppress-health-check", "all", "--exclude-deprecated",
           "--exclude-path-regex", r"/oauth/tokens"]
    for op in left_out:
        cmd += ["--exclude-operation-id", op]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=TIME_BUDGET_S + 90)
    (tmp_path / "schemathesis.out").write_text(proc.stdout + proc.stderr)
    print(proc.stdout[-25000:])
    print(proc.stderr[-4000:], file=sys.stderr)
    assert server.alive(), f"skade serve died while being fuzzed\n{server.output()}"
    assert proc.returncode == 0, (f"schemathesis found failures or errors (exit {proc.returncode}); output above and "
                                  f"in {tmp_path / 'schemathesis.out'}")


# Statuses the OpenAPI document allows for these two operations (besides 5XX).
REGISTER_TABLE_STATUSES = {200, 400, 401, 403, 404, 409, 419, 503}
UPDATE_TABLE_STATUSES = {200, 400, 401, 403, 404, 409, 419, 500, 502, 503, 504}


def test_register_overwrite_answers_a_documented_status(serve, warehouse):
    _seed_lake(warehouse)
    server = serve(warehouse)
    with urllib.request.urlopen(f"{server.rest_uri}/v1/namespaces/fuzz/tables/t") as r:
        location = json.load(r)["metadata-location"]
    status, body = _post(f"{server.rest_uri}/v1/namespaces/fuzz/register",
                         {"name": "t", "metadata-location": location, "overwrite": True})
    assert status in REGISTER_TABLE_STATUSES, (status, body)


def test_partition_statistics_update_answers_a_documented_status(serve, warehouse):
    _seed_lake(warehouse)
    server = serve(warehouse)
    with urllib.request.urlopen(f"{server.rest_uri}/v1/namespaces/fuzz/tables/t") as r:
        snapshot = json.load(r)["metadata"]["current-snapshot-id"]
    status, body = _post(f"{server.rest_uri}/v1/namespaces/fuzz/tables/t", {"requirements": [], "updates": [
        {"action": "set-partition-statistics", "partition-statistics": {
            "snapshot-id": snapshot, "statistics-path": str(warehouse / "fuzz" / "t" / "metadata" / "stats.parquet"),
            "file-size-in-bytes": 1}}]})
    assert status in UPDATE_TABLE_STATUSES, (status, body)
