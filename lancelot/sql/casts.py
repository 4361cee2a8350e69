"""SQL ``CAST`` / ``::`` / ``TRY_CAST`` and typed literals (``DATE '...'``, ``TIMESTAMP '...'``), with the
types lance's planner and DataFusion accept.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.errors import SqlError
from lancelot.sql.types import arrow_type
from lancelot.sql.values import Val, const_val, sql_text
from lancelot.util.types import is_string_like

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator


def _cast_type(t: Translator, node: exp.Expr) -> pa.DataType:
    dt = node.args["to"]
    to = arrow_type(dt)
    # lance's own planner knows no VARCHAR; DataFusion's, which plans function arguments, does
    in_function = node.find_ancestor(exp.Anonymous) is not None
    if to is None or (dt.this in (exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR) and not in_function):
        raise t.error(f"unsupported type {sql_text(dt)} in CAST", node)
    if in_function and pa.types.is_timestamp(to):  # DataFusion's TIMESTAMP is in nanoseconds
        return pa.timestamp("ns", to.tz)
    return to


def try_cast_op(t: Translator, node: exp.Expr) -> Val:
    """TRY_CAST: the cast, null where a value does not convert."""
    from lancelot.sql.udfs import try_cast

    to = _cast_type(t, node)
    x = t.value(node.this)
    # a pair of types with no cast is refused, as DataFusion's planner refuses it (text is parsed)
    plan = _cast_value(t, Val(pc.field("x"), x.type), to, node).expr
    if x.const is not None:
        try:
            return _cast_value(t, x, to, node)
        except SqlError:
            return const_val(pa.scalar(None, to))

    def convert(arr: pa.Array) -> pa.Array:
        import pyarrow.dataset as pds

        table = pds.dataset(pa.table({"x": arr})).to_table(columns={"v": plan})
        return table.column("v").combine_chunks()

    return t.call(try_cast(x.type, to, convert), [x], node)


def cast_op(t: Translator, node: exp.Expr) -> Val:
    return _cast_value(t, t.value(node.this), _cast_type(t, node), node)


def _cast_value(t: Translator, x: Val, to: pa.DataType, node: exp.Expr) -> Val:
    if x.const is not None and is_string_like(x.type) and (pa.types.is_timestamp(to) or pa.types.is_date(to)):
        return const_val(temporal_literal(t, x.const.as_py(), to, node))
    return t.cast(x, to, node)


def temporal_literal(t: Translator, text: str, to: pa.DataType, node: exp.Expr) -> pa.Scalar:
    """``DATE '...'`` / ``TIMESTAMP '...'`` literals: ISO dates, a space or ``T`` before the time."""
    try:
        if pa.types.is_date(to):
            return pa.scalar(_dt.date.fromisoformat(text.strip()), to)
        value = _dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise t.error(f"cannot read {text!r} as a {to}", node) from None
    if value.tzinfo is not None:
        value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return pa.scalar(value, pa.timestamp("us")).cast(to)
