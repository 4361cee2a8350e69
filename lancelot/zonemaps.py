"""Zone maps: per-zone min / max / null count of a file's primitive columns.

A lancelot extension, not part of the Lance format: the writer cuts the file's rows into zones of
``rows_per_zone`` rows, keeps the smallest and largest value and the null count of every primitive
column (top-level, or reached through structs only) per zone, and stores them as one extra global
buffer in the layout of lancelot/zonemap_codec.py (format 2: a few hundred bytes for a file of one
zone).  Files written before it hold format 1, still read::

    MAGIC | Arrow IPC stream of one table, one row per zone:
            rows (int64) | c<j>.min | c<j>.max | c<j>.nulls (int64)  for each column j

(the schema metadata names the columns, ``lancelot.columns``: a JSON list of paths, and the zone
size).  pylance ignores global buffers it does not know, so files carrying zone maps stay
readable everywhere.  This module builds and parses them; zonemap_stats.py computes the bounds,
zonemap_pruning.py uses them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.errors import CorruptFileError
from lancelot.util.arrays import from_numpy, to_numpy, zero
from lancelot.zonemap_codec import MAGIC_V2, ColumnZones, column_bytes, decode, encode, encode_parts, one_zone_bytes
from lancelot.zonemap_pruning import ZoneMaps
from lancelot.zonemap_stats import (
    Path,
    Stats,
    binary_bounds,
    cut_bounds,
    dense_bounds,
    leaf_array,
    leaf_columns,
    numeric_zone_stats,
    one_zone_stats,
    prepare,
    stat_type,
)

#: format 1 (Arrow IPC), read only; every format starts with MAGIC_PREFIX and one version byte
MAGIC = b"LANCELOT-ZONEMAPS\x01"
MAGIC_PREFIX = MAGIC[:-1]
#: the formats this version reads (a file holding a later one reads as having no zone maps)
MAGICS = (MAGIC, MAGIC_V2)
DEFAULT_ROWS_PER_ZONE = 4096
#: statistics are computed once this many zones of rows are pending (fewer calls for small batches)
FLUSH_ZONES = 16
#: byte-string bounds of at least this many zones at once go through the numba kernel (zonemap_bounds.py)
KERNEL_MIN_ZONES = 16


class ZoneMapBuilder:
    """Collects zone maps while a file is written: ``update(batch)`` per batch, then ``finish()``."""

    def __init__(
        self,
        schema: pa.Schema,
        rows_per_zone: int = DEFAULT_ROWS_PER_ZONE,
        run: Callable[[Callable[[], Any]], Future[Any]] | None = None,
        columns: list[tuple[Path, pa.DataType]] | None = None,
    ) -> None:
        """``run`` (e.g. the writer's page pool): computes each column's statistics of each block of
        zones in the background, so the caller's thread goes on with its batches; ``finish`` collects
        them in order (the bytes do not depend on it).  ``columns``: ``leaf_columns(schema)``, made before."""
        if rows_per_zone <= 0:
            raise ValueError("rows_per_zone must be positive")
        self.schema = schema
        self.rows_per_zone = int(rows_per_zone)
        self._run = run
        self._columns = columns if columns is not None else leaf_columns(schema)
        self._alive = [True] * len(self._columns)
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._rows: list[np.ndarray] = []
        #: per column, each block's (min, max, nulls), a Future of it, or None (the column's type failed)
        self._stats: list[list[Stats | Future[Stats | None] | None]] = [[] for _ in self._columns]

    def update(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Account for the next rows of the file."""
        if batch.num_rows == 0:
            return
        t = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        self._pending.append(t)
        self._pending_rows += t.num_rows
        if self._pending_rows >= self.rows_per_zone * FLUSH_ZONES:
            whole = (self._pending_rows // self.rows_per_zone) * self.rows_per_zone
            table = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
            self._add_zones(table.slice(0, whole))
            rest = table.slice(whole)
            self._pending = [rest] if rest.num_rows else []
            self._pending_rows = rest.num_rows

    def _add_zones(self, table: pa.Table, inline: bool = False) -> None:
        """Statistics of ``table`` cut into zones of rows_per_zone rows (the last may be shorter):
        one job per column, on ``run`` unless ``inline``."""
        n = table.num_rows
        nzones = (n + self.rows_per_zone - 1) // self.rows_per_zone
        self._rows.append(np.diff(np.minimum(np.arange(nzones + 1) * self.rows_per_zone, n)))
        for j, (path, _) in enumerate(self._columns):
            if not self._alive[j]:
                continue
            # a job holds its own column only: queued behind long pages, one holding the table kept every
            # column of the batch (a 32 MiB vector column without statistics too)
            column = table.column(path[0])
            if self._run is None or inline:
                self._stats[j].append(self._column_stats(column, path, nzones))
            else:
                self._stats[j].append(self._run(partial(self._column_stats, column, path, nzones)))

    def _column_stats(self, column: pa.ChunkedArray, path: Path, nzones: int) -> Stats | None:
        """(mins, maxs, nulls) of the zones of the leaf at ``path`` of the top-level ``column``; None for a
        type pyarrow cannot aggregate."""
        try:
            arr = prepare(leaf_array(column, path))
            stats = numeric_zone_stats(arr, self.rows_per_zone, nzones)
            if stats is None and nzones == 1 and stat_type(arr.type) == pa.binary():
                stats = one_zone_stats(arr)
            if stats is None:
                zone = from_numpy(np.arange(len(column), dtype=np.int64) // self.rows_per_zone)
                stats = self._zone_stats(arr, zone, nzones, self.rows_per_zone)
            return stats
        except (pa.ArrowException, ValueError, TypeError):
            return None  # a type pyarrow cannot aggregate: no statistics for this column

    @staticmethod
    def _zone_stats(arr: pa.Array, zone: pa.Array, nzones: int, rows_per_zone: int | None = None) -> Stats:
        """Bounds per zone (``zone`` = each row's zone); byte strings with ``rows_per_zone`` given
        take one numba pass (zonemap_bounds.py; a few zones: one min_max each), cheaper than the hash group-by."""
        if rows_per_zone and stat_type(arr.type) == pa.binary():
            if nzones == 1:
                return one_zone_stats(arr)
            if nzones >= KERNEL_MIN_ZONES:
                from lancelot.zonemap_bounds import string_zone_bounds  # imports numba: only when worth it

                lo, hi, nulls = string_zone_bounds(arr, rows_per_zone, nzones)
                return cut_bounds(lo, hi) + (nulls,)
            from lancelot.zonemap_bounds import bounds_per_zone  # a few zones: one min_max each, no numba

            lo, hi = bounds_per_zone(arr, rows_per_zone, nzones)
            nulls = np.array([arr.slice(k * rows_per_zone, rows_per_zone).null_count for k in range(nzones)], np.int64)
            return cut_bounds(lo, hi) + (nulls,)
        t = pa.table({"z": zone, "v": arr})
        aggs = [("v", "min_max"), ("v", "count", pc.CountOptions("only_null"))]
        floating = pa.types.is_floating(arr.type)
        if floating:
            t = t.append_column("nan", pc.fill_null(pc.is_nan(arr), zero(pa.bool_())).cast(pa.int64()))
            aggs.append(("nan", "sum"))
        g = t.group_by("z", use_threads=False).aggregate(aggs)
        g = g.take(pc.sort_indices(g["z"]))
        if g.num_rows != nzones:
            raise ValueError("zone grouping lost zones")
        mm = g["v_min_max"].combine_chunks()
        mins, maxs = mm.field("min"), mm.field("max")
        nulls = to_numpy(g["v_count"].combine_chunks()).astype(np.int64)
        if floating:
            no_nan = from_numpy(to_numpy(g["nan_sum"].combine_chunks()) == 0)
            mins = pc.if_else(no_nan, mins, pa.nulls(1, mins.type)[0])
            maxs = pc.if_else(no_nan, maxs, pa.nulls(1, maxs.type)[0])
        if stat_type(arr.type) == pa.binary():
            mins, maxs = cut_bounds(mins, maxs)
        return mins, maxs, nulls

    def _one_zone(self, column: pa.ChunkedArray, path: Path, st: pa.DataType) -> bytes | None:
        """The encoded column of a file of one zone (``column_bytes`` of its bounds, numeric and byte-string
        bounds straight from their values); None for a type pyarrow cannot aggregate."""
        try:
            arr = prepare(leaf_array(column, path))
            if st == pa.binary():
                return one_zone_bytes(path, st, *binary_bounds(arr), arr.null_count)
            dense = dense_bounds(arr)
            if dense is not None:
                return one_zone_bytes(path, st, *dense, 0)
        except (pa.ArrowException, ValueError, TypeError):
            return None
        stats = self._column_stats(column, path, 1)
        if stats is None:
            return None
        return column_bytes(ColumnZones(path, _joined([stats[0]], st), _joined([stats[1]], st), stats[2]))

    def finish(self) -> bytes:
        """Close the last (partial) zone and serialize everything (zonemap_codec.py's format 2)."""
        if not self._rows and 0 < self._pending_rows <= self.rows_per_zone:  # a small file: one zone
            table = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
            self._pending, self._pending_rows = [], 0
            encoded = [self._one_zone(table.column(path[0]), path, st) for path, st in self._columns]
            rows = np.array([table.num_rows], np.int64)
            return encode_parts(rows, [c for c in encoded if c is not None], self.rows_per_zone)
        if self._pending_rows:
            table = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
            self._add_zones(table, inline=True)  # the caller would only wait for it
            self._pending, self._pending_rows = [], 0
        for j, parts in enumerate(self._stats):
            parts[:] = [p.result() if isinstance(p, Future) else p for p in parts]
            if any(p is None for p in parts):
                self._alive[j] = False
        rows = np.concatenate(self._rows) if self._rows else np.zeros(0, np.int64)
        columns = []
        for j, (path, st) in enumerate(self._columns):
            if not self._alive[j]:
                continue
            blocks = [p for p in self._stats[j] if isinstance(p, tuple)]  # all: resolved above, none None
            mins, maxs = _joined([p[0] for p in blocks], st), _joined([p[1] for p in blocks], st)
            nulls = np.concatenate([p[2] for p in blocks]) if blocks else np.zeros(0, np.int64)
            columns.append(ColumnZones(path, mins, maxs, nulls.astype(np.int64)))
        return encode(rows.astype(np.int64), columns, self.rows_per_zone)


def _joined(parts: list[pa.Array], t: pa.DataType) -> pa.Array:
    """The blocks' bounds as one array of ``t`` (a small file's one block as it is)."""
    if len(parts) == 1 and parts[0].type == t:
        return parts[0]
    return pa.concat_arrays([p.cast(t) for p in parts]) if parts else pa.nulls(0, t)


def parse_zone_maps(data: bytes) -> ZoneMaps:
    """Parse a zone-map global buffer (format 2, zonemap_codec.py; or format 1, Arrow IPC)."""
    data = bytes(data)
    if data.startswith(MAGIC_V2):
        try:
            rows, columns, rows_per_zone = decode(data)
        except (pa.ArrowException, UnicodeDecodeError, KeyError, ValueError, TypeError) as e:
            raise CorruptFileError(f"zone map buffer does not parse: {e}") from None
    elif data.startswith(MAGIC):
        rows, columns, rows_per_zone = _parse_ipc(data)
    else:
        raise CorruptFileError("global buffer is not a lancelot zone map (bad magic)")
    if (rows < 0).any() or any((c.nulls < 0).any() or (c.nulls > rows).any() for c in columns):
        raise CorruptFileError("zone map counts are out of range")
    return ZoneMaps(rows, columns, rows_per_zone)


def _parse_ipc(data: bytes) -> tuple[np.ndarray, list[ColumnZones], int]:
    """(rows per zone, the columns, rows_per_zone) of a format-1 buffer (MAGIC + Arrow IPC stream)."""
    try:
        table = pa.ipc.open_stream(pa.py_buffer(data[len(MAGIC) :])).read_all()
        meta = table.schema.metadata or {}
        paths = json.loads(meta[b"lancelot.columns"])
        rows_per_zone = int(meta[b"lancelot.rows_per_zone"])
        rows = table.column("rows").to_numpy().astype(np.int64)
        columns = []
        for k, p in enumerate(paths):
            if not isinstance(p, list) or not p or not all(isinstance(x, str) for x in p):
                raise ValueError(f"bad column path {p!r}")
            mins = table.column(f"c{k}.min").combine_chunks()
            maxs = table.column(f"c{k}.max").combine_chunks()
            nulls = table.column(f"c{k}.nulls").to_numpy().astype(np.int64)
            columns.append(ColumnZones(tuple(p), mins, maxs, nulls))
    except (pa.ArrowException, KeyError, ValueError, TypeError) as e:
        raise CorruptFileError(f"zone map buffer does not parse: {e}") from None
    return rows, columns, rows_per_zone
