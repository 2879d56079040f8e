"""Fixtures of the Trino interop suite: one lake in a fresh temporary folder served by
`skade serve --rest-port` on loopback, and one Trino server whose catalog `skade` is that REST
catalog (the JVM starts once per pytest session).

Environment (set by run_suite.sh): SKADE_BIN (the skade binary), SKADE_TRINO_HOME (the unpacked
server), SKADE_TRINO_JAVA (a Java 25 `java`), SKADE_TRINO_AOT (where the AOT class cache lives),
TZ=UTC.
"""

import os
import re
import shutil
import sys
import tempfile
import urllib.request

import pytest

from helpers import SkadeCli, assert_same_rows, canon_rows
from skade_process import Server
from trino_harness import Trino





@pytest.fixture(scope="session")
def workdir():
    d = tempfile.mkdtemp(prefix="skade-trino-")
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
def trino(server, workdir):
    home, java = os.environ.get("SKADE_TRINO_HOME"), os.environ.get("SKADE_TRINO_JAVA")
    if not home or not os.path.isdir(os.path.join(home, "lib")):
        pytest.fail("SKADE_TRINO_HOME must name the unpacked Trino server")
    if not java or not os.access(java, os.X_OK):
        pytest.fail("SKADE_TRINO_JAVA must name a Java 25 `java`")
    folder = os.path.join(workdir, "trino")
    os.makedirs(folder)
    t = Trino(home, java, folder, server.rest_uri, os.environ.get("SKADE_TRINO_AOT"))
    print(f"\nTrino started in {t.start_seconds:.1f} s, {(t.rss_kib() or 0) // 1024} MiB resident",
          file=sys.stderr)
    yield t
    rss = t.rss_kib()
    t.stop()
    if rss:
        print(f"\nTrino at the end: {rss // 1024} MiB resident", file=sys.stderr)


class Compare:
    """A table as Trino reads it (the oracle) against `skade scan` and `skade sql` on it."""

    def __init__(self, trino, skade):
        self.trino = trino
        self.skade = skade

    def trino_rows(self, query):
        r = self.trino.query(query)
        return r.columns, r.types, canon_rows(r.rows, r.types, "trino")

    def same(self, table, where=None, version=None, scan_args=(), sql=True, skade_where=None):
        """Trino's rows of `table` equal `skade scan`'s and (sql=True) `skade sql`'s.

        where: a predicate applied on both sides (skade_where: skade's form of it, where the two
        dialects differ). Both engines prune files with it, by the column bounds of the other's
        manifests. version: a snapshot id, read by Trino FOR VERSION AS OF and by skade scan
        --snapshot.
        """
        query = f"SELECT * FROM {table}"
        if version is not None:
            query += f" FOR VERSION AS OF {version}"
            scan_args = list(scan_args) + ["--snapshot", str(version)]
        if where:
            query += f" WHERE {where}"
        cols, types, expected = self.trino_rows(query)
        where = skade_where or where
        extra = list(scan_args) + (["--where", where] if where else [])
        got = canon_rows(self.skade.scan(table, cols, *extra), types, "skade")
        assert_same_rows(got, expected, f"skade scan {table} {' '.join(extra)} vs Trino")
        if sql and version is None:
            q = f"SELECT {', '.join(chr(34) + c + chr(34) for c in cols)} FROM {table}"
            if where:
                q += f" WHERE {where}"
            got = canon_rows(self.skade.sql(q, cols), types, "skade")
            assert_same_rows(got, expected, f"skade sql {q!r} vs Trino")
        return expected


@pytest.fixture(scope="session")
def compare(trino, skade):
    return Compare(trino, skade)


_counter = [0]


@pytest.fixture
def ns(trino, warehouse, request):
    """A fresh schema per test, created through Trino. It has a file:// location (the tables
    Trino creates in it go below), because Trino 476 cannot create a table in a REST namespace
    without one: it then creates the table outright and refuses the location its own create
    just filled (trinodb/trino#26742)."""
    _counter[0] += 1
    name = f"t{_counter[0]}_" + re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:50]
    trino.query(f"CREATE SCHEMA {name} WITH (location = 'file://{warehouse}/{name}')")
    return name


def _server_errors(server):
    """Count of REST responses with a 5xx status so far (skade's /metrics)."""
    with urllib.request.urlopen(server.rest_uri + "/metrics", timeout=10) as r:
        text = r.read().decode()
    return sum(int(float(m.group(2))) for m in re.finditer(
        r'^skade_rest_requests_total\{[^}]*status="(5\d\d)"[^}]*\} (\S+)$', text, re.M))


@pytest.fixture(autouse=True)
def no_server_errors(server):
    """Every test: skade's REST catalog answered no request with a 5xx (a 4xx can be expected,
    e.g. Trino probing whether a table exists)."""
    before = _server_errors(server)
    yield
    after = _server_errors(server)
    assert after == before, f"skade's REST catalog answered {after - before} request(s) with 5xx"
