"""Bad input raises a clear exception of the right class, and commits nothing."""

from __future__ import annotations

import decimal

import pandas as pd
import pyarrow as pa
import pytest

import skade

SCHEMA = pa.schema([("id", pa.int64()), ("price", pa.decimal128(6, 2)), ("n", pa.int32())])


@pytest.fixture
def table(lake):
    lake.create_table("db.t", SCHEMA, identifier_fields=["id"])
    lake.append("db.t", pa.table({"id": [1], "price": [decimal.Decimal("1.00")], "n": [1]}, schema=SCHEMA))
    return "db.t"


def unchanged(lake, table, head, snapshots):
    """Nothing was committed: the log's head and the table's snapshots are as before."""
    assert lake.last_commit_seq() == head
    assert [s.snapshot_id for s in lake.snapshots(table)] == snapshots


def state(lake, table):
    return lake.last_commit_seq(), [s.snapshot_id for s in lake.snapshots(table)]


def test_errors_form_a_hierarchy():
    assert issubclass(skade.NotFound, skade.SkadeError) and issubclass(skade.NotFound, LookupError)
    assert issubclass(skade.InvalidArgument, ValueError)
    assert issubclass(skade.PermissionDenied, PermissionError)
    assert skade.Conflict("x").code == 4


def test_unknown_table_and_namespace(lake):
    with pytest.raises(skade.NotFound, match="db.nope"):
        lake.scan("db.nope")
    with pytest.raises(skade.NotFound):
        lake.append("db.nope", pa.table({"id": [1]}))
    with pytest.raises(skade.NotFound):
        lake.drop_namespace("nope")
    with pytest.raises(skade.NotFound):
        lake.create_table("nope.t", SCHEMA)


def test_lossy_values_are_refused_and_nothing_is_committed(lake, table):
    head, snaps = state(lake, table)
    # 1.005 is not a DECIMAL(6,2); 2**40 is not an INTEGER; 1.5 is not a BIGINT.
    bad_price = pa.table({"id": [2], "price": pa.array([decimal.Decimal("1.005")], pa.decimal128(7, 3)), "n": [1]})
    with pytest.raises(skade.InvalidArgument, match="not exactly representable"):
        lake.append(table, bad_price)
    with pytest.raises(skade.InvalidArgument, match="not exactly representable"):
        lake.append(table, pa.table({"id": pa.array([2], pa.int64()), "price": [None], "n": pa.array([2**40], pa.int64())}))
    with pytest.raises(skade.InvalidArgument, match="not exactly representable"):
        lake.upsert(table, pd.DataFrame({"id": [1.5], "price": [None], "n": [1]}))
    with pytest.raises(skade.InvalidArgument, match="not exactly representable"):
        lake.overwrite(table, pa.table({"id": ["x"], "price": [None], "n": [1]}))
    unchanged(lake, table, head, snaps)
    assert lake.to_arrow(table).to_pylist() == [{"id": 1, "price": decimal.Decimal("1.00"), "n": 1}]


def test_wrong_python_types(lake, table):
    head, snaps = state(lake, table)
    with pytest.raises(TypeError, match="pyarrow Table"):
        lake.append(table, {"id": [1]})
    with pytest.raises(TypeError):
        lake.append(table, [1, 2, 3])
    with pytest.raises(TypeError):
        lake.scan(42)
    with pytest.raises(TypeError):
        lake.scan(table, as_of="yesterday")
    unchanged(lake, table, head, snaps)


def test_bad_columns_names_and_predicates(lake, table):
    head, snaps = state(lake, table)
    with pytest.raises(skade.InvalidArgument):
        lake.append(table, pa.table({"id": [2], "nope": [1]}))  # a column the table lacks
    with pytest.raises(skade.InvalidArgument):
        lake.scan(table, where="id = = 1")
    with pytest.raises(skade.InvalidArgument):
        lake.scan(table, where="id = 1) OR (1 = 1")
    with pytest.raises(skade.InvalidArgument):
        lake.delete(table, "id = 1; DROP TABLE db.t")
    with pytest.raises(skade.InvalidArgument):
        lake.delete(table, "")
    with pytest.raises(skade.InvalidArgument):
        lake.scan("db.a/b")
    with pytest.raises(skade.InvalidArgument):
        lake.scan("db.a\0b")
    with pytest.raises(skade.InvalidArgument):
        lake.create_namespace("bad\tname")
    with pytest.raises(skade.SkadeError):
        lake.scan(table, columns=["nope"]).read_all()
    unchanged(lake, table, head, snaps)


def test_bad_schemas_keys_and_duplicates(lake, table):
    with pytest.raises(skade.AlreadyExists):
        lake.create_table(table, SCHEMA)
    with pytest.raises(skade.InvalidArgument, match="identifier field 'nope'"):
        lake.create_table("db.u", SCHEMA, identifier_fields=["nope"])
    with pytest.raises(skade.InvalidArgument):
        lake.create_table("db.u", pa.schema([("x", pa.month_day_nano_interval())]))  # no Iceberg type
    with pytest.raises(skade.InvalidArgument):
        lake.create_table("db.u", SCHEMA, partition_by="month(id)")
    assert lake.list_tables() == [table]
    lake.create_table("db.nokey", SCHEMA)
    head, snaps = state(lake, table)
    with pytest.raises(skade.InvalidArgument):
        lake.upsert(table, pa.table({"id": [5, 5], "price": [None, None], "n": [1, 2]}, schema=SCHEMA))
    with pytest.raises(skade.InvalidArgument, match="key columns"):
        lake.upsert("db.nokey", pa.table({"id": [5], "price": [None], "n": [1]}, schema=SCHEMA))
    unchanged(lake, table, head, snaps)


def test_sql_runs_one_allowed_statement(lake, table):
    head, snaps = state(lake, table)
    with pytest.raises(skade.InvalidArgument):
        lake.sql("SELECT 1; SELECT 2")
    with pytest.raises(skade.InvalidArgument, match="ATTACH"):
        lake.sql("ATTACH 'x.db'")
    with pytest.raises(skade.InvalidArgument):
        lake.sql("SET memory_limit = '1GB'")
    with pytest.raises(skade.InvalidArgument):
        lake.sql("USE db")
    with pytest.raises(skade.InvalidArgument):
        lake.sql("SELECT * FROM db.t WHERE id = ?")
    with pytest.raises(skade.SkadeError):
        lake.sql("SELECT * FROM db.missing")
    unchanged(lake, table, head, snaps)


def test_closed_lake(warehouse):
    lake = skade.open(str(warehouse))
    lake.create_namespace("db")
    reader = lake.sql("SELECT * FROM range(5000) t(x)")
    lake.close()
    lake.close()  # idempotent
    assert reader.read_all().num_rows == 5000  # a reader outlives its lake
    with pytest.raises(skade.InvalidArgument, match="closed"):
        lake.list_tables()
