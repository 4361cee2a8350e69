"""Variable: variable-width values, offsets plus bytes (lance.encodings21.Variable).

``Variable.offsets`` is a Flat of 32 or 64 bits (the width of the offsets); pylance never compresses the offsets
further.  Three byte layouts:

* mini-block chunk (one buffer): ``num_values + 1`` offsets, then the value bytes, then padding to the offset width
  (pylance pads with 0x48).  Offsets count from the start of the chunk buffer, so offsets[0] = (n + 1) * width.
* block (whole buffer, e.g. a mini-block dictionary): a header of two words of the offset width, ``bits_per_offset`` and
  ``bytes_start``, then the offsets up to ``bytes_start``, then the bytes.  An older header (one byte of
  bits_per_offset, a word of num_values, a word of bytes_start) is read too.
* per value (full-zip): the structural layer already split offsets and bytes.
"""

from __future__ import annotations

import numpy as np

from lancelot.encodings.compression.block import VariableWidthBlock
from lancelot.encodings.compression.buffers import as_u8, check_size, offsets_int64, require, view_uint
from lancelot.encodings.compression.scatter import copy_slices
from lancelot.errors import CorruptFileError, UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

PAD_BYTE = 0x48


def offset_bits(var: pb.Variable) -> int:
    """The offset width (32 or 64) of a Variable description."""
    offs = var.offsets
    if offs.WhichOneof("compression") != "flat":
        raise UnsupportedEncodingError(
            f"variable encoding with {offs.WhichOneof('compression')} offsets (only flat is supported)"
        )
    if var.HasField("values"):
        raise UnsupportedEncodingError("variable encoding with per-buffer compression of the values")
    bits = offs.flat.bits_per_value
    if bits not in (32, 64):
        raise UnsupportedEncodingError(f"variable encoding with {bits}-bit offsets")
    return bits


def check_offsets(offsets: np.ndarray, limit: int, what: str) -> None:
    """Offsets must be non-decreasing and end within ``limit`` bytes."""
    if len(offsets) == 0:
        return
    last = int(offsets[-1])
    if last > limit:
        raise CorruptFileError(f"{what}: last offset {last} is past {limit} bytes")
    if len(offsets) <= 64:  # (a few, as a small dictionary has: checked in Python ints)
        listed = offsets.tolist()
        increasing = all(a <= b for a, b in zip(listed, listed[1:]))
    else:
        increasing = bool((offsets[1:] >= offsets[:-1]).all())
    if not increasing:
        raise CorruptFileError(f"{what}: offsets decrease")


def rebase(offsets: np.ndarray, data: np.ndarray, num_values: int) -> VariableWidthBlock:
    """A block whose offsets start at zero (data sliced to the values' bytes); the offsets were checked
    not to decrease (``check_offsets``), so the block says so."""
    start, end = int(offsets[0]), int(offsets[-1])
    return VariableWidthBlock(offsets - offsets.dtype.type(start), data[start:end], num_values, ordered=True)


def decompress_variable(var: pb.Variable, buffers: list[np.ndarray], num_values: int) -> VariableWidthBlock:
    """Decode one mini-block chunk buffer of variable-width values."""
    bits = offset_bits(var)
    require(len(buffers) >= 1, "variable encoding expects one buffer, got none")
    buf = as_u8(buffers[0])
    offsets = view_uint(buf, bits, num_values + 1, "variable offsets")
    check_offsets(offsets, len(buf), "variable chunk")
    require(
        int(offsets[0]) >= (num_values + 1) * bits // 8 or num_values == 0, "variable chunk: values overlap the offsets"
    )
    return rebase(offsets, buf, num_values)


def decompress_variable_block(var: pb.Variable | None, buffer: np.ndarray, num_values: int) -> VariableWidthBlock:
    """Decode a whole-buffer (block) variable-width layout with its header."""
    if var is not None:
        offset_bits(var)
    buf = as_u8(buffer)
    size = len(buf)
    if size < 8:
        raise CorruptFileError(f"variable block of {size} bytes has no header")
    first, b1, b2, b3 = buf[:4].tolist()  # (the header's few words read as Python ints)
    old = bool(b1 or b2 or b3)
    bits = first if old else int.from_bytes(buf[:4].tobytes(), "little")
    if bits not in (32, 64):
        raise CorruptFileError(f"variable block with {bits}-bit offsets")
    w = bits // 8
    at = 1 + w if old else w  # the word of bytes_start (after an old header's num_values)
    hdr = at + w
    if size < hdr:
        raise CorruptFileError("variable block header is truncated")
    start = int.from_bytes(buf[at:hdr].tobytes(), "little")
    if not (hdr <= start <= size and (start - hdr) % w == 0):
        raise CorruptFileError(f"variable block: bytes start {start} is not after the offsets")
    n_offsets = (start - hdr) // w
    if n_offsets < num_values + 1:
        raise CorruptFileError(f"variable block has {n_offsets} offsets for {num_values} values")
    offsets = view_uint(buf[hdr:start], bits, num_values + 1, "variable block offsets")
    data = buf[start:]
    check_offsets(offsets, len(data), "variable block")
    return rebase(offsets, data, num_values)


def _offsets_of(block: VariableWidthBlock) -> np.ndarray:
    offs = np.asarray(block.offsets).astype(np.uint64)
    return offs - offs[0] if len(offs) else np.zeros(1, np.uint64)


def compress_variable(block: VariableWidthBlock, bits: int = 32) -> tuple[pb.CompressiveEncoding, list[np.ndarray]]:
    """One mini-block chunk buffer: offsets (from the chunk start), bytes, padding."""
    w = bits // 8
    offs = _offsets_of(block)
    data = as_u8(block.data)[int(block.offsets[0]) : int(block.offsets[-1])] if len(block.offsets) else as_u8(b"")
    header = (len(offs)) * w
    check_size(header + len(data), "variable chunk")
    out_offs = (offs + header).astype(f"<u{w}")
    total = header + len(data)
    padded = -(-total // w) * w
    out = np.full(padded, PAD_BYTE, dtype=np.uint8)
    out[:header] = out_offs.view(np.uint8)
    out[header:total] = data
    return variable_encoding(bits), [out]


def compress_variable_chunks(
    block: VariableWidthBlock, items: np.ndarray, bits: int = 32
) -> tuple[np.ndarray, np.ndarray]:
    """Every mini-block chunk of ``block`` at once, chunk k holding values ``items[k]`` to ``items[k + 1]``: (their
    buffers one after another, the byte bounds of each), the bytes ``compress_variable`` makes per chunk."""
    w = bits // 8
    offs = offsets_int64(block.offsets)
    items = np.asarray(items, np.int64)
    counts = np.diff(items)
    first, last = offs[items[:-1]], offs[items[1:]]
    header = (counts + 1) * w
    total = header + (last - first)
    check_size(int(total.max(initial=0)), "variable chunk")
    padded = -(-total // w) * w
    bounds = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(padded, out=bounds[1:])
    out = np.full(int(bounds[-1]), PAD_BYTE, np.uint8)
    # each chunk's offsets: items[k]..items[k + 1] (chunk ends repeated), from the chunk start
    inner = items[1:-1]
    at = np.insert(np.arange(int(items[0]), int(items[-1]) + 1, dtype=np.int64), inner - items[0], inner)
    rel = (offs[at] - np.repeat(first - header, counts + 1)).astype(f"<u{w}").view(np.uint8)
    copy_slices(out, bounds[:-1], rel, np.cumsum(header) - header, header)
    copy_slices(out, bounds[:-1] + header, as_u8(block.data), first, last - first)
    return out, bounds


def compress_variable_block(
    block: VariableWidthBlock, bits: int = 32
) -> tuple[pb.CompressiveEncoding, list[np.ndarray]]:
    """The whole-buffer layout: header words, offsets, bytes."""
    w = bits // 8
    offs = _offsets_of(block)
    data = as_u8(block.data)[int(block.offsets[0]) : int(block.offsets[-1])] if len(block.offsets) else as_u8(b"")
    start = 2 * w + len(offs) * w
    out = np.empty(start + len(data), dtype=np.uint8)
    out[: 2 * w] = np.array([bits, start], dtype=f"<u{w}").view(np.uint8)
    out[2 * w : start] = offs.astype(f"<u{w}").view(np.uint8)
    out[start:] = data
    return variable_encoding(bits), [out]


def variable_encoding(bits: int) -> pb.CompressiveEncoding:
    """Variable with flat offsets of ``bits`` bits, as pylance writes it."""
    offsets = pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=bits))
    return pb.CompressiveEncoding(variable=pb.Variable(offsets=offsets))
