"""SQL operators: the dispatch of sqlglot's operator nodes to their translations (comparison.py,
arithmetic.py, casts.py, string_operators.py, special_forms.py), and the logical operators (``AND``,
``OR``, ``NOT``, ``IS [NOT] NULL/TRUE/FALSE``, which never gives NULL) with Kleene's logic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.arithmetic import arith_op, neg_op
from lancelot.sql.casts import cast_op, try_cast_op
from lancelot.sql.comparison import between_op, compare_op, distinct_op, in_op
from lancelot.sql.special_forms import case_op, extract_op, interval_op, rounding_op, substring_op, trim_op
from lancelot.sql.string_operators import dpipe_op, escape_op, like_op
from lancelot.sql.values import ARITHMETIC, COMPARISONS, Val, const_val, sql_text, unparen

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator


def _logical(t: Translator, node: exp.Expr) -> Val:
    fn = "and_kleene" if isinstance(node, exp.And) else "or_kleene"
    a = t.boolean_operand(t.value(node.this), node.this)
    b = t.boolean_operand(t.value(node.expression), node.expression)
    # DataFusion's simplifier: ``FALSE AND x`` is false and ``x OR TRUE`` true, ``x`` never evaluated
    absorbing = fn == "or_kleene"
    if any(v.const is not None and v.const.as_py() is absorbing for v in (a, b)):
        return const_val(pa.scalar(absorbing))
    if b.failed and a.const is None:  # run only where ``a`` leaves the answer open (DataFusion skips it
        from lancelot.sql.udfs import failing  # when ``a`` decides a whole batch)

        open_rows = t.call("coalesce", [a if absorbing is False else t.call("invert", [a], node), _TRUE], node)
        b = Val(pc.Expression._call(failing(_failure(b), pa.bool_()), [open_rows.expr]), pa.bool_())
    out = t.call(fn, [a, b], node)
    if out.const is None:  # (a filter failing on rows DataFusion's short-circuit skips is run again so)
        from lancelot.sql.short_circuit import remember

        remember(out.expr, fn == "and_kleene", a.expr, b.expr)
    return out


_TRUE = const_val(pa.scalar(True))


def _failure(v: Val) -> str:
    """The error of a constant that fails (``Val.failed``)."""
    import pyarrow.dataset as pads

    try:
        pads.dataset(pa.table({"_": [0]})).to_table(columns={"v": v.expr})
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        return str(e)
    return "cannot compute a constant"


def _not(t: Translator, node: exp.Expr) -> Val:
    inner = unparen(node.this)
    if isinstance(inner, exp.Is):
        return _is(t, inner, negated=True)
    return t.call("invert", [t.boolean_operand(t.value(node.this), node.this)], node)


def _is(t: Translator, node: exp.Expr, negated: bool = False) -> Val:
    what = node.expression
    inner = unparen(node.this)
    if isinstance(what, exp.Null) and isinstance(inner, exp.Anonymous) and inner.name.lower() == "regexp_match":
        t.boolean.add(id(inner))  # its list of matches is null exactly where it does not match (or the text is null)
        matches = t.value(inner)
        return matches if negated else t.call("invert", [matches], node)
    x = t.value(node.this)
    if isinstance(what, exp.Null):
        from lancelot.sql.nullability import nullable

        if x.failed or not nullable(t, node.this):  # never null: DataFusion answers without computing it
            return const_val(pa.scalar(negated))
        return t.call("is_valid" if negated else "is_null", [x], node)
    if not isinstance(what, exp.Boolean):
        raise t.error(f"IS {sql_text(what)} is not supported", node)
    x = t.boolean_operand(x, node.this)
    truth = bool(what.this)
    # IS TRUE: true only for true; IS NOT TRUE: everything else (null included)
    hit = x if truth else t.call("invert", [x], node)
    if negated:
        return t.call("invert", [t.call("coalesce", [hit, const_val(pa.scalar(False))], node)], node)
    return t.call("coalesce", [hit, const_val(pa.scalar(False))], node)


def _bitwise(kernel: str, anywhere: bool) -> Callable[[Translator, exp.Expr], Val]:
    """``<<`` / ``>>`` (lance's planner takes them anywhere) and ``&`` / ``|`` (only inside a function's arguments,
    which DataFusion plans): integers, in their common type."""

    def fn(t: Translator, node: exp.Expr) -> Val:
        from lancelot.sql.special_forms import in_function
        from lancelot.sql.types import comparison_common

        if not anywhere:
            in_function(t, node)
        a, b = t.value(node.this), t.value(node.expression)
        common = comparison_common(a.type, b.type)
        if common is None or not (pa.types.is_integer(common) or pa.types.is_null(common)):
            raise t.error(f"{sql_text(node)}: bitwise operators take integers, not {a.type} and {b.type}", node)
        if pa.types.is_null(common):
            return const_val(pa.scalar(None, pa.int64()))
        return t.call(kernel, [t.cast(a, common, node), t.cast(b, common, node)], node)

    return fn


def _position(t: Translator, node: exp.Expr) -> Val:
    """``POSITION(sub IN s)``: strpos (only inside a function's arguments, as ``&``)."""
    from lancelot.sql.functions import FUNCTIONS
    from lancelot.sql.special_forms import in_function

    in_function(t, node)
    return FUNCTIONS["strpos"](t, node, [t.value(node.this), t.value(node.args["substr"])])


def _current_date(t: Translator, node: exp.Expr) -> Val:
    from lancelot.sql.temporal import current_date

    return current_date(t, node, [])


HANDLERS: dict[type[exp.Expr], Callable[[Translator, exp.Expr], Val]] = {
    exp.BitwiseLeftShift: _bitwise("shift_left", True),
    exp.BitwiseRightShift: _bitwise("shift_right", True),
    exp.BitwiseAnd: _bitwise("bit_wise_and", False),
    exp.BitwiseOr: _bitwise("bit_wise_or", False),
    exp.StrPosition: _position,
    exp.CurrentDate: _current_date,
    **dict.fromkeys(COMPARISONS, compare_op),
    **dict.fromkeys(ARITHMETIC, arith_op),
    exp.And: _logical,
    exp.Or: _logical,
    exp.Not: _not,
    exp.Is: _is,
    exp.NullSafeEQ: distinct_op,
    exp.NullSafeNEQ: distinct_op,
    exp.Between: between_op,
    exp.Neg: neg_op,
    exp.Cast: cast_op,
    exp.TryCast: try_cast_op,
    exp.DPipe: dpipe_op,
    exp.In: in_op,
    exp.Like: like_op,
    exp.ILike: like_op,
    exp.Escape: escape_op,
    exp.Case: case_op,
    exp.Substring: substring_op,
    exp.Trim: trim_op,
    exp.Extract: extract_op,
    exp.Ceil: rounding_op("ceil"),
    exp.Interval: lambda t, node: interval_op(t, node),
    exp.Floor: rounding_op("floor"),
}
