"""SQL's special syntax that lance's planner hands to DataFusion only inside a function's arguments:
``CASE``, ``SUBSTRING``, ``TRIM``, ``EXTRACT``, ``CEIL`` / ``FLOOR``, ``INTERVAL``.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.translate import Translator, Val, _const, sql_text
from lancelot.sql.types import comparison_common, is_numeric
from lancelot.util.types import is_string_like


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


def total_equal(t: Translator, subject: Val, value: Val, node: exp.Expr) -> Val:
    """``CASE x WHEN v`` and ``nullif``: arrow-rs's equality, floats in IEEE total order (-0 is not
    0; a NaN matches a NaN of its sign)."""
    from lancelot.sql.udfs import sign_bit

    eq = t.compare("equal", subject, value, node)
    common = comparison_common(subject.type, value.type)
    if common is None or not pa.types.is_floating(common) or eq.const is not None:
        return eq
    a, b = t.cast(subject, common, node), t.cast(value, common, node)
    same_sign = t.call("equal", [t.call(sign_bit(common), [a], node), t.call(sign_bit(common), [b], node)], node)
    both_nan = t.call("and_kleene", [t.call("is_nan", [a], node), t.call("is_nan", [b], node)], node)
    plain = t.call("and_kleene", [t.call("equal", [a, b], node), same_sign], node)
    return t.call("or_kleene", [plain, t.call("and_kleene", [both_nan, same_sign], node)], node)


def _case(t: Translator, node: exp.Expr) -> Val:
    """CASE (only inside a function's arguments): the value of the first WHEN that is true (a null
    is not), else ELSE or null; the branches in one type."""
    _in_function(t, node)
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
        return _const(pa.scalar(None))
    view = pa.types.is_string_view(common)  # Arrow's case_when takes no views: computed as strings
    vals = [t.cast(v, pa.utf8() if view else common, node) for v in vals]
    out = _lazy(t, node, conds, vals)
    if out is None:  # constants (or columns lancelot computes itself): Arrow's case_when of all branches
        names = [f"c{i}" for i in range(len(conds))]
        struct = t.call("make_struct", conds, node, pc.MakeStructOptions(names))
        out = t.call("case_when", [struct, *vals], node)
    return t.cast(out, common, node) if view else out


#: kernels that cannot fail: a CASE made only of these runs eagerly (Arrow's case_when), as fast
_INFALLIBLE = {
    *("equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "and", "or", "xor"),
    *("and_kleene", "or_kleene", "invert", "is_null", "is_valid", "is_nan", "if_else", "coalesce"),
    *("add", "subtract", "multiply", "negate", "abs", "sign", "max_element_wise", "min_element_wise"),
    *("utf8_upper", "utf8_lower", "utf8_length", "binary_join_element_wise", "make_struct", "case_when"),
}


def _lazy(t: Translator, node: exp.Expr, conds: list[Val], vals: list[Val]) -> Val | None:
    """The CASE as DataFusion runs it, a branch only on the rows that take it (udfs.lazy_case), over
    the dataset columns it reads; None when no branch can fail, it reads no column, or one the
    schema does not hold."""
    from lancelot.sql.expression_tree import Call, Node, expression_tree, fields
    from lancelot.sql.udfs import lazy_case

    if all(v.const is not None for v in (*conds, *vals)):
        return None

    def calls(n: Node) -> set[str]:
        return {n.function}.union(*(calls(a) for a in n.args)) if isinstance(n, Call) else set()

    names: list[str] = []
    try:
        trees = [expression_tree(v.expr) for v in (*conds, *vals)]
    except ValueError:
        return None
    if set().union(*(calls(tree) for tree in trees)) <= _INFALLIBLE:
        return None
    for tree in trees:
        for path in fields(tree):
            if path[0] not in names:
                names.append(path[0])
    if not names or any(name not in t.schema.names for name in names):
        return None
    inputs = {name: t.schema.field(name).type for name in names}
    udf = lazy_case(inputs, [c.expr for c in conds], [v.expr for v in vals], vals[0].type)
    return t.call(udf, [Val(pc.field(name), inputs[name]) for name in names], node)


def lazy_coalesce(t: Translator, node: exp.Expr, vals: list[Val]) -> Val | None:
    """coalesce / nvl as DataFusion runs them, as a CASE: an argument only on the rows no earlier
    one covers (``coalesce(x, 1 / y)`` fails only where x is null and y zero); None when no
    argument can fail (then Arrow's coalesce does)."""
    if len(vals) < 2 or pa.types.is_string_view(vals[0].type):
        return None
    conds = [t.call("is_valid", [v], node) for v in vals[:-1]]
    return _lazy(t, node, conds, vals)


def _in_function(t: Translator, node: exp.Expr) -> None:
    """SUBSTRING / TRIM / EXTRACT / CASE: lance's planner hands them to DataFusion only inside a
    function's arguments."""
    if node.find_ancestor(exp.Anonymous) is None:
        raise t.error(f"{type(node).__name__} ({sql_text(node)}) is not supported in lance SQL", node)


def _special_call(t: Translator, node: exp.Expr, name: str, args: list[Val]) -> Val:
    """``name(args)`` as the function call the special syntax stands for."""
    from lancelot.sql.functions import _NULL_RESULT, FUNCTIONS, _NullArgument
    from lancelot.sql.string_functions import STRING_FUNCTIONS
    from lancelot.sql.temporal import TEMPORAL_FUNCTIONS

    fn = {**FUNCTIONS, **STRING_FUNCTIONS, **TEMPORAL_FUNCTIONS}[name]
    try:
        return fn(t, node, args)
    except _NullArgument:
        return _const(pa.scalar(None, _NULL_RESULT.get(name, pa.utf8())))


def _substring(t: Translator, node: exp.Expr) -> Val:
    _in_function(t, node)
    parts = [node.this, node.args["start"], node.args.get("length")]
    return _special_call(t, node, "substr", [t.value(p) for p in parts if p is not None])


def _trim(t: Translator, node: exp.Expr) -> Val:
    _in_function(t, node)
    name = {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(str(node.args.get("position") or "").upper(), "btrim")
    parts = [node.this, node.args.get("expression")]
    return _special_call(t, node, name, [t.value(p) for p in parts if p is not None])


def _extract(t: Translator, node: exp.Expr) -> Val:
    _in_function(t, node)
    part = _const(pa.scalar(node.this.name.lower()))
    return _special_call(t, node, "date_part", [part, t.value(node.expression)])


def _rounding(kernel: str) -> Callable[[Translator, exp.Expr], Val]:
    """CEIL / FLOOR (only inside a function's arguments): a float keeps its type, a decimal too,
    an integer becomes a double."""

    def fn(t: Translator, node: exp.Expr) -> Val:
        _in_function(t, node)
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


def _interval(t: Translator, node: exp.Expr) -> Val:
    from lancelot.sql.temporal import interval

    return interval(t, node)
