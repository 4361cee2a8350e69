"""The plans of fixed-width mini-block values: each technique's size estimate and chunk encoder.

(encoding.md, "Compression".)  For 8..64-bit values (or dictionary indices): the smallest of Flat,
InlineBitpacking (1024 values per chunk) and Rle (up to 4096 per chunk); with ``compression`` lz4/zstd, General
around Flat or ByteStreamSplit (per ``bss``); ``none``: Flat only.  Null slots repeat the value before them,
so runs and bit widths stay as they are.  write_strategy.py chooses among these and the other techniques.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancelot.encodings.compression.bitpacking import (
    CHUNK,
    compress_inline_bitpacking,
    inline_bitpacking_size,
    pack_inline_chunks,
)
from lancelot.encodings.compression.block import FixedWidthBlock
from lancelot.encodings.compression.buffers import as_u8
from lancelot.encodings.compression.byte_stream_split import compress_byte_stream_split
from lancelot.encodings.compression.flat import compress_flat
from lancelot.encodings.compression.general import buffer_compression, compress_buffer
from lancelot.encodings.compression.rle import compress_rle, rle_size
from lancelot.encodings.strategy import EncodingOptions
from lancelot.encodings.structural.write_profile import general_bulk, with_general
from lancelot.encodings.structural.write_values import NUMBER_BITS, storage, to_block, value_costs
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.arrays import to_numpy
from lancelot.util.types import is_plain_fixed

MAX_CHUNK_ITEMS = 4096
#: mini-block chunks are cut to stay under this many bytes unless the plan says otherwise (the bound is 32 KiB in 2.1)
CHUNK_TARGET = 16 * 1024
BITPACK_CHUNK_ITEMS = 1024
RLE_CHUNK_ITEMS = 4096
#: without an rle-threshold, RLE is measured only when runs are fewer than this share of the values
RLE_RUN_RATIO = 0.5
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


def sliced(block: FixedWidthBlock, compress: Callable[[FixedWidthBlock], Compressed]) -> ChunkEncoder:
    width = block.bits_per_value // 8

    def chunk(a: int, count: int) -> Compressed:
        return compress(FixedWidthBlock(block.data[a * width : (a + count) * width], block.bits_per_value, count))

    return chunk


def flat_bulk(block: FixedWidthBlock) -> BulkEncoder:
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


def general_compression(opts: EncodingOptions) -> pb.BufferCompression:
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
        return FixedPlan(sliced(block, compress_flat), MAX_CHUNK_ITEMS, n * t // 8, bulk=flat_bulk(block))
    size, kind = _cheapest(block, opts)
    if opts.general:
        compression = general_compression(opts)
        if _use_bss(block, opts, compression):
            return FixedPlan(
                with_general(sliced(block, compress_byte_stream_split), compression), MAX_CHUNK_ITEMS, size
            )
        return FixedPlan(
            with_general(sliced(block, compress_flat), compression),
            MAX_CHUNK_ITEMS,
            size,
            bulk=general_bulk(flat_bulk(block), compression),
        )
    if kind == "bitpacking":
        page = BitpackedPage(block)
        return FixedPlan(page.chunk, BITPACK_CHUNK_ITEMS, size, bulk=page.bulk)
    if kind == "rle":
        return FixedPlan(
            sliced(block, compress_rle),
            RLE_CHUNK_ITEMS,
            size,
            lambda: _rle_costs(block.as_dtype(f"<u{t // 8}"), t // 8),
            runs=True,
        )
    return FixedPlan(sliced(block, compress_flat), MAX_CHUNK_ITEMS, size, bulk=flat_bulk(block))


def fixed_block(values: pa.Array) -> FixedWidthBlock | None:
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


def _flat_page(block: FixedWidthBlock, costs: np.ndarray | Callable[[], np.ndarray]) -> MiniBlockValues:
    size = block.num_values * block.bits_per_value // 8
    return MiniBlockValues(costs, MAX_CHUNK_ITEMS, sliced(block, compress_flat), size, bulk=flat_bulk(block))


def fixed_page(values: pa.Array, block: FixedWidthBlock, opts: EncodingOptions) -> MiniBlockValues:
    if block.bits_per_value > 64:
        return _flat_page(block, value_costs(values))
    plan = fixed_plan(block, opts)
    costs = plan.costs if plan.costs is not None else (lambda: value_costs(values))
    flat = None
    if opts.general is None and not opts.plain_only and plan.max_items == BITPACK_CHUNK_ITEMS:
        flat = _flat_page(block, lambda: value_costs(values))
    return MiniBlockValues(costs, plan.max_items, plan.chunk, plan.size, bulk=plan.bulk, flat=flat, runs=plan.runs)
