"""The FastLanes unpack loop in numba (bitpacking.py's layout; lance.encodings21.InlineBitpacking).

Lane ``l`` of row ``r`` of a chunk is value ``FL_ORDER[r // 8] * 16 + (r % 8) * 128 + l``; row ``r`` starts at bit ``r *
W`` of each lane's stream of T-bit words.  One pass per chunk writes the values straight into their places (no row
gather, no temporary arrays), the inner loop running over the lanes of a word row. ``inline_chunks`` decodes a whole run
of inline-bitpacked mini-block chunks (width word + packed words each) in one call, checking every header."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from lancelot.encodings.compression import points
from lancelot.encodings.compression.points import le
from lancelot.encodings.compression.segments import aligned_words
from lancelot.util.arrays import empty
from lancelot.util.jit import NumpyUntilHot, njit

#: values per FastLanes chunk
CHUNK = 1024

_ORDER = np.array((0, 4, 2, 6, 1, 5, 3, 7), dtype=np.int64)


@njit(cache=True, nogil=True)
def _unpack(words: NDArray[Any], width: int, t: int, order: NDArray[np.int64], out: NDArray[Any]) -> None:
    """``words``: (n, W * LANES) T-bit words, one row per chunk; ``out``: n * 1024 T-bit values."""
    for c in range(words.shape[0]):
        _unpack_into(words[c], width, t, order, out, c * 1024, 1024)


def unpack_words(words: np.ndarray, width: int) -> np.ndarray:
    """Values (n, 1024) of the packed words ``words`` (n, width, 1024 / T) of ``width`` bits each."""
    if (
        words.ndim != 3
        or words.shape[1] != width
        or not 0 < width <= words.dtype.itemsize * 8
        or words.shape[2] * words.dtype.itemsize * 8 != 1024
    ):
        raise ValueError(f"{width}-bit packed words of shape {words.shape} ({words.dtype})")
    n, _, lanes = words.shape
    words = np.ascontiguousarray(words)
    if not HOT_WORDS.ready():  # a fresh process: numpy until the kernel is loaded (same values)
        HOT_WORDS.numpy_call(
            lambda: _unpack(
                words[:0].reshape(0, width * lanes).copy(), int(width), 1024 // lanes, _ORDER, np.empty(0, words.dtype)
            ),
            work=words.nbytes,
        )
        out = np.empty((n, 1024), dtype=words.dtype)
        _unpack_rows_numpy(words, width, out)
        return out
    out = np.empty(n * 1024, dtype=words.dtype)
    _unpack(words.reshape(n, width * lanes), int(width), 1024 // lanes, _ORDER, out)
    return out.reshape(n, 1024)


def _unpack_rows_numpy(words: np.ndarray, w: int, out: np.ndarray) -> None:
    """``_unpack`` in numpy: packed words (n, w, LANES) into ``out`` (n, 1024), row by row of the layout."""
    dtype = words.dtype
    t = dtype.itemsize * 8
    lanes = 1024 // t
    mask = dtype.type(np.iinfo(dtype).max >> (t - w))
    for r in range(t):
        first = int(_ORDER[r // 8]) * 16 + (r % 8) * 128  # row r of lane l is value first + l
        k, sh = divmod(r * w, t)
        row = words[:, k, :] >> dtype.type(sh)
        if sh + w > t:
            row |= words[:, k + 1, :] << dtype.type(t - sh)
        out[:, first : first + lanes] = row & mask


# statuses of ``inline_chunks``
OK, SHORT_HEADER, BAD_WIDTH, SHORT_PACKED, TOO_MANY = 0, 1, 2, 3, 4
INLINE_MESSAGES = {
    SHORT_HEADER: "inline bitpacking: chunk header past the end of the buffer",
    BAD_WIDTH: "inline bitpacking: bit width {} for {}-bit values",
    SHORT_PACKED: "inline bitpacking: packed chunk past the end of the buffer",
    TOO_MANY: "inline bitpacking: a chunk holds more than 1024 values",
}


@njit(cache=True, nogil=True, inline="always")
def _unpack_full(words: NDArray[Any], width: int, t: int, order: NDArray[np.int64], out: NDArray[Any], p: int) -> None:
    """All 1024 values of one chunk into ``out[p:p + 1024]``; ``t`` is a constant where this is inlined
    (``_unpack_into``), so the loops over the lanes of a word row have a fixed length the compiler unrolls and
    vectorizes (with ``t`` a variable they ran about 2.5x slower)."""
    lanes = 1024 // t
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) if width >= 64 else (np.uint64(1) << np.uint64(width)) - np.uint64(1)
    for r in range(t):
        bit = r * width
        lo = (bit // t) * lanes
        sh = np.uint64(bit % t)
        base = p + order[r // 8] * 16 + (r % 8) * 128
        if bit % t + width <= t:
            for lane in range(lanes):
                out[base + lane] = (np.uint64(words[lo + lane]) >> sh) & mask
        else:
            up = np.uint64(t) - sh
            for lane in range(lanes):
                v = (np.uint64(words[lo + lane]) >> sh) | (np.uint64(words[lo + lanes + lane]) << up)
                out[base + lane] = v & mask


@njit(cache=True, nogil=True)
def _unpack_into(
    words: NDArray[Any], width: int, t: int, order: NDArray[np.int64], out: NDArray[Any], p: int, n: int
) -> None:
    """The first ``n`` values of one chunk (``words``: its W * LANES packed words, flat) into ``out[p:p + n]``."""
    if n == 1024:  # a whole chunk: the loops specialized for each T
        if t == 64:
            _unpack_full(words, width, 64, order, out, p)
        elif t == 32:
            _unpack_full(words, width, 32, order, out, p)
        elif t == 16:
            _unpack_full(words, width, 16, order, out, p)
        else:
            _unpack_full(words, width, 8, order, out, p)
        return
    lanes = 1024 // t
    full = np.uint64(0xFFFFFFFFFFFFFFFF)
    mask = full if width >= 64 else (np.uint64(1) << np.uint64(width)) - np.uint64(1)
    for r in range(t):
        bit = r * width
        wi = bit // t
        sh = np.uint64(bit % t)
        base = order[r // 8] * 16 + (r % 8) * 128
        if base >= n:
            continue
        m = min(lanes, n - base)
        lo_row = wi * lanes
        if bit % t + width <= t:
            for lane in range(m):
                out[p + base + lane] = (np.uint64(words[lo_row + lane]) >> sh) & mask
        else:
            up = np.uint64(t) - sh
            for lane in range(m):
                v = (np.uint64(words[lo_row + lane]) >> sh) | (np.uint64(words[lo_row + lanes + lane]) << up)
                out[p + base + lane] = v & mask


@njit(cache=True, nogil=True)
def _inline_chunks(
    data: NDArray[np.uint8],
    starts: NDArray[np.int64],
    sizes: NDArray[np.int64],
    counts: NDArray[np.int64],
    order: NDArray[np.int64],
    scratch: NDArray[Any],
    scratch_bytes: NDArray[np.uint8],
    out: NDArray[Any],
    bad: NDArray[np.int64],
    words: NDArray[Any],
) -> int:
    """Every inline-bitpacked chunk ``data[starts[k]:starts[k] + sizes[k]]`` (a T-bit width word, then ``128 * W`` bytes
    of packed words) into ``out``, ``counts[k]`` values each.  ``scratch`` is a 1024-word buffer (T-bit words) and
    ``scratch_bytes`` the same memory as bytes; ``words`` is ``data`` seen as T-bit words when its start is T-aligned
    (else empty): a chunk at an aligned start is unpacked from there, without a copy into ``scratch``."""
    t = scratch_bytes.shape[0] * 8 // 1024
    lanes = 1024 // t
    tb = t // 8
    p = 0
    for k in range(len(starts)):
        n = counts[k]
        if n == 0:
            continue
        bad[0] = k
        if n > 1024:
            return TOO_MANY
        s = starts[k]
        if sizes[k] < tb:
            return SHORT_HEADER
        w = 0
        for b in range(tb):
            w |= np.int64(data[s + b]) << (8 * b)
        if w < 0 or w > t:  # (a 64-bit width word read as int64 can be negative)
            bad[1] = w
            return BAD_WIDTH
        nbytes = 128 * w
        if tb + nbytes > sizes[k]:
            return SHORT_PACKED
        if w == 0:
            for i in range(n):
                out[p + i] = 0
        elif len(words) and s % tb == 0:
            q = s // tb + 1
            _unpack_into(words[q : q + w * lanes], w, t, order, out, p, n)
        else:
            scratch_bytes[:nbytes] = data[s + tb : s + tb + nbytes]
            _unpack_into(scratch, w, t, order, out, p, n)
        p += n
    return OK


def inline_chunks(
    data: np.ndarray, starts: np.ndarray, sizes: np.ndarray, counts: np.ndarray, dtype: np.dtype
) -> tuple[int, np.ndarray, int, int]:
    """Decode inline-bitpacked chunks: (status, values of ``dtype``, bad chunk, bad width)."""
    dtype = np.dtype(dtype)
    starts, sizes, counts = (np.ascontiguousarray(a, dtype=np.int64) for a in (starts, sizes, counts))
    if not HOT_UNPACK.ready():  # a fresh process: numpy until the kernel is loaded (same values and statuses)
        HOT_UNPACK.numpy_call(
            lambda: inline_chunks_kernel(data, starts[:0].copy(), sizes[:0].copy(), counts[:0].copy(), dtype),
            work=len(data),
        )
        return inline_chunks_numpy(data, starts, sizes, counts, dtype)
    return inline_chunks_kernel(data, starts, sizes, counts, dtype)


def inline_chunks_kernel(
    data: np.ndarray, starts: np.ndarray, sizes: np.ndarray, counts: np.ndarray, dtype: np.dtype
) -> tuple[int, np.ndarray, int, int]:
    """``inline_chunks`` by the numba kernel (int64 ``starts``, ``sizes``, ``counts``)."""
    out = empty(int(counts.sum()), dtype)
    scratch = np.empty(1024, dtype=dtype)
    bad = np.zeros(2, dtype=np.int64)
    words = aligned_words(data, dtype)
    if words is None:
        words = scratch[:0]
    status = _inline_chunks(data, starts, sizes, counts, _ORDER, scratch, scratch.view(np.uint8), out, bad, words)
    return status, out, int(bad[0]), int(bad[1])


def inline_chunks_numpy(
    data: np.ndarray, starts: np.ndarray, sizes: np.ndarray, counts: np.ndarray, dtype: np.dtype
) -> tuple[int, np.ndarray, int, int]:
    """``inline_chunks`` in numpy: headers checked all at once (the first bad chunk reported, as the kernel does), then
    the chunks of each width unpacked together, row by row of the FastLanes layout."""
    dtype = np.dtype(dtype)
    t = dtype.itemsize * 8
    tb, lanes = t // 8, 1024 // t
    n_chunks = len(starts)
    live = counts > 0
    has_head = live & (counts <= 1024) & (sizes >= tb)
    head_at = np.where(has_head, starts, 0)
    width = np.zeros(n_chunks, dtype=np.int64)
    for b in range(tb):
        width |= np.where(has_head, data[np.minimum(head_at + b, max(len(data) - 1, 0))], 0).astype(np.int64) << (8 * b)
    status = np.zeros(n_chunks, dtype=np.int64)
    wrong = (width < 0) | (width > t)
    status[live & wrong & has_head] = BAD_WIDTH
    status[live & ~wrong & has_head & (tb + 128 * width > sizes)] = SHORT_PACKED
    status[live & (sizes < tb)] = SHORT_HEADER
    status[live & (counts > 1024)] = TOO_MANY
    bad = np.flatnonzero(status)
    if len(bad):
        k = int(bad[0])
        return int(status[k]), np.empty(0, dtype), k, int(width[k]) if status[k] == BAD_WIDTH else 0
    values = np.zeros((n_chunks, 1024), dtype=dtype)
    for w in np.unique(width[live & (width > 0)]).tolist():
        rows = np.flatnonzero(live & (width == w))
        at = starts[rows][:, None] + tb + np.arange(128 * w)
        words = data[at].view(dtype).reshape(len(rows), w, lanes)
        if len(rows) == n_chunks:
            _unpack_rows_numpy(words, w, values)
        else:
            part = np.empty((len(rows), 1024), dtype=dtype)
            _unpack_rows_numpy(words, w, part)
            values[rows] = part
    if n_chunks and bool(np.all(counts[:-1] == 1024)):
        out = values.reshape(-1)[: int(counts.sum())]
    else:
        out = values[
            np.repeat(np.arange(n_chunks), counts),
            np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts),
        ]
    return OK, np.ascontiguousarray(out), 0, 0


@njit(cache=True, nogil=True, inline="always")
def _pack_full64(vals: NDArray[Any], at: int, w: int, order: NDArray[np.int64], out: NDArray[Any], p: int) -> None:
    """Pack the 64-bit ``vals[at:at + 1024]`` (w > 0 bits each) into ``out[p:p + w * 16]``: each word row is gathered in
    a 16-lane accumulator and stored once it is full (the read-modify-write of every row in ``out`` ran about 3x slower
    for 64-bit values; for narrower ones the plain loop is as fast)."""
    acc = np.zeros(16, np.uint64)
    for r in range(64):
        bit = r * w
        sh = bit % 64
        first = at + order[r // 8] * 16 + (r % 8) * 128
        for lane in range(16):
            acc[lane] |= np.uint64(vals[first + lane]) << np.uint64(sh)
        if sh + w >= 64:  # the word row is full: stored, the accumulator takes what spills
            lo = p + (bit // 64) * 16
            for lane in range(16):
                out[lo + lane] = acc[lane]
            if sh + w > 64:
                up = np.uint64(64 - sh)
                for lane in range(16):
                    acc[lane] = np.uint64(vals[first + lane]) >> up
            else:
                for lane in range(16):
                    acc[lane] = 0


@njit(cache=True, nogil=True)
def _pack_inline(
    vals: NDArray[Any],
    n: int,
    widths: NDArray[np.int64],
    word_starts: NDArray[np.int64],
    order: NDArray[np.int64],
    out: NDArray[Any],
) -> None:
    """Inline-pack chunk k of ``vals`` (its first ``n - 1024 * k`` values, zeros after) into ``out`` (T-bit words): the
    width word at ``word_starts[k]``, then ``widths[k] * LANES`` packed words."""
    t = out.itemsize * 8
    lanes = 1024 // t
    for k in range(len(widths)):
        w = widths[k]
        p = word_starts[k]
        out[p] = w
        if w == 0:
            continue
        base_val = k * 1024
        if t == 64 and base_val + 1024 <= n:
            _pack_full64(vals, base_val, w, order, out, p + 1)
            continue
        words = out[p + 1 : p + 1 + w * lanes]
        words[:] = 0
        for r in range(t):
            bit = r * w
            wi = bit // t
            sh = np.uint64(bit % t)
            up = np.uint64(t) - sh
            first = base_val + order[r // 8] * 16 + (r % 8) * 128
            lo_row = wi * lanes
            spill = bit % t + w > t
            for lane in range(lanes):
                i = first + lane
                if i >= n:
                    break  # the zero padding of the last chunk
                v = np.uint64(vals[i])
                words[lo_row + lane] |= v << sh  # stored as T bits: what spills goes to the next word
                if spill:
                    words[lo_row + lanes + lane] |= v >> up


def pack_inline(vals: np.ndarray, widths: np.ndarray, word_starts: np.ndarray, total_words: int) -> np.ndarray:
    """Inline-bitpacked chunks of the unsigned values ``vals`` (1024 per chunk, the last zero-padded) with the given bit
    widths, each chunk starting at word ``word_starts[k]``; returned as bytes.

    Until the kernel is loaded (a fresh process), the chunks of each width are packed together with numpy
    (``pack_inline_numpy``: the same words); the kernel is prepared in the background once the path is hot."""
    out = np.empty(total_words, dtype=vals.dtype)
    args = (np.ascontiguousarray(vals), len(vals), widths.astype(np.int64), word_starts.astype(np.int64), _ORDER)
    if HOT_PACK.ready():
        _pack_inline(*args, out)
    else:
        HOT_PACK.numpy_call(
            lambda: _pack_inline(args[0][:0].copy(), 0, args[2][:0].copy(), args[3][:0].copy(), _ORDER, out[:0].copy())
        )
        pack_inline_numpy(args[0], args[2], args[3], out)
    return out.view(np.uint8)


def pack_inline_numpy(vals: np.ndarray, widths: np.ndarray, word_starts: np.ndarray, out: np.ndarray) -> None:
    """``_pack_inline`` in numpy: the chunks of one width at a time, shifted and or-ed row by row."""
    t = out.itemsize * 8
    lanes = 1024 // t
    n_chunks = len(widths)
    out[word_starts] = widths.astype(out.dtype)
    if not n_chunks or not widths.any():
        return
    padded = np.zeros(n_chunks * 1024, dtype=vals.dtype)
    padded[: len(vals)] = vals
    chunks = padded.reshape(n_chunks, 1024)
    for w in np.flatnonzero(np.bincount(widths.astype(np.intp))).tolist():  # (np.unique imports numpy.ma)
        if not w:
            continue
        rows = np.flatnonzero(widths == w)
        values = chunks[rows]
        words = np.zeros((len(rows), w, lanes), out.dtype)
        for r in range(t):
            first = int(_ORDER[r // 8]) * 16 + (r % 8) * 128  # row r of lane l is value first + l
            row = values[:, first : first + lanes]
            k, sh = divmod(r * w, t)
            words[:, k, :] |= row << out.dtype.type(sh)
            if sh + w > t:
                words[:, k + 1, :] |= row >> out.dtype.type(t - sh)
        at = word_starts[rows][:, None] + 1 + np.arange(w * lanes)
        out[at.reshape(-1)] = words.reshape(-1)


#: pages packed with numpy before the kernel is prepared in the background
HOT_PACK = NumpyUntilHot(_pack_inline)
#: inline-bitpacked reads decoded with numpy before the kernel is prepared in the background (or 16 MiB read)
HOT_UNPACK = NumpyUntilHot(_inline_chunks, warm_work=16 << 20)
#: out-of-line bitpacked words unpacked with numpy before the kernel is prepared in the background
HOT_WORDS = NumpyUntilHot(_unpack, warm_work=16 << 20)


# -- point reads (compression/points.py): one value of a FastLanes-packed chunk


@njit(cache=True, nogil=True, inline="always")
def unpack_one(data: np.ndarray, base: int, t: int, w: int, row: int, lane: int) -> np.uint64:
    """Value at (row, lane) of the T-bit words packed at ``base`` with width w > 0 (bits ``row * w`` of the lane's
    stream; ``bitpacking.lane_positions`` gives (row, lane))."""
    tb = t // 8
    lanes = CHUNK // t
    bit = row * w
    word = bit // t
    shift = bit % t
    v: np.uint64 = le(data, base + (word * lanes + lane) * tb, tb) >> np.uint64(shift)
    if shift + w > t:
        v |= le(data, base + ((word + 1) * lanes + lane) * tb, tb) << np.uint64(t - shift)
    if w < 64:
        v &= (np.uint64(1) << np.uint64(w)) - np.uint64(1)
    return v


@njit(cache=True, nogil=True, inline="always")
def inline_chunk_width(data: np.ndarray, at: int, size: int, t: int) -> tuple[int, int]:
    """(status, bit width) of the InlineBitpacking chunk buffer of T-bit values at ``data[at:at + size]``."""
    tb = t // 8
    if size < tb:
        return points.SHORT_BUFFER, 0
    w = np.int64(le(data, at, tb))
    if w < 0 or w > t:  # (a 64-bit width word read as int64 can be negative)
        return points.BAD_WIDTH, 0
    if tb + (CHUNK // 8) * w > size:
        return points.SHORT_BUFFER, 0
    return points.OK, w


@njit(cache=True, nogil=True, inline="always")
def inline_point(data: np.ndarray, at: int, t: int, w: int, row: int, lane: int) -> np.uint64:
    """Value (row, lane) of the InlineBitpacking chunk buffer at ``at`` (width from ``inline_chunk_width``)."""
    if w == 0:
        zero: np.uint64 = np.uint64(0)  # (numpy's stubs type scalars as Any for Python 3.10)
        return zero
    return unpack_one(data, at + t // 8, t, w, row, lane)


@njit(cache=True, nogil=True, inline="always")
def _out_of_line_shape(n: int, size: int, t: int, w: int) -> tuple[int, int, int, bool]:
    """(bytes per packed group, whole groups, packed groups, raw tail?) of ``n`` levels in ``size`` bytes."""
    tb = t // 8
    group_bytes = (CHUNK // 8) * w
    whole = n // CHUNK
    tail = n % CHUNK
    raw_tail = tail > 0 and size == whole * group_bytes + tail * tb
    packed = whole + (1 if tail > 0 and not raw_tail else 0)
    return group_bytes, whole, packed, raw_tail


@njit(cache=True, nogil=True, inline="always")
def out_of_line_fits(n: int, size: int, t: int, w: int) -> int:
    """Whether ``size`` bytes hold ``n`` OutOfLineBitpacking levels of width ``w`` (a status)."""
    group_bytes, whole, packed, raw_tail = _out_of_line_shape(n, size, t, w)
    if size < packed * group_bytes + ((n % CHUNK) * (t // 8) if raw_tail else 0):
        return points.SHORT_BUFFER
    return points.OK


@njit(cache=True, nogil=True, inline="always")
def out_of_line_point(
    data: np.ndarray, at: int, n: int, size: int, t: int, w: int, i: int, rows: np.ndarray, lanes: np.ndarray
) -> np.uint64:
    """Level ``i`` of the OutOfLineBitpacking block at ``data[at:at + size]`` (checked by ``out_of_line_fits``)."""
    group_bytes, whole, packed, _ = _out_of_line_shape(n, size, t, w)
    g = i // CHUNK
    if g >= packed:  # the unpacked tail
        return le(data, at + whole * group_bytes + (i - whole * CHUNK) * (t // 8), t // 8)
    if w == 0:
        zero: np.uint64 = np.uint64(0)  # (numpy's stubs type scalars as Any for Python 3.10)
        return zero
    r = i % CHUNK
    return unpack_one(data, at + g * group_bytes, t, w, rows[r], lanes[r])
