"""The writer's choice of compression for the values of one mini-block page.

(encoding.md, "Compression" and "Dictionary Encoding"; the reference's
PrimitiveStructuralEncoder and CompressionStrategy.)  Per page, from cheap
statistics and size estimates, honouring the field's EncodingOptions
(lancelot/encodings/strategy.py):

* a page dictionary (MiniBlockLayout.dictionary, page buffer 2) for strings and
  binary, 128-bit values (decimals) and, at 2.2, 64-bit values, when a sample
  says the cardinality is at most values / ``dict-divisor``, and the
  dictionary form (bit-packed or RLE indices + the dictionary, lz4-compressed at
  2.2 when that is smaller) is under ``dict-size-ratio`` of the plain size and,
  for fixed-width values, smaller than their best plain compression.  Always for
  fields of an Arrow dictionary type (indices as wide as its keys);
* 8..64-bit values: the smallest of Flat, InlineBitpacking (1024 values per chunk)
  and Rle (up to 4096 per chunk, cut by their RLE size);
* strings of 32 KiB or more (longest at least 5 bytes): Fsst with one symbol
  table per page, when it saves 10% (always with ``compression=fsst``);
* ``compression`` lz4/zstd: General around Flat (or ByteStreamSplit of 32/64-bit
  values, per ``bss``) or Variable in every chunk; ``none``: Flat / Variable only;
* null slots of fixed-width values repeat the value before them (runs and bit
  widths stay as they are);
* packed structs: PackedStruct rows;
* otherwise the plain techniques: Flat, Variable, FixedSizeList.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.encodings.compression.bitpacking import (
    CHUNK,
    compress_inline_bitpacking,
    compress_out_of_line_bitpacking,
    inline_bitpacking_size,
    pack_inline_chunks,
)
from lancelot.encodings.compression.block import FixedWidthBlock, StructBlock, VariableWidthBlock
from lancelot.encodings.compression.buffers import as_u8, offsets_int64
from lancelot.encodings.compression.byte_stream_split import compress_byte_stream_split
from lancelot.encodings.compression.flat import compress_flat
from lancelot.encodings.compression.fsst import SymbolTable, fsst_description
from lancelot.encodings.compression.general import buffer_compression, compress_buffer, general_encoding
from lancelot.encodings.compression.packed import compress_packed_struct
from lancelot.encodings.compression.rle import compress_rle, rle_size, runs
from lancelot.encodings.compression.variable import (
    compress_variable,
    compress_variable_block,
    compress_variable_chunks,
    variable_encoding,
)
from lancelot.encodings.compression.write_dictionary import dictionary_encode
from lancelot.encodings.planar.chunk_sizes import STRING_CHUNK_BYTES as PLANAR_CHUNK_TARGET
from lancelot.encodings.planar.write_offsets import delta_offsets_chunks
from lancelot.encodings.strategy import EncodingOptions
from lancelot.encodings.structural import page_pool
from lancelot.encodings.structural.write_profile import apply_profile, general_bulk, with_general
from lancelot.encodings.structural.write_values import (
    NUMBER_BITS,
    compress_miniblock_chunk,
    has_item_nulls,
    max_value_bytes,
    storage,
    to_block,
    value_bytes,
    value_costs,
)
from lancelot.errors import UnsupportedTypeError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.arrays import from_numpy, to_numpy, zero
from lancelot.util.types import is_plain_fixed, is_variable

MAX_CHUNK_ITEMS = 4096
#: mini-block chunks are cut to stay under this many bytes unless the plan says otherwise (the bound is 32 KiB in 2.1)
CHUNK_TARGET = 16 * 1024
BITPACK_CHUNK_ITEMS = 1024
RLE_CHUNK_ITEMS = 4096
#: dictionaries are considered from this many values on
DICT_MIN_VALUES = 100
#: the cardinality probe: this many values in 32 runs spread over the page; near-unique samples stop it
DICT_SAMPLE = 4096
DICT_SAMPLE_BLOCKS = 32
DICT_SAMPLE_MIN = 1024
DICT_SAMPLE_UNIQUE = 0.98
#: without an rle-threshold, RLE is measured only when runs are fewer than this share of the values
RLE_RUN_RATIO = 0.5
#: FSST for pages of at least this many string bytes whose longest value has this many (pylance's thresholds)
FSST_MIN_BYTES = 32 * 1024
FSST_MIN_MAX_LENGTH = 5
FSST_MAX_RATIO = 0.9
#: FSST pages of at least two pieces of this many bytes are encoded in up to FSST_PIECES pieces side by side
FSST_PIECE_BYTES = 2 << 20
FSST_PIECES = 4
#: the sample General compression is tried on to decide byte-stream-split (bss=auto)
BSS_PROBE_BYTES = 64 * 1024

Compressed = tuple[pb.CompressiveEncoding, list[np.ndarray]]
ChunkEncoder = Callable[[int, int], Compressed]
#: every chunk at once: item bounds (chunk k holds items [b[k], b[k + 1])) -> (encoding, the chunks' one buffer each,
#: one after another, their byte bounds), the bytes ``ChunkEncoder`` makes; None when it cannot for these chunks
BulkEncoder = Callable[[np.ndarray], tuple[pb.CompressiveEncoding, np.ndarray, np.ndarray] | None]
DEFAULT_OPTIONS = EncodingOptions()


@dataclass
class MiniBlockValues:
    """How the visible values of a page go into mini-block chunks."""

    #: cumulative bytes of the first k items, k = 0..n (an upper bound, for cutting chunks), or a function
    #: computing them (only the chosen plan's are needed)
    costs: np.ndarray | Callable[[], np.ndarray]
    max_chunk_items: int
    chunk: ChunkEncoder  # items [a, a + n) -> (encoding, buffers); the same encoding for every chunk
    size: int = 0  # estimated bytes of the whole page's values (dictionary included)
    dictionary: pb.CompressiveEncoding | None = None
    dictionary_buffer: np.ndarray | None = None
    num_dictionary_items: int = 0
    bulk: BulkEncoder | None = None  # what ``chunk`` makes, for all chunks in one go (see BulkEncoder)
    chunk_target: int = CHUNK_TARGET  # chunks are cut to stay under this many bytes (before General compression)
    flat: MiniBlockValues | None = None  # the values as Flat, for a profile to wrap instead (pages of other techniques)
    runs: bool = False  # Rle values: a take finds its row by searching runs (see write_profile.apply_profile)
    level_costs: bool = True  # False: chunks are cut by their values alone when the page has no lists (2.3 strings)

    def but(self, **changes: object) -> MiniBlockValues:
        """A copy with ``changes`` (``dataclasses.replace`` without its per-field calls: one per page)."""
        out = object.__new__(MiniBlockValues)
        out.__dict__.update(self.__dict__, **changes)
        return out


def _sliced(block: FixedWidthBlock, compress: Callable[[FixedWidthBlock], Compressed]) -> ChunkEncoder:
    width = block.bits_per_value // 8

    def chunk(a: int, count: int) -> Compressed:
        return compress(FixedWidthBlock(block.data[a * width : (a + count) * width], block.bits_per_value, count))

    return chunk


def _flat_bulk(block: FixedWidthBlock) -> BulkEncoder:
    """Flat chunks of whole-byte values: slices of the page's bytes."""
    width = block.bits_per_value // 8
    enc = compress_flat(FixedWidthBlock(block.data[:0], block.bits_per_value, 0))[0]

    def bulk(items: np.ndarray) -> tuple[pb.CompressiveEncoding, np.ndarray, np.ndarray]:
        data = as_u8(block.data)[int(items[0]) * width : int(items[-1]) * width]
        return enc, data, (items - items[0]) * width

    return bulk


class BitpackedPage:
    """InlineBitpacking of a whole page at once, handed out as 1024-value chunks (others packed on demand)."""

    def __init__(self, block: FixedWidthBlock) -> None:
        self.block = block
        self.packed, self.starts = pack_inline_chunks(block)
        self.encoding = pb.CompressiveEncoding(
            inline_bitpacking=pb.InlineBitpacking(uncompressed_bits_per_value=block.bits_per_value)
        )

    def chunk(self, a: int, count: int) -> Compressed:
        n = self.block.num_values
        k, width = a // CHUNK, self.block.bits_per_value // 8
        if a % CHUNK == 0 and (count == CHUNK or a + count == n):
            return self.encoding, [self.packed[self.starts[k] : self.starts[k + 1]]]
        part = FixedWidthBlock(self.block.data[a * width : (a + count) * width], self.block.bits_per_value, count)
        return compress_inline_bitpacking(part)

    def bulk(self, items: np.ndarray) -> tuple[pb.CompressiveEncoding, np.ndarray, np.ndarray] | None:
        """The packed page as it is, when the chunks are its 1024-value chunks."""
        n = self.block.num_values
        whole = np.arange(0, n, CHUNK, dtype=np.int64)
        if len(items) != len(whole) + 1 or not np.array_equal(items[:-1], whole) or int(items[-1]) != n:
            return None
        return self.encoding, self.packed, self.starts


def _general_compression(opts: EncodingOptions) -> pb.BufferCompression:
    # the level is stored for lz4 too, as pylance does (lz4 itself has none)
    return buffer_compression(opts.general or "zstd", opts.compression_level)


def _use_bss(block: FixedWidthBlock, opts: EncodingOptions, compression: pb.BufferCompression) -> bool:
    """Byte-stream-split under General compression of 32/64-bit values: always with bss=on; with auto when a
    sample compresses 5% smaller split (floats mostly, but integers and timestamps too, as pylance considers)."""
    if block.bits_per_value not in (32, 64) or opts.bss == "off":
        return False
    if opts.bss == "on":
        return True
    nb = block.bits_per_value // 8
    k = min(block.num_values, BSS_PROBE_BYTES // nb)
    if k < 64:
        return False
    probe = FixedWidthBlock(np.asarray(block.data)[: k * nb], block.bits_per_value, k)
    split = compress_byte_stream_split(probe)[1][0]
    return len(compress_buffer(compression, split)) < 0.95 * len(compress_buffer(compression, probe.data))


@dataclass
class FixedPlan:
    """The compression of a page of 8..64-bit values (or dictionary indices)."""

    chunk: ChunkEncoder
    max_items: int
    size: int  # estimated bytes of the page's values
    costs: Callable[[], np.ndarray] | None = None  # cumulative chunk bytes when not the raw width (RLE)
    bulk: BulkEncoder | None = None
    runs: bool = False  # Rle


def _rle_costs(vals: np.ndarray, nbytes: int) -> np.ndarray:
    """Cumulative RLE bytes of the first k values, a bound: one (value, u8 length) piece per run start
    and per multiple of 255 (a run of L values needs ceil(L / 255) pieces, at most one more than the
    multiples of 255 it covers)."""
    n = len(vals)
    new = np.zeros(n, bool)
    new[::255] = True
    new[1:] |= vals[1:] != vals[:-1]
    costs = np.zeros(n + 1, np.int64)
    np.cumsum(new, out=costs[1:])
    return costs * (nbytes + 1)


def _cheapest(block: FixedWidthBlock, opts: EncodingOptions) -> tuple[int, str]:
    """(bytes, kind) of the smallest of Flat, InlineBitpacking and Rle for 8..64-bit values."""
    n, t = block.num_values, block.bits_per_value
    best = (n * t // 8, "flat")
    vals = block.as_dtype(f"<u{t // 8}")
    # (a page of one bit-packed chunk: its width, then 1024 values of that many bits)
    if 0 < n <= CHUNK:
        packed = t // 8 + int(np.maximum.reduce(vals)).bit_length() * CHUNK // 8
    else:
        packed = inline_bitpacking_size(block)
    if packed < best[0]:
        best = (packed, "bitpacking")
    runs = 1 + int(np.count_nonzero(vals[1:] != vals[:-1])) if n else 0
    gate = opts.rle_threshold if opts.rle_threshold is not None else RLE_RUN_RATIO
    if runs < gate * n:
        size = rle_size(block)
        if size < best[0]:
            best = (size, "rle")
    return best


def fixed_plan(block: FixedWidthBlock, opts: EncodingOptions = DEFAULT_OPTIONS) -> FixedPlan:
    """The cheapest of Flat, InlineBitpacking and Rle for 8..64-bit values; Flat only for ``compression=none``;
    General around Flat or ByteStreamSplit for ``compression`` lz4/zstd (its size estimated as the cheapest
    plain technique's: general compression does at least as well on what they compress)."""
    n, t = block.num_values, block.bits_per_value
    if opts.plain_only:
        return FixedPlan(_sliced(block, compress_flat), MAX_CHUNK_ITEMS, n * t // 8, bulk=_flat_bulk(block))
    size, kind = _cheapest(block, opts)
    if opts.general:
        compression = _general_compression(opts)
        if _use_bss(block, opts, compression):
            return FixedPlan(
                with_general(_sliced(block, compress_byte_stream_split), compression), MAX_CHUNK_ITEMS, size
            )
        return FixedPlan(
            with_general(_sliced(block, compress_flat), compression),
            MAX_CHUNK_ITEMS,
            size,
            bulk=general_bulk(_flat_bulk(block), compression),
        )
    if kind == "bitpacking":
        page = BitpackedPage(block)
        return FixedPlan(page.chunk, BITPACK_CHUNK_ITEMS, size, bulk=page.bulk)
    if kind == "rle":
        return FixedPlan(
            _sliced(block, compress_rle),
            RLE_CHUNK_ITEMS,
            size,
            lambda: _rle_costs(block.as_dtype(f"<u{t // 8}"), t // 8),
            runs=True,
        )
    return FixedPlan(_sliced(block, compress_flat), MAX_CHUNK_ITEMS, size, bulk=_flat_bulk(block))


def _fixed_block(values: pa.Array) -> FixedWidthBlock | None:
    """The page's 8..128-bit values as a block, null slots filled from the value before; None for other types."""
    arr = storage(values)
    t = arr.type
    if t.id not in NUMBER_BITS and (not is_plain_fixed(t) or t.bit_width not in (8, 16, 32, 64, 128)):
        return None  # (booleans, lists, nulls, strings are not plain fixed-width)
    block = to_block(arr)
    assert isinstance(block, FixedWidthBlock)
    if arr.null_count:
        rows = np.asarray(block.data)[: len(arr) * (t.bit_width // 8)].reshape(len(arr), -1)
        block = FixedWidthBlock(
            rows[fill_positions(to_numpy(arr.is_valid()))].reshape(-1),
            block.bits_per_value,
            len(arr),
        )
    return block


def fill_positions(valid: np.ndarray) -> np.ndarray:
    """For each slot, the last valid slot at or before it (the first valid one for leading nulls): null slots
    repeat their neighbour, which keeps runs (RLE) and bit widths (bitpacking) as they are."""
    pos = np.where(valid, np.arange(len(valid)), -1)
    np.maximum.accumulate(pos, out=pos)
    pos[pos < 0] = int(np.argmax(valid)) if valid.any() else 0
    return pos


def _fixed_page(values: pa.Array, block: FixedWidthBlock, opts: EncodingOptions) -> MiniBlockValues:
    if block.bits_per_value > 64:
        return MiniBlockValues(
            value_costs(values),
            MAX_CHUNK_ITEMS,
            _sliced(block, compress_flat),
            block.num_values * block.bits_per_value // 8,
            bulk=_flat_bulk(block),
        )
    plan = fixed_plan(block, opts)
    costs = plan.costs if plan.costs is not None else (lambda: value_costs(values))
    flat = None
    if opts.general is None and not opts.plain_only and plan.max_items == BITPACK_CHUNK_ITEMS:
        flat = MiniBlockValues(
            lambda: value_costs(values),
            MAX_CHUNK_ITEMS,
            _sliced(block, compress_flat),
            block.num_values * block.bits_per_value // 8,
            bulk=_flat_bulk(block),
        )
    return MiniBlockValues(costs, plan.max_items, plan.chunk, plan.size, bulk=plan.bulk, flat=flat, runs=plan.runs)


# ----------------------------------------------------------------------------- dictionaries


def _sample_unique_ratio(arr: pa.Array) -> float | None:
    """Distinct share of a sample of DICT_SAMPLE values taken in 32 runs across the page (None: too few)."""
    n = len(arr)
    if n < DICT_SAMPLE_MIN:
        return None
    per = min(n, DICT_SAMPLE) // DICT_SAMPLE_BLOCKS
    starts = np.arange(DICT_SAMPLE_BLOCKS, dtype=np.int64) * n // DICT_SAMPLE_BLOCKS
    idx = (starts[:, None] + np.arange(per)[None, :]).reshape(-1)
    distinct: int = pc.count_distinct(arr.take(from_numpy(idx)), mode="all").as_py()
    return distinct / len(idx)


def _dictionary_block(items: FixedWidthBlock | VariableWidthBlock, opts: EncodingOptions) -> Compressed:
    """The page dictionary in block context: plain, out-of-line bit-packed (integers) or General, the smallest.

    General (lz4 unless ``dict-values-compression`` says otherwise) only at 2.2, as pylance writes it,
    unless the field asks for it.
    """
    if isinstance(items, VariableWidthBlock):
        candidates = [compress_variable_block(items, 8 * items.offsets.dtype.itemsize)]
    else:
        candidates = [compress_flat(items)]
        if items.bits_per_value == 64 and opts.version.compressed_dictionaries:
            candidates.append(compress_out_of_line_bitpacking(items))
    plain_enc, (plain,) = candidates[0]
    scheme = opts.dict_values_compression
    if scheme is None and opts.version.planar:
        scheme = "lz4"  # pylance 14 compresses every 2.3 page dictionary (lz4 unless asked otherwise)
    if scheme != "none" and (scheme is not None or opts.version.compressed_dictionaries):
        level = opts.dict_values_compression_level if scheme == "zstd" else None
        compression = buffer_compression(scheme or "lz4", level)
        general = (general_encoding(compression, plain_enc), [compress_buffer(compression, plain)])
        if scheme is not None:
            return general
        candidates.append(general)
    if scheme == "none":
        return candidates[0]
    return min(candidates, key=lambda c: len(c[1][0]))


def _sorted_runs_dictionary(fixed: FixedWidthBlock, limit: int | None = None) -> pa.DictionaryArray | int | None:
    """The dictionary encoding of sorted 8..64-bit values (ids, keys) from their runs, without hashing: each
    distinct value is one run, so first-appearance order (pc.dictionary_encode's) is run order.  None when
    the values are not sorted; their number of distinct values when it is over ``limit`` (no dictionary)."""
    nb = fixed.bits_per_value // 8
    if nb not in (1, 2, 4, 8) or fixed.num_values < 2:
        return None
    vals = fixed.as_dtype(f"<u{nb}")
    steps = vals[1:] != vals[:-1]
    if not bool(np.all(vals[1:] >= vals[:-1])):
        return None
    distinct = 1 + int(np.count_nonzero(steps))
    if limit is not None and distinct > limit:
        return distinct  # (unique ids: no need to build the dictionary to refuse it)
    run_values, lengths = runs(vals)
    indices = np.repeat(np.arange(len(run_values), dtype=np.int32), lengths)
    return pa.DictionaryArray.from_arrays(from_numpy(indices), from_numpy(run_values))


def _distinct(fixed: FixedWidthBlock) -> int:
    """The number of distinct 8..64-bit values of a block (sorted: a small page's count without a hash
    table); 0 for other widths (not counted here)."""
    nb = fixed.bits_per_value // 8
    if nb not in (1, 2, 4, 8) or fixed.num_values < 2:
        return 0
    vals = np.sort(fixed.as_dtype(f"<u{nb}"))
    return 1 + int(np.count_nonzero(vals[1:] != vals[:-1]))


def _arrow_page_dictionary(values: pa.DictionaryArray) -> pa.DictionaryArray | None:
    """The page dictionary of an Arrow dictionary page as pylance keeps it: the array's own dictionary, unused
    entries included, without null entries (None when a valid index points at one: re-encoded then)."""
    d = values.dictionary
    if not d.null_count:
        return values
    keep = to_numpy(d.is_valid())
    idx = values.indices
    used = np.asarray(to_numpy(pc.fill_null(idx, zero(idx.type))), np.int64)
    valid = to_numpy(idx.is_valid())
    if not bool(np.all(keep[used[valid]])):
        return None
    remap = (np.cumsum(keep) - 1).astype(np.int64)
    new_idx = from_numpy(remap[used], mask=~valid).cast(values.type.index_type)
    return pa.DictionaryArray.from_arrays(new_idx, d.filter(from_numpy(keep)))


def _keys(arr: pa.Array, fixed: FixedWidthBlock | None) -> pa.Array:
    """What a page dictionary of ``arr`` is keyed on: its values, or the bytes of its ``fixed`` block."""
    if fixed is None:
        return arr
    nb = fixed.bits_per_value // 8
    if nb in (1, 2, 4, 8):
        return from_numpy(fixed.as_dtype(f"<u{nb}"))
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(nb), len(arr), [None, pa.py_buffer(np.asarray(fixed.data))])


def _dictionary_page(
    values: pa.Array, opts: EncodingOptions, force: bool, fixed: FixedWidthBlock | None
) -> MiniBlockValues | None:
    """A page dictionary with bit-packed / RLE indices, if the page qualifies (see the module docstring)."""
    arr = storage(values)
    n = len(arr)
    variable = is_variable(arr.type)
    if fixed is not None:
        if not force and fixed.bits_per_value not in ((64, 128) if opts.version.dictionary_64bit else (128,)):
            return None
        nb = fixed.bits_per_value // 8
        plain = n * nb
    elif variable:
        plain = value_bytes(arr)
    else:
        return None
    if not force:
        if n < DICT_MIN_VALUES:
            return None
        limit = n // max(opts.dict_divisor, 1)
        if limit == 0 or (n < DICT_SAMPLE_MIN and fixed is not None and _distinct(fixed) > limit):
            return None  # (a small page, unsampled: counted exactly, without hashing)
        ratio = _sample_unique_ratio(_keys(arr, fixed))
        if ratio is not None and (ratio >= DICT_SAMPLE_UNIQUE or np.ceil(ratio * n) > limit):
            return None
    encoded = _arrow_page_dictionary(values) if pa.types.is_dictionary(values.type) else None
    if encoded is not None:
        fixed = None  # the items are the dictionary's values, not keys derived from them
    elif fixed is not None:
        runs_dict = _sorted_runs_dictionary(fixed, None if force else limit)
        if isinstance(runs_dict, int):  # more distinct values than the limit
            return None
        encoded = runs_dict
    if encoded is None:
        encoded = dictionary_encode(_keys(arr, fixed), n if force else limit)
        if encoded is None:  # more distinct values than the limit
            return None
    c = len(encoded.dictionary)
    if not force and c > limit:
        return None
    # indices as wide as the Arrow key type of a dictionary field (pylance checks), else u32
    bits = values.type.index_type.bit_width if pa.types.is_dictionary(values.type) else 32
    if c > (1 << (bits - 1)):
        raise UnsupportedTypeError(f"a page dictionary of {c} items does not fit {values.type.index_type} keys")
    indices = encoded.indices
    if indices.null_count:
        valid = to_numpy(indices.is_valid())
        indices = to_numpy(pc.fill_null(indices, zero(indices.type)))[fill_positions(valid)]
    else:
        indices = to_numpy(indices)
    indices = indices.astype(f"<u{bits // 8}")
    index_block = FixedWidthBlock(indices.view(np.uint8), bits, n)
    index_plan = fixed_plan(index_block, opts)  # the field's settings (rle-threshold...) hold for the indices
    if not force and index_plan.size >= opts.dict_size_ratio * plain:
        return None
    items = to_block(encoded.dictionary)
    assert isinstance(items, FixedWidthBlock | VariableWidthBlock)  # a dictionary of fixed or variable values
    if fixed is not None:
        items = FixedWidthBlock(items.data, fixed.bits_per_value, c)
    dict_enc, (dict_buf,) = _dictionary_block(items, opts)
    size = index_plan.size + len(dict_buf)
    if not force and size >= opts.dict_size_ratio * plain:
        return None
    costs = (
        index_plan.costs
        if index_plan.costs is not None
        else (lambda: np.arange(0, (n + 1) * (bits // 8), bits // 8, dtype=np.int64))
    )
    return MiniBlockValues(
        costs, index_plan.max_items, index_plan.chunk, size, dict_enc, dict_buf, c, bulk=index_plan.bulk
    )


# ----------------------------------------------------------------------------- strings


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
        compression = _general_compression(opts)
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
    plan = _dictionary_page(values, opts, False, None)
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
    fixed = _fixed_block(values)
    plain = None
    if fixed is not None and fixed.bits_per_value <= 64:
        plain = _fixed_page(values, fixed, opts)
    dictionary = _dictionary_page(values, opts, force_dictionary, fixed)
    if dictionary is not None and (plain is None or force_dictionary or dictionary.size < plain.size):
        return dictionary
    if plain is not None:
        return plain
    if fixed is not None:
        return _fixed_page(values, fixed, opts)
    if is_variable(arr.type):
        return _variable_page(values, opts)
    item_validity = has_item_nulls(values)

    def chunk(a: int, n: int) -> Compressed:
        return compress_miniblock_chunk(to_block(values.slice(a, n), item_validity))

    costs = value_costs(values)
    return MiniBlockValues(costs, MAX_CHUNK_ITEMS, chunk, int(costs[-1]))
