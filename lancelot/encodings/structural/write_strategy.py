"""The writer's choice of compression for the values of one mini-block page.

(encoding.md, "Compression" and "Dictionary Encoding"; the reference's
PrimitiveStructuralEncoder.)  Per page, from cheap statistics:

* strings/binary of low cardinality (at least 100 values, the estimated
  dictionary-encoded size under 0.8 of the plain size), and always for fields
  of an Arrow dictionary type: a page dictionary (MiniBlockLayout.dictionary,
  a Variable block in page buffer 2) and indices in the chunks (u32, or the
  key width of the dictionary type);
* fixed-width values of 8/16/32/64 bits (and dictionary indices): the smallest
  of Flat, InlineBitpacking (1024 values per chunk) and Rle (when there are
  fewer runs than half the values; 2048 values per chunk);
* other strings of 32 KiB or more (longest at least 5 bytes): Fsst with one
  symbol table per page, when it saves 10%;
* otherwise the plain techniques: Flat, Variable, FixedSizeList.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.encodings.compression.bitpacking import compress_inline_bitpacking, inline_bitpacking_size
from lancelot.encodings.compression.block import FixedWidthBlock, VariableWidthBlock
from lancelot.encodings.compression.flat import compress_flat
from lancelot.encodings.compression.fsst import fsst_description
from lancelot.encodings.compression.rle import compress_rle, rle_size
from lancelot.encodings.compression.variable import compress_variable, compress_variable_block, variable_encoding
from lancelot.encodings.structural.write_values import (
    compress_miniblock_chunk,
    has_item_nulls,
    is_variable,
    max_value_bytes,
    storage,
    to_block,
    value_costs,
)
from lancelot.errors import UnsupportedTypeError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

MAX_CHUNK_ITEMS = 4096
BITPACK_CHUNK_ITEMS = 1024
RLE_CHUNK_ITEMS = 2048
#: dictionaries are considered from this many values on, and kept below this size ratio
DICT_MIN_VALUES = 100
DICT_SIZE_RATIO = 0.8
DICT_SAMPLE = 4096
RLE_RUN_RATIO = 0.5
#: FSST for pages of at least this many string bytes whose longest value has this many (pylance's thresholds)
FSST_MIN_BYTES = 32 * 1024
FSST_MIN_MAX_LENGTH = 5
FSST_MAX_RATIO = 0.9

Compressed = tuple[pb.CompressiveEncoding, list[np.ndarray]]
ChunkEncoder = Callable[[int, int], Compressed]


@dataclass
class MiniBlockValues:
    """How the visible values of a page go into mini-block chunks."""

    costs: np.ndarray  # cumulative bytes of the first k items, k = 0..n
    max_chunk_items: int
    chunk: ChunkEncoder  # items [a, a + n) -> (encoding, buffers); the same encoding for every chunk
    dictionary: pb.CompressiveEncoding | None = None
    dictionary_buffer: np.ndarray | None = None
    num_dictionary_items: int = 0


def _bit_lengths(m: np.ndarray) -> np.ndarray:
    out = np.zeros(len(m), np.int64)
    m = m.astype(np.uint64)
    for b in range(64):
        out += (m >> np.uint64(b)) != 0
    return out


def _bitpacked(block: FixedWidthBlock) -> ChunkEncoder:
    """InlineBitpacking of the whole page at once, cut into 1024-value chunks (packed per chunk otherwise)."""
    t = block.bits_per_value
    enc, (packed,) = compress_inline_bitpacking(block)
    n = block.num_values
    vals = block.as_dtype(f"<u{t // 8}")
    maxima = np.zeros(-(-n // BITPACK_CHUNK_ITEMS), vals.dtype)
    if n:
        maxima = np.maximum.reduceat(vals, np.arange(0, n, BITPACK_CHUNK_ITEMS))
    sizes = t // 8 + _bit_lengths(maxima) * BITPACK_CHUNK_ITEMS // 8
    starts = np.concatenate([[0], np.cumsum(sizes)])
    width = t // 8

    def chunk(a: int, count: int) -> Compressed:
        k = a // BITPACK_CHUNK_ITEMS
        if a % BITPACK_CHUNK_ITEMS == 0 and (count == BITPACK_CHUNK_ITEMS or a + count == n):
            return enc, [packed[starts[k]:starts[k + 1]]]
        return compress_inline_bitpacking(FixedWidthBlock(block.data[a * width:(a + count) * width], t, count))

    return chunk


def _sliced(block: FixedWidthBlock, compress: Callable[[FixedWidthBlock], Compressed]) -> ChunkEncoder:
    width = block.bits_per_value // 8

    def chunk(a: int, count: int) -> Compressed:
        return compress(FixedWidthBlock(block.data[a * width:(a + count) * width], block.bits_per_value, count))

    return chunk


def _integers(block: FixedWidthBlock) -> tuple[ChunkEncoder, int]:
    """The cheapest of Flat, InlineBitpacking and Rle for a page of 8..64-bit values, and its chunk size."""
    n = block.num_values
    best = (n * block.bits_per_value // 8, "flat")
    packed = inline_bitpacking_size(block)
    if packed < best[0]:
        best = (packed, "bitpacking")
    vals = block.as_dtype(f"<u{block.bits_per_value // 8}")
    runs = 1 + int(np.count_nonzero(vals[1:] != vals[:-1])) if n else 0
    if runs < RLE_RUN_RATIO * n:
        size = rle_size(block)
        if size < best[0]:
            best = (size, "rle")
    if best[1] == "bitpacking":
        return _bitpacked(block), BITPACK_CHUNK_ITEMS
    if best[1] == "rle":
        return _sliced(block, compress_rle), RLE_CHUNK_ITEMS
    return _sliced(block, compress_flat), MAX_CHUNK_ITEMS


def _fixed_page(values: pa.Array) -> MiniBlockValues | None:
    arr = storage(values)
    t = arr.type
    if pa.types.is_boolean(t) or not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t)):
        return None
    if t.bit_width not in (8, 16, 32, 64):
        return None
    block = to_block(arr)
    assert isinstance(block, FixedWidthBlock)
    data = np.ascontiguousarray(block.data)
    if arr.null_count:  # null slots may hold anything: zero them, they pack better
        data = data.copy()
        data.reshape(len(arr), -1)[~arr.is_valid().to_numpy(zero_copy_only=False)] = 0
        block = FixedWidthBlock(data, block.bits_per_value, len(arr))
    encoder, max_items = _integers(block)
    return MiniBlockValues(value_costs(values), max_items, encoder)


def _dictionary_page(values: pa.Array, force: bool = False) -> MiniBlockValues | None:
    arr = storage(values)
    if not is_variable(arr.type) or (len(arr) < DICT_MIN_VALUES and not force):
        return None
    n = len(arr)
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    ob = 8 if large else 4
    data_size = int(value_costs(arr)[-1]) + ob
    avg = data_size // max(n, 1)

    def too_big(c: int) -> bool:
        return c * (avg + ob) + n * 4 >= DICT_SIZE_RATIO * data_size and not force

    if n > DICT_SAMPLE and too_big(pc.count_distinct(arr.slice(0, DICT_SAMPLE)).as_py()):
        return None  # the page has at least as many distinct values as its first values
    encoded = pc.dictionary_encode(arr, null_encoding="mask")
    items = encoded.dictionary
    c = len(items)
    if too_big(c):
        return None
    # indices as wide as the Arrow key type of a dictionary field (pylance checks), else u32
    bits = values.type.index_type.bit_width if pa.types.is_dictionary(values.type) else 32
    if c > (1 << (bits - 1)):
        raise UnsupportedTypeError(f"a page dictionary of {c} items does not fit {values.type.index_type} keys")
    indices = pc.fill_null(encoded.indices, 0).to_numpy(zero_copy_only=False).astype(f"<u{bits // 8}")
    dict_enc, (dict_buf,) = compress_variable_block(to_block(items), 8 * ob)
    encoder, max_items = _integers(FixedWidthBlock(indices.view(np.uint8), bits, n))
    costs = (bits // 8) * np.arange(n + 1, dtype=np.int64)
    return MiniBlockValues(costs, max_items, encoder, dict_enc, dict_buf, c)


def _fsst_page(values: pa.Array) -> MiniBlockValues | None:
    """FSST with one symbol table per page, when the strings are long and many enough (and it pays)."""
    arr = storage(values)
    if not is_variable(arr.type) or len(arr) == 0:
        return None
    block = to_block(arr)
    assert isinstance(block, VariableWidthBlock)
    size = int(block.offsets[-1]) - int(block.offsets[0])
    if size < FSST_MIN_BYTES or max_value_bytes(arr) < FSST_MIN_MAX_LENGTH:
        return None
    from lancelot.encodings.compression.fsst_encode import fsst_encode, train_fsst  # numba: load on demand

    table = train_fsst(block)
    if not table.switch_on:
        return None
    packed = fsst_encode(table, block)
    offs = np.asarray(packed.offsets, np.int64)
    if int(offs[-1] - offs[0]) >= FSST_MAX_RATIO * size:
        return None
    bits = 8 * block.offsets.dtype.itemsize
    encoding = fsst_description(table, variable_encoding(bits))
    costs = (offs - offs[0]) + (bits // 8) * np.arange(len(offs), dtype=np.int64)

    def chunk(a: int, n: int) -> Compressed:
        part = VariableWidthBlock(packed.offsets[a:a + n + 1], packed.data, n)
        return encoding, compress_variable(part, bits)[1]

    return MiniBlockValues(costs, MAX_CHUNK_ITEMS, chunk)


def plan_miniblock(values: pa.Array, force_dictionary: bool = False) -> MiniBlockValues:
    """The compression of a page's visible values in mini-block chunks.

    ``force_dictionary``: the field has an Arrow dictionary type, whose pages pylance
    reads only as dictionary pages.
    """
    plan = _dictionary_page(values, force_dictionary) or _fixed_page(values) or _fsst_page(values)
    if plan is not None:
        return plan
    item_validity = has_item_nulls(values)

    def chunk(a: int, n: int) -> Compressed:
        return compress_miniblock_chunk(to_block(values.slice(a, n), item_validity))

    return MiniBlockValues(value_costs(values), MAX_CHUNK_ITEMS, chunk)
