"""Decoding 2.0 ArrayEncoding trees for row ranges of one page (plan, fetch, decode).

Each decoder gets the rows it must produce as local (start, stop) ranges and asks only for the bytes those rows need
where the encoding allows it (flat values, validity bits, binary offsets and bytes); dictionaries are read whole and
cached per page.  Decoders are ``Fetch`` steps (encodings/base.py): they yield the file ranges of each round (the
siblings of a node side by side, via ``gather``) and are sent the bytes, so the caller fetches every round. Encodings
(encodings_v2_0.proto): Nullable, Flat, FixedSizeList, Binary, Dictionary, FixedSizeBinary, PackedStruct, Constant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lancelot.encodings.base import Fetch, gather
from lancelot.encodings.v2_0.page import PageBuffers
from lancelot.encodings.v2_0.whole import fixed_array, unwrap_no_nulls
from lancelot.errors import LanceError, UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_0_pb2 as pb
from lancelot.util.arrays import is_large
from lancelot.util.types import is_variable

#: half-open (start, stop) spans of rows or bytes (io.source.Range is an (offset, length) byte range)
Spans = Sequence[tuple[int, int]]


def total(ranges: Spans) -> int:
    return sum(e - s for s, e in ranges)


def read_bits(pbuf: PageBuffers, buf: pb.Buffer, ranges: Spans) -> Fetch[np.ndarray]:
    """LSB-first bits for the rows of ``ranges`` as one numpy bool array."""
    byte_ranges = [(s // 8, (e + 7) // 8) for s, e in ranges]
    parts = yield from pbuf.read(buf, byte_ranges)
    out = []
    for (s, e), raw in zip(ranges, parts):
        bits = np.unpackbits(raw, bitorder="little").astype(bool)
        first = s - (s // 8) * 8
        if len(bits) < first + (e - s):
            raise pbuf.error("bitmap buffer is shorter than the page's rows")
        out.append(bits[first : first + (e - s)])
    return np.concatenate(out) if out else np.zeros(0, bool)


def read_flat(
    pbuf: PageBuffers, flat: pb.Flat, byte_ranges: Spans, cache: dict[Any, Any] | None = None
) -> Fetch[list[np.ndarray]]:
    """Byte ranges of a Flat buffer, undoing its general compression (``Flat.compression``).

    pylance 2.0 compresses the bytes of a Binary page's ``bytes`` Flat when the field's metadata sets
    ``lance-encoding:compression`` to zstd or lz4: the whole buffer is one compressed unit (a size prefix, then the zstd
    frame / lz4 block, as in 2.1's BufferCompression), so it is fetched and decompressed whole, then sliced.  ``cache``
    keeps the last decompressed buffer of each column, so reading a page batch by batch decompresses it once."""
    if not flat.HasField("compression") or flat.compression.scheme in ("", "none"):
        return (yield from pbuf.read(flat.buffer, byte_ranges))
    from lancelot.encodings.compression.general import buffer_compression, decompress_buffer

    scheme = flat.compression.scheme
    if scheme not in ("zstd", "lz4"):
        raise pbuf.error(f"flat compression {flat.compression.scheme!r} is not supported", UnsupportedEncodingError)
    key = ("v2_0-flat", pbuf.column)
    which = (pbuf.page_index, flat.buffer.buffer_index, flat.buffer.buffer_type)
    hit = cache.get(key) if cache is not None else None
    if hit is not None and hit[0] == which:
        data = hit[1]
    else:
        whole = yield from pbuf.read_all(flat.buffer)
        try:
            data = decompress_buffer(buffer_compression(scheme), whole)
        except LanceError as err:
            raise err.at(path=pbuf.src.path, column=pbuf.column, page=pbuf.page_index) from None
        if cache is not None:
            cache[key] = (which, data)  # one buffer per column: bounded by the page size
    out = []
    for s, e in byte_ranges:
        if s < 0 or e < s or e > len(data):
            raise pbuf.error(f"byte range [{s}, {e}) lies outside a {len(data)}-byte {scheme}-decompressed buffer")
        out.append(data[s:e])
    return out


def read_fixed(pbuf: PageBuffers, flat: pb.Flat, ranges: Spans) -> Fetch[np.ndarray]:
    """Raw bytes of fixed-width values (bits_per_value a multiple of 8)."""
    bits = flat.bits_per_value
    if bits == 0 or bits % 8:
        raise pbuf.error(f"flat values of {bits} bits are not supported", UnsupportedEncodingError)
    w = bits // 8
    parts = yield from read_flat(pbuf, flat, [(s * w, e * w) for s, e in ranges])
    return np.concatenate(parts) if len(parts) != 1 else parts[0]


def _with_validity(arr: pa.Array, valid: np.ndarray) -> pa.Array:
    """``arr`` (offset 0) with ``valid`` as its validity bitmap."""
    vbuf = pa.py_buffer(np.packbits(valid, bitorder="little"))
    children = [arr.values] if pa.types.is_fixed_size_list(arr.type) else None
    if children is not None:
        return pa.Array.from_buffers(arr.type, len(arr), [vbuf], children=children)
    if pa.types.is_null(arr.type):
        return arr
    return pa.Array.from_buffers(arr.type, len(arr), [vbuf, *arr.buffers()[1:]])


def decode(
    enc: pb.ArrayEncoding, pbuf: PageBuffers, ranges: Spans, dtype: pa.DataType, cache: dict[Any, Any]
) -> Fetch[pa.Array]:
    """The rows ``ranges`` of this page, decoded into an Arrow array of ``dtype``."""
    kind = enc.WhichOneof("array_encoding")
    n = total(ranges)
    if kind == "nullable":
        nl = enc.nullable
        which = nl.WhichOneof("nullability")
        if which == "no_nulls":
            return (yield from decode(nl.no_nulls.values, pbuf, ranges, dtype, cache))
        if which == "all_nulls":
            return pa.nulls(n, dtype)
        if which == "some_nulls":
            v = nl.some_nulls.validity
            if v.WhichOneof("array_encoding") != "flat" or v.flat.bits_per_value != 1:
                raise pbuf.error("validity must be a 1-bit flat buffer", UnsupportedEncodingError)
            valid, values = yield from gather(
                [read_bits(pbuf, v.flat.buffer, ranges), decode(nl.some_nulls.values, pbuf, ranges, dtype, cache)]
            )
            return _with_validity(values, valid)
        raise pbuf.error("nullable encoding with no variant")
    if kind == "flat":
        if pa.types.is_null(dtype):
            return pa.nulls(n)
        if enc.flat.bits_per_value == 1:
            bits = yield from read_bits(pbuf, enc.flat.buffer, ranges)
            return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(np.packbits(bits, bitorder="little"))])
        raw = yield from read_fixed(pbuf, enc.flat, ranges)
        width = enc.flat.bits_per_value // 8
        if len(raw) != n * width:
            raise pbuf.error("flat buffer is shorter than the page's rows")
        return fixed_array(dtype, n, None, pa.py_buffer(raw))  # (a fixed-size list: a flat-encoded vector)
    if kind == "fixed_size_list":
        fsl = enc.fixed_size_list
        d = fsl.dimension
        if not pa.types.is_fixed_size_list(dtype) or dtype.list_size != d:
            raise pbuf.error(f"fixed_size_list of dimension {d} for a field of type {dtype}")
        items = yield from decode(fsl.items, pbuf, [(s * d, e * d) for s, e in ranges], dtype.value_type, cache)
        return pa.FixedSizeListArray.from_arrays(items, type=dtype)
    if kind == "binary":
        from lancelot.encodings.v2_0.binary import decode_binary

        return (yield from decode_binary(enc.binary, pbuf, ranges, dtype, cache))
    if kind == "fsst":
        return (yield from decode_fsst(enc.fsst, pbuf, ranges, dtype, cache))
    if kind == "dictionary":
        from lancelot.encodings.v2_0.dictionary import decode_dictionary

        return (yield from decode_dictionary(enc.dictionary, pbuf, ranges, dtype, cache))
    if kind == "fixed_size_binary":
        fsb = enc.fixed_size_binary
        w = fsb.byte_width
        inner = fsb.bytes
        if inner.WhichOneof("array_encoding") != "flat":
            raise pbuf.error("fixed_size_binary bytes must be flat", UnsupportedEncodingError)
        parts = yield from pbuf.read(inner.flat.buffer, [(s * w, e * w) for s, e in ranges])
        raw = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
        if pa.types.is_fixed_size_binary(dtype):
            return pa.Array.from_buffers(dtype, n, [None, pa.py_buffer(raw)])
        offsets = np.arange(n + 1, dtype=np.int64 if is_large(dtype) else np.int32) * w
        return pa.Array.from_buffers(dtype, n, [None, pa.py_buffer(offsets), pa.py_buffer(raw)])
    if kind == "packed_struct":
        from lancelot.encodings.v2_0.packed_struct import decode_packed_struct

        return (yield from decode_packed_struct(enc.packed_struct, pbuf, ranges, dtype))
    if kind == "constant":
        value = enc.constant.value
        scalar = pa.Array.from_buffers(dtype, 1, [None, pa.py_buffer(value)])
        return pa.repeat(scalar[0], n) if n else pa.array([], dtype)
    raise pbuf.error(f"2.0 array encoding {kind!r} is not supported", UnsupportedEncodingError)


def decode_fsst(
    fsst: pb.Fsst, pbuf: PageBuffers, ranges: Spans, dtype: pa.DataType, cache: dict[Any, Any]
) -> Fetch[pa.Array]:
    """2.0 ``Fsst`` (pylance writes it for ``lance-encoding:compression=fsst`` on string and binary): the inner encoding
    holds each string's FSST codes; the symbol table has the same serialization as 2.1's (compression/fsst.py), so the
    same kernel decodes them."""
    from lancelot.encodings.compression.chunked import symbol_table
    from lancelot.encodings.compression.fsst import fsst_decode_spans

    if not is_variable(dtype):
        raise pbuf.error(f"an FSST page for a field of type {dtype}", UnsupportedEncodingError)
    codes = yield from decode(fsst.binary, pbuf, ranges, pa.large_binary(), cache)
    try:
        table = symbol_table(bytes(fsst.symbol_table))
        offs = np.frombuffer(codes.buffers()[1], np.int64)[codes.offset : codes.offset + len(codes) + 1]
        data = np.frombuffer(codes.buffers()[2], np.uint8) if codes.buffers()[2] is not None else np.zeros(0, np.uint8)
        block = fsst_decode_spans(table, data, offs[:-1], np.diff(offs))
    except LanceError as e:
        raise e.at(path=pbuf.src.path, column=pbuf.column, page=pbuf.page_index) from None
    n = len(codes)
    out_offs = np.asarray(block.offsets, dtype=np.int64)
    if not is_large(dtype):
        if n and int(out_offs[-1]) > np.iinfo(np.int32).max:
            raise pbuf.error("more than 2 GiB of values for a 32-bit offset type", UnsupportedEncodingError)
        out_offs = out_offs.astype(np.int32)
    validity = codes.buffers()[0] if codes.null_count else None
    if validity is not None and codes.offset:
        validity = pa.py_buffer(np.packbits(codes.is_valid().to_numpy(zero_copy_only=False), bitorder="little"))
    return pa.Array.from_buffers(dtype, n, [validity, pa.py_buffer(out_offs), pa.py_buffer(block.data)])


def decode_offsets(enc: pb.ArrayEncoding, pbuf: PageBuffers, ranges: Spans) -> Fetch[np.ndarray]:
    """Integer offsets (binary indices, list offsets) of ``ranges`` as uint64."""
    enc = unwrap_no_nulls(enc)
    if enc.WhichOneof("array_encoding") == "nullable":
        raise pbuf.error("offsets must not be nullable")
    if enc.WhichOneof("array_encoding") != "flat" or enc.flat.bits_per_value not in (8, 16, 32, 64):
        raise pbuf.error("offsets must be flat 8/16/32/64-bit integers", UnsupportedEncodingError)
    raw = yield from read_fixed(pbuf, enc.flat, ranges)
    dt = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[enc.flat.bits_per_value]
    return raw.view(dt).astype(np.uint64, copy=False)
