"""Variable-width values of many mini-block chunks joined in one pass (lance.encodings21.Variable).

A chunk's buffer is ``count + 1`` offsets (from the buffer start) and the value bytes.  Joining chunks means rebasing
every offset and copying every chunk's bytes; numpy needs about ten passes over the offsets for that (gathers, casts,
repeats, masks), this loop one (measured on a page of 1M one-byte strings: 2 ms against 14 ms).  Both kernels return a
status instead of raising."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from lancelot.encodings.compression import points
from lancelot.encodings.compression.points import le
from lancelot.util.jit import lazy_intrinsic, njit

load_u64 = lazy_intrinsic("lancelot.util.jit_intrinsics", "load_u64")
store_u64 = lazy_intrinsic("lancelot.util.jit_intrinsics", "store_u64")
U8 = NDArray[np.uint8]
I64 = NDArray[np.int64]
Ints = NDArray[Any]  # integers of any width

OK, SHORT_BUFFER, OVERLAP, PAST_END, DECREASING = 0, 1, 2, 3, 4

MESSAGES = {
    SHORT_BUFFER: "variable offsets: need more bytes than the chunk buffer has",
    OVERLAP: "variable chunk: values overlap the offsets",
    PAST_END: "variable chunk: offsets point past the chunk",
    DECREASING: "variable chunk: offsets decrease",
}


@njit(cache=True, nogil=True, inline="always")
def _offset(data: np.ndarray, pos: int, ow: int) -> int:
    v = 0
    for b in range(ow):
        v |= int(data[pos + b]) << (8 * b)
    return v


@njit(cache=True, nogil=True)
def extents(data: U8, starts: I64, sizes: I64, counts: I64, ow: int, first: I64, last: I64) -> int:
    """The first and last offset of every chunk, checked against the chunk's buffer."""
    for k in range(len(starts)):
        status, a, b = _extent(data, starts[k], sizes[k], counts[k], ow)
        if status != OK:
            return status
        first[k] = a
        last[k] = b
    return OK


@njit(cache=True, nogil=True, inline="always")
def _extent(data: np.ndarray, s: int, size: int, n: int, ow: int) -> tuple[int, int, int]:
    """(status, first offset, last offset) of the chunk of ``n`` values at ``s``, ``size`` bytes."""
    if (n + 1) * ow > size:
        return SHORT_BUFFER, 0, 0
    a = _offset(data, s, ow)
    b = _offset(data, s + n * ow, ow)
    if n > 0 and a < (n + 1) * ow:
        return OVERLAP, 0, 0
    if a > b or b > size:
        return PAST_END, 0, 0
    return OK, a, b


@njit(cache=True, nogil=True)
def join(
    data: U8, words: Ints, starts: I64, counts: I64, ow: int, first: I64, last: I64, out_offsets: Ints, out_data: U8
) -> int:
    """Rebased offsets (``sum(counts) + 1``) and the bytes of every chunk, in order.

    ``words`` is ``data`` viewed as ``ow``-byte integers when every chunk's offsets are aligned to them (else an empty
    array: offsets are assembled from bytes)."""
    o = 0
    p = 0
    out_offsets[0] = 0
    aligned = len(words) > 0
    for k in range(len(starts)):
        s = starts[k]
        base = p - first[k]
        prev = first[k]
        w0 = s // ow
        for i in range(1, counts[k] + 1):
            v = int(words[w0 + i]) if aligned else _offset(data, s + i * ow, ow)
            if v < prev:
                return DECREASING
            prev = v
            o += 1
            out_offsets[o] = v + base
        n = last[k] - first[k]
        out_data[p : p + n] = data[s + first[k] : s + last[k]]
        p += n
    return OK


@njit(cache=True, nogil=True)
def spans(data: U8, words: Ints, starts: I64, sizes: I64, counts: I64, ow: int, out_starts: I64, out_ends: I64) -> int:
    """Where every value of every chunk lies in ``data`` (``out_starts`` / ``out_ends``, absolute positions), without
    copying the bytes: ``extents``' checks of each chunk and ``join``'s of its offsets, in one pass (``words`` as
    there).  FSST decodes the strings where they lie."""
    o = 0
    aligned = len(words) > 0
    for k in range(len(starts)):
        n = counts[k]
        s = starts[k]
        status, prev, _ = _extent(data, s, sizes[k], n, ow)
        if status != OK:
            return status
        w0 = s // ow
        for i in range(1, n + 1):
            v = int(words[w0 + i]) if aligned else _offset(data, s + i * ow, ow)
            if v < prev:
                return DECREASING
            out_starts[o] = s + prev
            out_ends[o] = s + v
            prev = v
            o += 1
    return OK


@njit(cache=True, nogil=True)
def gather_values(
    data: np.ndarray, starts: np.ndarray, idx: np.ndarray, out_offsets: np.ndarray, out: np.ndarray, words: int
) -> None:
    """Value ``idx[i]`` (``data[starts[idx[i]]:...]``, its length given by ``out_offsets``) to
    ``out[out_offsets[i]:out_offsets[i + 1]]``, 8 bytes at a time.  ``words`` > 0: every value is copied as that many
    8-byte words (no value is longer; ``data`` and ``out`` hold ``8 * words`` bytes more than they use), a loop of fixed
    length whatever the values; else ``out`` holds 8 bytes more and values are copied to their length (the last bytes of
    ``data`` one by one).  A dictionary lookup; variable_numpy.gather_values_numpy is the same in numpy."""
    size = len(data)
    for i in range(len(idx)):
        s = starts[idx[i]]
        p = out_offsets[i]
        if words > 0:
            for w in range(words):
                store_u64(out, p + 8 * w, load_u64(data, s + 8 * w))
            continue
        n = out_offsets[i + 1] - p
        j = 0
        while j < n:
            if s + j + 8 <= size:
                store_u64(out, p + j, load_u64(data, s + j))
            else:
                for b in range(n - j):
                    out[p + j + b] = data[s + j + b]
            j += 8


# -- point reads (compression/points.py): one value of a Variable chunk buffer


@njit(cache=True, nogil=True, inline="always")
def variable_fits(n: int, size: int, ow: int) -> int:
    """Whether a Variable chunk buffer of ``size`` bytes holds the ``n + 1`` offsets of ``ow`` bytes (a status)."""
    if (n + 1) * ow > size:
        return points.SHORT_BUFFER
    return points.OK


@njit(cache=True, nogil=True, inline="always")
def variable_point(data: np.ndarray, at: int, size: int, n: int, i: int, ow: int) -> tuple[int, int, int]:
    """(status, start in ``data``, length) of value ``i`` of the Variable chunk buffer at ``data[at:at + size]``."""
    a = np.int64(le(data, at + i * ow, ow))
    b = np.int64(le(data, at + (i + 1) * ow, ow))
    if a < (n + 1) * ow or b < a or b > size:
        return points.BAD_OFFSETS, 0, 0
    return points.OK, at + a, b - a
