"""SQL arithmetic (``+ - * / %``, unary minus) in DataFusion's types: integers wrap, ``/`` truncates
and fails on a zero divisor, ``%`` takes the dividend's sign; decimals widen as DataFusion's do;
date - date is days, timestamp - timestamp a duration; intervals shift dates and times.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
from sqlglot import exp

from lancelot.sql.errors import SqlError
from lancelot.sql.types import as_decimal, comparison_common, is_numeric, numeric_common
from lancelot.sql.values import ARITHMETIC, Val, const_val

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator


def arithmetic(t: Translator, fn: str, a: Val, b: Val, node: exp.Expr) -> Val:
    """``a fn b`` (fn: add, subtract, multiply, divide, mod) in the operands' common number type."""
    if fn == "subtract" and _temporal_kind(a.type) and _temporal_kind(a.type) == _temporal_kind(b.type):
        return _time_difference(t, a, b, node)
    if fn in ("add", "subtract") and pa.types.is_date32(a.type) and pa.types.is_integer(b.type):
        return _plus_days(t, fn, a, b, node)
    if fn == "add" and pa.types.is_integer(a.type) and pa.types.is_date32(b.type):
        return _plus_days(t, fn, b, a, node)
    if fn in ("add", "subtract") and _span(b.type) or fn == "add" and _span(a.type):
        from lancelot.sql.temporal import shift

        return shift(t, fn, b, a, node) if _span(a.type) else shift(t, fn, a, b, node)
    common = numeric_common(a.type, b.type)
    if pa.types.is_null(a.type) or pa.types.is_null(b.type):
        common = b.type if pa.types.is_null(a.type) else a.type
    if common is None or not (is_numeric(common) or pa.types.is_null(common)):
        symbols: dict[type[exp.Expr], str] = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}
        symbol = symbols.get(type(node), node.key)
        raise t.error(f"cannot apply {symbol} to {a.type} and {b.type}", node)
    if pa.types.is_decimal(common):
        both_int = pa.types.is_integer(a.type) and pa.types.is_integer(b.type)  # uint64 with a signed integer
        if pa.types.is_null(a.type) or pa.types.is_null(b.type):  # NULL takes the decimal's type
            a, b = t.cast(a, common, node), t.cast(b, common, node)
        da = a if pa.types.is_decimal(a.type) else t.cast(a, common if both_int else as_decimal(a.type), node)
        db = b if pa.types.is_decimal(b.type) else t.cast(b, common if both_int else as_decimal(b.type), node)
        if fn == "mod":
            return _decimal_mod(t, da, db, node)
        try:
            out = t.call(fn, [da, db], node)
        except SqlError:  # a result wider than decimal128: computed wide, then capped at 38 digits
            wide = [t.cast(v, pa.decimal256(v.type.precision, v.type.scale), node) for v in (da, db)]
            out = t.call(fn, wide, node)
        if fn == "divide" and out.const is None:  # DataFusion: 4 more digits of scale than the dividend's
            p1, s1, s2 = da.type.precision, da.type.scale, db.type.scale
            want = pa.decimal128(min(38, p1 + s2 + 4), s1 + 4)  # straight from the wide quotient: no wrap
            return out if want == out.type else Val(out.expr.cast(want, safe=False), want)
        if pa.types.is_decimal256(out.type) and not pa.types.is_decimal256(common):  # DataFusion caps at 38
            capped = pa.decimal128(38, out.type.scale)
            out = Val(out.expr.cast(capped, safe=False), capped) if out.const is None else t.cast(out, capped, node)
        return out
    a, b = t.cast(a, common, node), t.cast(b, common, node)
    if fn == "divide" and pa.types.is_signed_integer(common):  # the smallest integer / -1 overflows: an error
        fn = "divide_checked"
    if fn != "mod":
        out = t.call(fn, [a, b], node)
        if (a.nan_low or b.nan_low) and out.const is None:  # a NaN operand passes on with its sign
            return Val(out.expr, out.type, None, True)
        return out
    if pa.types.is_floating(common):  # C's fmod: exact, with the dividend's sign (-0.0 % 2 is -0.0)
        from lancelot.sql.udfs import fmod

        return t.call(fmod(common), [a, b], node)
    quotient = t.call("divide", [a, b], node)
    out = t.call("subtract", [a, t.call("multiply", [quotient, b], node)], node)
    if pa.types.is_signed_integer(common) and out.const is None:  # the smallest integer % -1 is 0 (the quotient wraps)
        minus_one = t.call("equal", [b, const_val(pa.scalar(-1, common))], node)
        out = t.call("if_else", [minus_one, t.call("subtract", [a, a], node), out], node)  # 0, or null
    return out


def _plus_days(t: Translator, fn: str, date: Val, n: Val, node: exp.Expr) -> Val:
    """A date plus or minus an integer: that many days.  DataFusion reads the integer as seconds of
    days (``n * 86400``, wrapping in 64 bits) and those as an interval in nanoseconds, which must
    fit 64 bits: beyond 106,751 days an overflow error."""
    i64 = pa.int64()
    seconds = t.call("multiply", [t.cast(n, i64, node), const_val(pa.scalar(86_400, i64))], node)
    check = t.call("multiply_checked", [seconds, const_val(pa.scalar(1_000_000_000, i64))], node)
    days = t.call("divide", [seconds, const_val(pa.scalar(86_400, i64))], node)
    zero = const_val(pa.scalar(0, i64))
    days = t.call("add", [days, t.call("multiply", [check, zero], node)], node)  # kept: its error
    base = t.cast(t.cast(date, pa.int32(), node), i64, node)
    return t.cast(t.cast(t.call(fn, [base, days], node), pa.int32(), node), pa.date32(), node)


def _span(x: pa.DataType) -> bool:
    """A length of time: a duration, or an interval of calendar months."""
    return bool(pa.types.is_duration(x) or pa.types.is_interval(x))


def _decimal_mod(t: Translator, a: Val, b: Val, node: exp.Expr) -> Val:
    """DataFusion's decimal remainder: the larger scale, the smaller count of whole digits."""
    from lancelot.sql.udfs import decimal_mod

    (p1, s1), (p2, s2) = (a.type.precision, a.type.scale), (b.type.precision, b.type.scale)
    scale = max(s1, s2)
    out = pa.decimal128(min(38, min(p1 - s1, p2 - s2) + scale), scale)
    return t.call(decimal_mod(a.type, b.type, out), [a, b], node)


def _temporal_kind(t: pa.DataType) -> str:
    return "date" if pa.types.is_date(t) else "timestamp" if pa.types.is_timestamp(t) else ""


def _time_difference(t: Translator, a: Val, b: Val, node: exp.Expr) -> Val:
    """DataFusion: date - date is a number of days (int64), timestamp - timestamp a duration."""
    if pa.types.is_date(a.type):
        days = [t.cast(t.cast(v, pa.date32(), node), pa.int32(), node) for v in (a, b)]
        return t.call("subtract", [t.cast(d, pa.int64(), node) for d in days], node)
    common = comparison_common(a.type, b.type)
    if common is None:
        raise t.error(f"cannot subtract {b.type} from {a.type}", node)
    return t.call("subtract", [t.cast(a, common, node), t.cast(b, common, node)], node)


def arith_op(t: Translator, node: exp.Expr) -> Val:
    return arithmetic(t, ARITHMETIC[type(node)], t.value(node.this), t.value(node.expression), node)


def neg_op(t: Translator, node: exp.Expr) -> Val:
    x = t.value(node.this)
    if pa.types.is_null(x.type):  # -NULL is NULL
        return x
    if not is_numeric(x.type) or pa.types.is_unsigned_integer(x.type):  # DataFusion: no unsigned negation
        raise t.error(f"cannot negate {x.type}", node)
    # a column's minimum negates to itself (wrapping); DataFusion's constant folding checks
    checked = x.const is not None or x.failed
    out = t.call("negate_checked" if checked else "negate", [x], node)
    if pa.types.is_floating(x.type) and out.const is None:
        return Val(out.expr, out.type, None, not x.nan_low)
    return out
