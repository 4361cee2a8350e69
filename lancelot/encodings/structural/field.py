"""The 2.1+ FieldReader: one top-level field, read from the leaf columns it owns.

Each column holds one leaf with the levels of the whole path above it
(paths.py; its pages: column_pages.py).  A page's search cache (kept in ``FieldContext.cache``) is loaded
in the first round of the first read that needs the page.  ``plan`` picks a
planner per read: a take or short range of a top-level primitive field whose pages allow
it goes to the whole-column point reader (column_points.py: one plan, one
fetch, one kernel call); any other read goes page by page (field_pages.py).
"""

from __future__ import annotations

from functools import partial
from typing import Any, Protocol, TypeVar

import numpy as np
import pyarrow as pa

from lancelot.encodings.base import FieldContext, FieldReader, Plan, Rows, done, execute
from lancelot.encodings.structural.column_constant import ColumnConstant
from lancelot.encodings.structural.column_fullzip_points import ColumnFullZipPoints
from lancelot.encodings.structural.column_point_groups import ColumnPointGroups
from lancelot.encodings.structural.column_points import FEW_ROWS, ColumnPoints
from lancelot.encodings.structural.field_pages import DECODE_ERRORS, PagesMixin
from lancelot.encodings.structural.miniblock import MiniBlockPage
from lancelot.encodings.structural.miniblock_table import Located, join_located
from lancelot.encodings.structural.page import PageReader, Range, is_contiguous
from lancelot.encodings.structural.page_table import ColumnReader
from lancelot.encodings.structural.paths import column_paths
from lancelot.encodings.structural.rows import row_range
from lancelot.errors import CorruptFileError, LanceError

#: takes of at most this many rows are read value by value over the whole column (column_points.py):
#: cheaper than decoding whole chunks page by page up to about this size
POINT_RANGE_ROWS = 16384
#: contiguous ranges go value by value only up to this many rows: past it, decoding the covered
#: chunks whole (miniblock_chunks.py) is faster than one point read per row
POINT_SPAN_ROWS = 1024

_Plan = TypeVar("_Plan")


class _Points(Protocol[_Plan]):
    """A whole-column point reader (column_points.py, column_point_groups.py, column_constant.py)
    and its plan type."""

    def plan(self, rows: np.ndarray) -> tuple[_Plan, list[Range]]: ...

    def decode(self, rows: np.ndarray, plan: _Plan, bufs: list[memoryview]) -> pa.Array: ...


#: the point readers of one-page mini-block columns, shared by the files written alike (a dataset's small
#: fragments): per column metadata message (one object for files of the same metadata bytes:
#: format/container.py), column, leaf type, rows and version, that message, its search ranges and per
#: their bytes the ColumnPoints built from them (read-only: its lazy parts are derived from those bytes)
MAX_SHARED = 256
SHARED_MAX_ROWS = 1 << 16  # (columns of at most this many rows and search bytes: small chunk tables
SHARED_MAX_BYTES = 1 << 16  # and dictionaries)
_SHARED: dict[tuple[Any, ...], tuple[Any, list[Range], dict[bytes, ColumnPoints]]] = {}


class _PointRead:
    """One whole-column point read in flight: its rows, the pages it touches and their search
    loads, the point plan; its bound methods are the read's decode steps (one small object per
    read instead of a closure per step: a take of many fields keeps fewer objects alive)."""

    __slots__ = ("reader", "rows", "ranged", "touched", "jobs", "points", "plan", "located")

    def __init__(
        self, reader: StructuralFieldReader, rows: np.ndarray | None, ranged: bool, touched: list[int] | None
    ) -> None:
        self.reader = reader
        self.rows = rows  # None: only load the search caches (``_column_points``)
        self.ranged = ranged
        self.touched = touched
        self.jobs: list[tuple[PageReader, list[Range]]] = []
        self.points: _Points[Any] | None = None
        self.plan: Any = None
        self.located: Located | None = None  # a first take's chunks, found while loading (``_first``)

    def fallback(self) -> Plan:
        if self.rows is None:
            return done(pa.nulls(0))
        return self.reader._fallback(self.rows, self.ranged)

    def loaded(self, bufs: list[memoryview]) -> Plan:
        """The search round's bytes: load each page's cache, then plan the data."""
        pos = 0
        try:
            first = self._first()
            if first is None:
                for page, rs in self.jobs:
                    page.load_search(bufs[pos : pos + len(rs)])
                    pos += len(rs)
            elif len(first) == 1:
                self.located = first[0][0].load_first(bufs, first[0][1])
            else:
                found = []
                for (page, local, _), (_, rs) in zip(first, self.jobs):
                    found.append(page.load_first(bufs[pos : pos + len(rs)], local))
                    pos += len(rs)
                bases = [base for _, _, base in first]
                def_ws = [page.points.def_w for page, _, _ in first]  # type: ignore[union-attr]
                self.located = join_located(self.rows, found, bases, def_ws)  # type: ignore[arg-type]
        except (LanceError, *DECODE_ERRORS):
            return self.fallback()
        jobs, self.jobs = self.jobs, []  # (done with: not kept alive through the data round)
        plan = self.planned()
        reader = self.reader
        if type(reader._points) is ColumnPoints and reader._n_pages == len(jobs) == 1 and reader._shareable:
            key = reader._shared_key()
            known = _SHARED.get(key)
            if known is None or known[0] is not reader.columns[0].col.meta:
                if len(_SHARED) >= MAX_SHARED:
                    _SHARED.clear()
                known = _SHARED[key] = (reader.columns[0].col.meta, jobs[0][1], {})
            if len(known[2]) < MAX_SHARED and sum([len(b) for b in bufs]) <= SHARED_MAX_BYTES:
                known[2][b"".join(bufs)] = reader._points
        return plan

    def _first(self) -> list[tuple[MiniBlockPage, np.ndarray, int]] | None:
        """The pages of a first take of a few rows that fall in mini-block pages (of a column not shared
        between files), the rows in each and its first row: ``MiniBlockPage.load_first`` finds their
        chunks without building the pages' chunk tables."""
        reader, rows, jobs = self.reader, self.rows, self.jobs
        if rows is None or not jobs or reader._shareable or reader._cover or len(rows) > FEW_ROWS:
            return None
        if rows.dtype != np.int64 or not rows.flags.c_contiguous:
            return None
        for page, _ in jobs:
            if type(page) is not MiniBlockPage or page.points is None:
                return None
        col = reader.columns[0]
        if len(jobs) == 1:
            page = jobs[0][0]
            base = int(col.page_firsts[page.info.index])
            return [(page, rows - base if base else rows, base)]  # type: ignore[list-item]
        split = col.split(rows)
        if [p for p, _ in split] != [page.info.index for page, _ in jobs]:
            return None  # (a page's search cache was loaded before: the general way)
        firsts = col.page_firsts
        return [(page, local, int(firsts[p])) for (page, _), (p, local) in zip(jobs, split)]  # type: ignore[misc]

    def shared(self, known: dict[bytes, ColumnPoints], bufs: list[memoryview]) -> Plan:
        """The search round's bytes of a one-page column whose point reader a file written alike
        built from the same bytes: that reader; other bytes load the page's cache as usual."""
        points = known.get(b"".join(bufs))
        if points is None:
            return self.reader._searched(self)
        reader = self.reader
        reader._points, reader._cover, reader._every = points, frozenset([0]), True
        reader._points_path = "points/ColumnPoints"
        return self.planned()

    def planned(self) -> Plan:
        if self.rows is None:
            return done(pa.nulls(0))
        reader = self.reader
        if reader._points_over(self.touched) is None:  # type: ignore[arg-type]
            return self.fallback()
        return reader._points_read(self)

    def decode(self, bufs: list[memoryview]) -> pa.Array:
        return self.reader._decode_points(self.points, self.rows, self.plan, bufs)  # type: ignore[arg-type]


class StructuralFieldReader(PagesMixin, FieldReader):
    """Reads a top-level field of a 2.1/2.2 file: a planner chosen per read, the whole-column point
    reader (column_points.py, for takes and short ranges of a primitive field) or the page by page
    one (every other read)."""

    def __init__(self, ctx: FieldContext) -> None:
        super().__init__(ctx)
        paths = column_paths(ctx.field)
        if len(paths) != len(ctx.columns):
            raise CorruptFileError(
                f"field {ctx.field.name!r} needs {len(paths)} columns, got {len(ctx.columns)}", path=ctx.path
            )
        self.columns = [ColumnReader(ctx, c, p) for c, p in zip(ctx.columns, paths)]
        col = self.columns[0]
        #: a top-level primitive field: takes and short ranges go to a whole-column point reader
        self._pointable = len(self.columns) == 1 and not col.path.steps and not col.path.blob
        self._n_pages = len(col.page_ends)  # (the first column's pages: its point reader's)
        #: that point reader (None: its pages allow none) over the column pages in ``_cover``: the
        #: pages reads touched so far, built again when a read touches another one
        self._points: _Points[Any] | None = None
        self._cover: frozenset[int] = frozenset()
        self._every = False  # whether ``_cover`` is every page of the column
        self._name: str = ctx.field.name
        self._points_path = ""  # the point planner's name (encodings/served.py)
        self._shareable = self._n_pages == 1 and self._pointable and ctx.num_rows <= SHARED_MAX_ROWS

    def plan(self, rows: Rows) -> Plan:
        """The read of ``rows``.  Search caches (chunk tables, dictionaries, repetition indexes) are
        loaded per page on first need: a first take loads those of the pages its rows fall in (one
        page's per column for one row), a later one reaching other pages every page's (the reference
        loads every page's when it opens a column)."""
        if isinstance(rows, range):
            start, stop = rows.start, rows.stop
            if stop <= start:
                return done(pa.nulls(0, self.ctx.field.type))
            whole = start == 0 and stop == self.ctx.num_rows  # every page read whole: no point reader
            if stop - start <= POINT_SPAN_ROWS and not whole and self._pointable:
                return self._point_plan(row_range(start, stop), True)
            return self._pages_plan(stop - start, lambda col: col.split_range(start, stop), True)
        n = len(rows)
        if n and self._pointable and (n <= POINT_RANGE_ROWS or not is_contiguous(rows)):
            return self._point_plan(rows, False)
        return self._pages_plan(n, lambda col: col.split(rows))

    def _fallback(self, rows: np.ndarray, ranged: bool) -> Plan:
        """The page-by-page read of ``rows`` (``ranged``: a range read, which may come back chunked)."""
        if not ranged:
            return self._pages_plan(len(rows), lambda col: col.split(rows))
        start, stop = int(rows[0]), int(rows[-1]) + 1
        return self._pages_plan(stop - start, lambda col: col.split_range(start, stop), True)

    def _point_plan(self, rows: np.ndarray, ranged: bool) -> Plan:
        """The whole-column point read of ``rows``: the search caches of the pages they fall in first
        (one round, when not loaded yet), then one plan, one fetch, one kernel call.  The page-by-page
        read (which reports a bad page where it is) when the pages allow no point reader or their
        metadata or search buffers are bad."""
        if self._every:  # the reader over every page: nothing to look up
            if self._points is None:
                return self._fallback(rows, ranged)
            return self._points_read(_PointRead(self, rows, ranged, None))
        col = self.columns[0]
        if self._shareable and not self._cover:  # a fresh reader of a small one-page column
            known = _SHARED.get(self._shared_key())
            if known is not None and known[0] is col.col.meta:
                read = _PointRead(self, rows, ranged, [0])
                return Plan(list(known[1]), partial(read.shared, known[2]), "search")
        try:
            touched = col.pages_of(rows)
        except (LanceError, *DECODE_ERRORS):
            return self._fallback(rows, ranged)
        if self._cover and not self._cover.issuperset(touched):
            # a file read again elsewhere: every page's, as the reference loads them (one rebuild more)
            touched = list(range(self._n_pages))
        return self._searched(_PointRead(self, rows, ranged, touched))

    def _searched(self, read: _PointRead) -> Plan:
        """``read.planned()`` once the search caches of the column pages it touches are loaded (a round
        first for those that are not); ``read.fallback()`` when one cannot be."""
        col, size = self.columns[0], self.ctx.src.size
        try:
            jobs = [(page, rs) for page in [col.page(p) for p in read.touched or ()] if (rs := page.search_ranges())]
        except (LanceError, *DECODE_ERRORS):
            return read.fallback()
        if not jobs:
            return read.planned()
        if not all(0 <= off and 0 <= ln and off + ln <= size for _, rs in jobs for off, ln in rs):
            return read.fallback()
        read.jobs = jobs
        return Plan([r for _, rs in jobs for r in rs], read.loaded, "search")

    def _shared_key(self) -> tuple[Any, ...]:
        """The key of this field's column in ``_SHARED``."""
        ctx, col = self.ctx, self.columns[0]
        return (id(col.col.meta), col.col.index, col.path.leaf.type, ctx.num_rows, ctx.version)

    def _column_points(self) -> _Points[Any] | None:
        """The point reader over every page of the field (their search caches loaded first), or None."""
        if not self._pointable:
            return None
        every = list(range(self._n_pages))
        execute(self.ctx.src, [self._searched(_PointRead(self, None, False, every))])
        return self._points_over(every)

    def _points_over(self, touched: list[int]) -> _Points[Any] | None:
        """The point reader over the pages read so far and ``touched`` (their search caches loaded),
        when their pages allow one."""
        if self._cover.issuperset(touched):
            return self._points
        col = self.columns[0]
        ids = sorted(self._cover.union(touched)) if self._cover else touched
        every = len(ids) == self._n_pages
        try:
            pages = [col.page(p) for p in ids]
            if every:  # (most columns: one page)
                firsts, ends = col.page_firsts, col.page_ends
            else:
                run = slice(ids[0], ids[-1] + 1) if ids[-1] - ids[0] + 1 == len(ids) else ids  # (a slice: no copy)
                firsts, ends = col.page_firsts[run], col.page_ends[run]
            t, c = col.path.leaf.type, col.col.index
            points: _Points[Any] | None = (
                ColumnPoints.of(pages, firsts, t, c, ids)
                or ColumnFullZipPoints.of(pages, ends)
                or ColumnPointGroups.of(pages, firsts, ends, t, c, ids)
                or ColumnConstant.of(pages, t)
            )
        except (LanceError, *DECODE_ERRORS):
            points = None  # the page-by-page path reports the problem where it is met
        self._points, self._cover = points, frozenset(ids)
        self._every = every
        self._points_path = f"points/{type(points).__name__}"
        return points

    def _points_read(self, read: _PointRead) -> Plan:
        """The plan of ``read.rows`` by ``self._points``: one fetch, one decode."""
        try:
            points = self._points
            if read.located is not None and type(points) is ColumnPoints:
                read.plan, ranges = points.plan_located(read.located)
            else:
                read.plan, ranges = points.plan(read.rows)  # type: ignore[union-attr,arg-type]
            self._check_ranges(ranges)
        except LanceError as e:
            raise e.at(path=self.ctx.path, column=self.columns[0].col.index) from None
        except DECODE_ERRORS as e:
            raise self._undecodable(e) from None
        read.points = self._points
        return Plan(ranges, read.decode, self._points_path)

    def _check_ranges(self, ranges: list[Range]) -> None:
        size = self.ctx.src.size
        for off, ln in ranges:
            if off < 0 or ln < 0 or off + ln > size:
                raise CorruptFileError(f"page data [{off}, {off + ln}) lies outside the {size}-byte file")

    def _undecodable(self, e: Exception) -> CorruptFileError:
        return CorruptFileError(
            f"undecodable page data ({type(e).__name__}: {e})", path=self.ctx.path, column=self.columns[0].col.index
        )

    def _decode_points(self, points: _Points[Any], rows: np.ndarray, plan: Any, bufs: list[memoryview]) -> pa.Array:
        try:
            out = points.decode(rows, plan, bufs)
        except LanceError as e:
            raise self._located(e.at(path=self.ctx.path, column=self.columns[0].col.index), rows) from None
        except DECODE_ERRORS as e:
            raise self._located(self._undecodable(e), rows) from None
        if len(out) != len(rows):
            raise self._located(
                CorruptFileError(
                    f"decoded {len(out)} rows of field {self._name!r}, expected {len(rows)}",
                    path=self.ctx.path,
                    column=self.columns[0].col.index,
                ),
                rows,
            )
        return out

    def _located(self, e: LanceError, rows: np.ndarray) -> LanceError:
        """``e``, or, when it names no page, the error the page-by-page read of the same rows raises
        naming one (a whole-column point reader decodes a take's pages at once; the page path checks
        each page on its own).  Only on the way to an error: its extra reads cost nothing else."""
        if e.page is not None:
            return e
        try:
            execute(self.ctx.src, [self._pages_plan(len(rows), lambda col: col.split(rows))])
        except LanceError as found:
            if found.page is not None:
                return found
        except Exception:  # noqa: BLE001 (best effort: the point reader's error stands)
            pass
        return e
