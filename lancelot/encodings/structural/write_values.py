"""Leaf values of a 2.1+ page as data blocks, and their compression (writer side).

The structural layer hands over the *visible* values of a page (one per level
entry that owns an item; null where a layer above or the item itself is null)
as an Arrow array.  Here they become the DataBlocks of compression/block.py:

* fixed-width types (booleans as 1-bit values): ``FixedWidthBlock``;
* strings and binary: ``VariableWidthBlock`` (offsets as wide as the Arrow
  type's: 64 bits for large types, which pylance checks);
* fixed-size lists of fixed-width items: ``FixedSizeListBlock`` with the item
  validity when items are nullable (FixedSizeList ``has_validity``);
* packed structs: ``StructBlock`` of one block per child (values under null
  rows kept as they are).

The plain compression of one mini-block chunk and of fixed-width full-zip values
calls the encoders of lancelot.encodings.compression (Flat, Variable,
FixedSizeList); write_strategy.py chooses the others.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot import versions
from lancelot.encodings.compression.block import (
    FixedSizeListBlock,
    FixedWidthBlock,
    StructBlock,
    VariableWidthBlock,
)
from lancelot.encodings.compression.fixed_size_list import compress_fsl, compress_fsl_per_value
from lancelot.encodings.compression.flat import compress_flat
from lancelot.encodings.compression.variable import compress_variable
from lancelot.errors import UnsupportedEncodingError, UnsupportedTypeError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.arrays import arrow_offsets, is_large, to_numpy, zero
from lancelot.util.types import is_variable, is_whole_bytes

#: the blocks ``to_block`` builds (a DataBlock other than ConstantBlock)
ValueBlock = FixedWidthBlock | VariableWidthBlock | FixedSizeListBlock | StructBlock


def storage(arr: pa.Array) -> pa.Array:
    t = arr.type
    if isinstance(t, pa.ExtensionType):
        return arr.storage
    return arr.dictionary_decode() if t.id == pa.lib.Type_DICTIONARY else arr


def item_bits(t: pa.DataType) -> int:
    """Bits per value of a fixed-width type (a fixed-size list counts all its items)."""
    if pa.types.is_boolean(t):
        return 1
    if pa.types.is_fixed_size_list(t):
        return int(t.list_size) * item_bits(t.value_type)
    try:
        return int(t.bit_width)
    except ValueError:
        raise UnsupportedTypeError(f"type {t} is not fixed-width") from None


def _fixed_bytes(arr: pa.Array) -> np.ndarray:
    """The value bytes of a fixed-width array (offset applied; booleans bit-packed, nulls as False)."""
    n = len(arr)
    if pa.types.is_boolean(arr.type):
        bits = to_numpy(pc.fill_null(arr, zero(pa.bool_()))) if n else np.zeros(0, bool)
        return np.packbits(bits, bitorder="little")
    width = arr.type.bit_width // 8
    buf = arr.buffers()[1]
    if buf is None:
        return np.zeros(n * width, np.uint8)
    raw = np.frombuffer(buf, np.uint8)
    return raw[arr.offset * width : (arr.offset + n) * width]


def has_item_nulls(arr: pa.Array) -> bool:
    """Whether a fixed-size-list array's items, at any nested layer, hold nulls (the page then stores the
    validity of every layer's items)."""
    arr = storage(arr)
    if not pa.types.is_fixed_size_list(arr.type):
        return False
    d = arr.type.list_size
    items = arr.values.slice(arr.offset * d, len(arr) * d)
    return items.null_count > 0 or has_item_nulls(items)


def to_block(arr: pa.Array, item_validity: bool = False) -> ValueBlock:
    """The data block of a page's (or chunk's) visible values.

    ``item_validity``: a fixed-size list keeps its items' validity, at every nested layer (decided
    per page, so that every chunk of a page has the same buffers).
    """
    arr = storage(arr)
    t = arr.type
    n = len(arr)
    bits = NUMBER_BITS.get(t.id)
    if bits is not None:  # (the common case: no type tests)
        return FixedWidthBlock(_fixed_bytes(arr), bits, n)
    if is_variable(t):
        large = is_large(t)
        offs = arrow_offsets(arr)
        data_buf = arr.buffers()[2]
        data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
        offs = offs.astype(np.uint64 if large else np.uint32)
        return VariableWidthBlock(offs, data, n)
    if pa.types.is_fixed_size_list(t):
        d = t.list_size
        items = arr.values.slice(arr.offset * d, n * d)
        child = to_block(items, item_validity)
        validity = None
        if item_validity:
            validity = to_numpy(items.is_valid()) if items.null_count else np.ones(n * d, bool)
        return FixedSizeListBlock(child, d, n, validity)
    if pa.types.is_null(t):
        return FixedWidthBlock(np.zeros(0, np.uint8), 0, n)
    if pa.types.is_struct(t):
        return StructBlock([to_block(c) for c in struct_children(arr)], n)
    return FixedWidthBlock(_fixed_bytes(arr), item_bits(t), n)


def struct_children(arr: pa.StructArray) -> list[pa.Array]:
    """The children of a struct array, its slice applied (``field`` does), their own validity only."""
    return [arr.field(i) for i in range(arr.type.num_fields)]


def compress_miniblock_chunk(block: ValueBlock) -> tuple[pb.CompressiveEncoding, list[np.ndarray]]:
    """Compress the values of one mini-block chunk (the encoding is the same for every chunk)."""
    if isinstance(block, VariableWidthBlock):
        return compress_variable(block, 8 * block.offsets.dtype.itemsize)
    if isinstance(block, FixedSizeListBlock):
        return compress_fsl(block)
    if isinstance(block, StructBlock):  # packed structs are planned whole (write_strategy._packed_page)
        raise UnsupportedEncodingError("a struct block has no plain mini-block chunk compression")
    return compress_flat(block)


def compress_per_value(block: FixedWidthBlock | FixedSizeListBlock) -> tuple[pb.CompressiveEncoding, FixedWidthBlock]:
    """Full-zip fixed-width values: Flat, or FixedSizeList rows (their validity bitmaps zipped in)."""
    if isinstance(block, FixedSizeListBlock):
        return compress_fsl_per_value(block)
    return pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=block.bits_per_value)), block


#: bits per value of the integer and floating-point types, by Arrow type id
NUMBER_BITS: dict[int, int] = {
    t.id: t.bit_width
    for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64())
    + (pa.float16(), pa.float32(), pa.float64())
}


def value_costs(arr: pa.Array) -> np.ndarray:
    """Cumulative bytes of the first k values (k = 0..n), for cutting chunks and pages."""
    n = len(arr)
    width = NUMBER_BITS.get(arr.type.id, 0) // 8
    if width:  # (the common case: no type tests)
        return np.arange(0, (n + 1) * width, width, dtype=np.int64)
    arr = storage(arr)
    t = arr.type
    if is_variable(t):
        offs = arrow_offsets(arr)
        return (offs.astype(np.int64) - int(offs[0])) + 4 * np.arange(n + 1, dtype=np.int64)
    if pa.types.is_null(t):
        return np.zeros(n + 1, np.int64)
    if pa.types.is_struct(t):
        return sum((value_costs(c) for c in struct_children(arr)), np.zeros(n + 1, np.int64))
    if fsl_of_variable(t):
        return value_costs(fsl_items(arr))[:: t.list_size]
    bits = item_bits(t) + validity_bits(t)  # room for the item validity bitmaps
    if bits and bits % 8 == 0:  # whole bytes: one pass
        return np.arange(0, (n + 1) * (bits // 8), bits // 8, dtype=np.int64)
    return (np.arange(n + 1, dtype=np.int64) * bits + 7) // 8


def value_bytes(arr: pa.Array) -> int:
    """The bytes a page's values count for: ``value_costs(arr)[-1]`` without the array, except that
    fixed-size-list item validity counts only when the items hold nulls (``value_costs`` keeps room for it)."""
    bits = NUMBER_BITS.get(arr.type.id)
    if bits is not None:  # (the common case, asked per batch and column: no type tests)
        return (len(arr) * bits + 7) // 8
    arr = storage(arr)
    t = arr.type
    n = len(arr)
    if is_variable(t):
        if n == 0:
            return 0
        offs = arrow_offsets(arr)
        return int(offs[-1]) - int(offs[0]) + 4 * n
    if pa.types.is_null(t):
        return 0
    if pa.types.is_struct(t):
        return sum(value_bytes(c) for c in struct_children(arr))
    if fsl_of_variable(t):
        return value_bytes(fsl_items(arr))
    # item validity only where a page stores it (has_item_nulls): a batch of 32 MiB of vectors without
    # nulls is one page of 32 MiB, not a page cut short whose rest waits (holding the batch) for the next
    bits = item_bits(t) + (validity_bits(t) if has_item_nulls(arr) else 0)
    return (n * bits + 7) // 8


def max_value_bytes(arr: pa.Array) -> int:
    """The widest value of a page in bytes (decides mini-block vs full-zip)."""
    bits = NUMBER_BITS.get(arr.type.id)
    if bits is not None:  # (the common case, asked per page: no type tests)
        return (bits + 7) // 8
    arr = storage(arr)
    t = arr.type
    if is_variable(t):
        if len(arr) == 0:
            return 0
        if not arr.null_count:  # (the offsets say it: no compute kernels; a null slot may span bytes)
            return int(np.diff(arrow_offsets(arr)).max())
        return int(pc.max(pc.binary_length(arr)).as_py() or 0)
    if pa.types.is_null(t):
        return 0
    if pa.types.is_struct(t):
        return sum(max_value_bytes(c) for c in struct_children(arr))
    if fsl_of_variable(t):
        return int(t.list_size) * max_value_bytes(fsl_items(arr))
    return (item_bits(t) + 7) // 8


def validity_bits(t: pa.DataType) -> int:
    """Bits of item validity a fixed-size-list row may carry (one per item at every nested layer)."""
    if not pa.types.is_fixed_size_list(t):
        return 0
    return int(t.list_size) * (1 + validity_bits(t.value_type))


def fsl_of_variable(t: pa.DataType) -> bool:
    """A fixed-size list of strings / binary: one leaf column, which pylance writes only when all null."""
    return pa.types.is_fixed_size_list(t) and is_variable(t.value_type)


def fsl_items(arr: pa.Array) -> pa.Array:
    """The items of a fixed-size-list array, its slice applied."""
    d = arr.type.list_size
    return arr.values.slice(arr.offset * d, len(arr) * d)


def packed_struct_kind(field: pa.Field, version: str) -> str:
    """ "fixed" (mini-block PackedStruct) or "variable" (2.2 full-zip VariablePackedStruct) for a packed struct.

    Children must be whole-byte fixed-width values (pylance reads no packed booleans), or at 2.2
    also strings / binary; anything else raises UnsupportedTypeError.
    """
    kinds = set()
    for child in field.type:
        ct = child.type.storage_type if isinstance(child.type, pa.ExtensionType) else child.type
        if is_whole_bytes(ct):
            kinds.add("fixed")
        elif is_variable(ct):
            kinds.add("variable")
        else:
            raise UnsupportedTypeError(
                f"packed struct {field.name!r}: child {child.name!r} of type {ct} cannot be "
                "packed (whole-byte fixed-width values, or strings and binary at 2.2)"
            )
    if not kinds:
        raise UnsupportedTypeError(f"packed struct {field.name!r} has no children")
    if "variable" in kinds and not versions.parse(version).variable_packed_structs:
        raise UnsupportedTypeError(f"packed struct {field.name!r} with string/binary children needs file version 2.2")
    return "variable" if "variable" in kinds else "fixed"


def check_packed_children(values: pa.Array) -> None:
    """Packed struct children hold no nulls of their own (pylance cannot store them)."""
    arr = storage(values)
    for i, child in enumerate(struct_children(arr)):
        if child.null_count and (not arr.null_count or pc.sum(pc.and_(arr.is_valid(), child.is_null())).as_py()):
            raise UnsupportedTypeError(
                f"packed struct child {arr.type.field(i).name!r} has nulls "
                "(a packed struct stores only whole rows as null)"
            )
