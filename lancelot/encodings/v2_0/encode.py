"""Encoding one page of a 2.0 leaf column into an ArrayEncoding tree and buffers.

What pylance writes at 2.0 (encodings_v2_0.proto): ``Nullable`` around ``Flat``
for fixed-width values (1 bit for booleans), ``FixedSizeList`` for vectors,
``Binary`` (u64 end offsets, +null_adjustment for nulls) for strings and
binary, ``Dictionary`` for Arrow dictionary arrays, ``PackedStruct`` for
structs marked packed, ``Nullable.AllNull`` for null columns.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.errors import UnsupportedTypeError
from lancelot.field_metadata import is_fixed_width
from lancelot.format.pb import encodings_v2_0_pb2 as pb
from lancelot.util.arrays import arrow_offsets, from_numpy, to_numpy, zero


def _buffer(buffers: list[np.ndarray], data: np.ndarray) -> pb.Buffer:
    buffers.append(data)
    return pb.Buffer(buffer_index=len(buffers) - 1, buffer_type=pb.Buffer.page)


def validity_bits(arr: pa.Array) -> np.ndarray:
    return np.packbits(to_numpy(arr.is_valid()), bitorder="little")


def fixed_width_bytes(arr: pa.Array) -> tuple[np.ndarray, int]:
    """The value bytes of a fixed-width array (offset applied) and the width in bits."""
    t = arr.type
    if pa.types.is_boolean(t):
        bits = to_numpy(pc.fill_null(arr, zero(pa.bool_())))
        return np.packbits(bits, bitorder="little"), 1
    width = t.bit_width // 8
    raw = np.frombuffer(arr.buffers()[1], np.uint8)
    return raw[arr.offset * width : (arr.offset + len(arr)) * width], t.bit_width


def _nullable(
    arr: pa.Array, buffers: list[np.ndarray], inner: Callable[[list[np.ndarray]], pb.ArrayEncoding]
) -> pb.ArrayEncoding:
    """Wrap ``inner(buffers)`` (the values encoder) in a Nullable node."""
    nulls = arr.null_count
    if nulls == len(arr) and len(arr) > 0:
        return pb.ArrayEncoding(nullable=pb.Nullable(all_nulls=pb.Nullable.AllNull()))
    if nulls == 0:
        return pb.ArrayEncoding(nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(values=inner(buffers))))
    validity = pb.ArrayEncoding(flat=pb.Flat(bits_per_value=1, buffer=_buffer(buffers, validity_bits(arr))))
    some = pb.Nullable.SomeNull(validity=validity, values=inner(buffers))
    return pb.ArrayEncoding(nullable=pb.Nullable(some_nulls=some))


def encode_flat(arr: pa.Array, buffers: list[np.ndarray]) -> pb.ArrayEncoding:
    data, bits = fixed_width_bytes(arr)
    return pb.ArrayEncoding(flat=pb.Flat(bits_per_value=bits, buffer=_buffer(buffers, data)))


def compress_flat(data: np.ndarray, compression: pb.Compression | None) -> np.ndarray:
    """A Flat buffer under ``Flat.compression`` (zstd / lz4: size prefix + frame, as pylance 2.0)."""
    if compression is None or compression.scheme not in ("zstd", "lz4"):
        return data
    from lancelot.encodings.compression.general import buffer_compression, compress_buffer

    level = compression.level if compression.HasField("level") else None
    return compress_buffer(buffer_compression(compression.scheme, level), data)


def encode_binary(
    arr: pa.Array, buffers: list[np.ndarray], compression: pb.Compression | None = None
) -> pb.ArrayEncoding:
    """Binary: u64 end offsets (no leading 0), nulls shifted by null_adjustment; the bytes
    under ``compression`` when the field asks for it (pylance compresses only these)."""
    offs = arrow_offsets(arr)
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, np.uint8)[offs[0] : offs[-1]] if data_buf is not None else np.zeros(0, np.uint8)
    ends = (offs[1:] - offs[0]).astype(np.uint64)
    adjustment = int(ends[-1]) + 1 if len(ends) else 1
    if arr.null_count:
        ends = np.where(to_numpy(arr.is_valid()), ends, ends + np.uint64(adjustment))
    indices = pb.ArrayEncoding(
        nullable=pb.Nullable(
            no_nulls=pb.Nullable.NoNull(
                values=pb.ArrayEncoding(flat=pb.Flat(bits_per_value=64, buffer=_buffer(buffers, ends)))
            )
        )
    )
    byts = pb.ArrayEncoding(
        flat=pb.Flat(
            bits_per_value=8, buffer=_buffer(buffers, compress_flat(data, compression)), compression=compression
        )
    )
    return pb.ArrayEncoding(binary=pb.Binary(indices=indices, bytes=byts, null_adjustment=adjustment))


def encode_fsst(arr: pa.Array, buffers: list[np.ndarray]) -> pb.ArrayEncoding:
    """Fsst (``compression=fsst`` at 2.0, as pylance writes it): a symbol table trained on the
    page (switched off below 32 KiB of strings) and a Binary of each string's codes."""
    from lancelot.encodings.compression.block import VariableWidthBlock
    from lancelot.encodings.compression.fsst import serialize_symbol_table
    from lancelot.encodings.compression.write_fsst import fsst_encode, train_fsst

    offs = arrow_offsets(arr).astype(np.int64)
    raw = arr.buffers()[2]
    data = np.frombuffer(raw, np.uint8)[offs[0] : offs[-1]] if raw is not None else np.zeros(0, np.uint8)
    block = VariableWidthBlock((offs - offs[0]).astype(np.uint64), data, len(arr))
    table = train_fsst(block)
    codes = fsst_encode(table, block)
    code_offs = np.asarray(codes.offsets, dtype=np.int64)
    validity = pa.py_buffer(np.packbits(to_numpy(arr.is_valid()), bitorder="little")) if arr.null_count else None
    coded = pa.Array.from_buffers(
        pa.large_binary(), len(arr), [validity, pa.py_buffer(code_offs), pa.py_buffer(np.ascontiguousarray(codes.data))]
    )
    return pb.ArrayEncoding(
        fsst=pb.Fsst(binary=encode_binary(coded, buffers), symbol_table=serialize_symbol_table(table))
    )


def encode_dictionary(arr: pa.DictionaryArray, buffers: list[np.ndarray]) -> pb.ArrayEncoding:
    """Dictionary: indices (nulls point at the first null item, one added when there is none) and the
    items (all of them, used or not, as pylance keeps them)."""
    items = arr.dictionary
    idx = arr.indices
    if arr.null_count:
        if items.null_count:
            null_item = int(np.argmin(to_numpy(items.is_valid())))
        else:
            items = pa.concat_arrays([items, pa.nulls(1, items.type)])
            null_item = len(items) - 1
        idx = pc.fill_null(idx, from_numpy(np.array([null_item]), idx.type)[0])  # (pa.scalar imports pandas)
    idx = idx.cast(arr.type.index_type)
    indices = pb.ArrayEncoding(nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(values=encode_flat(idx, buffers))))
    items_enc = encode_values(items, buffers)
    return pb.ArrayEncoding(dictionary=pb.Dictionary(indices=indices, items=items_enc, num_dictionary_items=len(items)))


#: plain string pages with fewer distinct values than this are dictionary-encoded, as pylance does
DICTIONARY_MAX_ITEMS = 100


def encode_low_cardinality(arr: pa.Array, buffers: list[np.ndarray]) -> pb.ArrayEncoding | None:
    """Dictionary for a plain string/binary page with few distinct values, else None.

    Indices are 1-based u8 with 0 meaning null (what pylance writes for plain columns).
    """
    if len(arr) < 2 * DICTIONARY_MAX_ITEMS or not (pa.types.is_string(arr.type) or pa.types.is_binary(arr.type)):
        return None  # pylance 14 misreads dictionary items of large types
    encoded = pc.dictionary_encode(arr, null_encoding="mask")
    items = encoded.dictionary
    if len(items) >= DICTIONARY_MAX_ITEMS or len(items) == 0:
        return None
    one = from_numpy(np.ones(1, np.uint8))[0]  # (pa.scalar imports pandas)
    idx = pc.fill_null(pc.add(encoded.indices.cast(pa.uint8()), one), zero(pa.uint8()))
    indices = pb.ArrayEncoding(nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(values=encode_flat(idx, buffers))))
    items_enc = encode_binary(items, buffers)
    return pb.ArrayEncoding(dictionary=pb.Dictionary(indices=indices, items=items_enc, num_dictionary_items=len(items)))


def encode_packed_struct(arr: pa.StructArray, buffers: list[np.ndarray]) -> pb.ArrayEncoding:
    """PackedStruct: fixed-width children interleaved row by row."""
    cols, inner = [], []
    for i in range(arr.type.num_fields):
        child = arr.field(i)
        if pa.types.is_boolean(child.type):
            raw, bits = np.asarray(to_numpy(pc.fill_null(child, zero(pa.bool_()))), np.uint8), 8
        else:
            raw, bits = fixed_width_bytes(child)
        w = bits // 8
        cols.append(raw.reshape(len(arr), w))
        flat = pb.ArrayEncoding(flat=pb.Flat(bits_per_value=bits, buffer=pb.Buffer()))
        inner.append(pb.ArrayEncoding(nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(values=flat))))
    rows = np.concatenate(cols, axis=1).reshape(-1) if cols else np.zeros(0, np.uint8)
    return pb.ArrayEncoding(packed_struct=pb.PackedStruct(inner=inner, buffer=_buffer(buffers, rows)))


def encode_values(
    arr: pa.Array, buffers: list[np.ndarray], compression: pb.Compression | None = None
) -> pb.ArrayEncoding:
    """The encoding of a leaf page's values (the array may contain nulls); ``compression``
    (from the field's metadata) applies to the bytes of Binary pages."""
    t = arr.type
    if pa.types.is_null(t):
        return pb.ArrayEncoding(nullable=pb.Nullable(all_nulls=pb.Nullable.AllNull()))
    if pa.types.is_dictionary(t):
        return encode_dictionary(arr, buffers)
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        if compression is not None and compression.scheme == "fsst":
            # pylance 14 panics on FSST of large types at 2.0: those stay plain Binary
            large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
            return encode_low_cardinality(arr, buffers) or (
                encode_binary(arr, buffers) if large else encode_fsst(arr, buffers)
            )
        return encode_low_cardinality(arr, buffers) or encode_binary(arr, buffers, compression)
    if pa.types.is_fixed_size_list(t):
        d = t.list_size
        items = arr.values.slice(arr.offset * d, len(arr) * d)

        def fsl(bufs: list[np.ndarray]) -> pb.ArrayEncoding:
            return pb.ArrayEncoding(
                fixed_size_list=pb.FixedSizeList(dimension=d, items=encode_values(items, bufs), has_validity=False)
            )

        return _nullable(arr, buffers, fsl)
    if is_fixed_width(t):
        return _nullable(arr, buffers, lambda bufs: encode_flat(arr, bufs))
    raise UnsupportedTypeError(f"Arrow type {t} cannot be written as a 2.0 leaf column")
