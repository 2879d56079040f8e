"""PyIceberg's SqlCatalog opened directly on skade's catalog.db (the Iceberg JDBC catalog tables).

skade and PyIceberg share one SQLite catalog and one warehouse folder: each sees the other's
namespaces (nested ones too), tables and commits, and both read every table identically (the
oracle is a Python model of the rows written, and PyIceberg's own read).
"""

from __future__ import annotations

import sqlite3

import adbc_driver_flightsql.dbapi as flightsql
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import GreaterThanOrEqual

import rows
import skade_harness as sk
from test_pyiceberg_rest import ORDERS_SCHEMA, ORDERS_SPEC, order_row


def open_sql_catalog(warehouse) -> SqlCatalog:
    db = warehouse / "catalog.db"
    with sqlite3.connect(db) as c:
        names = {r[0] for r in c.execute(
            "SELECT catalog_name FROM iceberg_tables UNION SELECT catalog_name FROM iceberg_namespace_properties")}
    assert names == {"skade"}, names
    return SqlCatalog("skade", uri=f"sqlite:///{db}", warehouse=f"file://{warehouse}")


def test_sqlcatalog_and_skade_share_one_catalog(warehouse, tmp_path, serve):
    # skade makes the lake: a nested namespace and a partitioned table with rows.
    sk.run(warehouse, "ns", "create", "shared.inner")
    sk.run(warehouse, "create", "shared.inner.from_skade", "--schema",
           "id BIGINT NOT NULL, ts TIMESTAMPTZ, category VARCHAR, name VARCHAR, amount DECIMAL(10,2), qty INTEGER, "
           "score DOUBLE, day DATE, flag BOOLEAN", "--partition-by", "day(ts), bucket(8, id), category, truncate(3, name)")
    cat = open_sql_catalog(warehouse)
    assert ("shared",) in cat.list_namespaces()
    assert ("shared", "inner") in cat.list_namespaces(("shared",))
    assert cat.list_tables(("shared", "inner")) == [("shared", "inner", "from_skade")]
    theirs = cat.load_table(("shared", "inner", "from_skade"))
    schema = theirs.schema().as_arrow()
    path = tmp_path / "a.parquet"
    model = [order_row(i) for i in range(80)]
    pq.write_table(pa.Table.from_pylist(model, schema=schema), path)
    sk.run(warehouse, "ingest", "shared.inner.from_skade", str(path))

    def agree(ident: str, table, expected_rows: list[dict], what: str):
        table.refresh()
        got = table.scan().to_arrow()
        expected = rows.from_arrow(pa.Table.from_pylist(expected_rows, schema=got.schema))
        rows.assert_same(rows.from_arrow(got), expected, f"PyIceberg SqlCatalog {what}")
        rows.assert_same(rows.from_json(sk.scan(warehouse, ident), got.schema), expected, f"skade scan {what}")
        ns, name = ident.rsplit(".", 1)
        rows.assert_same(rows.from_json(sk.sql(warehouse, f'SELECT * FROM "{ns}".{name}'), got.schema), expected,
                         f"skade sql {what}")

    agree("shared.inner.from_skade", theirs, model, "after skade's ingest")

    # PyIceberg commits to skade's table; skade commits after it; both see both.
    more = [order_row(i) for i in range(80, 100)]
    theirs.append(pa.Table.from_pylist(more, schema=schema))
    model += more
    agree("shared.inner.from_skade", theirs, model, "after PyIceberg's append")
    sk.run(warehouse, "delete", "shared.inner.from_skade", "--where", "id < 10")
    model = [r for r in model if r["id"] >= 10]
    agree("shared.inner.from_skade", theirs, model, "after skade's delete")
    theirs.delete(GreaterThanOrEqual("id", 90))
    model = [r for r in model if r["id"] < 90]
    agree("shared.inner.from_skade", theirs, model, "after PyIceberg's delete")

    # PyIceberg makes a namespace and a table; skade lists, reads and writes them.
    cat.create_namespace(("shared", "py"))
    mine = cat.create_table(("shared", "py", "from_pyiceberg"), schema=ORDERS_SCHEMA, partition_spec=ORDERS_SPEC)
    pmodel = [order_row(i, 1) for i in range(50)]
    mine.append(pa.Table.from_pylist(pmodel, schema=mine.schema().as_arrow()))
    listed = sk.run(warehouse, "tables").stdout.split()
    assert "shared.py.from_pyiceberg" in listed and "shared.inner.from_skade" in listed, listed
    agree("shared.py.from_pyiceberg", mine, pmodel, "PyIceberg's own table")
    sk.run(warehouse, "sql", "INSERT INTO \"shared.py\".from_pyiceberg (id, category, name) VALUES (500, 'beta', 'x')")
    pmodel.append({"id": 500, "ts": None, "category": "beta", "name": "x", "amount": None, "qty": None, "score": None,
                   "day": None, "flag": None})
    agree("shared.py.from_pyiceberg", mine, pmodel, "after skade's INSERT into PyIceberg's table")

    # A running `skade serve` sees PyIceberg's commits made behind its back.
    server = serve(warehouse, rest=False)
    with flightsql.connect(f"grpc://127.0.0.1:{server.flight_port}", autocommit=True) as conn, conn.cursor() as cur:
        def count():
            cur.execute('SELECT count(*) FROM "shared.py".from_pyiceberg')
            return cur.fetchall()[0][0]

        assert count() == len(pmodel)
        mine.append(pa.Table.from_pylist([order_row(i, 2) for i in range(600, 610)], schema=mine.schema().as_arrow()))
        seen = sk.wait_until(lambda: count() == len(pmodel) + 10, timeout=10)
        assert seen, f"skade serve still answers {count()} rows 10 s after PyIceberg's commit"
