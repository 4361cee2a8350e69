"""Filters on dataset scans: the filter as an Expression (SQL strings parsed by lancelot.sql), the
columns it needs, and the simple conjuncts zone maps can use to skip rows (lancelot/zonemaps.py).

Columns and conjuncts come from the expression's structure (lancelot/sql/expression_tree.py), so a
filter written in SQL and the same filter built with ``pyarrow.compute`` prune alike.  Only
conjuncts of the shape ``column op literal`` joined by AND go to zone maps (anything else prunes
nothing); the filter itself is always applied by pyarrow afterwards.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.memo import IdentityMemo
from lancelot.dataset.row_id_columns import ROW_COLUMNS, ROW_OFFSET
from lancelot.sql import SqlError
from lancelot.sql.direct import direct
from lancelot.sql.errors import EvaluationError
from lancelot.sql.expression_tree import Call, Field, Literal, Node, conjuncts, expression_tree, fields

#: (column, operator, literal) conjunct of a filter, as zone maps take it; with ``extended=True``
#: the column may be a path through structs (a tuple) and the operator "in", "is_null" or
#: "is_not_null" (then no value)
ZoneFilter = tuple[Any, ...]
_OPS = {"equal": "=", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">="}
_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
#: _analyse's results by the filter's text (scans ask once per fragment)
_ANALYSED = IdentityMemo(256)
#: tables of fewer rows are filtered on the caller's thread (apply_filter)
SMALL_FILTER_ROWS = 1 << 16


def scan_arguments(args: dict[str, Any]) -> dict[str, Any]:
    """A ``to_table`` / ``to_batches`` call's arguments (its ``locals()`` on entry) as keywords for its
    ``scanner``: every argument goes on by name (``**kwargs`` flattened), so the readers and the
    scanner cannot drift apart."""
    out = {k: v for k, v in args.items() if k not in ("self", "kwargs")}
    out.update(args.get("kwargs") or {})
    return out


def check_filter(filter: object, schema: pa.Schema | None = None) -> pc.Expression | None:
    """The filter as an Expression: a SQL string (pylance's filter strings, parsed by
    lancelot.sql against ``schema``), an Expression as is, or None."""
    if filter is None or isinstance(filter, pc.Expression):
        return filter
    if isinstance(filter, str):
        if schema is None:
            raise TypeError("a SQL filter string needs the dataset's schema to be parsed")
        from lancelot.sql import parse_filter

        return parse_filter(filter, schema)
    raise TypeError(f"filter must be a SQL string or a pyarrow.compute.Expression, not {type(filter).__name__}")


def as_filter(filter: object, schema: pa.Schema) -> pc.Expression | None:
    """A scan's filter as an Expression: SQL text is parsed against ``schema`` and the row-id
    columns, which filters may name as pylance's do (``_rowid``, ``_rowaddr``; not ``_rowoffset``)."""
    if isinstance(filter, str):
        extra = [pa.field(c, pa.uint64()) for c in ROW_COLUMNS if c not in schema.names and c != ROW_OFFSET]
        schema = pa.schema(list(schema) + extra, metadata=schema.metadata)
    return check_filter(filter, schema)


def row_columns_in(expr: pc.Expression | None, schema: pa.Schema) -> set[str]:
    """The row-id columns an expression refers to (a superset, from its text)."""
    if expr is None:
        return set()
    return {c for c in filter_columns(expr, list(ROW_COLUMNS)) if c not in schema.names}


def _analyse(filter: pc.Expression) -> tuple[list[tuple[str, ...]], Node | None]:
    """(field paths, tree) of a filter, once per filter text."""
    return _ANALYSED.recall(str(filter), None, _analysed, filter)


def _analysed(filter: pc.Expression) -> tuple[list[tuple[str, ...]], Node | None]:
    try:
        tree: Node | None = expression_tree(filter)
        return (fields(tree) if tree is not None else []), tree
    except (ValueError, IndexError, KeyError, pa.ArrowException):
        return [], None


def filter_columns(filter: pc.Expression, names: list[str]) -> list[str]:
    """Dataset columns the expression references (a struct column for any of its fields), in
    ``names`` order."""
    paths, tree = _analyse(filter)
    if tree is None:  # not walkable: any column whose name appears in the text (all, for positions)
        text = str(filter)
        if "FieldPath(" in text:
            return list(names)
        return [
            n
            for n in names
            if re.search(r"(?<![\w.])" + re.escape(n) + r"(?![\w])", text) or f"FieldRef.Name({n})" in text
        ]
    used = {p[0] for p in paths}
    return [n for n in names if n in used]


def filter_paths(filter: pc.Expression) -> list[tuple[str, ...]] | None:
    """The field paths the expression references (``("st", "p")`` for ``st.p``), None if its tree cannot be
    walked."""
    paths, tree = _analyse(filter)
    return None if tree is None else paths


def _value(node: Node) -> Any:
    if not isinstance(node, Literal) or not node.value.is_valid:
        return None
    v = node.value.as_py()
    return None if isinstance(v, bool) else v


def _conjunct(node: Node, extended: bool) -> ZoneFilter | None:
    if not isinstance(node, Call):
        return None
    fn, args = node.function, node.args
    # DataFusion's NaN order (lancelot.sql): ``x < v OR lancelot_nan_below(x)``; zones holding NaN have no
    # bounds, so the comparison alone decides the others
    nan = args[1] if fn == "or_kleene" and len(args) == 2 else None
    if isinstance(nan, Call) and (nan.function == "is_nan" or nan.function.startswith("lancelot_nan_")):
        inner = _conjunct(args[0], extended)
        if inner is None or inner[1] not in (">", ">=", "<", "<="):
            return None
        path = inner[0] if isinstance(inner[0], tuple) else (inner[0],)
        return inner if nan.args == (Field(path),) else None
    # SQL's ``x IN (...)`` (lancelot.sql): ``if_else(is_valid(x), is_in(x, ...), null)``
    if fn == "if_else" and len(args) == 3 and isinstance(args[0], Call) and args[0].function == "is_valid":
        found = args[1]
        if isinstance(found, Call) and found.function == "is_in" and found.args == args[0].args:
            return _conjunct(found, extended)
        return None
    column: Any
    if fn in _OPS and len(args) == 2:
        (a, b), op = args, _OPS[fn]
        if isinstance(b, Field) and isinstance(a, Literal):
            (a, b), op = (b, a), _FLIPPED[op]
        if not isinstance(a, Field) or _value(b) is None:
            return None
        if len(a.path) == 1:
            column = a.path[0]
        elif extended:
            column = a.path
        else:
            return None
        return (column, op, _value(b))
    if not extended or not args or not isinstance(args[0], Field):
        return None
    column = args[0].path[0] if len(args[0].path) == 1 else args[0].path
    if fn == "is_null" and not (node.options or {}).get("nan_is_null"):
        return (column, "is_null")
    if fn == "is_valid":
        return (column, "is_not_null")
    if fn == "is_in" and node.options and isinstance(node.options.get("value_set"), list):
        return (column, "in", [v for v in node.options["value_set"] if v is not None])
    if fn == "starts_with" and node.options and not node.options.get("ignore_case"):
        return (column, "starts_with", node.options.get("pattern"))
    return None


def zone_filters(filter: pc.Expression | None, *, extended: bool = False) -> list[ZoneFilter]:
    """(column, op, value) conjuncts of the expression that zone maps understand: comparisons of a
    top-level column with a literal; ``extended`` adds struct fields (paths as tuples), IN,
    IS [NOT] NULL and starts_with."""
    if filter is None:
        return []
    _, tree = _analyse(filter)
    if tree is None:
        return []
    out = []
    for c in conjuncts(tree):
        z = _conjunct(c, extended)
        if z is not None:
            out.append(z)
    return out


def apply_filter(table: pa.Table, filter: pc.Expression, where: str) -> pa.Table:
    """``table.filter(filter)``; pyarrow's complaints (unknown column, bad types, a value a cast
    cannot convert) as a SqlError, a ValueError as pylance's."""
    try:
        run = direct(filter)  # the kernels called on whole columns: Acero calls a UDF per 32k rows
        try:
            mask = None if run is None else run(table)
        except KeyError:  # a column the table lacks: Acero's error below, as pylance's
            mask = None
        if isinstance(mask, pa.ChunkedArray | pa.Array) and len(mask) == table.num_rows:
            return table.filter(mask)
        if table.num_rows >= SMALL_FILTER_ROWS:
            return table.filter(filter)
        from pyarrow.acero import Declaration, FilterNodeOptions, TableSourceNodeOptions

        # what Table.filter runs, on the caller's thread: a scan of many small fragments filters
        # each on its own, and handing each to Arrow's thread pool costs more than filtering it
        plan = Declaration.from_sequence(
            [
                Declaration("table_source", options=TableSourceNodeOptions(table)),
                Declaration("filter", options=FilterNodeOptions(filter)),
            ]
        )
        return plan.to_table(use_threads=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        from lancelot.sql import short_circuit

        if isinstance(e, pa.ArrowInvalid) and short_circuit.known(filter):  # DataFusion may skip the failing rows
            try:
                return table.filter(short_circuit.mask(table, filter))
            except pa.ArrowInvalid:
                pass
        kind = EvaluationError if isinstance(e, pa.ArrowInvalid) else SqlError  # (a row's values, or the plan's)
        raise kind(f"{where}: cannot apply the filter {filter}: {e}") from None
