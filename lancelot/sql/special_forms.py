"""SQL's special syntax that lance's planner hands to DataFusion only inside a function's arguments:
``CASE``, ``SUBSTRING``, ``TRIM``, ``EXTRACT``, ``CEIL`` / ``FLOOR``, ``INTERVAL``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.arguments import NullArgument
from lancelot.sql.conditionals import lazy_branches, total_equal
from lancelot.sql.types import comparison_common, is_numeric
from lancelot.sql.values import Val, const_val, sql_text
from lancelot.util.types import is_string_like

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator


def _condition(t: Translator, v: Val, node: exp.Expr) -> Val:
    """A WHEN condition as a boolean: numbers are true when not zero (DataFusion casts them)."""
    if pa.types.is_boolean(v.type):
        return v
    return t.cast(v, pa.bool_(), node)


def _common(t: Translator, vals: list[Val], node: exp.Expr) -> pa.DataType | None:
    """The branches' common type: text when any branch is text and the rest numbers (a number reads
    as its digits); else as compared (text with a date: a date; text with a boolean: none)."""
    types = [v.type for v in vals if not pa.types.is_null(v.type)]
    if not types:
        return None
    text = [x for x in types if is_string_like(x)]
    if text and all(is_string_like(x) or is_numeric(x) for x in types):
        if any(pa.types.is_string_view(x) for x in text):
            return pa.string_view()  # a view with text or numbers: a view
        if len(text) < len(types):
            return pa.large_utf8() if any(pa.types.is_large_string(x) for x in text) else pa.utf8()
    common = types[0]
    for x in types[1:]:
        c = comparison_common(common, x)
        if c is None:
            raise t.error(f"the branches of CASE have no common type ({common} and {x})", node)
        common = c
    return common


def case_op(t: Translator, node: exp.Expr) -> Val:
    """CASE (only inside a function's arguments): the value of the first WHEN that is true (a null
    is not), else ELSE or null; the branches in one type."""
    in_function(t, node)
    operand = node.this
    subject = t.value(operand) if operand is not None else None
    conds: list[Val] = []
    vals: list[Val] = []
    for branch in node.args.get("ifs") or []:
        when = t.value(branch.this)
        if subject is not None:
            when = total_equal(t, subject, when, branch)
        conds.append(_condition(t, when, branch.this))
        vals.append(t.value(branch.args["true"]))
    default = node.args.get("default")
    if default is not None:
        vals.append(t.value(default))
    common = _common(t, vals, node)
    if common is None:
        return const_val(pa.scalar(None))
    view = pa.types.is_string_view(common)  # Arrow's case_when takes no views: computed as strings
    vals = [t.cast(v, pa.utf8() if view else common, node) for v in vals]
    out = lazy_branches(t, node, conds, vals)
    if out is None:  # constants (or columns lancelot computes itself): Arrow's case_when of all branches
        names = [f"c{i}" for i in range(len(conds))]
        struct = t.call("make_struct", conds, node, pc.MakeStructOptions(names))
        out = t.call("case_when", [struct, *vals], node)
    return t.cast(out, common, node) if view else out


def in_function(t: Translator, node: exp.Expr) -> None:
    """SUBSTRING / TRIM / EXTRACT / CASE: lance's planner hands them to DataFusion only inside a
    function's arguments."""
    if node.find_ancestor(exp.Anonymous) is None:
        raise t.error(f"{type(node).__name__} ({sql_text(node)}) is not supported in lance SQL", node)


def _special_call(t: Translator, node: exp.Expr, name: str, args: list[Val]) -> Val:
    """``name(args)`` as the function call the special syntax stands for."""
    from lancelot.sql.functions import FUNCTIONS, NULL_RESULT
    from lancelot.sql.string_functions import STRING_FUNCTIONS
    from lancelot.sql.temporal import TEMPORAL_FUNCTIONS

    fn = {**FUNCTIONS, **STRING_FUNCTIONS, **TEMPORAL_FUNCTIONS}[name]
    try:
        return fn(t, node, args)
    except NullArgument:
        return const_val(pa.scalar(None, NULL_RESULT.get(name, pa.utf8())))


def substring_op(t: Translator, node: exp.Expr) -> Val:
    in_function(t, node)
    parts = [node.this, node.args["start"], node.args.get("length")]
    return _special_call(t, node, "substr", [t.value(p) for p in parts if p is not None])


def trim_op(t: Translator, node: exp.Expr) -> Val:
    in_function(t, node)
    name = {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(str(node.args.get("position") or "").upper(), "btrim")
    parts = [node.this, node.args.get("expression")]
    return _special_call(t, node, name, [t.value(p) for p in parts if p is not None])


def extract_op(t: Translator, node: exp.Expr) -> Val:
    in_function(t, node)
    part = const_val(pa.scalar(node.this.name.lower()))
    return _special_call(t, node, "date_part", [part, t.value(node.expression)])


def rounding_op(kernel: str) -> Callable[[Translator, exp.Expr], Val]:
    """CEIL / FLOOR (only inside a function's arguments): a float keeps its type, a decimal too,
    an integer becomes a double."""

    def fn(t: Translator, node: exp.Expr) -> Val:
        in_function(t, node)
        x = t.value(node.this)
        if (
            pa.types.is_null(x.type)
            or is_numeric(x.type)
            and not (pa.types.is_floating(x.type) or pa.types.is_decimal(x.type))
        ):
            x = t.cast(x, pa.float64(), node)
        if not is_numeric(x.type):
            raise t.error(f"{kernel} does not apply to {x.type}", node)
        d = x.type
        if pa.types.is_decimal(d) and d.precision < 38:  # Arrow wraps on overflow: round wider, fit back
            wide = t.call(kernel, [t.cast(x, pa.decimal128(d.precision + 1, d.scale), node)], node)
            return Val(wide.expr.cast(d), d)
        return t.call(kernel, [x], node)

    return fn


def interval_op(t: Translator, node: exp.Expr) -> Val:
    from lancelot.sql.temporal import interval

    return interval(t, node)
