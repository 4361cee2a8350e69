"""Zone bounds: per-zone min / max / null count of one column's values (for zonemaps.py).

Which columns get statistics (primitives, top-level or below structs only), the type their bounds are kept in,
and the bounds: numpy for numbers, booleans, temporal values and small decimals, ``min_max`` for byte strings.
Bounds are conservative (strings cut to ``MAX_BOUND_BYTES``, the max rounded up; no bounds for a float zone
holding a NaN), so pruning never drops a row a filter could select.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.util.arrays import arrow_offsets, from_numpy, to_numpy, zero
from lancelot.util.types import is_binary_like, is_plain_fixed, is_string_like

#: string / binary bounds are cut to this many bytes
MAX_BOUND_BYTES = 64

Path = tuple[str, ...]
#: one block of zones of a column: (mins, maxs, null counts)
Stats = tuple[pa.Array, pa.Array, np.ndarray]


def stat_type(t: pa.DataType) -> pa.DataType | None:
    """The type a column's bounds are kept in, or None if the column gets no statistics."""
    if pa.types.is_dictionary(t):
        return stat_type(t.value_type)
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
            st = stat_type(t)
            if st is not None:
                out.append((path, st))

    for f in schema:
        visit((f.name,), f.type)
    return out


def leaf_array(column: pa.ChunkedArray, path: Path) -> pa.Array:
    """The values at ``path`` (``column`` is the top-level column ``path[0]``) as one array, null wherever
    the value or any parent struct is null."""
    col = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    for name in path[1:]:
        idx = col.type.get_field_index(name)
        col = col.flatten()[idx]  # flatten() merges the parent's validity into the child
    return col


#: the types ``prepare`` changes (by Arrow type id): dictionaries, float16, durations, views
_PREPARED = {pa.lib.Type_DICTIONARY, pa.lib.Type_HALF_FLOAT, pa.lib.Type_DURATION}
_PREPARED |= {pa.lib.Type_STRING_VIEW, pa.lib.Type_BINARY_VIEW}


def prepare(arr: pa.Array) -> pa.Array:
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


def cut_bounds(mins: pa.Array, maxs: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Byte-string bounds as binary, cut to MAX_BOUND_BYTES (min: prefix; max: rounded up)."""

    def binary(a: pa.Array) -> pa.Array:
        large = pa.types.is_large_binary(a.type) or pa.types.is_large_string(a.type)
        return a.cast(pa.large_binary()).cast(pa.binary()) if large else a.cast(pa.binary())

    mins, maxs = binary(mins), binary(maxs)
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


def one_zone_stats(arr: pa.Array) -> Stats:
    """The bounds of byte strings forming one zone (a small file's), cut as ``cut_bounds`` cuts them: one
    ``min_max`` and the two values' bytes, no per-zone arrays to cast and slice."""
    low, high = binary_bounds(arr)
    return _one_binary(low), _one_binary(high), np.array([arr.null_count], np.int64)


def binary_bounds(arr: pa.Array) -> tuple[bytes | None, bytes | None]:
    """(min, max) of byte strings as ``cut_bounds`` cuts them (None: no bound)."""
    mm = pc.min_max(arr)
    lo, hi = mm["min"], mm["max"]
    low = lo.as_buffer().to_pybytes()[:MAX_BOUND_BYTES] if lo.is_valid else None
    high = hi.as_buffer().to_pybytes() if hi.is_valid else None
    if high is not None and len(high) > MAX_BOUND_BYTES:
        high = _truncate_upper(high)
    return low, high


def dense_bounds(arr: pa.Array) -> tuple[bytes | None, bytes | None] | None:
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


def numeric_zone_stats(arr: pa.Array, rows_per_zone: int, nzones: int) -> Stats | None:
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


def _bool_zone_stats(arr: pa.Array, rows_per_zone: int, nzones: int) -> Stats:
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


def _dense_zone_stats(vals: np.ndarray, t: pa.DataType, viewed: bool, rows_per_zone: int, nzones: int) -> Stats:
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


def _small_decimal_zone_stats(arr: pa.Array, rows_per_zone: int, nzones: int) -> Stats | None:
    """Bounds of a decimal128 of precision <= 18: every unscaled value fits the low 64-bit word."""
    words = np.frombuffer(arr.buffers()[1], np.int64)[2 * arr.offset : 2 * (arr.offset + len(arr))]
    low = np.ascontiguousarray(words[0::2])  # pyarrow converts a strided array value by value
    stats: Stats | None
    if not arr.null_count:
        stats = _dense_zone_stats(low, pa.int64(), False, rows_per_zone, nzones)
    else:
        stats = numeric_zone_stats(from_numpy(low, mask=~to_numpy(arr.is_valid())), rows_per_zone, nzones)
    if stats is None:
        return None
    lo, hi, nulls = stats

    def back(bound: pa.Array) -> pa.Array:
        v = to_numpy(bound.fill_null(zero(bound.type))).astype(np.int64)
        raw = np.stack([v, np.where(v < 0, -1, 0)], axis=1).astype(np.int64)
        validity = bound.buffers()[0]
        return pa.Array.from_buffers(arr.type, len(bound), [validity, pa.py_buffer(raw.tobytes())])

    return back(lo), back(hi), nulls
