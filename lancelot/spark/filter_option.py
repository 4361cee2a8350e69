"""The ``filter`` read option: a SQL predicate the source itself applies, with or without Spark's pushdown.

``spark.read.format("lance").option("filter", "id = 12345").load(p)`` is the DataFrame of the rows pylance's
``to_table(filter="id = 12345")`` returns.  The predicate is part of the DataFrame's definition (its options), so it
holds for every query over it: unlike a pushed-down filter, Spark's reuse of a planned read (docs/SPARK.md, correctness)
cannot apply it to the wrong query.  Zone maps drop the row ranges it rules out, and tasks keep only the rows that pass
(lancelot/spark/row_filter.py), so a point lookup reads a zone, not the dataset.

Accepted: a conjunction (``AND``) of ``column <op> literal`` (=, !=, <>, <, <=, >, >=, either side), ``column [NOT] IN
(literals)``, ``column IS [NOT] NULL``, ``column BETWEEN a AND b``, ``NOT (column = literal)`` and ``column LIKE
'prefix%'``, on integer, date, boolean and string columns.  Anything else is refused on the driver, naming the part
(apply it with ``df.filter``)."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lancelot.errors import LanceError

if TYPE_CHECKING:
    from lancelot.zonemap_pruning import Filter

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}


class FilterOptionError(LanceError, ValueError):
    """The ``filter`` option holds a predicate the source cannot apply itself."""


def _literal(node: Any, sql: str) -> object:
    from sqlglot import expressions as exp

    if isinstance(node, exp.Paren):
        return _literal(node.this, sql)
    if isinstance(node, exp.Neg):
        v = _literal(node.this, sql)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Literal):
        if node.is_string:
            return str(node.this)
        text = str(node.this)
        try:
            return int(text)
        except ValueError:
            pass
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.to.this == exp.DataType.Type.DATE:
        try:
            return dt.date.fromisoformat(str(node.this.this))
        except ValueError:
            pass
    raise FilterOptionError(f"option filter {sql!r}: {node.sql()!r} is not an integer, string, boolean or date literal")


def _column(node: Any) -> tuple[str, ...] | None:
    from sqlglot import expressions as exp

    if isinstance(node, exp.Column):
        return tuple(p.name for p in node.parts)
    return None


def _conjuncts(node: Any) -> list[Any]:
    from sqlglot import expressions as exp

    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def _one(node: Any, sql: str) -> list[tuple[tuple[str, ...], str, object]]:
    """One conjunct as (column path, op, value) tuples (column names as written)."""
    from sqlglot import expressions as exp

    ops = {exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
    negated = isinstance(node, exp.Not)
    inner = node.this.this if negated and isinstance(node.this, exp.Paren) else node.this if negated else node
    kind = type(inner)
    if kind in ops:
        op = ops[kind]
        col, other = _column(inner.this), inner.expression
        if col is None:
            col, other, op = _column(inner.expression), inner.this, _FLIP[op]
        if col is not None and (not negated or op == "="):
            value = _literal(other, sql)
            if value is not None:
                return [(col, "!=" if negated else op, value)]
    elif isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null) and _column(inner.this):
        return [(_column(inner.this) or (), "is_not_null" if negated else "is_null", None)]
    elif isinstance(inner, exp.In) and not negated and _column(inner.this) and inner.expressions:
        values = [_literal(v, sql) for v in inner.expressions]
        return [(_column(inner.this) or (), "in", values)]
    elif isinstance(inner, exp.Between) and not negated and _column(inner.this):
        col = _column(inner.this) or ()
        return [(col, ">=", _literal(inner.args["low"], sql)), (col, "<=", _literal(inner.args["high"], sql))]
    elif isinstance(inner, exp.Like) and not negated and _column(inner.this):
        pattern = _literal(inner.expression, sql)
        if isinstance(pattern, str) and pattern.endswith("%") and not set(pattern[:-1]) & set("%_\\"):
            return [(_column(inner.this) or (), "starts_with", pattern[:-1])]
    raise FilterOptionError(
        f"option filter {sql!r}: the source cannot apply {node.sql()!r} itself (apply it with df.filter)"
    )


def parse_filter(sql: str, schema: pa.Schema) -> list[Filter]:
    """The ``filter`` option as zone-map filter tuples on ``schema``'s columns (names resolved as Spark does)."""
    import sqlglot
    from sqlglot.errors import ParseError

    from lancelot.spark.types import resolve_column

    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except ParseError as e:
        raise FilterOptionError(f"option filter {sql!r} is not a SQL predicate: {str(e).splitlines()[0]}") from None
    out: list[Filter] = []
    for node in _conjuncts(tree):
        for path, op, value in _one(node, sql):
            name = resolve_column(schema, path[0]) if len(path) == 1 else None
            if name is None:
                raise FilterOptionError(
                    f"option filter {sql!r}: column {'.'.join(path)!r} is not a top-level column of the data "
                    f"(columns: {schema.names})"
                )
            out.append(((name,), op, value) if op not in ("is_null", "is_not_null") else ((name,), op))
    return out
