"""Point reads of mini-block chunks under General compression: inflate only the chunks a take touches.

(encoding.md, "Compression": a ``general`` CompressiveEncoding compresses the first value buffer of
every mini-block chunk with lz4 or zstd; the chunk header gives that buffer's compressed size.)  The
point kernel (miniblock_points) reads chunks laid out as written without General compression, so
the chunks a take fetched are rebuilt that way first: same header with the first value buffer's
size replaced, the definition levels and other buffers copied, every buffer padded to 8 bytes.
"""

from __future__ import annotations

import numpy as np

from lancelot.encodings.compression.general import decompress_buffer
from lancelot.errors import CorruptFileError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

ALIGN = 8


def _pad(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _le(data: np.ndarray, at: int, width: int) -> int:
    return int.from_bytes(data[at:at + width].tobytes(), "little")


def inflate_chunks(data: np.ndarray, pos: np.ndarray, size: np.ndarray, *, has_def: int, word: int, nb: int,
                   compression: pb.BufferCompression) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chunks at ``pos``/``size`` in ``data`` with their first value buffer decompressed:
    (new data, new positions, new sizes)."""
    head = 2 + 2 * has_def + word * nb
    field = 2 + 2 * has_def
    limit = (1 << (8 * word)) - 1
    pieces: list[np.ndarray] = []
    new_size = np.empty(len(pos), np.int64)
    for k in range(len(pos)):
        p0, csize = int(pos[k]), int(size[k])
        if csize < head or p0 + csize > len(data):
            raise CorruptFileError("a General-compressed mini-block chunk is shorter than its header")
        chunk = data[p0:p0 + csize]
        cursor = _pad(head)
        levels = chunk[0:0]
        if has_def:
            def_size = _le(chunk, 2, 2)
            levels = chunk[cursor:cursor + def_size]
            cursor = _pad(cursor + def_size)
        v0_size = _le(chunk, field, word)
        if cursor + v0_size > csize:
            raise CorruptFileError("a General-compressed mini-block buffer runs past its chunk")
        raw = decompress_buffer(compression, chunk[cursor:cursor + v0_size])
        if len(raw) > limit:
            raise CorruptFileError(f"a General-compressed mini-block buffer inflates to {len(raw)} bytes, "
                                   f"more than its chunk header can hold")
        rest = []
        if nb > 1:
            start = _pad(cursor + v0_size)
            v1_size = _le(chunk, field + word, word)
            if start + v1_size > csize:
                raise CorruptFileError("a mini-block buffer runs past its chunk")
            rest.append(chunk[start:start + v1_size])
        header = np.zeros(_pad(head), np.uint8)
        header[:head] = chunk[:head]
        header[field:field + word] = np.frombuffer(len(raw).to_bytes(word, "little"), np.uint8)
        parts = [header]
        if has_def:
            parts.append(_padded(levels))
        parts.append(_padded(raw))
        parts.extend(_padded(b) for b in rest)
        body = np.concatenate(parts)
        pieces.append(body)
        new_size[k] = len(body)
    new_pos = np.zeros(len(pos), np.int64)
    if len(pos):
        np.cumsum(new_size[:-1], out=new_pos[1:])
    return (np.concatenate(pieces) if pieces else np.zeros(0, np.uint8)), new_pos, new_size


def _padded(b: np.ndarray) -> np.ndarray:
    out = np.zeros(_pad(len(b)), np.uint8)
    out[:len(b)] = b
    return out
