"""Whether a projected SQL expression may be null, as DataFusion's ``Expr::nullable`` answers it:
the nullability pylance gives each computed column of a scan's schema.

A constant (``1 + 1``, ``abs(-1)``: DataFusion folds them first) is null only when its value is;
a column as its field (a struct field also when its parent may be null; ``_rowid`` may be);
``IS [NOT] NULL / TRUE / FALSE`` never are; operators (arithmetic, comparisons, ``IS [NOT]
DISTINCT FROM``, ``AND``, ``NOT``, ``LIKE``, ``IN``, ``BETWEEN``, ``||``, ``CAST``) are when an
operand may be; ``coalesce`` / ``nvl`` when every argument may be, ``nvl2`` when either value may
be; any other function, ``TRY_CAST`` and ``CASE`` may always be.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
from sqlglot import exp

from lancelot.sql.values import ARITHMETIC, COMPARISONS, column_parts, is_literal, unparen

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator

STRICT_OPERATORS = (
    *COMPARISONS,
    *ARITHMETIC,
    exp.And,
    exp.Or,
    exp.Not,
    exp.Neg,
    exp.DPipe,
    exp.Like,
    exp.ILike,
    exp.Escape,
    exp.In,
    exp.Between,
    exp.Cast,
    exp.NullSafeEQ,
    exp.NullSafeNEQ,
)


def nullable(t: Translator, node: exp.Expr) -> bool:
    """Whether ``node`` (translated by ``t``) may be null."""
    node = unparen(node)
    v = t.values.get(id(node))
    if v is not None and (v.failed or v.const is not None):
        return v.const is not None and not v.const.is_valid
    if is_literal(node):
        return isinstance(node, exp.Null)
    parts = column_parts(node)
    if parts is not None:
        return _field_nullable(t.schema, [p for p, _ in parts])
    if isinstance(node, exp.TryCast):
        return True
    if isinstance(node, exp.Is):
        return False
    if isinstance(node, exp.Not) and isinstance(unparen(node.this), exp.Is):
        return False
    if isinstance(node, STRICT_OPERATORS):
        children = [node.this, node.args.get("expression"), node.args.get("low"), node.args.get("high")]
        children += node.expressions if isinstance(node, exp.In) else []
        return any(nullable(t, c) for c in children if isinstance(c, exp.Expr) and not isinstance(c, exp.DataType))
    if isinstance(node, exp.Anonymous) and node.name.lower() in ("coalesce", "nvl", "ifnull"):
        return all(nullable(t, a) for a in node.expressions)
    if isinstance(node, exp.Anonymous) and node.name.lower() == "nvl2" and len(node.expressions) == 3:
        return any(nullable(t, a) for a in node.expressions[1:])
    return True


def _field_nullable(schema: pa.Schema, path: list[str]) -> bool:
    """A column path's nullability (any field along it), True for names not in the schema."""
    names = {n.lower(): n for n in schema.names}
    top = path[0] if path[0] in schema.names else names.get(path[0].lower())
    if top is None:
        return True
    f = schema.field(top)
    for p in path[1:]:
        if f.nullable or not pa.types.is_struct(f.type) or f.type.get_field_index(p) < 0:
            return True
        f = f.type.field(p)
    return bool(f.nullable)
