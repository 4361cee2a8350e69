"""The structure of a ``pyarrow.compute.Expression``: calls, field references, literals.

pyarrow offers no walk over an Expression, but it pickles one as Arrow's own serialization
(arrow/compute/expression.cc, ``Serialize``): a record batch whose columns hold the literals and
whose schema metadata lists the tree in prefix order, one key/value pair per step
(``call: name`` ... ``end: name``, ``field_ref: name``, ``nested_field_ref: n`` then n names,
``literal: column``, ``options: column``).  The metadata repeats keys, so it is read through the C
data interface (``lancelot.util.c_schema``), which keeps every pair in order.
"""

from __future__ import annotations

import weakref
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from lancelot.sql.errors import ExpressionFieldError
from lancelot.util.c_schema import metadata_pairs


@dataclass(frozen=True)
class Field:
    """A column (``path`` of one name) or a field inside struct columns."""

    path: tuple[str, ...]


@dataclass(frozen=True)
class Literal:
    value: pa.Scalar


@dataclass(frozen=True)
class Call:
    function: str
    args: tuple[Node, ...]
    options: dict[str, Any] | None = field(default=None, compare=False)


Node = Field | Literal | Call


def expression_tree(expr: pc.Expression) -> Node:
    """The tree of ``expr``; ValueError when its serialization is not the one described above."""
    reduced = expr.__reduce__()
    buf = reduced[1][0]
    batch = ipc.open_file(buf).get_batch(0)
    steps = [(k.decode(), v.decode()) for k, v in metadata_pairs(batch.schema)]
    node, end = _read(steps, 0, batch)
    if end != len(steps):
        raise ValueError("trailing steps in a serialized Expression")
    return node


def _read(steps: list[tuple[str, str]], i: int, batch: pa.RecordBatch) -> tuple[Node, int]:
    key, value = steps[i]
    if key == "literal":
        return Literal(batch.column(int(value))[0]), i + 1
    if key == "field_ref":
        return Field((value,)), i + 1
    if key == "nested_field_ref":
        n = int(value)
        names = []
        for k, v in steps[i + 1 : i + 1 + n]:
            if k != "field_ref":
                raise ValueError(f"unexpected {k} in a nested field reference")
            names.append(v)
        return Field(tuple(names)), i + 1 + n
    if key == "call":
        args: list[Node] = []
        options = None
        i += 1
        while steps[i][0] != "end":
            if steps[i][0] == "options":
                col = batch.column(int(steps[i][1]))
                options = col[0].as_py()
                if "to_type" in options:  # (a cast's target: its type, as the value is null)
                    options["to_type"] = col.type.field("to_type").type
                i += 1
                continue
            arg, i = _read(steps, i, batch)
            args.append(arg)
        return Call(value, tuple(args), options), i + 1
    raise ValueError(f"unknown step {key!r} in a serialized Expression")


def fields(node: Node) -> list[tuple[str, ...]]:
    """The field paths ``node`` reads, in first-use order."""
    out: list[tuple[str, ...]] = []

    def visit(n: Node) -> None:
        if isinstance(n, Field):
            if n.path not in out:
                out.append(n.path)
        elif isinstance(n, Call):
            for a in n.args:
                visit(a)

    visit(node)
    return out


def conjuncts(node: Node) -> list[Node]:
    """``a AND b AND c`` as ``[a, b, c]`` (either kind of and)."""
    if isinstance(node, Call) and node.function in ("and_kleene", "and") and len(node.args) == 2:
        return conjuncts(node.args[0]) + conjuncts(node.args[1])
    return [node]


#: the filters lancelot parsed from SQL text (by id), which may name the row-id and row-version columns
_FROM_SQL: weakref.WeakValueDictionary[int, pc.Expression] = weakref.WeakValueDictionary()


#: the field paths of the Expressions ``check_fields`` saw, by text
_PATHS: dict[str, list[tuple[str, ...]]] = {}


def mark_from_sql(expr: pc.Expression) -> pc.Expression:
    """``expr``, remembered as a filter parsed from SQL text: ``check_fields`` lets it through."""
    _FROM_SQL[id(expr)] = expr
    return expr


def check_fields(expr: pc.Expression, schema: pa.Schema, also: Collection[str] = ()) -> None:
    """Refuse an Expression naming a top-level field neither in ``schema`` nor in ``also``, as pylance binds a pyarrow
    Expression to the dataset's schema (where the row-id and row-version columns are not); one parsed from SQL text
    (``mark_from_sql``), or whose tree cannot be walked, is let through.

    Args:
        expr: A filter given as a pyarrow Expression.
        schema: The dataset's schema.
        also: Names it may use besides (the row-id columns a SQL query's scan asks for).

    Raises:
        ExpressionFieldError: It names another field (pyarrow's ``ArrowInvalid``, as pylance).
    """
    if _FROM_SQL.get(id(expr)) is expr:
        return
    text = str(expr)
    if text not in _PATHS:  # (walking the tree deserializes the Expression: once per text)
        if len(_PATHS) >= 256:
            _PATHS.clear()
        try:
            _PATHS[text] = fields(expression_tree(expr))
        except (ValueError, IndexError, KeyError, pa.ArrowException):
            _PATHS[text] = []
    for path in _PATHS[text]:
        name = path[0] if path else None
        if isinstance(name, str) and name not in schema.names and name not in also:
            shown = schema.to_string(show_field_metadata=False, show_schema_metadata=False)
            raise ExpressionFieldError(
                f"the filter {expr} names no column: No match for FieldRef.Name({name}) in {shown}"
            )
