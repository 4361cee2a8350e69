"""Mini-block chunks, many at once (lance.encodings21.MiniBlockLayout; encoding.md, "Mini Block Page Layout").

A chunk is: u16 level count; u16 rep size (if ``rep_compression``); u16 def
size (if ``def_compression``); one size per value buffer (u16, or u32 when
``has_large_chunk``); then, each padded to 8 bytes from the chunk start: the
header, the repetition levels, the definition levels and the value buffers.

``decode_chunks`` reads the headers of every fetched chunk in one numba loop,
then decodes all chunks' levels and values in one pass per technique
(compression/chunked.py), falling back to one chunk at a time for techniques
without a batch kernel.  The result holds the concatenated levels and values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from lancelot.encodings import compression
from lancelot.encodings.compression.chunked import decompress_chunks, decompress_level_chunks
from lancelot.encodings.compression.segments import Segments, readonly
from lancelot.encodings.structural.page import levels_u16
from lancelot.errors import CorruptFileError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.jit import NumpyUntilHot, njit

ALIGN = 8
I64 = NDArray[np.int64]

#: values of one chunk (or of all chunks) as Arrow: block -> array
ToArrow = Callable[[compression.DataBlock], pa.Array]


@dataclass
class DecodedChunks:
    """The levels and values of consecutive fetched chunks, concatenated."""

    num_levels: np.ndarray  # int64 per chunk
    rep: np.ndarray | None  # uint16, all chunks
    dfn: np.ndarray | None
    values: pa.Array  # the chunks' values (visible items), in order


@dataclass
class ChunkFormat:
    """What a page's layout says about the shape of its chunks."""

    layout: pb.MiniBlockLayout
    has_rep: bool
    has_def: bool
    word: int  # bytes per value-buffer size (2, or 4 with has_large_chunk)

    @property
    def num_buffers(self) -> int:
        return int(self.layout.num_buffers)

    @property
    def header_size(self) -> int:
        return 2 + 2 * self.has_rep + 2 * self.has_def + self.word * self.num_buffers


@dataclass
class ChunkBuffers:
    """Where the buffers of each fetched chunk lie (from the chunk headers)."""

    num_levels: np.ndarray  # int64 per chunk (the header's level count)
    rep: Segments | None
    dfn: Segments | None
    values: list[Segments]


@njit(cache=True, nogil=True)
def parse_headers(
    data: NDArray[np.uint8],
    pos: NDArray[np.int64],
    size: NDArray[np.int64],
    head: int,
    nlev: int,
    word: int,
    nbuf: int,
    levels: NDArray[np.int64],
    starts: NDArray[np.int64],
    sizes: NDArray[np.int64],
    bad: NDArray[np.int64],
) -> int:
    """Each chunk's level count and the start and size of its buffers (levels first, then values).

    Returns 0, or 1 (a chunk shorter than its header) / 2 (a buffer past its chunk's end)
    with the chunk and buffer in ``bad``.
    """
    for k in range(len(pos)):
        p = pos[k]
        if size[k] < head:
            bad[0] = k
            return 1
        levels[k] = np.int64(data[p]) | (np.int64(data[p + 1]) << 8)
        cursor = (head + ALIGN - 1) // ALIGN * ALIGN
        for i in range(nbuf):
            if i < nlev:
                f = p + 2 + 2 * i
                n = np.int64(data[f]) | (np.int64(data[f + 1]) << 8)
            else:
                f = p + 2 + 2 * nlev + word * (i - nlev)
                n = 0
                for b in range(word):
                    n |= np.int64(data[f + b]) << (8 * b)
            if cursor + n > size[k]:
                bad[0] = k
                bad[1] = i
                bad[2] = n
                return 2
            starts[k, i] = p + cursor
            sizes[k, i] = n
            cursor = (cursor + n + ALIGN - 1) // ALIGN * ALIGN
    return 0


def parse_headers_numpy(
    data: NDArray[np.uint8], pos: I64, size: I64, head: int, nlev: int, word: int, nbuf: int, *out: I64
) -> int:
    """``parse_headers`` in numpy (``out``: its levels, starts, sizes and bad): one pass per buffer over all
    chunks; the first bad chunk (and, in it, the first bad buffer) is reported, as the kernel does."""
    levels, starts, sizes, bad = out
    n = len(pos)
    fits = size >= head
    p = np.where(fits, pos, 0)  # a chunk shorter than its header is not read
    hi = max(len(data) - 1, 0)

    def u(at: np.ndarray, nbytes: int) -> np.ndarray:
        v = np.zeros(n, dtype=np.int64)
        for b in range(nbytes):
            v |= np.where(fits, data[np.minimum(at + b, hi)], 0).astype(np.int64) << (8 * b)
        return v

    levels[:] = u(p, 2)
    cursor = np.full(n, (head + ALIGN - 1) // ALIGN * ALIGN, dtype=np.int64)
    over = np.full(n, nbuf, dtype=np.int64)  # each chunk's first buffer past its end (nbuf: none)
    for i in range(nbuf):
        ln = u(p + 2 + 2 * i, 2) if i < nlev else u(p + 2 + 2 * nlev + word * (i - nlev), word)
        past = (cursor + ln > size) & (over == nbuf)
        over[past] = i
        starts[:, i] = p + cursor
        sizes[:, i] = ln
        cursor = (cursor + ln + ALIGN - 1) // ALIGN * ALIGN
    bad_chunks = np.flatnonzero(~fits | (over < nbuf))
    if not len(bad_chunks):
        return 0
    k = int(bad_chunks[0])
    bad[0] = k
    if not fits[k]:
        return 1
    i = int(over[k])
    bad[1], bad[2] = i, sizes[k, i]
    return 2


#: mini-block reads whose chunk headers are parsed with numpy before the kernel is prepared in the background
HOT_HEADERS = NumpyUntilHot(parse_headers, warm_work=100_000)


def chunk_buffers(fmt: ChunkFormat, data: np.ndarray, pos: np.ndarray, size: np.ndarray) -> ChunkBuffers:
    """Parse the headers of the chunks at ``data[pos[k]:pos[k] + size[k]]`` (all checked against the sizes)."""
    n = len(pos)
    head = fmt.header_size
    nlev = int(fmt.has_rep) + int(fmt.has_def)
    nbuf = nlev + fmt.num_buffers
    levels = np.empty(n, dtype=np.int64)
    starts = np.empty((n, nbuf), dtype=np.int64)
    sizes = np.empty((n, nbuf), dtype=np.int64)
    bad = np.zeros(3, dtype=np.int64)
    data, pos, size = readonly(data), np.ascontiguousarray(pos, np.int64), np.ascontiguousarray(size, np.int64)
    if HOT_HEADERS.ready():
        status = parse_headers(data, pos, size, head, nlev, fmt.word, nbuf, levels, starts, sizes, bad)
    else:  # a fresh process: numpy until the kernel is loaded (same results)
        HOT_HEADERS.numpy_call(
            lambda: parse_headers(
                data,
                pos[:0].copy(),
                size[:0].copy(),
                head,
                nlev,
                fmt.word,
                nbuf,
                levels[:0].copy(),
                starts[:0].copy(),
                sizes[:0].copy(),
                bad.copy(),
            ),
            work=n,
        )
        status = parse_headers_numpy(data, pos, size, head, nlev, fmt.word, nbuf, levels, starts, sizes, bad)
    if status == 1:
        k = int(bad[0])
        raise CorruptFileError(f"chunk {k} of the read: header of {head} bytes in a chunk of {int(size[k])}")
    if status == 2:
        k, i, ln = (int(x) for x in bad)
        raise CorruptFileError(
            f"chunk {k} of the read: buffer {i} of {ln} bytes runs past the chunk end ({int(size[k])} bytes)"
        )
    segs = [Segments(data, starts[:, i], sizes[:, i]) for i in range(nbuf)]
    rep = segs.pop(0) if fmt.has_rep else None
    dfn = segs.pop(0) if fmt.has_def else None
    return ChunkBuffers(levels, rep, dfn, segs)


def decode_chunks(
    fmt: ChunkFormat, data: np.ndarray, pos: np.ndarray, size: np.ndarray, items: np.ndarray, to_arrow: ToArrow
) -> DecodedChunks:
    """Decode the chunks at ``data[pos[k]:pos[k] + size[k]]`` holding ``items[k]`` values each."""
    bufs = chunk_buffers(fmt, data, pos, size)
    num_levels = bufs.num_levels
    rep = dfn = None
    if bufs.rep is not None:  # set exactly when fmt.has_rep
        rep = level_chunks(fmt.layout.rep_compression, bufs.rep, num_levels, "repetition")
    if bufs.dfn is not None:  # set exactly when fmt.has_def
        dfn = level_chunks(fmt.layout.def_compression, bufs.dfn, num_levels, "definition")
    if not (fmt.has_rep or fmt.has_def):
        num_levels = items.astype(np.int64)
    elif not fmt.has_rep and np.any(num_levels != items):
        raise CorruptFileError("a mini-block chunk holds a different number of levels and values")
    values = _values(fmt.layout.value_compression, bufs.values, items, to_arrow)
    return DecodedChunks(num_levels, rep, dfn, values)


def level_chunks(enc: pb.CompressiveEncoding, seg: Segments, counts: np.ndarray, what: str) -> np.ndarray:
    """The rep or def levels of mini-block chunks, ``counts[k]`` in chunk k, decompressed."""
    out = decompress_level_chunks(enc, seg, counts)
    if out is None:
        parts = [
            levels_u16(compression.decompress_block(enc, seg.chunk(k), int(counts[k])), int(counts[k]), what)
            for k in range(len(seg))
        ]
        out = np.concatenate(parts) if parts else np.zeros(0, np.uint16)
    if len(out) != int(counts.sum()):
        raise CorruptFileError(f"{what} levels: decoded {len(out)}, the chunk headers say {int(counts.sum())}")
    return out


def _values(enc: pb.CompressiveEncoding, segs: list[Segments], items: np.ndarray, to_arrow: ToArrow) -> pa.Array:
    block = decompress_chunks(enc, segs, items)
    if block is not None:
        values = to_arrow(block)
    else:
        parts = []
        for k in range(len(items)):
            one = compression.decompress(enc, [s.chunk(k) for s in segs], int(items[k]))
            arr = to_arrow(one)
            if len(arr) != int(items[k]):
                raise CorruptFileError(f"chunk {k} of the read: decoded {len(arr)} values, expected {int(items[k])}")
            parts.append(arr)
        values = parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
    if len(values) != int(items.sum()):
        raise CorruptFileError(f"decoded {len(values)} values, the chunks hold {int(items.sum())}")
    return values
