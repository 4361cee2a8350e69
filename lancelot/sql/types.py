"""Types of SQL values: SQL type names -> Arrow, pylance's literal conversion, DataFusion's coercion.

Two rules decide the type a comparison or an operation runs in, as in pylance:
* a literal beside a column (``x > 1``, ``x IN (1, 2)``, ``x BETWEEN 1 AND 2``) takes the column's
  type, and a literal that does not fit it is an error (``int_col > 1.5``, ``date_col > '2020-01-01'``);
  this is lance's own ``resolve_expr`` / ``safe_coerce_scalar`` (rust/lance-datafusion);
* anything else meets in DataFusion's common type (``comparison_common``, ``numeric_common``):
  integers widen, integers and floats meet as floats, strings meet numbers and dates as those.
"""

from __future__ import annotations

import decimal
from typing import Any

import pyarrow as pa
from sqlglot import exp

from lancelot.util.types import is_binary_like, is_string_like

_INT_DIGITS = {8: 3, 16: 5, 32: 10, 64: 20}


def _sql_type_map() -> dict[Any, pa.DataType]:
    T = exp.DataType.Type
    m = {
        T.BOOLEAN: pa.bool_(),
        T.TINYINT: pa.int8(),
        T.SMALLINT: pa.int16(),
        T.INT: pa.int32(),
        T.BIGINT: pa.int64(),
        T.UTINYINT: pa.uint8(),
        T.USMALLINT: pa.uint16(),
        T.UINT: pa.uint32(),
        T.UBIGINT: pa.uint64(),
        T.FLOAT: pa.float32(),
        T.DOUBLE: pa.float64(),
        T.TEXT: pa.utf8(),
        T.VARCHAR: pa.utf8(),
        T.CHAR: pa.utf8(),
        T.BINARY: pa.binary(),
        T.VARBINARY: pa.binary(),
        T.DATE: pa.date32(),
    }
    return m


_SQL_TYPES = _sql_type_map()
_UNITS = {0: "s", 3: "ms", 6: "us", 9: "ns"}


def arrow_type(dt: exp.DataType) -> pa.DataType | None:
    """The Arrow type of a SQL type name as pylance reads it (``timestamp`` is microseconds, no zone;
    ``timestamp(p)`` p in 0/3/6/9; ``decimal(p, s)``); None if pylance has no such type."""
    T = exp.DataType.Type
    params = [int(p.name) for p in dt.expressions if p.name.lstrip("-").isdigit()]
    if dt.this in _SQL_TYPES:
        return _SQL_TYPES[dt.this]
    if dt.this in (T.TIMESTAMP, T.DATETIME, T.TIMESTAMPNTZ):
        unit = _UNITS.get(params[0]) if params else "us"
        return pa.timestamp(unit) if unit else None
    if dt.this == T.DECIMAL and len(params) == 2:
        p, s = params
        return pa.decimal128(p, s) if p <= 38 else pa.decimal256(p, s)
    return None


def is_binary(t: pa.DataType) -> bool:
    return bool(is_binary_like(t) or pa.types.is_fixed_size_binary(t))


def is_int(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t))


def is_numeric(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


def is_list(t: pa.DataType) -> bool:
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t))


def coerce_literal(value: pa.Scalar, to: pa.DataType) -> pa.Scalar | None:
    """``value`` (a literal as pylance types it: int64, float64, utf8, bool, null, list, binary)
    as a scalar of ``to`` when lance's ``safe_coerce_scalar`` allows it (integers in range, any
    number to a float, int to decimal, strings to strings), else None."""
    t = value.type
    if pa.types.is_null(t):
        return pa.scalar(None, to)
    if pa.types.is_dictionary(to):
        inner = coerce_literal(value, to.value_type)
        return None if inner is None else inner
    v = value.as_py()
    if v is None:
        return pa.scalar(None, to)
    try:
        if is_int(t):
            if is_int(to):
                info = (to.bit_width, pa.types.is_signed_integer(to))
                lo, hi = (-(2 ** (info[0] - 1)), 2 ** (info[0] - 1) - 1) if info[1] else (0, 2 ** info[0] - 1)
                return pa.scalar(v, to) if lo <= v <= hi else None
            if pa.types.is_floating(to):
                return pa.scalar(float(v), to)
            if pa.types.is_decimal(to):
                d = decimal.Decimal(v)
                return pa.scalar(d, to) if len(str(abs(v))) <= to.precision - to.scale else None
            return None
        if pa.types.is_floating(t):
            return pa.scalar(v, to) if pa.types.is_floating(to) else None
        if is_string_like(t):
            return pa.scalar(v, to) if is_string_like(to) else None
        if pa.types.is_boolean(t):
            return value if pa.types.is_boolean(to) else None
        if is_binary(t):
            if pa.types.is_fixed_size_binary(to) and len(v) != to.byte_width:
                return None
            return pa.scalar(v, to) if is_binary(to) else None
        if is_list(t):
            return value.cast(to) if is_list(to) else None
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        return None
    return None


def _int_common(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """Integers widen; uint64 and a signed integer meet as decimal(20, 0), which holds both."""
    sa, sb = pa.types.is_signed_integer(a), pa.types.is_signed_integer(b)
    if sa == sb:
        return a if a.bit_width >= b.bit_width else b
    signed, unsigned = (a, b) if sa else (b, a)
    width = max(signed.bit_width, unsigned.bit_width * 2)
    return {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}.get(width, pa.decimal128(20, 0))


def as_decimal(t: pa.DataType) -> pa.DataType:
    if pa.types.is_decimal(t):
        return t
    return pa.decimal128(_INT_DIGITS[t.bit_width], 0)


def numeric_common(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """DataFusion's common type of two numbers (arithmetic and comparisons)."""
    if a == b:
        return a
    if not (is_numeric(a) and is_numeric(b)):
        return None
    if pa.types.is_floating(a) or pa.types.is_floating(b):
        if pa.types.is_float64(a) or pa.types.is_float64(b):
            return pa.float64()
        return pa.float32()  # float32 with an integer or a decimal stays float32
    if pa.types.is_decimal(a) or pa.types.is_decimal(b):
        da, db = as_decimal(a), as_decimal(b)
        scale = max(da.scale, db.scale)
        digits = max(da.precision - da.scale, db.precision - db.scale)
        p = digits + scale
        return pa.decimal128(p, scale) if p <= 38 else pa.decimal256(min(p, 76), scale)
    return _int_common(a, b)


def _temporal_rank(t: pa.DataType) -> int:
    return 1 if pa.types.is_date(t) else 2 if pa.types.is_timestamp(t) else 0


def comparison_common(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The type two values are compared in (DataFusion's ``comparison_coercion``), None if none."""
    if a == b:
        return a
    if pa.types.is_null(a):
        return b
    if pa.types.is_null(b):
        return a
    if pa.types.is_dictionary(a):
        return comparison_common(a.value_type, b)
    if pa.types.is_dictionary(b):
        return comparison_common(a, b.value_type)
    if is_numeric(a) and is_numeric(b):
        floating = a if pa.types.is_floating(a) else b if pa.types.is_floating(b) else None
        exact = a if pa.types.is_decimal(a) else b if pa.types.is_decimal(b) else None
        if floating is not None and exact is not None:  # DataFusion compares a decimal with a float as decimals
            as_exact = pa.decimal128(30, 15) if pa.types.is_float64(floating) else pa.decimal128(14, 7)
            a, b = exact, as_exact
        common = numeric_common(a, b)
        if common is not None and pa.types.is_decimal256(common) and 256 not in (a.bit_width, b.bit_width):
            return pa.decimal128(38, common.scale)  # DataFusion's wider decimal: precision capped at 38
        return common
    if is_string_like(a) and is_string_like(b):
        return pa.large_utf8() if pa.types.is_large_string(a) or pa.types.is_large_string(b) else pa.utf8()
    if is_string_like(a) and (is_numeric(b) or _temporal_rank(b)):  # text with a boolean: none
        return b
    if is_string_like(b) and (is_numeric(a) or _temporal_rank(a)):
        return a
    if is_binary(a) and is_binary(b):
        return pa.binary()
    if (
        pa.types.is_date32(a)
        and b in (pa.int32(), pa.int64())
        or pa.types.is_date32(b)
        and a in (pa.int32(), pa.int64())
    ):
        return pa.date32()  # arrow-rs casts int32 / int64 to a date (days); a narrower integer it refuses
    if _temporal_rank(a) and _temporal_rank(b):
        if pa.types.is_date(a) and pa.types.is_date(b):
            return pa.date64() if pa.types.is_date64(a) or pa.types.is_date64(b) else pa.date32()
        ts = [t for t in (a, b) if pa.types.is_timestamp(t)]
        order = ["s", "ms", "us", "ns"]
        unit = max((t.unit for t in ts), key=order.index)
        zones = [t.tz for t in ts if t.tz is not None]  # a naive time meets a zoned one in its zone
        return pa.timestamp(unit, zones[0] if zones else None)
    return None
