"""Scans of a dataset version: ``LanceDataset.scanner(...)`` (pylance's ``LanceScanner``).

A scan reads its fragments in order: the filter (SQL text or a pyarrow.compute Expression)
is applied per fragment (zone maps prune from it first, lancelot/dataset/scan.py); ``offset``
and ``limit`` count the rows that pass, and fragments wholly before the offset or after the
limit are never read.  The projection is a list of columns (nested fields as dotted paths,
named as written) or a dict name -> SQL expression.  ``_rowid``, ``_rowaddr`` and
``_rowoffset`` are the row-id columns of the table format ("Row ids"): the row address is
``fragment_id << 32 | physical position``; the row id is the address, or the stable row id
of datasets that have them (rowids.py); the row offset is the row's index among the live
rows of the dataset.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.fragment_columns import _POS
from lancelot.dataset.row_id_columns import ROW_ADDR, ROW_COLUMNS, ROW_ID, ROW_OFFSET, row_columns
from lancelot.dataset.scan import check_filter
from lancelot.errors import LanceValueError
from lancelot.util.pools import shared_pool

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.fragment_groups import InOrder

#: remote scans with a limit: fragments read side by side
READ_AHEAD = 8
_R = TypeVar("_R")
#: pylance's default rows per batch (the environment's LANCE_DEFAULT_BATCH_SIZE, as in pylance, else this)
DEFAULT_BATCH_SIZE = 8192


def as_filter(filter: object, schema: pa.Schema) -> pc.Expression | None:
    """A filter as a pyarrow.compute Expression: SQL text is parsed against ``schema`` (lancelot.sql)
    and the row-id columns, which filters may name as pylance's do."""
    if isinstance(filter, str):
        extra = [pa.field(c, pa.uint64()) for c in ROW_COLUMNS if c not in schema.names]
        schema = pa.schema(list(schema) + extra, metadata=schema.metadata)
    return check_filter(filter, schema)


def row_columns_in(expr: pc.Expression | None, schema: pa.Schema) -> set[str]:
    """The row-id columns an expression refers to (a superset, from its text)."""
    if expr is None:
        return set()
    from lancelot.dataset.scan import filter_columns

    return {c for c in filter_columns(expr, list(ROW_COLUMNS)) if c not in schema.names}


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


def projection(
    schema: pa.Schema,
    columns: Sequence[str] | dict[str, str] | None,
    with_row_id: bool | None,
    with_row_address: bool | None,
    where: str,
) -> Projection:
    from lancelot.dataset.scan import filter_columns

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
            names.append(c)  # a column asked twice comes twice, as in pylance
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
    for flag, col in ((with_row_id, ROW_ID), (with_row_address, ROW_ADDR)):
        if flag and col not in names:
            names.append(col)
            rows.add(col)
            added += 1
    return Projection(names, exprs, fields, reads, rows, added, nullable)


def _path_nullable(schema: pa.Schema, path: list[str]) -> bool:
    f = schema.field(path[0])
    for p in path[1:]:
        if f.nullable:
            return True
        f = f.type.field(p)
    return bool(f.nullable)


def sort_keys(order_by: Any, schema: pa.Schema, where: str) -> list[tuple[str, bool, bool]]:
    """(column, ascending, nulls first) of pylance's ``order_by``: column names or ColumnOrdering-like
    objects (``column_name``, ``ascending``, ``nulls_first``)."""
    out = []
    for o in order_by or []:
        if isinstance(o, str):
            name, asc, nulls_first = o, True, False
        elif hasattr(o, "column_name"):
            name, asc, nulls_first = o.column_name, bool(o.ascending), bool(o.nulls_first)
        else:
            raise LanceValueError(f"{where}: order_by takes column names or ColumnOrdering, not {o!r}")
        if name not in schema.names:
            raise LanceValueError(f"{where}: order_by: no column named {name!r}")
        out.append((name, asc, nulls_first))
    return out


@dataclass
class ColumnOrdering:
    """A sort key of ``order_by`` (pylance's ``lance.dataset.ColumnOrdering``)."""

    column_name: str
    ascending: bool = True
    nulls_first: bool = False


class LanceScanner:
    """A planned scan of one dataset version (pylance's ``LanceScanner``), made by
    [`LanceDataset.scanner`][lancelot.dataset.dataset.LanceDataset.scanner].

    Nothing is read until ``to_table``, ``to_batches``, ``to_reader``, ``count_rows`` or ``head``
    runs; each run reads anew. Filters are applied per page: zone maps (min/max per page of rows)
    skip pages that cannot match, and only the pages the filter keeps are read for the other columns.

    Examples:
        >>> s = ds.scanner(columns=["id"], filter="id % 3 = 0")
        >>> s.count_rows(), s.to_table().to_pydict()
        (4, {'id': [0, 3, 6, 9]})
        >>> s.projected_schema.names
        ['id']
    """

    def __init__(self, ds: LanceDataset, columns: Sequence[str] | dict[str, str] | None = None, **options: Any) -> None:
        """Plan a scan (use [`LanceDataset.scanner`][lancelot.dataset.dataset.LanceDataset.scanner]).

        Args:
            ds: The dataset version to scan.
            columns: Names (``"s.x"``, ``_rowid``, ``_rowaddr``, ``_rowoffset``) or a dict of output
                name to SQL expression; None for all.
            **options: The other arguments of ``LanceDataset.scanner``, by name (those it documents as
                having no effect are accepted and ignored).

        Raises:
            ValueError: An unknown column, a bad filter, a negative limit or offset.
        """
        o = options.get
        limit, offset, batch_size, filter = o("limit"), o("offset"), o("batch_size"), o("filter")
        self._ds = ds
        where = f"dataset {ds.uri!r} version {ds.version}"
        self._where = where
        if limit is not None and (not isinstance(limit, int | np.integer) or limit < 0):
            raise LanceValueError(f"{where}: limit must be a non-negative integer, not {limit!r}")
        if offset is not None and (not isinstance(offset, int | np.integer) or offset < 0):
            raise LanceValueError(f"{where}: offset must be a non-negative integer, not {offset!r}")
        if batch_size is not None and batch_size <= 0:
            raise LanceValueError(f"{where}: batch_size must be positive, not {batch_size!r}")
        self.limit = None if limit is None else int(limit)
        self.offset = int(offset or 0)
        self.batch_size = int(batch_size or os.environ.get("LANCE_DEFAULT_BATCH_SIZE") or DEFAULT_BATCH_SIZE)
        self._filter_text = filter if isinstance(filter, str) else None
        self.filter = as_filter(filter, ds.schema)
        #: row-id columns the filter names: computed before it is applied
        self._filter_rows = row_columns_in(self.filter, ds.schema)
        self.nearest = None
        if o("nearest") is not None:
            from lancelot.dataset.vector_search import parse_nearest

            self.nearest = parse_nearest(o("nearest"), ds.schema, where)
        self.prefilter = bool(o("prefilter"))
        self.include_deleted_rows = bool(o("include_deleted_rows"))
        from lancelot.dataset.blob_scan import wants_binary

        #: blob_handling="all_binary": blob columns as bytes, found by row address (dropped after unless asked)
        self._binary = wants_binary(o("blob_handling"))
        self._proj = projection(ds.schema, columns, o("with_row_id"), o("with_row_address") or self._binary, where)
        self._drop_addr = self._binary and not o("with_row_address")
        #: only literal expressions, no column nor row id: pylance's scans refuse to run these
        self._no_column = bool(self._proj.exprs) and not (self._proj.reads or self._proj.rows or self._proj.fields)
        if self.include_deleted_rows and ROW_ID not in self._proj.rows:
            raise LanceValueError(f"{where}: include_deleted_rows is set but with_row_id is false")
        #: no ``_distance`` column in a vector search's result
        self.no_distance = bool(o("disable_scoring_autoprojection"))
        self.order_by = sort_keys(o("order_by"), ds.schema, where)
        for name, _, _ in self.order_by:
            if name not in self._proj.reads:
                self._proj.reads.append(name)  # read for sorting, not returned unless asked
        fragments = o("fragments")
        if fragments is None:
            self._frags = list(ds._fragments)
        else:
            self._frags = []
            for f in fragments:
                fid = f if isinstance(f, int) else int(f.fragment_id)  # a fragment or its id
                mine = ds.get_fragment(fid)
                if mine is None:
                    raise LanceValueError(f"{where}: fragment {fid} is not in this version")
                self._frags.append(mine)
        self._schema: pa.Schema | None = None

    # -- planning ---------------------------------------------------------------------------------
    def _offset_bases(self) -> dict[int, int]:
        """Live rows of the dataset before each fragment (for ``_rowoffset``)."""
        out, n = {}, 0
        for f in self._ds._fragments:
            out[f.fragment_id] = n
            n += f.count_rows()
        return out

    def _read_cols(self) -> list[str]:
        return list(self._proj.reads)

    def _pieces(self, chunk: int | None) -> Iterator[tuple[Fragment, pa.Table]]:
        """Per fragment (in order), tables of the columns to read, the rows that pass the filter and
        fall in [offset, offset + limit), and the physical positions (``_POS``) when row ids are asked
        (or a filtered scan is cut in batches of ``chunk`` rows: ``_batches_of``)."""
        need_pos = bool(self._proj.rows)
        skip, left = self.offset, self.limit
        cols = self._read_cols()
        if self.include_deleted_rows or self._filter_rows:
            yield from self._pieces_with_deleted(cols, skip, left, chunk)
            return
        reads = self._in_order(cols, need_pos or (chunk is not None and self.filter is not None))
        # remote with a limit: a few fragments' reads in flight side by side, none issued past the limit
        ahead = self.limit is not None and not self._ds.store.is_local
        for frag, t in _read_ahead(self._reads(reads, cols, chunk, need_pos), READ_AHEAD if ahead else 0):
            if self.filter is None:  # (offset and limit planned from the fragments' row counts)
                yield frag, t
                continue
            for piece in _batches_of(frag, t, chunk, False):
                piece, skip, left = _window(piece, skip, left)
                if piece.num_rows:
                    yield frag, piece
            if left is not None and left <= 0:
                return

    def _reads(
        self, reads: InOrder | None, cols: list[str], chunk: int | None, need_pos: bool
    ) -> Iterator[Callable[[], tuple[Fragment, pa.Table]]]:
        """The reads of ``_pieces``, in order, not yet run: without a filter, the pieces in [offset,
        offset + limit) (from the fragments' row counts); with one, each fragment's rows that pass."""
        skip, left = self.offset, self.limit
        for i, frag in enumerate(self._frags):
            if left is not None and left <= 0:
                return
            if self.filter is not None:
                yield partial(_whole, reads, frag, i, cols, self.filter, need_pos or bool(chunk))
                continue
            n = frag.count_rows()
            if skip >= n:
                skip -= n
                continue
            lo, hi = skip, n if left is None else min(n, skip + left)
            skip = 0
            if left is not None:
                left -= hi - lo
            step = hi - lo if chunk is None else chunk
            for a in range(lo, hi, step):
                b = min(hi, a + step)
                if (a, b) == (0, n) and (chunk is None or reads is not None):
                    yield partial(_whole, reads, frag, i, cols, None, need_pos)
                else:
                    yield partial(_live_range, frag, a, b, cols, need_pos)

    def _in_order(self, cols: list[str], need_pos: bool) -> InOrder | None:
        """Whole-fragment reads with the runs of small fragments read together (a scan without a
        limit: a limit would read a run it may not need); remote, a run's files are fetched side by side."""
        if self.limit is not None or not cols or len(self._frags) < 2:
            return None
        from lancelot.dataset.fragment_groups import InOrder

        runs = _tasks(self._frags, list(range(len(self._frags))))
        return InOrder(self._frags, cols, self.filter, need_pos, runs)

    def _pieces_with_deleted(
        self, cols: list[str], skip: int, left: int | None, chunk: int | None
    ) -> Iterator[tuple[Fragment, pa.Table]]:
        """Like ``_pieces``, with deleted rows when asked (their ``_rowid`` is null, as pylance gives it),
        and the row-id columns a filter names computed before it is applied."""
        from lancelot.dataset.scan import apply_filter, filter_columns

        fcols = [] if self.filter is None else filter_columns(self.filter, list(self._ds.schema.names))
        read = cols + [c for c in fcols if c not in cols]
        bases = self._offset_bases() if ROW_OFFSET in self._filter_rows else None
        for frag in self._frags:
            if left is not None and left <= 0:
                return
            if self.include_deleted_rows:
                t = frag._read_physical(read, 0, frag.physical_rows)
                t = t.append_column(_POS, pa.array(np.arange(frag.physical_rows, dtype=np.int64)))
            else:
                t = frag.read(read, positions=True)
            if self.filter is not None:
                if self._filter_rows:
                    pos = t.column(_POS).to_numpy().astype(np.int64)
                    base = (bases or {}).get(frag.fragment_id, 0)
                    rows = row_columns(frag, pos, self._filter_rows, base, self.include_deleted_rows)
                    for name, arr in rows.items():
                        t = t.append_column(name, arr)
                t = apply_filter(t, self.filter, frag.where).select(cols + [_POS])
            for piece in _batches_of(frag, t, chunk if self.filter is not None else None, self.include_deleted_rows):
                piece, skip, left = _window(piece, skip, left)
                if piece.num_rows:
                    yield frag, piece

    def _finish(self, frag: Fragment, t: pa.Table, bases: dict[int, int] | None) -> pa.Table:
        """The output columns of one piece."""
        p = self._proj
        if p.rows:
            pos = t.column(_POS).to_numpy().astype(np.int64)
            base = (bases or {}).get(frag.fragment_id, 0)
            extra = row_columns(frag, pos, p.rows, base, self.include_deleted_rows)
            for name, arr in extra.items():
                t = t.append_column(pa.field(name, pa.uint64()), arr)
        return self._project(t)

    def _project(self, t: pa.Table) -> pa.Table:
        p = self._proj
        if p.plain:
            out = t.select(p.names)
            return out.replace_schema_metadata(self._ds.schema.metadata) if p.names else out
        import pyarrow.dataset as pads

        try:
            computed = pads.dataset(t).to_table(columns=dict(p.exprs))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise LanceValueError(f"{self._where}: cannot compute the projection: {e}") from None
        arrays, fields = [], []
        for name in p.names:
            if name in p.exprs:
                col = computed.column(name)
                fields.append(pa.field(name, col.type, p.nullable.get(name, True)))
            else:
                col = t.column(name)
                fields.append(t.schema.field(name))
            arrays.append(col)
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=self._ds.schema.metadata))

    def _empty_input(self) -> pa.Table:
        from lancelot.dataset.blob import scan_schema  # blob columns scan as their descriptions

        cols = self._read_cols()
        schema = scan_schema(self._ds.schema)
        t = pa.schema([schema.field(c) for c in cols], metadata=schema.metadata).empty_table()
        return t.append_column(_POS, pa.array([], pa.int64()))

    def _nearest_table(self) -> pa.Table:
        from lancelot.dataset.vector_search import search

        assert self.nearest is not None
        return search(self)

    # -- results ----------------------------------------------------------------------------------
    def _require_column(self) -> None:
        if self._no_column:
            raise LanceValueError(f"{self._where}: a scan must read at least one column, not only literals")

    @property
    def projected_schema(self) -> pa.Schema:
        """The schema of the scan's result."""
        self._require_column()
        if self._schema is None:
            empty = self._empty_input()
            frag = self._frags[0] if self._frags else None
            if frag is None or not self._proj.rows:
                t = self._project(self._with_empty_rows(empty))
            else:
                t = self._finish(frag, empty, None)
            if self.nearest is not None and not self.no_distance:
                at = len(self._proj.names) - self._proj.added
                t = t.add_column(at, pa.field("_distance", pa.float32()), pa.array([], pa.float32()))
            self._schema = self._bytes(t).schema
        return self._schema

    def _with_empty_rows(self, t: pa.Table) -> pa.Table:
        for name in sorted(self._proj.rows, key=ROW_COLUMNS.index):
            t = t.append_column(pa.field(name, pa.uint64()), pa.array([], pa.uint64()))
        return t

    @property
    def dataset_schema(self) -> pa.Schema:
        """The schema of the dataset being scanned (before projection)."""
        return self._ds.schema

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The result in record batches of at most ``batch_size`` rows; a batch never holds rows of two
        fragments (as in pylance).

        Returns:
            An iterator of ``pyarrow.RecordBatch`` (fragments are read as the iterator advances).
        """
        for b in self._batches():
            yield self._bytes(pa.Table.from_batches([b])).combine_chunks().to_batches()[0] if self._binary else b

    def _bytes(self, t: pa.Table) -> pa.Table:
        """``blob_handling="all_binary"``: the blobs' bytes in place of their descriptions."""
        if not self._binary:
            return t
        from lancelot.dataset.blob_scan import binary_schema, binary_table

        if not t.num_rows:
            schema = binary_schema(self._ds, t.schema)
            if self._drop_addr and ROW_ADDR in schema.names:
                schema = schema.remove(schema.get_field_index(ROW_ADDR))
            return schema.empty_table()
        addresses = t.column(ROW_ADDR).to_numpy(zero_copy_only=False)
        out = binary_table(self._ds, t, addresses)
        return out.drop_columns([ROW_ADDR]) if self._drop_addr else out

    def _batches(self) -> Iterator[pa.RecordBatch]:
        self._require_column()
        if self.nearest is not None or self.order_by:
            yield from self._table().to_batches(max_chunksize=self.batch_size)
            return
        bases = self._offset_bases() if ROW_OFFSET in self._proj.rows else None
        late, held = self._late(), []  # (late: batches joined until they reach batch_size rows)
        for frag, t in self._pieces(self.batch_size):
            held.append(self._finish(frag, t, bases))
            if late and sum(h.num_rows for h in held) < self.batch_size:
                continue
            out = pa.concat_tables(held) if len(held) > 1 else held[0]
            held = []
            yield from out.combine_chunks().to_batches(max_chunksize=None if late else self.batch_size)
        if held and held[0].num_columns:
            yield pa.concat_tables(held).combine_chunks().to_batches()[0]

    def _late(self) -> bool:
        """Whether pylance reads some projected columns after a filter it does not evaluate in its
        scan (late materialisation, which joins the filtered batches until they reach batch_size
        rows): columns not in the filter whose values (structs aside) have no fixed width, or one of
        10 bytes or more (1000 over an object store)."""
        from lancelot.dataset.scan import filter_columns, simple_filter

        if self.filter is None or simple_filter(self.filter):  # (evaluated in the scan: batches kept)
            return False
        used = set(filter_columns(self.filter, list(self._ds.schema.names)))
        limit = 10 if self._ds.store.is_local else 1000
        for c in self._proj.reads:
            t = self._ds.schema.field(c).type
            if c in used or pa.types.is_struct(t):
                continue
            width = _byte_width(t)
            if pa.types.is_boolean(t) or width is None or width >= limit:
                return True
        return False

    def to_reader(self) -> pa.RecordBatchReader:
        """The result as a stream.

        Returns:
            A ``pyarrow.RecordBatchReader`` of ``projected_schema``.
        """
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.to_reader().__arrow_c_stream__(requested_schema)

    def _sorted(self) -> pa.Table:
        """The whole result sorted by ``order_by`` (stable), then offset and limit applied."""
        unlimited = self._copy(limit=None, offset=0, order_by=[])
        bases = unlimited._offset_bases() if ROW_OFFSET in self._proj.rows else None
        outs, keys = [], []
        for frag, t in unlimited._pieces(None):
            outs.append(unlimited._finish(frag, t, bases))
            keys.append(t.select([k for k, _, _ in self.order_by]))
        if not outs:
            return self.projected_schema.empty_table()
        out = pa.concat_tables(outs) if outs[0].num_columns else _rows_only(outs)
        key = pa.concat_tables(keys)
        idx = pa.array(np.arange(key.num_rows, dtype=np.int64))
        for name, ascending, nulls_first in reversed(self.order_by):  # stable passes, last key first
            col = key.column(name).take(idx)
            order = pc.array_sort_indices(
                col,
                order="ascending" if ascending else "descending",
                null_placement="at_start" if nulls_first else "at_end",
            )
            idx = idx.take(order)
        out = out.take(idx) if out.num_columns else out
        out = out.slice(self.offset)
        return out if self.limit is None else out.slice(0, self.limit)

    def to_table(self) -> pa.Table:
        """The whole result as one table, rows in fragment order (sorted by ``order_by``, or nearest first
        with ``nearest``).

        Returns:
            A ``pyarrow.Table`` of ``projected_schema``.
        """
        return self._bytes(self._table())

    def _table(self) -> pa.Table:
        self._require_column()
        if self.nearest is not None:
            return self._nearest_table()
        if self.order_by:
            return self._sorted()
        bases = self._offset_bases() if ROW_OFFSET in self._proj.rows else None
        if self.limit is None and not self.offset and not self.include_deleted_rows and not self._filter_rows:
            parts = self._parallel(bases)
        else:
            parts = [self._finish(frag, t, bases) for frag, t in self._pieces(None)]
        parts = [p for p in parts if p.num_rows]
        if not parts:
            return self.projected_schema.empty_table()
        if not parts[0].num_columns:  # concat_tables drops the rows of column-less tables
            return _rows_only(parts)
        return pa.concat_tables(parts)

    def to_pandas(self, *, blob_mode: str = "lazy", **kwargs: Any) -> Any:
        """The result as a pandas DataFrame (pandas must be installed).

        Args:
            blob_mode: Blob columns as ``BlobFile`` objects (``"lazy"``), their bytes (``"bytes"``) or
                their descriptions (``"descriptions"``), as pylance's.
            **kwargs: Options of ``pyarrow.Table.to_pandas``.

        Returns:
            A ``pandas.DataFrame``.
        """
        from lancelot.dataset.blob_scan import to_pandas

        return to_pandas(self, blob_mode, kwargs)

    def _copy_with(self, *, binary: bool, with_row_address: bool = False) -> LanceScanner:
        """A copy reading blobs as bytes (``binary``) or not, returning ``_rowaddr`` too when asked
        (``blob.to_pandas``)."""
        p = self._proj
        asked = ROW_ADDR in p.names and not self._drop_addr
        if (binary or with_row_address) and ROW_ADDR not in p.names:
            p = replace(p, names=[*p.names, ROW_ADDR], rows=p.rows | {ROW_ADDR}, added=p.added + 1)
        return self._copy(_proj=p, _binary=binary, _drop_addr=not asked and not with_row_address)

    def _parallel(self, bases: dict[int, int] | None) -> list[pa.Table]:
        """Whole fragments read two at a time (pylance's fragment read-ahead); fragments with
        deletions to filter start first, so a scan does not end on one thread filtering."""
        from lancelot.dataset.open_files import fragment_pool

        frags, cols, need_pos, filt = self._frags, self._read_cols(), bool(self._proj.rows), self.filter

        def one(f: Fragment) -> pa.Table:
            opened = f._fc is not None
            try:
                return self._finish(f, f.read(cols, filt, positions=need_pos), bases)
            finally:
                if not opened:  # a scan holds no fragment's open files after reading it (the dataset's
                    f._fc = None  # file cache keeps the recent ones): memory and GC work stay per read

        if len(frags) > 1:
            pool = fragment_pool() if self._ds.store.is_local else _remote_tasks()
            order = list(range(len(frags)))
            if filt is None and self._ds.store.is_local:  # (remote: costs would read deletion files one by one)
                order.sort(key=lambda i: -frags[i].filter_cost())
            out: list[pa.Table | None] = [None] * len(frags)

            def task(group: list[int]) -> None:
                if len(group) > 1 and cols:  # small fragments: one deletion filter, one filter of all
                    from lancelot.dataset.fragment_groups import read_group, read_group_table

                    members = [frags[i] for i in group]
                    opened = [f._fc is not None for f in members]
                    try:
                        if not need_pos and group == list(
                            range(group[0], group[0] + len(group))
                        ):  # in order: one table
                            out[group[0]] = self._finish(members[0], read_group_table(members, cols, filt), bases)
                            return
                        for i, t in zip(group, read_group(members, cols, filt, need_pos)):
                            out[i] = self._finish(frags[i], t, bases)
                    finally:
                        for f, was in zip(members, opened):
                            if not was:
                                f._fc = None
                    return
                for i in group:
                    out[i] = one(frags[i])

            futures = [pool.submit(task, g) for g in _tasks(frags, order)]
            for fut in futures:
                fut.result()
            return [t for t in out if t is not None]
        return [one(f) for f in frags]

    def count_rows(self) -> int:
        """The number of rows the scan returns, reading only what the filter needs.

        Returns:
            The row count.

        Raises:
            ValueError: The scan has a limit or an offset (pylance refuses them here too).
        """
        self._require_column()
        if self.limit is not None or self.offset:
            raise LanceValueError(f"{self._where}: count_rows cannot use a limit or offset (apply them to the result)")
        if self.nearest is not None:
            return int(self._nearest_table().num_rows)
        if self.filter is None and not self.include_deleted_rows:
            return sum(f.count_rows() for f in self._frags)
        if self.include_deleted_rows or self._filter_rows:  # row-id columns computed before filtering
            return sum(t.num_rows for _, t in self._pieces(None))
        if len(self._frags) > 1:
            from lancelot.dataset.fragment_groups import count_group

            runs = _tasks(self._frags, list(range(len(self._frags))))
            filt = self.filter

            def count(run: list[int]) -> int:
                if len(run) > 1:
                    return count_group([self._frags[i] for i in run], filt)
                return self._frags[run[0]].count_rows(filt)

            if self._ds.store.is_local:
                return sum(map(count, runs))
            return sum(_remote_tasks().map(count, runs))  # remote: several runs' requests in flight
        return sum(f.count_rows(self.filter) for f in self._frags)

    def scan_batches(self) -> list[pa.RecordBatch]:
        """The scan's batches, as a list (pylance's own raises StopIteration once they are read)."""
        return list(self.to_batches())

    def take(self, indices: object) -> None:
        """Not implemented, as in pylance (use ``LanceDataset.take``).

        Args:
            indices: The rows pyarrow's Scanner.take would take.

        Raises:
            NotImplementedError: Always.
        """
        raise NotImplementedError("take")

    @staticmethod
    def from_dataset(*args: object, **kwargs: object) -> LanceScanner:
        """Not implemented, as in pylance (pyarrow's Scanner constructors: use ``LanceDataset.scanner``)."""
        raise NotImplementedError("from dataset")

    from_fragment = from_batches = from_dataset

    def head(self, num_rows: int) -> pa.Table:
        """The first rows of the scan (the scan's own limit still applies).

        Args:
            num_rows: How many rows.

        Returns:
            A ``pyarrow.Table`` of at most ``num_rows`` rows.
        """
        if num_rows < 0:
            raise LanceValueError(f"{self._where}: head needs a non-negative number of rows, not {num_rows}")
        limit = num_rows if self.limit is None else min(num_rows, self.limit)
        s = self._copy(limit=limit)
        return s.to_table()

    def _copy(self, **changes: Any) -> LanceScanner:
        new = object.__new__(LanceScanner)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        new._schema = None
        return new

    def explain_plan(self, verbose: bool = False) -> str:
        """A text description of the scan: projection, limit, sort, filter, and what is read.

        Its text differs from pylance's (which prints DataFusion's physical plan).

        Args:
            verbose: Also list the filters zone maps can answer.

        Returns:
            The plan, one step per line.
        """
        p = self._proj
        lines = [f"Projection: {p.names}"]
        if self.nearest is not None:
            n = self.nearest
            lines.append(f"  ExactKNN: column={n.column}, k={n.k}, metric={n.metric}, prefilter={self.prefilter}")
        if self.limit is not None or self.offset:
            lines.append(f"  Limit: offset={self.offset}, limit={self.limit}")
        if self.order_by:
            keys = ", ".join(
                f"{n} {'ASC' if a else 'DESC'} NULLS {'FIRST' if nf else 'LAST'}" for n, a, nf in self.order_by
            )
            lines.append(f"  Sort: {keys}")
        if self.filter is not None:
            lines.append(f"  Filter: {self._filter_text or self.filter}")
        from lancelot.dataset.scan import filter_columns

        fcols = [] if self.filter is None else filter_columns(self.filter, list(self._ds.schema.names))
        read = p.reads + [c for c in fcols if c not in p.reads]
        lines.append(
            f"  LanceRead: uri={self._ds.uri}, version={self._ds.version}, projection=[{', '.join(read)}], "
            f"num_fragments={len(self._frags)}, row_id={ROW_ID in p.rows}, row_addr={ROW_ADDR in p.rows}"
        )
        if verbose and self.filter is not None:
            from lancelot.dataset.scan import zone_filters

            lines.append(f"    zone map filters: {zone_filters(self.filter)}")
        return "\n".join(lines) + "\n"

    def analyze_plan(self, count_rows: bool = False) -> str:
        """The plan as ``explain_plan(verbose=True)`` gives it: lancelot runs no separate analysis (pylance
        runs the scan and reports its metrics).

        Args:
            count_rows: Accepted for pylance's signature; no effect.

        Returns:
            The plan, one step per line.
        """
        return self.explain_plan(verbose=True)


#: small fragments share a task of the scan's fragment pool up to this many rows (or TASK_FRAGMENTS)
TASK_ROWS = 1 << 14
TASK_FRAGMENTS = 32
#: scan tasks at once over an object store (their requests wait on the store, not on the CPU)
REMOTE_TASKS = 8


def _remote_tasks() -> ThreadPoolExecutor:
    """The pool a remote scan's tasks run on: more at once than locally, so fragments read alone
    (large ones) keep requests in flight side by side too."""
    return shared_pool("scan-tasks", REMOTE_TASKS)


def _tasks(frags: list[Fragment], order: list[int]) -> list[list[int]]:
    """``order`` cut into tasks: runs of small fragments (known from the manifest) together, each
    other fragment alone, so a scan of thousands of small fragments is not thousands of tasks."""
    from lancelot.dataset.fragment_groups import small_runs

    return small_runs(frags, order, TASK_ROWS, TASK_FRAGMENTS)


def _window(t: pa.Table, skip: int, left: int | None) -> tuple[pa.Table, int, int | None]:
    """The rows of ``t`` after ``skip`` rows, at most ``left`` of them; the offset and limit left."""
    if skip:
        cut = min(skip, t.num_rows)
        t, skip = t.slice(cut), skip - cut
    if left is not None:
        t = t.slice(0, left)
        left -= t.num_rows
    return t, skip, left


def _whole(
    reads: InOrder | None, frag: Fragment, i: int, cols: list[str], filt: pc.Expression | None, pos: bool
) -> tuple[Fragment, pa.Table]:
    """A fragment's live rows (that pass ``filt``), from its run when read together (``reads``)."""
    return frag, reads.read(i) if reads is not None else frag.read(cols, filt, positions=pos)


def _live_range(frag: Fragment, a: int, b: int, cols: list[str], need_pos: bool) -> tuple[Fragment, pa.Table]:
    """Live rows ``a`` to ``b`` of a fragment, with their physical positions when asked."""
    t = frag.read_range(a, b - a, cols)
    if need_pos:
        t = t.append_column(_POS, pa.array(frag.physical_of_live(np.arange(a, b, dtype=np.int64))))
    return frag, t


def _read_ahead(reads: Iterator[Callable[[], _R]], ahead: int) -> Iterator[_R]:
    """The results of ``reads`` in order; with ``ahead``, that many run side by side on the remote
    scan's pool, the next one issued as a result is taken (none once the caller stops)."""
    if not ahead:
        yield from (read() for read in reads)
        return
    pending: deque[Future[_R]] = deque()
    try:
        for read in reads:
            pending.append(_remote_tasks().submit(read))
            if len(pending) >= ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for fut in pending:
            fut.cancel()


def _byte_width(t: pa.DataType) -> int | None:
    """Bytes per value of a fixed-width type (None: variable width, nested)."""
    try:
        return int(t.byte_width)
    except ValueError:
        return None


def _batches_of(frag: Fragment, t: pa.Table, chunk: int | None, physical: bool) -> list[pa.Table]:
    """A fragment's filtered rows cut as pylance's batches: the fragment read ``chunk`` live rows
    (``physical``: rows, deleted too) at a time, each batch filtered, the empty ones dropped."""
    if chunk is None or t.num_rows <= 1:
        return [t]
    pos = t.column(_POS).to_numpy().astype(np.int64)
    deleted = frag.deleted_positions() if not physical else np.empty(0, np.int64)
    live = pos - np.searchsorted(deleted, pos) if len(deleted) else pos
    which = live // chunk
    if which[0] == which[-1]:
        return [t]
    cuts = np.flatnonzero(np.diff(which)) + 1
    bounds = [0, *cuts.tolist(), t.num_rows]
    return [t.slice(a, b - a) for a, b in zip(bounds, bounds[1:])]


def _rows_only(parts: list[pa.Table]) -> pa.Table:
    """A table without columns holding the rows of ``parts``."""
    n = sum(p.num_rows for p in parts)
    return pa.table({"_": pa.nulls(n)}).drop_columns(["_"])


def unsupported(where: str, **options: Any) -> None:
    """Refuse options lancelot does not implement (rather than silently ignoring them)."""
    for name, value in options.items():
        if value is not None and value is not False:
            raise LanceValueError(f"{where}: the scan option {name}={value!r} is not supported by lancelot")


Scanner = LanceScanner

__all__ = ["ColumnOrdering", "LanceScanner", "Scanner", "as_filter", "projection", "row_columns"]
