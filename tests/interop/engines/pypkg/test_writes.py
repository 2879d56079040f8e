"""Writes (append, overwrite, upsert, delete), time travel, SQL and the catalog listings."""

from __future__ import annotations

import datetime as dt
import time

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import skade

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("qty", pa.int32())])


def rows(lake, table="db.t", **options):
    return sorted(lake.to_arrow(table, **options).to_pylist(), key=lambda r: r["id"])


def make(lake, **options):
    lake.create_table("db.t", SCHEMA, **options)
    return lake.append("db.t", pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"], "qty": [10, 20, 30]}, schema=SCHEMA))


def test_overwrite_all_and_where(lake):
    make(lake)
    result = lake.overwrite("db.t", pa.table({"id": [9], "name": ["z"], "qty": [90]}, schema=SCHEMA), where="id >= 2")
    assert result.committed
    assert rows(lake) == [{"id": 1, "name": "a", "qty": 10}, {"id": 9, "name": "z", "qty": 90}]
    lake.overwrite("db.t", pd.DataFrame({"id": [5], "name": ["e"], "qty": [50]}).astype({"qty": "int32"}))
    assert rows(lake) == [{"id": 5, "name": "e", "qty": 50}]


def test_upsert_on_identifier_fields_and_on_given_keys(lake):
    make(lake, identifier_fields=["id"])
    changes = pl.DataFrame({"id": [2, 4], "name": ["B", "d"], "qty": [21, 40]}, schema={"id": pl.Int64, "name": pl.String, "qty": pl.Int32})
    result = lake.upsert("db.t", changes)
    assert result.committed and result.commit_seq == 3
    assert rows(lake) == [
        {"id": 1, "name": "a", "qty": 10},
        {"id": 2, "name": "B", "qty": 21},
        {"id": 3, "name": "c", "qty": 30},
        {"id": 4, "name": "d", "qty": 40},
    ]
    lake.upsert("db.t", pa.table({"id": [7], "name": ["a"], "qty": [11]}, schema=SCHEMA), keys=["name"])
    assert [r for r in rows(lake) if r["name"] == "a"] == [{"id": 7, "name": "a", "qty": 11}]


def test_delete_commits_and_a_delete_of_nothing_commits_nothing(lake):
    make(lake)
    head = lake.last_commit_seq()
    deleted = lake.delete("db.t", "qty > 15 AND name <> 'c'")
    assert deleted.committed and deleted.commit_seq == head + 1
    assert [r["id"] for r in rows(lake)] == [1, 3]
    nothing = lake.delete("db.t", "id = 42")
    assert nothing == skade.CommitResult(None, None) and not nothing.committed
    assert lake.last_commit_seq() == head + 1


def test_time_travel_by_snapshot_and_time(lake):
    first = make(lake)
    time.sleep(0.02)
    between = dt.datetime.now(dt.timezone.utc)
    time.sleep(0.02)
    lake.append("db.t", pa.table({"id": [4], "name": ["d"], "qty": [40]}, schema=SCHEMA))
    assert len(rows(lake)) == 4
    assert [r["id"] for r in rows(lake, snapshot_id=first.snapshot_id)] == [1, 2, 3]
    assert [r["id"] for r in rows(lake, as_of=between)] == [1, 2, 3]
    assert [r["id"] for r in rows(lake, as_of=int(between.timestamp() * 1000))] == [1, 2, 3]
    with pytest.raises(skade.NotFound):
        lake.scan("db.t", snapshot_id=12345)
    with pytest.raises(skade.NotFound):
        lake.scan("db.t", as_of=dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc))
    with pytest.raises(skade.InvalidArgument):
        lake.scan("db.t", snapshot_id=first.snapshot_id, as_of=between)


def test_snapshots_list_each_commit(lake):
    first = make(lake)
    second = lake.delete("db.t", "id = 1")
    snaps = lake.snapshots("db.t")
    assert [s.snapshot_id for s in snaps] == [first.snapshot_id, second.snapshot_id]
    assert [s.operation for s in snaps] == ["append", "delete"]
    assert [s.current for s in snaps] == [False, True]
    assert snaps[1].parent_snapshot_id == first.snapshot_id
    assert snaps[0].summary["added-records"] == "3"
    assert snaps[0].timestamp.tzinfo is not None


def test_sql_queries_writes_and_time_travel(lake):
    first = make(lake)
    out = lake.sql("SELECT name, qty * 2 AS twice FROM db.t WHERE id <> 2 ORDER BY id")
    assert isinstance(out, pa.RecordBatchReader)
    assert out.read_all().to_pylist() == [{"name": "a", "twice": 20}, {"name": "c", "twice": 60}]
    assert lake.sql("INSERT INTO db.t VALUES (4, 'd', 40)").read_all().to_pylist() == [
        {"statement": "INSERT", "rows": 1}
    ]
    assert lake.sql("SELECT count(*) AS n FROM db.t").read_all().to_pylist() == [{"n": 4}]
    at = lake.sql(f"SELECT count(*) AS n FROM db.t AT (VERSION => {first.snapshot_id})").read_all()
    assert at.to_pylist() == [{"n": 3}]
    lake.sql("CREATE TABLE db.copy AS SELECT id, name FROM db.t WHERE qty >= 30")
    assert sorted(lake.to_arrow("db.copy").column("id").to_pylist()) == [3, 4]
    listed = lake.sql("SELECT table_name FROM information_schema.tables WHERE table_schema = 'db' ORDER BY 1")
    assert listed.read_all().column(0).to_pylist() == ["copy", "t"]


def test_namespaces_and_tables(lake):
    lake.create_namespace("a.b")
    lake.create_namespace("db", exist_ok=True)
    with pytest.raises(skade.AlreadyExists):
        lake.create_namespace("db")
    assert lake.list_namespaces() == ["a", "a.b", "db"]  # a parent is listed with its children
    assert lake.list_namespaces("a") == ["a.b"]
    lake.create_table("a.b.t", SCHEMA)
    lake.create_table("db.p", pa.schema([("id", pa.int64()), ("day", pa.date32())]), partition_by="day, bucket(4, id)")
    lake.create_table("db.p", SCHEMA, exist_ok=True)
    assert lake.list_tables() == ["a.b.t", "db.p"]
    assert lake.list_tables("a.b") == ["a.b.t"]
    assert lake.table_exists("db.p") and not lake.table_exists("db.nope")
    lake.append("db.p", pa.table({"id": [1, 2], "day": [dt.date(2024, 1, 1), dt.date(2024, 1, 2)]}))
    assert lake.to_arrow("db.p", where="day = DATE '2024-01-02'").column("id").to_pylist() == [2]
    lake.drop_table("db.p", purge=True)
    lake.drop_table("a.b.t")
    assert lake.list_tables() == []
    lake.drop_namespace("a.b")
    with pytest.raises(skade.NotFound):
        lake.drop_table("db.p")
