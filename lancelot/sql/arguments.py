"""What the SQL functions (lancelot/sql/functions.py, numeric.py, string_functions.py) ask of their
arguments: constants where pyarrow takes options (a literal NULL makes the call NULL), text, one
common type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
from sqlglot import exp

from lancelot.sql.types import comparison_common
from lancelot.util.types import is_string_like

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator
    from lancelot.sql.values import Val


def arity(t: Translator, node: exp.Expr, args: list[Val], n: int) -> None:
    """The error a call of ``node`` with other than ``n`` arguments raises."""
    if len(args) != n:
        raise t.error(f"{node.name} takes {n} argument{'s' if n != 1 else ''}, not {len(args)}", node)


def string_arg(t: Translator, node: exp.Expr, args: list[Val], n: int) -> Val:
    """The first of a string function's ``n`` arguments, as a string (the count checked)."""
    arity(t, node, args, n)
    return string_operand(t, args[0], node)


class NullArgument(Exception):
    """A literal NULL where a function takes a constant: the call's result is NULL."""


def literal_str(t: Translator, v: Val, node: exp.Expr, what: str) -> str:
    if v.const is not None and not v.const.is_valid:
        raise NullArgument
    if v.const is None or not is_string_like(v.type):
        raise t.error(f"the {what} must be a string literal", node)
    s: str = v.const.as_py()
    return s


def literal_int(t: Translator, v: Val, node: exp.Expr, what: str) -> int:
    if v.const is not None and not v.const.is_valid:
        raise NullArgument
    if v.const is None or not pa.types.is_integer(v.type):
        raise t.error(f"the {what} must be an integer literal", node)
    i: int = v.const.as_py()
    return i


def string_operand(t: Translator, v: Val, node: exp.Expr) -> Val:
    if pa.types.is_dictionary(v.type):
        v = t.cast(v, v.type.value_type, node)
    if pa.types.is_string_view(v.type):  # few Arrow kernels take views
        v = t.cast(v, pa.utf8(), node)
    if pa.types.is_null(v.type):
        v = t.cast(v, pa.utf8(), node)
    if not is_string_like(v.type):
        raise t.error(f"expected a string, not {v.type}", node)
    return v


def as_text(t: Translator, v: Val, node: exp.Expr) -> Val:
    """``v`` as text for the string functions DataFusion coerces any argument for (lpad, left,
    length, reverse, translate...): a number, boolean or time as its text."""
    if is_string_like(v.type) or pa.types.is_null(v.type) or pa.types.is_dictionary(v.type):
        return string_operand(t, v, node)
    return t.cast(v, pa.utf8(), node)


def as_common(t: Translator, node: exp.Expr, args: list[Val], name: str) -> list[Val]:
    """``args`` cast to their common type (comparison rules), for functions of many arguments."""
    if not args:
        raise t.error(f"{name} needs arguments", node)
    common = args[0].type
    for a in args[1:]:
        c = comparison_common(common, a.type)
        if c is None:
            raise t.error(f"{name} of {common} and {a.type}", node)
        common = c
    return [t.cast(a, common, node) for a in args]
