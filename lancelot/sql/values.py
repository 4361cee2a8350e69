"""What the translator (lancelot/sql/translate.py) and its operator / function modules share: the
translated node ``Val`` and the syntax helpers they read nodes with.

It sits below them all, so the handler modules need not import the translator: each handler is
given the ``Translator`` and recurses through ``t.value(...)`` (the type is imported for the checker
only).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp


@dataclass(frozen=True)
class Val:
    """A translated node: its expression, its Arrow type, and its value when known at parse time."""

    expr: pc.Expression
    type: pa.DataType
    const: pa.Scalar | None = None
    #: a float whose NaN has its sign bit set (negation flips it): below every number in total order
    nan_low: bool = False
    #: constants only, whose computation fails (``1 / 0``): left for the scan to raise, as DataFusion's
    #: constant folding leaves what it cannot compute; never null (``(1 / 0) IS NULL`` is false)
    failed: bool = False


def const_val(s: pa.Scalar) -> Val:
    return Val(pc.scalar(s), s.type, s)


COMPARISONS: dict[type[exp.Expr], str] = {
    exp.EQ: "equal",
    exp.NEQ: "not_equal",
    exp.GT: "greater",
    exp.GTE: "greater_equal",
    exp.LT: "less",
    exp.LTE: "less_equal",
}
ARITHMETIC: dict[type[exp.Expr], str] = {
    exp.Add: "add",
    exp.Sub: "subtract",
    exp.Mul: "multiply",
    exp.Div: "divide",
    exp.Mod: "mod",
}
#: DataFusion's ``BinaryExpr`` operators (what lance's literal resolution looks through)
BINARY = (
    *COMPARISONS,
    *ARITHMETIC,
    exp.And,
    exp.Or,
    exp.DPipe,
    exp.NullSafeEQ,
    exp.NullSafeNEQ,
    exp.BitwiseLeftShift,
    exp.BitwiseRightShift,
)


def sql_text(node: exp.Expr) -> str:
    """``node`` written back as SQL, for messages (sqlglot cannot write every node, e.g. ``x''``)."""
    try:
        return str(node.sql())
    except (ValueError, TypeError):
        return type(node).__name__


def unparen(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def is_literal(node: exp.Expr) -> bool:
    """A literal as DataFusion's parser makes one: numbers (a minus sign folded in), strings,
    booleans, NULL, hex strings and arrays of those; not ``DATE '...'`` nor casts."""
    node = unparen(node)
    if isinstance(node, exp.Literal | exp.Boolean | exp.Null | exp.HexString):
        return True
    if isinstance(node, exp.Neg):
        inner = node.this
        return isinstance(inner, exp.Literal) and not inner.is_string
    if isinstance(node, exp.Array):
        return all(is_literal(e) for e in node.expressions)
    return False


def column_parts(node: exp.Expr) -> list[tuple[str, bool]] | None:
    """``[(name, quoted), ...]`` when ``node`` names a column or a field inside struct columns
    (``a``, ``s.a.b``, ``s['a']``), else None."""
    if isinstance(node, exp.Column):
        if not isinstance(node.this, exp.Identifier):
            return None
        return [(p.name, bool(p.args.get("quoted"))) for p in node.parts]
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Identifier):
        head = column_parts(node.this)
        if head is None:
            return None
        return [*head, (node.expression.name, True)]
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1:
        key = node.expressions[0]
        if isinstance(key, exp.Literal) and key.is_string:
            head = column_parts(node.this)
            return None if head is None else [*head, (key.name, True)]
    return None
