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
from lancelot.encodings.compression.segments import readonly
from lancelot.encodings.structural.miniblock_chunks import ALIGN, parse_headers
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.jit import NumpyUntilHot, njit

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
    """(bad chunk or -1, new data, new positions, new sizes) for the chunks at ``pos``/``size``; the
    headers are read and checked by miniblock_chunks' own parser."""
    n = len(pos)
    head = 2 + 2 * has_def + word * nb
    field = 2 + 2 * has_def  # the header's field of the first value buffer's size
    limit = min(1 << (8 * word), MAX_DECODED_BYTES)
    new_pos = np.empty(n, np.int64)
    new_size = np.empty(n, np.int64)
    none = np.empty(0, np.uint8)
    for k in range(n):
        if pos[k] < 0 or pos[k] + size[k] > len(data):
            return k, none, new_pos, new_size
    nbuf = has_def + nb  # (the definition levels are buffer 0 when there are any)
    starts = np.empty((n, nbuf), np.int64)
    sizes = np.empty((n, nbuf), np.int64)
    bad = np.zeros(3, np.int64)
    if parse_headers(data, pos, size, head, has_def, word, nbuf, np.empty(n, np.int64), starts, sizes, bad):
        return bad[0], none, new_pos, new_size
    raw_ = np.empty(n, np.int64)
    end = 0
    for k in range(n):
        at, v0 = starts[k, has_def], sizes[k, has_def]
        if v0 <= PREFIX or _word(data, at, 4) == zk.MAGIC:
            return k, none, new_pos, new_size  # (maybe a bare frame: the Python path decides)
        raw = _word(data, at, PREFIX)
        if raw <= 0 or raw >= limit or raw > (v0 - PREFIX) * zk.RATIO + 4096:
            return k, none, new_pos, new_size
        raw_[k] = raw
        new = at - pos[k] + _pad(raw) + (_pad(sizes[k, nbuf - 1]) if nb > 1 else 0)
        new_pos[k], new_size[k] = end, new
        end += new
        if end > zk.MAX_CALL_BYTES:
            return k, none, new_pos, new_size
    out = np.zeros(end, np.uint8)
    for k in range(n):
        p, o, raw = pos[k], new_pos[k], raw_[k]
        at = starts[k, has_def] - p
        out[o : o + head] = data[p : p + head]  # (the padding stays zero, as the Python path writes it)
        if has_def:
            lv, ls = starts[k, 0], sizes[k, 0]
            out[o + lv - p : o + lv - p + ls] = data[lv : lv + ls]
        for b in range(word):
            out[o + field + b] = (raw >> (8 * b)) & 0xFF
        dst = o + at
        if decompress_into(ctx, out, dst, raw, data, p + at + PREFIX, sizes[k, has_def] - PREFIX) != raw:
            return k, none, new_pos, new_size
        if nb > 1:
            a1, s1, b1 = starts[k, nbuf - 1], sizes[k, nbuf - 1], dst + _pad(raw)
            out[b1 : b1 + s1] = data[a1 : a1 + s1]
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
