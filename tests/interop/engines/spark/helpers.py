"""Helpers of the Spark interop suite: running the skade CLI on the suite's lake and comparing
row sets between Spark and skade value for value.

Rows are compared as multisets of tuples in a canonical form that both sides map to:
timestamps as microseconds since the epoch (UTC), dates as ISO strings, decimals as Decimal,
everything else as the Python value. The canonical form follows the column types of the
oracle's schema (Spark's), so that a string column holding "2024-01-01" is never read as a date.
"""

import datetime as dt
import decimal
import json
import os
import re
import struct
import sys
import time

# skade itself (serve, the CLI, the row comparison) is shared with the other JVM suites.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from skade_process import SkadeCli, assert_same_rows  # noqa: E402,F401  (re-exported)

EPOCH = dt.datetime(1970, 1, 1)
EPOCH_DATE = dt.date(1970, 1, 1)

# DuckDB renders TIMESTAMPTZ as "2024-01-01 10:00:00.5+00" (offset may carry minutes) and
# TIMESTAMP as "2024-01-01 10:00:00.5"; Spark's strings use "T" at times.
_TS = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:(Z)|([+-])(\d{2})(?::?(\d{2}))?)?$"
)


def parse_ts_micros(text):
    m = _TS.match(text)
    if not m:
        raise ValueError(f"not a timestamp: {text!r}")
    y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
    frac = (m.group(7) or "").ljust(6, "0")[:6]
    micros = int((dt.datetime(y, mo, d, h, mi, s) - EPOCH).total_seconds()) * 1_000_000 + int(frac)
    if m.group(9):
        off = int(m.group(10)) * 60 + int(m.group(11) or 0)
        micros -= (1 if m.group(9) == "+" else -1) * off * 60_000_000
    return micros


def canon(value, kind):
    """Canonical form of one value. kind: 'ts', 'date', 'decimal', 'float', 'binary' or 'plain'."""
    if value is None:
        return None
    if kind == "ts":
        if isinstance(value, dt.datetime):
            # The suite runs with TZ=UTC and spark.sql.session.timeZone=UTC: naive values are UTC.
            if value.tzinfo is not None:
                value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
            delta = value - EPOCH
            return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
        return parse_ts_micros(str(value))
    if kind == "date":
        if isinstance(value, dt.date):
            return value.isoformat()
        return str(value)[:10]
    if kind == "decimal":
        return decimal.Decimal(str(value))
    if kind == "float":
        return float(value)
    if kind == "float32":
        return struct.unpack("<f", struct.pack("<f", float(value)))[0]
    if kind == "binary":
        if isinstance(value, str):  # DuckDB's text of a BLOB: printable bytes as is, others \xHH
            return re.sub(rb"\\x([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]),
                          value.encode("latin-1"))
        return bytes(value)
    if kind == "nested":
        return json.dumps(_plain(value), sort_keys=True, default=str)
    return value


def _plain(value):
    """Spark Rows, lists and maps (or their JSON from DuckDB) as plain JSON-able values."""
    if hasattr(value, "asDict"):
        value = value.asDict(recursive=True)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (decimal.Decimal, float)) and not isinstance(value, bool):
        return repr(float(value))
    return value


def kinds_of(spark_schema):
    """The canonical kind of each column of a Spark StructType."""
    out = []
    for f in spark_schema.fields:
        t = f.dataType.typeName()
        if t in ("timestamp", "timestamp_ntz"):
            out.append("ts")
        elif t == "date":
            out.append("date")
        elif t == "decimal":
            out.append("decimal")
        elif t == "float":
            out.append("float32")
        elif t == "double":
            out.append("float")
        elif t == "binary":
            out.append("binary")
        elif t in ("struct", "array", "map"):
            out.append("nested")
        else:
            out.append("plain")
    return out


def canon_rows(rows, kinds):
    return [tuple(canon(v, k) for v, k in zip(row, kinds)) for row in rows]






def sql_name(table):
    """ns.levels.t → "ns.levels".t for skade sql (nested namespaces are one schema each)."""
    ns, name = table.rsplit(".", 1)
    return f'"{ns}"."{name}"'


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
