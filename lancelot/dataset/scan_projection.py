"""A scan's projection (pylance's ``columns``): a list of names (nested fields as dotted paths, named as
written, each at most once) or a dict of output name -> SQL expression, plus the row-id
columns of the table format ("Row ids": ``_rowid``, ``_rowaddr``, ``_rowoffset``), computed from each
row's fragment and physical position (row_id_columns.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.fragment_columns import POS
from lancelot.dataset.row_id_columns import ROW_ADDR, ROW_COLUMNS, ROW_ID, row_columns
from lancelot.dataset.scan import filter_columns
from lancelot.errors import LanceValueError
from lancelot.sql.errors import EvaluationError

if TYPE_CHECKING:
    from lancelot.dataset.fragment import Fragment


def as_expression(sql: str, schema: pa.Schema) -> tuple[pc.Expression, bool]:
    """A projection's SQL expression (a column, a nested path, arithmetic...) as an Expression, and
    whether it may be null (as pylance's schema says: ``1`` may not; lancelot/sql/nullability.py)."""
    from lancelot.sql import parse_projection

    return parse_projection(sql, schema)


def _path(schema: pa.Schema, name: str) -> tuple[pa.Field, list[str]] | None:
    """(field, path) of a top-level column or a dotted path into structs; None if there is none."""
    if name in schema.names:
        return schema.field(name), [name]
    parts = name.split(".")
    if parts[0] not in schema.names:
        return None
    f = schema.field(parts[0])
    for p in parts[1:]:
        if not pa.types.is_struct(f.type) or f.type.get_field_index(p) < 0:
            return None
        f = f.type.field(p)
    return f, parts


def _path_nullable(schema: pa.Schema, path: list[str]) -> bool:
    f = schema.field(path[0])
    for p in path[1:]:
        if f.nullable:
            return True
        f = f.type.field(p)
    return bool(f.nullable)


@dataclass
class Projection:
    """What a scan returns: output names, each a dataset column, a nested path, a row-id column or
    an expression; ``reads``: the top-level dataset columns to read."""

    names: list[str]
    exprs: dict[str, pc.Expression]  # outputs that are computed (nested paths, SQL expressions)
    fields: dict[str, pa.Field]  # outputs that are plain dataset columns
    reads: list[str]
    rows: set[str]  # row-id columns needed
    added: int = 0  # trailing names added by with_row_id / with_row_address
    nullable: dict[str, bool] = field(default_factory=dict)  # of the computed outputs

    @property
    def plain(self) -> bool:
        return not self.exprs

    def project(self, t: pa.Table, metadata: dict[bytes, bytes] | None, where: str) -> pa.Table:
        """The outputs of a table of the read columns and the row-id columns, with the dataset
        schema's ``metadata``."""
        if self.plain:
            out = t.select(self.names)
            return out.replace_schema_metadata(metadata) if self.names else out
        import pyarrow.dataset as pads

        try:
            computed = pads.dataset(t).to_table(columns=dict(self.exprs))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            kind = EvaluationError if isinstance(e, pa.ArrowInvalid) else LanceValueError  # (a row's values, or not)
            raise kind(f"{where}: cannot compute the projection: {e}") from None
        arrays, fields = [], []
        for name in self.names:
            if name in self.exprs:
                col = computed.column(name)
                fields.append(pa.field(name, col.type, self.nullable.get(name, True)))
            else:
                col = t.column(name)
                fields.append(t.schema.field(name))
            arrays.append(col)
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=metadata))

    def with_empty_rows(self, t: pa.Table) -> pa.Table:
        """``t`` (no rows) with the row-id columns appended."""
        for name in sorted(self.rows, key=ROW_COLUMNS.index):
            t = t.append_column(pa.field(name, pa.uint64()), pa.array([], pa.uint64()))
        return t


def with_row_columns(
    frag: Fragment, t: pa.Table, names: set[str], bases: dict[int, int] | None, deleted: bool
) -> pa.Table:
    """``t`` (rows of ``frag`` with their physical positions, ``POS``) with the row-id columns
    ``names`` appended; ``bases``: live rows before each fragment (``_rowoffset``); ``deleted``: the
    rows may be deleted ones (their ``_rowid`` is null, as pylance gives it)."""
    pos = t.column(POS).to_numpy().astype(np.int64)
    base = (bases or {}).get(frag.fragment_id, 0)
    for name, arr in row_columns(frag, pos, names, base, deleted).items():
        t = t.append_column(pa.field(name, pa.uint64()), arr)
    return t


def projection(
    schema: pa.Schema,
    columns: Sequence[str] | dict[str, str] | None,
    with_row_id: bool | None,
    with_row_address: bool | None,
    where: str,
    unique: bool = True,
) -> Projection:
    """The projection of pylance's ``columns``, ``with_row_id`` and ``with_row_address`` over ``schema``; a name
    listed twice is an error if ``unique`` (a scan's), else it comes twice (a take's row-id columns)."""
    names: list[str] = []
    exprs: dict[str, pc.Expression] = {}
    fields: dict[str, pa.Field] = {}
    reads: list[str] = []
    rows: set[str] = set()
    nullable: dict[str, bool] = {}

    def read(c: str) -> None:
        if c not in reads:
            reads.append(c)

    if columns is None:
        columns = list(schema.names)
    # a row-id column asked by its flag comes last (``_rowid`` before ``_rowaddr``), even where ``columns`` names it
    moved = {col for flag, col in ((with_row_id, ROW_ID), (with_row_address, ROW_ADDR)) if flag}
    if isinstance(columns, dict):
        columns = {k: v for k, v in columns.items() if k not in moved}
    elif not isinstance(columns, str):
        twice = next((c for i, c in enumerate(columns) if c in columns[:i]), None)
        if twice is not None and unique:
            raise LanceValueError(f"{where}: Duplicate column name: {twice}")
        columns = [c for c in columns if c not in moved]
    if isinstance(columns, dict):
        for name, sql in columns.items():
            if not isinstance(sql, str):
                raise LanceValueError(f"{where}: the expression of column {name!r} must be SQL text, not {sql!r}")
            names.append(name)
            if sql in ROW_COLUMNS:
                rows.add(sql)
                exprs[name] = pc.field(sql)
                continue
            found = _path(schema, sql)
            if found is not None:
                expr, nullable[name] = pc.field(*found[1]), _path_nullable(schema, found[1])
            else:
                expr, nullable[name] = as_expression(sql, schema)
            exprs[name] = expr
            for c in filter_columns(expr, list(schema.names)):
                read(c)
            for r in ROW_COLUMNS:
                if r in str(expr):
                    rows.add(r)
    else:
        if isinstance(columns, str):
            raise LanceValueError(f"{where}: columns must be a list of names or a dict, not the string {columns!r}")
        for c in columns:
            names.append(c)
            if c in ROW_COLUMNS:
                rows.add(c)
                continue
            found = _path(schema, c)
            if found is None:
                raise LanceValueError(f"{where}: no column named {c!r} (columns: {schema.names})")
            f, path = found
            read(path[0])
            if len(path) == 1:
                fields[c] = f
            else:
                exprs[c] = pc.field(*path)
    added = 0
    for col in (ROW_ID, ROW_ADDR):
        if col in moved:
            names.append(col)
            rows.add(col)
            added += 1
    return Projection(names, exprs, fields, reads, rows, added, nullable)
