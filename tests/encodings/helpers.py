"""Helpers of the encodings tests: blocks built from values and back, mini-block pages cut into
chunks by a small test-only parser of the chunk envelope (the real one lives in encodings/structural)."""

from __future__ import annotations

import numpy as np

from lancelot.encodings.compression import ConstantBlock, FixedWidthBlock, VariableWidthBlock
from lancelot.encodings.compression.segments import Segments
from lancelot.format.container import read_metadata, unpack_encoding
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.io.source import open_source


def fixed(vals: np.ndarray) -> FixedWidthBlock:
    return FixedWidthBlock(np.ascontiguousarray(vals).view(np.uint8), vals.itemsize * 8, len(vals))


def var_block(values: list[bytes], bits: int = 32) -> VariableWidthBlock:
    offs = np.zeros(len(values) + 1, dtype=np.uint32 if bits == 32 else np.uint64)
    offs[1:] = np.cumsum([len(v) for v in values])
    return VariableWidthBlock(offs, np.frombuffer(b"".join(values), np.uint8), len(values))


def var_list(block) -> list[bytes]:
    d = np.asarray(block.data).tobytes()
    return [d[int(a) : int(b)] for a, b in zip(block.offsets[:-1], block.offsets[1:])]


def segments(bufs: list[np.ndarray]) -> Segments:
    sizes = np.array([len(b) for b in bufs], dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    return Segments(np.concatenate(bufs), starts, sizes)


def read_pages(path: str, column: int = 0):
    """[(page, PageLayout, [buffer bytes as uint8 arrays])] of one column."""
    src = open_source(path)
    md = read_metadata(src)
    out = []
    for page in md.columns[column].pages:
        layout = unpack_encoding(src, page.encoding, pb.PageLayout)
        bufs = [np.frombuffer(bytes(src.read(o, s)), np.uint8) for o, s in zip(page.buffer_offsets, page.buffer_sizes)]
        out.append((page, layout, bufs))
    return out


def _pad8(n: int) -> int:
    return -(-n // 8) * 8


def miniblock_chunks(mb: pb.MiniBlockLayout, bufs: list[np.ndarray], with_levels: bool = False):
    """[(num_values, [value buffers])] of a mini-block page.

    With ``with_levels``: [(num_values, num_levels, rep buffer, def buffer, [value buffers])].
    """
    has_rep, has_def = mb.HasField("rep_compression"), mb.HasField("def_compression")
    assert with_levels or not (has_rep or has_def)
    large = mb.has_large_chunk
    words = bufs[0].view("<u4" if large else "<u2")
    data = bufs[1]
    chunks, pos, seen = [], 0, 0
    for i, word in enumerate(words):
        nbytes = ((int(word) >> 4) + 1) * 8
        log = int(word) & 0xF
        n = (1 << log) if i < len(words) - 1 else mb.num_items - seen
        seen += n
        chunk = data[pos : pos + nbytes]
        pos += nbytes
        num_levels = int(chunk[:2].view("<u2")[0])
        hdr = 2
        level_sizes = []
        for present in (has_rep, has_def):
            if present:
                level_sizes.append(int(chunk[hdr : hdr + 2].view("<u2")[0]))
                hdr += 2
            else:
                level_sizes.append(None)
        w = 4 if large else 2
        sizes = chunk[hdr : hdr + w * mb.num_buffers].view("<u4" if large else "<u2")
        off = _pad8(hdr + w * mb.num_buffers)
        levels = []
        for s in level_sizes:
            if s is None:
                levels.append(None)
            else:
                levels.append(chunk[off : off + s])
                off = _pad8(off + s)
        vbufs = []
        for s in sizes:
            vbufs.append(chunk[off : off + int(s)])
            off = _pad8(off + int(s))
        chunks.append((n, num_levels, levels[0], levels[1], vbufs) if with_levels else (n, vbufs))
    assert seen == mb.num_items
    return chunks


def fixed_values(block, dtype) -> np.ndarray:
    if isinstance(block, ConstantBlock):
        return np.repeat(np.frombuffer(block.value, dtype), block.num_values)
    assert isinstance(block, FixedWidthBlock)
    if block.bits_per_value == 1:
        return np.unpackbits(block.data, bitorder="little", count=block.num_values).astype(bool)
    return block.as_dtype(dtype)


def variable_values(block: VariableWidthBlock) -> list[bytes]:
    data = block.data.tobytes()
    offs = block.offsets.astype(np.int64)
    return [data[offs[i] : offs[i + 1]] for i in range(block.num_values)]


def dictionary_lookup(items, indices, valid=None):
    """Test oracle for mini-block dictionaries: ``items`` gathered at the decoded ``indices`` (null slots,
    where ``valid`` is False, read item 0)."""
    bits = indices.bits_per_value if isinstance(indices, FixedWidthBlock) else len(indices.value) * 8
    idx = fixed_values(indices, f"<u{bits // 8}").astype(np.int64)
    if valid is not None:
        idx = np.where(valid, idx, 0)
    if isinstance(items, VariableWidthBlock):
        vals = variable_values(items)
        return var_block([vals[i] for i in idx])
    nb = items.bits_per_value // 8
    rows = np.asarray(items.data, np.uint8)[: items.num_values * nb].reshape(-1, nb)
    return FixedWidthBlock(rows[idx].reshape(-1), items.bits_per_value, len(idx))


def forget_shared() -> None:
    """Drop what files written alike share (parsed metadata regions, point readers, page
    tables and layouts kept per metadata message): a test that damages a file's
    parsed metadata in memory must not hand its damage to the next file of the same bytes."""
    from lancelot.encodings.structural import field, page_table
    from lancelot.format import container

    container._REGIONS.clear()
    field._SHARED.clear()
    for kept in (page_table._TABLES, page_table._PAGES, page_table._KINDS):
        kept.clear()
