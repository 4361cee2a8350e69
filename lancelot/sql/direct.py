"""Evaluating a translated expression over a table by calling its kernels directly, without an Acero plan.

An Acero plan (table source, project) costs a fixed amount per evaluation, which a streamed query pays per
batch.  The expressions lancelot/sql builds are calls of Arrow functions (and lancelot's UDFs) on columns and
constants: ``direct(expr)`` walks the expression's tree once (lancelot/sql/expression_tree.py) and gives a
function that calls the same kernels on a table's columns, or None for a tree it does not know how to run (a
nested field reference, a call whose options it cannot rebuild, a constant alone): those go through Acero.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lancelot.sql.expression_tree import Call, Field, Literal, Node, expression_tree

Evaluator = Callable[[pa.Table], Any]
_CACHE: dict[int, tuple[pc.Expression, Evaluator | None]] = {}
_CAST_FLAGS = (
    "allow_int_overflow",
    "allow_time_truncate",
    "allow_time_overflow",
    "allow_decimal_truncate",
    "allow_float_truncate",
    "allow_invalid_utf8",
)


def direct(expr: pc.Expression) -> Evaluator | None:
    """A function computing ``expr`` over a table's rows (a ChunkedArray), or None (use Acero); remembered per
    expression object."""
    hit = _CACHE.get(id(expr))
    if hit is not None and hit[0] is expr:
        return hit[1]
    try:
        tree = expression_tree(expr)
        fn = _compile(tree) if isinstance(tree, Call) else None
    except (ValueError, IndexError, KeyError, TypeError, pa.ArrowException):
        fn = None
    if len(_CACHE) >= 256:
        _CACHE.clear()
    _CACHE[id(expr)] = (expr, fn)
    return fn


def _compile(node: Node) -> Evaluator | None:
    if isinstance(node, Literal):
        value = node.value
        return lambda t: value
    if isinstance(node, Field):
        if len(node.path) != 1:
            return None
        name = node.path[0]
        return lambda t: t.column(name)
    options = _options(node)
    if options is False:
        return None
    args = [_compile(a) for a in node.args]
    if any(a is None for a in args):
        return None
    function = node.function
    return lambda t: pc.call_function(function, [a(t) for a in args], options)  # type: ignore[misc]


def _options(node: Call) -> pc.FunctionOptions | None | bool:
    """The call's options rebuilt (None: it has none; False: they cannot be)."""
    o = node.options
    if o is None:
        return None
    if node.function == "cast" and o.get("_type_name") == b"CastOptions" and isinstance(o.get("to_type"), pa.DataType):
        if set(o) - {"to_type", "_type_name", *_CAST_FLAGS}:
            return False
        return pc.CastOptions(o["to_type"], **{k: bool(o[k]) for k in _CAST_FLAGS if k in o})
    return False
