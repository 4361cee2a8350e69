"""LZ4 blocks of many mini-block chunks inflated in one numba loop (General/LZ4, chunked.py).

pylance's LZ4 buffer is a u32 little-endian decompressed size and one raw LZ4 block (general.py).  A page scan meets a
thousand such chunk buffers of a few KiB: one codec call each costs more in Python than the inflating itself, so this
kernel walks every block of a read in one call.  The LZ4 block format: sequences of a token (high nibble: literal count,
low nibble: match length - 4; 15 means more length bytes follow, each added, until one below 255), the literals, then
(except after the block's last literals) a u16 little-endian match offset back into the output.

Any malformed block (bad length, offset before the chunk's output, output not exactly the announced size) makes the
kernel return its index: the caller then decodes chunk by chunk, and pyarrow's codec reports the problem."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lancelot.encodings.compression.segments import readonly
from lancelot.util.arrays import empty
from lancelot.util.jit import NumpyUntilHot, lazy_intrinsic, njit

load_u64 = lazy_intrinsic("lancelot.util.jit_intrinsics", "load_u64")
store_u64 = lazy_intrinsic("lancelot.util.jit_intrinsics", "store_u64")
#: bytes ``out`` holds past the last chunk's output: copies go 8 bytes at a time
SLACK = 8


@njit(cache=True, nogil=True)
def _inflate(
    data: NDArray[np.uint8],
    starts: NDArray[np.int64],
    sizes: NDArray[np.int64],
    out_starts: NDArray[np.int64],
    out: NDArray[np.uint8],
) -> int:
    """Inflate block k (``data[starts[k] + 4 : starts[k] + sizes[k]]``) into ``out[out_starts[k] : out_starts[k + 1]]``;
    -1 when all fit exactly, else the bad block's index."""
    for k in range(len(starts)):
        i = starts[k] + 4
        end = starts[k] + sizes[k]
        base = out_starts[k]
        o = base
        stop = out_starts[k + 1]
        while i < end:
            token = data[i]
            i += 1
            lit = token >> 4
            if lit == 15:
                while True:
                    if i >= end:
                        return k
                    b = data[i]
                    i += 1
                    lit += b
                    if b != 255:
                        break
            if i + lit > end or o + lit > stop:
                return k
            if i + lit + 8 <= len(data):  # 8 bytes at a time (the overrun is overwritten next)
                for j in range(0, lit, 8):
                    store_u64(out, o + j, load_u64(data, i + j))
            else:
                for j in range(lit):
                    out[o + j] = data[i + j]
            i += lit
            o += lit
            if i >= end:
                break  # the block's last literals
            if i + 2 > end:
                return k
            off = data[i] | (data[i + 1] << 8)
            i += 2
            if off == 0 or off > o - base:
                return k
            ml = token & 15
            if ml == 15:
                while True:
                    if i >= end:
                        return k
                    b = data[i]
                    i += 1
                    ml += b
                    if b != 255:
                        break
            ml += 4
            if o + ml > stop:
                return k
            src = o - off
            if off >= 8:
                for j in range(0, ml, 8):
                    store_u64(out, o + j, load_u64(out, src + j))
            else:
                for j in range(ml):  # byte by byte: the match overlaps its own output
                    out[o + j] = out[src + j]
            o += ml
        if o != stop:
            return k
    return -1


#: page reads whose LZ4 chunks are inflated one codec call each before the kernel is prepared
HOT_LZ4 = NumpyUntilHot(_inflate, warm_work=16 << 20)


def inflate_blocks(data: np.ndarray, starts: np.ndarray, sizes: np.ndarray, out_sizes: np.ndarray) -> np.ndarray | None:
    """The LZ4 chunk buffers ``data[starts[k]:starts[k] + sizes[k]]`` (size prefix included) inflated to
    ``out_sizes[k]`` bytes each, concatenated; None while the kernel is not loaded in this process (it is then prepared
    in the background) or when a block is malformed (the caller decodes chunk by chunk and reports it)."""
    data = readonly(data)
    starts, sizes = np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(sizes, np.int64)
    if not HOT_LZ4.ready():
        z = np.zeros(0, np.int64)
        HOT_LZ4.numpy_call(
            lambda: _inflate(data[:0], z, z, np.zeros(1, np.int64), np.zeros(SLACK, np.uint8)), int(sizes.sum())
        )
        return None
    out_starts = np.zeros(len(out_sizes) + 1, dtype=np.int64)
    np.cumsum(out_sizes, out=out_starts[1:])
    total = int(out_starts[-1])
    out = empty(total + SLACK, np.uint8)
    bad = _inflate(data, starts, sizes, out_starts, out)
    return out[:total] if bad < 0 else None
