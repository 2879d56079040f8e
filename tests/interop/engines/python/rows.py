"""Row-for-row comparison of a table as two readers see it.

Both sides become multisets of tuples of canonical Python values, typed by the Arrow schema of
the reference reader (PyIceberg or ADBC), so that a difference in any value, any row count or any
duplicate fails: integers and booleans as they are, decimals as Decimal, doubles as float,
dates as days, times and timestamps as microseconds (UTC for timestamptz), structs and lists as
tuples. skade's JSON (DuckDB's to_json) renders temporal values as ISO text and numbers as
numbers; they are parsed back by the same column types.
"""

from __future__ import annotations

import collections
import datetime as dt
from decimal import Decimal

import pyarrow as pa

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_TZ = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_DAY0 = dt.date(1970, 1, 1)
_MICRO = dt.timedelta(microseconds=1)


def _parse_instant(text: str) -> dt.datetime:
    # DuckDB writes "2024-03-01 10:00:00.123+00"; Python 3.11 reads it.
    return dt.datetime.fromisoformat(text)


def canon(value, typ: pa.DataType, from_json: bool):
    """The canonical form of one value of Arrow type `typ` (from pyarrow, or from skade's JSON)."""
    if value is None:
        return None
    if pa.types.is_timestamp(typ):
        if from_json:
            value = _parse_instant(value)
        if typ.tz is not None:
            if value.tzinfo is None:
                raise AssertionError(f"timestamptz value without offset: {value!r}")
            return (value - _EPOCH_TZ) // _MICRO
        if value.tzinfo is not None:
            raise AssertionError(f"timestamp (no zone) value with offset: {value!r}")
        return (value - _EPOCH) // _MICRO
    if pa.types.is_date(typ):
        if from_json:
            value = dt.date.fromisoformat(value)
        return (value - _DAY0).days
    if pa.types.is_time(typ):
        if from_json:
            value = dt.time.fromisoformat(value)
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    if pa.types.is_decimal(typ):
        return Decimal(value) if not isinstance(value, Decimal) else value
    if pa.types.is_floating(typ):
        return float(value)
    if pa.types.is_integer(typ):
        if isinstance(value, bool) or (isinstance(value, Decimal) and value != value.to_integral_value()):
            raise AssertionError(f"not an integer: {value!r}")
        return int(value)
    if pa.types.is_boolean(typ):
        if not isinstance(value, bool):
            raise AssertionError(f"not a boolean: {value!r}")
        return value
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_string_view(typ):
        if not isinstance(value, str):
            raise AssertionError(f"not a string: {value!r}")
        return value
    if pa.types.is_struct(typ):
        return tuple(canon(value.get(f.name), f.type, from_json) for f in typ)
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return tuple(canon(v, typ.value_type, from_json) for v in value)
    if pa.types.is_map(typ):
        items = value.items() if isinstance(value, dict) else value
        return tuple(sorted((canon(k, typ.key_type, from_json), canon(v, typ.item_type, from_json)) for k, v in items))
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_fixed_size_binary(typ):
        return bytes(value) if not from_json else value.encode("latin-1")
    raise AssertionError(f"no canonical form for {typ}")


def from_arrow(table: pa.Table, columns: list[str] | None = None) -> collections.Counter:
    columns = columns or table.column_names
    types = [table.schema.field(c).type for c in columns]
    rows = collections.Counter()
    for row in table.select(columns).to_pylist():
        rows[tuple(canon(row[c], t, False) for c, t in zip(columns, types))] += 1
    return rows


def from_json(rows: list[dict], schema: pa.Schema, columns: list[str] | None = None) -> collections.Counter:
    columns = columns or schema.names
    types = [schema.field(c).type for c in columns]
    out = collections.Counter()
    for row in rows:
        if set(row) != set(columns):
            raise AssertionError(f"skade's columns {sorted(row)} != {sorted(columns)}")
        out[tuple(canon(row[c], t, True) for c, t in zip(columns, types))] += 1
    return out


def assert_same(actual: collections.Counter, expected: collections.Counter, what: str = "") -> None:
    """Equal multisets of rows; on a difference, shows a few rows only one side has."""
    if actual == expected:
        return
    missing = list((expected - actual).elements())[:5]
    extra = list((actual - expected).elements())[:5]
    raise AssertionError(
        f"{what}: {sum(actual.values())} rows vs {sum(expected.values())} expected;\n"
        f"  missing (first 5): {missing}\n  unexpected (first 5): {extra}")
