"""Takes of a few rows from a whole leaf column, across its pages, in one pass.

(``ColumnPoints`` for mini-block columns; fixed-width full-zip ones: column_fullzip_points.py.)

A take of ten rows from a big file touches a different page of each column for
almost every row; reading page by page costs a plan, a decode and an Arrow
array per page.  When every page of a top-level primitive field is a mini-block
page without lists whose techniques the point kernel reads
(miniblock_points.PointReader, same technique codes on every page), the
chunk tables of its pages read so far (field.py) are joined into one table, and a
take maps rows to chunks with one ``searchsorted``, fetches the chunks in one
call, reads every row with one kernel call, and builds one Arrow array (page
dictionaries joined: column_points_dictionary.py; FSST strings decoded per page table).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa

from lancelot.encodings.compression.bitpacking import CHUNK
from lancelot.encodings.compression.block import DataBlock, VariableWidthBlock
from lancelot.encodings.compression.chunked import symbol_table
from lancelot.encodings.compression.fsst import StackedTables, fsst_decode_tables, stack_tables
from lancelot.encodings.structural.column_points_dictionary import DictionaryMixin
from lancelot.encodings.structural.leaf import (
    apply_dictionary,
    check_dictionary_slots,
    indices_to_numpy,
    values_to_arrow,
    with_validity,
)
from lancelot.encodings.structural.miniblock import MiniBlockPage
from lancelot.encodings.structural.miniblock_points import (
    FEW_STRINGS,
    INLINE,
    VARIABLE,
    PointReader,
    PointReadError,
    small_strings_arrow,
)
from lancelot.encodings.structural.miniblock_table import ChunkTable, Located
from lancelot.encodings.structural.page import PageReader
from lancelot.errors import CorruptFileError, LanceError
from lancelot.format.pb import encodings_v2_1_pb2 as pb


@dataclass
class ColumnChunks:
    """The chunk tables of every page of a column, joined (rows are column rows)."""

    row_ends: np.ndarray  # rows that start before the next chunk
    first_row: np.ndarray
    offsets: np.ndarray  # file position of each chunk
    sizes: np.ndarray
    items: np.ndarray
    page: np.ndarray  # page index of each chunk
    def_w: np.ndarray  # definition levels' bit width of each chunk
    #: a column of one page from the chunk-table kernel: its (5, chunks) table (offsets, sizes, items,
    #: first rows, row ends), whose columns a few-row plan copies (else None)
    grid: np.ndarray | None = None


#: takes (and ranges) of at most this many rows are planned in Python lists (``ColumnPoints._plan_few``)
FEW_ROWS = 64
_NO_FSST: list[bytes | None] = []  # (the pages' FSST tables when none has one: never read)
_ZEROS = np.zeros(0, np.int64)


def _zeros(n: int) -> np.ndarray:
    """``n`` zeros, a read-only view of one array shared by the point readers (a column of one page:
    every chunk's page index, and definition width when it has no levels)."""
    global _ZEROS
    if len(_ZEROS) < n:
        _ZEROS = np.zeros(max(n, 2 * len(_ZEROS), 1024), np.int64)
        _ZEROS.flags.writeable = False
    return _ZEROS[:n]


@dataclass
class PointPlan:
    """The chunks a read touches and, per row, its chunk (column-wide and among those fetched).

    A few-row plan (``ColumnPoints._plan_few``) also holds what the decode needs of the fetched
    chunks, worked out while planning: ``meta`` rows are each chunk's position in the fetched
    bytes, size, item count, first row and definition width; ``idx`` each row's item in its chunk."""

    chunks: np.ndarray
    chunk_of: np.ndarray
    k_of: np.ndarray
    meta: np.ndarray | None = None
    idx: np.ndarray | None = None
    total: int = 0
    #: a first take over several pages (``plan_located``): each fetched chunk's page among the reader's
    #: (``chunks`` then holds page chunk indices)
    pages: np.ndarray | None = None


class ColumnPoints(DictionaryMixin):
    """Point reads over all pages of one leaf column (see the module docstring)."""

    def __init__(
        self,
        pages: list[MiniBlockPage],
        page_firsts: np.ndarray,
        value_type: pa.DataType,
        column: int,
        page_ids: Sequence[int] | None = None,
    ) -> None:
        #: each page's index in the column (errors name the column's page); default 0, 1, ...
        self.page_ids = range(len(pages)) if page_ids is None else page_ids
        readers: list[PointReader] = []
        for p in pages:
            assert p.points is not None  # ColumnPoints.of checked each page's shape
            readers.append(p.points)
        self.reader = readers[0]
        self.value_type = value_type
        self.column = column
        #: the pages and their first rows until ``chunks`` joins their tables (a first take of a few
        #: rows plans from its ``Located`` chunks: ``plan_located``)
        self._pages: list[MiniBlockPage] | None = pages
        self._page_firsts = page_firsts
        self._chunks: ColumnChunks | None = None
        self._few: np.ndarray | None = None
        #: the inline-bitpacking chunk bound (PointReader.run), checked once for the whole column on the
        #: first read of many rows (a few rows' chunks are checked by ``run`` itself)
        self._items_checked: bool | None = None
        self.arrow_kind = self.reader.arrow_kind(value_type)
        self.page_dicts, self.dict_base, self.dict_size = self._join_dictionaries([p.page_dictionary for p in pages])
        self.has_dictionary = self.page_dicts is not None
        self._dictionary = None
        self._dict_lists = False
        self._looked_up = False  # whether a take looked items up in the dictionary's block (the next makes lists)
        self._dict_words = False
        self.nullable = bool(self.reader.has_def)
        # pylance chooses FSST page by page (not for a page of little or short strings), so a
        # column's pages may differ: each page's symbol table (None: its strings are plain)
        fssts = [r.fsst for r in readers]
        self.any_fsst = any(f is not None for f in fssts)
        self.page_fsst = fssts if self.any_fsst else _NO_FSST
        self._fsst_tables: StackedTables | None | Literal[False] = False

    @property
    def chunks(self) -> ColumnChunks:
        """The pages' chunk tables joined (on first need)."""
        if self._chunks is None:
            pages = self._pages
            assert pages is not None
            readers = [p.points for p in pages]
            self._chunks = self._join_tables([p.table for p in pages], readers, self._page_firsts)  # type: ignore[arg-type]
            self._pages = None
        return self._chunks

    @staticmethod
    def _join_tables(tables: list[ChunkTable], readers: list[PointReader], page_firsts: np.ndarray) -> ColumnChunks:
        """The pages' chunk tables as one table of column rows (a one-page column reuses its page's arrays)."""
        if len(tables) == 1:
            t, base = tables[0], int(page_firsts[0])
            n, w = len(t.items), readers[0].def_w
            def_w = _zeros(n) if w == 0 else np.full(n, w, dtype=np.int64)
            return ColumnChunks(
                t.row_ends + base if base else t.row_ends,
                t.first_row + base if base else t.first_row,
                t.offsets,
                t.sizes,
                t.items,
                _zeros(n),
                def_w,
                t.grid if not base and not w else None,
            )
        counts = [len(t.items) for t in tables]
        first = np.repeat(np.asarray(page_firsts[: len(tables)], dtype=np.int64), counts)
        cat = np.concatenate
        return ColumnChunks(
            cat([t.row_ends for t in tables]) + first,
            cat([t.first_row for t in tables]) + first,
            cat([t.offsets for t in tables]),
            cat([t.sizes for t in tables]),
            cat([t.items for t in tables]),
            np.repeat(np.arange(len(tables), dtype=np.int64), counts),
            np.repeat(np.array([r.def_w for r in readers], dtype=np.int64), counts),
        )

    @property
    def _few_table(self) -> np.ndarray:
        """What a few-row plan gathers per chunk, in one take (rows: offset, size, items, first row, def width)."""
        if self._few is None:
            c = self.chunks
            self._few = np.stack([c.offsets, c.sizes, c.items, c.first_row, c.def_w])
        return self._few

    @property
    def fsst_tables(self) -> StackedTables | None:
        """Every page's FSST table stacked, when all of them compress (else None)."""
        if self._fsst_tables is False:
            self._fsst_tables = None
            symbols = [symbol_table(f) for f in self.page_fsst if f is not None]
            if self.any_fsst and len(symbols) == len(self.page_fsst) and all(t.switch_on for t in symbols):
                self._fsst_tables = stack_tables(symbols)
        return self._fsst_tables

    @staticmethod
    def shape(page: PageReader) -> tuple[object, ...] | None:
        """What pages read by one ColumnPoints must share (None: the page has no point reader)."""
        if not isinstance(page, MiniBlockPage) or page.points is None:
            return None
        layers = page.meaning.layers
        if len(layers) != 1 or layers[0] not in (pb.REPDEF_ALL_VALID_ITEM, pb.REPDEF_NULLABLE_ITEM):
            return None
        return page.points.codes, layers, page.page_dictionary is not None

    @classmethod
    def of(
        cls,
        pages: Sequence[PageReader],
        page_firsts: np.ndarray,
        value_type: pa.DataType,
        column: int,
        page_ids: Sequence[int] | None = None,
    ) -> ColumnPoints | None:
        """The point reader of a column, or None when its pages do not all qualify."""
        if not pages or pa.types.is_dictionary(value_type):
            return None
        if len(pages) == 1:  # (a first take of a few rows: the page it touched)
            if cls.shape(pages[0]) is None:
                return None
        else:
            shapes = {cls.shape(p) for p in pages}
            if len(shapes) != 1 or None in shapes:
                return None
        mini = [p for p in pages if isinstance(p, MiniBlockPage)]  # all of them: shape() checked
        return cls(mini, page_firsts, value_type, column, page_ids)

    def plan(self, rows: np.ndarray) -> tuple[PointPlan, list[tuple[int, int]]]:
        """Where ``rows`` (sorted, unique) lie, and the byte ranges of their chunks (one per run of adjacent chunks)."""
        if len(rows) <= FEW_ROWS:
            return self._plan_few(rows)
        c = self.chunks
        if int(rows[-1]) - int(rows[0]) + 1 == len(rows):  # a range: chunk by chunk
            first, last = np.searchsorted(c.row_ends, rows[[0, -1]], side="right").tolist()
            chunks = np.arange(first, last + 1, dtype=np.int64)
            lo = np.maximum(c.first_row[chunks], rows[0])
            hi = np.minimum(c.row_ends[chunks], rows[-1] + 1)
            k_of = np.repeat(np.arange(len(chunks), dtype=np.int64), hi - lo)
            chunk_of = chunks[k_of]
        else:
            chunk_of = np.searchsorted(c.row_ends, rows, side="right")
            keep = np.empty(len(chunk_of), dtype=bool)
            keep[0] = True
            np.not_equal(chunk_of[1:], chunk_of[:-1], out=keep[1:])
            chunks = chunk_of[keep]
            k_of = np.cumsum(keep) - 1
        starts, ends = c.offsets[chunks], c.offsets[chunks] + c.sizes[chunks]
        brk = np.flatnonzero(starts[1:] != ends[:-1]) + 1
        lo = starts[np.concatenate([[0], brk])]
        hi = ends[np.concatenate([brk - 1, [len(chunks) - 1]])]
        return PointPlan(chunks, chunk_of, k_of), list(zip(lo.tolist(), (hi - lo).tolist()))

    def _plan_few(self, rows: np.ndarray) -> tuple[PointPlan, list[tuple[int, int]]]:
        """``plan`` of a few rows, its bookkeeping in Python lists (a dozen numpy calls on
        arrays of ten cost more than the loops); it also lays out the fetched chunks for decode."""
        chunk_of = self.chunks.row_ends.searchsorted(rows, side="right")
        listed = chunk_of.tolist()
        if listed[0] == listed[-1]:  # one chunk (a tiny table, a clustered take)
            i = listed[0]
            c = self.chunks
            if self._few is not None:
                table = self._few[:, i : i + 1].copy()
            elif c.grid is not None:  # (a first take of one page without definition levels: its table's column)
                table = c.grid[:, i : i + 1].copy()
                table[4, 0] = 0
            else:  # (a first take: no whole-column stack for one chunk)
                table = np.empty((5, 1), np.int64)
                table[:, 0] = c.offsets[i], c.sizes[i], c.items[i], c.first_row[i], c.def_w[i]
            off, at = table[0, 0], table[1, 0]
            table[0, 0] = 0
            k_of = np.zeros(len(listed), dtype=np.int64)
            idx = rows - table[3, 0]
            return PointPlan(chunk_of[:1], chunk_of, k_of, table, idx, int(at)), [(int(off), int(at))]
        chunk_list: list[int] = []
        k_list: list[int] = []
        last = -1
        k = -1
        for x in listed:
            if x != last:
                chunk_list.append(x)
                last = x
                k += 1
            k_list.append(k)
        chunks = np.array(chunk_list, dtype=np.int64)
        table = self._few_table.take(chunks, axis=1)
        ranges, at = _fetched_ranges(table)
        k_of = np.array(k_list, dtype=np.int64)
        idx = rows - table[3].take(k_of)
        return PointPlan(chunks, chunk_of, k_of, table, idx, at), ranges

    def plan_located(self, found: Located) -> tuple[PointPlan, list[tuple[int, int]]]:
        """``plan`` of a first take whose chunks its search round found (``MiniBlockPage.load_first``,
        over several pages ``join_located``): no chunk table needed."""
        rows, table, k_of, ids, pages = found
        if self.reader.def_w and pages is None:
            table[4] = self.reader.def_w
        ranges: list[tuple[int, int]] = []
        if table.shape[1] == 1:
            at = int(table[1, 0])
            ranges.append((int(table[0, 0]), at))
            table[0, 0] = 0
            idx = rows - table[3, 0]
        else:
            ranges, at = _fetched_ranges(table)
            idx = rows - table[3].take(k_of)
        return PointPlan(ids, ids.take(k_of), k_of, table, idx, at, pages), ranges

    def decode(self, rows: np.ndarray, plan: PointPlan, bufs: list[memoryview]) -> pa.Array:
        """Rows ``rows`` from the fetched chunk runs (as planned)."""
        chunks, chunk_of, k_of = plan.chunks, plan.chunk_of, plan.k_of
        # one bytes join: cheaper than a numpy array per buffer and their concatenation
        data = np.frombuffer(bufs[0] if len(bufs) == 1 else b"".join(bufs), np.uint8)
        meta = plan.meta
        if meta is not None and plan.idx is not None:
            pos, size, items, def_ws = meta[0], meta[1], meta[2], meta[4]
            planned, idx = plan.total, plan.idx
        else:
            c = self.chunks
            size = c.sizes[chunks]
            pos = np.zeros(len(chunks), dtype=np.int64)
            size[:-1].cumsum(out=pos[1:])
            planned = int(pos[-1] + size[-1])
            items, def_ws = c.items[chunks], c.def_w[chunks]
            idx = rows - c.first_row[chunk_of]
        if len(data) != planned or len(k_of) != len(rows):
            raise CorruptFileError(f"fetched {len(data)} bytes of chunks, planned {planned}")
        r = self.reader
        try:
            data, pos, size = r.inflate(data, pos, size)
        except LanceError as e:
            raise e.at(page=self._inflate_failure(data, pos, size, self._chunk_pages(plan))) from None
        try:
            checked = meta is None and self._checked_items()
            dfn, fixed, var_start, var_len = r.run(data, pos, size, items, k_of, idx, def_ws, checked)
        except PointReadError as e:
            raise CorruptFileError(e.message, page=self.page_ids[int(self._chunk_pages(plan)[k_of[e.row]])]) from None
        if not self.has_dictionary and not self.any_fsst:
            values = r.arrow(data, fixed, var_start, var_len, self.value_type, self.arrow_kind)
            return values if not self.nullable else with_validity(values, dfn == 0)
        if len(self.page_ids) == 1:
            page_of_row = np.zeros(len(chunk_of), np.int64)
        else:
            page_of_row = plan.pages.take(k_of) if plan.pages is not None else self.chunks.page[chunk_of]
        valid = None if not self.nullable else dfn == 0
        if self.has_dictionary and not self.any_fsst and len(k_of) <= FEW_STRINGS:
            looked_up = self._few_from_dictionary(fixed, page_of_row, valid)
            if looked_up is not None:
                return with_validity(looked_up, valid)
        values = self._values(data, fixed, var_start, var_len, page_of_row)
        if self.has_dictionary:
            try:
                check_dictionary_slots(values, valid)
            except LanceError as e:
                raise e.at(
                    page=self.page_ids[int(page_of_row[np.flatnonzero(np.asarray(values.is_null()))[0]])]
                ) from None
        return with_validity(values, valid)

    def _checked_items(self) -> bool:
        """Whether no chunk of the column holds more items than an inline-bitpacked chunk can."""
        if self._items_checked is None:
            c = self.chunks
            self._items_checked = not (self.reader.vkind == INLINE and len(c.items) and int(c.items.max()) > CHUNK)
        return self._items_checked

    def _values(
        self, data: np.ndarray, fixed: np.ndarray, var_start: np.ndarray, var_len: np.ndarray, page_of_row: np.ndarray
    ) -> pa.Array:
        r = self.reader
        if r.vkind == VARIABLE and self.any_fsst:  # one FSST table per page
            if self.fsst_tables is not None:
                few = len(var_start) <= FEW_STRINGS
                codes = r.few_strings(data, var_start, var_len) if few else r.strings(data, var_start, var_len, None)
                try:
                    plain = fsst_decode_tables(self.fsst_tables, page_of_row, codes, checked=few)
                except LanceError as e:
                    raise e.at(page=self._fsst_failure(data, var_start, var_len, page_of_row)) from None
                t = self.value_type
                if few and not self.has_dictionary and (pa.types.is_string(t) or pa.types.is_binary(t)):
                    if int(plain.offsets[-1]) < 1 << 31:
                        return small_strings_arrow(plain, t)
                block: DataBlock = plain
            else:  # some page keeps its strings plain or uncompressed: decode page by page
                parts = []
                for a, b, p in _page_runs(page_of_row):
                    try:
                        parts.append(r.strings(data, var_start[a:b], var_len[a:b], self.page_fsst[p]))
                    except LanceError as e:
                        raise e.at(page=self.page_ids[p]) from None
                block = _join_variable(parts) if len(parts) > 1 else parts[0]
        else:
            block = r.block(data, fixed, var_start, var_len, None)
        if not self.has_dictionary:
            return values_to_arrow(block, self.value_type)
        local = indices_to_numpy(block)
        local = np.where((local >= 0) & (local < self.dict_size[page_of_row]), local + self.dict_base[page_of_row], -1)
        return apply_dictionary(local, self.dictionary, self.value_type)

    def _chunk_pages(self, plan: PointPlan) -> np.ndarray:
        """Each fetched chunk's page among the reader's (an error names it)."""
        if plan.pages is not None:
            return plan.pages
        if len(self.page_ids) == 1:
            return np.zeros(len(plan.chunks), np.int64)
        return self.chunks.page[plan.chunks]  # type: ignore[no-any-return]

    def _inflate_failure(self, data: np.ndarray, pos: np.ndarray, size: np.ndarray, pages: np.ndarray) -> int | None:
        """The page of the first chunk that does not inflate alone (after a failed inflate of several
        pages' chunks at once; ``pages``: each chunk's page among the reader's)."""
        for k in range(len(pos)):
            try:
                self.reader.inflate(data, pos[k : k + 1], size[k : k + 1])
            except LanceError:
                return self.page_ids[int(pages[k])]
        return None

    def _fsst_failure(
        self, data: np.ndarray, var_start: np.ndarray, var_len: np.ndarray, page_of_row: np.ndarray
    ) -> int | None:
        """The first page whose strings do not decode with its own FSST table (after a failed
        decode of several pages' strings at once: they are decoded again page by page)."""
        for a, b, p in _page_runs(page_of_row):
            try:
                self.reader.strings(data, var_start[a:b], var_len[a:b], self.page_fsst[p])
            except LanceError:
                return self.page_ids[p]
        return None


def _page_runs(page_of_row: np.ndarray) -> Iterator[tuple[int, int, int]]:
    """(first, end, page) of each run of consecutive rows from one page."""
    cuts = np.flatnonzero(page_of_row[1:] != page_of_row[:-1]) + 1
    for a, b in zip(np.concatenate([[0], cuts]).tolist(), np.concatenate([cuts, [len(page_of_row)]]).tolist()):
        yield a, b, int(page_of_row[a])


def _join_variable(parts: list[VariableWidthBlock]) -> VariableWidthBlock:
    data = np.concatenate([np.asarray(p.data)[int(p.offsets[0]) : int(p.offsets[-1])] for p in parts])
    offsets = [np.zeros(1, np.int64)]
    base = 0
    for p in parts:
        o = np.asarray(p.offsets, dtype=np.int64)
        offsets.append(o[1:] - o[0] + base)
        base += int(o[-1] - o[0])
    return VariableWidthBlock(np.concatenate(offsets), data, sum(p.num_values for p in parts))


def _fetched_ranges(table: np.ndarray) -> tuple[list[tuple[int, int]], int]:
    """The byte ranges of the chunks in ``table`` (row 0 offsets, row 1 sizes), adjacent chunks
    joined into one range, and their total size; row 0 then holds each chunk's position in the
    fetched bytes."""
    ranges: list[tuple[int, int]] = []
    pos: list[int] = []
    at = end = 0
    for off, size in zip(table[0].tolist(), table[1].tolist()):
        pos.append(at)
        at += size
        if end == off and ranges:  # adjacent chunks: one range
            ranges[-1] = (ranges[-1][0], ranges[-1][1] + size)
        else:
            ranges.append((off, size))
        end = off + size
    table[0] = pos
    return ranges, at
