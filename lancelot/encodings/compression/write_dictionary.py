"""Dictionary encoding of a page's values for the writer (encoding.md, "Dictionary Encoding").

The writer tries a page dictionary when a sample says the values have few distinct ones
(write_strategy.py).  ``pc.dictionary_encode`` hashes every value with Arrow's general hash
table (~6 ns a 16-byte decimal, 10-17 ns a short string); here one numba pass keeps a small
open-addressing table of the distinct values met (hashed on the length and the first and
last 8 bytes, compared in full on a hit), which stays in cache for the low cardinalities
that qualify.  The result is Arrow's: indices in first-appearance order, the dictionary the
first occurrence of each value.  The pass gives up once the values outgrow a table sized for
``limit`` distinct ones (the page would take no dictionary).  Until the kernel is loaded (a fresh
process) pyarrow does the work and the kernel is prepared in the background.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.util.arrays import arrow_offsets, from_numpy
from lancelot.util.jit import NumpyUntilHot, lazy_intrinsic, njit

load_u64 = lazy_intrinsic("lancelot.util.jit_intrinsics", "load_u64")
_MIX = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True)
def _encode(data: np.ndarray, offsets: np.ndarray, width: int, n: int, cap: int) -> tuple[int, np.ndarray, np.ndarray]:
    """(distinct count, indices, row of each dictionary value's first occurrence); value i is
    data[offsets[i]:offsets[i + 1]] (``width`` > 0: data[i * width:(i + 1) * width]).  A table of ``cap`` slots
    (a power of two) holds up to cap / 2 values: one more and the count returned is -1 (no reallocation inside
    the loop: numba would count references on every step)."""
    slots = np.full(cap, -1, np.int64)  # the dictionary index held by each slot
    hashes = np.zeros(cap, np.uint64)
    first = np.empty(cap // 2, np.int64)
    head = np.empty(cap // 2, np.uint64)  # each dictionary value's first word (all of it up to 8 bytes)
    tail = np.empty(cap // 2, np.uint64)  # ... and its last 8 bytes (0 up to 8 bytes)
    size = np.empty(cap // 2, np.int64)
    indices = np.empty(n, np.int32)
    m = cap - 1
    nd = len(data)
    c = 0
    for i in range(n):
        if width > 0:
            s = i * width
            e = s + width
        else:
            s = offsets[i]
            e = offsets[i + 1]
        ln = e - s
        # the first min(8, ln) bytes as a little-endian word (bytes past e zero); helpers are written out:
        # numba counts the references of an array passed to a function, two atomic calls per value (~4x slower)
        w = np.uint64(0)
        if ln >= 8:
            w = load_u64(data, s)
        elif s + 8 <= nd:  # one load, masked (no loop: short values of varying lengths)
            w = load_u64(data, s) & ((np.uint64(1) << np.uint64(8 * ln)) - np.uint64(1))
        else:
            for k in range(ln):
                w |= np.uint64(data[s + k]) << np.uint64(8 * k)
        h = w * _MIX
        last = np.uint64(0)
        if ln > 8:
            last = load_u64(data, e - 8)
            h ^= last
        h = (h ^ np.uint64(ln)) * _MIX
        h ^= h >> np.uint64(29)
        j = np.int64(h & np.uint64(m))
        d = -1
        while True:
            d = slots[j]
            if d < 0:
                break
            if hashes[j] == h and size[d] == ln and head[d] == w and tail[d] == last:
                if ln <= 16:  # the first and last words cover the value
                    break
                r = first[d]
                a = s + 8  # the bytes between the first and the last word
                b = (r * width if width > 0 else offsets[r]) + 8
                k = 0
                while k + 8 <= ln - 16 and load_u64(data, a + k) == load_u64(data, b + k):
                    k += 8
                if k + 8 > ln - 16:
                    while k < ln - 16 and data[a + k] == data[b + k]:
                        k += 1
                    if k == ln - 16:
                        break
            j = (j + 1) & m
        if d < 0:  # a new value
            if c == cap // 2:
                return -1, indices, first
            first[c] = i
            head[c] = w
            tail[c] = last
            size[c] = ln
            slots[j] = c
            hashes[j] = h
            d = c
            c += 1
        indices[i] = d
    return c, indices, first


HOT = NumpyUntilHot(_encode, warm_work=1 << 20)


#: pages of at most this many variable-width values count their distinct values in C-level Python first: a
#: kernel's call (pyarrow's or the compiled one) costs more than the count
SMALL = 512


def _more_distinct(data: np.ndarray, offsets: np.ndarray, limit: int) -> bool:
    """Whether the variable-width values ``data[offsets[i]:offsets[i + 1]]`` hold more than ``limit`` distinct."""
    bounds = (offsets - offsets[0]).tolist()
    raw = data[int(offsets[0]) : int(offsets[-1])].tobytes()
    return len(set(map(raw.__getitem__, map(slice, bounds, bounds[1:])))) > limit


def dictionary_encode(keys: pa.Array, limit: int) -> pa.DictionaryArray | None:
    """``pc.dictionary_encode(keys, null_encoding="mask")`` of string / binary / fixed-size-binary values, or None
    when more than ``limit`` are distinct (the kernel stops there; pyarrow's result is returned whole).  Arrays
    with nulls, other types and a fresh process use pyarrow."""
    n = len(keys)
    t = keys.type
    variable = (
        pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    )
    if keys.null_count or n == 0 or not (variable or pa.types.is_fixed_size_binary(t)):
        return pc.dictionary_encode(keys, null_encoding="mask")
    if variable:
        offsets, width = arrow_offsets(keys), 0
        data = np.frombuffer(keys.buffers()[2], np.uint8) if keys.buffers()[2] is not None else np.zeros(0, np.uint8)
    else:
        width = t.byte_width
        offsets = np.zeros(1, np.int64)
        offsets.flags.writeable = False  # (the kernel's argument types: read-only, as Arrow's buffers)
        data = np.frombuffer(keys.buffers()[1], np.uint8)[keys.offset * width : (keys.offset + n) * width]
    if variable and n <= SMALL and _more_distinct(data, offsets, limit):
        return None  # (a small page of many distinct values: no kernel call to learn it)
    if not HOT.ready():

        def warm() -> None:  # read-only arrays, as Arrow's buffers are
            frozen: list[np.ndarray] = [np.zeros(1, np.int32), np.zeros(1, np.int64), np.zeros(8, np.uint8)]
            for a in frozen:
                a.flags.writeable = False
            for o in frozen[:2]:
                _encode(frozen[2], o, 0, 0, 2)

        HOT.numpy_call(warm, n)
        return pc.dictionary_encode(keys, null_encoding="mask")
    cap = min(4096, 2 << limit.bit_length())  # (cap // 2 > limit: a small page's table sized to it, not 64 KiB)
    while True:  # a larger table while the values outgrow it (rare: the sample said few are distinct)
        c, indices, first = _encode(data, offsets, width, n, cap)
        if c >= 0 or cap // 2 > limit:
            break
        cap *= 8
    if c < 0 or c > limit:
        return None
    return pa.DictionaryArray.from_arrays(from_numpy(indices), keys.take(from_numpy(first[:c])))
