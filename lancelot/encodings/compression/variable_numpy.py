"""Variable-width values of many mini-block chunks joined with numpy (variable_kernel.py without numba).

A fresh process (empty numba cache) would spend seconds compiling ``extents`` and ``join`` on its first scan; these
formulations give the same offsets, bytes and statuses (the first bad chunk in chunk order decides) in a few numpy
passes, and run until the kernels are loaded (chunked.py)."""

from __future__ import annotations

import numpy as np

from lancelot.encodings.compression.segments import gather
from lancelot.encodings.compression.variable_kernel import DECREASING, OK, OVERLAP, PAST_END, SHORT_BUFFER


def _words(data: np.ndarray, at: np.ndarray, ow: int) -> np.ndarray:
    """The ``ow``-byte little-endian integers at byte positions ``at`` (int64)."""
    v = np.zeros(len(at), dtype=np.uint64)
    for b in range(ow):
        v |= data[at + b].astype(np.uint64) << np.uint64(8 * b)
    return v.astype(np.int64)


def extents_numpy(
    data: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    counts: np.ndarray,
    ow: int,
    first: np.ndarray,
    last: np.ndarray,
) -> int:
    """``variable_kernel.extents``: each chunk's first and last offset into ``first`` / ``last``."""
    short = np.flatnonzero((counts + 1) * ow > sizes)
    n = int(short[0]) if len(short) else len(starts)  # chunks before the first short one are checked
    s, c, z = starts[:n], counts[:n], sizes[:n]
    a = _words(data, s, ow)
    b = _words(data, s + c * ow, ow)
    status = np.where((c > 0) & (a < (c + 1) * ow), OVERLAP, np.where((a > b) | (b > z), PAST_END, OK))
    bad = np.flatnonzero(status)
    if len(bad):
        k = int(bad[0])
        first[:k], last[:k] = a[:k], b[:k]
        return int(status[k])
    first[:n], last[:n] = a, b
    return SHORT_BUFFER if n < len(starts) else OK


def _chunk_offsets(data: np.ndarray, starts: np.ndarray, counts: np.ndarray, ow: int) -> tuple[np.ndarray, np.ndarray]:
    """Every chunk's ``counts[k] + 1`` offsets of ``ow`` bytes at ``starts[k]``, all as int64, and a mask of the values'
    end offsets (False at each chunk's first offset: ``first``)."""
    each = counts + 1
    allw = np.ascontiguousarray(gather(data, starts, each * ow)).view(f"<u{ow}").astype(np.int64)
    keep = np.ones(len(allw), dtype=bool)
    keep[np.cumsum(each) - each] = False
    return allw, keep


def join_numpy(
    data: np.ndarray,
    starts: np.ndarray,
    counts: np.ndarray,
    ow: int,
    first: np.ndarray,
    last: np.ndarray,
    out_offsets: np.ndarray,
    out_data: np.ndarray,
) -> int:
    """``variable_kernel.join``: rebased offsets and the chunks' bytes, or DECREASING."""
    allw, keep = _chunk_offsets(data, starts, counts, ow)
    # (boolean masks and one diff: half the time of index arrays over every value)
    if np.any(np.diff(allw)[keep[1:]] < 0):  # a value's offset below the one before it in its chunk
        return DECREASING
    lens = last - first
    base = np.zeros(len(starts), dtype=np.int64)
    np.cumsum(lens[:-1], out=base[1:])
    out_offsets[0] = 0
    np.add(allw[keep], np.repeat(base - first, counts), out=out_offsets[1:])
    out_data[:] = gather(data, starts + first, lens)
    return OK


def spans_numpy(
    data: np.ndarray, starts: np.ndarray, counts: np.ndarray, ow: int, out_starts: np.ndarray, out_ends: np.ndarray
) -> int:
    """``variable_kernel.spans``: every value's absolute start and end in ``data``, or DECREASING."""
    allw, keep = _chunk_offsets(data, starts, counts, ow)
    at = np.flatnonzero(keep)
    v, prev = allw[at], allw[at - 1]
    if np.any(v < prev):
        return DECREASING
    base = np.repeat(starts, counts)
    out_starts[:] = base + prev
    out_ends[:] = base + v
    return OK


def gather_values_numpy(data: np.ndarray, starts: np.ndarray, idx: np.ndarray, out_offsets: np.ndarray) -> np.ndarray:
    """``variable_kernel.gather_values`` in numpy: the bytes of values ``idx`` (lengths from ``out_offsets``)."""
    return gather(data, starts[idx], np.diff(out_offsets))
