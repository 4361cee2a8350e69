"""Scans of a dataset version: ``LanceDataset.scanner(...)`` (pylance's ``LanceScanner``).

The scanner checks its options and plans what to read; the rows come from scan_batches.py (fragments
in order, with the filter, offset and limit, cut in pylance's batches), fragment_readahead.py
(fragments read side by side) and vector_search.py (``nearest``); scan_projection.py computes the
columns asked: dataset columns, nested paths, SQL expressions and the row-id columns of the table
format ("Row ids": ``_rowid``, ``_rowaddr`` and ``_rowoffset``, the row's index among the live rows).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset import fragment_readahead, scan_batches
from lancelot.dataset.fragment_columns import POS
from lancelot.dataset.row_id_columns import ROW_ADDR, ROW_ID, ROW_OFFSET, row_columns
from lancelot.dataset.scan import as_filter, filter_columns, row_columns_in, zone_filters
from lancelot.dataset.scan_projection import Projection, projection, with_row_columns
from lancelot.errors import LanceValueError
from lancelot.sql.expression_tree import check_fields
from lancelot.util.arrays import take_table

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.fragment import Fragment

#: pylance's default rows per batch (the environment's LANCE_DEFAULT_BATCH_SIZE, as in pylance, else this)
DEFAULT_BATCH_SIZE = 8192


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


@dataclass
class ScanState:
    """What a scan's modules (scan_batches.py, take.py, vector_search.py) read of its scanner: the dataset version,
    the fragments in order, the projection, and the row-id columns the filter names (computed before it applies)."""

    ds: LanceDataset
    where: str
    frags: list[Fragment]
    proj: Projection
    filter_rows: set[str]
    include_deleted_rows: bool

    def offset_bases(self) -> dict[int, int]:
        """Live rows of the dataset before each fragment (for ``_rowoffset``)."""
        out, n = {}, 0
        for f in self.ds.get_fragments():
            out[f.fragment_id] = n
            n += f.count_rows()
        return out

    def bases(self, rows: set[str]) -> dict[int, int] | None:
        """``offset_bases`` when the row-id columns ``rows`` hold ``_rowoffset``."""
        return self.offset_bases() if ROW_OFFSET in rows else None

    def read_cols(self) -> list[str]:
        return list(self.proj.reads)

    def finish(self, frag: Fragment, t: pa.Table, bases: dict[int, int] | None) -> pa.Table:
        """The output columns of one piece."""
        if self.proj.rows:
            t = with_row_columns(frag, t, self.proj.rows, bases, self.include_deleted_rows)
        return self.project(t)

    def project(self, t: pa.Table) -> pa.Table:
        return self.proj.project(t, self.ds.schema.metadata, self.where)


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
        where = f"dataset {ds.uri!r} version {ds.version}"
        for name, n in (("Limit", limit), ("Offset", offset)):  # pylance's words for a negative one
            if n is not None and not isinstance(n, int | np.integer):
                raise LanceValueError(f"{where}: {name.lower()} must be a non-negative integer, not {n!r}")
            if n is not None and n < 0:
                raise LanceValueError(f"{where}: {name} must be non-negative, not {n!r}")
        if batch_size is not None and batch_size <= 0:
            raise LanceValueError(f"{where}: batch_size must be positive, not {batch_size!r}")
        self.limit = None if limit is None else int(limit)
        self.offset = int(offset or 0)
        self.batch_size = int(batch_size or os.environ.get("LANCE_DEFAULT_BATCH_SIZE") or DEFAULT_BATCH_SIZE)
        #: every batch exactly ``batch_size`` rows but the last (batches may span fragments)
        self.strict_batch_size = bool(o("strict_batch_size"))
        #: which projected columns are read after the filter: None pylance's default, a bool all or none, or names
        self.late_materialization: bool | list[str] | None = o("late_materialization")
        self._filter_text = filter if isinstance(filter, str) else None
        self.filter = as_filter(filter, ds.schema)
        #: row-id columns the filter names: computed before it is applied
        filter_rows = row_columns_in(self.filter, ds.schema)
        self.nearest = None
        if o("nearest") is not None:
            from lancelot.dataset.vector_search import parse_nearest

            self.nearest = parse_nearest(o("nearest"), ds.schema, where)
        self.prefilter = bool(o("prefilter"))
        self.include_deleted_rows = bool(o("include_deleted_rows"))
        from lancelot.dataset.blob_scan import wants_binary

        #: blob_handling="all_binary": blob columns as bytes, found by row address (dropped after unless asked)
        self._binary = wants_binary(o("blob_handling"))
        proj = projection(ds.schema, columns, o("with_row_id"), o("with_row_address"), where)
        self._drop_addr = self._binary and ROW_ADDR not in proj.names
        if self._drop_addr:
            proj = replace(proj, names=[*proj.names, ROW_ADDR], rows=proj.rows | {ROW_ADDR}, added=proj.added + 1)
        #: only literal expressions, no column nor row id: pylance's scans refuse to run these
        self._no_column = bool(proj.exprs) and not (proj.reads or proj.rows or proj.fields)
        if isinstance(filter, pc.Expression):  # bound to the dataset's schema by pylance, even with with_row_id
            check_fields(filter, ds.schema)
        if self.include_deleted_rows and ROW_ID not in proj.rows:
            raise LanceValueError(f"{where}: include_deleted_rows is set but with_row_id is false")
        #: no ``_distance`` column in a vector search's result
        self.no_distance = bool(o("disable_scoring_autoprojection"))
        self.order_by = sort_keys(o("order_by"), ds.schema, where)
        for name, _, _ in self.order_by:
            if name not in proj.reads:
                proj.reads.append(name)  # read for sorting, not returned unless asked
        fragments = o("fragments")
        if fragments is None:
            frags = ds.get_fragments()
        else:
            frags = []
            for f in fragments:
                fid = f if isinstance(f, int) else int(f.fragment_id)  # a fragment or its id
                mine = ds.get_fragment(fid)  # (one lookup in the version's id table)
                if mine is None:
                    raise LanceValueError(f"{where}: fragment {fid} is not in this version")
                frags.append(mine)
        self.state = ScanState(ds, where, frags, proj, filter_rows, self.include_deleted_rows)
        self._schema: pa.Schema | None = None

    # -- planning ---------------------------------------------------------------------------------
    def _empty_input(self) -> pa.Table:
        from lancelot.dataset.blob import scan_schema  # blob columns scan as their descriptions

        cols = self.state.read_cols()
        schema = scan_schema(self.state.ds.schema)
        t = pa.schema([schema.field(c) for c in cols], metadata=schema.metadata).empty_table()
        return t.append_column(POS, pa.array([], pa.int64()))

    def _nearest_table(self) -> pa.Table:
        from lancelot.dataset.vector_search import search

        assert self.nearest is not None
        return search(self)

    # -- results ----------------------------------------------------------------------------------
    def _require_column(self) -> None:
        if self._no_column:
            raise LanceValueError(f"{self.state.where}: a scan must read at least one column, not only literals")

    @property
    def projected_schema(self) -> pa.Schema:
        """The schema of the scan's result."""
        self._require_column()
        if self._schema is None:
            t = self.state.project(self.state.proj.with_empty_rows(self._empty_input()))
            if self.nearest is not None:
                from lancelot.dataset.vector_search import scored

                t = scored(self, t, np.empty(0), np.empty(0, np.int32))
            self._schema = self._bytes(t).schema
        return self._schema

    @property
    def dataset_schema(self) -> pa.Schema:
        """The schema of the dataset being scanned (before projection)."""
        return self.state.ds.schema

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The result in record batches, cut as pylance cuts them (dataset/scan_batches.py).

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
            schema = binary_schema(self.state.ds, t.schema)
            if self._drop_addr and ROW_ADDR in schema.names:
                schema = schema.remove(schema.get_field_index(ROW_ADDR))
            return schema.empty_table()
        addresses = t.column(ROW_ADDR).to_numpy(zero_copy_only=False)
        out = binary_table(self.state.ds, t, addresses)
        return out.drop_columns([ROW_ADDR]) if self._drop_addr else out

    def _batches(self) -> Iterator[pa.RecordBatch]:
        self._require_column()
        if self.nearest is not None or self.order_by:
            out: Iterator[pa.RecordBatch] = iter(self._table().to_batches(max_chunksize=self.batch_size))
        else:
            out = scan_batches.batches(self)
        yield from scan_batches.strict(out, self.batch_size) if self.strict_batch_size else out

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
        bases = unlimited.state.bases(self.state.proj.rows)
        outs, keys = [], []
        for frag, t in scan_batches.pieces(unlimited, None):
            outs.append(unlimited.state.finish(frag, t, bases))
            keys.append(t.select(list(dict.fromkeys(k for k, _, _ in self.order_by))))  # (a key twice: once)
        if not outs:
            return self.projected_schema.empty_table()
        out = pa.concat_tables(outs) if outs[0].num_columns else _rows_only(outs)
        key = pa.concat_tables(keys)
        for i, f in enumerate(key.schema):  # unlike dictionaries (2.0 files, one per fragment): sort by the values
            if pa.types.is_dictionary(f.type):
                key = key.set_column(i, f.name, key.column(i).cast(f.type.value_type))
            if pa.types.is_floating(key.schema.field(i).type):
                key = key.set_column(i, f.name, _total_order(key.column(i)))
        idx = pa.array(np.arange(key.num_rows, dtype=np.int64))
        for name, ascending, nulls_first in reversed(self.order_by):  # stable passes, last key first
            col = key.column(name).take(idx)
            order = pc.array_sort_indices(
                col,
                order="ascending" if ascending else "descending",
                null_placement="at_start" if nulls_first else "at_end",
            )
            idx = idx.take(order)
        out = take_table(out, idx) if out.num_columns else out
        return scan_batches.slice_rows(out, self.offset, self.limit)

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
        bases = self.state.bases(self.state.proj.rows)
        if self.limit is None and not self.offset and not self.include_deleted_rows and not self.state.filter_rows:
            st = self.state
            need_pos, local, finish = bool(st.proj.rows), st.ds.store.is_local, partial(st.finish, bases=bases)
            parts = fragment_readahead.read_all(st.frags, st.read_cols(), self.filter, need_pos, local, finish)
        else:
            parts = [self.state.finish(frag, t, bases) for frag, t in scan_batches.pieces(self, None)]
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

    def with_blob_reads(self, *, binary: bool, with_row_address: bool = False) -> LanceScanner:
        """A copy of this scan reading blob columns as their bytes or as their descriptions (for ``to_pandas``'s
        blob modes, dataset/blob_scan.py).

        Args:
            binary: Blob columns as their bytes (True) or their descriptions (False).
            with_row_address: Return ``_rowaddr`` too, even where this scan does not.

        Returns:
            A new ``LanceScanner``; this one is unchanged.
        """
        p = self.state.proj
        asked = ROW_ADDR in p.names and not self._drop_addr
        if (binary or with_row_address) and ROW_ADDR not in p.names:
            p = replace(p, names=[*p.names, ROW_ADDR], rows=p.rows | {ROW_ADDR}, added=p.added + 1)
        drop = not asked and not with_row_address
        return self._copy(state=replace(self.state, proj=p), _binary=binary, _drop_addr=drop)

    def count_rows(self) -> int:
        """The number of rows the scan returns, reading only what the filter needs.

        Returns:
            The row count.

        Raises:
            ValueError: The scan has a limit or an offset (pylance refuses them here too).
        """
        self._require_column()
        if self.limit is not None or self.offset:
            where = self.state.where
            raise LanceValueError(f"{where}: count_rows cannot use a limit or offset (apply them to the result)")
        if self.nearest is not None:
            return int(self._nearest_table().num_rows)
        if self.filter is None and not self.include_deleted_rows:
            return sum(f.count_rows() for f in self.state.frags)
        if self.include_deleted_rows or self.state.filter_rows:  # row-id columns computed before filtering
            return sum(t.num_rows for _, t in scan_batches.pieces(self, None))
        return fragment_readahead.count_rows(self.state.frags, self.filter, self.state.ds.store.is_local)

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
            raise LanceValueError(f"{self.state.where}: head needs a non-negative number of rows, not {num_rows}")
        limit = num_rows if self.limit is None else min(num_rows, self.limit)
        s = self._copy(limit=limit)
        return s.to_table()

    def _copy(self, **changes: Any) -> LanceScanner:
        """A copy of this scan with some of its settings changed (``head``'s limit...); this one is left as it is."""
        new = copy.copy(self)
        for name, value in changes.items():
            setattr(new, name, value)
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
        p = self.state.proj
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
        fcols = [] if self.filter is None else filter_columns(self.filter, list(self.state.ds.schema.names))
        read = p.reads + [c for c in fcols if c not in p.reads]
        lines.append(
            f"  LanceRead: uri={self.state.ds.uri}, version={self.state.ds.version}, projection=[{', '.join(read)}], "
            f"num_fragments={len(self.state.frags)}, row_id={ROW_ID in p.rows}, row_addr={ROW_ADDR in p.rows}"
        )
        if verbose and self.filter is not None:
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


def _total_order(col: pa.ChunkedArray) -> pa.Array:
    """Floats as integers in IEEE total order, as DataFusion sorts them (-NaN < -inf < ... < -0.0 < 0.0 < ... < inf <
    NaN; Arrow's sort puts every NaN with the nulls and -0.0 with 0.0), nulls kept."""
    arr = col.combine_chunks().cast(pa.float64())
    bits = np.asarray(arr.fill_null(0.0).to_numpy(zero_copy_only=False), np.float64).view(np.int64)
    ordered = bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))
    return pa.array(ordered, pa.int64(), mask=arr.is_null().to_numpy(zero_copy_only=False))


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

__all__ = ["ColumnOrdering", "LanceScanner", "Scanner", "as_filter", "projection", "row_columns", "row_columns_in"]
