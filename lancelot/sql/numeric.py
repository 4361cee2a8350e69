"""Numeric and null-replacing SQL functions of pylance's filters (DataFusion's names and result
types) as pyarrow compute calls.

Logarithms follow Rust's ``f64``: ``log(x)`` is ``ln(x) / ln(10)`` (not ``log10``, which can
differ in the last bit), ``log(b, x)`` is ``ln(x) / ln(b)``; ``degrees``/``radians`` multiply by
the same constant Rust does. Decimals and integers go in as doubles, as DataFusion coerces them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.arguments import as_common
from lancelot.sql.conditionals import lazy_coalesce
from lancelot.sql.types import is_numeric
from lancelot.sql.values import Val

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator

Fn = Callable[["Translator", exp.Expr, "list[Val]"], "Val"]


def _const(x: float) -> Val:
    from lancelot.sql.values import const_val as const

    return const(pa.scalar(x, pa.float64()))


def _double(t: Translator, node: exp.Expr, v: Val) -> Val:
    if not is_numeric(v.type) and not pa.types.is_null(v.type):
        raise t.error(f"{node.name} does not apply to {v.type}", node)
    return v if pa.types.is_float64(v.type) else t.cast(v, pa.float64(), node)


def _float(t: Translator, node: exp.Expr, v: Val) -> Val:
    """``v`` as a float: a float32 stays one (DataFusion's kernels keep it), the rest as doubles."""
    return v if pa.types.is_float32(v.type) else _double(t, node, v)


def _const_of(x: float, like: Val) -> Val:
    from lancelot.sql.values import const_val as const

    return const(pa.scalar(x, like.type))


def _arity(t: Translator, node: exp.Expr, args: list[Val], *counts: int) -> None:
    if len(args) not in counts:
        raise t.error(f"{node.name} takes {' or '.join(map(str, counts))} argument(s), not {len(args)}", node)


def _unary(kernel: str, scale: float | None = None) -> Fn:
    """A double -> double kernel (``scale``: a multiplication instead of a kernel)."""

    def fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        _arity(t, node, args, 1)
        x = _float(t, node, args[0])
        if scale is not None:
            return t.call("multiply", [x, _const_of(scale, x)], node)
        if kernel in ("ln", "log2"):
            return _ln(t, node, x, kernel)
        return t.call(kernel, [x], node)

    return fn


def _ln(t: Translator, node: exp.Expr, x: Val, kernel: str = "ln") -> Val:
    """ln / log2 as Rust's: of a negative float32 a NaN with its sign bit set (C's logf, log2f;
    the double functions, and log10f, give a positive NaN), which sorts below every number."""
    out = t.call(kernel, [x], node)
    if not pa.types.is_float32(x.type) or out.const is not None:
        return out
    negative = t.call("less", [x, _const_of(0.0, x)], node)
    return t.call("if_else", [negative, _const_of(-math.nan, x), out], node)


def _call(node: exp.Expr, *names: str) -> exp.Anonymous | None:
    """``node`` when it is a call of one of ``names`` (parentheses looked through)."""
    while isinstance(node, exp.Paren):
        node = node.this
    return node if isinstance(node, exp.Anonymous) and node.name.lower() in names else None


def _log(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    _arity(t, node, args, 1, 2)
    x = _float(t, node, args[-1])  # the value's float type; the base is cast to it
    if len(args) == 2 and (args[0].const is None or args[1].const is None):
        # DataFusion's simplifier, whatever the values (NaN and NULL too): log(b, 1) = 0,
        # log(b, b) = 1, log(b, power(b, y)) = y
        base_node, number_node = node.expressions
        one = args[1].const
        if one is not None and one.is_valid and one.as_py() == 1:
            return _const_of(0.0, _float(t, node, args[0]))
        if base_node == number_node:
            return _const_of(1.0, x)
        inner = _call(number_node, "power", "pow")
        if inner is not None and len(inner.expressions) == 2 and inner.expressions[0] == base_node:
            return _exponent(t, inner, args[0])
    base = t.cast(_double(t, node, args[0]), x.type, node) if len(args) == 2 else _const_of(10.0, x)
    return t.call("divide", [_ln(t, node, x), _ln(t, node, base)], node)


def _exponent(t: Translator, call: exp.Anonymous, base: Val) -> Val:
    """``power(base, y)``'s ``y`` as power takes it: an integer with a decimal base, else a double."""
    y = t.value(call.expressions[1])
    if pa.types.is_decimal(base.type) and pa.types.is_integer(y.type):
        return t.cast(y, pa.int64(), call)
    return _double(t, call, y)


def _power(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """DataFusion's power: of a decimal a decimal (lancelot/sql/udfs.py), of anything else a double."""
    from lancelot.sql.udfs import decimal_power, decimal_power_rows, power_checked
    from lancelot.sql.values import const_val as const

    _arity(t, node, args, 2)
    a, b = args
    if (
        not is_numeric(a.type)
        and not pa.types.is_null(a.type)
        or not is_numeric(b.type)
        and not pa.types.is_null(b.type)
    ):
        raise t.error(f"power does not apply to {a.type} and {b.type}", node)
    dec = pa.types.is_decimal(a.type)
    out = a.type if dec else pa.float64()
    if pa.types.is_null(a.type) or pa.types.is_null(b.type):
        return const(pa.scalar(None, out))
    if a.const is None or b.const is None:  # DataFusion's simplifier: power(a, 0) = 1, power(a, 1) = a,
        e = b.const.as_py() if b.const is not None else None  # power(a, log(a, y)) = y
        if e == 0 and str(e)[0] != "-":  # not -0.0: DataFusion's literals compare by bits
            return const(pa.scalar(1, out))
        if e == 1:
            return t.cast(a, out, node)
        inner = _call(node.expressions[1], "log")
        if inner is not None and len(inner.expressions) == 2 and inner.expressions[0] == node.expressions[0]:
            return _float(t, inner, t.value(inner.expressions[1]))
    if dec:
        if b.const is None:
            if pa.types.is_integer(b.type):  # DataFusion takes an integer exponent as int64 (checked)
                b = t.cast(b, pa.int64(), node)
            return t.call(decimal_power_rows(a.type), [a, _double(t, node, b)], node)
        e = b.const.as_py()
        if e is None:
            return const(pa.scalar(None, out))
        integer = pa.types.is_integer(b.type)
        return t.call(decimal_power(a.type, int(e) if integer else float(e), integer), [a], node)
    return t.call(power_checked(out), [_double(t, node, a), _double(t, node, b)], node)


def _trunc(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    _arity(t, node, args, 1, 2)
    x = _float(t, node, args[0])
    digits = 0
    if len(args) == 2:
        if args[1].const is None or not pa.types.is_integer(args[1].type):
            raise t.error("the digits of trunc must be an integer literal", node)
        digits = int(args[1].const.as_py())
    out = t.call("round", [x], node, pc.RoundOptions(digits, round_mode="towards_zero"))
    if out.const is None and len(args) == 1:  # DataFusion's one-argument kernel gives a zero as +0
        zero = _const_of(0.0, out)
        out = t.call("if_else", [t.call("equal", [x, zero], node), zero, out], node)
    return out


def _pi(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    _arity(t, node, args, 0)
    return _const(math.pi)


def _atan2(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    _arity(t, node, args, 2)
    x, y = (_double(t, node, a) for a in args)
    wide = any(pa.types.is_float64(a.type) or pa.types.is_decimal(a.type) for a in args)
    if wide:  # DataFusion's atan2(float64, float64); any narrower pair goes in as float32
        return t.call("atan2", [x, y], node)
    x, y = (Val(a.expr.cast(pa.float32(), safe=False), pa.float32()) for a in args)
    return t.call("atan2", [x, y], node)


def _cbrt(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    from lancelot.sql.udfs import cbrt

    _arity(t, node, args, 1)
    x = args[0] if pa.types.is_float32(args[0].type) else _double(t, node, args[0])  # float32 stays
    return t.call(cbrt(x.type), [x], node)


def _cot(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    _arity(t, node, args, 1)
    x = _float(t, node, args[0])
    return t.call("divide", [_const_of(1.0, x), t.call("tan", [x], node)], node)


def _extreme(kernel: str) -> Fn:
    """greatest / least: the largest / smallest non-null argument, in their common type."""

    def fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        vals = as_common(t, node, args, node.name)
        common = vals[0].type
        out = t.call(kernel, vals, node, pc.ElementWiseAggregateOptions(skip_nulls=True))
        if pa.types.is_floating(common):  # NaN sorts above every number, one with its sign bit below
            from lancelot.sql.udfs import sign_bit
            from lancelot.sql.values import const_val as const

            no = const(pa.scalar(False))
            low = kernel == "min_element_wise"

            def placed_nan_sign(v: Val) -> Val:
                sign = t.call(sign_bit(v.type), [v], node)
                return sign if low else t.call("invert", [sign], node)

            def placed_nan(v: Val) -> Val:
                return t.call("and_kleene", [t.call("is_nan", [v], node), placed_nan_sign(v)], node)

            nans = [t.call("coalesce", [placed_nan(v), no], node) for v in vals]
            any_nan = nans[0]
            for n in nans[1:]:
                any_nan = t.call("or", [any_nan, n], node)
            nan = -math.nan if low else math.nan
            # between zeros too, total order: -0 below 0
            zero = const(pa.scalar(-0.0 if low else 0.0, common))
            signed = [t.call("and_kleene", [t.call("equal", [v, zero], node), placed_nan_sign(v)], node) for v in vals]
            any_zero = signed[0]
            for z in signed[1:]:
                any_zero = t.call("or_kleene", [any_zero, z], node)
            is_zero = t.call("and_kleene", [t.call("equal", [out, zero], node), any_zero], node)
            out = t.call("if_else", [t.call("coalesce", [is_zero, no], node), zero, out], node)
            out = t.call("if_else", [any_nan, const(pa.scalar(nan, common)), out], node)
        return out

    return fn


#: DataFusion's nvl signature: both arguments coerced to the first of these that takes both
_NVL_TYPES = [pa.bool_(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(), pa.int8(), pa.int16(), pa.int32(),
              pa.int64(), pa.float32(), pa.float64(), pa.string_view(), pa.utf8(), pa.large_utf8()]  # fmt: skip


def _coerces(to: pa.DataType, x: pa.DataType) -> bool:
    """DataFusion's ``can_coerce_from`` for the nvl types."""
    from lancelot.util.types import is_string_like

    if pa.types.is_null(x) or to == x:
        return True
    if pa.types.is_unsigned_integer(to):
        return bool(pa.types.is_unsigned_integer(x) and x.bit_width <= to.bit_width)
    if pa.types.is_signed_integer(to):
        return bool(
            pa.types.is_integer(x)
            and (x.bit_width <= to.bit_width if pa.types.is_signed_integer(x) else x.bit_width < to.bit_width)
        )
    if pa.types.is_float32(to):
        return bool(pa.types.is_integer(x))
    if pa.types.is_float64(to):
        return bool(pa.types.is_integer(x) or pa.types.is_floating(x) or pa.types.is_decimal(x))
    if pa.types.is_string_view(to):
        return bool(is_string_like(x))
    return bool(pa.types.is_string(to) or pa.types.is_large_string(to))  # anything reads as text


def _ifnull(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """ifnull / nvl: the first argument unless null, both in the first nvl type taking both (a
    decimal, date or time is not one: as a double or text; two kinds of text as a view)."""
    _arity(t, node, args, 2)
    a, b = args
    if a.type == b.type and a.type in _NVL_TYPES:
        to = a.type
    else:
        to = next((x for x in _NVL_TYPES if _coerces(x, a.type) and _coerces(x, b.type)), pa.utf8())
    work = pa.utf8() if pa.types.is_string_view(to) else to  # Arrow's coalesce takes no views
    vals = [t.cast(v, work, node) for v in args]
    if vals[0].const is not None and vals[0].const.is_valid:  # a literal: the answer (DataFusion's simplifier)
        return t.cast(vals[0], to, node)
    out = lazy_coalesce(t, node, vals) or t.call("coalesce", vals, node)
    return t.cast(out, to, node)


def _nvl2(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """nvl2(x, a, b): ``a`` where ``x`` is not null, else ``b``; the three in their first nvl type taking them all."""
    _arity(t, node, args, 3)
    to = next((x for x in _NVL_TYPES if all(_coerces(x, a.type) for a in args)), pa.utf8())
    work = pa.utf8() if pa.types.is_string_view(to) else to  # (Arrow's if_else takes no views)
    a, b = (t.cast(v, work, node) for v in args[1:])
    return t.cast(t.call("if_else", [t.call("is_valid", [args[0]], node), a, b], node), to, node)


def _nanvl(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    _arity(t, node, args, 2)
    x, y = _double(t, node, args[0]), _double(t, node, args[1])
    return t.call("if_else", [t.call("is_nan", [x], node), y, x], node)


def _gcd_lcm(lcm: bool) -> Fn:
    """gcd / lcm of two integers, as int64 (non-negative; an lcm that does not fit int64 fails)."""

    def fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        from lancelot.sql.udfs import register

        _arity(t, node, args, 2)
        if not all(pa.types.is_integer(a.type) or pa.types.is_null(a.type) for a in args):
            raise t.error(f"{node.name} takes integers, not ({', '.join(str(a.type) for a in args)})", node)
        vals = [t.cast(a, pa.int64(), node) for a in args]
        name = register(
            f"lancelot_{'lcm' if lcm else 'gcd'}", {"a": pa.int64(), "b": pa.int64()}, pa.int64(), _lcm if lcm else _gcd
        )
        return t.call(name, vals, node)

    return fn


def _valid(a: pa.Array, b: pa.Array) -> np.ndarray | None:
    """Where both are valid (None: everywhere)."""
    if not (a.null_count or b.null_count):
        return None
    out: np.ndarray = pc.and_(a.is_valid(), b.is_valid()).to_numpy(zero_copy_only=False)
    return out


def _gcd(a: pa.Array, b: pa.Array) -> pa.Array:
    x, y = (v.fill_null(0).to_numpy() for v in (a, b))
    mask = _valid(a, b)
    return pa.array(np.gcd(x, y), pa.int64(), mask=None if mask is None else ~mask)


def _lcm(a: pa.Array, b: pa.Array) -> pa.Array:
    x, y = (v.fill_null(0).to_numpy() for v in (a, b))
    g = np.gcd(x, y)
    with np.errstate(all="ignore"):
        q = np.abs(np.where(g == 0, 0, x // np.where(g == 0, 1, g)))
        out = q * np.abs(y)
    bad = (q != 0) & ((out // np.where(q == 0, 1, q)) != np.abs(y)) | (out < 0)
    mask = _valid(a, b)
    if mask is not None:
        bad &= mask
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise pa.ArrowInvalid(f"Signed integer overflow in LCM({x[k]}, {y[k]})")
    return pa.array(out, pa.int64(), mask=None if mask is None else ~mask)


NUMERIC_FUNCTIONS: dict[str, Fn] = {
    "gcd": _gcd_lcm(False),
    "lcm": _gcd_lcm(True),
    "ln": _unary("ln"),
    "log10": _unary("log10"),
    "log2": _unary("log2"),
    "log": _log,
    "exp": _unary("exp"),
    "trunc": _trunc,
    "pi": _pi,
    "degrees": _unary("", 180.0 / math.pi),
    "radians": _unary("", math.pi / 180.0),
    "signum": _unary("sign"),
    "sin": _unary("sin"),
    "cos": _unary("cos"),
    "tan": _unary("tan"),
    "asin": _unary("asin"),
    "acos": _unary("acos"),
    "atan": _unary("atan"),
    "sinh": _unary("sinh"),
    "cosh": _unary("cosh"),
    "tanh": _unary("tanh"),
    "asinh": _unary("asinh"),
    "acosh": _unary("acosh"),
    "atanh": _unary("atanh"),
    "atan2": _atan2,
    "cbrt": _cbrt,
    "cot": _cot,
    "greatest": _extreme("max_element_wise"),
    "least": _extreme("min_element_wise"),
    "ifnull": _ifnull,
    "nvl": _ifnull,
    "nvl2": _nvl2,
    "nanvl": _nanvl,
    "power": _power,
    "pow": _power,
}
