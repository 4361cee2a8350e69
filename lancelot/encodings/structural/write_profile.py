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
* ``compact``: the smallest file whose takes stay within a budget (1.5x balanced's). Per
  page, the choice with the fewest bytes per value plus a price per microsecond a take pays per row
  to inflate its chunk: the page as planned, lz4 in 16 KiB chunks, or zstd level 15 or 9 (level 15
  also with its literals left raw, zstd_frames.py: they inflate 1.5-2.5x sooner), in chunks of 16,
  8, 4 or 2 KiB (the chunk is what a take inflates per row; small chunks compress less); for
  bit-packed pages also their Flat values under each of those.  A zstd chunk's time is modelled from
  its frame (zstd_frames.inflate_us), an lz4 chunk's by LZ4_INFLATE_US.  The price is the file's own
  (FilePrice): solved once, on a sample of every column, as the least at which a take of a row
  (TAKE_BASE_US a column, VARIABLE_BASE_US more for strings, more in a file of more rows:
  base_growth_us; plus inflating) stays within TAKE_BUDGET times balanced's.  Writes take about 12x
  as long as balanced (1M TPC-H lineitem rows: 2.6 s against 0.22 s; zstd level 15 on the chosen
  chunks, and probes of four chunk sizes and three zstd variants); scans pay zstd's inflation.
  (Tried and left out: zstd frames of 2-4 KiB blocks read only up to the value a take
  needs.  pylance reads them, but a frame of many blocks inflates 25-50% slower than a single block,
  so at the 2-8 KiB chunks compact picks a take gained 0-5%; the gain shows only at 16-32 KiB
  chunks, whose takes cost more anyway.  Also tried: FSST'd strings wrapped as plain strings
  instead; never chosen on TPC-H, and it slowed writes.)

A field whose metadata asks for a compression (``lance-encoding:compression``) keeps it whatever the
profile.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, NamedTuple, Protocol

import numpy as np

from lancelot.encodings.compression import zstd_frames
from lancelot.encodings.compression.general import (
    buffer_compression,
    compress_buffer,
    compress_buffers,
    general_encoding,
)
from lancelot.encodings.structural import page_pool
from lancelot.errors import LanceError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

if TYPE_CHECKING:
    from lancelot.encodings.strategy import EncodingOptions
    from lancelot.encodings.structural.write_fixed import BulkEncoder, ChunkEncoder, Compressed, MiniBlockValues

    #: a chunk already made: (its item count from item 0, the inner chunk, its first buffer compressed)
    Known = tuple[int, Compressed, np.ndarray]

#: the probe: this many chunks spread over the page, each of about this many (uncompressed) bytes
PROBE_CHUNKS = 4
PROBE_BYTES = 16 * 1024
#: what wrapping a page costs beyond its compressed chunks: the General message in the page's layout
GENERAL_OVERHEAD = 16
#: a take of a page this small inflates at most this much, whatever the scheme (so ``small`` may trade speed)
SMALL_PAGE_BYTES = 4 * 1024


#: a page's chunks are compressed in up to PIECES runs side by side when it holds two runs of PIECE_BYTES
PIECES = 4
PIECE_BYTES = 1 << 20
#: compact: chunks of this many bytes (the writer's default) for the page as planned and under lz4
CHUNK_BYTES = 16 * 1024
#: compact: zstd at this level, in chunks of each of these sizes
ZSTD_LEVEL = 15
ZSTD_CHUNK_BYTES = (16 * 1024, 8 * 1024, 4 * 1024, 2 * 1024)
#: compact: also at this level, kept where it packs a chunk size tighter than ZSTD_LEVEL (TPC-H's decimals,
#: which then also inflate sooner: supplier's acctbal in 4 KiB chunks in ~2 us against ~2.8 us)
ZSTD_FAST_LEVEL = 9
#: what a take pays to inflate one lz4 chunk, in microseconds: a part per chunk and a part per KiB inflated
#: (fitted to 10-row takes of TPC-H columns: a take inflates lz4 chunks with a Python call each); a zstd
#: chunk's cost is modelled from its frame (zstd_frames.inflate_us: a take inflates them in one kernel call)
LZ4_INFLATE_US = (1.2, 0.2)
#: a chunk's bytes besides its compressed buffer: header, padding, its word in the chunk metadata
CHUNK_OVERHEAD = 16
#: the file width ``bytes_per_us`` is given for (TPC-H lineitem's 16 columns), when no FilePrice is solved
PRICED_COLUMNS = 16
#: compact: a take may cost this many times balanced's (modelled; the goal is 1.5x measured)
TAKE_BUDGET = 1.4
#: what a balanced take pays per row and column besides inflating, and more for variable-width values (10-row
#: takes of one column of TPC-H supplier, the cheapest table per row: keys 2.0 us a row, strings 3.9-4.1;
#: customer's are 3.3 and 4.9-5.4: a larger file reads from further away; benchmarks/take_columns.py)
TAKE_BASE_US = 2.0
VARIABLE_BASE_US = 2.0
#: ... which grows with the file's rows (a take's rows lie further apart: fewer reads coalesced, colder memory):
#: this much a column per doubling beyond BASE_ROWS (TPC-H customer's first 10k, 40k and 150k rows, balanced:
#: keys 2.2, 2.9 and 3.5 us a row, names 3.9, 4.8 and 5.4)
BASE_ROWS = 10_000
BASE_US_PER_DOUBLING = 0.35
#: the prices FilePrice tries, in bytes per value per microsecond
PRICES = np.geomspace(0.01, 10.0, 151)
#: rows of each column FilePrice samples
SAMPLE_ROWS = 1 << 16


@dataclass(frozen=True)
class Profile:
    """How hard the writer tries for small pages: the General scheme tried, and the least saving kept;
    ``small``: the (scheme, level) tried instead on pages of at most SMALL_PAGE_BYTES; ``bytes_per_us``:
    when set, the page takes the choice of best score instead (``_cheapest``) at the file's price
    (FilePrice), or where there is none (a page encoded outside a file writer) at this one: in a file
    of PRICED_COLUMNS columns, a microsecond more per row taken must save this many bytes per value
    (in a file of n columns, PRICED_COLUMNS / n times as many)."""

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


def with_general(
    inner: ChunkEncoder,
    compression: pb.BufferCompression,
    raw_literals: bool = False,
    known: Known | None = None,
) -> ChunkEncoder:
    """General compression of the first buffer of every chunk ``inner`` makes (whose encoding is the
    same for every chunk: its General wrapper is made once; ``raw_literals``: zstd_frames.py;
    ``known``: a chunk and its compressed first buffer already made, as in ``general_bulk``)."""
    made: list[pb.CompressiveEncoding] = []

    def chunk(a: int, count: int) -> Compressed:
        if known is not None and a == 0 and count == known[0]:
            (enc, bufs), packed = known[1], known[2]
        else:
            (enc, bufs), packed = inner(a, count), None
        if not made:
            made.append(general_encoding(compression, enc))
        if packed is None:
            packed = compress_buffer(compression, bufs[0], raw_literals)
        return made[0], [packed, *bufs[1:]]

    return chunk


def general_bulk(
    inner: BulkEncoder | None,
    compression: pb.BufferCompression,
    raw_literals: bool = False,
    known: Known | None = None,
) -> BulkEncoder | None:
    """``with_general`` for a bulk encoder: each chunk's buffer compressed, the results one after another
    (``known``: the chunk of the first ``known[0]`` items and its compressed first buffer, e.g. made by the
    profile's probe of a page of one chunk: not made again)."""
    if inner is None:
        return None

    def bulk(items: np.ndarray) -> tuple[pb.CompressiveEncoding, np.ndarray, np.ndarray] | None:
        made = inner(items)
        if made is None:
            return None
        enc, data, bounds = made
        if known is not None and len(items) == 2 and int(items[0]) == 0 and int(items[1]) == known[0]:
            return general_encoding(compression, enc), known[2], np.array([0, len(known[2])], np.int64)
        return general_encoding(compression, enc), *_compress_pieces(compression, data, bounds, raw_literals)

    return bulk


def _compress_pieces(
    compression: pb.BufferCompression, data: np.ndarray, bounds: np.ndarray, raw_literals: bool
) -> tuple[np.ndarray, np.ndarray]:
    """``compress_buffers``; a page of at least two PIECE_BYTES of chunks in up to PIECES runs of chunks side by
    side (page_pool.run_all: the page's thread and idle helpers; zstd level 15 compresses ~10-40 MB/s, and a
    table's largest column's last pages are often all that is left to write), joined in order: the same bytes."""
    n = len(bounds) - 1
    pieces = min(PIECES, n, int(bounds[-1] - bounds[0]) // PIECE_BYTES)
    if pieces <= 1 or page_pool.threads() <= 1:
        return compress_buffers(compression, data, bounds, raw_literals)
    cuts = [n * k // pieces for k in range(pieces + 1)]
    parts: list[tuple[np.ndarray, np.ndarray] | None] = [None] * pieces

    def run(k: int) -> None:
        parts[k] = compress_buffers(compression, data, bounds[cuts[k] : cuts[k + 1] + 1], raw_literals)

    page_pool.run_all([partial(run, k) for k in range(pieces)])
    done = [part for part in parts if part is not None]  # (run_all raises unless every task ran)
    shifts = np.cumsum([0] + [int(b[-1]) for _, b in done[:-1]])
    out_bounds = np.concatenate([np.zeros(1, np.int64)] + [b[1:] + shift for (_, b), shift in zip(done, shifts)])
    return np.concatenate([d for d, _ in done]), out_bounds


def _probe_chunks(costs: np.ndarray, max_items: int) -> list[tuple[int, int]]:
    """Up to PROBE_CHUNKS (first item, count) spread over the page, each about PROBE_BYTES (they may
    overlap: a chunk cut short by the page's end, e.g. padded bitpacking, would flatter the probe);
    a page the first probe covers is probed once."""
    n = len(costs) - 1
    if 0 < n <= max_items and int(costs[-1] - costs[0]) <= PROBE_BYTES:
        return [(0, n)]  # (a small page: its one probe, as below without the spread)
    starts = np.linspace(0, n, PROBE_CHUNKS, endpoint=False).astype(np.int64)
    out = []
    for a in sorted(set(starts.tolist())):  # (np.unique imports numpy.ma: ~30 ms in a fresh process)
        b = int(np.searchsorted(costs, costs[a] + PROBE_BYTES, side="right")) - 1
        count = max(1, min(b - a, max_items, n - a))
        out.append((a, count))
        if a == 0 and count >= n:
            break
    return out


def apply_profile(
    plan: MiniBlockValues, num_items: int, opts: EncodingOptions, variable: bool = False
) -> MiniBlockValues:
    """``plan``, its chunks wrapped in the profile's General compression when the probe says it pays
    (``variable``: its values are variable-width, which a take pays for: FilePrice)."""
    profile = PROFILES[opts.profile]
    if profile.scheme is None or opts.compression is not None or num_items == 0:
        return plan
    costs = plan.costs() if callable(plan.costs) else plan.costs
    if profile.bytes_per_us:
        price = opts.price
        if price is not None and price.sampling is not None:
            price.sampling.append(_sample(plan, costs, variable))
            return plan.but(costs=costs)  # (a sample page: only its options matter)
        if price is not None and price.price is not None:
            return _cheapest(plan, costs, price.price)
        return _cheapest(plan, costs, profile.bytes_per_us * PRICED_COLUMNS / (opts.columns or PRICED_COLUMNS))
    small = profile.small if int(costs[-1]) <= SMALL_PAGE_BYTES else None
    if plan.runs and small is None:
        return plan.but(costs=costs)  # (a take searches the runs; lz4 would have it inflate a chunk a row)
    compression = buffer_compression(*small) if small else buffer_compression(profile.scheme, profile.level)
    raw, packed = 0, GENERAL_OVERHEAD  # (what decides a small page; nothing for a large one)
    probes = _probe_chunks(costs, plan.max_chunk_items)
    known = None
    for a, count in probes:
        probe = plan.chunk(a, count)
        first = probe[1][0]
        raw += first.nbytes
        made = compress_buffer(compression, first)
        packed += len(made)
        if len(probes) == 1 and a == 0 and count == len(costs) - 1:  # the page's one chunk, if not cut finer
            known = (count, probe, made)
    if not raw or packed > (1.0 - profile.min_saving) * raw:
        return plan.but(costs=costs)
    return _wrapped(plan, costs, compression, plan.size * packed // raw, known=known)


def _wrapped(
    plan: MiniBlockValues,
    costs: np.ndarray,
    compression: pb.BufferCompression,
    size: int,
    chunk_target: int | None = None,
    raw_literals: bool = False,
    known: Known | None = None,
) -> MiniBlockValues:
    return plan.but(
        costs=costs,
        chunk=with_general(plan.chunk, compression, raw_literals, known),
        bulk=general_bulk(plan.bulk, compression, raw_literals, known),
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


class Option(NamedTuple):
    """A choice for a page: its bytes per item, what a take pays to inflate a chunk (us), the plan."""

    bytes_per_item: float
    us: float
    plan: MiniBlockValues
    label: str = "as planned"  # e.g. "zstd 15 raw literals, 4096-byte chunks"


def _options(plan: MiniBlockValues, costs: np.ndarray, starts: list[int], wrap_only: bool) -> list[Option]:
    """Each choice for ``plan``'s values: as they are (unless ``wrap_only``), lz4 in chunks of
    CHUNK_BYTES, zstd in chunks of each of ZSTD_CHUNK_BYTES at ZSTD_LEVEL and ZSTD_FAST_LEVEL, and
    at ZSTD_LEVEL with raw literals; measured on the CHUNK_BYTES chunks at ``starts``, each cut again
    as smaller chunks would be.  A take's time: LZ4_INFLATE_US, or zstd_frames.inflate_us of the frames."""
    n, most = len(costs) - 1, plan.max_chunk_items
    regions = sorted({(a, a + _cut(costs, a, n, CHUNK_BYTES, most)[0][1]) for a in starts})
    items = sum(b - a for a, b in regions)
    firsts = {
        target: [plan.chunk(a, count)[1][0] for a, b in regions for a, count in _cut(costs, a, b, target, most)]
        for target in {CHUNK_BYTES, *ZSTD_CHUNK_BYTES}
    }
    raw = sum(f.nbytes for f in firsts[CHUNK_BYTES])
    out = [] if wrap_only else [Option((raw + CHUNK_OVERHEAD * len(firsts[CHUNK_BYTES])) / items, 0.0, plan)]
    variants = [(ZSTD_LEVEL, False), (ZSTD_FAST_LEVEL, False)]
    if zstd_frames.raw_literals_available():  # (level 9's frames with raw literals: never the best on TPC-H)
        variants.append((ZSTD_LEVEL, True))
    zstd = [("zstd", level, t, lit) for t in ZSTD_CHUNK_BYTES for level, lit in variants]
    for scheme, level, target, lit in [("lz4", None, CHUNK_BYTES, False), *zstd]:
        compression = buffer_compression(scheme, level)
        chunks = firsts[target]
        inflated = sum(f.nbytes for f in chunks)
        frames = [compress_buffer(compression, f, lit) for f in chunks]
        packed = sum(len(f) for f in frames)
        if scheme == "zstd":
            each = [zstd_frames.inflate_us(f[8:].tobytes(), c.nbytes) for f, c in zip(frames, chunks)]
            us = sum(each, 0.0) / len(chunks)
        else:
            us = LZ4_INFLATE_US[0] + LZ4_INFLATE_US[1] * inflated / len(chunks) / 1024
        size = max(1, plan.size * (packed + GENERAL_OVERHEAD) // max(inflated, 1))
        wrapped = _wrapped(plan, costs, compression, size, chunk_target=target, raw_literals=lit)
        label = f"{scheme}{f' {level}' if level else ''}{' raw literals' if lit else ''}, {target}-byte chunks"
        out.append(Option((packed + CHUNK_OVERHEAD * len(chunks)) / items, us, wrapped, label))
    return out


def _options_of(plan: MiniBlockValues, costs: np.ndarray) -> list[Option]:
    """Every choice for a page: ``plan`` as it is or wrapped, or its ``flat`` alternative wrapped in
    zstd (sorted keys: zstd finds more in their flat bytes than in their bit-packed ones)."""
    starts = sorted({a for a, _ in _probe_chunks(costs, plan.max_chunk_items)})
    options = _options(plan.but(costs=costs), costs, starts, wrap_only=False)
    if plan.flat is not None:
        flat = _options(plan.flat.but(costs=costs), costs, starts, wrap_only=True)
        options += [o._replace(label=f"flat values, {o.label}") for o in flat]
    return options


def _cheapest(plan: MiniBlockValues, costs: np.ndarray, bytes_per_us: float) -> MiniBlockValues:
    """Compact: the choice with the fewest bytes per item plus ``bytes_per_us`` per microsecond."""
    return min(_options_of(plan, costs), key=lambda o: o.bytes_per_item + bytes_per_us * o.us).plan


class Sample(NamedTuple):
    """A column's sample page: its choices; what a balanced take pays per row for it besides inflating
    (base_us), and to inflate (inflate_us)."""

    options: list[Option]
    base_us: float
    inflate_us: float


def _sample(plan: MiniBlockValues, costs: np.ndarray, variable: bool) -> Sample:
    """The choices for a sample page, and balanced's take cost: TAKE_BASE_US (and VARIABLE_BASE_US),
    plus inflating an lz4 chunk where balanced wraps the page (apply_profile's rule: lz4 saves its
    min_saving, not runs, not a small page)."""
    options = _options_of(plan, costs)
    plain, lz4 = options[0], options[1]
    saves = lz4.bytes_per_item <= (1.0 - PROFILES["balanced"].min_saving) * plain.bytes_per_item
    wraps = not plan.runs and int(costs[-1]) > SMALL_PAGE_BYTES and saves
    return Sample(options, TAKE_BASE_US + (VARIABLE_BASE_US if variable else 0.0), lz4.us if wraps else 0.0)


def base_growth_us(rows: int) -> float:
    """What a balanced take pays per row and column more in a file of ``rows`` than in one of BASE_ROWS."""
    return BASE_US_PER_DOUBLING * math.log2(rows / BASE_ROWS) if rows > BASE_ROWS else 0.0


def solve_price(samples: list[Sample], budget: float | None = None) -> float | None:
    """The least of PRICES at which the columns' choices keep a take (a row of every sampled column)
    within ``budget`` (TAKE_BUDGET) times balanced's modelled time; the largest if none does; None
    without samples."""
    if not samples:
        return None
    budget = TAKE_BUDGET if budget is None else budget
    limit = budget * sum(s.base_us + s.inflate_us for s in samples) - sum(s.base_us for s in samples)
    for price in PRICES.tolist():
        if sum(min(s.options, key=lambda o: o.bytes_per_item + price * o.us).us for s in samples) <= limit:
            return float(price)
    return float(PRICES[-1])


class SampledColumn(Protocol):
    def sample(self, rows: int) -> None:
        """Encode (and drop) a page of this column's first ``rows`` pending rows."""

    def full(self) -> bool:
        """Whether the pending rows make a page."""

    def pending_rows(self) -> int:
        """The rows written so far and not yet in pages (at the file's first page: all the rows so far)."""

    def flush(self, final: bool = True) -> None:
        """Write the pending rows as pages."""


class FilePrice:
    """The compact profile's price (bytes per value a microsecond of take time must save) for one file,
    solved once before the file's first page is written (so that compact takes stay within
    1.5x of balanced's).  A take of a row pays, per column, balanced's base cost plus inflating a chunk; the
    price is the least (the smallest file) at which the sum stays within TAKE_BUDGET times balanced's,
    on a sample page of SAMPLE_ROWS rows of every column, taken when a batch first fills a page (every
    column then holds the same rows; a small table is sampled whole, at close).  ``sampling``: where
    apply_profile records the sample pages' choices meanwhile."""

    def __init__(self) -> None:
        self.price: float | None = None
        self.sampling: list[Sample] | None = None
        self.settled = False
        self.columns: list[SampledColumn] = []
        self._lock = threading.Lock()

    def after_batch(self) -> None:
        """Once a batch is in every column: settle the price when a column's pending rows make a page
        (the columns hold the same rows now, not in the middle of a batch), and write those pages."""
        if not self.settled and any(c.full() for c in self.columns):
            self.settle()
            for column in self.columns:
                if column.full():
                    column.flush(final=False)

    def settle(self) -> None:
        """Solve the price if not yet done (the first flush of any column calls this)."""
        with self._lock:
            if self.settled:
                return
            self.settled = True
            self.sampling = []
            try:
                for column in self.columns:
                    column.sample(SAMPLE_ROWS)
                grown = base_growth_us(max((c.pending_rows() for c in self.columns), default=0))
                self.price = solve_price([s._replace(base_us=s.base_us + grown) for s in self.sampling])
            except LanceError:
                self.price = None  # (the page itself will raise, naming where)
            finally:
                self.sampling = None
