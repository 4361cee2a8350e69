"""``CASE`` expressions, which lance's planner hands to DataFusion only inside a function's
arguments (a CASE elsewhere is refused, as pylance refuses it): the value of the first WHEN that is
true (a null condition is not), else the ELSE value or null; every branch in one common type."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.translate import Translator, Val, _const, sql_text
from lancelot.sql.types import comparison_common
from lancelot.util.types import is_string_like


def _condition(t: Translator, v: Val, node: exp.Expr) -> Val:
    """A WHEN condition as a boolean: numbers are true when not zero (DataFusion casts them)."""
    if pa.types.is_boolean(v.type):
        return v
    return t.cast(v, pa.bool_(), node)


def _common(t: Translator, vals: list[Val], node: exp.Expr) -> pa.DataType | None:
    """The branches' common type: text when any branch is text (a number reads as its digits)."""
    types = [v.type for v in vals if not pa.types.is_null(v.type)]
    if not types:
        return None
    if any(is_string_like(x) for x in types) and not all(is_string_like(x) for x in types):
        return pa.large_utf8() if any(pa.types.is_large_string(x) for x in types) else pa.utf8()
    common = types[0]
    for x in types[1:]:
        c = comparison_common(common, x)
        if c is None:
            raise t.error(f"the branches of CASE have no common type ({common} and {x})", node)
        common = c
    return common


def case(t: Translator, node: exp.Expr) -> Val:
    if node.find_ancestor(exp.Anonymous) is None:
        raise t.error(f"Case ({sql_text(node)}) is not supported in lance SQL", node)
    operand = node.this
    subject = t.value(operand) if operand is not None else None
    conds: list[Val] = []
    vals: list[Val] = []
    for branch in node.args.get("ifs") or []:
        when = t.value(branch.this)
        if subject is not None:
            when = t.compare("equal", subject, when, branch)
        conds.append(_condition(t, when, branch.this))
        vals.append(t.value(branch.args["true"]))
    default = node.args.get("default")
    if default is not None:
        vals.append(t.value(default))
    common = _common(t, vals, node)
    if common is None:
        return _const(pa.scalar(None))
    vals = [t.cast(v, common, node) for v in vals]
    names = [f"c{i}" for i in range(len(conds))]
    struct = t.call("make_struct", conds, node, pc.MakeStructOptions(names))
    return t.call("case_when", [struct, *vals], node)
