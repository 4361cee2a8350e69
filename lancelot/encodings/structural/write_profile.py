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
  (25 rows) under Parquet's size;
* ``compact``: zstd level 15, when the probe shrinks by at least 5%: the smallest files (TPC-H at about
  Parquet-with-zstd's size), writes about 6x as slow as balanced (zstd inflates as fast at any
  level), takes a bit slower (a chunk is inflated per row asked).

A field whose metadata asks for a compression (``lance-encoding:compression``) keeps it whatever the
profile.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from lancelot.encodings.compression.general import buffer_compression, compress_buffer, general_encoding
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


@dataclass(frozen=True)
class Profile:
    """How hard the writer tries for small pages: the General scheme tried, and the least saving kept;
    ``small``: the (scheme, level) tried instead on pages of at most SMALL_PAGE_BYTES."""

    scheme: str | None
    level: int | None = None
    min_saving: float = 0.0
    small: tuple[str, int | None] | None = None


PROFILES = {
    "fast": Profile(None),
    "balanced": Profile("lz4", None, 0.25, small=("zstd", 3)),
    "compact": Profile("zstd", 15, 0.05),
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
        parts = [compress_buffer(compression, data[a:b]) for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())]
        out = np.zeros(len(parts) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, parts), np.int64, len(parts)), out=out[1:])
        return general_encoding(compression, enc), np.concatenate(parts), out

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
    small = profile.small if int(costs[-1]) <= SMALL_PAGE_BYTES else None
    compression = buffer_compression(*small) if small else buffer_compression(profile.scheme, profile.level)
    raw, packed = 0, GENERAL_OVERHEAD  # (what decides a small page; nothing for a large one)
    for a, count in _probe_chunks(costs, plan.max_chunk_items):
        first = plan.chunk(a, count)[1][0]
        raw += first.nbytes
        packed += len(compress_buffer(compression, first))
    if not raw or packed > (1.0 - profile.min_saving) * raw:
        return replace(plan, costs=costs)
    return replace(
        plan,
        costs=costs,
        chunk=with_general(plan.chunk, compression),
        bulk=general_bulk(plan.bulk, compression),
        size=plan.size * packed // raw,
    )
