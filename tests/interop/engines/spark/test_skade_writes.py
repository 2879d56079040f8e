"""skade writes (ingest of files and queries, overwrite, equality-delete upserts, deletes as
position deletes or deletion vectors, SQL statements, schema and partition evolution,
compaction); Spark reads every state through the REST catalog. Oracles: the rows the test put
in (a model kept here, independent of both engines) and skade's own read."""

import datetime as dt
import decimal
import json
import os

import pytest

from helpers import assert_same_rows, canon_rows, kinds_of, sql_name

BASE_S = 1704067200  # 2024-01-01T00:00:00Z


def ts_micros(i):
    return (BASE_S + (i % 3) * 86400 + i * 7) * 1_000_000


def iso(micros):
    return dt.datetime.fromtimestamp(micros / 1e6, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")


def row(i, tag="a"):
    """One row of the model: (id, n, ts as epoch micros, data, amount)."""
    return [i, i * 3, ts_micros(i), f"{tag}{i}", decimal.Decimal(i * 125) / 100]


def gen_sql(lo, hi, tag):
    """The same rows as `row` for ids in [lo, hi), as a DuckDB query."""
    return (f"SELECT range AS id, CAST(range * 3 AS INTEGER) AS n, "
            f"to_timestamp({BASE_S} + (range % 3) * 86400 + range * 7) AS ts, "
            f"'{tag}' || range AS data, CAST(range * 1.25 AS DECIMAL(10,2)) AS amount "
            f"FROM range({lo}, {hi})")


class Checker:
    def __init__(self, spark, skade, table):
        self.spark, self.skade, self.table = spark, skade, table

    def check(self, model, columns, what):
        """Spark's read == the model == skade's read (scan and sql)."""
        df = self.spark.sql(
            f"SELECT {', '.join('`' + c + '`' for c in columns)} FROM skade.{self.table}")
        kinds = kinds_of(df.schema)
        spark_rows = canon_rows(df.collect(), kinds)
        expected = [tuple(r) for r in model.values()]
        assert_same_rows(spark_rows, expected, f"Spark read after {what} vs the rows written")
        assert_same_rows(canon_rows(self.skade.scan(self.table, columns), kinds), expected,
                         f"skade scan after {what}")
        q = f"SELECT {', '.join(chr(34) + c + chr(34) for c in columns)} FROM {sql_name(self.table)}"
        assert_same_rows(canon_rows(self.skade.sql(q, columns), kinds), expected,
                         f"skade sql after {what}")


@pytest.mark.parametrize("fmt", [2, 3])
def test_skade_writes_read_in_spark(spark, skade, ns, workdir, fmt):
    t = f"{ns}.sk"
    cols = ["id", "n", "ts", "data", "amount"]
    skade.run("create", t, "--schema",
              "id BIGINT NOT NULL, n INTEGER, ts TIMESTAMPTZ, data VARCHAR, amount DECIMAL(10,2)",
              "--partition-by", "day(ts), bucket(16, id)", "--prop", f"format-version={fmt}",
              "--prop", "write.delete.mode=merge-on-read")
    c = Checker(spark, skade, t)
    model = {}

    # Append from an NDJSON file and from a CSV file.
    nd = os.path.join(workdir, f"rows-{fmt}.ndjson")
    with open(nd, "w") as f:
        for i in range(0, 60):
            r = row(i)
            f.write(json.dumps({"id": r[0], "n": r[1], "ts": iso(r[2]), "data": r[3],
                                "amount": str(r[4])}) + "\n")
            model[i] = r
    skade.run("ingest", t, nd)
    csv = os.path.join(workdir, f"rows-{fmt}.csv")
    with open(csv, "w") as f:
        f.write("id,n,ts,data,amount\n")
        for i in range(60, 100):
            r = row(i)
            f.write(f"{r[0]},{r[1]},{iso(r[2])},{r[3]},{r[4]}\n")
            model[i] = r
    skade.run("ingest", t, csv)
    c.check(model, cols, "ingest of NDJSON and CSV")

    # Append from a query; overwrite of the rows matching a filter.
    skade.run("ingest", t, "--sql", gen_sql(100, 130, "q"))
    model.update({i: row(i, "q") for i in range(100, 130)})
    skade.run("ingest", t, "--sql", gen_sql(120, 125, "o"), "--mode", "overwrite",
              "--where", "id >= 115 AND id < 130")
    for i in range(115, 130):
        model.pop(i)
    model.update({i: row(i, "o") for i in range(120, 125)})
    c.check(model, cols, "ingest --sql and overwrite --where")

    # Upsert: equality deletes on the key plus the new rows (keys span partitions: id and ts).
    skade.run("ingest", t, "--sql", gen_sql(50, 70, "u"), "--mode", "upsert", "--key", "id,ts")
    model.update({i: row(i, "u") for i in range(50, 70)})
    skade.run("ingest", t, "--sql", gen_sql(200, 205, "u"), "--mode", "upsert", "--key", "id,ts")
    model.update({i: row(i, "u") for i in range(200, 205)})
    c.check(model, cols, "upserts")
    eq = spark.sql(f"SELECT count(*) FROM skade.{t}.delete_files WHERE content = 2").collect()[0][0]
    assert eq > 0, "upsert wrote no equality delete file"

    # Delete by predicate: merge-on-read (position deletes on v2, deletion vectors on v3).
    skade.run("delete", t, "--where", "id % 7 = 0")
    for i in [i for i in model if i % 7 == 0]:
        model.pop(i)
    c.check(model, cols, "delete --where")
    pos = {r[0] for r in spark.sql(
        f"SELECT file_format FROM skade.{t}.delete_files WHERE content = 1").collect()}
    assert pos == {"PUFFIN" if fmt == 3 else "PARQUET"}, pos

    # delete-keys: equality deletes alone.
    skade.run("ingest", t, "--sql", gen_sql(10, 14, "k"), "--mode", "delete-keys", "--key", "id,ts")
    for i in range(10, 14):
        model.pop(i, None)
    # SQL statements that commit.
    skade.run("sql", f"UPDATE {sql_name(t)} SET data = 'sql-upd' WHERE id = 3")
    model[3][3] = "sql-upd"
    skade.run("sql", f"DELETE FROM {sql_name(t)} WHERE id = 4")
    model.pop(4)
    skade.run("sql", f"INSERT INTO {sql_name(t)} {gen_sql(300, 303, 's')}")
    model.update({i: row(i, "s") for i in range(300, 303)})
    c.check(model, cols, "delete-keys and SQL statements")

    # Schema evolution: add, rename, widen int → bigint, drop.
    skade.run("alter", t, "add-column", "extra", "VARCHAR")
    skade.run("alter", t, "rename-column", "data", "label")
    skade.run("alter", t, "update-type", "n", "BIGINT")
    skade.run("alter", t, "drop-column", "amount")
    cols = ["id", "n", "ts", "label", "extra"]
    model = {k: [r[0], r[1], r[2], r[3], None] for k, r in model.items()}
    skade.run("ingest", t, "--sql",
              f"SELECT 400 AS id, 6000000000 AS n, to_timestamp({BASE_S}) AS ts, 'big' AS label, "
              f"'x' AS extra")
    model[400] = [400, 6000000000, BASE_S * 1_000_000, "big", "x"]
    c.check(model, cols, "schema evolution")
    assert [f.name for f in spark.table(f"skade.{t}").schema.fields] == cols
    assert spark.table(f"skade.{t}").schema["n"].dataType.typeName() == "long"

    # Partition evolution (a field added), then compaction (which applies the delete files).
    skade.run("partition", t, "day(ts), bucket(16, id), truncate(2, label)")
    skade.run("ingest", t, "--sql",
              f"SELECT range AS id, range AS n, to_timestamp({BASE_S} + range) AS ts, 'p' || range AS label, "
              f"NULL::VARCHAR AS extra FROM range(500, 520)")
    model.update({i: [i, i, (BASE_S + i) * 1_000_000, f"p{i}", None] for i in range(500, 520)})
    c.check(model, cols, "partition evolution")
    specs = {r[0] for r in spark.sql(f"SELECT spec_id FROM skade.{t}.files").collect()}
    assert specs == {0, 1}, specs
    if fmt == 3:
        # A documented limitation (not a wrong result): skade refuses to compact v3 tables until
        # it writes row lineage. When that lands this fails: then compact v3 as well.
        p = skade.run("compact", t, check=False)
        assert p.returncode != 0 and "NotImplemented" in p.stderr, p.stderr
    else:
        skade.run("compact", t)
        c.check(model, cols, "compact")
        # No delete file applies any more: none is newer than a live data file (equality
        # deletes older than every data file may stay behind, as with Iceberg's own compaction).
        entries = spark.sql(f"SELECT data_file.content, sequence_number FROM skade.{t}.entries "
                            f"WHERE status < 2").collect()
        data_seq = min(seq for content, seq in entries if content == 0)
        assert all(seq < data_seq for content, seq in entries if content == 2), entries
        assert all(content != 1 for content, _ in entries), "position deletes after compact"
    # Spark writes on top of skade's table, skade reads it (round trip on one table).
    spark.sql(f"INSERT INTO skade.{t} VALUES (600, 1, TIMESTAMP '2024-02-01 00:00:00', 'spark', NULL)")
    model[600] = [600, 1, (BASE_S + 31 * 86400) * 1_000_000, "spark", None]
    c.check(model, cols, "a Spark insert into skade's table")


def test_skade_time_travel_and_refs_in_spark(spark, skade, compare, ns):
    t = f"{ns}.skrefs"
    skade.run("create", t, "--schema", "id BIGINT, data VARCHAR")
    skade.run("ingest", t, "--sql", "SELECT range AS id, 'a' AS data FROM range(5)")
    skade.run("tag", t, "first")
    skade.run("branch", t, "dev")
    skade.run("ingest", t, "--sql", "SELECT range AS id, 'b' AS data FROM range(5, 8)")
    skade.run("delete", t, "--where", "id = 0")
    snaps = skade.json("snapshots", t, "--json")
    assert len(snaps) == 3
    for s in snaps:
        compare.same(t, spark_suffix=f"VERSION AS OF {s['snapshot_id']}",
                     scan_args=["--snapshot", str(s["snapshot_id"])])
    assert len(compare.same(t, spark_suffix="VERSION AS OF 'first'", scan_args=["--ref", "first"])) == 5
    assert len(compare.same(t, spark_suffix="VERSION AS OF 'dev'", scan_args=["--ref", "dev"])) == 5
    assert len(compare.same(t)) == 7
    # skade rolls main back; Spark sees it.
    skade.run("rollback", t, str(snaps[0]["snapshot_id"]))
    assert len(compare.same(t)) == 5


def test_skade_partition_evolution_replacing_a_field(spark, skade, ns):
    t = f"{ns}.skrepart"
    skade.run("create", t, "--schema", "id BIGINT, data VARCHAR", "--partition-by", "bucket(16, id)",
              "--prop", "write.delete.mode=merge-on-read")
    skade.run("ingest", t, "--sql", "SELECT range AS id, 'a' || range AS data FROM range(0, 20)")
    skade.run("partition", t, "bucket(4, id)")
    skade.run("ingest", t, "--sql", "SELECT range AS id, 'b' || range AS data FROM range(20, 40)")
    model = {(i, ("a" if i < 20 else "b") + str(i)) for i in range(40)}
    assert set(skade.scan(t, ["id", "data"])) == model
    assert {tuple(r) for r in spark.sql(f"SELECT id, data FROM skade.{t}").collect()} == model
    # Every spec's fields, by field id, have names of their own.
    specs = skade.json("inspect", t, "--json")["metadata"]["partition-specs"]
    names = {}
    for spec in specs:
        for f in spec["fields"]:
            names.setdefault(f["name"], set()).add(f["field-id"])
    assert all(len(ids) == 1 for ids in names.values()), names
    assert {r[0] for r in spark.sql(f"SELECT spec_id FROM skade.{t}.files").collect()} == {0, 1}
    spark.sql(f"DELETE FROM skade.{t} WHERE id % 2 = 0")
    model = {r for r in model if r[0] % 2}
    assert set(skade.scan(t, ["id", "data"])) == model
