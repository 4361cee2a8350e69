"""Per-zone min / max of byte strings in one numba pass (for lancelot/zonemaps.py).

Zones are consecutive runs of ``rows_per_zone`` rows (the last may be shorter).  The
kernel returns, per zone, the row of its smallest and largest non-null value (bytewise
order, a prefix sorting first), or -1 for a zone with no values; the caller takes those
rows, so no per-zone Python work remains.  It releases the GIL: the writer's page
thread keeps encoding meanwhile.  Until the kernel is loaded (a fresh process), the same
rows come from numpy (``_zone_extremes_numpy``: 8-byte big-endian words compared word by
word among each zone's remaining candidates), and the kernel is prepared in the
background once the path is hot: after ``HOT_CALLS`` calls or ``WARM_ROWS`` rows, whichever
comes first (the numpy path costs 10-20x the kernel per row, so a bulk write, e.g. one
file of 1M rows, switches within its first file; a small write never loads numba).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from numpy.lib.stride_tricks import as_strided

from lancelot.encodings.compression.jit import NumpyUntilHot, njit, warm_in_background


@njit(cache=True, nogil=True, inline="always")
def _less(data: np.ndarray, a0: int, a1: int, b0: int, b1: int) -> bool:
    """Is data[a0:a1] < data[b0:b1] bytewise?"""
    n = min(a1 - a0, b1 - b0)
    for k in range(n):
        x = data[a0 + k]
        y = data[b0 + k]
        if x != y:
            return x < y
    return (a1 - a0) < (b1 - b0)


@njit(cache=True, nogil=True)
def _zone_extremes(
    offsets: np.ndarray, data: np.ndarray, valid: np.ndarray, rows_per_zone: int, nzones: int
) -> tuple[np.ndarray, np.ndarray]:
    n = len(offsets) - 1
    lo = np.full(nzones, -1, np.int64)
    hi = np.full(nzones, -1, np.int64)
    for z in range(nzones):
        start = z * rows_per_zone
        end = min(start + rows_per_zone, n)
        best_lo = -1
        best_hi = -1
        for i in range(start, end):
            if not valid[i]:
                continue
            if best_lo < 0:
                best_lo = i
                best_hi = i
                continue
            s, e = offsets[i], offsets[i + 1]
            if _less(data, s, e, offsets[best_lo], offsets[best_lo + 1]):
                best_lo = i
            elif _less(data, offsets[best_hi], offsets[best_hi + 1], s, e):
                best_hi = i
        lo[z] = best_lo
        hi[z] = best_hi
    return lo, hi


def _words(rows: np.ndarray, starts: np.ndarray, ends: np.ndarray, win: np.ndarray, k: int) -> tuple[np.ndarray, ...]:
    """Bytes 8k .. 8k + 7 of the values of ``rows`` as big-endian words (past the value: 0) and how many."""
    pos = starts[rows] + 8 * k
    count = np.clip(ends[rows] - pos, 0, 8)
    word = np.ascontiguousarray(win[np.minimum(pos, len(win) - 1)]).view(">u8").reshape(-1).astype(np.uint64)
    shift = (8 * (8 - np.maximum(count, 1))).astype(np.uint64)
    return np.where(count > 0, (word >> shift) << shift, np.uint64(0)), count


def _zone_extreme(
    rows: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    win: np.ndarray,
    rows_per_zone: int,
    largest: bool,
    first_words: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """(zones, the row of each zone's smallest / largest value) among ``rows`` (ascending), given the
    first words of ``rows`` (``_words(..., 0)``)."""
    best = np.minimum.reduceat if not largest else np.maximum.reduceat
    k = 0
    done_z, done_r = [], []
    word, count = first_words
    while len(rows):
        if k:
            word, count = _words(rows, starts, ends, win, k)
        zone = rows // rows_per_zone
        heads = np.flatnonzero(np.concatenate([[True], zone[1:] != zone[:-1]]))
        sizes = np.diff(np.append(heads, len(rows)))
        keep = word == np.repeat(best(word, heads), sizes)
        rows, count, zone = rows[keep], count[keep], zone[keep]
        heads = np.flatnonzero(np.concatenate([[True], zone[1:] != zone[:-1]]))
        sizes = np.diff(np.append(heads, len(rows)))
        keep = count == np.repeat(best(count, heads), sizes)  # equal words: the shorter value sorts first
        rows, count, zone = rows[keep], count[keep], zone[keep]
        ended = count < 8  # a zone's survivors share their count: all ended (equal values) or none
        first = ended & np.concatenate([[True], zone[1:] != zone[:-1]])
        done_z.append(zone[first])
        done_r.append(rows[first])
        rows = rows[~ended]
        k += 1
    return np.concatenate(done_z), np.concatenate(done_r)


def _zone_extremes_numpy(
    offsets: np.ndarray, data: np.ndarray, valid: np.ndarray, rows_per_zone: int, nzones: int
) -> tuple[np.ndarray, np.ndarray]:
    """``_zone_extremes`` in numpy (the same values; among equal values any row)."""
    padded = np.zeros(len(data) + 8, np.uint8)
    padded[: len(data)] = data
    win = as_strided(padded, shape=(len(data) + 1, 8), strides=(1, 1))
    starts = np.asarray(offsets[:-1], np.int64)
    ends = np.asarray(offsets[1:], np.int64)
    rows = np.flatnonzero(valid[: len(starts)])
    first_words = _words(rows, starts, ends, win, 0)  # shared by the minimum and the maximum
    out = []
    for largest in (False, True):
        res = np.full(nzones, -1, np.int64)
        if len(rows):
            z, r = _zone_extreme(rows, starts, ends, win, rows_per_zone, largest, first_words)
            res[z] = r
        out.append(res)
    return out[0], out[1]


#: calls before the kernel is prepared in the background
HOT = NumpyUntilHot(_zone_extremes)
#: rows (over all calls) the numpy path handles before the kernel is prepared in the background
WARM_ROWS = 1 << 20
_numpy_rows = [0]


def _offsets_and_data(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Value offsets (int32 or int64, relative to the returned data) and the data bytes of a binary-like array."""
    n = len(arr)
    bufs = arr.buffers()
    if pa.types.is_fixed_size_binary(arr.type):
        w = arr.type.byte_width
        data = (
            np.frombuffer(bufs[1], np.uint8)[arr.offset * w : (arr.offset + n) * w]
            if bufs[1]
            else np.zeros(0, np.uint8)
        )
        return np.arange(n + 1, dtype=np.int64) * w, data
    large = pa.types.is_large_binary(arr.type) or pa.types.is_large_string(arr.type)
    offsets = np.frombuffer(bufs[1], np.int64 if large else np.int32)[arr.offset : arr.offset + n + 1]
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None and bufs[2].size else np.zeros(0, np.uint8)
    return offsets, data


def string_zone_bounds(arr: pa.Array, rows_per_zone: int, nzones: int) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """(mins, maxs, null counts) per zone of a string / binary / fixed-size-binary array (bounds uncut)."""
    n = len(arr)
    if n == 0:
        empty = pa.array([None] * nzones, arr.type)
        return empty, empty, np.zeros(nzones, np.int64)
    offsets, data = _offsets_and_data(arr)
    if arr.null_count:
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
    else:
        valid = np.ones(n, dtype=np.bool_)
    if HOT.ready():
        lo, hi = _zone_extremes(offsets, data, valid, int(rows_per_zone), int(nzones))
    else:

        def warm():
            return _zone_extremes(offsets[:1].copy(), data[:0].copy(), valid[:0].copy(), 1, 0)

        _numpy_rows[0] += n
        if _numpy_rows[0] >= WARM_ROWS and HOT.thread is None:
            HOT.thread = warm_in_background(HOT, warm)
        else:
            HOT.numpy_call(warm)
        lo, hi = _zone_extremes_numpy(offsets, data, valid, int(rows_per_zone), int(nzones))
    starts = np.arange(nzones, dtype=np.int64) * rows_per_zone
    sizes = np.minimum(starts + rows_per_zone, n) - starts
    nulls = np.zeros(nzones, np.int64)
    if arr.null_count and nzones:
        nulls = (sizes - np.add.reduceat(valid.astype(np.int64), starts)).astype(np.int64)
    mins = arr.take(pa.array(lo, mask=lo < 0))
    maxs = arr.take(pa.array(hi, mask=hi < 0))
    return mins, maxs, nulls
