"""The zstd mini-block chunks of a take rebuilt without General compression in one numba call.

(encoding.md, "Compression": General wraps a mini-block chunk's first value buffer in lz4 or zstd.)
miniblock_general.py's Python path rebuilds each chunk the point kernel reads: same header with the
first buffer's inflated size, the definition levels, the inflated buffer, the second buffer, every
part padded to ALIGN with zeros.  A take of 10 rows rebuilds 10 chunks per column, each ~2 us of
Python besides the codec; here one call walks them all, inflating the zstd frames with libzstd
(zstd_intrinsics), and returns the same bytes (benchmarks/inflate_cost.py).  LZ4 chunks stay on the
Python path: pyarrow's lz4 inflates a take's 8-16 KiB chunks faster than lz4_kernel's decoder, which
ate the saving (orders' o_totalprice: 3.5 us a chunk in Python, 3.9 in a kernel).  Whatever the
kernel does not vouch for (sizes out of their chunk, a bare frame of an older file, an empty or
implausible buffer, a frame that fails) it leaves to the Python path, which reads the same bytes or
raises the error.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lancelot.encodings.compression import zstd_kernel as zk
from lancelot.encodings.compression.buffers import MAX_DECODED_BYTES
from lancelot.encodings.compression.jit import NumpyUntilHot, njit
from lancelot.encodings.compression.segments import readonly
from lancelot.encodings.structural.miniblock_chunks import ALIGN
from lancelot.format.pb import encodings_v2_1_pb2 as pb

decompress_into = zk.decompress_into
PREFIX = zk.PREFIX


@njit(cache=True, nogil=True, inline="always")
def _word(data: NDArray[np.uint8], at: int, width: int) -> int:
    """The little-endian unsigned integer of ``width`` bytes at ``at``."""
    v = 0
    for b in range(width):
        v |= int(data[at + b]) << (8 * b)
    return v


@njit(cache=True, nogil=True, inline="always")
def _pad(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@njit(cache=True, nogil=True)
def _rebuild(
    data: NDArray[np.uint8],
    pos: NDArray[np.int64],
    size: NDArray[np.int64],
    has_def: int,
    word: int,
    nb: int,
    ctx: int,
) -> tuple[int, NDArray[np.uint8], NDArray[np.int64], NDArray[np.int64]]:
    """(bad chunk or -1, new data, new positions, new sizes) for the chunks at ``pos``/``size``."""
    n = len(pos)
    head = 2 + 2 * has_def + word * nb
    front = _pad(head)
    field = 2 + 2 * has_def
    limit = min(1 << (8 * word), MAX_DECODED_BYTES)
    at_ = np.empty(n, np.int64)
    raw_ = np.empty(n, np.int64)
    new_pos = np.empty(n, np.int64)
    new_size = np.empty(n, np.int64)
    none = np.empty(0, np.uint8)
    end = 0
    for k in range(n):
        p, s = pos[k], size[k]
        if p < 0 or s < head or p + s > len(data):
            return k, none, new_pos, new_size
        at = front + (_pad(_word(data, p + 2, 2)) if has_def else 0)
        v0 = _word(data, p + field, word)
        if at + v0 > s or v0 <= PREFIX:
            return k, none, new_pos, new_size
        new = 0
        if nb > 1:
            s1 = _word(data, p + field + word, word)
            if _pad(at + v0) + s1 > s:
                return k, none, new_pos, new_size
            new = _pad(s1)
        if _word(data, p + at, 4) == zk.MAGIC:
            return k, none, new_pos, new_size  # maybe a bare frame: the Python path decides
        raw = _word(data, p + at, PREFIX)
        if raw <= 0 or raw >= limit or raw > (v0 - PREFIX) * zk.RATIO + 4096:
            return k, none, new_pos, new_size
        at_[k], raw_[k] = at, raw
        new += at + _pad(raw)
        new_pos[k], new_size[k] = end, new
        end += new
        if end > zk.MAX_CALL_BYTES:
            return k, none, new_pos, new_size
    out = np.zeros(end, np.uint8)
    for k in range(n):
        p, o, at, raw = pos[k], new_pos[k], at_[k], raw_[k]
        out[o : o + head] = data[p : p + head]
        for b in range(word):
            out[o + field + b] = (raw >> (8 * b)) & 0xFF
        out[o + front : o + at] = data[p + front : p + at]
        v0 = _word(data, p + field, word)
        dst = o + at
        if decompress_into(ctx, out, dst, raw, data, p + at + PREFIX, v0 - PREFIX) != raw:
            return k, none, new_pos, new_size
        if nb > 1:
            s1 = _word(data, p + field + word, word)
            a1, b1 = _pad(at + v0), dst + _pad(raw)
            out[b1 : b1 + s1] = data[p + a1 : p + a1 + s1]
    return -1, out, new_pos, new_size


def _warm() -> None:
    """The kernel on empty inputs of the real calls' types (jit.NumpyUntilHot), when libzstd is there
    (the kernel links to it)."""
    if zk.zstd_library() is None:
        return
    z = np.zeros(0, np.int64)
    _rebuild(readonly(np.zeros(0, np.uint8)), z, z, 1, 2, 2, zk.dctx())


#: takes whose zstd chunks are rebuilt in Python before the kernel is prepared
HOT_REBUILD = NumpyUntilHot(_rebuild)


def rebuild_chunks(
    data: np.ndarray, pos: np.ndarray, size: np.ndarray, *, has_def: int, word: int, nb: int, scheme: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """miniblock_general.inflate_chunks in one kernel call: (new data, positions, sizes), or None when
    the kernel cannot vouch for a chunk or is not ready (the caller's Python path then reads the same
    bytes or raises the error)."""
    if scheme != pb.COMPRESSION_ALGORITHM_ZSTD or nb > 2 or word not in (2, 4):
        return None
    ctx = zk.ready(HOT_REBUILD, _warm, 0)
    if not ctx:
        return None
    bad, out, new_pos, new_size = _rebuild(
        readonly(np.ascontiguousarray(data, np.uint8)),
        np.ascontiguousarray(pos, np.int64),
        np.ascontiguousarray(size, np.int64),
        has_def,
        word,
        nb,
        ctx,
    )
    return None if bad >= 0 else (out, new_pos, new_size)
