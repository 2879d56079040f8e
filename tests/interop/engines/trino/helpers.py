"""Helpers of the Trino interop suite: the skade CLI on the suite's lake, and rows of Trino and of
skade in one canonical form so that whole row sets compare value for value.

The canonical form follows the column types Trino reports (the oracle's schema), so a VARCHAR
holding "2024-01-01" is never read as a date:
  timestamps and times  microseconds (since the epoch in UTC, or since midnight)
  dates                 ISO strings
  decimals              Decimal, compared by value
  real, double          floats (REAL rounded to 32 bits), NaN and infinities as strings
  varbinary             bytes (Trino sends base64, skade DuckDB's text with \\xHH escapes)
  arrays, maps, rows    lists, sorted (key, value) tuples and dicts by field name, recursively
"""

import base64
import datetime as dt
import decimal
import math
import os
import re
import struct
import sys

# skade itself (serve, the CLI, the row comparison) is shared with the other JVM suites.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from skade_process import SkadeCli, assert_same_rows  # noqa: E402,F401  (re-exported)

EPOCH = dt.datetime(1970, 1, 1)
# Decimals up to 38 digits normalize without rounding (the default context keeps 28).
_EXACT = decimal.Context(prec=80)

# "2024-01-01 10:00:00.123456 UTC" (Trino), "2024-01-01 10:00:00.123456+00" (DuckDB),
# with or without a fraction, a "T", an offset or a zone name.
_TS = re.compile(
    r"^(-?\d{4,})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,12}))?"
    r"\s*(?:(Z|UTC)|([+-])(\d{2})(?::?(\d{2}))?)?$")
_TIME = re.compile(r"^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,12}))?$")


# The type tests' filters, one on every column of their table that some row equals: (Trino's
# predicate, skade's form where the dialects differ). Each row is a file of its own, so each
# file's column bounds decide alone whether a filter skips it.
TYPE_FILTERS = [
    ("b = false", None), ("i = -2147483648", None), ("l = -1", None), ("r = REAL '1.5'", "r = 1.5"),
    ("d = 2.25", None), ("dec_small = -0.001", None),
    ("dec_big = DECIMAL '-1234567890123456789012345678.0123456789'",
     "dec_big = -1234567890123456789012345678.0123456789"),
    ("s = 'héllo ✓'", None), ("bin = X'00ff6162'", "bin = '\\x00\\xFFab'::BLOB"),
    ("dt = DATE '1970-01-01'", None), ("tm = TIME '23:59:59.999999'", None),
    ("ts = TIMESTAMP '2024-01-01 01:02:03.456789'", None),
    ("tstz = TIMESTAMP '1969-07-20 20:17:40.000001 UTC'",
     "tstz = TIMESTAMPTZ '1969-07-20 20:17:40.000001+00'"),
    ("u = UUID 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'",
     "u = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID"),
    ("s IS NULL", None), ("tstz > TIMESTAMP '2000-01-01 00:00:00 UTC'",
                          "tstz > TIMESTAMPTZ '2000-01-01 00:00:00+00'"),
]


def parse_type(text):
    """Trino's type text as a tree: ("array", T), ("map", K, V), ("row", [(name, T)…]) or the
    base name ("bigint", "decimal", "timestamp with time zone", …)."""
    text = text.strip()
    m = re.match(r"^(array|map|row)\((.*)\)$", text, re.S)
    if not m:
        base = re.sub(r"\(\d+(?:,\s*\d+)?\)", "", text).strip()
        return re.sub(r"\s+", " ", base)
    kind, inner = m.group(1), _split_top(m.group(2))
    if kind == "array":
        return ("array", parse_type(inner[0]))
    if kind == "map":
        return ("map", parse_type(inner[0]), parse_type(inner[1]))
    fields = []
    for part in inner:
        name, _, rest = part.strip().partition(" ")
        fields.append((name.strip('"'), parse_type(rest)))
    return ("row", fields)


def _split_top(text):
    """Splits on commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def ts_micros(text):
    m = _TS.match(str(text).strip())
    if not m:
        raise ValueError(f"not a timestamp: {text!r}")
    y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
    frac = (m.group(7) or "").ljust(6, "0")[:6]
    micros = int((dt.datetime(y, mo, d, h, mi, s) - EPOCH).total_seconds()) * 1_000_000 + int(frac)
    if m.group(9):
        off = int(m.group(10)) * 60 + int(m.group(11) or 0)
        micros -= (1 if m.group(9) == "+" else -1) * off * 60_000_000
    return micros


def time_micros(text):
    m = _TIME.match(str(text).strip())
    if not m:
        raise ValueError(f"not a time: {text!r}")
    h, mi, s = (int(m.group(i)) for i in range(1, 4))
    return ((h * 60 + mi) * 60 + s) * 1_000_000 + int((m.group(4) or "").ljust(6, "0")[:6])


def _float(value, bits):
    if isinstance(value, str):
        value = float(value)  # Trino: "NaN", "Infinity", "-Infinity"
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        return repr(value)  # equal to itself, unlike nan
    if bits == 32:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    return value


def _binary(value, side):
    if side == "trino":
        return base64.b64decode(value)
    # DuckDB's text of a BLOB: printable bytes as they are, the others as \xHH.
    return re.sub(rb"\\x([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]),
                  str(value).encode("latin-1"))


def canon(value, t, side):
    """Canonical form of one value of Trino type tree `t`; side: "trino" or "skade"."""
    if value is None:
        return None
    if isinstance(t, tuple):
        if t[0] == "array":
            return tuple(canon(v, t[1], side) for v in value)
        if t[0] == "map":
            items = value.items() if isinstance(value, dict) else value
            out = [(canon(_map_key(k, t[1]), t[1], side), canon(v, t[2], side)) for k, v in items]
            return tuple(sorted(out, key=repr))
        names = [n for n, _ in t[1]]
        if side == "trino":  # rows arrive as a list in field order
            value = dict(zip(names, value))
        return tuple((n, canon(value.get(n), ft, side)) for n, ft in t[1])
    if t in ("timestamp", "timestamp with time zone"):
        return ts_micros(value)
    if t == "time":
        return time_micros(value)
    if t == "date":
        return str(value)[:10]
    if t == "decimal":
        return decimal.Decimal(str(value)).normalize(_EXACT)
    if t == "real":
        return _float(value, 32)
    if t == "double":
        return _float(value, 64)
    if t == "varbinary":
        return _binary(value, side)
    if t == "uuid":
        return str(value).lower()
    if t in ("bigint", "integer", "smallint", "tinyint"):
        return int(value)
    return value


def _map_key(key, t):
    # JSON objects have string keys: a map's non-string keys come back as text.
    if t in ("bigint", "integer") and isinstance(key, str):
        return int(key)
    return key


def canon_rows(rows, types, side):
    trees = [parse_type(t) for t in types]
    return [tuple(canon(v, t, side) for v, t in zip(row, trees)) for row in rows]
