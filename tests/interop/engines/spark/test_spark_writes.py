"""Spark writes through skade's REST catalog; every table reads the same through `skade scan`
and `skade sql` as through Spark (the oracle), row for row."""

import datetime as dt
import os
import time

import pytest

from helpers import assert_same_rows


def gen(lo, hi, prefix="d"):
    """Rows id in [lo, hi) over three days (so days(ts) makes three partitions)."""
    return (
        f"SELECT id, timestamp_seconds(1704067200 + (id % 3) * 86400 + id * 7) AS ts, "
        f"concat('{prefix}', CAST(id AS STRING)) AS data, CAST(id * 1.25 AS DECIMAL(10,2)) AS amount "
        f"FROM range({lo}, {hi})"
    )


def snapshots(spark, table):
    return spark.sql(
        f"SELECT snapshot_id, parent_id, operation, committed_at, summary "
        f"FROM skade.{table}.snapshots ORDER BY committed_at").collect()


def test_nested_namespaces(spark, skade):
    spark.sql("CREATE NAMESPACE skade.nsroot")
    spark.sql("CREATE NAMESPACE skade.nsroot.mid")
    spark.sql("CREATE NAMESPACE skade.nsroot.mid.leaf")
    spark.sql("ALTER NAMESPACE skade.nsroot.mid SET PROPERTIES ('team' = 'spark')")
    children = {r[0] for r in spark.sql("SHOW NAMESPACES IN skade.nsroot").collect()}
    assert children == {"nsroot.mid"}
    props = {r[0]: r[1] for r in spark.sql("DESCRIBE NAMESPACE EXTENDED skade.nsroot.mid").collect()}
    assert "(team,spark)" in props["Properties"], props
    assert skade.json("ns", "props", "nsroot.mid", "--json").get("team") == "spark"
    listed = skade.run("ns", "list").stdout.split()
    for level in ("nsroot", "nsroot.mid", "nsroot.mid.leaf"):
        assert level in listed, listed
    spark.sql("CREATE TABLE skade.nsroot.mid.leaf.t (id bigint) USING iceberg")
    spark.sql("INSERT INTO skade.nsroot.mid.leaf.t VALUES (1), (2)")
    tables = skade.json("tables", "--json")
    assert {"namespace": ["nsroot", "mid", "leaf"], "name": "t"} in tables, tables
    assert sorted(skade.scan("nsroot.mid.leaf.t", ["id"])) == [(1,), (2,)]
    spark.sql("DROP TABLE skade.nsroot.mid.leaf.t PURGE")
    spark.sql("DROP NAMESPACE skade.nsroot.mid.leaf")
    children = {r[0] for r in spark.sql("SHOW NAMESPACES IN skade.nsroot.mid").collect()}
    assert children == set()


def test_partitioned_insert(spark, skade, compare, ns):
    t = f"{ns}.events"
    spark.sql(
        f"CREATE TABLE skade.{t} (id bigint, ts timestamp, data string, amount decimal(10,2)) "
        f"USING iceberg PARTITIONED BY (days(ts), bucket(16, id))")
    spark.sql(f"INSERT INTO skade.{t} {gen(0, 150)}")
    spark.sql(f"INSERT INTO skade.{t} VALUES (1000, NULL, NULL, NULL), "
              f"(1001, TIMESTAMP '1969-12-31 23:59:59.999999', 'before epoch', -0.01)")
    rows = compare.same(t)
    assert len(rows) == 152
    # Filters on partition and data columns (skade prunes with them; Spark is the oracle).
    compare.same(t, where="id < 40")
    compare.same(t, where="data = 'd7'")
    compare.same(t, where="amount IS NULL")
    # The spec Spark made is the one skade reads.
    spec = skade.json("inspect", t, "--json")["metadata"]["partition-specs"][0]
    assert [(f["transform"], f["name"]) for f in spec["fields"]] == [
        ("day", "ts_day"), ("bucket[16]", "id_bucket")]


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_row_level_operations(spark, compare, ns, fmt, mode):
    t = f"{ns}.rl"
    spark.sql(
        f"CREATE TABLE skade.{t} (id bigint, ts timestamp, data string, amount decimal(10,2)) "
        f"USING iceberg PARTITIONED BY (days(ts), bucket(16, id)) TBLPROPERTIES ("
        f"'format-version'='{fmt}', 'write.delete.mode'='{mode}', 'write.update.mode'='{mode}', "
        f"'write.merge.mode'='{mode}')")
    spark.sql(f"INSERT INTO skade.{t} {gen(0, 120)}")
    compare.same(t)
    spark.sql(
        f"MERGE INTO skade.{t} t USING ({gen(100, 140, 'm')}) s ON t.id = s.id "
        f"WHEN MATCHED AND s.id % 2 = 0 THEN UPDATE SET data = s.data, amount = s.amount + 1 "
        f"WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *")
    rows = compare.same(t)
    assert len(rows) == 120 - 10 + 20
    spark.sql(f"UPDATE skade.{t} SET amount = amount * 2, data = concat(data, '!') WHERE id % 5 = 0")
    compare.same(t)
    spark.sql(f"DELETE FROM skade.{t} WHERE id % 7 = 3")
    rows = compare.same(t)
    compare.same(t, where="id BETWEEN 90 AND 130")
    kinds = {(r.content, r.file_format) for r in
             spark.sql(f"SELECT content, file_format FROM skade.{t}.delete_files").collect()}
    if mode == "copy-on-write":
        assert kinds == set()
    elif fmt == 2:
        assert kinds == {(1, "PARQUET")}  # position delete files
    else:
        assert kinds == {(1, "PUFFIN")}  # deletion vectors
    # Spark's own result, independently of skade: what the statements above leave.
    ids = sorted(r[0] for r in rows)
    want = [i for i in range(140) if not (100 <= i < 120 and i % 2 == 1) and i % 7 != 3]
    assert ids == want


def test_schema_evolution(spark, compare, ns):
    t = f"{ns}.evolve"
    spark.sql(f"CREATE TABLE skade.{t} (id bigint, n int, data string) USING iceberg "
              f"TBLPROPERTIES ('format-version'='2')")
    spark.sql(f"INSERT INTO skade.{t} VALUES (1, 10, 'a'), (2, NULL, 'b'), (3, -2147483648, 'c')")
    spark.sql(f"ALTER TABLE skade.{t} ADD COLUMN extra double")
    spark.sql(f"ALTER TABLE skade.{t} ADD COLUMN st struct<x: int, y: string>")
    spark.sql(f"INSERT INTO skade.{t} VALUES (4, 40, 'd', 4.5, named_struct('x', 1, 'y', 'one'))")
    compare.same(t, columns=["id", "n", "data", "extra"])
    spark.sql(f"ALTER TABLE skade.{t} RENAME COLUMN data TO label")
    spark.sql(f"INSERT INTO skade.{t} VALUES (5, 50, 'e', NULL, NULL)")
    compare.same(t, columns=["id", "n", "label", "extra"])
    spark.sql(f"ALTER TABLE skade.{t} ALTER COLUMN n TYPE bigint")
    spark.sql(f"INSERT INTO skade.{t} VALUES (6, 5000000000, 'f', 6.5, named_struct('x', 2, 'y', NULL))")
    compare.same(t, columns=["id", "n", "label", "extra"])
    spark.sql(f"ALTER TABLE skade.{t} DROP COLUMN extra")
    spark.sql(f"INSERT INTO skade.{t} VALUES (7, 70, 'g', NULL)")
    compare.same(t, columns=["id", "n", "label"])
    # A new column with a dropped column's name is a new field: old rows read NULL.
    spark.sql(f"ALTER TABLE skade.{t} ADD COLUMN extra string")
    spark.sql(f"INSERT INTO skade.{t} VALUES (8, 80, 'h', NULL, 'new')")
    rows = compare.same(t, columns=["id", "n", "label", "extra"])
    assert sorted(rows) == [
        (1, 10, "a", None), (2, None, "b", None), (3, -2147483648, "c", None), (4, 40, "d", None),
        (5, 50, "e", None), (6, 5000000000, "f", None), (7, 70, "g", None), (8, 80, "h", "new")]
    # The struct column, field by field.
    got = sorted(compare.skade.sql(
        f'SELECT id, st.x AS x, st.y AS y FROM "{ns}".evolve', ["id", "x", "y"]))
    want = sorted(tuple(r) for r in spark.sql(
        f"SELECT id, st.x AS x, st.y AS y FROM skade.{t}").collect())
    assert got == want


def test_partition_evolution(spark, compare, ns):
    t = f"{ns}.pevolve"
    spark.sql(f"CREATE TABLE skade.{t} (id bigint, ts timestamp, cat string) USING iceberg "
              f"PARTITIONED BY (days(ts))")
    base = "SELECT id, timestamp_seconds(1704067200 + id * 3000) AS ts, concat('c', CAST(id % 4 AS STRING)) AS cat FROM range"
    spark.sql(f"INSERT INTO skade.{t} {base}(0, 40)")
    spark.sql(f"ALTER TABLE skade.{t} ADD PARTITION FIELD bucket(4, id)")
    spark.sql(f"INSERT INTO skade.{t} {base}(40, 80)")
    spark.sql(f"ALTER TABLE skade.{t} DROP PARTITION FIELD days(ts)")
    spark.sql(f"ALTER TABLE skade.{t} ADD PARTITION FIELD cat")
    spark.sql(f"INSERT INTO skade.{t} {base}(80, 120)")
    spark.sql(f"ALTER TABLE skade.{t} REPLACE PARTITION FIELD cat WITH truncate(1, cat)")
    spark.sql(f"INSERT INTO skade.{t} {base}(120, 160)")
    specs = {r[0] for r in spark.sql(f"SELECT spec_id FROM skade.{t}.files").collect()}
    assert len(specs) == 4, specs
    compare.same(t)
    compare.same(t, where="id < 50")
    compare.same(t, where="cat = 'c1'")
    compare.same(t, where="id >= 100 AND cat <> 'c0'")
    spark.sql(f"DELETE FROM skade.{t} WHERE id % 3 = 0")
    compare.same(t)


def test_time_travel(spark, skade, compare, ns):
    t = f"{ns}.tt"
    spark.sql(f"CREATE TABLE skade.{t} (id bigint, data string) USING iceberg "
              f"TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
    spark.sql(f"INSERT INTO skade.{t} SELECT id, concat('a', CAST(id AS STRING)) FROM range(0, 10)")
    time.sleep(0.05)
    spark.sql(f"INSERT INTO skade.{t} SELECT id, concat('b', CAST(id AS STRING)) FROM range(10, 20)")
    time.sleep(0.05)
    spark.sql(f"DELETE FROM skade.{t} WHERE id % 2 = 0")
    time.sleep(0.05)
    spark.sql(f"UPDATE skade.{t} SET data = 'u' WHERE id = 11")
    snaps = snapshots(spark, t)
    assert [s.operation for s in snaps] == ["append", "append", "delete", "overwrite"]
    for s in snaps:
        compare.same(t, spark_suffix=f"VERSION AS OF {s.snapshot_id}",
                     scan_args=["--snapshot", str(s.snapshot_id)])
    # TIMESTAMP AS OF: exactly at a commit, and between two commits.
    for i in (1, 2):
        at = snaps[i].committed_at
        mid = at + (snaps[i + 1].committed_at - at) / 2
        for when in (at, mid):
            when = when.replace(microsecond=when.microsecond // 1000 * 1000)
            spark_ts = when.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
            rows = compare.same(t, spark_suffix=f"TIMESTAMP AS OF '{spark_ts}'",
                                scan_args=["--as-of", spark_ts.replace(" ", "T") + "Z"])
            assert len(rows) == (20 if i == 1 else 10)


def test_branches_and_tags(spark, skade, compare, ns):
    t = f"{ns}.refs"
    spark.sql(f"CREATE TABLE skade.{t} (id bigint, data string) USING iceberg "
              f"TBLPROPERTIES ('format-version'='2')")
    spark.sql(f"INSERT INTO skade.{t} SELECT id, 'main' FROM range(0, 5)")
    spark.sql(f"ALTER TABLE skade.{t} CREATE TAG v1")
    spark.sql(f"ALTER TABLE skade.{t} CREATE BRANCH audit")
    spark.sql(f"INSERT INTO skade.{t}.branch_audit SELECT id, 'audit' FROM range(100, 105)")
    spark.sql(f"DELETE FROM skade.{t}.branch_audit WHERE id = 1")
    spark.sql(f"INSERT INTO skade.{t} SELECT id, 'main2' FROM range(5, 8)")
    main = compare.same(t)
    assert len(main) == 8
    audit = compare.same(t, spark_suffix="VERSION AS OF 'audit'", scan_args=["--ref", "audit"])
    assert len(audit) == 9
    v1 = compare.same(t, spark_suffix="VERSION AS OF 'v1'", scan_args=["--ref", "v1"])
    assert len(v1) == 5
    refs = {r.name: (r.type, r.snapshot_id) for r in
            spark.sql(f"SELECT name, type, snapshot_id FROM skade.{t}.refs").collect()}
    meta = skade.json("inspect", t, "--json")["metadata"]
    assert {k: (v["type"].upper(), v["snapshot-id"]) for k, v in meta["refs"].items()} == refs
    spark.sql(f"ALTER TABLE skade.{t} DROP TAG v1")
    assert set(skade.json("inspect", t, "--json")["metadata"]["refs"]) == {"main", "audit"}


def test_procedures(spark, skade, compare, ns, warehouse):
    t = f"{ns}.maint"
    spark.sql(f"CREATE TABLE skade.{t} (id bigint, data string) USING iceberg "
              f"PARTITIONED BY (bucket(4, id)) TBLPROPERTIES ('format-version'='2', "
              f"'write.delete.mode'='merge-on-read')")
    for i in range(4):
        spark.sql(f"INSERT INTO skade.{t} SELECT id, 'x' FROM range({i * 25}, {(i + 1) * 25})")
    spark.sql(f"DELETE FROM skade.{t} WHERE id % 10 = 0")
    before = compare.same(t)
    files_before = spark.sql(f"SELECT count(*) FROM skade.{t}.files").collect()[0][0]

    r = spark.sql(f"CALL skade.system.rewrite_data_files(table => '{t}', "
                  f"options => map('min-input-files', '2', 'delete-file-threshold', '1'))").collect()[0]
    assert r.rewritten_data_files_count > 0 and r.added_data_files_count > 0
    after = compare.same(t)
    assert_same_rows(after, before, "rows after rewrite_data_files")
    assert spark.sql(f"SELECT count(*) FROM skade.{t}.files").collect()[0][0] < files_before
    assert snapshots(spark, t)[-1].operation == "replace"

    current = snapshots(spark, t)[-1].snapshot_id
    spark.sql(f"CALL skade.system.expire_snapshots(table => '{t}', "
              f"older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)").collect()
    assert [s.snapshot_id for s in snapshots(spark, t)] == [current]
    assert [s["snapshot_id"] for s in skade.json("snapshots", t, "--json")] == [current]
    assert_same_rows(compare.same(t), before, "rows after expire_snapshots")

    # An orphan (never committed) in the table's data folder, older than the cut-off.
    meta = skade.json("inspect", t, "--json")
    location = meta["metadata"]["location"].removeprefix("file://").removeprefix("file:")
    orphan = os.path.join(location, "data", "orphan-never-committed.parquet")
    with open(orphan, "wb") as f:
        f.write(b"PAR1 not really")
    old = time.time() - 10 * 86400
    os.utime(orphan, (old, old))
    cutoff = (dt.datetime.utcnow() - dt.timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S")
    res = spark.sql(f"CALL skade.system.remove_orphan_files(table => '{t}', "
                    f"older_than => TIMESTAMP '{cutoff}')").collect()
    removed = [row[0] for row in res]
    assert len(removed) == 1 and removed[0].endswith("orphan-never-committed.parquet"), removed
    assert not os.path.exists(orphan)
    assert_same_rows(compare.same(t), before, "rows after remove_orphan_files")


def test_metadata_tables(spark, skade, ns):
    t = f"{ns}.meta"
    spark.sql(f"CREATE TABLE skade.{t} (id bigint, ts timestamp) USING iceberg "
              f"PARTITIONED BY (days(ts)) TBLPROPERTIES ('format-version'='2', "
              f"'write.delete.mode'='merge-on-read')")
    spark.sql(f"INSERT INTO skade.{t} SELECT id, timestamp_seconds(1704067200 + id * 40000) FROM range(20)")
    spark.sql(f"INSERT INTO skade.{t} SELECT id, timestamp_seconds(1704067200 + id * 40000) FROM range(20, 30)")
    spark.sql(f"DELETE FROM skade.{t} WHERE id = 3")
    # .snapshots ↔ skade snapshots
    sp = snapshots(spark, t)
    sk = skade.json("snapshots", t, "--json")
    assert [(s.snapshot_id, s.parent_id, s.operation) for s in sp] == [
        (s["snapshot_id"], s.get("parent_snapshot_id"), s["operation"]) for s in sk]
    for a, b in zip(sp, sk):
        assert round(a.committed_at.replace(tzinfo=dt.timezone.utc).timestamp() * 1000) == b["timestamp_ms"]
        # Spark's summary map leaves out "operation" (a column of its own).
        assert dict(a.summary) == {k: str(v) for k, v in b["summary"].items() if k != "operation"}
    # .manifests and .files ↔ skade inspect (the current snapshot's manifests and live files)
    meta = skade.json("inspect", t, "--json")
    manifests = meta["manifests"]
    spark_manifests = spark.sql(
        f"SELECT path, content, added_snapshot_id, added_data_files_count + added_delete_files_count, "
        f"existing_data_files_count + existing_delete_files_count FROM skade.{t}.manifests").collect()
    assert sorted((r[0], r[1], r[2], r[3], r[4]) for r in spark_manifests) == sorted(
        (m["path"], 0 if m["content"] == "data" else 1, m["added_snapshot_id"],
         m.get("added_files_count"), m.get("existing_files_count")) for m in manifests)
    spark_files = spark.sql(
        f"SELECT file_path, content, record_count, file_size_in_bytes FROM skade.{t}.files").collect()
    content = {"data": 0, "position_deletes": 1, "equality_deletes": 2}
    skade_files = [(f["file_path"], content[f["content"]], f["record_count"], f["file_size_in_bytes"])
                   for m in manifests for f in m["files"] if f["status"] != "deleted"]
    assert sorted(tuple(r) for r in spark_files) == sorted(skade_files)
