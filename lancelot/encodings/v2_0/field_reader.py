"""The 2.0 field reader: one node per column, pre-order (encodings_v2_0.proto).

* leaf columns decode their pages' ArrayEncoding for the rows asked;
* a struct column (``SimpleStruct`` pages, no buffers) combines its children;
* a list column holds ``List`` offsets pages; its child column holds the items, paged independently, so rows -> item
  ranges -> child rows.

``plan`` picks a planner per read: a take of a leaf column with a vectorized plan (take_plans.py) plans its rounds of
byte ranges; every other read runs the node decoder on (start, stop) row ranges (a take's rows as runs, so scattered
rows read only the pages and bytes they touch).  Both are ``Fetch`` steps (encodings/base.py) turned into Plans: every
page of a node, and the children of a struct, share their rounds; a list needs its offsets before its items, a binary
page its offsets before its bytes (a follow-up Plan each)."""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from functools import cached_property
from itertools import accumulate
from typing import Literal, TypeVar

import numpy as np
import pyarrow as pa

from lancelot import field_metadata
from lancelot.encodings.base import (
    ColumnInfo,
    Fetch,
    FieldContext,
    FieldReader,
    Plan,
    Rows,
    as_plan,
    done,
    gather,
    resume,
)
from lancelot.encodings.v2_0 import take_few, whole
from lancelot.encodings.v2_0.binary import extended, value_spans, variable
from lancelot.encodings.v2_0.decode import decode, decode_offsets
from lancelot.encodings.v2_0.page import PageBuffers, direct_message
from lancelot.encodings.v2_0.take_plans import TakePlan, plan_take
from lancelot.errors import CorruptFileError, LanceError, UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_0_pb2 as pb
from lancelot.versions import FileVersion

_T = TypeVar("_T")
#: half-open (start, stop) row spans (io.source.Range is an (offset, length) byte range)
Spans = list[tuple[int, int]]
#: what numpy / pyarrow raise on bytes that contradict their metadata (reported as CorruptFileError)
DECODE_ERRORS = (IndexError, ValueError, KeyError, OverflowError, TypeError, pa.ArrowInvalid)
#: more rows than any page holds: a page length or list item count above it is corrupt (and would
#: overflow the int64 row arithmetic)
MAX_PAGE_ROWS = 1 << 48


def runs(rows: np.ndarray) -> Spans:
    """Sorted unique rows -> maximal (start, stop) runs."""
    if len(rows) == 0:
        return []
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    starts = rows[np.concatenate([[0], breaks])]
    ends = rows[np.concatenate([breaks - 1, [len(rows) - 1]])] + 1
    return list(zip(starts.tolist(), ends.tolist()))


class Column:
    """One column's pages: cumulative row starts and decoded page encodings."""

    def __init__(self, ctx: FieldContext, info: ColumnInfo, rows: int | None) -> None:
        """``rows``: the rows the pages must hold (the file's, for a column outside lists), or None."""
        self.ctx, self.info = ctx, info
        lengths = [p.length for p in info.meta.pages]
        if lengths and max(lengths) > (MAX_PAGE_ROWS if rows is None else rows):
            big = lengths.index(max(lengths))
            raise self.error(f"page of {lengths[big]} rows", big)
        self.starts: list[int] = list(accumulate(lengths, initial=0))
        if rows is not None and self.starts[-1] != rows:
            raise self.error(f"pages hold {self.starts[-1]} rows, the file has {rows}")
        self._enc: dict[int, pb.ArrayEncoding] = {}
        self._shapes: dict[int, whole.Shape | None] = {}
        self._bufs: list[list[tuple[int, int]]] | None = None

    @property
    def num_rows(self) -> int:
        return int(self.starts[-1])

    def encoding(self, i: int) -> pb.ArrayEncoding:
        enc = self._enc.get(i)
        if enc is None:
            page = self.info.meta.pages[i]
            enc = direct_message(self.ctx.src, page.encoding, pb.ArrayEncoding, column=self.info.index, page=i)
            if enc is None:
                raise self.error("page has no encoding", i)
            self._enc[i] = enc
        return enc

    def buffers(self, i: int) -> PageBuffers:
        return PageBuffers(self.ctx.src, self.bufs[i], self.info.meta, self.info.index, i)

    @property
    def bufs(self) -> list[list[tuple[int, int]]]:
        """Per page, the file (position, size) of each of its buffers (found on the first take)."""
        if self._bufs is None:
            self._bufs = [list(zip(p.buffer_offsets, p.buffer_sizes)) for p in self.info.meta.pages]
        return self._bufs

    def buffer(self, page: int, i: int) -> tuple[int, int] | None:
        return self.bufs[page][i] if 0 <= i < len(self.bufs[page]) else None

    def shape(self, i: int, dtype: pa.DataType) -> whole.Shape | None:
        """Page ``i``'s shape (whole.py) in a column of ``dtype`` (found once: a column is planned as one type)."""
        if i not in self._shapes:
            page = self.info.meta.pages[i]
            direct = page.encoding.WhichOneof("location") == "direct"
            self._shapes[i] = whole.page_shape(page, dtype) if direct else whole.encoding_shape(self.encoding(i), dtype)
        return self._shapes[i]

    @cached_property
    def row_starts(self) -> np.ndarray:
        return np.asarray(self.starts, np.int64)

    def locate(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(page, row within the page) of each row."""
        page = np.searchsorted(self.row_starts, rows, side="right") - 1
        return page, rows - self.row_starts[page]

    def error(self, msg: str, page: int | None = None) -> CorruptFileError:
        return CorruptFileError(msg, path=self.ctx.path, column=self.info.index, page=page)

    def failure(self, e: Exception, page: int | None = None) -> LanceError:
        """A failure on this column's (or ``page``'s) bytes naming them: a low-level one (bytes that contradict their
        metadata) as a CorruptFileError."""
        if isinstance(e, LanceError):
            return e.at(path=self.ctx.path, column=self.info.index, page=page)
        return self.error(f"undecodable page data ({type(e).__name__}: {e})", page)

    def located(self, step: Fetch[_T], page: int | None = None) -> Fetch[_T]:
        """``step`` with its failures named by ``failure``."""
        try:
            return (yield from step)
        except (LanceError, *DECODE_ERRORS) as e:
            raise self.failure(e, page) from None

    def split(self, ranges: Spans) -> list[tuple[int, Spans]]:
        """Group global row ranges by page: [(page, local ranges)] in row order."""
        out: list[tuple[int, Spans]] = []
        for s, e in ranges:
            if s < 0 or e > self.num_rows:
                raise LanceError(
                    f"rows [{s}, {e}) out of range for {self.num_rows} rows", path=self.ctx.path, column=self.info.index
                )
            while s < e:
                p = bisect.bisect_right(self.starts, s) - 1
                pe = min(e, self.starts[p + 1])
                if out and out[-1][0] == p:
                    out[-1][1].append((s - self.starts[p], pe - self.starts[p]))
                else:
                    out.append((p, [(s - self.starts[p], pe - self.starts[p])]))
                s = pe
        return out


class Node:
    col: Column

    def read(self, ranges: Spans) -> Fetch[pa.Array]:
        """The rows of ``ranges`` (a Fetch: it yields the byte ranges of each round)."""
        raise NotImplementedError


class LeafNode(Node):
    def __init__(self, ctx: FieldContext, col: Column, dtype: pa.DataType) -> None:
        self.ctx, self.col, self.dtype = ctx, col, dtype

    def read(self, ranges: Spans) -> Fetch[pa.Array]:
        parts = yield from self.read_parts(ranges)
        return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)

    def read_chunked(self, ranges: Spans) -> Fetch[pa.Array | pa.ChunkedArray]:
        """Like read(), but pages stay separate chunks (a scan need not copy them together)."""
        parts = yield from self.read_parts(ranges)
        return parts[0] if len(parts) == 1 else pa.chunked_array(parts, self.dtype)

    def read_parts(self, ranges: Spans) -> Fetch[list[pa.Array]]:
        """One array per page the ranges touch; every page's rounds side by side."""
        parts = yield from gather([self.col.located(self._decode(p, local), p) for p, local in self.col.split(ranges)])
        return parts or [pa.array([], self.dtype)]

    def _decode(self, p: int, local: Spans) -> Fetch[pa.Array]:
        part = yield from decode(self.col.encoding(p), self.col.buffers(p), local, self.dtype, self.ctx.cache)
        if part.type != self.dtype:
            raise CorruptFileError(f"page of {part.type} values in a column of {self.dtype}")
        return part


#: a 2.0 blob page's descriptions: absolute file position and size of each value
BLOB_DESCRIPTION = pa.struct([("position", pa.uint64()), ("size", pa.uint64())])
MAX_BLOB = 1 << 40


class BlobNode(LeafNode):
    """A 2.0 blob column (``ColumnEncoding.blob``): the pages hold a PackedStruct description per value, (u64 position,
    u64 size) of its bytes anywhere in the file; an empty value is (0, 0) and a null (1, 0).  Reads return the values
    themselves, as pylance does."""

    def _decode(self, p: int, local: Spans) -> Fetch[pa.Array]:
        desc = yield from decode(self.col.encoding(p), self.col.buffers(p), local, BLOB_DESCRIPTION, self.ctx.cache)
        return (yield from self._values(desc))

    def _values(self, desc: pa.StructArray) -> Fetch[pa.Array]:
        pos = np.asarray(desc.field("position").to_numpy(zero_copy_only=False), dtype=np.uint64)
        size = np.asarray(desc.field("size").to_numpy(zero_copy_only=False), dtype=np.uint64)
        valid = (pos != 1) | (size != 0)
        if np.any(size > MAX_BLOB):
            raise CorruptFileError("implausible blob size")
        fetch = np.flatnonzero(size > 0)
        reqs = list(zip(pos[fetch].astype(np.int64).tolist(), size[fetch].astype(np.int64).tolist()))
        bufs = (yield reqs) if reqs else []
        data = np.concatenate([np.frombuffer(b, np.uint8) for b in bufs]) if bufs else np.zeros(0, np.uint8)
        out = variable(self.dtype, size.astype(np.int64), valid, pa.py_buffer(data))
        if out is None:
            raise UnsupportedEncodingError("blobs of more than 2 GiB in one read need large_binary")
        return out


def is_blob_column(ctx: FieldContext, info: ColumnInfo) -> bool:
    """Whether the column's ColumnEncoding is ``blob`` (what pylance writes for a 2.0 blob field)."""
    if not info.meta.HasField("encoding"):
        return False
    enc = direct_message(ctx.src, info.meta.encoding, pb.ColumnEncoding, column=info.index)
    return enc is not None and enc.WhichOneof("column_encoding") == "blob"


class StructNode(Node):
    def __init__(self, col: Column, dtype: pa.StructType, children: list[Node]) -> None:
        self.col, self.dtype, self.children = col, dtype, children

    def read(self, ranges: Spans) -> Fetch[pa.Array]:
        kids = yield from gather([c.read(ranges) for c in self.children])
        n = sum(e - s for s, e in ranges)
        if not kids:
            return pa.array([{}] * n, self.dtype)
        return pa.StructArray.from_arrays(kids, fields=list(self.dtype))


class ListNode(Node):
    def __init__(self, ctx: FieldContext, col: Column, dtype: pa.DataType, child: Node) -> None:
        self.ctx, self.col, self.dtype, self.child = ctx, col, dtype, child
        self._items_before: list[int] | None = None

    def items_before(self) -> list[int]:
        """Item index of the first item of each offsets page."""
        if self._items_before is None:
            counts = []
            for i in range(len(self.col.info.meta.pages)):
                enc = self.col.encoding(i)
                if enc.WhichOneof("array_encoding") != "list":
                    raise UnsupportedEncodingError(
                        "list column page is not a List encoding",
                        path=self.ctx.path,
                        column=self.col.info.index,
                        page=i,
                    )
                if enc.list.num_items > MAX_PAGE_ROWS:
                    raise self.col.error(f"a list page of {enc.list.num_items} items", i)
                counts.append(enc.list.num_items)
            before = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).tolist()
            if before[-1] != self.child.col.num_rows:
                raise self.col.error(f"list pages hold {before[-1]} items, the item column {self.child.col.num_rows}")
            self._items_before = before
        return self._items_before

    def _offsets(self, p: int, local: Spans) -> Fetch[np.ndarray]:
        offsets = self.col.encoding(p).list.offsets
        return (yield from self.col.located(decode_offsets(offsets, self.col.buffers(p), extended(local)), p))

    def read(self, ranges: Spans) -> Fetch[pa.Array]:
        before = self.items_before()
        item_ranges: Spans = []
        lengths, valid = [], []
        split = self.col.split(ranges)
        raws = yield from gather([self._offsets(p, local) for p, local in split])
        for (p, local), raw in zip(split, raws):
            lst = self.col.encoding(p).list
            for start, end, ln, ok in value_spans(raw, local, lst.null_offset_adjustment):
                # increasing, so inside [0, num_items] when its ends are (an end >= 2**63 wrapped negative)
                if (ln < 0).any() or start < 0 or end > lst.num_items:
                    raise self.col.error("list offsets are not monotonic or exceed num_items", p)
                lengths.append(ln)
                valid.append(ok)
                if end > start:
                    item_ranges.append((before[p] + start, before[p] + end))
        merged: Spans = []
        for s, e in item_ranges:
            if merged and merged[-1][1] == s:
                merged[-1] = (merged[-1][0], e)
            else:
                merged.append((s, e))
        items = (yield from self.child.read(merged)) if merged else pa.array([], self.dtype.value_type)
        lens = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
        ok = np.concatenate(valid) if valid else np.zeros(0, bool)
        out = variable(self.dtype, lens, ok, None, [items])
        if out is None:
            raise self.col.error("more than 2**31 list items in one read of a 32-bit-offset list")
        return out


class ListBytesNode(Node):
    """A string / binary field stored as List<UInt8> in two columns (Lance 0.13's 2.0 files): the list's offsets and
    validity become the string's, its items the bytes."""

    def __init__(self, ctx: FieldContext, col: Column, dtype: pa.DataType, items: Column) -> None:
        large = pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype)
        ltype = pa.large_list(pa.uint8()) if large else pa.list_(pa.uint8())
        self.dtype, self.col = dtype, col
        self.inner = ListNode(ctx, col, ltype, LeafNode(ctx, items, pa.uint8()))

    def read(self, ranges: Spans) -> Fetch[pa.Array]:
        lists = yield from self.inner.read(ranges)
        values = lists.values
        if values.null_count:
            raise CorruptFileError("null bytes inside a string", path=self.inner.ctx.path, column=self.col.info.index)
        data = values.buffers()[1]
        if data is None:
            data = pa.py_buffer(b"")
        elif values.offset:
            data = data.slice(values.offset)
        validity, offsets = lists.buffers()[:2]
        return pa.Array.from_buffers(self.dtype, len(lists), [validity, offsets, data], offset=lists.offset)


class FieldReader20(FieldReader):
    """Reads one top-level field of a 2.0 file."""

    def __init__(self, ctx: FieldContext) -> None:
        super().__init__(ctx)
        cols = iter(ctx.columns)
        self.root = self._build(ctx.field, cols, ctx.num_rows)
        self._plan: TakePlan | None | Literal[False] = False  # built on the first take

    def _build(self, field: pa.Field, cols: Iterator[ColumnInfo], rows: int | None) -> Node:
        """The node of ``field`` and its descendants; ``rows``: the rows its column holds (None in a list)."""
        ctx = self.ctx
        try:
            col = Column(ctx, next(cols), rows)
        except StopIteration:
            raise CorruptFileError("the file has fewer columns than its schema needs", path=ctx.path) from None
        t = field.type
        if field_metadata.is_packed_struct(field, FileVersion.V2_0):
            return LeafNode(ctx, col, t)
        if pa.types.is_struct(t):
            return StructNode(col, t, [self._build(t.field(i), cols, rows) for i in range(t.num_fields)])
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return ListNode(ctx, col, t, self._build(t.value_field, cols, None))
        if field is ctx.field and len(ctx.columns) == 2 and not pa.types.is_nested(t):  # columns_in_file
            return ListBytesNode(ctx, col, t, Column(ctx, next(cols), None))
        if pa.types.is_map(t):
            raise UnsupportedEncodingError("map columns need file version 2.2", path=ctx.path)
        if is_blob_column(ctx, col.info):
            if not (pa.types.is_binary(t) or pa.types.is_large_binary(t)):
                raise UnsupportedEncodingError(f"a blob column of type {t}", path=ctx.path, column=col.info.index)
            return BlobNode(ctx, col, t)
        return LeafNode(ctx, col, t)

    def plan(self, rows: Rows) -> Plan:
        """A take (or a range of at most ``take_few.FEW_ROWS`` rows) of a leaf column with a vectorized plan
        (take_plans.py) runs that plan's rounds; a whole read of a leaf column of simple pages whole.py's one round; any
        other read the node decoder's."""
        if not len(rows):
            return done(pa.array([], self.ctx.field.type))
        if not isinstance(rows, range):
            rows = np.asarray(rows, dtype=np.int64)
            point = self._point(rows)
            plan = self._take_plan() if point is None else None
            if plan is not None:
                return as_plan(self._finished(plan.take(rows), rows), f"plan/{type(plan).__name__}")
            return point or self._decoder(rows)
        start, stop = rows.start, rows.stop
        few = stop - start <= take_few.FEW_ROWS  # (more: the node decoder's few ranges cost less than the numpy take)
        point = self._point(np.arange(start, stop, dtype=np.int64)) if few else None
        if point is not None:
            return point
        root, name = self.root, f"decoder/{type(self.root).__name__}"
        if not isinstance(root, LeafNode):
            return as_plan(root.read([(start, stop)]), name)

        def read() -> Plan:
            return as_plan(root.read_chunked([(start, stop)]), name)

        if start == 0 and stop == root.col.num_rows and not isinstance(root, BlobNode):
            found = whole.field_plan(root.col.info, root.dtype, self.ctx.src.size, rows, read)
            if found is not None:
                return found
        return read()

    def _decoder(self, rows: np.ndarray) -> Plan:
        """The node decoder's take of ``rows``, run by run."""
        return as_plan(self.root.read(runs(rows)), f"decoder/{type(self.root).__name__}")

    def _point(self, rows: np.ndarray) -> Plan | None:
        """The vectorized plan's first round of a take of ``rows`` when it knows it (fixed-width values, dictionary
        indices (and on the first take the items), a few rows' binary end offsets), else None."""
        plan = self._take_plan()
        if plan is None:
            return None
        try:
            found = plan.point(rows)
        except (LanceError, *DECODE_ERRORS) as e:
            raise self.root.col.failure(e) from None
        if found is None:
            return None
        state, ranges = found
        name = f"plan/{type(plan).__name__}"

        def fetched(bufs: list[memoryview]) -> pa.Array | Plan:
            if not plan.one_round:
                return resume(self._finished(plan.take_point(rows, state, bufs), rows), name)
            try:
                out = plan.finish(rows, state, bufs)
            except (LanceError, *DECODE_ERRORS) as e:
                raise self.root.col.failure(e) from None
            return self._decoder(rows) if out is None else out

        return Plan(ranges, fetched, name)

    def _finished(self, step: Fetch[pa.Array | None], rows: np.ndarray) -> Fetch[pa.Array]:
        """A take plan's ``step``, its failures naming the column; the node decoder when it declines."""
        out = yield from self.root.col.located(step)
        return out if out is not None else (yield from self.root.read(runs(rows)))

    def _take_plan(self) -> TakePlan | None:
        """The leaf column's vectorized take plan (built once), or None (its ranges lie in their page buffers; the
        source checks each against the file)."""
        if self._plan is False:
            root = self.root
            if not isinstance(root, LeafNode) or isinstance(root, BlobNode):
                self._plan = None
                return None
            try:
                self._plan = plan_take(root.col, root.dtype, lambda rows: root.read(runs(rows)))
            except (LanceError, *DECODE_ERRORS) as e:
                raise root.col.failure(e) from None
        return self._plan
