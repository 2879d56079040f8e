"""Trino writes through skade's REST catalog; every table reads the same through `skade scan` and
`skade sql` as through Trino (the oracle), row for row, after every step."""

import os

from helpers import TYPE_FILTERS, assert_same_rows


def gen(lo, hi, prefix="d"):
    """Rows id in [lo, hi) over three days (so day(ts) makes three partitions)."""
    return (
        f"SELECT id, from_unixtime(1704067200 + (id % 3) * 86400 + id * 7) AS ts, "
        f"'{prefix}' || CAST(id AS varchar) AS data, CAST(id * 1.25 AS decimal(10, 2)) AS amount "
        f"FROM UNNEST(sequence({lo}, {hi - 1})) AS r(id)")


def snapshot_summaries(trino, table):
    """(snapshot id, operation, summary) of each snapshot, oldest first, from Trino's view."""
    schema, name = table.split(".")
    r = trino.query(f'SELECT snapshot_id, operation, summary FROM {schema}."{name}$snapshots" '
                    f"ORDER BY committed_at")
    return [tuple(row) for row in r.rows]


def test_partitioned_table_with_row_level_changes(trino, skade, compare, ns):
    t = f"{ns}.events"
    trino.query(f"CREATE TABLE {t} (id bigint, ts timestamp(6) with time zone, data varchar, "
                f"amount decimal(10, 2)) "
                f"WITH (partitioning = ARRAY['day(ts)', 'bucket(id, 8)'])")
    trino.query(f"INSERT INTO {t} {gen(0, 150)}")
    trino.query(f"INSERT INTO {t} VALUES (1000, NULL, NULL, NULL), "
                f"(1001, TIMESTAMP '1969-12-31 23:59:59.999999 UTC', 'before epoch', -0.01)")
    assert len(compare.same(t)) == 152
    # The spec Trino made is the one skade reads.
    spec = skade.json("inspect", t, "--json")["metadata"]["partition-specs"][0]
    assert [(f["transform"], f["name"]) for f in spec["fields"]] == [
        ("day", "ts_day"), ("bucket[8]", "id_bucket")]
    # Filters on partition and data columns (skade prunes with them; Trino is the oracle).
    compare.same(t, where="id < 40")
    compare.same(t, where="data = 'd7'")
    compare.same(t, where="amount IS NULL")

    # Row-level changes: Trino writes position delete files (merge-on-read, format 2).
    trino.query(f"UPDATE {t} SET data = 'updated', amount = amount + 1 WHERE id % 10 = 3")
    compare.same(t)
    trino.query(f"DELETE FROM {t} WHERE id BETWEEN 20 AND 29 OR ts IS NULL")
    compare.same(t)
    trino.query(
        f"MERGE INTO {t} AS x USING ({gen(140, 160, 'm')}) AS s ON x.id = s.id "
        f"WHEN MATCHED AND s.id % 2 = 0 THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET data = s.data "
        f"WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.ts, s.data, s.amount)")
    rows = compare.same(t)
    assert len(rows) == 152 - 11 - 5 + 10  # DELETE: 20..29 and NULL ts; MERGE: -5 even, +150..159
    compare.same(t, where="data LIKE 'm%'")
    summaries = snapshot_summaries(trino, t)
    assert sum(int(s.get("added-position-deletes", 0)) for _, _, s in summaries) > 0
    # skade's own view of the files: the delete files are there and applied.
    assert skade.run("scan", t, "--count").stdout.strip() == str(len(rows))

    # Every snapshot reads the same by id in both (time travel over the delete files).
    for snapshot_id, _, _ in summaries:
        compare.same(t, version=snapshot_id)


def test_types(trino, compare, ns):
    t = f"{ns}.types"
    trino.query(
        f"CREATE TABLE {t} (b boolean, i integer, l bigint, r real, d double, "
        f"dec_small decimal(9, 3), dec_big decimal(38, 10), s varchar, bin varbinary, dt date, "
        f"tm time(6), ts timestamp(6), tstz timestamp(6) with time zone, u uuid, "
        f"arr array(bigint), m map(varchar, bigint), st row(a bigint, b varchar))")
    trino.query(
        f"INSERT INTO {t} VALUES "
        f"(true, -2147483648, 9223372036854775807, REAL '1.5', 2.25, 123456.789, "
        f"DECIMAL '-1234567890123456789012345678.0123456789', 'héllo ✓', X'00ff6162', "
        f"DATE '2024-02-29', TIME '23:59:59.999999', TIMESTAMP '2024-01-01 01:02:03.456789', "
        f"TIMESTAMP '1969-07-20 20:17:40.000001 UTC', UUID 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', "
        f"ARRAY[1, NULL, 3], MAP(ARRAY['k', 'l'], ARRAY[1, NULL]), ROW(5, 'x'))")
    trino.query(
        f"INSERT INTO {t} VALUES "
        f"(false, 0, -1, REAL 'NaN', -infinity(), -0.001, 0, '', X'', DATE '1970-01-01', "
        f"TIME '00:00:00', TIMESTAMP '1970-01-01 00:00:00', "
        f"TIMESTAMP '2024-06-30 23:59:59.999999 UTC', NULL, ARRAY[], MAP(), ROW(NULL, NULL))")
    trino.query(
        f"INSERT INTO {t} VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
        f"NULL, NULL, NULL, NULL, NULL, NULL, NULL)")
    assert len(compare.same(t)) == 3
    for where, skade_where in TYPE_FILTERS:
        assert compare.same(t, where=where, skade_where=skade_where, sql=False), where


def test_schema_and_partition_evolution(trino, compare, ns):
    t = f"{ns}.evolving"
    trino.query(f"CREATE TABLE {t} (id bigint, ts timestamp(6) with time zone, data varchar, "
                f"small integer) WITH (partitioning = ARRAY['day(ts)'])")
    trino.query(f"INSERT INTO {t} SELECT id, ts, data, CAST(id AS integer) FROM ({gen(0, 30)})")
    trino.query(f"ALTER TABLE {t} ADD COLUMN score double")
    trino.query(f"ALTER TABLE {t} RENAME COLUMN data TO label")
    trino.query(f"ALTER TABLE {t} ALTER COLUMN small SET DATA TYPE bigint")
    trino.query(f"INSERT INTO {t} SELECT id, ts, data, id * 10000000000, id / 4.0 "
                f"FROM ({gen(30, 60)})")
    trino.query(f"ALTER TABLE {t} SET PROPERTIES partitioning = ARRAY['month(ts)', 'bucket(id, 4)']")
    trino.query(f"INSERT INTO {t} SELECT id, ts, data, NULL, -1.0 FROM ({gen(60, 90)})")
    trino.query(f"ALTER TABLE {t} DROP COLUMN score")
    trino.query(f"DELETE FROM {t} WHERE id % 7 = 0")
    assert len(compare.same(t)) == 90 - 13
    compare.same(t, where="label = 'd41'")
    compare.same(t, where="small > 100")


def test_optimize(trino, compare, ns):
    t = f"{ns}.compacted"
    trino.query(f"CREATE TABLE {t} (id bigint, ts timestamp(6) with time zone, data varchar, "
                f"amount decimal(10, 2)) WITH (partitioning = ARRAY['bucket(id, 4)'])")
    for lo in range(0, 100, 20):
        trino.query(f"INSERT INTO {t} {gen(lo, lo + 20)}")
    trino.query(f"DELETE FROM {t} WHERE id % 9 = 0")
    before = compare.same(t)
    trino.query(f"ALTER TABLE {t} EXECUTE optimize")
    after = compare.same(t)
    assert_same_rows(after, before, "after optimize")
    files = trino.query(f'SELECT count(*) FROM {ns}."compacted$files"').rows[0][0]
    assert files <= 4


def test_ctas_and_partition_delete(trino, compare, ns):
    t = f"{ns}.ctas"
    trino.query(f"CREATE TABLE {t} WITH (partitioning = ARRAY['region']) AS "
                f"SELECT id, ts, data, CASE WHEN id % 2 = 0 THEN 'eu' ELSE 'us' END AS region "
                f"FROM ({gen(0, 40)})")
    compare.same(t)
    trino.query(f"INSERT INTO {t} SELECT id, ts, 'again', 'eu' FROM ({gen(100, 104)})")
    compare.same(t, where="region = 'eu'")
    # A whole partition: Trino drops its data files (no delete files).
    trino.query(f"DELETE FROM {t} WHERE region = 'us'")
    assert len(compare.same(t)) == 24
    trino.query(f"TRUNCATE TABLE {t}")
    assert compare.same(t) == []


def test_table_ddl(trino, skade, warehouse, ns):
    trino.query(f"CREATE TABLE {ns}.first (id bigint, data varchar)")
    trino.query(f"INSERT INTO {ns}.first VALUES (1, 'a'), (2, 'b')")
    trino.query(f"ALTER TABLE {ns}.first RENAME TO {ns}.second")
    trino.query(f"COMMENT ON TABLE {ns}.second IS 'renamed by Trino'")
    trino.query(f"COMMENT ON COLUMN {ns}.second.data IS 'a letter'")
    tables = skade.json("tables", "--json")
    assert {"namespace": [ns], "name": "second"} in tables
    assert {"namespace": [ns], "name": "first"} not in tables
    meta = skade.json("inspect", f"{ns}.second", "--json")["metadata"]
    assert meta["properties"].get("comment") == "renamed by Trino"
    schema = next(s for s in meta["schemas"] if s["schema-id"] == meta["current-schema-id"])
    assert next(f for f in schema["fields"] if f["name"] == "data").get("doc") == "a letter"
    assert sorted(r[0] for r in skade.scan(f"{ns}.second", ["id"])) == [1, 2]
    location = meta["location"]
    trino.query(f"DROP TABLE {ns}.second")
    assert {"namespace": [ns], "name": "second"} not in skade.json("tables", "--json")
    # Trino drops with purge: skade deletes the table's files.
    folder = location[len("file://"):] if location.startswith("file://") else location
    left = [os.path.join(d, f) for d, _, files in os.walk(folder) for f in files]
    assert left == [], left
    trino.query(f"DROP SCHEMA {ns}")
    assert ns not in skade.run("ns", "list").stdout.split()


def test_replace_table_and_maintenance(trino, skade, compare, ns):
    t = f"{ns}.maintained"
    trino.query(f"CREATE TABLE {t} (id bigint, data varchar) WITH (partitioning = ARRAY['bucket(id, 2)'])")
    for lo in (0, 10, 20):
        trino.query(f"INSERT INTO {t} SELECT x, 'v' || CAST(x AS varchar) FROM "
                    f"UNNEST(sequence({lo}, {lo + 9})) AS r(x)")
    old = snapshot_summaries(trino, t)[-1][0]
    uuid = skade.json("inspect", t, "--json")["metadata"]["table-uuid"]
    # CREATE OR REPLACE: a staged replace of the same table (new schema, spec and snapshot).
    trino.query(f"CREATE OR REPLACE TABLE {t} WITH (partitioning = ARRAY['day(ts)']) AS "
                f"SELECT id, ts, data AS label FROM ({gen(0, 12)})")
    meta = skade.json("inspect", t, "--json")["metadata"]
    assert meta["table-uuid"] == uuid
    assert len(compare.same(t)) == 12
    assert len(compare.same(t, version=old, sql=False)) == 30
    trino.query(f"INSERT INTO {t} SELECT id, ts, data FROM ({gen(12, 20)})")
    trino.query(f"DELETE FROM {t} WHERE id % 5 = 0")
    before = compare.same(t)
    # Expire every snapshot but the current one, then delete the files nothing refers to.
    trino.query(f"ALTER TABLE {t} EXECUTE expire_snapshots(retention_threshold => '0s')")
    meta = skade.json("inspect", t, "--json")["metadata"]
    assert [s["snapshot-id"] for s in meta["snapshots"]] == [meta["current-snapshot-id"]]
    trino.query(f"ALTER TABLE {t} EXECUTE remove_orphan_files(retention_threshold => '0s')")
    assert_same_rows(compare.same(t), before, "after expire_snapshots and remove_orphan_files")
    assert skade.log(t)[-1]["operation"] in ("update", "expire")
