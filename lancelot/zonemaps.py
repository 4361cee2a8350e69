"""Zone maps: per-zone min / max / null count of a file's primitive columns.

A lancelot extension, not part of the Lance format: the writer cuts the file's
rows into zones of ``rows_per_zone`` rows, keeps the smallest and largest value
and the null count of every primitive column (top-level, or reached through
structs only) per zone, and stores them as one extra global buffer in the compact layout of lancelot/zonemap_codec.py
(format 2: a few hundred bytes for a file of one zone).  Files written before it hold format 1,
still read::

    MAGIC | Arrow IPC stream of one table, one row per zone:
            rows (int64) | c<j>.min | c<j>.max | c<j>.nulls (int64)  for each column j

(the schema metadata names the columns, ``lancelot.columns``: a JSON list of paths, and the zone
size).  pylance ignores global buffers it does not know, so files carrying zone maps stay
readable everywhere.

Bounds are conservative: a null bound in a zone that has non-null values means
"unbounded on that side" (strings longer than ``MAX_BOUND_BYTES`` are stored
truncated, float zones holding a NaN have no bounds), so ``row_ranges_matching``
never drops a row a filter could select; callers still apply the filter.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from lancelot.errors import CorruptFileError
from lancelot.util.arrays import arrow_offsets, from_numpy, to_numpy, zero
from lancelot.util.types import is_binary_like, is_plain_fixed, is_string_like
from lancelot.zonemap_codec import MAGIC_V2, ColumnZones, column_bytes, decode, encode, encode_parts, one_zone_bytes

#: format 1 (Arrow IPC), read only; every format starts with MAGIC_PREFIX and one version byte
MAGIC = b"LANCELOT-ZONEMAPS\x01"
MAGIC_PREFIX = MAGIC[:-1]
#: the formats this version reads (a file holding a later one reads as having no zone maps)
MAGICS = (MAGIC, MAGIC_V2)
DEFAULT_ROWS_PER_ZONE = 4096
#: string / binary bounds are cut to this many bytes
MAX_BOUND_BYTES = 64
#: statistics are computed once this many zones of rows are pending (fewer calls for small batches)
FLUSH_ZONES = 16
#: byte-string bounds of at least this many zones at once go through the numba kernel (zonemap_bounds.py)
KERNEL_MIN_ZONES = 16
#: an ``in`` filter with more values is checked as a [min, max] range
MAX_IN_VALUES = 64

Path = tuple[str, ...]
#: one block of zones of a column: (mins, maxs, null counts)
_Stats = tuple[pa.Array, pa.Array, np.ndarray]
#: a filter: (column, op, value) with op one of OPS; column is a name or a path through structs
Filter = tuple[Any, ...]
OPS = {"=", "!=", "<", "<=", ">", ">=", "in", "is_null", "is_not_null", "starts_with"}


def _stat_type(t: pa.DataType) -> pa.DataType | None:
    """The type a column's bounds are kept in, or None if the column gets no statistics."""
    if pa.types.is_dictionary(t):
        return _stat_type(t.value_type)
    if pa.types.is_float16(t):
        return pa.float32()
    if pa.types.is_fixed_size_binary(t) or is_string_like(t) or is_binary_like(t):
        return pa.binary()
    if pa.types.is_boolean(t) or is_plain_fixed(t):
        return t
    return None


def leaf_columns(schema: pa.Schema) -> list[tuple[Path, pa.DataType]]:
    """Every primitive column reachable from the top level through structs only, with its bounds' type."""
    out: list[tuple[Path, pa.DataType]] = []

    def visit(path: Path, t: pa.DataType) -> None:
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                visit(path + (t.field(i).name,), t.field(i).type)
        else:
            st = _stat_type(t)
            if st is not None:
                out.append((path, st))

    for f in schema:
        visit((f.name,), f.type)
    return out


def _leaf_array(column: pa.ChunkedArray, path: Path) -> pa.Array:
    """The values at ``path`` (``column`` is the top-level column ``path[0]``) as one array, null wherever
    the value or any parent struct is null."""
    col = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    for name in path[1:]:
        idx = col.type.get_field_index(name)
        col = col.flatten()[idx]  # flatten() merges the parent's validity into the child
    return col


#: the types ``_prepare`` changes (by Arrow type id): dictionaries, float16, durations, views
_PREPARED = {pa.lib.Type_DICTIONARY, pa.lib.Type_HALF_FLOAT, pa.lib.Type_DURATION}
_PREPARED |= {pa.lib.Type_STRING_VIEW, pa.lib.Type_BINARY_VIEW}


def _prepare(arr: pa.Array) -> pa.Array:
    if arr.type.id not in _PREPARED:
        return arr
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_float16(arr.type):
        arr = arr.cast(pa.float32())
    if pa.types.is_string_view(arr.type) or pa.types.is_binary_view(arr.type):
        arr = arr.cast(pa.binary())
    if pa.types.is_duration(arr.type):
        arr = arr.cast(pa.int64())  # pyarrow has no min/max kernel for durations; bounds are cast back
    return arr


def _truncate_upper(v: bytes) -> bytes | None:
    """The smallest byte string of at most MAX_BOUND_BYTES that is >= every string starting with v's prefix."""
    head = bytearray(v[:MAX_BOUND_BYTES])
    while head and head[-1] == 0xFF:
        head.pop()
    if not head:
        return None
    head[-1] += 1
    return bytes(head)


def _cut_bounds(mins: pa.Array, maxs: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Byte-string bounds as binary, cut to MAX_BOUND_BYTES (min: prefix; max: rounded up)."""
    mins = (
        mins.cast(pa.binary())
        if not pa.types.is_large_binary(mins.type) and not pa.types.is_large_string(mins.type)
        else mins.cast(pa.large_binary()).cast(pa.binary())
    )
    maxs = (
        maxs.cast(pa.binary())
        if not pa.types.is_large_binary(maxs.type) and not pa.types.is_large_string(maxs.type)
        else maxs.cast(pa.large_binary()).cast(pa.binary())
    )
    mins = pc.binary_slice(mins, 0, MAX_BOUND_BYTES)
    long = np.diff(arrow_offsets(maxs)) > MAX_BOUND_BYTES  # (a null is empty)
    if long.any():
        vals = maxs.to_pylist()  # one value per zone, not per row
        for i in np.flatnonzero(long):
            vals[i] = _truncate_upper(vals[i])
        maxs = _binary_array(vals)
    return mins, maxs


def _binary_array(values: list[bytes | None]) -> pa.Array:
    """``pa.array(values, pa.binary())`` from buffers (pa.array imports pandas: ~0.17 s in a fresh process)."""
    valid = np.array([v is not None for v in values], bool)
    offsets = np.zeros(len(values) + 1, np.int32)
    np.cumsum([len(v) if v is not None else 0 for v in values], out=offsets[1:])
    nulls = len(values) - int(valid.sum())
    validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    data = pa.py_buffer(b"".join(v for v in values if v is not None))
    return pa.Array.from_buffers(pa.binary(), len(values), [validity, pa.py_buffer(offsets), data], null_count=nulls)


def _one_zone_bytes(arr: pa.Array) -> _Stats:
    """The bounds of byte strings forming one zone (a small file's), cut as ``_cut_bounds`` cuts them: one
    ``min_max`` and the two values' bytes, no per-zone arrays to cast and slice."""
    low, high = _binary_bounds(arr)
    return _one_binary(low), _one_binary(high), np.array([arr.null_count], np.int64)


def _binary_bounds(arr: pa.Array) -> tuple[bytes | None, bytes | None]:
    """(min, max) of byte strings as ``_cut_bounds`` cuts them (None: no bound)."""
    mm = pc.min_max(arr)
    lo, hi = mm["min"], mm["max"]
    low = lo.as_buffer().to_pybytes()[:MAX_BOUND_BYTES] if lo.is_valid else None
    high = hi.as_buffer().to_pybytes() if hi.is_valid else None
    if high is not None and len(high) > MAX_BOUND_BYTES:
        high = _truncate_upper(high)
    return low, high


def _dense_bounds(arr: pa.Array) -> tuple[bytes | None, bytes | None] | None:
    """(min, max) bytes of a null-free integer, float or 32/64-bit temporal array (``_dense_zone_stats`` of
    one zone: a NaN leaves no bounds); None for other arrays."""
    t = arr.type
    if arr.null_count or not (
        pa.types.is_integer(t) or pa.types.is_floating(t) or (pa.types.is_temporal(t) and t.bit_width in _INT_VIEW)
    ):
        return None
    vals = to_numpy(arr if not pa.types.is_temporal(t) else arr.view(_INT_VIEW[t.bit_width]))
    lo, hi = np.minimum.reduce(vals), np.maximum.reduce(vals)
    if vals.dtype.kind == "f" and (np.isnan(lo) or np.isnan(hi)):
        return None, None
    return lo.tobytes(), hi.tobytes()


def _one_binary(v: bytes | None) -> pa.Array:
    """``_binary_array([v])`` without its per-value passes."""
    offsets = pa.py_buffer(np.array([0, len(v or b"")], np.int32))
    validity = None if v is not None else pa.py_buffer(b"\x00")
    return pa.Array.from_buffers(pa.binary(), 1, [validity, offsets, pa.py_buffer(v or b"")], null_count=int(v is None))


#: fixed-width types whose bounds numpy computes directly (temporal types through their integer view)
_INT_VIEW = {32: pa.int32(), 64: pa.int64()}


def _numeric_zone_stats(arr: pa.Array, rows_per_zone: int, nzones: int) -> tuple[pa.Array, pa.Array, np.ndarray] | None:
    """Zone bounds of an integer, float or temporal array with numpy (None for other types)."""
    t = arr.type
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        values = arr
    elif pa.types.is_temporal(t) and t.bit_width in _INT_VIEW:
        values = arr.view(_INT_VIEW[t.bit_width])
    elif pa.types.is_decimal128(t) and t.precision <= 18:
        return _small_decimal_zone_stats(arr, rows_per_zone, nzones)
    elif pa.types.is_boolean(t):
        return _bool_zone_stats(arr, rows_per_zone, nzones)
    else:
        return None
    n = len(arr)
    if not arr.null_count and values.type.bit_width >= 8:
        return _dense_zone_stats(to_numpy(values), t, values is not arr, rows_per_zone, nzones)
    size = nzones * rows_per_zone
    vals = to_numpy(values.fill_null(zero(values.type)))
    valid = np.ones(size, dtype=bool)
    if arr.null_count:
        valid[:n] = to_numpy(arr.is_valid())
    valid[n:] = False
    if size > n:
        vals = np.concatenate([vals, np.zeros(size - n, vals.dtype)])
    grid, ok = vals.reshape(nzones, rows_per_zone), valid.reshape(nzones, rows_per_zone)
    if vals.dtype.kind == "f":
        hi_fill, lo_fill = np.inf, -np.inf
    else:
        info = np.iinfo(vals.dtype)
        hi_fill, lo_fill = info.max, info.min
    mins = np.where(ok, grid, hi_fill).min(axis=1)
    maxs = np.where(ok, grid, lo_fill).max(axis=1)
    counts = ok.sum(axis=1)
    nulls = (np.minimum(rows_per_zone, n - np.arange(nzones) * rows_per_zone) - counts).astype(np.int64)
    unknown = counts == 0
    if vals.dtype.kind == "f":
        unknown |= (np.isnan(grid) & ok).any(axis=1)  # NaN zones get no bounds (see the module docstring)
    lo = from_numpy(mins, mask=unknown).view(t) if values is not arr else from_numpy(mins, t, mask=unknown)
    hi = from_numpy(maxs, mask=unknown).view(t) if values is not arr else from_numpy(maxs, t, mask=unknown)
    return lo, hi, nulls


def _bool_zone_stats(arr: pa.Array, rows_per_zone: int, nzones: int) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """Zone bounds of booleans with numpy (the hash group-by imports pyarrow.dataset, and with it pandas)."""
    n, size = len(arr), nzones * rows_per_zone
    vals, valid = np.zeros(size, bool), np.zeros(size, bool)
    vals[:n] = to_numpy(arr.fill_null(zero(pa.bool_())) if arr.null_count else arr)
    valid[:n] = to_numpy(arr.is_valid()) if arr.null_count else True
    grid, ok = vals.reshape(nzones, rows_per_zone), valid.reshape(nzones, rows_per_zone)
    counts = ok.sum(axis=1)
    unknown = counts == 0
    maxs = np.asarray((grid & ok).any(axis=1))  # (the stubs allow a numpy scalar)
    mins = ~(~grid & ok).any(axis=1) & ~unknown  # (a zone without values: null, its bit 0)
    nulls = (np.minimum(rows_per_zone, n - np.arange(nzones) * rows_per_zone) - counts).astype(np.int64)
    return from_numpy(mins, mask=unknown), from_numpy(maxs, mask=unknown), nulls


def _dense_zone_stats(
    vals: np.ndarray, t: pa.DataType, viewed: bool, rows_per_zone: int, nzones: int
) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """Zone bounds of values without nulls: whole zones as one 2-D min/max, the partial last zone apart."""
    n = len(vals)
    full = min(n // rows_per_zone, nzones)
    if not full:  # (a small file's one zone: its bounds alone)
        mins, maxs = np.minimum.reduce(vals, keepdims=True), np.maximum.reduce(vals, keepdims=True)
    else:
        grid = vals[: full * rows_per_zone].reshape(full, rows_per_zone)
        mins, maxs = grid.min(axis=1), grid.max(axis=1)
    if 0 < full < nzones:
        tail = vals[full * rows_per_zone :]
        mins, maxs = np.concatenate([mins, tail.min(keepdims=True)]), np.concatenate([maxs, tail.max(keepdims=True)])
    unknown = None
    if vals.dtype.kind == "f":
        nan = np.isnan(mins) | np.isnan(maxs)  # min/max propagate NaN: NaN zones get no bounds
        unknown = nan if nan.any() else None
    lo = from_numpy(mins, mask=unknown).view(t) if viewed else from_numpy(mins, t, mask=unknown)
    hi = from_numpy(maxs, mask=unknown).view(t) if viewed else from_numpy(maxs, t, mask=unknown)
    return lo, hi, np.zeros(nzones, np.int64)


def _small_decimal_zone_stats(
    arr: pa.Array, rows_per_zone: int, nzones: int
) -> tuple[pa.Array, pa.Array, np.ndarray] | None:
    """Bounds of a decimal128 of precision <= 18: every unscaled value fits the low 64-bit word."""
    words = np.frombuffer(arr.buffers()[1], np.int64)[2 * arr.offset : 2 * (arr.offset + len(arr))]
    low = np.ascontiguousarray(words[0::2])  # pyarrow converts a strided array value by value
    stats: tuple[pa.Array, pa.Array, np.ndarray] | None
    if not arr.null_count:
        stats = _dense_zone_stats(low, pa.int64(), False, rows_per_zone, nzones)
    else:
        stats = _numeric_zone_stats(from_numpy(low, mask=~to_numpy(arr.is_valid())), rows_per_zone, nzones)
    if stats is None:
        return None
    lo, hi, nulls = stats

    def back(bound: pa.Array) -> pa.Array:
        v = to_numpy(bound.fill_null(zero(bound.type))).astype(np.int64)
        raw = np.stack([v, np.where(v < 0, -1, 0)], axis=1).astype(np.int64)
        validity = bound.buffers()[0]
        return pa.Array.from_buffers(arr.type, len(bound), [validity, pa.py_buffer(raw.tobytes())])

    return back(lo), back(hi), nulls


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
        self._stats: list[list[_Stats | Future[_Stats | None] | None]] = [[] for _ in self._columns]

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

    def _column_stats(
        self, column: pa.ChunkedArray, path: Path, nzones: int
    ) -> tuple[pa.Array, pa.Array, np.ndarray] | None:
        """(mins, maxs, nulls) of the zones of the leaf at ``path`` of the top-level ``column``; None for a
        type pyarrow cannot aggregate."""
        try:
            arr = _prepare(_leaf_array(column, path))
            stats = _numeric_zone_stats(arr, self.rows_per_zone, nzones)
            if stats is None and nzones == 1 and _stat_type(arr.type) == pa.binary():
                stats = _one_zone_bytes(arr)
            if stats is None:
                zone = from_numpy(np.arange(len(column), dtype=np.int64) // self.rows_per_zone)
                stats = self._zone_stats(arr, zone, nzones, self.rows_per_zone)
            return stats
        except (pa.ArrowException, ValueError, TypeError):
            return None  # a type pyarrow cannot aggregate: no statistics for this column

    @staticmethod
    def _zone_stats(
        arr: pa.Array, zone: pa.Array, nzones: int, rows_per_zone: int | None = None
    ) -> tuple[pa.Array, pa.Array, np.ndarray]:
        """Bounds per zone (``zone`` = each row's zone); byte strings with ``rows_per_zone`` given
        take one numba pass (zonemap_bounds.py; a few zones: one min_max each), cheaper than the hash group-by."""
        if rows_per_zone and _stat_type(arr.type) == pa.binary():
            if nzones == 1:
                return _one_zone_bytes(arr)
            if nzones >= KERNEL_MIN_ZONES:
                from lancelot.zonemap_bounds import string_zone_bounds  # imports numba: only when worth it

                lo, hi, nulls = string_zone_bounds(arr, rows_per_zone, nzones)
                return _cut_bounds(lo, hi) + (nulls,)
            from lancelot.zonemap_bounds import _bounds_per_zone  # a few zones: one min_max each, no numba

            lo, hi = _bounds_per_zone(arr, rows_per_zone, nzones)
            nulls = np.array([arr.slice(k * rows_per_zone, rows_per_zone).null_count for k in range(nzones)], np.int64)
            return _cut_bounds(lo, hi) + (nulls,)
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
        if _stat_type(arr.type) == pa.binary():
            mins, maxs = _cut_bounds(mins, maxs)
        return mins, maxs, nulls

    def _one_zone(self, column: pa.ChunkedArray, path: Path, st: pa.DataType) -> bytes | None:
        """The encoded column of a file of one zone (``column_bytes`` of its bounds, numeric and byte-string
        bounds straight from their values); None for a type pyarrow cannot aggregate."""
        try:
            arr = _prepare(_leaf_array(column, path))
            if st == pa.binary():
                return one_zone_bytes(path, st, *_binary_bounds(arr), arr.null_count)
            dense = _dense_bounds(arr)
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


class ZoneMaps:
    """Parsed zone maps of one file (see ``parse_zone_maps``)."""

    def __init__(self, rows: np.ndarray, columns: list[ColumnZones], rows_per_zone: int) -> None:
        self.zone_rows = rows
        self.zone_starts = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64) if len(rows) else rows
        self.num_rows = int(rows.sum())
        self.num_zones = len(rows)
        self.rows_per_zone = rows_per_zone
        self.columns = {c.path: c for c in columns}

    def __repr__(self) -> str:
        cols = [".".join(p) for p in self.columns]
        return f"ZoneMaps(rows={self.num_rows}, zones={self.num_zones}, columns={cols})"

    def column(self, name: str | Sequence[str]) -> ColumnZones | None:
        """The zones of a column given as a name or a path through structs (None if it has no statistics)."""
        path = (name,) if isinstance(name, str) else tuple(name)
        return self.columns.get(path)

    def zones_matching(self, filters: Iterable[Filter]) -> np.ndarray:
        """A boolean per zone: False where the statistics prove no row passes all ``filters``."""
        mask = np.ones(self.num_zones, dtype=bool)
        for f in filters:
            m = self._maybe(f)
            if m is not None:
                mask &= m
        return mask

    def row_ranges_matching(self, filters: Iterable[Filter]) -> list[tuple[int, int]]:
        """Row ranges [start, stop) outside of which no row passes all ``filters`` (AND-ed)."""
        mask = self.zones_matching(filters)
        if not mask.any():
            return []
        edges = np.diff(np.concatenate([[0], mask.view(np.int8), [0]]))
        first, last = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
        stops = self.zone_starts[last] + self.zone_rows[last]
        return [(int(a), int(b)) for a, b in zip(self.zone_starts[first], stops)]

    def _maybe(self, f: Filter) -> np.ndarray | None:
        """Zones that may hold a row passing ``f``; None when the statistics cannot tell."""
        if not isinstance(f, tuple) or len(f) not in (2, 3):
            return None
        name, op = f[0], f[1]
        value = f[2] if len(f) == 3 else None
        col = self.column(name)
        if col is None or op not in OPS:
            return None
        nonnull: NDArray[np.bool_] = (self.zone_rows - col.nulls) > 0
        if op == "is_null":
            return col.nulls > 0
        if op == "is_not_null":
            return nonnull
        lo_unknown: NDArray[np.bool_] = col.min.is_null().to_numpy(zero_copy_only=False)
        hi_unknown: NDArray[np.bool_] = col.max.is_null().to_numpy(zero_copy_only=False)

        def cmp(fn: Callable[[pa.Array, pa.Scalar], pa.Array], bound: pa.Array, v: pa.Scalar) -> NDArray[np.bool_]:
            out: NDArray[np.bool_] = pc.fill_null(fn(bound, v), False).to_numpy(zero_copy_only=False)
            return out

        if op == "in":
            vals = [v for v in (value or ()) if v is not None]
            maybe = [_as_scalar(v, col.min.type) for v in vals]
            scalars = [s for s in maybe if s is not None]
            if len(scalars) < len(maybe):
                return None
            if not scalars:
                return np.zeros(self.num_zones, dtype=bool)
            if len(scalars) > MAX_IN_VALUES:
                arr = pa.array([s.as_py() for s in scalars], col.min.type)
                lo, hi = pc.min_max(arr).values()
                return (
                    nonnull
                    & (lo_unknown | cmp(pc.less_equal, col.min, hi))
                    & (hi_unknown | cmp(pc.greater_equal, col.max, lo))
                )
            out = np.zeros(self.num_zones, dtype=bool)
            for s in scalars:
                out |= (lo_unknown | cmp(pc.less_equal, col.min, s)) & (hi_unknown | cmp(pc.greater_equal, col.max, s))
            return nonnull & out
        s = _as_scalar(value, col.min.type)
        if s is None:
            return None
        if op == "starts_with":
            if not pa.types.is_binary(col.min.type):
                return None
            prefix_len = len(s.as_py())
            lo = pc.binary_slice(col.min, 0, prefix_len)
            return nonnull & (hi_unknown | cmp(pc.greater_equal, col.max, s)) & (lo_unknown | cmp(pc.less_equal, lo, s))
        if op == "=":
            return (
                nonnull
                & (lo_unknown | cmp(pc.less_equal, col.min, s))
                & (hi_unknown | cmp(pc.greater_equal, col.max, s))
            )
        if op == "!=":
            return nonnull & ~(cmp(pc.equal, col.min, s) & cmp(pc.equal, col.max, s))
        if op in ("<", "<="):
            fn = pc.less if op == "<" else pc.less_equal
            return nonnull & (lo_unknown | cmp(fn, col.min, s))
        fn = pc.greater if op == ">" else pc.greater_equal
        return nonnull & (hi_unknown | cmp(fn, col.max, s))


def _as_scalar(value: object, t: pa.DataType) -> pa.Scalar | None:
    """``value`` as a scalar of the bounds' type, or None when it cannot be compared safely."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None  # NaN sorts above everything in Spark: bounds that skip NaN cannot decide
    if pa.types.is_binary(t):
        if isinstance(value, str):
            return pa.scalar(value.encode("utf-8"), pa.binary())
        if isinstance(value, bytes | bytearray | memoryview):
            return pa.scalar(bytes(value), pa.binary())
        return None
    if pa.types.is_timestamp(t) and isinstance(value, _dt.datetime):
        if (value.tzinfo is None) != (t.tz is None):
            return None  # a naive value against a zoned column (or back): the meaning is ambiguous
    if isinstance(value, bool) != pa.types.is_boolean(t):
        return None
    try:
        return pa.scalar(value, t)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        pass
    try:
        return pa.scalar(value).cast(t)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None


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
