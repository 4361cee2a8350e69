"""The page by page read of a 2.1+ field (``StructuralFieldReader``'s planner for every read the whole-column point
reader does not take, field.py): the field rows mapped to page rows of every column, a round for the search caches of
the pages not loaded yet, one for the data of all pages, one for out-of-line data (blob pages); each page decodes into
its path array (repdef.py) and, for fields of several columns, the path arrays merge into the field's array
(field_merge.py)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

import numpy as np
import pyarrow as pa

from lancelot.encodings.base import FieldContext, Plan, done
from lancelot.encodings.structural import page_pool
from lancelot.encodings.structural.field_merge import merge
from lancelot.encodings.structural.page import PageLevels, PageReader, Range
from lancelot.encodings.structural.page_table import ColumnReader
from lancelot.errors import CorruptFileError, LanceError

_T = TypeVar("_T")

#: Python and numpy exceptions that, raised while decoding, mean the bytes were bad
DECODE_ERRORS = (IndexError, ValueError, KeyError, OverflowError, TypeError, pa.ArrowInvalid)

#: one fetch of a read: (column, page, byte ranges, what receives their buffers)
_Job = tuple[ColumnReader, int, list[Range], Callable[[list[memoryview]], None]]


class PagesMixin:
    """The page by page planner of ``StructuralFieldReader`` (mixed into it: field.py)."""

    ctx: FieldContext
    columns: list[ColumnReader]
    _name: str

    def _guard(self, col: ColumnReader, page: int, fn: Callable[..., _T], *args: object) -> _T:
        try:
            return fn(*args)
        except LanceError as e:
            raise e.at(path=self.ctx.path, column=col.col.index, page=page) from None
        except DECODE_ERRORS as e:
            raise CorruptFileError(
                f"undecodable page data ({type(e).__name__}: {e})", path=self.ctx.path, column=col.col.index, page=page
            ) from None

    def _pages_plan(
        self, n_rows: int, split: Callable[[ColumnReader], list[tuple[int, np.ndarray]]], chunked: bool = False
    ) -> Plan:
        """The page by page read of rows of the field: ``split(column)`` gives each column's (page,
        page-local rows).  Rounds: the search caches of the pages not loaded yet (a bad one reports
        its problem), the data of the rows, out-of-line data (blob pages).

        ``chunked``: a field of one column read from several pages may come back as a
        ChunkedArray of its pages (no concatenation copy).
        """
        if n_rows == 0:
            return done(pa.nulls(0, self.ctx.field.type))
        work = [(col, p, local) for col in self.columns for p, local in split(col)]
        pages = [col.page(p) for col, p, _ in work]
        planner = "pages/" + "+".join(sorted({type(page).__name__ for page in pages}))
        read = _PagesRead(self, n_rows, chunked, planner, work, pages)
        ranges: list[Range] = []
        for i, ((col, p, _), page) in enumerate(zip(work, pages)):
            rs = self._guard(col, p, page.search_ranges)
            if rs:
                read.searches.append((i, len(rs)))
                ranges += rs
        if not ranges:
            return read.data()
        pos = 0
        for i, n in read.searches:  # (every page's ranges first, then their bounds: the first bad page named)
            col, p, _ = work[i]
            self._check_page_ranges(col, p, ranges[pos : pos + n])
            pos += n
        return Plan(ranges, read.loaded, planner)

    def _finish(
        self,
        n_rows: int,
        work: list[tuple[ColumnReader, int, np.ndarray]],
        pages: list[PageReader],
        decoded: list[PageLevels | None],
        chunked: bool,
        planner: str,
    ) -> pa.Array | pa.ChunkedArray | Plan:
        """After the data round: the round of out-of-line data (blob pages), then the field's array."""
        extra: list[_Job] = []

        def complete(i: int, bufs: list[memoryview]) -> None:
            col, p, _ = work[i]
            levels = decoded[i]
            if levels is None:  # the data round decoded every page
                raise LanceError("page completed before it was decoded", column=col.col.index, page=p)
            decoded[i] = col.page(p).complete(levels, bufs)

        for i, ((col, p, _), page) in enumerate(zip(work, pages)):
            if type(page).finish is PageReader.finish:
                continue
            decoded[i], ranges = self._guard(col, p, page.finish, decoded[i])
            if ranges is not None:
                extra.append((col, p, ranges, partial(complete, i)))
        if not extra:
            return self._assemble(n_rows, work, decoded, chunked)
        self._check_jobs(extra)

        def completed(bufs: list[memoryview]) -> pa.Array | pa.ChunkedArray:
            self._deliver(extra, bufs)
            return self._assemble(n_rows, work, decoded, chunked)

        return Plan([r for _, _, ranges, _ in extra for r in ranges], completed, planner)

    def _assemble(
        self,
        n_rows: int,
        work: list[tuple[ColumnReader, int, np.ndarray]],
        decoded: list[PageLevels | None],
        chunked: bool,
    ) -> pa.Array | pa.ChunkedArray:
        """The field's array from the decoded pages of its columns."""
        t = self.ctx.field.type
        per_column: dict[int, list[pa.Array]] = {}
        for i, (col, p, local) in enumerate(work):
            arr = self._guard(col, p, col.to_array, decoded[i])
            if col.scale == 1 and len(arr) != len(local):  # (the page's levels start more rows than asked)
                raise CorruptFileError(
                    f"decoded {len(arr)} rows of page {p} of field {self._name!r}, expected {len(local)}",
                    path=self.ctx.path,
                    column=col.col.index,
                    page=p,
                )
            per_column.setdefault(id(col), []).append(arr)
        if chunked and len(self.columns) == 1:
            arrs = per_column.get(id(self.columns[0]), [])
            if len(arrs) > 1 and all(a.type == t for a in arrs):
                return self._counted(pa.chunked_array(arrs, type=t), n_rows)
        spines = []
        for col in self.columns:
            arrs = per_column.get(id(col), [])
            spines.append(arrs[0] if len(arrs) == 1 else pa.concat_arrays(arrs))
        try:
            out = merge(t, spines)
        except LanceError as e:
            misfit = self._misfit_page(t, spines, work)
            raise e.at(path=self.ctx.path, column=self.columns[0].col.index, page=misfit) from None
        except DECODE_ERRORS as e:  # the columns' structures disagree: which one is wrong is not known
            misfit = self._misfit_page(t, spines, work)
            where = "" if misfit is None else f" in the rows of page {misfit} of column {self.columns[0].col.index}"
            raise CorruptFileError(
                f"columns {self.columns[0].col.index}-{self.columns[-1].col.index} of field {self._name!r} "
                f"do not fit together{where} ({type(e).__name__}: {e})",
                path=self.ctx.path,
                column=self.columns[0].col.index,
                page=misfit,
            ) from None
        return self._counted(out, n_rows)

    def _counted(self, out: pa.Array | pa.ChunkedArray, n_rows: int) -> pa.Array | pa.ChunkedArray:
        """``out``, checked to hold the ``n_rows`` rows the read asked for."""
        if len(out) != n_rows:
            raise CorruptFileError(
                f"decoded {len(out)} rows of field {self.ctx.field.name!r}, expected {n_rows}",
                path=self.ctx.path,
                column=self.columns[0].col.index,
            )
        return out

    def _misfit_page(
        self, t: pa.DataType, spines: list[pa.Array], work: list[tuple[ColumnReader, int, np.ndarray]]
    ) -> int | None:
        """The page of the first column in whose rows the columns' arrays do not merge (each page's
        rows merged on their own), or None (the rows of no one page misfit; or rows scaled)."""
        first = self.columns[0]
        if any(col.scale != 1 for col in self.columns):
            return None
        at = 0
        for col, p, local in work:
            if col is not first:
                continue
            try:
                merge(t, [s.slice(at, len(local)) for s in spines])
            except (LanceError, *DECODE_ERRORS):
                return p
            at += len(local)
        return None

    def _check_jobs(self, jobs: list[_Job]) -> None:
        """Every job's ranges lie inside the file (else the page is named as corrupt)."""
        for col, p, ranges, _ in jobs:
            self._check_page_ranges(col, p, ranges)

    def _check_page_ranges(self, col: ColumnReader, p: int, ranges: list[Range]) -> None:
        """A page's ranges lie inside the file (else the page is named as corrupt)."""
        size = self.ctx.src.size
        for off, ln in ranges:
            if off < 0 or ln < 0 or off + ln > size:
                raise CorruptFileError(
                    f"page data [{off}, {off + ln}) lies outside the {size}-byte file",
                    path=self.ctx.path,
                    column=col.col.index,
                    page=p,
                )

    def _deliver(self, jobs: list[_Job], bufs: list[memoryview]) -> None:
        """Hand each job its buffers of one round."""
        pos = 0
        for col, p, ranges, cb in jobs:
            self._guard(col, p, cb, bufs[pos : pos + len(ranges)])
            pos += len(ranges)


class _PagesRead:
    """One page by page read in flight: its pages and page-local rows, the pages whose search caches its
    first round loads, each page's data ranges and decoded levels; its bound methods are the read's decode
    steps (one small object per read instead of closures and partials per page: a read of many fields
    keeps fewer objects alive, and the garbage collector runs less often)."""

    __slots__ = ("reader", "n_rows", "chunked", "planner", "work", "pages", "searches", "counts", "decoded")

    def __init__(
        self,
        reader: PagesMixin,
        n_rows: int,
        chunked: bool,
        planner: str,
        work: list[tuple[ColumnReader, int, np.ndarray]],
        pages: list[PageReader],
    ) -> None:
        self.reader = reader
        self.n_rows = n_rows
        self.chunked = chunked
        self.planner = planner
        self.work = work
        self.pages = pages
        self.searches: list[tuple[int, int]] = []  # (work item, its search ranges' count)
        self.counts: list[int] = []  # each work item's data ranges' count
        self.decoded: list[PageLevels | None] = []

    def loaded(self, bufs: list[memoryview]) -> Plan:
        """The search round's bytes: each page loads its search cache (and may plan its rows), then the data."""
        guard, work, pages = self.reader._guard, self.work, self.pages
        pos = 0
        for i, n in self.searches:
            col, p, local = work[i]
            guard(col, p, pages[i].load_for, local, bufs[pos : pos + n])
            pos += n
        self.searches = []
        return self.data()

    def data(self) -> Plan:
        """The data round: every page's ranges of its rows."""
        guard, check = self.reader._guard, self.reader._check_page_ranges
        ranges: list[Range] = []
        counts = self.counts
        for (col, p, local), page in zip(self.work, self.pages):
            rs = guard(col, p, page.plan, local)
            counts.append(len(rs))
            ranges += rs
        pos = 0
        for (col, p, _), n in zip(self.work, counts):  # (every page planned first, then the bounds checked)
            check(col, p, ranges[pos : pos + n])
            pos += n
        self.decoded = [None] * len(self.work)
        return Plan(ranges, self.decoded_pages, self.planner)

    def decoded_pages(self, bufs: list[memoryview]) -> pa.Array | pa.ChunkedArray | Plan:
        """The data round's bytes: each page decodes its rows (side by side when there are several and they
        are large, page_pool.py), then the field's array."""
        guard, work, pages, decoded = self.reader._guard, self.work, self.pages, self.decoded
        if len(work) > 1 and sum([len(b) for b in bufs]) >= page_pool.PARALLEL_MIN_BYTES:
            tasks: list[Callable[[], None]] = []
            pos = 0
            for i, n in enumerate(self.counts):
                tasks.append(partial(self._decode, i, bufs[pos : pos + n]))
                pos += n
            page_pool.run_all(tasks)
        else:
            pos = 0
            for i, n in enumerate(self.counts):
                col, p, local = work[i]
                decoded[i] = guard(col, p, pages[i].decode, local, bufs[pos : pos + n])
                pos += n
        return self.reader._finish(self.n_rows, work, pages, decoded, self.chunked, self.planner)

    def _decode(self, i: int, bufs: list[memoryview]) -> None:
        col, p, local = self.work[i]
        self.decoded[i] = self.reader._guard(col, p, self.pages[i].decode, local, bufs)
