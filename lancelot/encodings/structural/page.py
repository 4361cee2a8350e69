"""What every 2.1+ page reader shares: the plan/fetch/decode protocol and row selection.

A page reader answers for some of a page's rows (``rows``: sorted, unique,
page-local).  It first names the buffers of its search cache (loaded once per
file, kept in ``FieldContext.cache``), then plans the byte ranges the rows
need, and finally decodes the fetched bytes into ``PageLevels``: repetition
and definition levels plus the visible values of exactly those rows, in order.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from lancelot.encodings.compression.segments import ranges_index
from lancelot.encodings.structural.paths import ColumnPath
from lancelot.encodings.structural.repdef import LevelMeaning, row_starts, visible_mask
from lancelot.errors import CorruptFileError
from lancelot.format.pb import file2_pb2
from lancelot.io.source import Range as Range  # (offset, length) byte ranges, as ByteSource.read_ranges takes them
from lancelot.util.arrays import from_numpy

if TYPE_CHECKING:
    from lancelot.encodings.compression.block import DataBlock


@dataclass
class PageLevels:
    """Decoded levels and values of whole rows of one page."""

    meaning: LevelMeaning
    rep: np.ndarray | None  # uint16 per level, None when there are no lists
    dfn: np.ndarray | None  # uint16 per level, None when nothing is null or empty
    num_levels: int
    values: pa.Array  # one value per visible level, validity not applied


@dataclass
class PageInfo:
    """Where a page sits: its column, index and buffers."""

    column: int  # the file's column index (for error messages)
    index: int  # page index within the column
    path: ColumnPath
    meta: file2_pb2.ColumnMetadata.Page

    @property
    def num_rows(self) -> int:
        return int(self.meta.length)

    def buffer(self, i: int) -> Range:
        meta = self.meta
        offsets = meta.buffer_offsets
        if i >= len(offsets):
            raise CorruptFileError(f"page has {len(offsets)} buffers, layout needs buffer {i}")
        return offsets[i], meta.buffer_sizes[i]

    @property
    def num_buffers(self) -> int:
        return len(self.meta.buffer_offsets)


class PageReader(ABC):
    """Reads rows of one page of one layout."""

    meaning: LevelMeaning  # the page's rep/def layers (set by each layout's reader)

    def __init__(self, info: PageInfo, cache: dict[Any, Any]) -> None:
        self.info = info
        self.cache = cache

    @property
    def cache_key(self) -> tuple[str, int, int]:
        return ("structural", self.info.column, self.info.index)

    def search_ranges(self) -> list[Range]:
        """Buffers of the search cache, if it is not loaded yet."""
        return []

    def load_search(self, bufs: list[memoryview]) -> None:
        """Decode the search cache from the buffers named by ``search_ranges``."""
        return None

    def load_for(self, rows: np.ndarray, bufs: list[memoryview]) -> None:
        """``load_search`` for a read of ``rows`` (the page may plan them as it loads)."""
        self.load_search(bufs)

    @abstractmethod
    def plan(self, rows: np.ndarray) -> list[Range]:
        """The byte ranges needed for ``rows``."""

    @abstractmethod
    def decode(self, rows: np.ndarray, bufs: list[memoryview]) -> PageLevels:
        """Levels and values of ``rows`` from the fetched ranges (same order as ``plan``)."""

    def finish(self, levels: PageLevels) -> tuple[PageLevels, list[Range] | None]:
        """A last fetch round (blob layout only): more ranges, then ``complete``; None = no round."""
        return levels, None

    def complete(self, levels: PageLevels, bufs: list[memoryview]) -> PageLevels:
        return levels


def ranges_to_index(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(lo[i], hi[i])`` for all i, vectorized."""
    lo = np.asarray(lo, dtype=np.int64)
    return ranges_index(lo, np.asarray(hi, dtype=np.int64) - lo)


def is_contiguous(rows: np.ndarray) -> bool:
    return len(rows) == 0 or int(rows[-1]) - int(rows[0]) + 1 == len(rows)


def select_rows(span: PageLevels, span_first_row: int, rows: np.ndarray) -> PageLevels:
    """Rows ``rows`` (page-local, sorted) out of levels that start at row ``span_first_row``.

    The span must begin at a row start and contain every requested row whole.
    """
    meaning = span.meaning
    n = span.num_levels
    if meaning.max_rep == 0:  # a level per row, every level owns a value: no page-sized index
        return _select_flat(span, rows - span_first_row)
    starts = row_starts(meaning, span.rep, n)
    local = rows - span_first_row
    if len(local) and (local[0] < 0 or local[-1] >= len(starts)):
        raise CorruptFileError(f"rows {rows[0]}..{rows[-1]} are not in the decoded span of {len(starts)} rows")
    bounds = np.append(starts, n)
    lo, hi = bounds[local], bounds[local + 1]
    vis = visible_mask(meaning, span.dfn, n)
    if vis is None:
        vis_before = None
    else:
        vis_before = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(vis, out=vis_before[1:])
    if vis_before is not None and int(vis_before[-1]) != len(span.values):
        raise CorruptFileError(f"{int(vis_before[-1])} visible items but {len(span.values)} values")
    if vis_before is None and len(span.values) != n:
        raise CorruptFileError(f"{n} items but {len(span.values)} values")
    if len(local) == len(starts) and (len(local) == 0 or local[0] == 0):
        return span
    if is_contiguous(local):
        a = int(lo[0]) if len(lo) else 0
        b = int(hi[-1]) if len(hi) else 0
        va, vb = (a, b) if vis_before is None else (int(vis_before[a]), int(vis_before[b]))
        return PageLevels(meaning, _cut(span.rep, a, b), _cut(span.dfn, a, b), b - a, span.values.slice(va, vb - va))
    idx = ranges_to_index(lo, hi)
    if vis_before is None:
        vidx = idx
    else:
        vidx = ranges_to_index(vis_before[lo], vis_before[hi])
    values = span.values.take(from_numpy(vidx))
    rep = None if span.rep is None else span.rep[idx]
    dfn = None if span.dfn is None else span.dfn[idx]
    return PageLevels(meaning, rep, dfn, len(idx), values)


def _select_flat(span: PageLevels, local: np.ndarray) -> PageLevels:
    """``select_rows`` without repetition: costs follow the rows asked, not the page."""
    n = span.num_levels
    if len(local) and (local[0] < 0 or local[-1] >= n):
        raise CorruptFileError(f"rows {local[0]}..{local[-1]} are not in the decoded span of {n} rows")
    if len(span.values) != n:
        raise CorruptFileError(f"{n} items but {len(span.values)} values")
    if len(local) == n:
        return span
    if is_contiguous(local):
        a = int(local[0]) if len(local) else 0
        b = a + len(local)
        return PageLevels(span.meaning, None, _cut(span.dfn, a, b), b - a, span.values.slice(a, b - a))
    dfn = None if span.dfn is None else span.dfn[local]
    return PageLevels(span.meaning, None, dfn, len(local), span.values.take(from_numpy(local)))


def _cut(levels: np.ndarray | None, a: int, b: int) -> np.ndarray | None:
    return None if levels is None else levels[a:b]


def as_u8(buf: np.ndarray | bytes | memoryview) -> NDArray[np.uint8]:
    """A fetched buffer as a uint8 numpy array (no copy)."""
    if isinstance(buf, np.ndarray):
        return buf.view(np.uint8).reshape(-1)
    return np.frombuffer(buf, dtype=np.uint8)


def levels_u16(block: DataBlock, count: int, what: str) -> NDArray[np.uint16]:
    """A decoded level block (16-bit values) as ``count`` uint16s."""
    from lancelot.encodings.compression.block import ConstantBlock, FixedWidthBlock

    if isinstance(block, ConstantBlock):
        v = int.from_bytes(block.value or b"\0\0", "little")
        return np.full(count, v, dtype=np.uint16)
    if not isinstance(block, FixedWidthBlock) or block.bits_per_value not in (8, 16):
        raise CorruptFileError(f"{what} levels must decode to 16-bit values")
    width = block.bits_per_value // 8
    if len(block.data) < count * width:
        raise CorruptFileError(f"{what} levels: {len(block.data)} bytes for {count} levels")
    raw = np.ascontiguousarray(block.data[: count * width])
    return raw.view("<u2" if width == 2 else "u1").astype(np.uint16)
