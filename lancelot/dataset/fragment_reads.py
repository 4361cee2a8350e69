"""``Fragment``'s reads: physical row ranges pruned by zone maps, deleted rows dropped (``read``, ``read_range``,
``take``), and pylance's fragment scan API (``scanner``, ``to_table``, ``to_batches``, ``head``, ``to_pandas``)."""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import ArrayLike

from lancelot.dataset import blob  # blob columns read as their descriptions (dataset/blob.py)
from lancelot.dataset.fragment_columns import POS
from lancelot.dataset.scan import scan_arguments
from lancelot.dataset.signatures import arguments, inherit_arguments, takes
from lancelot.util.pools import shared_pool

if TYPE_CHECKING:
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.scanner import LanceScanner
    from lancelot.reader import LanceFile
    from lancelot.zonemap_pruning import Filter, ZoneMaps


#: parsed zone maps of open data files (None: the file has none); a data file never changes, and an entry
#: goes with its LanceFile (open_files.py keeps the recently used ones open across datasets)
_ZONE_MAPS: weakref.WeakKeyDictionary[LanceFile, ZoneMaps | None] = weakref.WeakKeyDictionary()
_ZONE_MAPS_LOCK = threading.Lock()


def _zone_maps(lf: LanceFile) -> ZoneMaps | None:
    """``lf.zone_maps()``, parsed once per open data file."""
    with _ZONE_MAPS_LOCK:
        if lf in _ZONE_MAPS:
            return _ZONE_MAPS[lf]
    zm = lf.zone_maps()
    with _ZONE_MAPS_LOCK:
        _ZONE_MAPS[lf] = zm
    return zm


#: the parameters of pylance's ``LanceFragment.to_batches`` (its ``scanner``'s) and ``to_table``, in its order
_BATCHES = "columns batch_size filter limit offset with_row_id with_row_address batch_readahead blob_handling order_by "
_BATCHES += (
    "use_scalar_index io_buffer_size late_materialization include_deleted_rows batch_size_bytes strict_batch_size"
)
_TABLE = " ".join(n for n in _BATCHES.split() if n not in ("batch_size", "batch_readahead"))


class ReadsMixin:
    """Fragment's reads (mixed into ``Fragment``; see dataset/fragment.py)."""

    def zone_ranges(self: Fragment, filters: list[Filter]) -> list[tuple[int, int]]:
        """Physical row ranges that may hold rows matching every filter, from the data files' zone maps.

        Files without zone maps prune nothing; deleted rows are not removed (``deleted_positions`` gives them), and the
        filter must still be applied to the rows read.

        Args:
            filters: Zone-map filters, ``(column, op, value)`` tuples (``lancelot.zonemaps``;
                ``lancelot.dataset.scan.zone_filters`` makes them from a pyarrow Expression).

        Returns:
            ``[start, stop)`` ranges, ascending.
        """
        ranges = [(0, self.physical_rows)]
        if not filters:
            return ranges
        for lf, names in self.file_columns():
            zm = _zone_maps(lf)
            if zm is None:
                continue
            own = [f for f in filters if names.get(f[0]) == f[0]]
            if not own:
                continue
            ranges = _intersect(ranges, zm.row_ranges_matching(own))
        return ranges

    def read(
        self: Fragment,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        *,
        positions: bool = False,
        limit: int | None = None,
    ) -> pa.Table:
        """The fragment's live rows (the engine under scans; users call ``to_table``).

        Args:
            columns: Names; None for all.
            filter: A ``pyarrow.compute`` Expression.
            positions: Add a last int64 column of each row's physical position.
            limit: With a filter, only the first this many rows that pass, read in chunks until that
                many passed; None for all.

        Returns:
            A ``pyarrow.Table``.
        """
        if isinstance(filter, str):  # a SQL filter (lancelot.sql)
            from lancelot.dataset.scan import check_filter

            filter = check_filter(filter, self._ds.schema)
        cols = self._columns(columns)
        if filter is None:
            deleted = self.deleted_positions()
            if not len(deleted):
                t = self.read_physical(cols, 0, self.physical_rows)
            else:
                t = _drop_deleted(self.read_physical(cols, 0, self.physical_rows), deleted)  # no other ref
            if positions:
                t = t.append_column(POS, pa.array(self.live_positions()))
            return t
        from lancelot.dataset.scan import apply_filter, filter_columns, zone_filters

        fcols = filter_columns(filter, self._ds.schema.names)
        rest = [c for c in cols if c not in fcols]
        out_cols = cols + [POS] if positions else cols
        parts = []
        deleted = self.deleted_positions()
        progress = [0, 0]  # (rows passed, rows read: they size the next chunk under a limit)
        for a, b in _chunks(self.zone_ranges(zone_filters(filter)), limit, progress):
            progress[1] += b - a
            # the filter's columns first; the other columns only for the rows that pass (late materialisation)
            t = self.read_physical(fcols, a, b).append_column(POS, pa.array(np.arange(a, b, dtype=np.int64)))
            if len(deleted):
                d = deleted[(deleted >= a) & (deleted < b)].astype(np.int64) - a
                if len(d):
                    mask = np.ones(b - a, dtype=bool)
                    mask[d] = False
                    t = t.filter(pa.array(mask))
            t = apply_filter(t, filter, self.where)
            if limit is not None and t.num_rows > limit - progress[0]:  # (the other columns of those kept only)
                t = t.slice(0, limit - progress[0])
            if rest and t.num_rows:
                pos = t.column(POS).to_numpy()
                if t.num_rows * 4 < b - a:
                    more = self.take_physical(rest, pos)
                else:
                    more = self.read_physical(rest, a, b).take(pa.array(pos - a))
                for c in rest:
                    t = t.append_column(blob.scan_schema(self._ds.schema).field(c), more.column(c))  # blobs
            elif rest:
                continue
            parts.append(t.select(out_cols))
            progress[0] += t.num_rows
        if not parts:
            return self.empty_table(cols, positions)
        if not out_cols:  # concat_tables drops the rows of column-less tables
            return self.read_physical([], 0, sum(p.num_rows for p in parts))
        return pa.concat_tables(parts)

    def read_range(self: Fragment, offset: int, length: int, columns: Sequence[str] | None = None) -> pa.Table:
        """Consecutive live rows (deleted rows are skipped).

        Args:
            offset: The first live row.
            length: How many rows.
            columns: Names; None for all.

        Returns:
            A ``pyarrow.Table`` of at most ``length`` rows.
        """
        cols = self._columns(columns)
        if not len(self.deleted_positions()):
            a = min(max(0, int(offset)), self.physical_rows)
            return self.read_physical(cols, a, min(self.physical_rows, a + max(0, int(length))))
        a = min(max(0, int(offset)), self.count_rows())
        live = self.physical_of_live(np.arange(a, min(self.count_rows(), a + max(0, int(length))), dtype=np.int64))
        if not len(live):
            return self.read_physical(cols, 0, 0)
        a, b = int(live[0]), int(live[-1]) + 1
        t = self.read_physical(cols, a, b)
        if b - a == len(live):
            return t
        if not t.num_columns:  # Table.take of no columns loses the row count: slice one to length
            return t.slice(0, len(live))
        return t.take(pa.array(live - a))

    def take(self: Fragment, indices: ArrayLike, columns: Sequence[str] | dict[str, str] | None = None) -> pa.Table:
        """Live rows by their index among the fragment's live rows, in the order asked (duplicates allowed).

        Args:
            indices: Indices among the live rows.
            columns: Names or a dict of SQL expressions; None for all.

        Returns:
            A ``pyarrow.Table`` with one row per index.

        Raises:
            IndexError: An index out of range (also an OSError, as pylance's).
            OverflowError: A negative index.
            TypeError: An index that is not an integer.
        """
        from lancelot.dataset.row_selection import in_fragment
        from lancelot.dataset.take import read

        return read(self._ds, in_fragment(self, indices), columns)

    def scanner(
        self: Fragment,
        *,
        columns: Sequence[str] | dict[str, str] | None = None,
        batch_size: int | None = None,
        filter: str | pc.Expression | None = None,
        limit: int | None = None,
        offset: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        batch_readahead: int = 16,
        blob_handling: str | None = None,
        order_by: list[object] | None = None,
        use_scalar_index: bool | None = None,
        io_buffer_size: int | None = None,
        late_materialization: bool | list[str] | None = None,
        include_deleted_rows: bool | None = None,
        batch_size_bytes: int | None = None,
        strict_batch_size: bool | None = None,
    ) -> LanceScanner:
        """A scan of this fragment alone, as ``LanceDataset.scanner(fragments=[self])``.

        Args:
            columns: Names or a dict of SQL expressions, as in ``LanceDataset.scanner``; None for all.
            filter: SQL text or a ``pyarrow.compute`` Expression.
            limit: At most this many rows.
            offset: Skip this many rows first.
            with_row_id: Add ``_rowid``.
            with_row_address: Add ``_rowaddr``.
            batch_size: Rows per batch of ``to_batches``.
            batch_readahead: Accepted; no effect.
            blob_handling: As in ``LanceDataset.scanner``.
            order_by: Sort keys, as in ``LanceDataset.scanner``.
            use_scalar_index: Accepted; no effect.
            io_buffer_size: Accepted; no effect.
            late_materialization: Accepted; no effect.
            include_deleted_rows: Also return deleted rows (needs ``with_row_id``).
            batch_size_bytes: Accepted; no effect.
            strict_batch_size: Accepted; no effect.

        Returns:
            A ``LanceScanner``.
        """
        return self._ds.scanner(fragments=[self], **scan_arguments(locals()))  # (each by name)

    @takes([scanner], _TABLE, positional=14)
    def to_table(self: Fragment, *args: Any, **kwargs: Any) -> pa.Table:
        """The fragment's live rows (matching ``filter``) as one table.

        Takes ``scanner``'s arguments but ``batch_size`` and ``batch_readahead``, positional too (pylance's order).

        Args:

        Returns:
            A ``pyarrow.Table``.
        """
        return self.scanner(**arguments(ReadsMixin.to_table, (self, *args), kwargs)).to_table()

    @takes([scanner], _BATCHES)
    def to_batches(self: Fragment, *args: Any, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        """The fragment's live rows (matching ``filter``) in record batches of at most ``batch_size`` rows.

        Takes ``scanner``'s (keyword) arguments, as pylance's ``LanceFragment.to_batches``.

        Args:

        Returns:
            An iterator of ``pyarrow.RecordBatch``.
        """
        return self.scanner(**arguments(ReadsMixin.to_batches, (self, *args), kwargs)).to_batches()

    def head(self: Fragment, num_rows: int) -> pa.Table:
        """The fragment's first rows.

        Args:
            num_rows: How many rows.

        Returns:
            A ``pyarrow.Table`` of at most ``num_rows`` rows.
        """
        return self.scanner(limit=num_rows).to_table()

    def to_pandas(
        self: Fragment,
        columns: Sequence[str] | dict[str, str] | None = None,
        filter: str | pc.Expression | None = None,
        limit: int | None = None,
        offset: int | None = None,
        batch_size: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        blob_mode: str = "lazy",
        order_by: list[object] | None = None,
        **kwargs: Any,
    ) -> Any:
        """This fragment's rows as a pandas DataFrame (pandas must be installed).

        Args:
            columns: the columns to read (default: all).
            filter: a SQL filter or pyarrow expression.
            limit: at most this many rows.
            offset: rows to skip first.
            batch_size: rows per scan batch.
            with_row_id: add the ``_rowid`` column.
            with_row_address: add the ``_rowaddr`` column.
            blob_mode: blob columns as ``BlobFile`` objects (``"lazy"``), their bytes (``"bytes"``) or their
                descriptions (``"descriptions"``), as pylance's.
            order_by: sort keys, as in ``scanner``.
            **kwargs: options of ``pyarrow.Table.to_pandas``.

        Returns:
            A ``pandas.DataFrame``.
        """
        scan = {k: v for k, v in locals().items() if k not in ("self", "blob_mode", "kwargs")}
        return self.scanner(**scan).to_pandas(blob_mode=blob_mode, **kwargs)


for _fn in (ReadsMixin.to_table, ReadsMixin.to_batches):
    inherit_arguments(_fn, ReadsMixin.scanner)

#: a run of at least this many rows without deletions is kept as a zero-copy slice, not filtered
CLEAN_RUN_ROWS = 1 << 16


def deletion_segments(deleted: np.ndarray, n: int) -> list[tuple[int, int, bool]]:
    """``[start, stop)`` segments of ``n`` rows in order, each True where it holds deletions (to filter) and False for
    runs of at least CLEAN_RUN_ROWS rows without any (kept as they are)."""
    d = np.asarray(deleted, dtype=np.int64)
    gaps_lo = np.concatenate([[0], d + 1])  # the rows strictly between deletions (and before / after them)
    gaps_hi = np.concatenate([d, [n]])
    clean = np.flatnonzero(gaps_hi - gaps_lo >= CLEAN_RUN_ROWS)
    out: list[tuple[int, int, bool]] = []
    pos = 0
    for i in clean:
        a, b = int(gaps_lo[i]), int(gaps_hi[i])
        if a > pos:
            out.append((pos, a, True))
        out.append((a, b, False))
        pos = b
    if pos < n:
        out.append((pos, n, True))
    return out


def _drop_deleted(t: pa.Table, deleted: np.ndarray) -> pa.Table:
    """``t`` without the rows at the (sorted) positions ``deleted``.

    Long runs without deletions stay zero-copy slices (a fragment whose deletions sit in one region copies only that
    region); the rest is filtered a column at a time: each column's old buffers are freed before the next is filtered
    (less fresh memory to fault in), and ``pc.filter`` per column costs about half of ``Table.filter`` here (TPC-H
    lineitem, 3 fragments: 60 vs 120 ms)."""
    n = t.num_rows
    mask = np.ones(n, dtype=bool)
    mask[deleted] = False
    if not t.num_columns or n < CLEAN_RUN_ROWS:  # no clean run to keep: one filter of the whole (small) table
        return t.filter(pa.array(mask))
    segments = [(a, b, pa.array(mask[a:b]) if dirty else None) for a, b, dirty in deletion_segments(deleted, n)]
    cols, schema = t.columns, t.schema
    del t

    def drop(i: int) -> None:
        col, parts = cols[i], []
        for a, b, keep in segments:
            part = col.slice(a, b - a)
            parts.extend((pc.filter(part, keep) if keep is not None else part).chunks)
        cols[i] = pa.chunked_array(parts, col.type)

    dirty_rows = sum(b - a for a, b, keep in segments if keep is not None)
    if len(cols) > 1 and dirty_rows * len(cols) >= PARALLEL_FILTER_CELLS:
        workers = max(1, min(4, os.cpu_count() or 1))  # pc.filter releases the GIL
        list(shared_pool("filter", workers).map(drop, range(len(cols))))
    else:
        for i in range(len(cols)):
            drop(i)
    return pa.Table.from_arrays(cols, schema=schema)


#: deletion filters of at least this many cells (rows x columns) run a column per thread (one per CPU, at most 4)
PARALLEL_FILTER_CELLS = 1 << 20


#: a read with a limit: the first chunk reads at least this many rows
FIRST_CHUNK_ROWS = 1 << 13


def _chunks(ranges: list[tuple[int, int]], limit: int | None, progress: list[int]) -> Iterator[tuple[int, int]]:
    """``ranges`` as they are without a limit; with one, in chunks until ``limit`` rows passed (``progress``:
    the rows passed and read so far, updated by the caller between chunks): the first of 8 rows a row
    wanted, each next sized from the share of rows that passed so far (a quarter more), four times the
    rows read when none passed."""
    for a, b in ranges:
        while a < b:
            if limit is not None and progress[0] >= limit:
                return
            passed, seen = progress
            if limit is None:
                size = b - a
            elif not seen:
                size = max(FIRST_CHUNK_ROWS, limit * 8)
            elif not passed:
                size = seen * 4
            else:
                size = max(FIRST_CHUNK_ROWS, (limit - passed) * seen * 5 // (passed * 4) + 1)
            yield a, min(b, a + size)
            a += size


def _intersect(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out
