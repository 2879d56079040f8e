"""Round trips through skade: pyarrow, pandas and Polars in, the same values out."""

from __future__ import annotations

import datetime as dt
import decimal

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import skade

UTC = dt.timezone.utc

# Every kind of column, with a null in each nullable one.
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("flag", pa.bool_()),
        ("small", pa.int32()),
        ("ratio", pa.float32()),
        ("score", pa.float64()),
        ("price", pa.decimal128(12, 2)),
        ("big", pa.decimal128(38, 10)),
        ("name", pa.string()),
        ("blob", pa.binary()),
        ("day", pa.date32()),
        ("clock", pa.time64("us")),
        ("local", pa.timestamp("us")),
        ("instant", pa.timestamp("us", tz="UTC")),
        ("tags", pa.list_(pa.string())),
        ("point", pa.struct([("x", pa.float64()), ("y", pa.float64())])),
        ("attrs", pa.map_(pa.string(), pa.int64())),
        ("nested", pa.list_(pa.struct([("k", pa.string()), ("v", pa.list_(pa.int32()))]))),
    ]
)

ROWS = [
    {
        "id": 1,
        "flag": True,
        "small": -2147483648,
        "ratio": 1.5,
        "score": 3.141592653589793,
        "price": decimal.Decimal("1234567890.12"),
        "big": decimal.Decimal("1234567890123456789012345678.0123456789"),
        "name": "ærøskøbing ✓",
        "blob": b"\x00\xffbytes",
        "day": dt.date(1970, 1, 1),
        "clock": dt.time(23, 59, 59, 999999),
        "local": dt.datetime(2024, 2, 29, 12, 30, 0, 123456),
        "instant": dt.datetime(2024, 3, 31, 1, 0, 0, 1, tzinfo=UTC),
        "tags": ["a", None, "c"],
        "point": {"x": 1.0, "y": -2.5},
        "attrs": [("one", 1), ("two", None)],
        "nested": [{"k": "a", "v": [1, 2]}, {"k": "b", "v": []}],
    },
    {
        "id": 2,
        "flag": None,
        "small": None,
        "ratio": None,
        "score": None,
        "price": None,
        "big": None,
        "name": None,
        "blob": None,
        "day": None,
        "clock": None,
        "local": None,
        "instant": None,
        "tags": None,
        "point": None,
        "attrs": None,
        "nested": None,
    },
    {
        "id": 3,
        "flag": False,
        "small": 2147483647,
        "ratio": -0.0,
        "score": 1e308,
        "price": decimal.Decimal("-0.01"),
        "big": decimal.Decimal("-0.0000000001"),
        "name": "",
        "blob": b"",
        "day": dt.date(2262, 4, 11),
        "clock": dt.time(0, 0),
        "local": dt.datetime(1900, 1, 1),
        "instant": dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        "tags": [],
        "point": {"x": None, "y": 0.0},
        "attrs": [],
        "nested": [],
    },
]


def sorted_rows(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def test_pyarrow_every_type_round_trips(lake):
    data = pa.Table.from_pylist(ROWS, schema=SCHEMA)
    lake.create_table("db.all", SCHEMA)
    result = lake.append("db.all", data)
    assert result.committed and result.snapshot_id and result.commit_seq == 2
    back = lake.to_arrow("db.all")
    # Same columns in the same order with the same types (list items are named as Iceberg
    # names them, so compare the types' values, not their field names).
    assert back.schema.names == SCHEMA.names
    # A non-nullable field became a required column.
    described = {r["column_name"]: r["null"] for r in lake.sql("DESCRIBE db.all").read_all().to_pylist()}
    assert described["id"] == "NO" and described["name"] == "YES"
    for name in SCHEMA.names:
        assert back.schema.field(name).type.equals(SCHEMA.field(name).type, check_metadata=False) or str(
            back.schema.field(name).type
        ).replace("<l:", "<item:").replace("<element:", "<item:") == str(SCHEMA.field(name).type), name
    assert sorted_rows(back) == sorted_rows(data)


def test_timestamps_with_zones_keep_the_instant(lake):
    oslo = pa.timestamp("us", tz="Europe/Oslo")
    schema = pa.schema([("id", pa.int64()), ("at", oslo)])
    instants = [dt.datetime(2024, 3, 31, 0, 59, 59, tzinfo=UTC), dt.datetime(2024, 10, 27, 1, 30, tzinfo=UTC)]
    lake.create_table("db.zones", schema)
    lake.append("db.zones", pa.table({"id": [1, 2], "at": pa.array(instants, oslo)}))
    back = lake.to_arrow("db.zones").sort_by("id")
    # Iceberg's timestamptz holds instants: they come back in UTC, the same instants.
    assert back.schema.field("at").type == pa.timestamp("us", tz="UTC")
    assert back.column("at").to_pylist() == instants


def test_scan_columns_where_and_limit(lake):
    data = pa.Table.from_pylist(ROWS, schema=SCHEMA)
    lake.create_table("db.all", SCHEMA)
    lake.append("db.all", data)
    reader = lake.scan("db.all", columns=["name", "id"], where="id >= 2 AND name IS NOT NULL")
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.read_all().to_pylist() == [{"name": "", "id": 3}]
    assert lake.to_arrow("db.all", limit=1).num_rows == 1


def test_to_arrow_collects_what_scan_streams(lake):
    # to_arrow reads whole (skade_read_all: converted in the engine's worker threads, batches of
    # up to 1M rows); scan streams. Same schema, same rows, with every type and 3 data files.
    data = pa.Table.from_pylist(ROWS, schema=SCHEMA)
    lake.create_table("db.all", SCHEMA)
    for _ in range(3):
        lake.append("db.all", data)
    streamed = lake.scan("db.all").read_all()
    whole = lake.to_arrow("db.all")
    assert whole.schema == streamed.schema
    assert sorted_rows(whole) == sorted_rows(streamed)
    assert whole.num_rows == 3 * data.num_rows
    # Options as scan's, and the same refusals.
    assert lake.to_arrow("db.all", columns=["id"], where="id >= 2").column_names == ["id"]
    assert lake.to_arrow("db.all", columns=["id"], where="id >= 2").num_rows == lake.scan(
        "db.all", columns=["id"], where="id >= 2").read_all().num_rows
    with pytest.raises(skade.InvalidArgument):
        lake.to_arrow("db.all", where="id <")
    # Many rows in several batches and files, read by both engine threads: each row once (in no
    # particular order, which to_arrow does not promise).
    big = pa.table({"id": pa.array(range(2_500_000), pa.int64()), "name": pa.array(["n"] * 2_500_000)})
    lake.create_table("db.big", big.schema)
    for part in range(3):
        lake.append("db.big", big.slice(part * 1_000_000, 1_000_000))
    whole_big = lake.to_arrow("db.big", columns=["id"])
    assert whole_big.num_rows == 2_500_000
    assert sorted(whole_big.column("id").to_pylist()) == list(range(2_500_000))


def test_pandas_round_trip(lake):
    frame = pd.DataFrame(
        {
            "id": [3, 1, 2],
            "name": ["c", "a", None],
            "amount": [decimal.Decimal("1.10"), decimal.Decimal("-2.00"), None],
            "at": pd.to_datetime(["2024-01-01 10:00:00", "2024-06-01 12:00:00.5", None], format="ISO8601").tz_localize("UTC"),
            "score": [0.5, float("nan"), 2.0],
        },
        index=[10, 11, 12],  # not data: not written
    )
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("name", pa.string()),
            ("amount", pa.decimal128(10, 2)),
            ("at", pa.timestamp("us", tz="UTC")),
            ("score", pa.float64()),
        ]
    )
    lake.create_table("db.pd", schema)
    lake.append("db.pd", frame)
    back = lake.to_pandas("db.pd").sort_values("id").reset_index(drop=True)
    assert list(back.columns) == ["id", "name", "amount", "at", "score"]
    assert back["id"].tolist() == [1, 2, 3]
    assert back["name"].tolist()[0] == "a" and back["name"].tolist()[2] == "c" and pd.isna(back["name"][1])
    assert back["amount"].tolist()[:2] == [decimal.Decimal("-2.00"), None]
    assert back["amount"][2] == decimal.Decimal("1.10")
    assert back["at"][0] == pd.Timestamp("2024-06-01 12:00:00.5", tz="UTC")
    assert pd.isna(back["at"][1])
    assert back["at"][2] == pd.Timestamp("2024-01-01 10:00", tz="UTC")
    # pandas writes NaN as a float value, not as a null.
    assert pd.isna(back["score"][0]) and back["score"][1] == 2.0 and back["score"][2] == 0.5


def test_polars_round_trip(lake):
    frame = pl.DataFrame(
        {
            "id": [1, 2, 3],
            "name": ["a", None, "ç"],
            "tags": [["x"], [], None],
            "amount": pl.Series([decimal.Decimal("1.25"), None, decimal.Decimal("-3.50")], dtype=pl.Decimal(12, 2)),
            "at": pl.Series(
                [dt.datetime(2024, 1, 1, 1, 2, 3, 456789), None, dt.datetime(1999, 12, 31)], dtype=pl.Datetime("us")
            ).dt.replace_time_zone("UTC"),
            "point": [{"x": 1, "y": 2}, {"x": None, "y": 3}, None],
        }
    )
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("name", pa.string()),
            ("tags", pa.list_(pa.string())),
            ("amount", pa.decimal128(12, 2)),
            ("at", pa.timestamp("us", tz="UTC")),
            ("point", pa.struct([("x", pa.int64()), ("y", pa.int64())])),
        ]
    )
    lake.create_table("db.pl", schema)
    result = lake.append("db.pl", frame)  # Polars' own Arrow export (string views, large lists)
    assert result.committed
    back = lake.to_polars("db.pl").sort("id")
    assert isinstance(back, pl.DataFrame)
    assert back.to_dicts() == frame.to_dicts()
    # A lazy frame is collected first.
    lake.append("db.pl", frame.lazy().filter(pl.col("id") == 1))
    assert lake.to_polars("db.pl", where="id = 1").height == 2


def test_record_batch_reader_in_and_out_streams(lake):
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    lake.create_table("db.big", schema)
    batches = (
        pa.record_batch([pa.array(range(i * 10_000, (i + 1) * 10_000)), pa.array([str(i)] * 10_000)], schema=schema)
        for i in range(20)
    )
    lake.append("db.big", pa.RecordBatchReader.from_batches(schema, batches))
    reader = lake.scan("db.big")
    total = 0
    count = 0
    for batch in reader:
        count += 1
        total += pa.compute.sum(batch.column("id")).as_py()
    assert count > 1  # streamed, not one batch
    assert total == sum(range(200_000))
