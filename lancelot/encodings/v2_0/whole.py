"""Page shapes of simple 2.0 leaf columns, and their whole reads (a small file's first read).

The shapes are the one classification of a page's encoding that every 2.0 read planner uses: the whole read here, the
takes of take_plans.py.

A dataset of many small 2.0 fragments is read one small file at a time, each opened once and read once, so the per-page
cost of the node decoder (the encoding tree walked page by page, a read step per buffer) is paid per file.  What pylance
writes at 2.0 for a plain column is mostly pages of four shapes (encodings_v2_0.proto), and a read of all of a column's
rows reads them here in one round (every page's buffers) and a few numpy steps a page:

* ``Nullable(no_nulls | some_nulls, Flat)`` of the type's width (booleans one bit a value, fixed-size lists
  ``dimension`` values a row): the values buffer and the validity bitmap are Arrow's buffers as they are (both
  LSB-first);
* ``Nullable(all_nulls)``: nulls;
* ``Binary(indices = no-null Flat end offsets, bytes = Flat u8)``: a null value's end offset is above the real end by
  ``null_adjustment``;
* ``Dictionary(indices = no-null Flat, items = such a Binary)`` of a plain string/binary column: 1-based indices, 0 a
  null.

A page's shape is found once per distinct encoding description (``page_shape`` caches it by the encoding's bytes: files
of one writer and schema repeat them).  Anything else, or bytes that do not add up, makes ``decode_page`` return None
and the caller takes the node decoder (which reports damaged files with their details)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from lancelot.encodings.base import ColumnInfo, Plan
from lancelot.encodings.v2_0.page import parse_any, parsed_direct
from lancelot.format.pb import encodings_v2_0_pb2 as pb
from lancelot.format.pb import file2_pb2
from lancelot.util.arrays import is_large
from lancelot.util.types import is_variable, is_whole_bytes

#: numpy types of unsigned integers by byte width
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


class Flat(NamedTuple):
    values: int  # page buffer index
    validity: int  # page buffer index of the bitmap, -1 when every value is valid
    bits: int  # bits per value


class Binary(NamedTuple):
    offsets: int  # page buffer index of the end offsets
    width: int  # their bytes each
    data: int  # page buffer index of the bytes
    adjust: int  # null_adjustment (0: no nulls)


class Dictionary(NamedTuple):
    indices: int  # page buffer index
    width: int  # index bytes
    items: Binary
    num_items: int  # dictionary items


ALL_NULLS = "all_nulls"
Shape = Flat | Binary | Dictionary | str


def unwrap_no_nulls(enc: pb.ArrayEncoding) -> pb.ArrayEncoding:
    """The values encoding under any Nullable.NoNull wrappers."""
    while enc.WhichOneof("array_encoding") == "nullable" and enc.nullable.WhichOneof("nullability") == "no_nulls":
        enc = enc.nullable.no_nulls.values
    return enc


def fixed_bits(dtype: pa.DataType) -> int | None:
    """Bits of one value of a plain fixed-width type or boolean, or of a fixed-size list of one (None otherwise)."""
    if pa.types.is_boolean(dtype):
        return 1
    if is_whole_bytes(dtype):
        return int(dtype.bit_width)
    if pa.types.is_fixed_size_list(dtype) and is_whole_bytes(dtype.value_type) and dtype.list_size > 0:
        return int(dtype.list_size) * int(dtype.value_type.bit_width)
    return None


def flat_buffer(enc: pb.ArrayEncoding, bits: int | None) -> int | None:
    """Page-buffer index of a plain Flat of ``bits`` bits (any whole-byte width if None), else None."""
    if enc.WhichOneof("array_encoding") != "flat":
        return None
    flat = enc.flat
    if flat.buffer.buffer_type != pb.Buffer.page or flat.HasField("compression"):
        return None
    ok = flat.bits_per_value in (8, 16, 32, 64) if bits is None else flat.bits_per_value == bits
    return flat.buffer.buffer_index if ok else None


def binary_shape(b: pb.Binary) -> Binary | None:
    """The shape of a Binary of no-null flat end offsets and flat bytes, or None."""
    idx = unwrap_no_nulls(b.indices)
    at = flat_buffer(idx, None)
    data = flat_buffer(b.bytes, 8)
    if at is None or data is None:
        return None
    return Binary(at, int(idx.flat.bits_per_value) // 8, data, int(b.null_adjustment))


def encoding_shape(enc: pb.ArrayEncoding, t: pa.DataType) -> Shape | None:
    """The shape of a page of encoding ``enc`` in a column of type ``t``, or None."""
    bits = fixed_bits(t)
    if bits is not None:
        validity = -1
        if enc.WhichOneof("array_encoding") == "nullable":
            which = enc.nullable.WhichOneof("nullability")
            if which == "all_nulls":
                return ALL_NULLS
            if which == "some_nulls":
                validity_at = flat_buffer(enc.nullable.some_nulls.validity, 1)
                if validity_at is None:
                    return None
                validity, enc = validity_at, enc.nullable.some_nulls.values
            else:
                enc = unwrap_no_nulls(enc)
        if pa.types.is_fixed_size_list(t) and enc.WhichOneof("array_encoding") == "fixed_size_list":
            if enc.fixed_size_list.dimension != t.list_size:
                return None
            enc = unwrap_no_nulls(enc.fixed_size_list.items)
            at = flat_buffer(enc, bits // t.list_size)
        else:
            at = flat_buffer(enc, bits)
        return None if at is None else Flat(at, validity, bits)
    if not is_variable(t):
        return None
    enc = unwrap_no_nulls(enc)
    which = enc.WhichOneof("array_encoding")
    if which == "binary":
        return binary_shape(enc.binary)
    if which == "dictionary":
        d = enc.dictionary
        idx = unwrap_no_nulls(d.indices)
        at = flat_buffer(idx, None)
        items = unwrap_no_nulls(d.items)
        if at is None or items.WhichOneof("array_encoding") != "binary":
            return None
        found = binary_shape(items.binary)
        if found is None:
            return None
        return Dictionary(at, int(idx.flat.bits_per_value) // 8, found, int(d.num_dictionary_items))
    if which == "nullable" and enc.nullable.WhichOneof("nullability") == "all_nulls":
        return ALL_NULLS
    return None


@lru_cache(maxsize=4096)
def _direct_shape(raw: bytes, t: pa.DataType) -> Shape | None:
    enc = parse_any(raw, pb.ArrayEncoding)
    return encoding_shape(enc, t) if isinstance(enc, pb.ArrayEncoding) else None


def page_shape(page: file2_pb2.ColumnMetadata.Page, t: pa.DataType) -> Shape | None:
    """The shape of a page with a direct encoding in a column of type ``t`` (cached by the encoding's bytes), or None
    (the node decoder reads it)."""
    enc = page.encoding
    return _direct_shape(enc.direct.encoding, t) if enc.WhichOneof("location") == "direct" else None


def buffers(s: Shape) -> list[int]:
    """The page buffers a page of shape ``s`` reads, in the order ``decode_page`` takes them."""
    if isinstance(s, Flat):
        return [s.values] if s.validity < 0 else [s.values, s.validity]
    if isinstance(s, Binary):
        return [s.offsets, s.data]
    if isinstance(s, Dictionary):
        return [s.indices, s.items.offsets, s.items.data]
    return []


def fixed_array(t: pa.DataType, n: int, vbuf: pa.Buffer | None, values: pa.Buffer) -> pa.Array:
    """``n`` values of a fixed-width type, or of a fixed-size list of one (its items contiguous), from their bytes."""
    if pa.types.is_fixed_size_list(t):
        items = pa.Array.from_buffers(t.value_type, n * t.list_size, [None, values])
        return pa.Array.from_buffers(t, n, [vbuf], children=[items])
    return pa.Array.from_buffers(t, n, [vbuf, values])


def strings(s: Binary, n: int, offsets: memoryview, data: memoryview, t: pa.DataType) -> pa.Array | None:
    if len(offsets) < n * s.width:
        return None
    ends = np.frombuffer(offsets, UINT[s.width], n).astype(np.int64)
    valid = None
    if s.adjust:
        null = ends >= s.adjust
        if null.any():
            ends = np.where(null, ends - s.adjust, ends)
            valid = ~null
    if n and (ends[-1] > len(data) or (ends < 0).any() or (np.diff(ends) < 0).any() or ends[0] < 0):
        return None
    large = is_large(t)
    if not large and n and ends[-1] >= 1 << 31:
        return None
    out = np.zeros(n + 1, np.int64 if large else np.int32)
    out[1:] = ends
    vbuf = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(t, n, [vbuf, pa.py_buffer(out), pa.py_buffer(data)])


#: items of dictionaries of at most this many bytes are decoded once per distinct content and shared (read-only):
#: files written alike repeat their flag and code dictionaries byte for byte
SHARED_ITEMS_BYTES = 4096
_ITEMS: dict[tuple[Binary, int, bytes, bytes, pa.DataType], pa.Array] = {}


def shared_strings(s: Binary, n: int, offsets: memoryview, data: memoryview, t: pa.DataType) -> pa.Array | None:
    """``strings``, decoded once per distinct content when small (from copies: kept items pin no read's bytes)."""
    if len(offsets) + len(data) > SHARED_ITEMS_BYTES:
        return strings(s, n, offsets, data, t)
    key = (s, n, bytes(offsets), bytes(data), t)
    found = _ITEMS.get(key)
    if found is None:
        found = strings(s, n, memoryview(key[2]), memoryview(key[3]), t)
        if found is not None:
            if len(_ITEMS) >= 256:
                _ITEMS.clear()
            _ITEMS[key] = found
    return found


def decode_page(s: Shape, n: int, bufs: list[memoryview], t: pa.DataType) -> pa.Array | None:
    """The ``n`` rows of a page of shape ``s`` from the bytes of its ``buffers(s)``, or None when they do not add up."""
    if s == ALL_NULLS:
        return pa.nulls(n, t)
    if isinstance(s, Flat):
        values = bufs[0]
        if len(values) * 8 < n * s.bits:
            return None
        vbuf = None
        if s.validity >= 0:
            if len(bufs[1]) * 8 < n:
                return None
            vbuf = pa.py_buffer(bufs[1])
        return fixed_array(t, n, vbuf, pa.py_buffer(values))
    if isinstance(s, Binary):
        return strings(s, n, bufs[0], bufs[1], t)
    assert isinstance(s, Dictionary)
    items = strings(s.items, s.num_items, bufs[1], bufs[2], t)
    if items is None or len(bufs[0]) < n * s.width:
        return None
    idx = np.frombuffer(bufs[0], UINT[s.width], n).astype(np.int64)
    if n and idx.max() > s.num_items:
        return None
    present = idx > 0
    if present.all():
        return items.take(pa.array(idx - 1))
    return items.take(pa.array(np.where(present, idx - 1, 0), mask=~present))


def field_plan(info: ColumnInfo, t: pa.DataType, size: int, rows: range, fallback: Callable[[], Plan]) -> Plan | None:
    """The read of ``rows`` (at least half the column's, all of them read) of a leaf column of type ``t`` (its column
    ``info``, in a file of ``size`` bytes) when every page has a simple shape: one round of every page's buffers, then
    ``decode_page`` each; else None.  ``fallback`` plans the read again when the bytes do not add up (the node decoder
    reports them)."""
    meta = info.meta
    if meta.HasField("encoding") and meta.encoding.WhichOneof("location") not in (None, "none"):
        col = parsed_direct(meta.encoding, pb.ColumnEncoding)
        if col is None or col.WhichOneof("column_encoding") not in (None, "values"):
            return None  # a blob column, or one the field reader reports
    shapes: list[Shape] = []
    counts: list[int] = []
    ranges: list[tuple[int, int]] = []
    for page in meta.pages:
        found = page_shape(page, t)
        if found is None:
            return None
        for b in buffers(found):
            if b >= len(page.buffer_offsets) or b >= len(page.buffer_sizes):
                return None
            off, ln = page.buffer_offsets[b], page.buffer_sizes[b]
            if off + ln > size:
                return None
            ranges.append((off, ln))
        shapes.append(found)
        counts.append(int(page.length))
    total = sum(counts)
    if rows.stop > total:
        return None

    def decoded(bufs: list[memoryview]) -> pa.Array | pa.ChunkedArray | Plan:
        parts, pos = [], 0
        for found, n in zip(shapes, counts):
            k = len(buffers(found))
            try:
                part = decode_page(found, n, bufs[pos : pos + k], t)
            except (IndexError, ValueError, TypeError, OverflowError, pa.ArrowException):
                part = None
            if part is None:
                return fallback()
            parts.append(part)
            pos += k
        out = parts[0] if len(parts) == 1 else pa.chunked_array(parts, t)
        return out if rows.stop - rows.start == total else out.slice(rows.start, rows.stop - rows.start)

    return Plan(ranges, decoded, "whole/v2_0")
