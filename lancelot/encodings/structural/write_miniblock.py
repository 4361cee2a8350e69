"""Writing mini-block pages (lance.encodings21.MiniBlockLayout; encoding.md, "Mini Block Page Layout").

Page buffers: 0 = chunk metadata, 1 = the chunks, 2 = the page dictionary
(when the values are dictionary indices, see write_strategy.py), then (with
repetition) the repetition index.

* The visible values are cut into chunks of a power-of-two number of items
  (at most 4096, or what the compression wants; the last chunk takes the rest), each small enough that the
  whole chunk stays under 32 KiB.  Level entries go with the items: a chunk
  holds the levels up to its last item, plus any null/empty lists that come
  before its first item (and the last chunk every level left).
* A chunk: u16 level count (0 without levels), u16 size of the repetition
  levels, u16 size of the definition levels (each only when present), one
  size per value buffer (u16 in 2.1, u32 in 2.2: ``has_large_chunk``), padding
  to 8 bytes, then the levels and the value buffers, each padded to 8 bytes.
* Chunk metadata: per chunk one word (u16 in 2.1, u32 in 2.2): the chunk size
  in 8-byte words minus one, shifted left by 4, or log2 of the item count
  (0 for the last chunk).
* Repetition index: per chunk two u64, the rows that end in the chunk and the
  level entries of a row left unfinished at its end.

Levels are u16 values bit-packed out of line with the page's widest level
(OutOfLineBitpacking in block context, as pylance writes them).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from lancelot.encodings.compression.bitpacking import compress_out_of_line_bitpacking
from lancelot.encodings.compression.block import FixedWidthBlock
from lancelot.encodings.compression.scatter import copy_slices
from lancelot.encodings.planar.chunk_sizes import FLAT_KINDS, flat_chunk_items
from lancelot.encodings.planar.write_levels import rle_levels
from lancelot.encodings.strategy import EncodingOptions
from lancelot.encodings.structural.write_fixed import DEFAULT_OPTIONS, MiniBlockValues
from lancelot.encodings.structural.write_profile import SMALL_PAGE_BYTES
from lancelot.encodings.structural.write_repdef import PageLevels
from lancelot.encodings.structural.write_strategy import plan_miniblock
from lancelot.errors import UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

ALIGN = 8
FILL_BYTE = 0xFE
#: the format's bound on a chunk in 2.1 (chunks are cut to stay under the plan's ``chunk_target``)
CHUNK_LIMIT = 32 * 1024


#: how a page's rep or def levels are coded: the encoding, and the function packing one chunk's levels
_Codec = tuple[pb.CompressiveEncoding, Callable[[np.ndarray], np.ndarray]]


class ChunkTooLarge(UnsupportedEncodingError):
    """Not even one item fits a mini-block chunk (a long run of null/empty lists before it)."""


@functools.cache
def _head_dtype(streams: int, size_dtype: str, num_buffers: int) -> np.dtype[np.void]:
    """A chunk header's fields: level count, level stream sizes, buffer sizes (made once per shape)."""
    return np.dtype([("n", "<u2"), ("levels", "<u2", (streams,)), ("sizes", size_dtype, (num_buffers,))])


def _pad(n: int) -> int:
    return -n % ALIGN


def _level_bounds(levels: PageLevels, num_items: int) -> np.ndarray | None:
    """Level index where the chunk that starts at item k begins (k = 0..n), or None without levels."""
    n_levels = len(levels.rep) if levels.rep is not None else (len(levels.defs) if levels.defs is not None else 0)
    if n_levels == 0:
        return None
    if levels.rep is None or levels.defs is None:
        return np.arange(num_items + 1, dtype=np.int64)
    items = np.flatnonzero(levels.defs <= levels.max_visible)
    bounds = np.empty(num_items + 1, np.int64)
    bounds[0] = 0
    bounds[1:] = items + 1
    bounds[-1] = n_levels
    return bounds


def _plan_chunks(
    costs: np.ndarray, lev: np.ndarray | None, streams: int, header: int, max_items: int, target: int
) -> tuple[np.ndarray, np.ndarray]:
    """(first item, item count) of each chunk, as two int64 arrays.

    A chunk of items [a, b) needs at most ``header + 2 * ALIGN`` + the values' bytes
    ``costs[b] - costs[a]`` + per level stream ``2 * (lev[b] - lev[a]) + ALIGN``: each
    chunk takes the largest power-of-two item count whose bound stays under ``target``
    (found with one search in the cumulative bound), and the chunks after it the same
    count as long as it fits; the last chunk takes the rest.
    """
    n = len(costs) - 1
    cum = np.asarray(costs, np.int64)
    fixed = header + 2 * ALIGN
    if lev is not None:
        cum = cum + 2 * streams * lev
        fixed += streams * ALIGN
    budget = target - fixed
    top = max_items.bit_length() - 1
    firsts: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    a = 0
    while a < n:
        rest = n - a
        if rest <= max_items and int(cum[n] - cum[a]) <= budget:
            firsts.append(np.array([a], np.int64))
            counts.append(np.array([rest], np.int64))
            break
        fit = int(cum.searchsorted(cum[a] + budget, side="right")) - 1 - a
        size = 1 << min(max(fit, 1).bit_length() - 1, top, rest.bit_length() - 1)
        need = fixed + int(cum[a + size] - cum[a])
        if need > CHUNK_LIMIT:
            raise ChunkTooLarge(f"a mini-block chunk of one item would need {need} bytes (too many empty/null lists)")
        # the same size again while it fits (all at once: pages of even values are one pass)
        starts = a + size * np.arange(rest // size, dtype=np.int64)
        fits = cum[starts + size] - cum[starts] <= budget
        take = max(1, int(np.argmin(fits)) if not fits.all() else len(starts))
        firsts.append(starts[:take])
        counts.append(np.full(take, size, np.int64))
        a += take * size
    if len(firsts) <= 1:  # (a page of one run: no joining)
        return (firsts[0], counts[0]) if firsts else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    return np.concatenate(firsts), np.concatenate(counts)


def _many_levels(lev: np.ndarray, chunks: tuple[np.ndarray, np.ndarray], max_items: int) -> bool:
    """Whether a chunk cut by its values alone holds more than twice ``max_items`` levels (many null or
    empty lists): such a page is cut counting its levels (a chunk's level count is a u16)."""
    firsts, counts = chunks
    if not len(firsts):
        return False
    ends = np.append(lev[(firsts + counts)[:-1]], lev[-1]) if len(lev) else np.zeros(0, np.int64)
    return bool((ends - lev[firsts] > 2 * max_items).any())


def _rep_index(
    rep: np.ndarray, max_rep: int, lev: np.ndarray | None, chunks: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """Per chunk: rows ending in it, and level entries of the row it leaves unfinished."""
    if lev is None:  # no level entries: no items, so no chunks either
        return np.zeros(0, np.uint64)
    total = len(rep)
    starts = np.append(np.flatnonzero(rep == max_rep), total)
    n_chunks = len(chunks[0])
    out = np.zeros((n_chunks, 2), np.uint64)
    for k, (a, count) in enumerate(zip(chunks[0].tolist(), chunks[1].tolist())):
        ls = int(lev[a])
        le = int(lev[a + count]) if k < n_chunks - 1 else total
        lo = np.searchsorted(starts, ls, side="right")
        hi = np.searchsorted(starts, le, side="right")
        out[k, 0] = hi - lo
        if le < total and rep[le] != max_rep:
            last = starts[hi - 1] if hi > 0 else 0
            out[k, 1] = le - max(int(last), ls)
    return out.reshape(-1)


def _levels_encoding(width: int) -> pb.CompressiveEncoding:
    return compress_out_of_line_bitpacking(FixedWidthBlock(np.zeros(0, np.uint8), 16, 0), width)[0]


def _pack_levels(levels: np.ndarray, width: int) -> np.ndarray:
    """One chunk's levels, bit-packed with the page's width (as pylance stores them)."""
    block = FixedWidthBlock(levels.astype("<u2").view(np.uint8), 16, len(levels))
    return compress_out_of_line_bitpacking(block, width)[1][0]


def _level_codec(levels: np.ndarray | None, planar: bool) -> _Codec | None:
    """How a page's rep or def levels are coded: bit-packed at the page's width, or at 2.3 RLE where it
    is smaller (encodings/planar/write_levels.py)."""
    if levels is None:
        return None
    width = int(levels.max()).bit_length() if len(levels) else 0
    if planar:
        rle = rle_levels(levels, width)
        if rle is not None:
            return rle
    return _levels_encoding(width), lambda chunk: _pack_levels(chunk, width)


def _as_bytes(b: np.ndarray) -> np.ndarray:
    return b if b.dtype == np.uint8 and b.ndim == 1 else np.ascontiguousarray(b).reshape(-1).view(np.uint8)


def _chunk_pieces(
    plan: MiniBlockValues,
    levels: PageLevels,
    lev: np.ndarray | None,
    chunks: tuple[np.ndarray, np.ndarray],
    per_chunk: int,
    n_levels: np.ndarray,
    rep_codec: _Codec | None = None,
    def_codec: _Codec | None = None,
) -> tuple[pb.CompressiveEncoding | None, np.ndarray, np.ndarray]:
    """(encoding, the pieces' bytes one after another, their sizes per chunk) of every chunk made one at a time:
    the packed levels, then the value buffers; ``n_levels`` gets each chunk's level count."""
    rep, defs = levels.rep, levels.defs
    total_levels = len(rep) if rep is not None else (len(defs) if defs is not None else 0)
    n_chunks = len(chunks[0])
    value_encoding = None
    pieces: list[np.ndarray] = []
    for k, (a, count) in enumerate(zip(chunks[0].tolist(), chunks[1].tolist())):
        enc, bufs = plan.chunk(a, count)
        if value_encoding is None:
            value_encoding = enc
        if lev is not None:
            ls = int(lev[a])
            le = int(lev[a + count]) if k < n_chunks - 1 else total_levels
            if rep is not None and rep_codec is not None:
                pieces.append(rep_codec[1](rep[ls:le]))
            if defs is not None and def_codec is not None:
                pieces.append(def_codec[1](defs[ls:le]))
            n_levels[k] = le - ls
        pieces.extend(bufs)
    pieces = [_as_bytes(b) for b in pieces]
    lens = np.fromiter((b.nbytes for b in pieces), np.int64, len(pieces)).reshape(n_chunks, per_chunk)
    data = np.concatenate(pieces) if pieces else np.zeros(0, np.uint8)
    return value_encoding, data, lens


def encode_miniblock(
    values: pa.Array,
    levels: PageLevels,
    large_chunks: bool,
    force_dictionary: bool = False,
    opts: EncodingOptions = DEFAULT_OPTIONS,
) -> tuple[pb.PageLayout, list[np.ndarray]]:
    """The mini-block page of ``values`` (the visible items) with their levels."""
    num_items = len(values)
    rep, defs = levels.rep, levels.defs
    streams = int(rep is not None) + int(defs is not None)
    lev = _level_bounds(levels, num_items)
    word = 4 if large_chunks else 2
    rep_codec = _level_codec(rep, opts.version.planar)
    def_codec = _level_codec(defs, opts.version.planar)
    plan = plan_miniblock(values, force_dictionary, opts)
    costs = plan.costs() if callable(plan.costs) else plan.costs
    # the chunks' encoding and buffer count: a small page probed whole (what its General wrapper compressed
    # already), a larger one by its first item
    small = num_items <= plan.max_chunk_items and int(costs[-1]) <= SMALL_PAGE_BYTES
    probe_enc, probe_bufs = plan.chunk(0, num_items if small else min(num_items, 1))
    num_buffers = len(probe_bufs)
    header = 2 + 2 * streams + word * num_buffers
    header += _pad(header)
    max_items, target = plan.max_chunk_items, plan.chunk_target
    if opts.version.planar and num_items and probe_enc.WhichOneof("compression") in FLAT_KINDS:
        max_items, target = flat_chunk_items(int(costs[-1]) / num_items, max_items), CHUNK_LIMIT
    chunks = _plan_chunks(costs, None if not plan.level_costs else lev, streams, header, max_items, target)
    if not plan.level_costs and lev is not None and _many_levels(lev, chunks, max_items):
        chunks = _plan_chunks(costs, lev, streams, header, max_items, target)
    firsts, counts = chunks
    n_chunks = len(firsts)
    size_dtype = "<u4" if large_chunks else "<u2"
    if small and n_chunks == 1:  # the page's one chunk: the probe made its values' buffers
        total = len(rep) if rep is not None else (len(defs) if defs is not None else 0)
        pieces = [codec[1](lv) for lv, codec in ((rep, rep_codec), (defs, def_codec)) if lv is not None and codec]
        head = np.zeros(1, _head_dtype(streams, size_dtype, num_buffers))
        out, words = _one_chunk(head, header, streams, total, [_as_bytes(b) for b in pieces + probe_bufs])
        if not large_chunks and len(out) > CHUNK_LIMIT:
            raise ChunkTooLarge(f"mini-block chunk of {len(out)} bytes exceeds the 32 KiB of version 2.1")
        buffers = [words.astype(size_dtype).view(np.uint8), out]
        return _layout(
            levels, plan, probe_enc, num_items, num_buffers, large_chunks, (rep_codec, def_codec), lev, chunks, buffers
        )
    per_chunk = streams + num_buffers
    n_levels = np.zeros(n_chunks, np.int64)
    bulk = None
    value_encoding: pb.CompressiveEncoding | None
    if plan.bulk is not None and lev is None and num_buffers == 1 and n_chunks:
        bulk = plan.bulk(np.append(firsts, num_items))
    if bulk is not None:  # every chunk's one buffer at once
        value_encoding, data, bounds = bulk
        lens = np.diff(bounds).reshape(n_chunks, 1)
        src = bounds[:-1]
    else:  # every chunk's buffers (levels first), then one layout pass
        value_encoding, data, lens = _chunk_pieces(plan, levels, lev, chunks, per_chunk, n_levels, rep_codec, def_codec)
        src = np.zeros(lens.size, np.int64)
        np.cumsum(lens.reshape(-1)[:-1], out=src[1:])
    if n_levels.max(initial=0) > 0xFFFF:
        raise ChunkTooLarge(f"a mini-block chunk of {int(n_levels.max())} level entries")
    padded = lens + (-lens % ALIGN)
    sizes = header + padded.sum(axis=1)
    if not large_chunks and n_chunks and int(sizes.max()) > CHUNK_LIMIT:
        raise ChunkTooLarge(f"mini-block chunk of {int(sizes.max())} bytes exceeds the 32 KiB of version 2.1")
    starts = np.zeros(n_chunks + 1, np.int64)
    np.cumsum(sizes, out=starts[1:])
    out = np.full(int(starts[-1]), FILL_BYTE, np.uint8)
    head = np.zeros(n_chunks, _head_dtype(streams, size_dtype, num_buffers))
    head["n"] = n_levels
    head["levels"] = lens[:, :streams]
    head["sizes"] = lens[:, streams:]
    hb = head.dtype.itemsize
    out[(starts[:-1, None] + np.arange(hb)).reshape(-1)] = head.view(np.uint8)
    dst = (starts[:-1, None] + header + np.cumsum(padded, axis=1) - padded).reshape(-1)
    copy_slices(out, dst, data, src, lens.reshape(-1))
    logs = np.frexp(counts)[1].astype(np.int64) - 1  # log2 of the (power-of-two) item counts
    if n_chunks:
        logs[-1] = 0
    words = ((sizes // ALIGN - 1) << 4) | logs
    buffers = [words.astype(size_dtype).view(np.uint8), out]
    encoding = value_encoding or probe_enc
    return _layout(
        levels, plan, encoding, num_items, num_buffers, large_chunks, (rep_codec, def_codec), lev, chunks, buffers
    )


def _one_chunk(
    head: np.ndarray, header: int, streams: int, n_levels: int, pieces: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """(the chunk's bytes, its metadata word) of a page of one chunk, laid out as ``encode_miniblock`` lays out
    many: ``head`` (one zeroed header record) filled, each piece padded to ALIGN with FILL_BYTE."""
    lens = [p.nbytes for p in pieces]
    if n_levels > 0xFFFF:
        raise ChunkTooLarge(f"a mini-block chunk of {n_levels} level entries")
    head["n"], head["levels"], head["sizes"] = n_levels, lens[:streams], lens[streams:]
    fill = bytes([FILL_BYTE]) * ALIGN
    parts: list[Any] = [head.tobytes(), fill[: header - head.dtype.itemsize]]  # (bytes and byte arrays)
    for p, n in zip(pieces, lens):
        parts += [p, fill[: -n % ALIGN]]
    out = np.frombuffer(bytearray().join(parts), np.uint8)
    return out, np.array([(len(out) // ALIGN - 1) << 4], np.int64)


def _layout(
    levels: PageLevels,
    plan: MiniBlockValues,
    value_encoding: pb.CompressiveEncoding,
    num_items: int,
    num_buffers: int,
    large_chunks: bool,
    codecs: tuple[_Codec | None, _Codec | None],
    lev: np.ndarray | None,
    chunks: tuple[np.ndarray, np.ndarray],
    buffers: list[np.ndarray],
) -> tuple[pb.PageLayout, list[np.ndarray]]:
    """The page's layout message, and its buffers with the dictionary and repetition index appended."""
    rep, defs = levels.rep, levels.defs
    rep_codec, def_codec = codecs
    layout = pb.MiniBlockLayout(
        value_compression=value_encoding,
        layers=levels.layers,
        num_buffers=num_buffers,
        num_items=num_items,
        has_large_chunk=large_chunks,
    )
    if plan.dictionary is not None and plan.dictionary_buffer is not None:
        layout.dictionary.CopyFrom(plan.dictionary)
        layout.num_dictionary_items = plan.num_dictionary_items
        buffers.append(plan.dictionary_buffer)
    if rep is not None and rep_codec is not None:
        layout.rep_compression.CopyFrom(rep_codec[0])
        layout.repetition_index_depth = 1
        buffers.append(_rep_index(rep, levels.max_rep, lev, chunks).view(np.uint8))
    if defs is not None and def_codec is not None:
        layout.def_compression.CopyFrom(def_codec[0])
    return pb.PageLayout(mini_block_layout=layout), buffers
