"""Writer profiles: General compression of mini-block chunks where a measurement says it pays.

(encoding.md, "Compression": a CompressiveEncoding ``general`` wraps a mini-block chunk's first
buffer in lz4 or zstd; pylance reads it around any mini-block technique.)  The plan chosen for a page
(write_strategy.plan_miniblock) is probed on a few chunks spread over the page; the profile decides
whether the page's chunks are then wrapped:

* ``fast``: never (pages as pylance writes them by default);
* ``balanced`` (the default): lz4, when the probe shrinks by at least a quarter. lz4 decodes a 16 KiB
  chunk in microseconds, so a take pays little; in TPC-H this takes decimals (16 bytes a value, flat,
  pylance's choice too) to about 5.  Pages of at most 4 KiB (tiny tables, a column's last page) try
  zstd level 3 instead: inflating 4 KiB costs microseconds with either, and zstd keeps TPC-H nation
  (25 rows) under Parquet's size.  Larger pages of runs (Rle) stay as they are: a take finds its row
  by searching a chunk's runs, while lz4 would have it inflate the chunk, and chunks of runs inflate
  slowly (TPC-H lineitem's sorted l_orderkey at 2.1, 9 KiB chunks: ~8 us each, benchmarks/inflate_cost.py;
  left unwrapped, lineitem at 2.1 is 3% larger, its 100-row takes of l_orderkey 1.09 -> 0.33 ms and its
  10-row takes of all columns 0.72 -> 0.63 ms);
* ``compact``: per page, the choice with the fewest bytes per value plus ``bytes_per_us`` (0.1 in a
  file of 16 columns, 16/n times that in one of n) per microsecond a take pays per row to inflate
  its chunk (INFLATE_US, a model fitted to measured takes): the page as planned, lz4 in 16 KiB
  chunks, or zstd level 15 or 9 (whichever packs tighter) in chunks of 16, 8, 4 or 2 KiB (the chunk
  is what a take inflates per row: ~1.4 us a KiB, while small chunks compress less), and for
  bit-packed pages also their Flat values under zstd (sorted keys: zstd finds more in the flat
  bytes).  TPC-H lands at 0.88-0.98x Parquet-with-zstd's size; writes are about 5x as slow as
  balanced (zstd, probed at four chunk sizes and two levels); scans pay zstd's inflation.  (Tried and left
  out, issue 15: zstd frames of 2-4 KiB blocks read only up to the value a take needs.  pylance
  reads them, but a frame of many blocks inflates 25-50% slower than a single block, so at the 2-8
  KiB chunks compact picks a take gained 0-5%; the gain shows only at 16-32 KiB chunks, whose takes
  cost more anyway.)

A field whose metadata asks for a compression (``lance-encoding:compression``) keeps it whatever the
profile.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from lancelot.encodings.compression.general import (
    buffer_compression,
    compress_buffer,
    compress_buffers,
    general_encoding,
)
from lancelot.format.pb import encodings_v2_1_pb2 as pb

if TYPE_CHECKING:
    from lancelot.encodings.strategy import EncodingOptions
    from lancelot.encodings.structural.write_strategy import BulkEncoder, ChunkEncoder, Compressed, MiniBlockValues

#: the probe: this many chunks spread over the page, each of about this many (uncompressed) bytes
PROBE_CHUNKS = 4
PROBE_BYTES = 16 * 1024
#: what wrapping a page costs beyond its compressed chunks: the General message in the page's layout
GENERAL_OVERHEAD = 16
#: a take of a page this small inflates at most this much, whatever the scheme (so ``small`` may trade speed)
SMALL_PAGE_BYTES = 4 * 1024


#: compact: chunks of this many bytes (the writer's default) for the page as planned and under lz4
CHUNK_BYTES = 16 * 1024
#: compact: zstd at this level, in chunks of each of these sizes
ZSTD_LEVEL = 15
ZSTD_CHUNK_BYTES = (16 * 1024, 8 * 1024, 4 * 1024, 2 * 1024)
#: compact: also at this level, kept where it packs a chunk size tighter than ZSTD_LEVEL (TPC-H's decimals,
#: which then also inflate sooner: supplier's acctbal in 4 KiB chunks in ~2 us against ~2.8 us)
ZSTD_FAST_LEVEL = 9
#: what a take pays to inflate one chunk, in microseconds: a part per chunk and a part per KiB inflated
#: (fitted to 10-row takes of TPC-H columns when each chunk cost a Python call; zstd chunks are now rebuilt in one
#: kernel call per column, ~1.1 us a chunk + ~1.3 us a KiB: benchmarks/inflate_cost.py.  Kept: the choices it makes
#: meet the size goal, and a refit would move every compact file's bytes)
INFLATE_US = {"lz4": (2.5, 0.2), "zstd": (1.5, 1.4)}
#: a chunk's bytes besides its compressed buffer: header, padding, its word in the chunk metadata
CHUNK_OVERHEAD = 16
#: the file width ``bytes_per_us`` is given for (TPC-H lineitem's 16 columns)
PRICED_COLUMNS = 16


@dataclass(frozen=True)
class Profile:
    """How hard the writer tries for small pages: the General scheme tried, and the least saving kept;
    ``small``: the (scheme, level) tried instead on pages of at most SMALL_PAGE_BYTES; ``bytes_per_us``:
    when set, the page takes the choice of best score instead (``_cheapest``): in a file of
    PRICED_COLUMNS columns, a microsecond more per row taken must save this many bytes per value (in
    a file of n columns, PRICED_COLUMNS / n times as many: a take of all columns costs about n times
    a column's, so a microsecond is a larger share of it)."""

    scheme: str | None
    level: int | None = None
    min_saving: float = 0.0
    small: tuple[str, int | None] | None = None
    bytes_per_us: float = 0.0


PROFILES = {
    "fast": Profile(None),
    "balanced": Profile("lz4", None, 0.25, small=("zstd", 3)),
    "compact": Profile("zstd", ZSTD_LEVEL, bytes_per_us=0.1),
}


def with_general(inner: ChunkEncoder, compression: pb.BufferCompression) -> ChunkEncoder:
    """General compression of the first buffer of every chunk ``inner`` makes (whose encoding is the
    same for every chunk: its General wrapper is made once)."""
    made: list[pb.CompressiveEncoding] = []

    def chunk(a: int, count: int) -> Compressed:
        enc, bufs = inner(a, count)
        if not made:
            made.append(general_encoding(compression, enc))
        return made[0], [compress_buffer(compression, bufs[0]), *bufs[1:]]

    return chunk


def general_bulk(inner: BulkEncoder | None, compression: pb.BufferCompression) -> BulkEncoder | None:
    """``with_general`` for a bulk encoder: each chunk's buffer compressed, the results one after another."""
    if inner is None:
        return None

    def bulk(items: np.ndarray) -> tuple[pb.CompressiveEncoding, np.ndarray, np.ndarray] | None:
        made = inner(items)
        if made is None:
            return None
        enc, data, bounds = made
        return general_encoding(compression, enc), *compress_buffers(compression, data, bounds)

    return bulk


def _probe_chunks(costs: np.ndarray, max_items: int) -> list[tuple[int, int]]:
    """Up to PROBE_CHUNKS (first item, count) spread over the page, each about PROBE_BYTES (they may
    overlap: a chunk cut short by the page's end, e.g. padded bitpacking, would flatter the probe);
    a page the first probe covers is probed once."""
    n = len(costs) - 1
    starts = np.linspace(0, n, PROBE_CHUNKS, endpoint=False).astype(np.int64)
    out = []
    for a in sorted(set(starts.tolist())):  # (np.unique imports numpy.ma: ~30 ms in a fresh process)
        b = int(np.searchsorted(costs, costs[a] + PROBE_BYTES, side="right")) - 1
        count = max(1, min(b - a, max_items, n - a))
        out.append((a, count))
        if a == 0 and count >= n:
            break
    return out


def apply_profile(plan: MiniBlockValues, num_items: int, opts: EncodingOptions) -> MiniBlockValues:
    """``plan``, its chunks wrapped in the profile's General compression when the probe says it pays."""
    profile = PROFILES[opts.profile]
    if profile.scheme is None or opts.compression is not None or num_items == 0:
        return plan
    costs = plan.costs() if callable(plan.costs) else plan.costs
    if profile.bytes_per_us:
        return _cheapest(plan, costs, profile.bytes_per_us * PRICED_COLUMNS / (opts.columns or PRICED_COLUMNS))
    small = profile.small if int(costs[-1]) <= SMALL_PAGE_BYTES else None
    if plan.runs and small is None:
        return replace(plan, costs=costs)  # (a take searches the runs; lz4 would have it inflate a chunk a row)
    compression = buffer_compression(*small) if small else buffer_compression(profile.scheme, profile.level)
    raw, packed = 0, GENERAL_OVERHEAD  # (what decides a small page; nothing for a large one)
    for a, count in _probe_chunks(costs, plan.max_chunk_items):
        first = plan.chunk(a, count)[1][0]
        raw += first.nbytes
        packed += len(compress_buffer(compression, first))
    if not raw or packed > (1.0 - profile.min_saving) * raw:
        return replace(plan, costs=costs)
    return _wrapped(plan, costs, compression, plan.size * packed // raw)


def _wrapped(
    plan: MiniBlockValues,
    costs: np.ndarray,
    compression: pb.BufferCompression,
    size: int,
    chunk_target: int | None = None,
) -> MiniBlockValues:
    return replace(
        plan,
        costs=costs,
        chunk=with_general(plan.chunk, compression),
        bulk=general_bulk(plan.bulk, compression),
        size=size,
        chunk_target=plan.chunk_target if chunk_target is None else chunk_target,
    )


def _cut(costs: np.ndarray, a: int, end: int, target: int, max_items: int) -> list[tuple[int, int]]:
    """Items [a, end) cut as write_miniblock cuts a page: chunks of the largest power-of-two item count
    whose bytes stay under ``target`` (less a header's CHUNK_OVERHEAD)."""
    out = []
    while a < end:
        fit = int(np.searchsorted(costs, costs[a] + target - CHUNK_OVERHEAD, side="right")) - 1 - a
        count = min(1 << (max(fit, 1).bit_length() - 1), max_items, end - a)
        out.append((a, count))
        a += count
    return out


def _options(
    plan: MiniBlockValues, costs: np.ndarray, starts: list[int], bytes_per_us: float, wrap_only: bool
) -> list[tuple[float, MiniBlockValues]]:
    """(score, plan) of each choice for ``plan``'s values: as they are (unless ``wrap_only``), lz4 in
    chunks of CHUNK_BYTES, zstd in chunks of each of ZSTD_CHUNK_BYTES; the score is the bytes per
    item plus ``bytes_per_us`` per microsecond a take pays to inflate a chunk (INFLATE_US), measured on
    the CHUNK_BYTES chunks at ``starts``, each cut again as smaller chunks would be."""
    n, most = len(costs) - 1, plan.max_chunk_items
    regions = sorted({(a, a + _cut(costs, a, n, CHUNK_BYTES, most)[0][1]) for a in starts})
    items = sum(b - a for a, b in regions)
    firsts = {
        target: [plan.chunk(a, count)[1][0] for a, b in regions for a, count in _cut(costs, a, b, target, most)]
        for target in {CHUNK_BYTES, *ZSTD_CHUNK_BYTES}
    }
    raw = sum(f.nbytes for f in firsts[CHUNK_BYTES])
    out = [] if wrap_only else [((raw + CHUNK_OVERHEAD * len(firsts[CHUNK_BYTES])) / items, plan)]
    zstd = [("zstd", level, t) for t in ZSTD_CHUNK_BYTES for level in (ZSTD_LEVEL, ZSTD_FAST_LEVEL)]
    for scheme, level, target in [("lz4", None, CHUNK_BYTES), *zstd]:
        compression = buffer_compression(scheme, level)
        chunks = firsts[target]
        inflated = sum(f.nbytes for f in chunks)
        packed = sum(len(compress_buffer(compression, f)) for f in chunks)
        base, per_kib = INFLATE_US[scheme]
        us = base + per_kib * inflated / len(chunks) / 1024
        score = (packed + CHUNK_OVERHEAD * len(chunks)) / items + bytes_per_us * us
        size = max(1, plan.size * (packed + GENERAL_OVERHEAD) // max(inflated, 1))
        out.append((score, _wrapped(plan, costs, compression, size, chunk_target=target)))
    return out


def _cheapest(plan: MiniBlockValues, costs: np.ndarray, bytes_per_us: float) -> MiniBlockValues:
    """Compact: the page as planned or wrapped in lz4 or zstd (level ZSTD_LEVEL) in chunks of some size,
    or its ``flat`` alternative wrapped in zstd (sorted keys: zstd finds more in their flat bytes than
    in their bit-packed ones), whichever has the best score (``_options``)."""
    starts = sorted({a for a, _ in _probe_chunks(costs, plan.max_chunk_items)})
    options = _options(replace(plan, costs=costs), costs, starts, bytes_per_us, wrap_only=False)
    if plan.flat is not None:
        options += _options(replace(plan.flat, costs=costs), costs, starts, bytes_per_us, wrap_only=True)
    return min(options, key=lambda o: o[0])[1]
