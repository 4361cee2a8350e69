"""Point reads of mini-block chunks under General compression: inflate only the chunks a take touches.

(encoding.md, "Compression": a ``general`` CompressiveEncoding compresses the first value buffer of
every mini-block chunk with lz4 or zstd; the chunk header gives that buffer's compressed size.)  The
point kernel (miniblock_points) reads chunks laid out as written without General compression, so
the chunks a take fetched are rebuilt that way first: same header with the first value buffer's
size replaced, the definition levels and other buffers copied, every buffer padded to 8 bytes.
"""

from __future__ import annotations

import struct
from functools import cache
from typing import NamedTuple, TypeVar

import numpy as np
from numpy.typing import NDArray

from lancelot.encodings.compression.general import inflater
from lancelot.encodings.structural.miniblock_chunks import ALIGN
from lancelot.encodings.structural.miniblock_general_kernel import rebuild_chunks
from lancelot.errors import CorruptFileError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

_N = TypeVar("_N", int, NDArray[np.int64])
#: up to this many chunks are rebuilt one by one with Python integers: the array version's dozens of
#: numpy calls cost ~35 us whatever the count (a take of 10 rows from a 25-row General page: 37 -> 11 us;
#: of 10-40 rows of 16 KiB lz4 chunks about 5-10% faster)
FEW_CHUNKS = 32
_ZEROS = bytes(ALIGN)


def _pad(n: _N) -> _N:
    """``n`` rounded up to a multiple of ALIGN."""
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _fields(data: NDArray[np.uint8], at: NDArray[np.int64], width: int) -> NDArray[np.int64]:
    """The little-endian ``width``-byte unsigned integers at positions ``at`` of ``data``."""
    b = data[at[:, None] + np.arange(width)].astype(np.int64)
    values: NDArray[np.int64] = (b << (8 * np.arange(width))).sum(axis=1)
    return values


def inflate_chunks(
    data: np.ndarray,
    pos: np.ndarray,
    size: np.ndarray,
    *,
    has_def: int,
    word: int,
    nb: int,
    compression: pb.BufferCompression,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chunks at ``pos``/``size`` in ``data`` with their first value buffer decompressed:
    (new data, new positions, new sizes).  Headers are read and checked for all chunks at once; the
    one loop decompresses and places each chunk's buffers."""
    pos, size = np.asarray(pos, np.int64), np.asarray(size, np.int64)
    n = len(pos)
    if n == 0:
        return np.zeros(0, np.uint8), pos, size
    fast = rebuild_chunks(data, pos, size, has_def=has_def, word=word, nb=nb, scheme=compression.scheme)
    if fast is not None:
        return fast
    if n <= FEW_CHUNKS:
        return _inflate_few(data, pos, size, Chunks(has_def, word, nb, compression))
    head = 2 + 2 * has_def + word * nb
    field = 2 + 2 * has_def
    if (size < head).any() or (pos + size > len(data)).any():
        raise CorruptFileError("a General-compressed mini-block chunk is shorter than its header")
    def_size = _fields(data, pos + 2, 2) if has_def else np.zeros(n, np.int64)
    v0_at = _pad(head) + (_pad(def_size) if has_def else 0)
    v0_size = _fields(data, pos + field, word)
    if (v0_at + v0_size > size).any():
        raise CorruptFileError("a General-compressed mini-block buffer runs past its chunk")
    v1_at = _pad(v0_at + v0_size)
    v1_size = _fields(data, pos + field + word, word) if nb > 1 else np.zeros(n, np.int64)
    if nb > 1 and (v1_at + v1_size > size).any():
        raise CorruptFileError("a mini-block buffer runs past its chunk")
    inflate, mv = inflater(compression), np.ascontiguousarray(data, np.uint8).data
    raws = [inflate(mv[p : p + s]) for p, s in zip((pos + v0_at).tolist(), v0_size.tolist())]
    raw_size = np.fromiter(map(len, raws), np.int64, n)
    if int(raw_size.max()) >= 1 << (8 * word):
        raise CorruptFileError(
            f"a General-compressed mini-block buffer inflates to {int(raw_size.max())} bytes, "
            f"more than its chunk header can hold"
        )
    new_size = v0_at + _pad(raw_size) + (_pad(v1_size) if nb > 1 else 0)
    new_pos = np.zeros(n, np.int64)
    np.cumsum(new_size[:-1], out=new_pos[1:])
    out = np.zeros(int(new_pos[-1] + new_size[-1]), np.uint8)
    # everything before the first value buffer (header, definition levels) is copied as it is
    front = int(_pad(head))
    out[new_pos[:, None] + np.arange(head)] = data[pos[:, None] + np.arange(head)]
    out[new_pos[:, None] + field + np.arange(word)] = (raw_size[:, None] >> (8 * np.arange(word))) & 0xFF
    rows = zip(
        new_pos.tolist(),
        pos.tolist(),
        def_size.tolist(),
        v0_at.tolist() if isinstance(v0_at, np.ndarray) else [front] * n,  # (an array when has_def)
        raws,
        (v1_at.tolist() if nb > 1 else [0] * n),
        v1_size.tolist(),
        raw_size.tolist(),
    )
    for np0, p0, ds, at, raw, a1, s1, rs in rows:
        if ds:
            out[np0 + front : np0 + front + ds] = data[p0 + front : p0 + front + ds]
        out[np0 + at : np0 + at + rs] = np.frombuffer(raw, np.uint8)
        if s1:
            b1 = np0 + at + _pad(rs)
            out[b1 : b1 + s1] = data[p0 + a1 : p0 + a1 + s1]
    return out, new_pos, new_size


class Chunks(NamedTuple):
    """The shape of a read's General-compressed chunks: a def buffer or not, the header's size
    word, the value buffers, their compression."""

    has_def: int
    word: int
    nb: int
    compression: pb.BufferCompression


def _inflate_few(
    data: np.ndarray, pos: np.ndarray, size: np.ndarray, chunks: Chunks
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``inflate_chunks`` for a few chunks, each rebuilt with Python integers (same checks, same bytes):
    one ``struct`` call reads a chunk's header, another writes it with the inflated size; the buffers
    are views of ``data``, joined once at the end (~1 us a chunk and ~3 us a call besides the codec)."""
    has_def, word, nb, compression = chunks
    head = 2 + 2 * has_def + word * nb
    front = _pad(head)
    header = _header(has_def, word, nb)
    unpack, pack = header.unpack_from, header.pack
    k0 = 1 + has_def  # the header's field of the first value buffer's size
    inflate = inflater(compression)
    mv = np.ascontiguousarray(data, np.uint8).data
    total = len(mv)
    parts: list[bytes | memoryview] = []
    starts: list[int] = []
    sizes: list[int] = []
    end = 0
    limit = 1 << (8 * word)
    head_pad = _ZEROS[: front - head]
    for p, s in zip(pos.tolist(), size.tolist()):
        if s < head or p + s > total:
            raise CorruptFileError("a General-compressed mini-block chunk is shorter than its header")
        fields = unpack(mv, p)
        ds = fields[1] if has_def else 0
        at, v0 = front + _pad(ds), fields[k0]
        if at + v0 > s:
            raise CorruptFileError("a General-compressed mini-block buffer runs past its chunk")
        raw = inflate(mv[p + at : p + at + v0])
        rs = len(raw)
        if rs >= limit:
            raise CorruptFileError(
                f"a General-compressed mini-block buffer inflates to {rs} bytes, more than its chunk header can hold"
            )
        parts += (pack(*fields[:k0], rs, *fields[k0 + 1 :]), head_pad)
        if has_def:
            parts += (mv[p + front : p + front + ds], _ZEROS[: at - front - ds])
        parts += (raw, _ZEROS[: -rs % ALIGN])
        new = at + rs + (-rs % ALIGN)
        if nb > 1:
            a1, s1 = _pad(at + v0), fields[k0 + 1]
            if a1 + s1 > s:
                raise CorruptFileError("a mini-block buffer runs past its chunk")
            parts += (mv[p + a1 : p + a1 + s1], _ZEROS[: -s1 % ALIGN])
            new += s1 + (-s1 % ALIGN)
        starts.append(end)
        sizes.append(new)
        end += new
    return np.frombuffer(bytearray().join(parts), np.uint8), np.array(starts, np.int64), np.array(sizes, np.int64)


@cache
def _header(has_def: int, word: int, nb: int) -> struct.Struct:
    """A chunk header's layout: u16 level count, the definition levels' u16 size when there are
    levels, then each value buffer's size in ``word`` bytes (miniblock_chunks)."""
    return struct.Struct("<H" + "H" * has_def + ("H" if word == 2 else "I") * nb)
