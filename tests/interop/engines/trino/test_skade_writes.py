"""skade writes (the CLI, as one commit each); Trino reads every table the same as `skade scan`
and `skade sql`, row for row, after every step. skade's locations are plain paths, which Trino
reads through its Hadoop file system."""

import itertools

import pytest

from helpers import TYPE_FILTERS
from trino_harness import TrinoError

_ids = itertools.count(1)


@pytest.fixture
def skade_ns(skade):
    """A fresh namespace per test, created by skade (no location property)."""
    name = f"s{next(_ids)}"
    skade.run("ns", "create", name)
    return name


def rows_sql(lo, hi, tag="d"):
    """DuckDB rows id in [lo, hi) over three days, for `skade ingest --sql`."""
    return (f"SELECT i::BIGINT AS id, "
            f"to_timestamp(1704067200 + (i % 3) * 86400 + i * 7 + 0.000001 * (i % 1000)) AS ts, "
            f"'{tag}' || i AS data, (i * 1.25)::DECIMAL(10, 2) AS amount FROM range({lo}, {hi}) r(i)")


def create_events(skade, table, *props):
    args = ["create", table, "--schema",
            "id BIGINT, ts TIMESTAMPTZ, data VARCHAR, amount DECIMAL(10,2)",
            "--partition-by", "day(ts), bucket(8, id)"]
    for p in props:
        args += ["--prop", p]
    skade.run(*args)


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_partitioned_table_with_deletes(trino, skade, compare, skade_ns, mode):
    t = f"{skade_ns}.events"
    create_events(skade, t, "format-version=2", f"write.delete.mode={mode}")
    skade.run("ingest", t, "--sql", rows_sql(0, 150))
    skade.run("ingest", t, "--sql",
              "SELECT 1000::BIGINT AS id, NULL::TIMESTAMPTZ AS ts, NULL AS data, "
              "NULL::DECIMAL(10,2) AS amount UNION ALL SELECT 1001, "
              "TIMESTAMPTZ '1969-12-31 23:59:59.999999+00', 'before epoch', -0.01")
    assert len(compare.same(t)) == 152
    compare.same(t, where="id < 40")
    skade.run("delete", t, "--where", "id % 10 = 3 OR ts IS NULL")
    assert len(compare.same(t)) == 152 - 16
    skade.run("delete", t, "--where", "data LIKE 'd4%'")
    compare.same(t)
    summary = skade.json("inspect", t, "--json")["metadata"]
    current = summary["current-snapshot-id"]
    snap = next(s for s in summary["snapshots"] if s["snapshot-id"] == current)
    if mode == "merge-on-read":
        assert int(snap["summary"].get("total-position-deletes", 0)) > 0, snap["summary"]
    else:
        assert int(snap["summary"].get("total-delete-files", 0)) == 0, snap["summary"]
    for s in summary["snapshots"]:
        compare.same(t, version=s["snapshot-id"])


def test_overwrites_and_keyed_writes(trino, skade, compare, skade_ns):
    t = f"{skade_ns}.keyed"
    create_events(skade, t, "format-version=2")
    skade.run("ingest", t, "--sql", rows_sql(0, 60))
    # Replace the rows of one predicate; then whole partitions (dynamic overwrite).
    skade.run("ingest", t, "--mode", "overwrite", "--where", "id < 10", "--sql",
              rows_sql(0, 5, "o"))
    compare.same(t)
    skade.run("ingest", t, "--mode", "overwrite-partitions", "--sql", rows_sql(300, 303, "p"))
    compare.same(t)
    # Upsert and delete by key: equality delete files, which Trino applies. The key holds the
    # partition source columns (skade's rule: an equality delete applies within its partition).
    skade.run("ingest", t, "--mode", "upsert", "--key", "id,ts", "--sql",
              rows_sql(50, 70, "u"))
    rows = compare.same(t)
    assert sum(1 for r in rows if r[2].startswith("u")) == 20
    skade.run("ingest", t, "--mode", "delete-keys", "--key", "id,ts", "--sql",
              f"SELECT id, ts FROM ({rows_sql(55, 65)})")
    compare.same(t)
    compare.same(t, where="id BETWEEN 50 AND 70")
    meta = skade.json("inspect", t, "--json")["metadata"]
    current = next(s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"])
    assert int(current["summary"].get("total-equality-deletes", 0)) > 0, current["summary"]


def test_types(trino, skade, compare, skade_ns):
    t = f"{skade_ns}.types"
    skade.run("create", t, "--schema",
              "b BOOLEAN, i INTEGER, l BIGINT, r FLOAT, d DOUBLE, dec_small DECIMAL(9,3), "
              "dec_big DECIMAL(38,10), s VARCHAR, bin BLOB, dt DATE, tm TIME, ts TIMESTAMP, "
              "tstz TIMESTAMPTZ, u UUID, arr BIGINT[], m MAP(VARCHAR, BIGINT), "
              "st STRUCT(a BIGINT, b VARCHAR)")
    # One commit (one file) per row: Trino prunes each file by the bounds skade wrote for it.
    rows = [
        "SELECT true AS b, -2147483648 AS i, 9223372036854775807::BIGINT AS l, "
        "1.5::FLOAT AS r, 2.25::DOUBLE AS d, 123456.789::DECIMAL(9,3) AS dec_small, "
        "'-1234567890123456789012345678.0123456789'::DECIMAL(38,10) AS dec_big, "
        "'héllo ✓' AS s, '\\x00\\xFFab'::BLOB AS bin, DATE '2024-02-29' AS dt, "
        "TIME '23:59:59.999999' AS tm, TIMESTAMP '2024-01-01 01:02:03.456789' AS ts, "
        "TIMESTAMPTZ '1969-07-20 20:17:40.000001+00' AS tstz, "
        "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID AS u, [1, NULL, 3] AS arr, "
        "MAP {'k': 1, 'l': NULL} AS m, {'a': 5, 'b': 'x'} AS st",
        "SELECT false AS b, 0 AS i, -1::BIGINT AS l, 'NaN'::FLOAT AS r, '-inf'::DOUBLE AS d, "
        "-0.001::DECIMAL(9,3) AS dec_small, 0::DECIMAL(38,10) AS dec_big, '' AS s, ''::BLOB AS bin, "
        "DATE '1970-01-01' AS dt, TIME '00:00:00' AS tm, TIMESTAMP '1970-01-01 00:00:00' AS ts, "
        "TIMESTAMPTZ '2024-06-30 23:59:59.999999+00' AS tstz, NULL::UUID AS u, []::BIGINT[] AS arr, "
        "MAP {}::MAP(VARCHAR, BIGINT) AS m, {'a': NULL, 'b': NULL}::STRUCT(a BIGINT, b VARCHAR) AS st",
        "SELECT NULL::BOOLEAN AS b, NULL::INTEGER AS i, NULL::BIGINT AS l, NULL::FLOAT AS r, "
        "NULL::DOUBLE AS d, NULL::DECIMAL(9,3) AS dec_small, NULL::DECIMAL(38,10) AS dec_big, "
        "NULL::VARCHAR AS s, NULL::BLOB AS bin, NULL::DATE AS dt, NULL::TIME AS tm, "
        "NULL::TIMESTAMP AS ts, NULL::TIMESTAMPTZ AS tstz, NULL::UUID AS u, NULL::BIGINT[] AS arr, "
        "NULL::MAP(VARCHAR, BIGINT) AS m, NULL::STRUCT(a BIGINT, b VARCHAR) AS st",
    ]
    for row in rows:
        skade.run("ingest", t, "--sql", row)
    assert len(compare.same(t)) == 3
    for where, skade_where in TYPE_FILTERS:
        assert compare.same(t, where=where, skade_where=skade_where, sql=False), where
    types = {row[0]: row[1] for row in trino.query(f"DESCRIBE {t}").rows}
    assert types["tstz"] == "timestamp(6) with time zone" and types["ts"] == "timestamp(6)", types
    assert types["st"] == "row(a bigint, b varchar)", types


def test_schema_and_partition_evolution(trino, skade, compare, skade_ns):
    t = f"{skade_ns}.evolving"
    create_events(skade, t)
    skade.run("ingest", t, "--sql", rows_sql(0, 30))
    skade.run("alter", t, "add-column", "score", "DOUBLE")
    skade.run("alter", t, "add-column", "small", "INTEGER")
    skade.run("alter", t, "rename-column", "data", "label")
    skade.run("ingest", t, "--sql",
              f"SELECT id, ts, data AS label, amount, id / 4.0 AS score, id::INTEGER AS small "
              f"FROM ({rows_sql(30, 60)})")
    skade.run("alter", t, "update-type", "small", "BIGINT")
    skade.run("partition", t, "month(ts), bucket(4, id)")
    skade.run("ingest", t, "--sql",
              f"SELECT id, ts, data AS label, amount, -1.0 AS score, id * 10000000000 AS small "
              f"FROM ({rows_sql(60, 90)})")
    skade.run("alter", t, "drop-column", "amount")
    assert len(compare.same(t)) == 90
    compare.same(t, where="label = 'd41'")
    compare.same(t, where="small > 100")
    skade.run("compact", t)
    assert len(compare.same(t)) == 90


def test_trino_writes_into_skade_table(trino, skade, compare, skade_ns):
    """A table skade made, then changed by both: Trino writes under skade's plain-path
    location (Hadoop's local file system), skade reads Trino's files and delete files."""
    t = f"{skade_ns}.shared"
    create_events(skade, t, "format-version=2")
    skade.run("ingest", t, "--sql", rows_sql(0, 40))
    trino.query(f"INSERT INTO {t} VALUES (500, TIMESTAMP '2024-01-02 03:04:05.000006 UTC', "
                f"'from trino', 9.99)")
    trino.query(f"UPDATE {t} SET data = 'trino update' WHERE id % 4 = 1")
    trino.query(f"DELETE FROM {t} WHERE id BETWEEN 30 AND 35")
    compare.same(t)
    skade.run("ingest", t, "--sql", rows_sql(40, 50))
    skade.run("delete", t, "--where", "id = 500")
    rows = compare.same(t)
    assert len(rows) == 50 - 6
    assert sum(1 for r in rows if r[2] == "trino update") == 9  # 1, 5, …, 37 but 33


def test_format_v3_table(trino, skade, compare, skade_ns):
    """Trino 476 reads and appends to a v3 table (its Iceberg library assigns row lineage), but
    reads no deletion vectors: it refuses the table then rather than return deleted rows."""
    t = f"{skade_ns}.v3"
    create_events(skade, t, "format-version=3")
    skade.run("ingest", t, "--sql", rows_sql(0, 30))
    compare.same(t)
    trino.query(f"INSERT INTO {t} VALUES (500, TIMESTAMP '2024-01-02 03:04:05.000006 UTC', "
                f"'from trino', 9.99), (501, NULL, NULL, NULL)")
    assert len(compare.same(t)) == 32
    meta = skade.json("inspect", t, "--json")["metadata"]
    assert meta["next-row-id"] == 32
    assert [s.get("first-row-id") for s in meta["snapshots"]] == [0, 30]
    skade.run("delete", t, "--where", "id % 2 = 0")
    assert len(skade.scan(t, ["id"])) == 16
    with pytest.raises(TrinoError) as e:
        trino.query(f"SELECT * FROM {t}")
    assert e.value.name == "ICEBERG_BAD_DATA" and "PUFFIN" in e.value.message
