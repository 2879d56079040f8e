"""Fixtures of the Spark interop suite: one lake in a fresh temporary folder served by
`skade serve --rest-port` on loopback, and one local-mode SparkSession whose catalog `skade` is
that REST catalog (the JVM starts once per pytest session).

Environment (set by run_suite.sh): SKADE_BIN (the skade binary), SKADE_SPARK_JARS (folder of
the pinned Iceberg runtime jar), TZ=UTC.
"""

import glob
import os
import re
import shutil
import sys
import tempfile
import urllib.request

import pytest

from helpers import SkadeCli, assert_same_rows, canon_rows, kinds_of, sql_name
from skade_process import Server





@pytest.fixture(scope="session")
def workdir():
    d = tempfile.mkdtemp(prefix="skade-spark-")
    yield d
    if os.environ.get("SKADE_KEEP_TMP"):
        print(f"\nkept {d}", file=sys.stderr)
    else:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def warehouse(workdir):
    return os.path.join(workdir, "lake")


@pytest.fixture(scope="session")
def server(workdir, warehouse):
    binary = os.environ.get("SKADE_BIN")
    if not binary or not os.access(binary, os.X_OK):
        pytest.fail("SKADE_BIN must name the skade binary")
    s = Server(binary, warehouse, os.path.join(workdir, "serve.log"))
    yield s
    s.stop()


@pytest.fixture(scope="session")
def skade(server, warehouse):
    return SkadeCli(os.environ["SKADE_BIN"], warehouse)


@pytest.fixture(scope="session")
def spark(server, workdir):
    from pyspark.sql import SparkSession

    jar_dir = os.environ.get("SKADE_SPARK_JARS")
    jars = sorted(glob.glob(os.path.join(jar_dir or "/nonexistent", "*.jar")))
    if not jars:
        pytest.fail("SKADE_SPARK_JARS must name the folder of the Iceberg runtime jar")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    local = os.path.join(workdir, "spark")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("skade-interop")
        .config("spark.jars", ",".join(jars))
        .config("spark.sql.extensions",
                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.sql.catalog.skade", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.skade.type", "rest")
        .config("spark.sql.catalog.skade.uri", server.rest_uri)
        # skade commits between Spark statements: every statement loads the table afresh.
        .config("spark.sql.catalog.skade.cache-enabled", "false")
        # The same catalog with server-side scan planning: Spark's reads are planned by skade
        # (POST …/plan, …/tasks) instead of by reading manifests itself.
        .config("spark.sql.catalog.skade_plan", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.skade_plan.type", "rest")
        .config("spark.sql.catalog.skade_plan.uri", server.rest_uri)
        .config("spark.sql.catalog.skade_plan.cache-enabled", "false")
        .config("spark.sql.catalog.skade_plan.scan-planning-mode", "server")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .config("spark.local.dir", os.path.join(local, "tmp"))
        .config("spark.sql.warehouse.dir", os.path.join(local, "warehouse"))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


class Compare:
    """Compares a table as Spark reads it (the oracle) with skade's reads of it."""

    def __init__(self, spark, skade):
        self.spark = spark
        self.skade = skade

    def spark_rows(self, query):
        df = self.spark.sql(query)
        return df.columns, kinds_of(df.schema), canon_rows(df.collect(), kinds_of(df.schema))

    def same(self, table, columns=None, spark_suffix="", scan_args=(), where=None, sql=True):
        """Spark's rows of `table` equal `skade scan`'s and (sql=True) `skade sql`'s.

        spark_suffix: e.g. "VERSION AS OF 123"; scan_args: the same selection for skade scan.
        where: a predicate both engines understand, applied on both sides.
        """
        cols = columns or [f.name for f in self.spark.table(f"skade.{table}").schema.fields]
        select = ", ".join(f"`{c}`" for c in cols)
        query = f"SELECT {select} FROM skade.{table} {spark_suffix}"
        if where:
            query += f" WHERE {where}"
        _, kinds, expected = self.spark_rows(query)
        extra = list(scan_args) + (["--where", where] if where else [])
        got = canon_rows(self.skade.scan(table, cols, *extra), kinds)
        assert_same_rows(got, expected, f"skade scan {table} {' '.join(extra)} vs Spark")
        if sql and not scan_args:
            q = f"SELECT {', '.join(chr(34) + c + chr(34) for c in cols)} FROM {sql_name(table)}"
            if where:
                q += f" WHERE {where}"
            got = canon_rows(self.skade.sql(q, cols), kinds)
            assert_same_rows(got, expected, f"skade sql {q!r} vs Spark")
        return expected


@pytest.fixture(scope="session")
def compare(spark, skade):
    return Compare(spark, skade)


_counter = [0]


@pytest.fixture
def ns(spark, request):
    """A fresh namespace per test (nested: tN.<test name>), created through Spark."""
    _counter[0] += 1
    name = re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:60]
    top = f"t{_counter[0]}"
    spark.sql(f"CREATE NAMESPACE skade.{top}")
    spark.sql(f"CREATE NAMESPACE skade.{top}.{name}")
    return f"{top}.{name}"


def _server_errors(server):
    """Count of REST responses with a 5xx status so far (skade's /metrics)."""
    with urllib.request.urlopen(server.rest_uri + "/metrics", timeout=10) as r:
        text = r.read().decode()
    return sum(int(float(m.group(2))) for m in re.finditer(
        r'^skade_rest_requests_total\{[^}]*status="(5\d\d)"[^}]*\} (\S+)$', text, re.M))


@pytest.fixture(autouse=True)
def no_server_errors(server):
    """Every test: skade's REST catalog answered no request with a 5xx (a 4xx can be expected,
    e.g. Spark probing whether a table exists, or a commit conflict that Spark then retries)."""
    before = _server_errors(server)
    yield
    after = _server_errors(server)
    assert after == before, f"skade's REST catalog answered {after - before} request(s) with 5xx"
