"""SQL comparisons, ``IN``, ``BETWEEN`` and ``IS [NOT] DISTINCT FROM`` as pyarrow compute calls, with
DataFusion's semantics: the operands' common type, floats in IEEE total order (NaN equal to itself and
above every number, a negated NaN below; -0 = 0 against a literal), ``x IN (..., NULL)`` unknown when
nothing matches; ``IS [NOT] DISTINCT FROM`` never gives NULL.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.types import comparison_common
from lancelot.sql.values import COMPARISONS, Val, const_val, is_literal, unparen

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator

#: a comparison's result from the order of its operands (-1, 0, 1)
_OUTCOME: dict[str, Callable[[int], bool]] = {
    "equal": lambda o: o == 0,
    "not_equal": lambda o: o != 0,
    "greater": lambda o: o > 0,
    "greater_equal": lambda o: o >= 0,
    "less": lambda o: o < 0,
    "less_equal": lambda o: o <= 0,
}
_NULL_BOOL = pa.scalar(None, pa.bool_())
_FLIP = {
    "equal": "equal",
    "not_equal": "not_equal",
    "greater": "less",
    "greater_equal": "less_equal",
    "less": "greater",
    "less_equal": "greater_equal",
}


def compare(t: Translator, fn: str, a: Val, b: Val, node: exp.Expr) -> Val:
    """``a fn b`` (fn: equal, less, ...) in the operands' common type."""
    common = comparison_common(a.type, b.type)
    if common is None:
        raise t.error(f"cannot compare {a.type} with {b.type}", node)
    if pa.types.is_floating(common) and a.const is not None and b.const is None:
        return compare(t, _FLIP[fn], b, a, node)  # ``1 < f`` as ``f > 1``
    if pa.types.is_date32(common) and pa.types.is_integer(a.type) != pa.types.is_integer(b.type):
        # DataFusion unwraps the integer's cast to a date against a constant date: the days as a number
        number, date = (a, b) if pa.types.is_integer(a.type) else (b, a)
        if number.const is None and date.const is not None:
            days = t.cast(t.cast(date, pa.int32(), node), number.type, node)
            return compare(t, fn, number, days, node) if number is a else compare(t, fn, days, number, node)
    a, b = t.cast(a, common, node), t.cast(b, common, node)
    plain = t.call(fn, [a, b], node)
    consts = [v.const for v in (a, b) if v.const is not None and v.const.is_valid]
    if pa.types.is_floating(common) and plain.const is not None and len(consts) == 2:
        x, y = (_total_key(c.as_py()) for c in consts)
        return const_val(pa.scalar(_OUTCOME[fn]((x > y) - (x < y))))
    if not pa.types.is_floating(common) or plain.const is not None:
        return plain
    return _nan_order(fn, a, b, plain)


def _total_key(x: float) -> tuple[int, float]:
    """``x``'s place in IEEE total order (NaN by its sign bit; -0 and 0 equal, as between literals)."""
    if math.isnan(x):
        return (-1 if math.copysign(1.0, x) < 0 else 1, 0.0)
    return (0, x)


def _is_field(e: pc.Expression) -> bool:
    return "(" not in str(e)  # a column reference prints as its name


def _nan_order(fn: str, a: Val, b: Val, plain: Val) -> Val:
    """DataFusion compares floats in IEEE total order: NaN equal to itself, above every number, but
    a NaN with its sign bit set (as negation, or an operation making a NaN, makes one) below every
    number; -0 below 0 between two columns, -0 = 0 against a literal."""
    from lancelot.sql.udfs import nan_placed, sign_bit

    if b.const is not None and not b.const.is_valid:
        return plain  # against NULL: unknown, NaN or not
    test = _OUTCOME[fn]
    isnan_a = pc.is_nan(a.expr)
    # a NaN's place: above every number unless its sign bit is set
    high_a = pc.invert(pc.Expression._call(sign_bit(a.type), [a.expr]))
    above, below = pc.scalar(test(1)), pc.scalar(test(-1))
    a_only = pc.if_else(high_a, above, below)  # a NaN ``a`` against a number
    if b.const is not None and not math.isnan(b.const.as_py()):
        if _is_field(a.expr):  # ``x > v OR nan_above(x)``: the form zone maps prune by (dataset/scan.py)
            if fn in ("equal", "not_equal"):
                return plain  # (IEEE's answer for a NaN already)
            placed = pc.Expression._call(nan_placed(a.type, bool(test(1))), [a.expr])
            return Val(pc.or_kleene(plain.expr, placed), pa.bool_())
        return Val(pc.if_else(isnan_a, a_only, plain.expr), pa.bool_())
    isnan_b = pc.is_nan(b.expr)
    high_b = pc.invert(pc.Expression._call(sign_bit(b.type), [b.expr]))
    b_only = pc.if_else(high_b, below, above)
    both = pc.Expression._call(fn, [high_a, high_b])
    nan = pc.if_else(isnan_a, pc.if_else(isnan_b, both, a_only), b_only)
    either = pc.or_kleene(isnan_a, isnan_b)
    # two zeros of a column against a column compare by sign too (-0 below 0); only with a literal is -0 = 0
    zero = pc.scalar(pa.scalar(0, a.type))
    both_zero = pc.and_kleene(pc.equal(a.expr, zero), pc.equal(b.expr, zero))
    one = pc.scalar(pa.scalar(1, a.type))
    positive_a, positive_b = (pc.greater(pc.divide(one, x.expr), zero) for x in (a, b))
    signed = pc.if_else(both_zero, pc.Expression._call(fn, [positive_a, positive_b]), plain.expr)
    out = pc.if_else(either, nan, signed)
    valid = pc.Expression._call("and", [pc.is_valid(a.expr), pc.is_valid(b.expr)])  # NULL against NaN: unknown
    return Val(pc.if_else(valid, out, pc.scalar(pa.scalar(None, pa.bool_()))), pa.bool_())


def in_list(t: Translator, node: exp.In) -> Val:
    """``x IN (a, b, ...)``: one set lookup when the list holds only literals (unknown when nothing
    matches and the list holds NULL; -0 and 0 are one number), else ``x = a OR x = b ...``."""
    if not node.expressions:
        raise t.error("IN needs at least one value", node)
    x = t.value(node.this)
    if len(node.expressions) == 1 and isinstance(unparen(node.expressions[0]), exp.Null):
        return const_val(_NULL_BOOL)  # DataFusion: ``x IN (NULL)`` is ``x = NULL``, NULL without running x
    if x.const is None and all(is_literal(e) and not isinstance(unparen(e), exp.Array) for e in node.expressions):
        scalars = [t.literal_scalar(e) for e in node.expressions]
        if isinstance(unparen(node.this), exp.Cast | exp.TryCast):  # (only a cast may unwrap: no constants else)
            x = _unwrapped(t, node.this, [const_val(s) for s in scalars if s.is_valid], nulls=True) or x
        return _in_set(t, node, x, scalars)
    items = [t.value(e) for e in node.expressions]
    x, items = _in_common(t, node, x, items, _list_common(t, node, x.type, [i.type for i in items]))
    out: Val | None = None
    for i in items:
        eq = compare(t, "equal", x, i, node)
        out = eq if out is None else t.call("or_kleene", [out, eq], node)
    assert out is not None
    return out


def _list_common(t: Translator, node: exp.Expr, x: pa.DataType, items: list[pa.DataType]) -> pa.DataType:
    """The type DataFusion compares ``x IN (items)`` in: the common type of ``x`` and each item in turn."""
    common = x
    for item_type in dict.fromkeys(items):  # in the list's order, as DataFusion folds them
        c = comparison_common(common, item_type)
        if c is None:
            raise t.error(f"cannot compare {x} with {item_type} in IN", node)
        common = c
    return common


def _in_common(t: Translator, node: exp.Expr, x: Val, items: list[Val], common: pa.DataType) -> tuple[Val, list[Val]]:
    """``x`` and ``items`` cast to ``common`` where one of them meets ``x`` in another type alone (``n + 1 IN
    (1.5, 'NaN')``: the text is a double, as the list's type says, not an integer, as ``n + 1``'s would)."""
    if all(comparison_common(x.type, i.type) == common for i in items):
        return x, items
    return t.cast(x, common, node), [t.cast(i, common, node) for i in items]


def _in_set(t: Translator, node: exp.Expr, x: Val, scalars: list[pa.Scalar]) -> Val:
    common = _list_common(t, node, x.type, [s.type for s in scalars])
    if pa.types.is_dictionary(common):  # (a list of NULLs only: pyarrow has no empty dictionary value set)
        common = common.value_type
    x = t.cast(x, common, node)
    values, has_null = [], False
    for s in scalars:
        if not s.is_valid:
            has_null = True
            continue
        if s.type == common:
            values.append(s.as_py())
            continue
        cast = t.cast(const_val(s), common, node).const  # (as DataFusion casts: a float to a decimal rounds)
        assert cast is not None
        values.append(cast.as_py())
    value_set = pa.array(values, common)
    probe = x.expr
    if pa.types.is_floating(common):  # DataFusion: -0 = 0 (adding +0 makes every zero +0)
        zero = pc.scalar(pa.scalar(0.0, common))
        probe = pc.add(probe, zero)
        value_set = pc.add(value_set, pa.scalar(0.0, common))
    found = pc.is_in(probe, value_set=value_set, skip_nulls=True)
    if has_null:  # no match is unknown
        return Val(pc.or_kleene(found, pc.scalar(_NULL_BOOL)), pa.bool_())
    return Val(pc.if_else(pc.is_valid(x.expr), found, pc.scalar(_NULL_BOOL)), pa.bool_())


def compare_op(t: Translator, node: exp.Expr) -> Val:
    return compare(t, COMPARISONS[type(node)], *_operands(t, node), node)


def _operands(t: Translator, node: exp.Expr) -> tuple[Val, Val]:
    """A comparison's two sides, a cast integer against an integer constant unwrapped."""
    a, b = t.value(node.this), t.value(node.expression)
    if b.const is not None:
        a = _unwrapped(t, node.this, [b]) or a
    elif a.const is not None:
        b = _unwrapped(t, node.expression, [a]) or b
    return a, b


def _unwrapped(t: Translator, side: exp.Expr, others: list[Val], nulls: bool = False) -> Val | None:
    """DataFusion's optimizer compares ``CAST(x AS int_type)`` with integer constants as ``x``
    itself when each constant fits both integer types (a value the cast would refuse or make null
    then compares as it is): the uncast ``x``, else None.  ``nulls``: an IN list whose NULLs were
    left out of ``others`` (a list of NULLs alone unwraps too)."""
    side = unparen(side)
    if not isinstance(side, exp.Cast | exp.TryCast):
        return None
    if not (others or nulls) or any(
        o.const is None or not o.const.is_valid or not pa.types.is_integer(o.type) for o in others
    ):
        return None
    inner, outer = t.value(side.this), t.value(side)
    if inner.const is not None or not (pa.types.is_integer(inner.type) and pa.types.is_integer(outer.type)):
        return None
    ranges = [np.iinfo(x.to_pandas_dtype()) for x in (inner.type, outer.type)]
    values = [o.const.as_py() for o in others if o.const is not None]
    fits = all(r.min <= v <= r.max for v in values for r in ranges)
    return inner if fits else None


def distinct_op(t: Translator, node: exp.Expr) -> Val:
    a, b = _operands(t, node)
    ne = compare(t, "not_equal", a, b, node)
    one_null = t.call("xor", [t.call("is_null", [a], node), t.call("is_null", [b], node)], node)
    out = t.call("coalesce", [ne, one_null], node) if ne.const is None or not ne.const.is_valid else ne
    if isinstance(node, exp.NullSafeEQ):
        out = t.call("invert", [out], node)
    return out


def between_op(t: Translator, node: exp.Expr) -> Val:
    x, lo, hi = t.value(node.this), t.value(node.args["low"]), t.value(node.args["high"])
    # DataFusion's type of a BETWEEN: the common type of x's with the low bound's and x's with the high one's
    low, high = comparison_common(x.type, lo.type), comparison_common(x.type, hi.type)
    common = None if low is None or high is None else comparison_common(low, high)
    if common is None:
        raise t.error(f"cannot compare {x.type} with {lo.type} and {hi.type} in BETWEEN", node)
    if low != high:
        x, (lo, hi) = _in_common(t, node, x, [lo, hi], common)
    ge = compare(t, "greater_equal", x, lo, node)
    le = compare(t, "less_equal", x, hi, node)
    return t.call("and_kleene", [ge, le], node)


def in_op(t: Translator, node: exp.Expr) -> Val:
    assert isinstance(node, exp.In)
    if node.args.get("query") is not None or node.args.get("unnest") is not None:
        raise t.error("IN takes a list of values", node)
    return in_list(t, node)
