"""Spark with no storage keys writes and reads a table on S3 through skade's remote signing.

Iceberg's Java S3FileIO (iceberg-aws-bundle) learns from skade's loadTable answer to have its
requests signed by `POST …/tables/{table}/sign` (s3.remote-signing-enabled, signer.endpoint,
s3.endpoint, client.region, path style). The store is s3rver behind tests/io/botocore_verify.py in
proxy mode: s3rver checks no signature, the proxy checks each request's SigV4 signature with
botocore as S3 would and passes only those signed with the store's key, which only
`skade serve --remote-signing` holds. The JVM holds no AWS settings of its own.
"""

import os
import select
import shutil
import subprocess
import sys
import threading

import pytest

from skade_process import Server

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
BUCKET = "signed"
KEY = "S3RVER"  # the store's key: s3rver's account, known to the proxy and to skade serve only
REGION = "us-east-1"


class _Child:
    """A helper process that prints its port on its first stdout line (after `marker`)."""

    def __init__(self, args, log_path, marker):
        self._log = open(log_path, "w")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self._log, text=True)
        ready, _, _ = select.select([self.proc.stdout], [], [], 30)
        line = self.proc.stdout.readline() if ready else ""
        if not line.startswith(marker):
            self.stop()
            raise RuntimeError(f"{args[:2]} printed {line!r}; log: {open(log_path).read()[-2000:]}")
        self.port = int(line.split()[-1])
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


@pytest.fixture(scope="module")
def signed(workdir):
    """(skade serve --remote-signing over s3://BUCKET/wh, the proxy's endpoint, its log path, the
    environment of a skade process with the store's key)."""
    s3rver = os.path.join(REPO, "tests", "interop", "node_modules", "s3rver", "package.json")
    if shutil.which("node") is None or not os.path.exists(s3rver) or not os.path.exists("/usr/bin/python3"):
        pytest.skip("node with s3rver (tests/interop, scripts/setup.sh) and /usr/bin/python3 with python3-botocore "
                    "are needed")
    root = os.path.join(workdir, "remote-signing")
    os.makedirs(os.path.join(root, "s3"))
    store = _Child(["node", "--openssl-legacy-provider", os.path.join(REPO, "tests", "interop", "s3rver.mjs"),
                    os.path.join(root, "s3"), BUCKET], os.path.join(root, "s3rver.log"), "port ")
    proxy_log = os.path.join(root, "proxy.log")
    proxy = None
    server = None
    try:
        proxy = _Child(["/usr/bin/python3", os.path.join(REPO, "tests", "io", "botocore_verify.py"), "--proxy",
                        f"http://127.0.0.1:{store.port}", KEY, KEY, REGION], proxy_log, "listening on")
        endpoint = f"http://127.0.0.1:{proxy.port}"
        env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ENDPOINT_URL_S3": endpoint, "AWS_ACCESS_KEY_ID": KEY,
               "AWS_SECRET_ACCESS_KEY": KEY, "AWS_REGION": REGION, "AWS_CONFIG_FILE": "/dev/null",
               "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}
        catalog = os.path.join(root, "catalog.db")
        server = Server(os.environ["SKADE_BIN"], f"s3://{BUCKET}/wh", os.path.join(root, "serve.log"),
                        lake_args=("--catalog", f"sqlite://{catalog}"), serve_args=("--remote-signing",), env=env)
        yield server, endpoint, proxy_log, env, catalog
    finally:
        if server:
            server.stop()
        if proxy:
            proxy.stop()
        store.stop()


def test_spark_without_keys_writes_and_reads_through_remote_signing(spark, signed):
    server, endpoint, proxy_log, env, catalog = signed
    # The JVM (started with this process's environment) can find no credentials of its own.
    credentials = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                   "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                   "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
    assert not [k for k in credentials if os.environ.get(k)], "the JVM must hold no AWS credentials"
    assert not os.path.exists(os.path.expanduser("~/.aws/credentials")), "the JVM must hold no AWS credentials"
    # A catalog of its own, configured before its first use.
    spark.conf.set("spark.sql.catalog.signed", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.signed.type", "rest")
    spark.conf.set("spark.sql.catalog.signed.uri", server.rest_uri)
    spark.conf.set("spark.sql.catalog.signed.cache-enabled", "false")

    spark.sql("CREATE NAMESPACE signed.sales")
    spark.sql("CREATE TABLE signed.sales.orders (id BIGINT NOT NULL, name STRING) USING iceberg "
              "PARTITIONED BY (bucket(4, id))")
    spark.sql("INSERT INTO signed.sales.orders SELECT id, concat('n', CAST(id AS STRING)) FROM range(1000)")
    spark.sql("INSERT INTO signed.sales.orders SELECT id, 'again' FROM range(10)")
    spark.sql("DELETE FROM signed.sales.orders WHERE id = 7")  # rewrites a data file (copy-on-write)
    got = spark.sql("SELECT count(*) AS n, sum(id) AS s FROM signed.sales.orders").collect()[0]
    expected_sum = sum(range(1000)) + sum(range(10)) - 2 * 7
    assert (got["n"], got["s"]) == (1008, expected_sum)

    # CTAS at a location of Spark's choosing: a staged create writes its files before the table
    # exists; the staged answer's signer route carries the scope those writes are signed under.
    spark.sql(f"CREATE TABLE signed.sales.copy USING iceberg LOCATION 's3://{BUCKET}/wh/elsewhere/copy' "
              "AS SELECT * FROM signed.sales.orders WHERE id < 100")
    copied = spark.sql("SELECT count(*) AS n FROM signed.sales.copy").collect()[0]
    assert copied["n"] == 108  # ids 0..99 but 7, and the ten of the second insert

    # skade reads what Spark wrote (its own S3 client signs with the key, through the proxy).
    counted = subprocess.run(
        [os.environ["SKADE_BIN"], "--warehouse", f"s3://{BUCKET}/wh", "--catalog", f"sqlite://{catalog}", "--quiet",
         "sql", "SELECT count(*) AS n, sum(id) AS s FROM sales.orders", "--format", "csv"],
        capture_output=True, text=True, timeout=120, env={**os.environ, **env})
    assert counted.returncode == 0, counted.stderr
    assert counted.stdout.strip().splitlines()[-1] == f"1008,{expected_sum}"

    log = open(proxy_log).read()
    # Every request that reached the store carried the store's signature; none went unsigned.
    assert "refused unsigned" not in log, log[-3000:]
    assert "SignatureDoesNotMatch" not in log, log[-3000:]
    puts = [line for line in log.splitlines() if '"PUT ' in line]
    # Data files and manifests are Spark's own writes (skade writes only the metadata files).
    assert sum("/wh/sales/orders/data/" in line for line in puts) >= 4, log[-3000:]
    assert sum("/wh/elsewhere/copy/data/" in line for line in puts) >= 1, log[-3000:]
    assert sum(".avro " in line for line in puts) >= 6, log[-3000:]
    print(f"proxy log: {log.count(chr(10))} requests", file=sys.stderr)
