"""Whole reads of simple mini-block columns: the first read of a small freshly opened file.

A dataset of many small fragments is read one small file at a time, each opened once and read
once, so a scan's cost is the per-file cost of the general path (search caches, plans, points,
level arithmetic: about a millisecond of Python per file).  Most columns of such files have one
shape: a top-level primitive, decimal128, string or binary field, one column of mini-block pages
(lance.encodings21.MiniBlockLayout; encoding.md, "Mini Block Page Layout") whose every item is
valid (``REPDEF_ALL_VALID_ITEM``: no repetition or definition levels), without repetition index,
one value buffer per chunk: ``Flat`` values of the type's width, inline-bitpacked ones, one
``Variable`` buffer (flat 32/64-bit offsets, then the bytes), or any other compression the
chunks' batch decoder reads (FSST, general compression...); a page dictionary (page buffer 2,
decoded as one block) looked up by the decoded indices.  Such a column reads here in a few numpy
steps:

* chunk metadata (page buffer 0): one word per chunk (u16, u32 with ``has_large_chunk``): the low 4
  bits log2 of the chunk's item count (the last chunk holds what remains of ``num_items``), the
  rest the chunk size in 8-byte words minus one;
* a chunk (page buffer 1): a u16 level count and one value-buffer size (u16 / u32), padded to 8
  bytes, then the value buffer.

Which pages qualify is decided once per distinct encoding description (files written by one
writer with one schema repeat the same bytes), so the protobuf decoding is shared across files.
Anything else, or anything that does not add up, returns None and the caller takes the general
path (which reports damaged files with their details).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from google.protobuf import any_pb2

from lancelot.encodings.compression.bitpacking_kernel import OK, inline_chunks
from lancelot.encodings.compression.block import DataBlock
from lancelot.encodings.compression.chunked import decompress_chunks
from lancelot.encodings.compression.segments import Segments
from lancelot.encodings.structural.leaf import apply_dictionary, block_to_arrow, indices_to_numpy
from lancelot.encodings.structural.miniblock_table import page_dictionary
from lancelot.format.pb import encodings_v2_1_pb2 as pb

if TYPE_CHECKING:
    from lancelot.format.pb import file2_pb2

#: distinct page encodings remembered (their bytes -> the layout, or None: not simple)
MAX_LAYOUTS = 1024
ALIGN = 8
_PAGE_LAYOUT_URL = "/lance.encodings21.PageLayout"


@dataclass(frozen=True)
class SimpleLayout:
    """A page's mini-block layout reduced to what a whole read needs."""

    variable: bool  # values: Variable (offsets then bytes) rather than Flat
    bits: int  # bits per value (Flat) or per offset (Variable)
    word: int  # bytes per chunk-metadata word and per value-buffer size (2, or 4 with has_large_chunk)
    num_items: int
    packed: bool = False  # Flat values inline-bitpacked (a width word, then FastLanes words) per chunk
    #: a dictionary page: the values are indices (Flat or bitpacked) into page buffer 2, which this
    #: encoding decodes as a block of ``num_dictionary_items`` values
    dictionary: pb.CompressiveEncoding | None = None
    num_dictionary_items: int = 0
    #: any other value compression of one buffer per chunk: the chunks' batch decoder
    #: (compression/chunked.py: FSST, general compression, RLE, byte stream split...) decodes them
    other: pb.CompressiveEncoding | None = None
    #: a constant page (lance.encodings21.ConstantLayout) of every item valid: the one value's bytes
    constant: bytes | None = None
    #: value buffers per chunk (two only for ``other`` values: RLE's values and run lengths)
    value_buffers: int = 1

    @property
    def buffers(self) -> int:
        """The page's buffers: chunk metadata, chunks (and the dictionary); none for a constant."""
        return 0 if self.constant is not None else 2 if self.dictionary is None else 3


_LAYOUTS: dict[bytes, SimpleLayout | None] = {}


def _parse(raw: bytes) -> SimpleLayout | None:
    wrapper = any_pb2.Any()
    try:
        wrapper.ParseFromString(raw)
        if wrapper.type_url.rsplit("/", 1)[-1] != _PAGE_LAYOUT_URL[1:]:
            return None
        layout = pb.PageLayout()
        layout.ParseFromString(wrapper.value)
    except Exception:  # noqa: BLE001 - not parsable here: the general path says why
        return None
    if layout.WhichOneof("layout") == "constant_layout":
        c = layout.constant_layout
        if list(c.layers) != [pb.REPDEF_ALL_VALID_ITEM] or not c.HasField("inline_value") or not c.inline_value:
            return None
        return SimpleLayout(False, 8 * len(c.inline_value), 0, -1, constant=bytes(c.inline_value))
    if layout.WhichOneof("layout") != "mini_block_layout":
        return None
    m = layout.mini_block_layout
    if (
        list(m.layers) != [pb.REPDEF_ALL_VALID_ITEM]
        or m.HasField("rep_compression")
        or m.HasField("def_compression")
        or m.repetition_index_depth
        or m.num_buffers not in (1, 2)
        or not m.HasField("value_compression")
    ):
        return None
    word = 4 if m.has_large_chunk else 2
    vc = m.value_compression
    kind = vc.WhichOneof("compression")
    found = parse_values(vc, kind, word, int(m.num_items))
    if found is None or m.num_buffers != 1 and found.other is None:  # (only a batch decoder reads two)
        return None
    if m.num_buffers != 1:
        found = replace(found, value_buffers=int(m.num_buffers))
    if m.HasField("dictionary"):
        if found.variable or found.bits > 64 and found.other is None:
            return None
        return replace(found, dictionary=m.dictionary, num_dictionary_items=int(m.num_dictionary_items))
    return found


def parse_values(vc: pb.CompressiveEncoding, kind: str | None, word: int, num_items: int) -> SimpleLayout | None:
    """The layout of a mini-block page's values compressed as ``kind`` (Flat, Variable or InlineBitpacking), None when
    this reader does not take them."""
    if kind == "flat":
        if vc.flat.HasField("data") or vc.flat.bits_per_value not in (8, 16, 32, 64, 128):
            return None
        return SimpleLayout(False, int(vc.flat.bits_per_value), word, num_items)
    if kind == "variable":
        var = vc.variable
        offs = var.offsets
        if var.HasField("values") or offs.WhichOneof("compression") != "flat" or offs.flat.HasField("data"):
            return None
        if offs.flat.bits_per_value not in (32, 64):
            return None
        return SimpleLayout(True, int(offs.flat.bits_per_value), word, num_items)
    if kind == "inline_bitpacking":
        bp = vc.inline_bitpacking
        if bp.HasField("values") or bp.uncompressed_bits_per_value not in (8, 16, 32, 64):
            return None
        return SimpleLayout(False, int(bp.uncompressed_bits_per_value), word, num_items, packed=True)
    return SimpleLayout(False, 0, word, num_items, other=vc)


def simple_layout(enc: file2_pb2.Encoding) -> SimpleLayout | None:
    """The page's layout when it is a simple mini-block layout (decided once per encoding's bytes)."""
    if enc.WhichOneof("location") != "direct":
        return None
    raw = enc.direct.encoding
    try:
        return _LAYOUTS[raw]
    except KeyError:
        pass
    found = _parse(raw)
    if len(_LAYOUTS) >= MAX_LAYOUTS:
        _LAYOUTS.clear()
    _LAYOUTS[raw] = found
    return found


def _kind(t: pa.DataType) -> int | None:
    if pa.types.is_decimal128(t):
        return 128
    if pa.types.is_boolean(t) or pa.types.is_decimal(t) or pa.types.is_dictionary(t):
        return None
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t):
        bits = t.bit_width
        return int(bits) if bits in (8, 16, 32, 64) else None
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return 0
    return None


_KINDS: dict[pa.DataType, int | None] = {}


def type_kind(t: pa.DataType) -> int | None:
    """Bits per value of a type these pages hold as Flat values, 0 for string / binary types (as
    Variable values), None for any other type."""
    try:
        return _KINDS[t]
    except KeyError:
        k = _KINDS[t] = _kind(t)
        return k


def value_bits(t: pa.DataType) -> int | None:
    """Bits per value of a type these pages can hold as Flat values (None: variable-width or other)."""
    k = type_kind(t)
    return k or None


def is_variable(t: pa.DataType) -> bool:
    return type_kind(t) == 0


def _chunks(lay: SimpleLayout, meta: memoryview, data: memoryview) -> list[tuple[int, int, int]] | None:
    """(value-buffer start, value-buffer size, items) of each chunk, None when they do not add up."""
    if len(meta) % lay.word:
        return None
    words = np.frombuffer(meta, "<u4" if lay.word == 4 else "<u2").tolist()
    out, pos, left = [], 0, lay.num_items
    for k, w in enumerate(words):
        size = ((w >> 4) + 1) * ALIGN
        items = left if k == len(words) - 1 else 1 << (w & 0xF)
        if items > left or pos + size > len(data):
            return None
        vsize = int.from_bytes(data[pos + 2 : pos + 2 + lay.word], "little")
        if ALIGN + vsize > size:
            return None
        out.append((pos + ALIGN, vsize, items))
        pos += size
        left -= items
    return out if left == 0 else None


def fixed_values(lay: SimpleLayout, data: memoryview, chunks: list[tuple[int, int, int]]) -> np.ndarray | None:
    """The Flat values of the chunks (unpacked when inline-bitpacked: at most 1024 per chunk, as the
    writers make them) as unsigned ``lay.bits``-bit words (128-bit ones as bytes); None when they do not
    add up."""
    dtype = np.dtype(f"<u{lay.bits // 8}" if lay.bits <= 64 else f"V{lay.bits // 8}")
    if lay.packed:
        starts, sizes, counts = (np.array(c, dtype=np.int64) for c in zip(*chunks))
        if int(counts.max()) > 1024:
            return None
        status, values, _, _ = inline_chunks(np.frombuffer(data, np.uint8), starts, sizes, counts, dtype)
        return values if status == OK else None
    width = dtype.itemsize
    parts = []
    for start, vsize, items in chunks:
        if items * width > vsize:
            return None
        parts.append(np.frombuffer(data, dtype, items, start))
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _segments(lay: SimpleLayout, meta: memoryview, data: memoryview) -> tuple[list[Segments], np.ndarray] | None:
    """Where each value buffer of every chunk lies (``lay.value_buffers`` sizes in a chunk's header, the
    buffers after it each padded to 8 bytes) and each chunk's item count; None when they do not add up."""
    word, nb = lay.word, lay.value_buffers
    if len(meta) % word:
        return None
    words = np.frombuffer(meta, "<u4" if word == 4 else "<u2").tolist()
    head = (2 + nb * word + ALIGN - 1) // ALIGN * ALIGN
    starts: list[list[int]] = [[] for _ in range(nb)]
    sizes: list[list[int]] = [[] for _ in range(nb)]
    counts, pos, left = [], 0, lay.num_items
    for k, w in enumerate(words):
        size = ((w >> 4) + 1) * ALIGN
        items = left if k == len(words) - 1 else 1 << (w & 0xF)
        if items > left or size < head or pos + size > len(data):
            return None
        at = pos + head
        for i in range(nb):
            n = int.from_bytes(data[pos + 2 + word * i : pos + 2 + word * (i + 1)], "little")
            if at + n > pos + size:
                return None
            starts[i].append(at)
            sizes[i].append(n)
            at = (at + n + ALIGN - 1) // ALIGN * ALIGN
        counts.append(items)
        pos += size
        left -= items
    if left or not counts:
        return None
    raw = np.frombuffer(data, np.uint8)
    segments = [Segments(raw, np.array(a, np.int64), np.array(b, np.int64)) for a, b in zip(starts, sizes)]
    return segments, np.array(counts, np.int64)


def _batch(lay: SimpleLayout, meta: memoryview, data: memoryview) -> DataBlock | None:
    """The values of the chunks by their batch decoder; None when there is none or they do not decode."""
    assert lay.other is not None
    found = _segments(lay, meta, data)
    if found is None:
        return None
    try:
        return decompress_chunks(lay.other, *found)
    except Exception:  # noqa: BLE001 - the general path reports bad values with their details
        return None


def _looked_up(lay: SimpleLayout, t: pa.DataType, indices: np.ndarray, raw: memoryview) -> pa.Array | None:
    """The values of a dictionary page: its dictionary (shared when small: ``page_dictionary``) looked up."""
    assert lay.dictionary is not None
    try:
        dictionary = page_dictionary(lay.dictionary, np.frombuffer(raw, np.uint8), lay.num_dictionary_items, t).arrow
    except Exception:  # noqa: BLE001 - the general path reports a bad dictionary with its details
        return None
    if len(dictionary) != lay.num_dictionary_items or dictionary.null_count:
        return None
    values = apply_dictionary(indices, dictionary, t)  # every item is valid: an index beyond reads as null
    return None if values.null_count else values


def decode_page(
    lay: SimpleLayout,
    t: pa.DataType,
    rows: int,
    meta: memoryview | None = None,
    data: memoryview | None = None,
    dictionary: memoryview | None = None,
) -> pa.Array | None:
    """All ``rows`` values of one simple page as an array of type ``t``; None when they do not add up."""
    if lay.constant is not None:
        if value_bits(t) != lay.bits:
            return None
        return pa.Array.from_buffers(t, rows, [None, pa.py_buffer(lay.constant * rows)])
    if lay.num_items != rows or meta is None or data is None:
        return None
    if lay.other is not None:
        block = _batch(lay, meta, data)
        if block is None:
            return None
        try:
            if lay.dictionary is None:
                values = block_to_arrow(block, t)
                return values if len(values) == rows else None
            indices = indices_to_numpy(block)
        except Exception:  # noqa: BLE001 - the general path reports bad values with their details
            return None
        if dictionary is None or len(indices) != rows:
            return None
        return _looked_up(lay, t, indices, dictionary)
    chunks = _chunks(lay, meta, data)
    if not chunks:
        return None
    if lay.dictionary is not None:
        if dictionary is None:
            return None
        idx = fixed_values(lay, data, chunks)
        return None if idx is None or len(idx) != rows else _looked_up(lay, t, idx, dictionary)
    if not lay.variable:
        if value_bits(t) != lay.bits:
            return None
        flat = fixed_values(lay, data, chunks)
        if flat is None or len(flat) != rows:
            return None
        return pa.Array.from_buffers(t, rows, [None, pa.py_buffer(flat)])
    if not is_variable(t):
        return None
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    dtype = "<u4" if lay.bits == 32 else "<u8"
    width = lay.bits // 8
    offsets_out: list[np.ndarray] = []
    bytes_out: list[memoryview] = []
    base = 0
    for start, vsize, items in chunks:
        if (items + 1) * width > vsize:
            return None
        offs = np.frombuffer(data, dtype, items + 1, start).astype(np.int64)
        lo, hi = int(offs[0]), int(offs[-1])
        if lo < (items + 1) * width or hi > vsize or (items and bool(np.any(offs[1:] < offs[:-1]))):
            return None
        offs += base - lo
        offsets_out.append(offs if not offsets_out else offs[1:])
        bytes_out.append(data[start + lo : start + hi])
        base += hi - lo
    if not large and base >= 1 << 31:
        return None
    offsets = offsets_out[0] if len(offsets_out) == 1 else np.concatenate(offsets_out)
    offsets = offsets.astype(np.int64 if large else np.int32)
    joined = bytes_out[0] if len(bytes_out) == 1 else b"".join(bytes_out)
    return pa.Array.from_buffers(t, rows, [None, pa.py_buffer(offsets), pa.py_buffer(joined)])
