"""Every Iceberg type Spark and skade share, both directions: values at the edges of their
ranges, NULLs, nested types, unicode and binary."""

import decimal

import pytest

from helpers import assert_same_rows, canon_rows, kinds_of, sql_name

SPARK_COLUMNS = (
    "b boolean, i int, l bigint, f float, d double, dec decimal(38,10), small decimal(5,2), "
    "dt date, ts timestamp, tsn timestamp_ntz, s string, bin binary, "
    "st struct<a: int, b: string>, arr array<bigint>, m map<string, int>")

SPARK_ROWS = [
    "(true, 2147483647, 9223372036854775807, CAST(1.5 AS FLOAT), 1e300, "
    "CAST('12345678901234567890.0123456789' AS DECIMAL(38,10)), 999.99, DATE '2024-02-29', "
    "TIMESTAMP '2024-01-01 12:34:56.789012', TIMESTAMP_NTZ '2024-01-01 12:34:56.789012', "
    "'grüße ☃ 🚀', X'00FF6162', named_struct('a', 1, 'b', 'x'), array(1, 2, NULL), map('k', 1, 'l', NULL))",
    "(false, -2147483648, -9223372036854775808, CAST(-0.1 AS FLOAT), -2.5e-300, "
    "CAST('-0.0000000001' AS DECIMAL(38,10)), -999.99, DATE '1900-01-01', "
    "TIMESTAMP '1969-12-31 23:59:59.999999', TIMESTAMP_NTZ '2262-04-11 23:47:16.854775', "
    "'', X'', named_struct('a', NULL, 'b', NULL), array(), map())",
    "(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
]


@pytest.mark.parametrize("fmt", [1, 2, 3])
def test_spark_types_read_by_skade(spark, compare, ns, fmt):
    t = f"{ns}.types"
    spark.sql(f"CREATE TABLE skade.{t} ({SPARK_COLUMNS}) USING iceberg "
              f"TBLPROPERTIES ('format-version'='{fmt}')")
    spark.sql(f"INSERT INTO skade.{t} VALUES {', '.join(SPARK_ROWS)}")
    rows = compare.same(t)
    assert len(rows) == 3
    # Binary by its hex, through SQL as well (no text form of bytes in between).
    got = sorted(compare.skade.sql(f"SELECT hex(bin) AS h FROM {sql_name(t)}", ["h"]), key=repr)
    want = sorted((tuple(r) for r in spark.sql(f"SELECT hex(bin) FROM skade.{t}").collect()), key=repr)
    assert got == want


def test_skade_types_read_by_spark(spark, skade, ns):
    t = f"{ns}.sktypes"
    skade.run("create", t, "--schema",
              "b BOOLEAN, i INTEGER, l BIGINT, f REAL, d DOUBLE, dec DECIMAL(38,10), dt DATE, "
              "ts TIMESTAMP, tstz TIMESTAMPTZ, s VARCHAR, bin BLOB, u UUID, "
              "st STRUCT(a INTEGER, b VARCHAR), arr BIGINT[], m MAP(VARCHAR, INTEGER)",
              "--prop", "format-version=2")
    skade.run("ingest", t, "--sql", """
        SELECT * FROM (VALUES
          (true, 2147483647, 9223372036854775807, 1.5::REAL, 1e300::DOUBLE,
           12345678901234567890.0123456789::DECIMAL(38,10), DATE '2024-02-29',
           TIMESTAMP '2024-01-01 12:34:56.789012', TIMESTAMPTZ '2024-01-01 12:34:56.789012+00',
           'grüße ☃ 🚀', '\\x00\\xFFab'::BLOB, '00000000-0000-0000-0000-000000000001'::UUID,
           {'a': 1, 'b': 'x'}, [1, 2, NULL]::BIGINT[], MAP {'k': 1, 'l': NULL}),
          (false, -2147483648, -9223372036854775808, (-0.1)::REAL, -2.5e-300::DOUBLE,
           (-0.0000000001)::DECIMAL(38,10), DATE '1900-01-01',
           TIMESTAMP '2262-04-11 23:47:16.854775', TIMESTAMPTZ '1969-12-31 23:59:59.999999+00',
           '', ''::BLOB, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::UUID,
           {'a': NULL, 'b': NULL}, []::BIGINT[], MAP {}::MAP(VARCHAR, INTEGER)),
          (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
        ) v(b, i, l, f, d, dec, dt, ts, tstz, s, bin, u, st, arr, m)""")
    cols = ["b", "i", "l", "f", "d", "dec", "dt", "ts", "tstz", "s", "bin", "u", "st", "arr", "m"]
    df = spark.sql(f"SELECT {', '.join(cols)} FROM skade.{t}")
    kinds = kinds_of(df.schema)
    spark_rows = canon_rows(df.collect(), kinds)
    assert len(spark_rows) == 3
    assert_same_rows(spark_rows, canon_rows(skade.scan(t, cols), kinds), "Spark vs skade scan")
    # The values written, independently of both readers' text forms.
    hexes = sorted((r[0] for r in spark.sql(f"SELECT hex(bin) FROM skade.{t}").collect()), key=repr)
    assert hexes == sorted(["00FF6162", "", None], key=repr)
    assert {r[0] for r in spark.sql(f"SELECT u FROM skade.{t}").collect()} == {
        "00000000-0000-0000-0000-000000000001", "ffffffff-ffff-ffff-ffff-ffffffffffff", None}
    assert {r[0] for r in spark.sql(f"SELECT dec FROM skade.{t}").collect()} == {
        decimal.Decimal("12345678901234567890.0123456789"), decimal.Decimal("-0.0000000001"), None}
