"""The writer's choice of compression for the values of one mini-block page.

(encoding.md, "Compression" and "Dictionary Encoding"; the reference's PrimitiveStructuralEncoder and
CompressionStrategy.)  Per page, from cheap statistics and size estimates, honouring the field's
EncodingOptions (encodings/strategy.py): a page dictionary (write_page_dictionary.py) when it is smaller
than the values' best plain compression, always for fields of an Arrow dictionary type; 8..64-bit values:
Flat, InlineBitpacking, Rle or General (write_fixed.py); strings of 32 KiB or more (longest at least 5
bytes): Fsst with one symbol table per page when it saves 10% (always with ``compression=fsst``), else
Variable (General around it for lz4/zstd; delta-coded offsets at 2.3); packed structs: PackedStruct rows;
otherwise the plain techniques: Flat, Variable, FixedSizeList.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pyarrow as pa

from lancelot.encodings.compression.block import StructBlock, VariableWidthBlock
from lancelot.encodings.compression.buffers import offsets_int64
from lancelot.encodings.compression.fsst import SymbolTable, fsst_description
from lancelot.encodings.compression.packed import compress_packed_struct
from lancelot.encodings.compression.variable import compress_variable, compress_variable_chunks, variable_encoding
from lancelot.encodings.planar.chunk_sizes import STRING_CHUNK_BYTES as PLANAR_CHUNK_TARGET
from lancelot.encodings.planar.write_offsets import delta_offsets_chunks
from lancelot.encodings.strategy import EncodingOptions
from lancelot.encodings.structural import page_pool
from lancelot.encodings.structural.write_fixed import (
    DEFAULT_OPTIONS,
    MAX_CHUNK_ITEMS,
    Compressed,
    MiniBlockValues,
    fixed_block,
    fixed_page,
    general_compression,
)
from lancelot.encodings.structural.write_page_dictionary import dictionary_page
from lancelot.encodings.structural.write_profile import apply_profile, general_bulk, with_general
from lancelot.encodings.structural.write_values import (
    compress_miniblock_chunk,
    has_item_nulls,
    max_value_bytes,
    storage,
    to_block,
    value_bytes,
    value_costs,
)
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.types import is_variable

#: FSST for pages of at least this many string bytes whose longest value has this many (pylance's thresholds)
FSST_MIN_BYTES = 32 * 1024
FSST_MIN_MAX_LENGTH = 5
FSST_MAX_RATIO = 0.9
#: FSST pages of at least two pieces of this many bytes are encoded in up to FSST_PIECES pieces side by side
FSST_PIECE_BYTES = 2 << 20
FSST_PIECES = 4


def _fsst_page(values: pa.Array, block: VariableWidthBlock, opts: EncodingOptions) -> MiniBlockValues | None:
    """FSST with one symbol table per page, when the strings are long and many enough (and it pays), or
    whenever the field asks for it (``compression=fsst``, as pylance does)."""
    size = int(block.offsets[-1]) - int(block.offsets[0])
    forced = opts.compression == "fsst"
    if not forced and (size < FSST_MIN_BYTES or max_value_bytes(values) < FSST_MIN_MAX_LENGTH):
        return None
    from lancelot.encodings.compression.write_fsst import train_fsst  # numba: load on demand

    table = train_fsst(block, force=forced)
    if not (table.switch_on or forced):
        return None
    packed = _fsst_encode_pieces(table, block)
    offs = offsets_int64(packed.offsets)
    if not forced and int(offs[-1] - offs[0]) >= FSST_MAX_RATIO * size:
        return None
    bits = 8 * block.offsets.dtype.itemsize
    encoding = fsst_description(table, variable_encoding(bits))
    costs = np.arange(-int(offs[0]), len(offs) * (bits // 8) - int(offs[0]), bits // 8, dtype=np.int64)
    costs += offs  # (offs - offs[0]) + (bits // 8) * k, in one array

    def chunk(a: int, n: int) -> Compressed:
        part = VariableWidthBlock(packed.offsets[a : a + n + 1], packed.data, n)
        return encoding, compress_variable(part, bits)[1]

    def bulk(items: np.ndarray) -> tuple[pb.CompressiveEncoding, np.ndarray, np.ndarray]:
        return encoding, *compress_variable_chunks(packed, items, bits)

    return MiniBlockValues(costs, MAX_CHUNK_ITEMS, chunk, int(costs[-1]), bulk=bulk)


def _fsst_encode_pieces(table: SymbolTable, block: VariableWidthBlock) -> VariableWidthBlock:
    """``fsst_encode(table, block)``; a large page once the kernel is loaded is encoded in pieces side by side
    (page_pool.run_all: the page's thread and idle helpers), the pieces' codes joined (the same codes: each
    string's are its own)."""
    from lancelot.encodings.compression.write_fsst import HOT_ENCODE, fsst_encode

    offs = np.asarray(block.offsets, np.int64)
    size = int(offs[-1] - offs[0]) if len(offs) else 0
    pieces = min(FSST_PIECES, size // FSST_PIECE_BYTES)
    if pieces <= 1 or page_pool.threads() <= 1 or not HOT_ENCODE.ready():
        return fsst_encode(table, block)
    cuts = np.searchsorted(offs, offs[0] + size * np.arange(1, pieces) // pieces)  # about equal bytes each
    bounds = sorted({0, block.num_values, *cuts.tolist()})
    parts: list[VariableWidthBlock | None] = [None] * (len(bounds) - 1)

    def encode(k: int) -> None:
        a, b = bounds[k], bounds[k + 1]
        parts[k] = fsst_encode(table, VariableWidthBlock(block.offsets[a : b + 1], block.data, b - a))

    page_pool.run_all([partial(encode, k) for k in range(len(parts))])
    done = [p for p in parts if p is not None]
    offsets = np.empty(block.num_values + 1, np.uint64)  # each piece's offsets shifted by the bytes before it
    offsets[0] = done[0].offsets[0]
    at, shift = 1, 0
    for p in done:
        np.add(np.asarray(p.offsets[1:], np.uint64), np.uint64(shift), out=offsets[at : at + p.num_values])
        at += p.num_values
        shift += len(p.data)
    return VariableWidthBlock(offsets, np.concatenate([p.data for p in done]), block.num_values)


def _variable_page(values: pa.Array, opts: EncodingOptions) -> MiniBlockValues:
    """Strings and binary without a dictionary: FSST when it pays, General when asked, else Variable."""
    block = to_block(values)
    assert isinstance(block, VariableWidthBlock)
    if opts.compression in (None, "fsst") and len(values):
        plan = _fsst_page(values, block, opts)
        if plan is not None:
            return plan
    bits = 8 * block.offsets.dtype.itemsize

    def plain(a: int, n: int) -> Compressed:
        return compress_variable(VariableWidthBlock(block.offsets[a : a + n + 1], block.data, n), bits)

    def plain_bulk(items: np.ndarray) -> tuple[pb.CompressiveEncoding, np.ndarray, np.ndarray]:
        return variable_encoding(bits), *compress_variable_chunks(block, items, bits)

    costs = value_costs(values)
    if opts.version.planar and not opts.general:  # 2.3: delta-coded offsets (encodings/planar/write_offsets.py)
        coded, costs = delta_offsets_chunks(block, bits)
        return MiniBlockValues(
            costs, MAX_CHUNK_ITEMS, coded, int(costs[-1]), chunk_target=PLANAR_CHUNK_TARGET, level_costs=False
        )
    if opts.general:
        compression = general_compression(opts)
        return MiniBlockValues(
            costs,
            MAX_CHUNK_ITEMS,
            with_general(plain, compression),
            int(costs[-1]),
            bulk=general_bulk(plain_bulk, compression),
        )
    return MiniBlockValues(costs, MAX_CHUNK_ITEMS, plain, int(costs[-1]), bulk=plain_bulk)


def _packed_page(values: pa.Array) -> MiniBlockValues:
    """A packed struct of whole-byte fixed-width children: its rows interleaved once, chunks are slices."""
    block = to_block(values)
    assert isinstance(block, StructBlock)
    enc, (rows,) = compress_packed_struct(block)
    width = sum(enc.packed_struct.bits_per_value) // 8  # the children's widths (all whole-byte fixed width)

    def chunk(a: int, n: int) -> Compressed:
        return enc, [rows[a * width : (a + n) * width]]

    costs = width * np.arange(block.num_values + 1, dtype=np.int64)
    return MiniBlockValues(costs, MAX_CHUNK_ITEMS, chunk, int(costs[-1]))


def plan_miniblock(
    values: pa.Array, force_dictionary: bool = False, opts: EncodingOptions = DEFAULT_OPTIONS
) -> MiniBlockValues:
    """The compression of a page's visible values in mini-block chunks.

    ``force_dictionary``: the field has an Arrow dictionary type, whose pages pylance
    reads only as dictionary pages.
    """
    arr = storage(values)
    if pa.types.is_struct(arr.type):
        return _packed_page(values)
    plan = _plain_or_dictionary(values, arr, force_dictionary, opts)
    return apply_profile(plan, len(values), opts, variable=is_variable(arr.type))


def wide_dictionary(values: pa.Array, opts: EncodingOptions = DEFAULT_OPTIONS) -> bool:
    """Whether a page of wide strings or binaries (a full-zip page by its widths) takes a page dictionary:
    pylance 14 considers the dictionary first, whatever the widths (few distinct long values: a
    mini-block page of indices) when the dictionary uncompressed (its items at the valid values' mean
    width, u32 offsets, u32 indices of every slot) is under ``dict_size_ratio`` of the plain values."""
    arr = storage(values)
    if not is_variable(arr.type):
        return False
    plan = dictionary_page(values, opts, False, None)
    if plan is None:
        return False
    n, c = len(arr), int(plan.num_dictionary_items)
    plain = value_bytes(arr)
    mean = (plain - 4 * n) / max(n - arr.null_count, 1)
    return bool(c * (mean + 4) + 4 * n < opts.dict_size_ratio * plain)


def _plain_or_dictionary(
    values: pa.Array, arr: pa.Array, force_dictionary: bool, opts: EncodingOptions
) -> MiniBlockValues:
    """The page's technique before the profile's General compression."""
    fixed = fixed_block(values)
    plain = None
    if fixed is not None and fixed.bits_per_value <= 64:
        plain = fixed_page(values, fixed, opts)
    dictionary = dictionary_page(values, opts, force_dictionary, fixed)
    if dictionary is not None and (plain is None or force_dictionary or dictionary.size < plain.size):
        return dictionary
    if plain is not None:
        return plain
    if fixed is not None:
        return fixed_page(values, fixed, opts)
    if is_variable(arr.type):
        return _variable_page(values, opts)
    item_validity = has_item_nulls(values)

    def chunk(a: int, n: int) -> Compressed:
        return compress_miniblock_chunk(to_block(values.slice(a, n), item_validity))

    costs = value_costs(values)
    return MiniBlockValues(costs, MAX_CHUNK_ITEMS, chunk, int(costs[-1]))
