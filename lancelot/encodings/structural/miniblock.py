"""The mini-block page layout (lance.encodings21.MiniBlockLayout; encoding.md, "Mini Block Page Layout").

Page buffers: 0 = chunk metadata, 1 = the chunks, 2 = dictionary (when
``dictionary`` is set), last = repetition index (when
``repetition_index_depth`` > 0).

* Chunk metadata: one word per chunk, u16 in 2.1 and u32 when
  ``has_large_chunk`` (2.2).  The low 4 bits hold log2 of the chunk's value
  count (the last chunk takes what remains of ``num_items``), the other bits
  the chunk size in 8-byte words minus one.
* A chunk: u16 level count; u16 rep size (if rep_compression); u16 def size
  (if def_compression); one size per value buffer (u16, or u32 when
  ``has_large_chunk``); then, each padded to 8 bytes: the header, the
  repetition levels, the definition levels and the value buffers.
* Repetition index: ``depth + 1`` u64 per chunk; the first two are the rows
  that end in the chunk and the items after the chunk's last row start
  (a row that spills into the next chunk).

The search cache (chunk table, per-chunk row counts, dictionary) is decoded
once per page; a read fetches only the chunks that hold the requested rows
(one byte range per run of consecutive chunks).  Scattered or few rows of a
page without lists are read value by value where they lie
(miniblock_points.py); otherwise all fetched chunks are decoded at once
(miniblock_chunks.py) and the requested rows picked out of the concatenated
levels with index arithmetic over whole arrays.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from lancelot.encodings import compression
from lancelot.encodings.compression.segments import ranges_index
from lancelot.encodings.structural.leaf import (
    PageDictionary,
    apply_dictionary,
    check_dictionary_slots,
    indices_to_numpy,
    leaf_value_type,
    out_of_range,
    values_to_arrow,
)
from lancelot.encodings.structural.miniblock_chunks import (
    ChunkFormat,
    DecodedChunks,
    decode_chunks,
)
from lancelot.encodings.structural.miniblock_points import PointReader
from lancelot.encodings.structural.miniblock_table import (
    ChunkTable,
    ChunkTables,
    FirstChunks,
    Located,
    page_dictionary,
)
from lancelot.encodings.structural.page import PageInfo, PageLevels, PageReader, Range, as_u8, is_contiguous
from lancelot.encodings.structural.repdef import LevelMeaning, visible_mask
from lancelot.errors import CorruptFileError, LanceError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.arrays import from_numpy, to_numpy

#: reads of at most this many rows (or of scattered rows) read single values, not whole chunks
POINT_ROWS = 256
#: plans of row ranges a page keeps (a scan, or a batch stream read again, asks for the same ranges)
RANGE_PLANS = 4


def _offsets(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


class ChunkPlan(NamedTuple):
    """What a read of some rows of a page needs: their chunks, the byte ranges holding them (one per
    run of consecutive chunks), each chunk's size, its position in the fetched bytes and its values."""

    chunks: np.ndarray
    ranges: list[Range]
    size: np.ndarray
    pos: np.ndarray  # len(chunks) + 1 offsets into the fetched bytes
    items: np.ndarray
    first_row: int | None = None  # the first chunk's first row, in a page without repetition


#: (layout, level meaning, chunk format, point reader, whether it has a dictionary, repetition index depth)
_Shape = tuple[pb.MiniBlockLayout, LevelMeaning, ChunkFormat, PointReader | None, bool, int]
#: what a layout says, by the layout (kept with it: its id stays its own): the pages of files
#: written alike share their layout messages (planar/layout.py)
_SHAPES: dict[int, _Shape] = {}


def _shape(layout: pb.MiniBlockLayout) -> _Shape:
    """A mini-block layout's level meaning, chunk format and point reader (checked)."""
    meaning = LevelMeaning.of(layout.layers)
    word = 4 if layout.has_large_chunk else 2
    fmt = ChunkFormat(layout, layout.HasField("rep_compression"), layout.HasField("def_compression"), word)
    if not layout.HasField("value_compression"):
        raise CorruptFileError("mini-block layout without value compression")
    if layout.num_buffers > 64:
        raise CorruptFileError(f"mini-block chunks of {layout.num_buffers} buffers")
    points = PointReader.of(layout, fmt.word) if meaning.max_rep == 0 else None
    shape = (layout, meaning, fmt, points, layout.HasField("dictionary"), int(layout.repetition_index_depth))
    if len(_SHAPES) >= 1024:
        _SHAPES.clear()
    _SHAPES[id(layout)] = shape
    return shape


class MiniBlockPage(ChunkTables, PageReader):
    """Reads rows of a mini-block page."""

    def __init__(
        self, info: PageInfo, cache: dict[Any, Any], layout: pb.MiniBlockLayout, value_type: pa.DataType
    ) -> None:
        super().__init__(info, cache)
        self._key = self.cache_key
        self.layout = layout
        self.value_type = value_type  # the leaf type (a dictionary field keeps its dictionary type)
        shape = _SHAPES.get(id(layout))
        if shape is None or shape[0] is not layout:
            shape = _shape(layout)
        _, self.meaning, self.fmt, self.points, self._has_dictionary, self._rep_depth = shape
        self.word = self.fmt.word
        #: (rows, their ChunkPlan) of the last plan
        self._planned: tuple[np.ndarray, ChunkPlan] | None = None
        #: plans of row ranges (a scan repeats them; made on first need: a take's pages keep no dict)
        self._range_plans: dict[tuple[int, int], ChunkPlan] | None = None

    # -- search cache -------------------------------------------------------------------

    @property
    def table(self) -> ChunkTable:
        """The search cache; ``load_search`` (or ``load_first``) fills it before any plan or decode."""
        table: ChunkTable | FirstChunks | None = self.cache.get(self._key)
        if type(table) is FirstChunks:  # (a first take's: every chunk word checked and the table built now)
            table = self.cache[self._key] = self._chunk_table(table.meta, None, table.page_dictionary)
        if table is None:
            raise LanceError(
                "mini-block search cache used before load_search", column=self.info.column, page=self.info.index
            )
        return table  # type: ignore[return-value]

    def search_ranges(self) -> list[Range]:
        """Buffers 0 (chunk metadata), 2 (dictionary, when set) and the last (repetition index, when set)."""
        if self._key in self.cache:
            return []
        info = self.info
        ranges = [info.buffer(0)]
        if self._has_dictionary:
            ranges.append(info.buffer(2))
        if self._rep_depth > 0:
            ranges.append(info.buffer(info.num_buffers - 1))
        return ranges

    def load_search(self, bufs: list[memoryview]) -> None:
        if len(bufs) != 1 + self._has_dictionary + (self._rep_depth > 0):
            raise CorruptFileError(f"fetched {len(bufs)} search buffers of a mini-block page")
        meta = as_u8(bufs[0])
        dictionary = self._decode_dictionary(as_u8(bufs[1])) if self._has_dictionary else None
        rep_index = as_u8(bufs[-1]) if self._rep_depth > 0 else None
        self.cache[self._key] = self._chunk_table(meta, rep_index, dictionary)

    def load_for(self, rows: np.ndarray, bufs: list[memoryview]) -> None:
        """``load_search`` for a read of ``rows``: a fresh page's run of more than ``POINT_ROWS`` rows
        (or any run in a page without a point reader) of several chunks without repetition finds its
        chunks in one pass over the chunk words up to them and plans them, the chunk table built only if
        a later read needs it (``table``)."""
        if (
            self._rep_depth > 0
            or len(bufs) != 1 + self._has_dictionary
            or not len(rows)
            or (self.points is not None and len(rows) <= POINT_ROWS)
            or not is_contiguous(rows)
        ):
            self.load_search(bufs)
            return
        meta = as_u8(bufs[0])
        dictionary = self._decode_dictionary(as_u8(bufs[1])) if self._has_dictionary else None
        found = self._span_table(meta, int(rows[0]), int(rows[-1]) + 1)
        if found is None:
            self.cache[self._key] = self._chunk_table(meta, None, dictionary)
            return
        self.cache[self._key] = FirstChunks(meta, dictionary)
        c0, lo, row0, out = found
        size, pos = out[0, :-1], out[2]
        chunks = np.arange(c0, c0 + len(size), dtype=np.int64)
        self._planned = (rows, ChunkPlan(chunks, [(lo, int(pos[-1]))], size, pos, out[1, :-1], row0))

    @property
    def page_dictionary(self) -> PageDictionary | None:
        """The page dictionary (loaded with the search cache; its chunk table is not built for it)."""
        loaded: ChunkTable | FirstChunks = self.cache[self._key]
        return loaded.page_dictionary

    def load_first(self, bufs: list[memoryview], rows: np.ndarray) -> Located | None:
        """``load_search`` for a first take of ``rows`` (sorted, unique, few) of a page of several
        chunks without repetition: the rows' chunks found in one pass over the chunk words up to them,
        the chunk table built only if a later read needs it (``table``).  None: the page is not of that
        kind (or the kernel is not loaded yet), loaded as ``load_search`` loads it."""
        if self._rep_depth > 0 or len(bufs) != 1 + self._has_dictionary:
            self.load_search(bufs)
            return None
        meta = as_u8(bufs[0])
        dictionary = self._decode_dictionary(as_u8(bufs[1])) if self._has_dictionary else None
        found = self._first_table(meta, rows)
        loaded = FirstChunks(meta, dictionary) if found is not None else self._chunk_table(meta, None, dictionary)
        self.cache[self._key] = loaded
        return found

    def _decode_dictionary(self, buf: np.ndarray) -> PageDictionary:
        n, t = int(self.layout.num_dictionary_items), leaf_value_type(self.value_type)
        return page_dictionary(self.layout.dictionary, buf, n, t)

    # -- plan / decode ----------------------------------------------------------------

    def _last_chunks(self, first: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The last chunk each row needs: a row that is the last to start in a chunk with a
        trailer spills into the following chunks, up to the first of them without one."""
        t = self.table
        if t.plain:  # no row goes on past its chunk
            return first
        last: np.ndarray = first.copy()
        spill = (rows == t.row_ends[first] - 1) & t.trailer[first]
        if spill.any():
            last[spill] = t.stops[np.searchsorted(t.stops, first[spill] + 1)]
        return last

    def _chunks_for(self, rows: np.ndarray) -> np.ndarray:
        """The chunks holding ``rows`` (sorted unique chunk indices)."""
        t = self.table
        if is_contiguous(rows):
            if t.plain:  # (the chunks of the first and last rows and those between)
                search = t.row_ends.searchsorted
                return np.arange(int(search(int(rows[0]), "right")), int(search(int(rows[-1]), "right")) + 1)
            ends = rows[[0, -1]]
            first = np.searchsorted(t.row_ends, ends, side="right")
            last = self._last_chunks(first, ends)
            return np.arange(int(first[0]), int(last[1]) + 1, dtype=np.int64)
        first = np.searchsorted(t.row_ends, rows, side="right")
        last = self._last_chunks(first, rows)
        if np.array_equal(first, last):  # sorted: keep the first of each repeat
            keep = np.empty(len(first), dtype=bool)
            keep[0] = True
            np.not_equal(first[1:], first[:-1], out=keep[1:])
            return first[keep]
        need = np.zeros(len(t.row_starts) + 1, dtype=np.int64)
        np.add.at(need, first, 1)
        np.add.at(need, last + 1, -1)
        return np.flatnonzero(np.cumsum(need)[:-1] > 0)

    def _planned_chunks(self, rows: np.ndarray) -> ChunkPlan:
        """The chunks of ``rows`` and their byte ranges (one per run of consecutive chunks),
        remembered from ``plan`` for the same rows array, and for the last few row ranges."""
        planned = self._planned
        if planned is not None and planned[0] is rows:
            return planned[1]
        key = (int(rows[0]), len(rows)) if is_contiguous(rows) else None
        plans = self._range_plans
        plan = plans.get(key) if key is not None and plans is not None else None
        if plan is None:
            t = self.table
            chunks = self._chunks_for(rows)
            c0, c1 = int(chunks[0]), int(chunks[-1])
            if c1 - c0 + 1 == len(chunks):  # one run of chunks (a range read): slices, one byte range
                lo = int(t.offsets[c0])
                ranges = [(lo, int(t.offsets[c1]) + int(t.sizes[c1]) - lo)]
                size, items = t.sizes[c0 : c1 + 1].copy(), t.items[c0 : c1 + 1].copy()
            else:
                a, b = _spans(chunks)
                lo_runs = t.offsets[a]
                ranges = list(zip(lo_runs.tolist(), (t.offsets[b] + t.sizes[b] - lo_runs).tolist()))
                size, items = t.sizes[chunks], t.items[chunks]
            plan = ChunkPlan(chunks, ranges, size, _offsets(size), items, int(t.first_row[c0]) if t.plain else None)
            if key is not None:
                if plans is None or len(plans) >= RANGE_PLANS:
                    plans = self._range_plans = {}
                plans[key] = plan
        self._planned = (rows, plan)
        return plan

    def plan(self, rows: np.ndarray) -> list[Range]:
        if len(rows) == 0:
            return []
        return self._planned_chunks(rows).ranges

    def decode(self, rows: np.ndarray, bufs: list[memoryview]) -> PageLevels:
        if len(rows) == 0:
            return self._empty()
        plan = self._planned_chunks(rows)
        chunks, ranges, size, pos, items = plan.chunks, plan.ranges, plan.size, plan.pos, plan.items
        if len(bufs) != len(ranges):
            raise CorruptFileError(f"fetched {len(bufs)} chunk runs, planned {len(ranges)}")
        data = as_u8(bufs[0]) if len(bufs) == 1 else np.concatenate([as_u8(b) for b in bufs])
        if len(data) != int(pos[-1]):
            raise CorruptFileError(f"fetched {len(data)} bytes of chunks, planned {int(pos[-1])}")
        if self.points is not None and (len(rows) <= POINT_ROWS or not is_contiguous(rows)):
            return self._decode_points(self.points, rows, chunks, data, pos[:-1], size)
        loaded = self.page_dictionary
        if loaded is None:
            dec = decode_chunks(self.fmt, data, pos[:-1], size, items, self._to_arrow)
            return self._select(rows, plan, dec)
        # a dictionary page: select the rows' indices first, then look up only those (looking up
        # whole chunks first made a 1-row read hold every value of its chunks)
        dictionary = loaded.arrow
        dec = decode_chunks(self.fmt, data, pos[:-1], size, items, _indices)
        idx = to_numpy(dec.values)
        bad = out_of_range(idx, len(dictionary))
        if bad is not None:
            vis = visible_mask(self.meaning, dec.dfn, len(dec.dfn) if dec.dfn is not None else 0)
            check_dictionary_slots(
                from_numpy(idx, mask=bad),
                None if dec.dfn is None else (dec.dfn == 0) if vis is None else (dec.dfn[vis] == 0),
            )
        sel = self._select(rows, plan, dec)
        values = apply_dictionary(to_numpy(sel.values), dictionary, self.value_type)
        return PageLevels(sel.meaning, sel.rep, sel.dfn, sel.num_levels, values)

    def _decode_points(
        self,
        points: PointReader,
        rows: np.ndarray,
        chunks: np.ndarray,
        data: np.ndarray,
        pos: np.ndarray,
        size: np.ndarray,
    ) -> PageLevels:
        """Scattered rows of a page without lists: read each row's value where it lies (miniblock_points.py)."""
        t = self.table
        chunk_of = np.searchsorted(t.row_ends, rows, side="right")
        k_of = np.searchsorted(chunks, chunk_of)
        idx = rows - t.first_row[chunk_of]
        dfn, block = points.read(data, pos, size, t.items[chunks], k_of, idx)
        values = self._to_arrow(block)
        if len(values) != len(rows):
            raise CorruptFileError(f"decoded {len(values)} values, expected {len(rows)}")
        if t.dictionary is not None:
            check_dictionary_slots(values, None if dfn is None else dfn == 0)
        return PageLevels(self.meaning, None, dfn, len(rows), values)

    def _to_arrow(self, block: compression.DataBlock) -> pa.Array:
        loaded = self.page_dictionary
        if loaded is not None:
            dictionary = loaded.arrow
            return apply_dictionary(indices_to_numpy(block), dictionary, self.value_type)
        return values_to_arrow(block, self.value_type)

    def _empty(self) -> PageLevels:
        return PageLevels(self.meaning, None, None, 0, pa.nulls(0, self.value_type))

    def _select(self, rows: np.ndarray, plan: ChunkPlan, dec: DecodedChunks) -> PageLevels:
        """The levels and values of ``rows`` out of the decoded chunks."""
        chunks = plan.chunks
        if plan.first_row is not None and is_contiguous(rows):
            # no repetition, a run of rows: the chunks' levels are their rows, from the first chunk's first row
            n = int(dec.num_levels.sum())
            a = int(rows[0]) - plan.first_row
            b = a + len(rows)
            if a == 0 and b == n:
                return PageLevels(self.meaning, dec.rep, dec.dfn, n, dec.values)
            if a < 0 or b > n:
                raise CorruptFileError(f"rows {a}..{b} are not in the {n} decoded levels")
            return PageLevels(self.meaning, _cut(dec.rep, a, b), _cut(dec.dfn, a, b), b - a, dec.values.slice(a, b - a))
        t = self.table
        level_base = _offsets(dec.num_levels)
        n = int(level_base[-1])
        if self.meaning.max_rep == 0 and len(rows) == n and int(rows[0]) == int(t.first_row[chunks[0]]):
            lo, hi = level_base[:1], level_base[-1:]  # every row of the chunks (contiguous: n rows from the first)
        elif self.meaning.max_rep == 0:  # one level per row
            contiguous = is_contiguous(rows)
            ends = rows[[0, -1]] if contiguous else rows
            k = np.searchsorted(chunks, np.searchsorted(t.row_ends, ends, side="right"))
            lo = level_base[k] + ends - t.first_row[chunks[k]]
            hi = lo + 1
            if contiguous:
                lo, hi = lo[:1], hi[1:]
        else:
            if dec.rep is None:
                raise CorruptFileError("a mini-block page with lists has no repetition levels")
            lo, hi = self._row_levels(rows, chunks, dec.rep, level_base)
        vis = visible_mask(self.meaning, dec.dfn, n)
        if vis is None:
            vis_before = None
        else:
            vis_before = _offsets(vis)
            per_chunk = np.diff(vis_before[level_base])
            if np.any(per_chunk != t.items[chunks]):
                raise CorruptFileError("a mini-block chunk holds a different number of visible levels and values")
        if len(lo) == 1 or is_contiguous_ranges(lo, hi):
            a, b = int(lo[0]), int(hi[-1])
            if a == 0 and b == n:
                return PageLevels(self.meaning, dec.rep, dec.dfn, n, dec.values)
            va, vb = (a, b) if vis_before is None else (int(vis_before[a]), int(vis_before[b]))
            return PageLevels(
                self.meaning, _cut(dec.rep, a, b), _cut(dec.dfn, a, b), b - a, dec.values.slice(va, vb - va)
            )
        idx = ranges_index(lo, hi - lo)
        vidx = idx if vis_before is None else ranges_index(vis_before[lo], vis_before[hi] - vis_before[lo])
        values = dec.values.take(from_numpy(vidx))
        rep = None if dec.rep is None else dec.rep[idx]
        dfn = None if dec.dfn is None else dec.dfn[idx]
        return PageLevels(self.meaning, rep, dfn, len(idx), values)

    def _row_levels(
        self, rows: np.ndarray, chunks: np.ndarray, rep: np.ndarray, level_base: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Level bounds [lo, hi) of each row in the concatenated levels of ``chunks``."""
        t = self.table
        n = int(level_base[-1])
        starts = np.flatnonzero(rep == self.meaning.max_rep)
        k_of = np.searchsorted(level_base[1:], starts, side="right")
        per_chunk = np.bincount(k_of, minlength=len(chunks))
        if np.any(per_chunk != t.row_starts[chunks]):
            raise CorruptFileError("mini-block chunks start a different number of rows than the repetition index says")
        rank = np.arange(len(starts)) - _offsets(per_chunk)[k_of]
        row_id = t.first_row[chunks][k_of] + rank
        nxt = np.append(starts[1:], n)
        end = np.where(t.trailer[chunks][k_of], nxt, np.minimum(nxt, level_base[k_of + 1]))
        j = np.searchsorted(row_id, rows)
        if np.any(j >= len(row_id)) or np.any(row_id[np.minimum(j, len(row_id) - 1)] != rows):
            raise CorruptFileError("rows are missing from the decoded mini-block chunks")
        return starts[j], end[j]


def _indices(block: compression.DataBlock) -> pa.Array:
    """A chunk's dictionary indices as an int64 array (looked up after the rows are selected)."""
    return from_numpy(indices_to_numpy(block), pa.int64())


def _spans(chunks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First and last chunk of each run of consecutive chunks."""
    if len(chunks) == 1 or int(chunks[-1]) - int(chunks[0]) + 1 == len(chunks):
        return chunks[:1], chunks[-1:]
    brk = np.flatnonzero(np.diff(chunks) != 1) + 1
    first = np.concatenate([chunks[:1], chunks[brk]])
    last = np.concatenate([chunks[brk - 1], chunks[-1:]])
    return first, last


def is_contiguous_ranges(lo: np.ndarray, hi: np.ndarray) -> bool:
    """Whether the ranges [lo[i], hi[i]) follow each other without gaps."""
    return bool(np.array_equal(lo[1:], hi[:-1]))


def _cut(levels: np.ndarray | None, a: int, b: int) -> np.ndarray | None:
    return None if levels is None else levels[a:b]
