"""Struct values in SQL (DataFusion's names): ``named_struct('a', x, 'b', y)``, ``struct(x, y)`` (fields ``c0``,
``c1``, ...) and ``get_field(st, 'a')``.  A struct's field is read with ``st['a']`` or ``st.a`` too (the translator's
brackets and column paths).  DataFusion's struct fields are all nullable, whatever their values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.values import Val, const_val
from lancelot.util.types import is_string_like

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator


def _make(t: Translator, node: exp.Expr, names: list[str], values: list[Val]) -> Val:
    if not values:
        raise t.error(f"{node.name} needs at least one field", node)
    options = pc.MakeStructOptions(names, field_nullability=[True] * len(names))
    consts = [v.const for v in values]
    if all(c is not None for c in consts):  # (Arrow's kernel takes no scalars of nested types)
        fields = [pa.field(n, v.type) for n, v in zip(names, values, strict=True)]
        row = {n: c.as_py() for n, c in zip(names, consts, strict=True) if c is not None}
        return const_val(pa.scalar(row, pa.struct(fields)))
    return t.call("make_struct", values, node, options)


def named_struct(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """``named_struct(name1, value1, ...)``: each name a non-empty string literal."""
    if len(args) % 2:
        raise t.error(f"named_struct requires an even number of arguments, got {len(args)} instead", node)
    names = []
    for k, v in enumerate(args[::2]):
        if v.const is None or not is_string_like(v.type) or not v.const.is_valid or not v.const.as_py():
            raise t.error(f"named_struct requires {2 * k}-th (0-indexed) field name as non-empty constant string", node)
        names.append(str(v.const.as_py()))
    return _make(t, node, names, args[1::2])


def struct(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """``struct(value1, ...)``: fields named ``c0``, ``c1``, ..."""
    return _make(t, node, [f"c{k}" for k in range(len(args))], args)


def get_field(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """``get_field(st, 'name')``: a struct's field."""
    if len(args) != 2:
        raise t.error(f"get_field takes 2 arguments, not {len(args)}", node)
    base, name = args
    if name.const is None or not is_string_like(name.type) or not name.const.is_valid:
        raise t.error("the field name of get_field must be a string literal", node)
    if not pa.types.is_struct(base.type):
        raise t.error(f"get_field needs a struct, not {base.type}", node)
    return t.struct_field(base, str(name.const.as_py()), node)


STRUCT_FUNCTIONS: dict[str, Callable[[Translator, exp.Expr, list[Val]], Val]] = {
    "named_struct": named_struct,
    "struct": struct,
    "get_field": get_field,
}
