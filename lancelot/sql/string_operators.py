"""SQL string operators: ``LIKE`` / ``ILIKE`` (with ``ESCAPE``) and ``||``, in DataFusion's types."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.values import Val, const_val
from lancelot.util.types import is_string_like

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator


def like(t: Translator, node: exp.Expr, ignore_case: bool, escape: exp.Expr | None = None) -> Val:
    if escape is not None and not (isinstance(escape, exp.Literal) and escape.this == "\\"):
        raise t.error("LIKE does not support an escape character other than the backslash (\\)", escape)
    x = t.value(node.this)
    pattern = t.value(node.expression)
    if pattern.const is not None and pa.types.is_null(pattern.type):
        pattern = const_val(pa.scalar(None, pa.utf8()))  # LIKE NULL: unknown
    if pattern.const is None or not is_string_like(pattern.type):
        raise t.error("the pattern of LIKE must be a string literal", node.expression)
    if pa.types.is_dictionary(x.type):
        x = t.cast(x, x.type.value_type, node)
    if not is_string_like(x.type) and not pa.types.is_null(x.type):
        raise t.error(f"LIKE applies to strings, not {x.type}", node)
    p = pattern.const.as_py()
    if p is None:
        return const_val(pa.scalar(None, pa.bool_()))
    out = t.call("match_like", [x], node, pc.MatchSubstringOptions(p, ignore_case=ignore_case))
    if node.args.get("negate"):
        out = t.call("invert", [out], node)
    return out


def dpipe_op(t: Translator, node: exp.Expr) -> Val:
    a, b = t.value(node.this), t.value(node.expression)
    if not any(is_string_like(v.type) for v in (a, b)):
        raise t.error(f"cannot concatenate {a.type} || {b.type}: neither is text", node)
    large = pa.types.is_large_string(a.type) or pa.types.is_large_string(b.type)
    to = pa.large_utf8() if large else pa.utf8()  # DataFusion keeps a large_string operand's type
    view = pa.types.is_string_view(a.type) or pa.types.is_string_view(b.type)  # or a view's
    a, b = t.cast(a, to, node), t.cast(b, to, node)
    out = t.call("binary_join_element_wise", [a, b, const_val(pa.scalar("", to))], node)
    return t.cast(out, pa.string_view(), node) if view else out


def like_op(t: Translator, node: exp.Expr) -> Val:
    return like(t, node, isinstance(node, exp.ILike))


def escape_op(t: Translator, node: exp.Expr) -> Val:
    inner = node.this
    if not isinstance(inner, exp.Like | exp.ILike):
        raise t.error("ESCAPE applies to LIKE", node)
    return like(t, inner, isinstance(inner, exp.ILike), node.expression)
