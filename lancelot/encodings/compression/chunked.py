"""Many mini-block chunks decoded at once (MiniBlockLayout.value_compression, rep/def compression).

``decompress`` (compression/__init__.py) decodes one chunk per call; a page scan meets hundreds of chunks, so these
kernels decode every fetched chunk of a page in one vectorized pass per technique.  Buffer ``i`` of all chunks is a
``Segments``; the result is the concatenation of the chunks' values, exactly what decoding each chunk and concatenating
would give.

* ``decompress_chunks(enc, buffers, counts)``: value buffers (chunk context);
* ``decompress_level_chunks(enc, segments, counts)``: one level buffer per chunk (block context: rep/def levels), as
  uint16.

A technique (or a shape, e.g. inline bitpacking of more than 1024 values per chunk) without a kernel here returns None:
the caller then decodes chunk by chunk with the per-chunk entry points.  Every length is checked as in the per-chunk
decoders (CorruptFileError)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from lancelot.encodings.compression import variable_kernel as vk
from lancelot.encodings.compression import variable_numpy as vn
from lancelot.encodings.compression.bitpacking import CHUNK, inline_bits, out_of_line_bits, unpack_chunks
from lancelot.encodings.compression.bitpacking_kernel import INLINE_MESSAGES, inline_chunks
from lancelot.encodings.compression.bitpacking_kernel import OK as INLINE_OK
from lancelot.encodings.compression.block import DataBlock, FixedWidthBlock, VariableWidthBlock
from lancelot.encodings.compression.buffers import MAX_DECODED_BYTES, check_size, corrupt, require, uint_dtype
from lancelot.encodings.compression.byte_stream_split import value_bits as bss_bits
from lancelot.encodings.compression.flat import check_flat
from lancelot.encodings.compression.fsst import (
    SymbolTable,
    fsst_decode,
    fsst_decode_where,
    fsst_kernels_ready,
    parse_symbol_table,
)
from lancelot.encodings.compression.general import LZ4, ZSTD, inflater
from lancelot.encodings.compression.lz4_kernel import inflate_blocks
from lancelot.encodings.compression.rle import BLOCK_HEADER as RLE_HEADER
from lancelot.encodings.compression.rle import flat_values as rle_flat_values
from lancelot.encodings.compression.rle import rle_widths
from lancelot.encodings.compression.rle_kernel import MESSAGES as RLE_MESSAGES
from lancelot.encodings.compression.rle_kernel import OK as RLE_OK
from lancelot.encodings.compression.rle_kernel import decode_runs
from lancelot.encodings.compression.segments import Segments, aligned_words, gather, readonly, segments_mask
from lancelot.encodings.compression.variable import offset_bits
from lancelot.encodings.compression.zstd_kernel import inflate_frames
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.arrays import empty
from lancelot.util.jit import WARM_WORK, NumpyUntilHot

MAX_DEPTH = 16
#: variable-width reads joined with numpy before the kernels are prepared in the background (or WARM_WORK bytes)
HOT_VARIABLE = NumpyUntilHot(vk.extents, vk.join, vk.spans, warm_work=WARM_WORK)


@lru_cache(maxsize=256)
def symbol_table(raw: bytes) -> SymbolTable:
    """A parsed FSST symbol table, parsed once per distinct table."""
    return parse_symbol_table(raw)


def _offsets(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def decompress_chunks(
    enc: pb.CompressiveEncoding, buffers: list[Segments], counts: np.ndarray, _depth: int = 0
) -> DataBlock | None:
    """The values of every chunk (``counts[k]`` in chunk k), concatenated; None = no batch kernel.

    The segments must lie inside their data and the counts be plausible (the mini-block layer checks both against the
    chunk table and chunk headers)."""
    require(_depth < MAX_DEPTH, "compressive encoding nests too deeply")
    kind = enc.WhichOneof("compression")
    if kind == "flat":
        return _flat(enc.flat, buffers, counts)
    if kind == "inline_bitpacking":
        return _inline_bitpacking(enc.inline_bitpacking, buffers, counts)
    if kind == "variable":
        return _variable(enc.variable, buffers, counts)
    if kind == "fsst":
        table = symbol_table(bytes(enc.fsst.symbol_table))
        if (
            table.switch_on
            and enc.fsst.values.WhichOneof("compression") == "variable"
            and HOT_VARIABLE.ready()
            and fsst_kernels_ready()
        ):
            return _fsst_variable(table, enc.fsst.values.variable, buffers, counts)
        inner = decompress_chunks(enc.fsst.values, buffers, counts, _depth + 1)
        if inner is None:
            return None
        if not isinstance(inner, VariableWidthBlock):
            raise corrupt("FSST values must be variable-width")
        return fsst_decode(table, inner)
    if kind == "rle":
        return _rle(enc.rle, buffers, counts) if rle_flat_values(enc.rle) else None
    if kind == "byte_stream_split":
        return _byte_stream_split(enc.byte_stream_split, buffers, counts)
    if kind == "general":
        require(len(buffers) >= 1, "general compression expects at least one buffer")
        if enc.general.values.WhichOneof("compression") not in _KERNELS:
            return None  # decoded chunk by chunk: decompress nothing here
        first = _general(enc.general.compression, buffers[0])
        return decompress_chunks(enc.general.values, [first, *buffers[1:]], counts, _depth + 1)
    return None


#: the value techniques with a batch kernel
_KERNELS = ("flat", "inline_bitpacking", "variable", "fsst", "rle", "byte_stream_split", "general")


def decompress_level_chunks(
    enc: pb.CompressiveEncoding, seg: Segments, counts: np.ndarray, _depth: int = 0
) -> np.ndarray | None:
    """The rep or def levels of every chunk (block context), concatenated as uint16; None = no kernel."""
    require(_depth < MAX_DEPTH, "compressive encoding nests too deeply")
    kind = enc.WhichOneof("compression")
    block: DataBlock | None = None
    if kind == "out_of_line_bitpacking":
        block = _out_of_line(enc.out_of_line_bitpacking, seg, counts)
    elif kind == "flat":
        block = _flat(enc.flat, [seg], counts)
    elif kind == "inline_bitpacking":
        block = _inline_bitpacking(enc.inline_bitpacking, [seg], counts)
    elif kind == "rle" and rle_flat_values(enc.rle):
        block = _rle_block(enc.rle, seg, counts)
    elif kind == "general":
        return decompress_level_chunks(enc.general.values, _general(enc.general.compression, seg), counts, _depth + 1)
    if block is None or not isinstance(block, FixedWidthBlock) or block.bits_per_value not in (8, 16):
        return None
    return block.data.view("<u2" if block.bits_per_value == 16 else "u1").astype(np.uint16, copy=False)


# ----------------------------------------------------------------------------- kernels


def _flat(flat: pb.Flat, buffers: list[Segments], counts: np.ndarray) -> FixedWidthBlock | None:
    bits = check_flat(flat)
    require(len(buffers) >= 1, "flat encoding expects one buffer, got none")
    seg = buffers[0]
    total = int(counts.sum())
    if bits % 8 == 0:
        need = counts * (bits // 8)
        check_size(int(need.sum()), "flat values")
        require(bool(np.all(need <= seg.sizes)), "flat values are longer than their chunk buffer")
        return FixedWidthBlock(gather(seg.data, seg.starts, need, alloc=empty), bits, total)
    if bits != 1:
        return None
    nbytes = (counts + 7) // 8
    require(bool(np.all(nbytes <= seg.sizes)), "a chunk's bitmap is shorter than its values")
    raw = gather(seg.data, seg.starts, nbytes)
    bits_all = np.unpackbits(raw, bitorder="little")
    keep = gather(bits_all, _offsets(nbytes)[:-1] * 8, counts)
    return FixedWidthBlock(np.packbits(keep, bitorder="little"), 1, total)


def _inline_bitpacking(desc: pb.InlineBitpacking, buffers: list[Segments], counts: np.ndarray) -> DataBlock | None:
    t = inline_bits(desc)
    if len(counts) == 0 or int(counts.max()) > CHUNK:
        return None  # several FastLanes chunks per mini-block chunk: decoded chunk by chunk
    require(len(buffers) >= 1, "inline bitpacking expects one buffer, got none")
    seg = buffers[0]
    status, vals, _, width = inline_chunks(readonly(seg.data), seg.starts, seg.sizes, counts, uint_dtype(t))
    if status != INLINE_OK:  # chunks are checked in order: the first bad one is reported
        raise corrupt(INLINE_MESSAGES[status].format(width, t))
    return FixedWidthBlock(vals.view(np.uint8), t, len(vals))


def _variable(var: pb.Variable, buffers: list[Segments], counts: np.ndarray) -> VariableWidthBlock:
    bits = offset_bits(var)
    require(len(buffers) >= 1, "variable encoding expects one buffer, got none")
    seg = buffers[0]
    ow = bits // 8
    raw = readonly(seg.data)
    first = np.empty(len(counts), dtype=np.int64)
    last = np.empty(len(counts), dtype=np.int64)
    starts, sizes, counts = (np.ascontiguousarray(a, dtype=np.int64) for a in (seg.starts, seg.sizes, counts))
    # a fresh process: numpy until the kernels are loaded (same output).  A large input does not wait for
    # their preparation either: on an empty numba cache it compiles for seconds (a full read of TPC-H orders
    # SF1 that waited took 21-24 s, against 2.5-5 s in numpy beside the compilation; docs/performance.md)
    numpy = not HOT_VARIABLE.ready()
    if numpy:
        HOT_VARIABLE.numpy_call(lambda: _variable_warm(raw, ow), work=len(raw))
        status = vn.extents_numpy(raw, starts, sizes, counts, ow, first, last)
    else:
        status = vk.extents(raw, starts, sizes, counts, ow, first, last)
    require(status == vk.OK, vk.MESSAGES.get(status, ""))
    total = int((last - first).sum())
    check_size(total, "variable values")
    offsets = empty(int(counts.sum()) + 1, np.int64)
    data = empty(total, np.uint8)
    if numpy:
        status = vn.join_numpy(raw, starts, counts, ow, first, last, offsets, data)
    else:
        words = aligned_words(raw, uint_dtype(bits))
        if words is None or (starts % ow).any():
            words = readonly(np.zeros(0, uint_dtype(bits)))
        status = vk.join(raw, words, starts, counts, ow, first, last, offsets, data)
    require(status == vk.OK, vk.MESSAGES.get(status, ""))
    return VariableWidthBlock(offsets, data, int(counts.sum()))


def _fsst_variable(table: SymbolTable, var: pb.Variable, buffers: list[Segments], counts: np.ndarray) -> DataBlock:
    """FSST strings of many chunks decoded where they lie in the fetched chunks (variable_kernel.spans):
    no joined copy of the codes first.  Only once the kernels are loaded (else ``_variable`` then
    ``fsst_decode``, the same strings)."""
    bits = offset_bits(var)
    require(len(buffers) >= 1, "variable encoding expects one buffer, got none")
    seg = buffers[0]
    ow = bits // 8
    raw = readonly(seg.data)
    starts, sizes, counts = (np.ascontiguousarray(a, dtype=np.int64) for a in (seg.starts, seg.sizes, counts))
    n = int(counts.sum())
    # every value takes an offset of ``ow`` bytes in its chunk: more values than that is a bad count,
    # reported before the spans are allocated (the kernel checks each chunk)
    require(n * ow <= int(sizes.sum()), vk.MESSAGES[vk.SHORT_BUFFER])
    s_starts = empty(n, np.int64)
    s_ends = empty(n, np.int64)
    words = aligned_words(raw, uint_dtype(bits))
    if words is None or (starts % ow).any():
        words = readonly(np.zeros(0, uint_dtype(bits)))
    status = vk.spans(raw, words, starts, sizes, counts, ow, s_starts, s_ends)
    require(status == vk.OK, vk.MESSAGES.get(status, ""))
    return fsst_decode_where(table, raw, s_starts, s_ends)


def _variable_warm(raw: np.ndarray, ow: int) -> None:
    """Load (or compile) the variable-width kernels for the types of a real call (no chunk: nothing read)."""
    z = np.zeros(0, np.int64)
    words = readonly(np.zeros(0, uint_dtype(ow * 8)))
    vk.extents(raw, z, z, z, ow, z.copy(), z.copy())
    vk.join(raw, words, z, z, ow, z, z, np.zeros(1, np.int64), np.zeros(0, np.uint8))
    vk.spans(raw, words, z, z, z, ow, z.copy(), z.copy())


def _rle(rle: pb.Rle, buffers: list[Segments], counts: np.ndarray) -> FixedWidthBlock:
    bits, len_bits = rle_widths(rle)
    wb, lb = bits // 8, len_bits // 8
    total = int(counts.sum())
    check_size(total * wb, "RLE values")
    live = counts > 0
    if not live.any():
        return FixedWidthBlock(np.zeros(0, np.uint8), bits, 0)
    require(len(buffers) == 2, f"RLE expects 2 buffers, got {len(buffers)}")
    vseg, lseg = buffers
    status, vals = decode_runs(
        readonly(vseg.data),
        vseg.starts,
        vseg.sizes,
        readonly(lseg.data),
        lseg.starts,
        lseg.sizes,
        counts,
        uint_dtype(bits),
        lb,
    )
    if status != RLE_OK:
        raise corrupt(RLE_MESSAGES[status])
    return FixedWidthBlock(vals.view(np.uint8), bits, total)


def _rle_block(rle: pb.Rle, seg: Segments, counts: np.ndarray) -> FixedWidthBlock:
    """RLE in block context, one buffer per chunk (rle.py: u64 values size, values, run lengths): the buffers are cut
    into their two parts, then decoded as chunk-context runs.  Chunks without values are not read (as
    decompress_rle_block)."""
    rle_widths(rle)
    live = counts > 0
    sizes = np.where(live, seg.sizes, RLE_HEADER)
    short = np.flatnonzero(sizes < RLE_HEADER)
    require(not len(short), f"RLE block of {int(sizes[short[0]]) if len(short) else 0} bytes has no values-size header")
    head = gather(seg.data, seg.starts[live], np.full(int(live.sum()), RLE_HEADER, np.int64))
    vsize = np.zeros(len(counts), np.uint64)
    vsize[live] = np.ascontiguousarray(head).view("<u8")
    over = np.flatnonzero(vsize > (sizes - RLE_HEADER).astype(np.uint64))
    require(
        not len(over),
        f"RLE block values part of {int(vsize[over[0]]) if len(over) else 0} bytes overruns the "
        f"{int(sizes[over[0]]) if len(over) else 0}-byte buffer",
    )
    vs = vsize.astype(np.int64)
    vstarts = seg.starts + RLE_HEADER
    values = Segments(seg.data, vstarts, vs)
    lengths = Segments(seg.data, vstarts + vs, sizes - RLE_HEADER - vs)
    return _rle(rle, [values, lengths], counts)


def _byte_stream_split(bss: pb.ByteStreamSplit, buffers: list[Segments], counts: np.ndarray) -> FixedWidthBlock:
    """Byte streams back into values, the chunks grouped by value count (one transpose per group)."""
    bits = bss_bits(bss)
    nb = bits // 8
    total = int(counts.sum())
    check_size(total * nb, "byte stream split values")
    require(len(buffers) == 1, f"byte stream split expects 1 buffer, got {len(buffers)}")
    seg = buffers[0]
    require(
        not np.any((seg.sizes != counts * nb) & (counts > 0)),
        "byte stream split: a chunk's buffer does not hold its values",
    )
    out = empty(total * nb, np.uint8)
    first = _offsets(counts)[:-1] * nb
    for n in set(counts.tolist()):
        if n == 0:
            continue
        ks = np.flatnonzero(counts == n)
        streams = gather(seg.data, seg.starts[ks], np.full(len(ks), n * nb)).reshape(len(ks), nb, n)
        values = streams.transpose(0, 2, 1).reshape(len(ks), n * nb)
        if len(ks) == len(counts):
            out[:] = values.reshape(-1)
        else:
            out[(first[ks][:, None] + np.arange(n * nb)).reshape(-1)] = values.reshape(-1)
    return FixedWidthBlock(out, bits, total)


def _out_of_line(desc: pb.OutOfLineBitpacking, seg: Segments, counts: np.ndarray) -> FixedWidthBlock:
    """Out-of-line bitpacking of each chunk's buffer (one width; each tail packed or raw)."""
    t, w = out_of_line_bits(desc)
    wb = t // 8
    dt = uint_dtype(t)
    total = int(counts.sum())
    check_size(total * wb, "bitpacked values")
    whole, tail = counts // CHUNK, counts % CHUNK
    chunk_bytes = CHUNK * w // 8
    full_len = whole * chunk_bytes
    raw_tail = (tail > 0) & (seg.sizes == full_len + tail * wb)
    n_packed = whole + ((tail > 0) & ~raw_tail)
    raw_len = np.where(raw_tail, tail, 0)
    require(
        bool(np.all(seg.sizes >= n_packed * chunk_bytes + raw_len * wb)),
        f"out-of-line bitpacking: a chunk buffer is short for its values of {w} bits",
    )
    packed_vals = np.minimum(counts, n_packed * CHUNK)  # values from the packed part, per chunk
    groups = int(n_packed.sum())
    if w == 0 or groups == 0:
        unpacked = np.zeros(groups * CHUNK, dtype=dt)
    else:
        packed = gather(seg.data, seg.starts, n_packed * chunk_bytes)
        unpacked = unpack_chunks(packed, w, t).reshape(-1)
    from_packed = gather(unpacked, _offsets(n_packed)[:-1] * CHUNK, packed_vals)
    if not raw_tail.any():
        return FixedWidthBlock(from_packed.view(np.uint8), t, total)
    raw = np.ascontiguousarray(gather(seg.data, seg.starts + full_len, raw_len * wb)).view(dt)
    out = empty(total, dt)
    base = _offsets(counts)[:-1]
    packed_mask = segments_mask(base, packed_vals, 0, total)
    out[packed_mask] = from_packed
    out[~packed_mask] = raw
    return FixedWidthBlock(out.view(np.uint8), t, total)


def _general(compression: pb.BufferCompression, seg: Segments) -> Segments:
    """Undo general compression of each chunk's buffer (LZ4: every chunk in one kernel call, else one codec call per
    chunk)."""
    if compression.scheme == LZ4 and len(seg) > 1:
        fast = _lz4_chunks(seg)
        if fast is not None:
            return fast
    if compression.scheme == ZSTD and len(seg) > 1:
        frames = inflate_frames(seg.data, np.asarray(seg.starts), np.asarray(seg.sizes))
        if frames is not None:
            return Segments(frames[0], _offsets(frames[1])[:-1], frames[1])
    inflate, mv = inflater(compression), np.ascontiguousarray(seg.data).data
    parts = [inflate(mv[a : a + n]) for a, n in zip(np.asarray(seg.starts).tolist(), np.asarray(seg.sizes).tolist())]
    sizes = np.fromiter(map(len, parts), np.int64, len(parts))
    return Segments(np.frombuffer(bytearray().join(parts), np.uint8), _offsets(sizes)[:-1], sizes)


def _lz4_chunks(seg: Segments) -> Segments | None:
    """LZ4 chunk buffers (u32 size prefix, raw block) inflated by lz4_kernel; None when a prefix is missing or
    implausible, a block is bad or the kernel is not loaded yet (the caller goes chunk by chunk: the same bytes, or the
    same error, as ``decompress_buffer``)."""
    sizes = np.asarray(seg.sizes, dtype=np.int64)
    if not len(sizes) or int(sizes.min()) < 4:
        return None
    starts = np.asarray(seg.starts, dtype=np.int64)
    head = np.ascontiguousarray(seg.data[starts[:, None] + np.arange(4)])
    out_sizes = head.view("<u4").reshape(-1).astype(np.int64)
    if np.any(out_sizes > (sizes - 4) * 256 + 4096) or int(out_sizes.sum()) > MAX_DECODED_BYTES:
        return None
    out = inflate_blocks(seg.data, starts, sizes, out_sizes)
    if out is None:
        return None
    return Segments(out, _offsets(out_sizes)[:-1], out_sizes)
