"""PyIceberg with no storage keys writes and reads a table on S3 through skade's remote signing.

The store is s3rver behind tests/io/botocore_verify.py in proxy mode: s3rver checks no
signature, the proxy checks each request's SigV4 signature with botocore as S3 would and passes
only those signed with the store's key, which only `skade serve --remote-signing` holds. PyIceberg
(its fsspec FileIO, s3fs) learns from loadTable where to have its requests signed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import SignError

import scaleout
import skade_harness

BUCKET = scaleout.BUCKET
KEY = "S3RVER"  # the store's key: s3rver's account, known to the proxy and to skade serve only
REGION = "us-east-1"


class _Process:
    """The verifying proxy: it prints "listening on PORT" first."""

    def __init__(self, args: list[str], log: Path):
        self.log = open(log, "w")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        if not line:
            self.stop()
            raise RuntimeError(f"{args[0]} did not start: {log.read_text()}")
        self.port = int(line.split()[-1])
        # Keep draining stdout so the child never blocks on a full pipe.
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        self.log.close()


@pytest.fixture
def signed_store(tmp_path: Path):
    """(endpoint of the verifying proxy, its log path)."""
    if shutil.which("node") is None or not Path("/usr/bin/python3").exists():
        pytest.skip("node (for s3rver) and /usr/bin/python3 with python3-botocore are needed")
    s3 = scaleout.S3rver(tmp_path)
    proxy_log = tmp_path / "proxy.log"
    proxy = _Process(["/usr/bin/python3", str(skade_harness.REPO / "tests" / "io" / "botocore_verify.py"), "--proxy",
                      s3.endpoint, KEY, KEY, REGION], proxy_log)
    yield f"http://127.0.0.1:{proxy.port}", proxy_log
    proxy.stop()
    s3.stop()


def _keyless_env():
    """This process's AWS settings gone: whatever reaches the store was signed by skade."""
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("AWS_")}
    os.environ.update({"AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"})
    return saved


def test_pyiceberg_without_keys_writes_and_reads_through_remote_signing(tmp_path: Path, serve, signed_store):
    endpoint, proxy_log = signed_store
    warehouse = f"s3://{BUCKET}/wh"
    server_env = {
        "AWS_ENDPOINT_URL": endpoint, "AWS_ENDPOINT_URL_S3": endpoint, "AWS_ACCESS_KEY_ID": KEY,
        "AWS_SECRET_ACCESS_KEY": KEY, "AWS_REGION": REGION,
    }
    server = serve(warehouse, "--catalog", f"sqlite://{tmp_path / 'catalog.db'}", "--remote-signing", env=server_env)

    saved = _keyless_env()
    try:
        catalog = RestCatalog("skade", uri=server.rest_uri, **{"py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO"})
        catalog.create_namespace("sales")
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
        table = catalog.create_table("sales.orders", schema=schema)
        assert table.io.properties.get("s3.remote-signing-enabled") == "true"
        assert "s3.access-key-id" not in table.io.properties
        rows = pa.table({"id": pa.array(range(1000), pa.int64()), "name": [f"n{i}" for i in range(1000)]},
                        schema=schema)
        table.append(rows)
        table.append(rows.slice(0, 10))

        back = catalog.load_table("sales.orders").scan().to_arrow()
        assert back.num_rows == 1010
        assert sorted(back.column("id").to_pylist()) == sorted(list(range(1000)) + list(range(10)))

        # A file of another table is not signed for this one: the read fails, nothing is sent.
        other = catalog.create_table("sales.other", schema=schema)
        other.append(rows.slice(0, 3))
        other_file = next(iter(other.scan().plan_files())).file.file_path
        with pytest.raises(SignError, match="403"):
            catalog.load_table("sales.orders").io.new_input(other_file).open().read()
        refused = requests.post(f"{server.rest_uri}/v1/namespaces/sales/tables/orders/sign", json={
            "region": REGION, "method": "GET", "headers": {},
            "uri": endpoint + "/" + other_file.removeprefix("s3://")}, timeout=30)
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["type"] == "ForbiddenException"
        # The store takes no request skade did not sign.
        unsigned = requests.get(endpoint + "/" + other_file.removeprefix("s3://"), timeout=30)
        assert unsigned.status_code == 403 and "AccessDenied" in unsigned.text
    finally:
        os.environ.update(saved)

    # skade reads what PyIceberg wrote (its own S3 client signs with the key, through the proxy).
    counted = subprocess.run(
        [skade_harness.skade_binary(), "--warehouse", warehouse, "--catalog", f"sqlite://{tmp_path / 'catalog.db'}",
         "--quiet", "sql", "SELECT count(*) AS n, sum(id) AS s FROM sales.orders", "--format", "csv"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, **skade_harness.NO_NETWORK_ENV, **server_env})
    assert counted.returncode == 0, counted.stderr
    assert counted.stdout.strip().splitlines()[-1] == f"1010,{sum(range(1000)) + sum(range(10))}"
    log = proxy_log.read_text()
    # Every request that reached the store carried the store's signature; none went unsigned.
    assert log.count("refused unsigned") == 1, log[-2000:]  # the test's own request above
    assert "SignatureDoesNotMatch" not in log, log[-2000:]
    assert log.count('"PUT ') >= 6, log[-2000:]  # data, manifests, lists and metadata of two appends
