"""SQL filters and expressions, as pylance accepts them, turned into ``pyarrow.compute`` expressions.

``parse_filter("x > 1 AND s LIKE 'a%'", schema)`` gives the predicate a scan applies;
``parse_expression("id * 2", schema)`` a value (projections, update values, new columns).  Both
read pylance's dialect (DataFusion SQL: backtick-quoted names, double quotes for strings, ``==``)
with sqlglot, and type the result as pylance does (see lancelot/sql/translate.py).  sqlglot is
imported on the first parse, not with this package.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from lancelot.sql.errors import SqlError

if TYPE_CHECKING:
    from lancelot.sql.values import Val

__all__ = ["SqlError", "parse_expression", "parse_filter", "parse_projection", "typed_expression"]


def typed_expression(sql: str, schema: pa.Schema, *, filter: bool) -> tuple[Val, list[tuple[str, ...]]]:
    """The typed expression of ``sql`` and the column paths it reads."""
    from lancelot.sql.parse import parse_sql
    from lancelot.sql.translate import Translator

    what = "filter" if filter else "expression"
    tree = parse_sql(sql, what)
    t = Translator(sql, schema, what)
    t.resolve(tree)
    if filter:
        t.mark_boolean(tree)
    v = t.value(tree)
    return v, t.columns


def parse_filter(sql: str, schema: pa.Schema) -> pc.Expression:
    """The boolean predicate of a SQL filter (``SqlError`` for bad syntax, an unknown column, a type
    mismatch, or an expression that is not a condition)."""
    if not isinstance(sql, str):
        raise TypeError(f"a SQL filter must be a str, not {type(sql).__name__}")
    return _parse_filter(sql, schema)


@functools.lru_cache(maxsize=256)
def _parse_filter(sql: str, schema: pa.Schema) -> pc.Expression:
    """parse_filter, remembered: the same filter on the same schema is parsed once (scans repeat)."""
    from lancelot.sql.expression_tree import mark_from_sql

    v, _ = typed_expression(sql, schema, filter=True)
    if pa.types.is_null(v.type) or not pa.types.is_boolean(v.type):
        raise SqlError(f"the SQL filter {sql!r} does not return a boolean (it gives {v.type})")
    return mark_from_sql(v.expr)  # (it may name the row-id columns, which a pyarrow Expression may not)


def parse_expression(sql: str, schema: pa.Schema) -> pc.Expression:
    """The value expression of a SQL expression, typed as pylance types it (``i32_col * 2`` is int32:
    the literal takes the column's type; ``i32_col + i64_col`` is int64)."""
    return parse_projection(sql, schema)[0]


def parse_projection(sql: str, schema: pa.Schema) -> tuple[pc.Expression, bool]:
    """``parse_expression`` and whether its value may be null (lancelot/sql/nullability.py)."""
    name = sql.strip()
    if name in schema.names:  # pylance: a bare column name is that column, whatever its spelling
        return pc.field(name), schema.field(name).nullable
    return _parse_projection(sql, schema)


@functools.lru_cache(maxsize=256)
def _parse_projection(sql: str, schema: pa.Schema) -> tuple[pc.Expression, bool]:
    """parse_projection, remembered: the same expression on the same schema is translated once (updates repeat)."""
    from lancelot.sql.nullability import nullable
    from lancelot.sql.parse import parse_sql
    from lancelot.sql.translate import Translator

    tree = parse_sql(sql, "expression")
    t = Translator(sql, schema, "expression")
    t.resolve(tree)
    return t.value(tree).expr, nullable(t, tree)
