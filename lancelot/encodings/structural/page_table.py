"""The pages of one leaf column of a 2.1+ field: its page table (the field rows each page holds) and
the reader of each page, made on first need by its PageLayout variant (encodings_v2_1.proto).

A column holds one leaf with the levels of the whole path above it (paths.py); ``ColumnReader``
maps field rows to page-local rows and turns a page's decoded levels into the path's array
(repdef.py).
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate
from typing import Any

import numpy as np
import pyarrow as pa

from lancelot.encodings.base import ColumnInfo, FieldContext
from lancelot.encodings.planar import read_page_layout
from lancelot.encodings.planar.binary import CodedOffsetsPage, coded_offsets
from lancelot.encodings.planar.sparse import SparsePlanes
from lancelot.encodings.planar.sparse_lists import sparse_reader
from lancelot.encodings.structural.blob import BlobPage
from lancelot.encodings.structural.constant import ConstantPage
from lancelot.encodings.structural.fullzip import FullZipPage
from lancelot.encodings.structural.leaf import with_validity
from lancelot.encodings.structural.miniblock import MiniBlockPage
from lancelot.encodings.structural.page import PageInfo, PageLevels, PageReader, Range, is_contiguous
from lancelot.encodings.structural.paths import ColumnPath
from lancelot.encodings.structural.repdef import LevelMeaning, check_levels, unravel
from lancelot.encodings.structural.rows import row_range
from lancelot.errors import CorruptFileError, LanceError, UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

#: per PageLayout (the pages of files written alike share theirs: planar/layout.py), the layout, its
#: variant and, for a mini-block page, whether its strings' offsets are 2.3-coded
_KINDS: dict[int, tuple[pb.PageLayout, str | None, bool]] = {}
MAX_KNOWN = 1024


def _kind(layout: pb.PageLayout) -> tuple[str | None, bool]:
    """``layout``'s variant and whether it is a mini-block page of 2.3-coded string offsets (once per layout)."""
    known = _KINDS.get(id(layout))
    if known is None or known[0] is not layout:
        kind = layout.WhichOneof("layout")
        coded = kind == "mini_block_layout" and coded_offsets(layout.mini_block_layout) is not None
        if len(_KINDS) >= MAX_KNOWN:
            _KINDS.clear()
        known = _KINDS[id(layout)] = (layout, kind, coded)
    return known[1], known[2]


def make_page_reader(
    info: PageInfo, cache: dict[Any, Any], layout: pb.PageLayout | SparsePlanes, leaf_type: pa.DataType
) -> PageReader:
    """The reader for one page, by its PageLayout variant."""
    if isinstance(layout, SparsePlanes):  # 2.3 sparse planar pages (planar/sparse.py, sparse_lists.py)
        return sparse_reader(info, cache, layout, leaf_type)
    kind, coded = _kind(layout)
    if kind == "mini_block_layout":
        if coded:  # 2.3 strings (planar/binary.py)
            return CodedOffsetsPage(info, cache, layout.mini_block_layout, leaf_type)
        return MiniBlockPage(info, cache, layout.mini_block_layout, leaf_type)
    if kind == "full_zip_layout":
        return FullZipPage(info, cache, layout.full_zip_layout, leaf_type)
    if kind == "constant_layout":
        return ConstantPage(info, cache, layout.constant_layout, leaf_type)
    if kind == "blob_layout":
        return BlobPage(info, cache, layout.blob_layout, leaf_type, make_page_reader)
    raise UnsupportedEncodingError(f"page layout {kind!r} is not supported")


class NullRows(PageLevels):
    """``count`` field rows that are null as a whole: one null level each in the page's single
    nullable-item layer (``ColumnReader.to_array`` turns them into nulls of the path's type)."""

    def __init__(self, meaning: LevelMeaning, count: int) -> None:
        super().__init__(meaning, None, np.ones(count, dtype=np.uint16), count, pa.nulls(0))

    @property
    def count(self) -> int:
        return self.num_levels


class NullRowsPage(PageReader):
    """A constant page of one nullable-item layer under a nested path: every row of it is null.

    pylance 14 writes all-null batches of a top-level fixed-size list of structs this way at 2.3:
    one layer instead of one per level (page rows counting the list's items, or its field rows).
    """

    def __init__(self, info: PageInfo, cache: dict[Any, Any], scale: int) -> None:
        super().__init__(info, cache)
        self.scale = scale
        self.meaning = LevelMeaning.of([pb.REPDEF_NULLABLE_ITEM])

    @staticmethod
    def stands_for(layout: pb.PageLayout | SparsePlanes, path: ColumnPath) -> bool:
        return (
            isinstance(layout, pb.PageLayout)
            and layout.WhichOneof("layout") == "constant_layout"
            and bool(path.steps)
            and list(layout.constant_layout.layers) == [pb.REPDEF_NULLABLE_ITEM]
            and not layout.constant_layout.HasField("inline_value")
        )

    def plan(self, rows: np.ndarray) -> list[Range]:
        return []

    def decode(self, rows: np.ndarray, bufs: list[memoryview]) -> NullRows:
        if len(rows) % self.scale:
            raise CorruptFileError("a read of part of a fixed-size list")
        return NullRows(self.meaning, len(rows) // self.scale)


#: the first row of a column of one page (shared: never written)
_FIRST_PAGE = np.zeros(1, dtype=np.int64)
_FIRST_PAGE.flags.writeable = False


#: the page table of a column metadata message, per message (files written alike share theirs:
#: format/container.py): (message, file rows, row scale, page ends, page firsts), read-only; of columns of
#: at most KEPT_MAX_PAGES pages (small messages: a file whose metadata is not shared keeps none alive long)
KEPT_MAX_PAGES = 64
#: the PageInfo and layout of the pages of a column metadata message whose encodings are direct, per
#: message (one column path and column index: a field's): (message, path, column, {page: (info, layout)})
_PAGES: dict[int, tuple[Any, ColumnPath, int, dict[int, tuple[PageInfo, pb.PageLayout | SparsePlanes]]]] = {}
_TABLES: dict[int, tuple[Any, int, int, np.ndarray, np.ndarray]] = {}


class ColumnReader:
    """The pages of one leaf column."""

    def __init__(self, ctx: FieldContext, col: ColumnInfo, path: ColumnPath) -> None:
        self.ctx = ctx
        self.col = col
        self.path = path
        self._pages: dict[int, PageReader] = {}
        self.scale = path.row_scale
        self.page_ends: np.ndarray
        self.page_firsts: np.ndarray
        whole = col.meta
        known = _TABLES.get(id(whole))
        if known is None or known[0] is not whole or known[1] != ctx.num_rows or known[2] != self.scale:
            if not self._page_table(ctx, col) or len(self.page_ends) > KEPT_MAX_PAGES:
                return
            self.page_ends.flags.writeable = False
            if len(_TABLES) >= MAX_KNOWN:
                _TABLES.clear()
            known = _TABLES[id(whole)] = (whole, ctx.num_rows, self.scale, self.page_ends, self.page_firsts)
        self.page_ends, self.page_firsts = known[3], known[4]

    def _page_table(self, ctx: FieldContext, col: ColumnInfo) -> bool:
        """Set ``page_ends`` and ``page_firsts`` (checked against the file's rows); whether they follow
        from the column metadata alone (not from the pages' layouts: they may be kept for it)."""
        meta = col.meta.pages
        if len(meta) == 1 and int(meta[0].length) == ctx.num_rows * self.scale:  # (most columns: checked in one)
            self.page_ends = np.array([ctx.num_rows * self.scale], dtype=np.int64)
            self.page_firsts = _FIRST_PAGE
            return True
        listed = [int(p.length) for p in meta]
        if listed and max(listed) > ctx.num_rows * self.scale:  # (the sums below stay in int64)
            big = listed.index(max(listed))
            raise CorruptFileError(
                f"page of {listed[big]} rows in a file of {ctx.num_rows}",
                path=ctx.path,
                column=col.index,
                page=big,
            )
        alone = True
        if self.scale > 1 and sum(listed) != ctx.num_rows * self.scale:
            # pages of whole null rows count field rows, not fixed-size-list items
            listed = [n * self.scale if isinstance(self.page(i), NullRowsPage) else n for i, n in enumerate(listed)]
            alone = False
        ends = list(accumulate(listed))  # (Python ints: a column has few pages)
        self.page_ends = np.array(ends, dtype=np.int64)
        self.page_firsts = np.array([e - n for e, n in zip(ends, listed)], dtype=np.int64)
        total = ends[-1] if ends else 0
        if total != ctx.num_rows * self.scale:
            raise CorruptFileError(
                f"pages hold {total} rows, the file has {ctx.num_rows}", path=ctx.path, column=col.index
            )
        self.page_firsts.flags.writeable = False
        return alone

    def page(self, i: int) -> PageReader:
        r = self._pages.get(i)
        if r is None:
            try:
                info, layout = self._page_info(i)
                r = make_page_reader(info, self.ctx.cache, layout, self.path.leaf.type)
                if len(r.meaning.layers) != len(self.path.steps) + 1:
                    if not NullRowsPage.stands_for(layout, self.path):
                        raise CorruptFileError(
                            f"page has {len(r.meaning.layers)} rep/def layers, the field "
                            f"{self.ctx.field.name!r} needs {len(self.path.steps) + 1}"
                        )
                    r = NullRowsPage(info, self.ctx.cache, self.scale)
            except LanceError as e:
                raise e.at(path=self.ctx.path, column=self.col.index, page=i) from None
            self._pages[i] = r
        return r

    def _page_info(self, i: int) -> tuple[PageInfo, pb.PageLayout | SparsePlanes]:
        """Page ``i``'s PageInfo and layout (2.3 PlanarLayout pages come back as the 2.1/2.2 layout they
        stand for); kept per column metadata message when its pages' encodings are direct (``_PAGES``)."""
        whole, index = self.col.meta, self.col.index
        known = _PAGES.get(id(whole))
        if known is not None and known[0] is whole and known[1] is self.path and known[2] == index:
            found = known[3].get(i)
            if found is not None:
                return found
        meta = whole.pages[i]
        layout = read_page_layout(self.ctx.src, meta.encoding, column=index, page=i)
        if layout is None:
            raise CorruptFileError("page has no encoding")
        found = (PageInfo(index, i, self.path, meta), layout)
        if meta.encoding.WhichOneof("location") == "direct" and len(whole.pages) <= KEPT_MAX_PAGES:
            if known is None or known[0] is not whole or known[1] is not self.path or known[2] != index:
                if len(_PAGES) >= MAX_KNOWN:
                    _PAGES.clear()
                known = _PAGES[id(whole)] = (whole, self.path, index, {})
            known[3][i] = found
        return found

    def pages_of(self, rows: np.ndarray) -> list[int]:
        """The pages holding the field rows ``rows`` (sorted, unique; a field of one row per item)."""
        ends = self.page_ends
        if len(ends) == 1:
            return [0]
        if len(ends) <= 64:  # (a few pages: bisected in Python ints, cheaper than numpy's calls)
            listed = ends.tolist()
            first, last = bisect_right(listed, int(rows[0])), bisect_right(listed, int(rows[-1]))
        else:
            first, last = np.searchsorted(ends, rows[[0, -1]], side="right").tolist()
        if first == last:
            return [first]
        return np.unique(np.searchsorted(ends, rows, side="right")).tolist()  # type: ignore[no-any-return]

    def split(self, rows: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """(page index, sorted page-local rows) for the field rows ``rows`` (sorted, unique)."""
        if len(rows) == 0:
            return []
        if is_contiguous(rows):
            return self.split_range(int(rows[0]), int(rows[-1]) + 1)
        if self.scale > 1:
            rows = (rows[:, None] * self.scale + np.arange(self.scale)).reshape(-1)
        page_of = np.searchsorted(self.page_ends, rows, side="right")
        if page_of[0] == page_of[-1]:
            p = int(page_of[0])
            return [(p, rows - self.page_firsts[p])]
        out = []
        cuts = np.flatnonzero(np.diff(page_of)) + 1
        for group in np.split(np.arange(len(rows)), cuts):
            p = int(page_of[group[0]])
            out.append((p, rows[group] - self.page_firsts[p]))
        return out

    def split_range(self, start: int, stop: int) -> list[tuple[int, np.ndarray]]:
        """(page index, page-local rows) for the field rows [start, stop), cut at page boundaries."""
        if stop <= start:
            return []
        a, b = start * self.scale, stop * self.scale
        first, last = np.searchsorted(self.page_ends, [a, b - 1], side="right").tolist()
        out = []
        for p in range(first, last + 1):
            base = int(self.page_firsts[p])
            lo, hi = max(a, base), min(b, int(self.page_ends[p]))
            out.append((p, row_range(lo - base, hi - base)))
        return out

    def to_array(self, levels: PageLevels) -> pa.Array:
        """The path array of decoded page rows."""
        if isinstance(levels, NullRows):
            return pa.nulls(levels.count, self.path.steps[0].type)
        meaning, dfn = levels.meaning, levels.dfn
        if not self.path.steps and levels.rep is None and len(meaning.layers) == 1 and not meaning.max_rep:
            # a top-level leaf: its values, null where the definition level says so (``unravel``'s checks)
            if dfn is None:
                return levels.values
            if len(dfn) == levels.num_levels:
                check_levels(meaning, None, dfn)
                null = meaning.null_level(0)
                return with_validity(levels.values, None if null is None else dfn < null)
        return unravel(
            self.path,
            levels.meaning,
            levels.rep,
            levels.dfn,
            levels.num_levels,
            lambda valid: with_validity(levels.values, valid),
        )
