"""Spark's other uses of the REST catalog: staged creates (CTAS, RTAS), rename, drop, table
properties, register, and reads planned by skade (server-side scan planning)."""

import re

import pytest

from helpers import assert_same_rows, canon_rows, kinds_of


def test_ctas_rtas_rename_drop(spark, skade, compare, ns):
    t = f"{ns}.ctas"
    # CTAS and RTAS commit a staged create/replace (stage-create, then assert-create or
    # assert-table-uuid requirements).
    spark.sql(f"CREATE TABLE skade.{t} USING iceberg PARTITIONED BY (bucket(4, id)) "
              f"TBLPROPERTIES ('format-version'='2') AS "
              f"SELECT id, concat('v', CAST(id AS STRING)) AS data FROM range(0, 30)")
    assert len(compare.same(t)) == 30
    uuid = skade.json("inspect", t, "--json")["metadata"]["table-uuid"]
    spark.sql(f"CREATE OR REPLACE TABLE skade.{t} USING iceberg AS "
              f"SELECT id, id * 2 AS twice FROM range(100, 110)")
    meta = skade.json("inspect", t, "--json")["metadata"]
    assert meta["table-uuid"] == uuid and len(meta["schemas"]) == 2
    rows = compare.same(t)
    assert sorted(rows) == [(i, i * 2) for i in range(100, 110)]
    # Properties.
    spark.sql(f"ALTER TABLE skade.{t} SET TBLPROPERTIES ('owner.team' = 'lake', 'x' = '1')")
    spark.sql(f"ALTER TABLE skade.{t} UNSET TBLPROPERTIES ('x')")
    props = skade.json("props", t, "--json")
    assert props.get("owner.team") == "lake" and "x" not in props, props
    # Rename (within and across namespaces), then drop.
    spark.sql(f"ALTER TABLE skade.{t} RENAME TO {ns}.renamed")
    assert sorted(compare.same(f"{ns}.renamed")) == sorted(rows)
    assert skade.run("scan", t, check=False).returncode != 0
    spark.sql(f"CREATE NAMESPACE skade.{ns}.other")
    spark.sql(f"ALTER TABLE skade.{ns}.renamed RENAME TO {ns}.other.moved")
    assert sorted(compare.same(f"{ns}.other.moved")) == sorted(rows)
    spark.sql(f"DROP TABLE skade.{ns}.other.moved")
    tables = skade.json("tables", "--json")
    assert not any(x["name"] in ("ctas", "renamed", "moved") and x["namespace"][0] == ns.split(".")[0]
                   for x in tables), tables


def test_register_table(spark, skade, compare, ns):
    t = f"{ns}.orig"
    spark.sql(f"CREATE TABLE skade.{t} (id bigint) USING iceberg")
    spark.sql(f"INSERT INTO skade.{t} SELECT id FROM range(7)")
    metadata = skade.json("inspect", t, "--json")["metadata_file"]
    # Dropped without purge: the catalog forgets the table, its files stay; registering its
    # metadata file brings it back under another name. (Registering it while `orig` still
    # exists is refused: skade keeps one table per location, as its README says.)
    spark.sql(f"DROP TABLE skade.{t}")
    spark.sql(f"CALL skade.system.register_table(table => '{ns}.copy', metadata_file => '{metadata}')")
    assert sorted(compare.same(f"{ns}.copy")) == [(i,) for i in range(7)]
    spark.sql(f"INSERT INTO skade.{ns}.copy VALUES (7)")
    assert sorted(compare.same(f"{ns}.copy")) == [(i,) for i in range(8)]


def _shapes(spark, ns):
    """Tables whose reads involve delete files of every kind Spark writes, and evolved specs."""
    out = []
    for fmt in (2, 3):
        t = f"{ns}.plan_v{fmt}"
        spark.sql(f"CREATE TABLE skade.{t} (id bigint, data string) USING iceberg "
                  f"PARTITIONED BY (bucket(4, id)) TBLPROPERTIES ('format-version'='{fmt}', "
                  f"'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')")
        spark.sql(f"INSERT INTO skade.{t} SELECT id, 'x' FROM range(0, 100)")
        spark.sql(f"ALTER TABLE skade.{t} ADD PARTITION FIELD truncate(1, data)")
        spark.sql(f"INSERT INTO skade.{t} SELECT id, 'y' FROM range(100, 150)")
        spark.sql(f"DELETE FROM skade.{t} WHERE id % 3 = 0")
        spark.sql(f"UPDATE skade.{t} SET data = 'z' WHERE id % 5 = 1")
        out.append(t)
    return out


def test_server_side_planning(spark, ns):
    tables = _shapes(spark, ns)
    failures = []
    for t in tables:
        for where in ("", "WHERE id < 60", "WHERE data = 'z'"):
            client = spark.sql(f"SELECT id, data FROM skade.{t} {where}")
            kinds = kinds_of(client.schema)
            expected = canon_rows(client.collect(), kinds)
            try:
                got = canon_rows(spark.sql(f"SELECT id, data FROM skade_plan.{t} {where}").collect(), kinds)
                assert_same_rows(got, expected, f"{t} {where} planned by skade vs by Spark")
            except Exception as e:  # every case is tried; the test reports them all
                cause = re.search(r"(?:java|org)\.[\w.$]+(?:Exception|Error)[^\n]*", str(e))
                failures.append(f"{t} {where!r}: {(cause.group(0) if cause else str(e))[:300]}")
    assert not failures, "\n".join(failures)


def test_views(spark, skade, ns):
    """Spark's Iceberg views through skade's REST catalog: Spark creates, replaces, renames,
    lists and drops them and reads them back; skade sql reads the same views (their Spark SQL,
    unqualified names meaning the view's default namespace)."""
    schema = '"' + ns + '"'
    spark.sql(f"CREATE TABLE skade.{ns}.vbase (id bigint, data string) USING iceberg")
    spark.sql(f"INSERT INTO skade.{ns}.vbase VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql(f"USE skade.{ns}")
    try:
        spark.sql("CREATE VIEW big (id, label COMMENT 'the data') AS SELECT id, data FROM vbase WHERE id >= 2")
        spark.sql("CREATE VIEW upper_big AS SELECT id, upper(label) AS u FROM big")
    finally:
        spark.sql("USE spark_catalog.default")
    assert sorted(spark.sql(f"SELECT * FROM skade.{ns}.big").collect()) == [(2, "b"), (3, "c")]
    views = sorted(r.viewName for r in spark.sql(f"SHOW VIEWS IN skade.{ns}").collect())
    assert views == ["big", "upper_big"], views
    got = skade.sql(f"SELECT id, label FROM {schema}.big ORDER BY id", ["id", "label"])
    assert got == [(2, "b"), (3, "c")], got
    got = skade.sql(f"SELECT id, u FROM {schema}.upper_big ORDER BY id", ["id", "u"])
    assert got == [(2, "B"), (3, "C")], got
    # A commit shows through the view at once; a replaced view reads its new query.
    spark.sql(f"INSERT INTO skade.{ns}.vbase VALUES (4, 'd')")
    assert skade.sql(f"SELECT count(*) AS n FROM {schema}.big", ["n"]) == [(3,)]
    # (Written unqualified again: a name of four parts, skade.t1.x.vbase, is beyond DuckDB's
    # parser, so skade refuses such a view; its message says so.)
    spark.sql(f"USE skade.{ns}")
    try:
        spark.sql("CREATE OR REPLACE VIEW big (id, label) AS SELECT id, data FROM vbase WHERE id <= 1")
        spark.sql("CREATE VIEW four_parts AS SELECT id FROM skade." + ns + ".vbase")
    finally:
        spark.sql("USE spark_catalog.default")
    assert sorted(spark.sql(f"SELECT * FROM skade.{ns}.big").collect()) == [(1, "a")]
    refused = skade.run("sql", f"SELECT * FROM {schema}.four_parts", check=False)
    assert refused.returncode != 0 and "view " + ns + ".four_parts" in refused.stderr, refused.stderr
    spark.sql(f"DROP VIEW skade.{ns}.four_parts")
    tables = skade.sql(
        f"SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = '{ns}' ORDER BY 1",
        ["table_name", "table_type"])
    assert tables == [("big", "VIEW"), ("upper_big", "VIEW"), ("vbase", "BASE TABLE")], tables
    # Rename and drop.
    spark.sql(f"ALTER VIEW skade.{ns}.upper_big RENAME TO skade.{ns}.shouting")
    assert skade.sql(f"SELECT count(*) AS n FROM {schema}.shouting", ["n"]) == [(1,)]
    spark.sql(f"DROP VIEW skade.{ns}.shouting")
    spark.sql(f"DROP VIEW skade.{ns}.big")
    assert spark.sql(f"SHOW VIEWS IN skade.{ns}").collect() == []
    assert skade.run("sql", f"SELECT * FROM {schema}.big", check=False).returncode != 0
