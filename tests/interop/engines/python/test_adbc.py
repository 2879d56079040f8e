"""The ADBC Flight SQL driver (the Go driver Power BI embeds) with pyarrow against `skade serve`.

Oracles: the rows the test wrote (a Python model, ingested from a Parquet file pyarrow wrote),
filtered in Python, and PyArrow's own types; never skade's answer to another question.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import threading
import time
from decimal import Decimal

import adbc_driver_flightsql
import adbc_driver_flightsql.dbapi as flightsql
import adbc_driver_manager
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rows
import skade_harness as sk

UTC = dt.timezone.utc
ORDERS_ARROW = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("ts", pa.timestamp("us", tz="UTC")),
    pa.field("category", pa.string()),
    pa.field("amount", pa.decimal128(10, 2)),
    pa.field("day", pa.date32()),
    pa.field("ok", pa.bool_()),
    pa.field("score", pa.float64()),
])


def order(i: int) -> dict:
    return {
        "id": i,
        "ts": None if i % 10 == 3 else dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(hours=5 * i, microseconds=i),
        "category": [None, "a", "b", "c"][i % 4],
        "amount": Decimal(i * 1234 % 100000 - 20000) / 100,
        "day": dt.date(2024, 2, 29) + dt.timedelta(days=i),
        "ok": None if i % 7 == 0 else i % 2 == 0,
        "score": i / 3,
    }


MODEL = [order(i) for i in range(100)]


def model_rows(keep=lambda r: True, columns=None):
    table = pa.Table.from_pylist([r for r in MODEL if keep(r)], schema=ORDERS_ARROW)
    return rows.from_arrow(table, columns)


@pytest.fixture
def lake(warehouse, tmp_path):
    """sales.orders (the model, partitioned), sales.eu.orders (nested namespace), sales.eu.empty."""
    sk.run(warehouse, "ns", "create", "sales.eu")
    sk.run(warehouse, "create", "sales.orders", "--schema",
           "id BIGINT NOT NULL, ts TIMESTAMPTZ, category VARCHAR, amount DECIMAL(10,2), day DATE, ok BOOLEAN, "
           "score DOUBLE", "--partition-by", "category, bucket(4, id)")
    path = tmp_path / "orders.parquet"
    pq.write_table(pa.Table.from_pylist(MODEL, schema=ORDERS_ARROW), path)
    sk.run(warehouse, "ingest", "sales.orders", str(path))
    sk.run(warehouse, "create", "sales.eu.orders", "--schema", "id BIGINT NOT NULL, note VARCHAR")
    sk.run(warehouse, "sql", "INSERT INTO \"sales.eu\".orders VALUES (1, 'eins'), (2, NULL)")
    sk.run(warehouse, "create", "sales.eu.empty", "--schema", "k INTEGER, v VARCHAR")
    return warehouse


def connect(port: int, scheme: str = "grpc", **db_kwargs):
    return flightsql.connect(f"{scheme}://127.0.0.1:{port}", db_kwargs=db_kwargs or None, autocommit=True)


@pytest.fixture
def conn(serve, lake):
    server = serve(lake, rest=False)
    with connect(server.flight_port) as c:
        yield c


def objects(conn, **kw) -> list[dict]:
    return conn.adbc_get_objects(**kw).read_all().to_pylist()


def test_get_objects_every_depth(conn):
    cats = objects(conn, depth="catalogs")
    assert [c["catalog_name"] for c in cats] == ["skade"]
    assert not cats[0]["catalog_db_schemas"]

    schemas = objects(conn, depth="db_schemas")
    names = {s["db_schema_name"] for s in schemas[0]["catalog_db_schemas"]}
    assert {"sales", "sales.eu"} <= names, names
    assert all(not s["db_schema_tables"] for s in schemas[0]["catalog_db_schemas"])
    only_nested = objects(conn, depth="db_schemas", db_schema_filter="sales.eu")
    assert [s["db_schema_name"] for s in only_nested[0]["catalog_db_schemas"]] == ["sales.eu"]

    tables = objects(conn, depth="tables")
    by_schema = {s["db_schema_name"]: {t["table_name"]: t for t in s["db_schema_tables"] or []}
                 for s in tables[0]["catalog_db_schemas"]}
    assert set(by_schema["sales"]) == {"orders"}
    assert set(by_schema["sales.eu"]) == {"orders", "empty"}
    assert all(t["table_columns"] in (None, []) for t in by_schema["sales.eu"].values())
    assert {t["table_type"] for s in by_schema.values() for t in s.values()} <= {"TABLE", "BASE TABLE"}

    cols = objects(conn, depth="all", db_schema_filter="sales.eu", table_name_filter="ord%")
    (schema,) = cols[0]["catalog_db_schemas"]
    (table,) = schema["db_schema_tables"]
    assert table["table_name"] == "orders"
    assert [(c["column_name"], c["ordinal_position"]) for c in table["table_columns"]] == [("id", 1), ("note", 2)]
    assert [c["xdbc_type_name"] for c in table["table_columns"]] == ["BIGINT", "VARCHAR"]
    assert {c["xdbc_scope_schema"] for c in table["table_columns"]} == {"sales.eu"}
    # (xdbc_nullable stays null: the Go driver does not fill it for Flight SQL; the nullability
    # is in adbc_get_table_schema, checked below.)

    one = objects(conn, depth="columns", db_schema_filter="sales", table_name_filter="orders",
                  column_name_filter="am%")
    (schema,) = one[0]["catalog_db_schemas"]
    assert [c["column_name"] for c in schema["db_schema_tables"][0]["table_columns"]] == ["amount"]


def test_table_schema_and_types(conn):
    assert conn.adbc_get_table_schema("orders", catalog_filter="skade", db_schema_filter="sales").equals(
        ORDERS_ARROW, check_metadata=False)
    nested = conn.adbc_get_table_schema("orders", db_schema_filter="sales.eu")
    assert nested.names == ["id", "note"] and nested.types == [pa.int64(), pa.string()]
    assert not nested.field("id").nullable
    assert "TABLE" in conn.adbc_get_table_types() or "BASE TABLE" in conn.adbc_get_table_types()
    info = conn.adbc_get_info()
    assert info.get("vendor_name") or info.get("driver_name")


def test_queries_and_bound_parameters(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM skade.sales.orders")
        got = cur.fetch_arrow_table()
        assert got.schema.equals(ORDERS_ARROW, check_metadata=False) or got.schema.types == ORDERS_ARROW.types
        rows.assert_same(rows.from_arrow(got), model_rows(), "SELECT *")

        cur.execute('SELECT id, note FROM "sales.eu".orders ORDER BY id')
        assert cur.fetchall() == [(1, "eins"), (2, None)]

        # One prepared statement, bound again and again (what BI tools do).
        query = "SELECT id, amount, day FROM sales.orders WHERE id BETWEEN ? AND ? AND category = ?"
        for lo, hi, category in [(0, 50, "a"), (10, 99, "b"), (0, 99, "nope")]:
            cur.execute(query, (lo, hi, category))
            got = cur.fetch_arrow_table()
            expected = model_rows(lambda r: lo <= r["id"] <= hi and r["category"] == category, ["id", "amount", "day"])
            rows.assert_same(rows.from_arrow(got), expected, f"bound {lo, hi, category}")

        # Parameters of other types: decimal, date, timestamptz, boolean, NULL.
        cur.execute("SELECT id FROM sales.orders WHERE amount > ? AND day < ? AND ts >= ? AND ok = ?",
                    (Decimal("10.00"), dt.date(2024, 4, 1), dt.datetime(2024, 1, 2, tzinfo=UTC), True))
        expected = {r["id"] for r in MODEL if r["amount"] > Decimal(10) and r["day"] < dt.date(2024, 4, 1)
                    and r["ts"] is not None and r["ts"] >= dt.datetime(2024, 1, 2, tzinfo=UTC) and r["ok"] is True}
        assert {r[0] for r in cur.fetchall()} == expected and expected
        cur.execute("SELECT count(*) FROM sales.orders WHERE category = ?::VARCHAR", ("x'; DROP TABLE t; --",))
        assert cur.fetchall() == [(0,)]

        cur.execute("SELECT category, count(*) AS n, sum(amount) AS total FROM sales.orders GROUP BY category")
        got = {r[0]: (r[1], r[2]) for r in cur.fetchall()}
        for category in ["a", "b", "c", None]:
            members = [r for r in MODEL if r["category"] == category]
            assert got[category] == (len(members), sum(r["amount"] for r in members)), category


def test_ingest_into_new_and_existing_tables(conn, lake):
    data = pa.table({"k": pa.array([1, 2, 3], pa.int32()), "v": ["x", None, "z"]})
    with conn.cursor() as cur:
        assert cur.adbc_ingest("fresh", data, mode="create", db_schema_name="sales.eu") == 3
        more = pa.table({"k": pa.array([4], pa.int32()), "v": ["w"]})
        assert cur.adbc_ingest("fresh", more, mode="append", db_schema_name="sales.eu") == 1
        with pytest.raises(adbc_driver_manager.Error):
            cur.adbc_ingest("fresh", data, mode="create", db_schema_name="sales.eu")
        # Into a table skade created (no rows yet), then read it back both ways.
        assert cur.adbc_ingest("empty", data, mode="append", db_schema_name="sales.eu") == 3
        for table in ["fresh", "empty"]:
            cur.execute(f'SELECT k, v FROM "sales.eu".{table}')
            got = cur.fetch_arrow_table()
            expected = [(1, "x"), (2, None), (3, "z")] + ([(4, "w")] if table == "fresh" else [])
            assert sorted(got.to_pylist(), key=lambda r: r["k"]) == [{"k": k, "v": v} for k, v in expected]
            assert sorted((r["k"], r["v"]) for r in sk.scan(lake, f"sales.eu.{table}")) == expected
        # Ingest of the model's types into the partitioned table appends exactly those rows.
        extra = [order(i) for i in range(100, 120)]
        assert cur.adbc_ingest("orders", pa.Table.from_pylist(extra, schema=ORDERS_ARROW), mode="append",
                               db_schema_name="sales") == 20
        cur.execute("SELECT * FROM sales.orders")
        expected = rows.from_arrow(pa.Table.from_pylist(MODEL + extra, schema=ORDERS_ARROW))
        rows.assert_same(rows.from_arrow(cur.fetch_arrow_table()), expected, "after ingest")
        rows.assert_same(rows.from_json(sk.scan(lake, "sales.orders"), ORDERS_ARROW), expected, "skade scan after ingest")


def test_execute_update_rowcounts(conn, lake):
    """ADBC's execute-update path (CommandStatementUpdate, and prepared updates with bound rows)."""
    t = '"sales.eu".empty'
    with conn.cursor() as cur:
        stmt = cur.adbc_statement

        def update(sql: str) -> int:
            stmt.set_sql_query(sql)
            return stmt.execute_update()

        assert update(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, NULL)") == 3
        assert update(f"UPDATE {t} SET v = 'u' WHERE k >= 2") == 2
        assert update(f"DELETE FROM {t} WHERE k = 1") == 1
        assert update(f"DELETE FROM {t} WHERE k = 99") == 0
        cur.executemany(f"INSERT INTO {t} VALUES (?, ?)", [(7, "bound"), (8, None)])
        assert cur.rowcount == 2
        cur.execute(f"SELECT k, v FROM {t} ORDER BY k")
        assert cur.fetchall() == [(2, "u"), (3, "u"), (7, "bound"), (8, None)]
    assert sorted((r["k"], r["v"] or "") for r in sk.scan(lake, "sales.eu.empty")) == [
        (2, "u"), (3, "u"), (7, "bound"), (8, "")]


def test_dbapi_execute_of_dml(conn):
    t = '"sales.eu".empty'
    with conn.cursor() as cur:
        cur.execute(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
        assert cur.rowcount == 2
        cur.execute(f"UPDATE {t} SET v = ? WHERE k = ?", ("z", 2))
        assert cur.rowcount == 1
        cur.execute(f"SELECT k, v FROM {t} ORDER BY k")
        assert cur.fetchall() == [(1, "a"), (2, "z")]


def test_parameter_typed_result_columns(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT ? AS v, ? IS NULL AS n", (5, None))
        assert cur.fetchall() == [(5, True)]


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.single_server("watches the CPU time of the one server running the query")
def test_cancel_long_query(serve, lake):
    server = serve(lake, rest=False)
    with connect(server.flight_port) as c, c.cursor() as cur:
        outcome = {}

        def run():
            started = time.monotonic()
            try:
                cur.execute("SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE (a.range * b.range) % 7 = 3")
                outcome["rows"] = cur.fetchall()
            except Exception as e:  # noqa: BLE001 - the cancellation error is what we want
                outcome["error"] = e
            outcome["seconds"] = time.monotonic() - started

        worker = threading.Thread(target=run)
        worker.start()
        time.sleep(1.5)
        assert worker.is_alive(), outcome
        cur.adbc_cancel()
        worker.join(15)
        assert not worker.is_alive(), "execute() did not return within 15 s of adbc_cancel()"
        assert "error" in outcome, outcome
        assert isinstance(outcome["error"], adbc_driver_manager.Error), repr(outcome["error"])
        assert "cancel" in str(outcome["error"]).lower(), repr(outcome["error"])
        # The server stops working on it (no CPU burnt after the cancel) and keeps serving.
        time.sleep(1.0)
        before = _cpu_seconds(server.proc.pid)
        time.sleep(2.0)
        burnt = _cpu_seconds(server.proc.pid) - before
        assert burnt < 0.5, f"skade kept computing the cancelled query ({burnt:.2f} s CPU in 2 s)"
    with connect(server.flight_port) as c, c.cursor() as cur:
        cur.execute("SELECT count(*) FROM sales.orders")
        assert cur.fetchall() == [(len(MODEL),)]


def _self_signed(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True)
    return cert, key


def _users_file(tmp_path):
    path = tmp_path / "users"
    path.write_text("alice:s3cret\nbob:hunter2\n")
    return path


def test_basic_auth(serve, lake, tmp_path):
    server = serve(lake, "--auth", "basic", "--users-file", str(_users_file(tmp_path)), rest=False)
    user, password = adbc_driver_manager.DatabaseOptions.USERNAME.value, adbc_driver_manager.DatabaseOptions.PASSWORD.value
    with connect(server.flight_port, **{user: "alice", password: "s3cret"}) as c, c.cursor() as cur:
        cur.execute("SELECT current_user, count(*) FROM sales.orders")
        assert cur.fetchall() == [("alice", len(MODEL))]
    with connect(server.flight_port, **{user: "bob", password: "hunter2"}) as c, c.cursor() as cur:
        cur.execute("SELECT current_user")
        assert cur.fetchall() == [("bob",)]
    for creds in [{user: "alice", password: "wrong"}, {user: "mallory", password: "s3cret"}, {}]:
        with pytest.raises(adbc_driver_manager.Error) as e:
            with connect(server.flight_port, **creds) as c, c.cursor() as cur:
                cur.execute("SELECT 1")
                cur.fetchall()
        assert "nauthenticated" in str(e.value) or "UNAUTHENTICATED" in str(e.value), str(e.value)


@pytest.mark.single_server("TLS ends at skade, and the balancer here speaks h2c to the servers")
def test_tls_with_basic_auth(serve, lake, tmp_path):
    cert, key = _self_signed(tmp_path)
    server = serve(lake, "--auth", "basic", "--users-file", str(_users_file(tmp_path)), "--tls-cert", str(cert),
                   "--tls-key", str(key), rest=False)
    user, password = adbc_driver_manager.DatabaseOptions.USERNAME.value, adbc_driver_manager.DatabaseOptions.PASSWORD.value
    root = adbc_driver_flightsql.DatabaseOptions.TLS_ROOT_CERTS.value
    skip = adbc_driver_flightsql.DatabaseOptions.TLS_SKIP_VERIFY.value
    with connect(server.flight_port, "grpc+tls", **{root: cert.read_text(), user: "alice", password: "s3cret"}) as c:
        with c.cursor() as cur:
            cur.execute("SELECT current_user, sum(amount) FROM sales.orders WHERE category = ?", ("b",))
            assert cur.fetchall() == [("alice", sum(r["amount"] for r in MODEL if r["category"] == "b"))]
        assert "sales.eu" in {s["db_schema_name"] for s in objects(c, depth="db_schemas")[0]["catalog_db_schemas"]}
    with connect(server.flight_port, "grpc+tls", **{skip: "true", user: "bob", password: "hunter2"}) as c:
        with c.cursor() as cur:
            cur.execute("SELECT current_user")
            assert cur.fetchall() == [("bob",)]
    # Without trusting the certificate, or in plain text, nothing gets through.
    for scheme, opts in [("grpc+tls", {}), ("grpc", {})]:
        with pytest.raises(adbc_driver_manager.Error):
            with connect(server.flight_port, scheme, **opts, **{user: "alice", password: "s3cret"}) as c:
                with c.cursor() as cur:
                    cur.execute("SELECT 1")
                    cur.fetchall()
