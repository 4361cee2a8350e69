"""Conditional evaluation as DataFusion does it, shared by CASE (lancelot/sql/special_forms.py) and
the functions (nullif, coalesce, nvl): equality in IEEE total order, and branches computed only on
the rows that take them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.expression_tree import Call, Literal, Node
from lancelot.sql.types import comparison_common
from lancelot.sql.values import Val

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator


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


#: kernels that cannot fail: a CASE made only of these runs eagerly (Arrow's case_when), as fast
_INFALLIBLE = {
    *("equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "and", "or", "xor"),
    *("and_kleene", "or_kleene", "invert", "is_null", "is_valid", "is_nan", "if_else", "coalesce"),
    *("add", "subtract", "multiply", "negate", "abs", "sign", "max_element_wise", "min_element_wise"),
    *("utf8_upper", "utf8_lower", "utf8_length", "binary_join_element_wise", "make_struct", "case_when"),
}


def lazy_branches(t: Translator, node: exp.Expr, conds: list[Val], vals: list[Val]) -> Val | None:
    """The CASE as DataFusion runs it, a branch only on the rows that take it (udfs.lazy_case), over
    the dataset columns it reads; None when no branch can fail, it reads no column, or one the
    schema does not hold."""
    from lancelot.sql.expression_tree import expression_tree, fields
    from lancelot.sql.udfs import lazy_case

    if all(v.const is not None for v in (*conds, *vals)):
        return None

    def fallible(n: Node) -> bool:
        if not isinstance(n, Call):
            return False
        if n.function not in _INFALLIBLE and not (n.function == "cast" and _widening(t.schema, n)):
            return True
        return any(fallible(a) for a in n.args)

    names: list[str] = []
    try:
        trees = [expression_tree(v.expr) for v in (*conds, *vals)]
    except ValueError:
        return None
    if not any(fallible(tree) for tree in trees):
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


_STRINGS = (pa.string(), pa.large_string(), pa.string_view())


def _widening(schema: pa.Schema, cast: Call) -> bool:
    """Whether ``cast`` cannot fail whatever its input's values: to the same type, an integer to a wider
    one (or to float64 from 32 bits or fewer, to a decimal with room for its digits), float32 to float64,
    a decimal to one with at least its integer and fraction digits, a number, boolean, date or time to string."""
    to = (cast.options or {}).get("to_type")
    src = _type_of(schema, cast.args[0]) if len(cast.args) == 1 else None
    if not isinstance(to, pa.DataType) or src is None:
        return False
    if src == to:
        return True
    if to in _STRINGS:
        return bool(pa.types.is_primitive(src) or pa.types.is_decimal(src) or src in _STRINGS)
    if pa.types.is_integer(src):
        bits, signed = src.bit_width, pa.types.is_signed_integer(src)
        digits = len(str(2**bits - 1 if not signed else 2 ** (bits - 1)))
        if pa.types.is_integer(to):
            return (
                to.bit_width > bits
                and (pa.types.is_signed_integer(to) or not signed)
                or (to.bit_width == bits and pa.types.is_signed_integer(to) == signed)
            )
        if pa.types.is_decimal(to):
            return bool(to.precision - to.scale >= digits)
        return bool((pa.types.is_float64(to) and bits <= 32) or (pa.types.is_float32(to) and bits <= 16))
    if pa.types.is_float32(src):
        return bool(pa.types.is_float64(to))
    if pa.types.is_decimal(src) and pa.types.is_decimal(to):
        return bool(to.scale >= src.scale and to.precision - to.scale >= src.precision - src.scale)
    return False


def _type_of(schema: pa.Schema, n: Node) -> pa.DataType | None:
    """The type of a field (of ``schema``), a literal or a cast; None for another call."""
    if isinstance(n, Literal):
        return n.value.type
    if isinstance(n, Call):
        to = (n.options or {}).get("to_type") if n.function == "cast" else None
        return to if isinstance(to, pa.DataType) else None
    i = schema.get_field_index(n.path[0])
    typ: pa.DataType | None = schema.field(i).type if i >= 0 else None
    for part in n.path[1:]:
        j = typ.get_field_index(part) if typ is not None and pa.types.is_struct(typ) else -1
        typ = typ.field(j).type if typ is not None and j >= 0 else None
    return typ


def lazy_coalesce(t: Translator, node: exp.Expr, vals: list[Val]) -> Val | None:
    """coalesce / nvl as DataFusion runs them, as a CASE: an argument only on the rows no earlier
    one covers (``coalesce(x, 1 / y)`` fails only where x is null and y zero); None when no
    argument can fail (then Arrow's coalesce does)."""
    if len(vals) < 2 or pa.types.is_string_view(vals[0].type):
        return None
    conds = [t.call("is_valid", [v], node) for v in vals[:-1]]
    return lazy_branches(t, node, conds, vals)
