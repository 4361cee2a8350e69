"""Vectorized take for the common 2.0 leaf columns (encodings_v2_0.proto).

Most columns of real files are pages of one of three shapes, and for each the bytes of row ``r`` are found by
arithmetic, not by walking the encoding tree page by page:

* ``Nullable(no_nulls | some_nulls | all_nulls, Flat)`` of whole-byte values: the value at ``buffer(p) + (r - start(p))
  * width``, its validity bit at ``validity(p) + (r - start(p)) // 8`` (also a ``FixedSizeList`` of such no-null items,
  e.g. vectors: one value of ``dimension * width``; and booleans, one bit a value, for takes of a few rows only);
* ``Dictionary(indices = such a Flat, items)`` for a plain string/binary column (1-based indices, 0 = null): the index
  as above, the items decoded on the column's first take (in the same rounds as its indices);
* ``Binary(indices = no-null Flat offsets, bytes = Flat u8)``: the two end offsets around the row, then its bytes (two
  fetch rounds).

A take computes every position with numpy (a take of at most ``FEW_ROWS`` rows with Python ints, take_few.py).  ``take``
is a ``Fetch`` (encodings/base.py): it yields the byte ranges of each round and is sent their bytes, so the file reader
fetches every round with the other fields' (one coalesced ``read_ranges``).  Pages are grouped by shape: a column whose
pages differ (pylance writes dictionary pages next to binary ones when a batch has many distinct strings) gets a
``MixedPlan`` that sends each row to its page group's plan, pages of no such shape to the generic decoder.  ``point``
plans a take's first round without running the plan (Flat; Dictionary, with its items on the first take; a few rows'
Binary end offsets, whose bytes ``take_point`` then asks for)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from itertools import accumulate
from typing import TYPE_CHECKING, cast

import numpy as np
import pyarrow as pa

from lancelot.encodings.base import Fetch, gather
from lancelot.encodings.v2_0 import take_few, whole
from lancelot.encodings.v2_0.take_few import FEW_ROWS

if TYPE_CHECKING:
    from lancelot.encodings.v2_0.field_reader import Column

NO_VALIDITY, SOME_NULLS, ALL_NULLS = take_few.NO_VALIDITY, take_few.SOME_NULLS, take_few.ALL_NULLS


def _check(table: Column, bad: np.ndarray, page: np.ndarray, msg: str) -> None:
    if bad.any():
        raise table.error(msg, int(page[bad][0]))


def _ranges(pos: np.ndarray, lengths: np.ndarray) -> list[tuple[int, int]]:
    """The non-empty (pos, length) pairs, in order."""
    sizes = lengths.tolist()
    if all(sizes):
        return list(zip(pos.tolist(), sizes))
    return [(p, n) for p, n in zip(pos.tolist(), sizes) if n]


def _fetch(pos: np.ndarray, lengths: np.ndarray) -> Fetch[np.ndarray]:
    """The bytes at each (pos, length), concatenated in order (one round)."""
    bufs = yield _ranges(pos, lengths)
    return np.frombuffer(b"".join(bufs), np.uint8)


class FixedValues:
    """Values and validity of Nullable/Flat pages of one width (also dictionary indices); ``bit``: one-bit values
    (booleans), which only takes of a few rows read here (``few``)."""

    def __init__(self, table: Column, plans: list[tuple[int, int, int, int]], width: int, bit: bool = False) -> None:
        self.table, self.width, self.bit = table, width, bit
        kinds = [p[0] for p in plans]
        self.all_valid = not any(kinds)  # no page of the column has a validity buffer or is all null
        none = (0, 0)
        values = [self._buffer(i, p[1]) if p[0] != ALL_NULLS else none for i, p in enumerate(plans)]
        validity = [self._buffer(i, p[2]) if p[0] == SOME_NULLS else none for i, p in enumerate(plans)]
        base, size = [v[0] for v in values], [v[1] for v in values]
        vbase, vsize = [v[0] for v in validity], [v[1] for v in validity]
        cap = [x * 8 for x in size] if bit else [x // width for x in size]  # values each buffer holds
        self.few = take_few.FewValues(base, cap, width, kinds, vbase, vsize, bit)
        self._values, self._validity = values, validity

    def _buffer(self, page: int, i: int) -> tuple[int, int]:
        loc = self.table.buffer(page, i)
        if loc is None:
            raise self.table.error(f"buffer index {i} out of {len(self.table.bufs[page])} buffers", page)
        return loc

    @cached_property
    def kinds(self) -> np.ndarray:
        return np.array(self.few.kinds, np.int8)

    @cached_property
    def values(self) -> np.ndarray:
        """(position, size) of each page's values buffer (the numpy twin of ``few``, built on the first take of more
        than a few rows)."""
        return np.array(self._values, np.int64).reshape(-1, 2)

    @cached_property
    def validity(self) -> np.ndarray:
        return np.array(self._validity, np.int64).reshape(-1, 2)

    @cached_property
    def value_pos(self) -> np.ndarray:
        pos: np.ndarray = self.values[:, 0].copy()
        return pos

    @cached_property
    def value_end(self) -> np.ndarray:
        end: np.ndarray = self.value_pos + self.values[:, 1]
        return end

    def positions(self, page: np.ndarray, local: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """File positions and lengths of the rows' values, then of their validity bytes (checked)."""
        w = self.width
        kinds = None if self.all_valid else self.kinds[page]
        if kinds is None or not kinds.any():  # every page asked has no validity (the common case)
            at = self.value_pos[page] + local * w
            _check(self.table, at + w > self.value_end[page], page, "flat buffer is shorter than the page's rows")
            return at, np.full(len(page), w, np.int64)
        has = kinds != ALL_NULLS
        _check(
            self.table,
            has & ((local + 1) * w > self.values[page, 1]),
            page,
            "flat buffer is shorter than the page's rows",
        )
        some = kinds == SOME_NULLS
        _check(
            self.table,
            some & (local // 8 >= self.validity[page, 1]),
            page,
            "validity buffer is shorter than the page's rows",
        )
        pos = np.concatenate([self.values[page, 0] + local * w, self.validity[page, 0] + local // 8])
        lengths = np.concatenate([np.where(has, w, 0), some.astype(np.int64)])
        return pos, lengths

    def decode(self, raw: np.ndarray, page: np.ndarray, local: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(raw values, rows x width; validity or None when every row is valid) of the rows, from the bytes of the
        non-empty ranges of ``positions(page, local)``, concatenated."""
        w = self.width
        if self.all_valid:
            return raw.reshape(-1, w), None
        kinds = self.kinds[page]
        has, some = kinds != ALL_NULLS, kinds == SOME_NULLS
        if not kinds.any():
            return raw.reshape(-1, w), None
        out = np.zeros((len(page), w), np.uint8)
        nv = int(has.sum())
        out[has] = raw[: nv * w].reshape(-1, w)
        if has.all() and not some.any():
            return out, None
        valid = has.copy()
        if some.any():
            byte = raw[nv * w :]
            valid[some] = (byte >> (local[some] % 8).astype(np.uint8)) & 1 == 1
        return out, valid


class TakePlan:
    """A vectorized take for one leaf column (or for some of its pages, inside a MixedPlan)."""

    #: ``take_point`` needs no round after the planned one: ``finish`` gives its result directly
    one_round = False

    def finish(self, rows: np.ndarray, state: object, bufs: list[memoryview]) -> pa.Array | None:
        """``take_point`` of a one-round plan, without a Fetch step."""
        raise NotImplementedError

    def take(self, rows: np.ndarray) -> Fetch[pa.Array | None]:
        """The rows (sorted, unique, in range), or None to fall back to the generic decoder."""
        raise NotImplementedError

    def point(self, rows: np.ndarray) -> tuple[object, list[tuple[int, int]]] | None:
        """A take of ``rows`` planned from its first fetch round without a load first: (state, its byte ranges) for
        ``take_point``, or None when this plan cannot."""
        return None

    def take_point(self, rows: np.ndarray, state: object, bufs: list[memoryview]) -> Fetch[pa.Array | None]:
        """The take ``point(rows)`` planned, from the bytes of its ranges (and any later round it asks for); None: use
        the generic decoder."""
        raise NotImplementedError


class _FixedPlan(TakePlan):
    """A plan whose first round is a FixedValues read, and its last (``finish``)."""

    table: Column
    _fixed: FixedValues
    one_round = True

    def take_point(self, rows: np.ndarray, state: object, bufs: list[memoryview]) -> Fetch[pa.Array | None]:
        return self.finish(rows, state, bufs)
        yield  # (a Fetch of no further round)

    def _few(self, rows: np.ndarray) -> tuple[list[int] | take_few.Span | take_few.Few, list[tuple[int, int]]] | None:
        """(state, byte ranges) when the take is a few rows (take_few.FewValues.plan), else None."""
        if len(rows) > FEW_ROWS:
            return None
        pages, local = take_few.locate(self.table.starts, rows.tolist())
        return self._fixed.few.plan(pages, local, self.table.error)

    def _first_round(self, rows: np.ndarray) -> tuple[object, list[tuple[int, int]]]:
        """(state, byte ranges) of the values round of a take of ``rows``: the state is the rows' pages (a list), a
        take_few.Span or Few on the few-row path, else (page, local row) arrays."""
        few = self._few(rows)
        if few is not None:
            return few
        page, local = self.table.locate(rows)
        return (page, local), _ranges(*self._fixed.positions(page, local))

    def _values(self, state: object, bufs: list[memoryview]) -> tuple[np.ndarray, np.ndarray | None]:
        """(raw values, rows x width; validity or None) of a non-few ``_first_round`` from its bytes."""
        assert isinstance(state, tuple)
        page, local = state
        return self._fixed.decode(np.frombuffer(b"".join(bufs), np.uint8), page, local)


class FlatPlan(_FixedPlan):
    def __init__(self, table: Column, values: FixedValues, dtype: pa.DataType) -> None:
        self.table, self.values, self.dtype = table, values, dtype
        self._fixed = values
        self._list = pa.types.is_fixed_size_list(dtype)

    def take(self, rows: np.ndarray) -> Fetch[pa.Array | None]:
        if self.values.bit and len(rows) > FEW_ROWS:
            return None  # booleans: the generic decoder
        state, ranges = self._first_round(rows)
        return (yield from self.take_point(rows, state, (yield ranges)))

    def point(self, rows: np.ndarray) -> tuple[object, list[tuple[int, int]]] | None:
        if self.values.bit and len(rows) > FEW_ROWS:
            return None
        return self._first_round(rows)

    def finish(self, rows: np.ndarray, state: object, bufs: list[memoryview]) -> pa.Array:
        if isinstance(state, list):  # few rows, whole-byte values, no nulls
            return self._array(len(rows), None, pa.py_buffer(b"".join(bufs)))
        if isinstance(state, take_few.Span):
            return self._array(len(rows), None, pa.py_buffer(self.values.few.span_values(state, bufs)))
        if isinstance(state, take_few.Few):
            few = self.values.few
            listed = few.valid(state, bufs)
            vbuf = None if listed is None else take_few.validity(listed)
            return self._array(len(rows), vbuf, pa.py_buffer(few.values(state, bufs)))
        raw, valid = self._values(state, bufs)
        vbuf = None if valid is None or valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
        return self._array(len(rows), vbuf, pa.py_buffer(raw))

    def _array(self, n: int, vbuf: pa.Buffer | None, values: pa.Buffer) -> pa.Array:
        t = self.dtype
        if self._list:
            items = pa.Array.from_buffers(t.value_type, n * t.list_size, [None, values])
            return pa.Array.from_buffers(t, n, [vbuf], children=[items])
        return pa.Array.from_buffers(t, n, [vbuf, values])


class DictionaryPlan(_FixedPlan):
    """Plain string/binary pages stored as 1-based dictionary indices (0 = null) into Binary items (whole.py's shapes);
    a take is one round, the column's first also fetching every page's items."""

    def __init__(
        self,
        table: Column,
        indices: FixedValues,
        dtype: pa.DataType,
        shapes: dict[int, whole.Dictionary],
        counts: list[int],
    ) -> None:
        self.table, self.indices, self._fixed, self.dtype, self._shapes = table, indices, indices, dtype, shapes
        self._items: pa.Array | None = None
        self._item_ranges = [table.bufs[i][r] for i, d in shapes.items() for r in (d.items.offsets, d.items.data)]
        self._count_list = counts
        self._base_list = list(accumulate(counts[:-1], initial=0))  # each page's first item
        self._items_few: take_few.Items | None = None

    @cached_property
    def base(self) -> np.ndarray:
        return np.array(self._base_list, np.int64)

    @cached_property
    def counts(self) -> np.ndarray:
        return np.array(self._count_list, np.int64)

    def take(self, rows: np.ndarray) -> Fetch[pa.Array | None]:
        state, ranges = self.point(rows)
        return self.finish(rows, state, (yield ranges))

    def point(self, rows: np.ndarray) -> tuple[object, list[tuple[int, int]]]:
        """The indices' ranges, then (until the items are loaded) the items' buffers."""
        state, ranges = self._first_round(rows)
        extra = self._item_ranges if self._items is None else []
        return (state, len(extra)), ranges + extra

    def _load(self, bufs: list[memoryview]) -> pa.Array | None:
        """Every page's items from the bytes of ``_item_ranges`` (None: they do not add up)."""
        parts = []
        for k, d in enumerate(self._shapes.values()):
            part = whole.shared_strings(d.items, d.count, bufs[2 * k], bufs[2 * k + 1], self.dtype)
            if part is None:
                return None  # the node decoder reports them
            parts.append(part)
        return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)

    def finish(self, rows: np.ndarray, state: object, bufs: list[memoryview]) -> pa.Array | None:
        assert isinstance(state, tuple)
        state, loads = state
        if loads:
            if self._items is None:
                self._items = self._load(bufs[len(bufs) - loads :])
            bufs = bufs[: len(bufs) - loads]
        items = self._items
        if items is None:
            return None
        if isinstance(state, list | take_few.Span | take_few.Few):  # few rows
            return self._take_few(items, state, bufs)
        assert isinstance(state, tuple)
        page = state[0]
        raw, valid = self._values(state, bufs)
        idx = raw.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[raw.shape[1]]).ravel().astype(np.int64)
        _check(self.table, idx > self.counts[page], page, "dictionary index out of range of the page's items")
        present = idx > 0 if valid is None else valid & (idx > 0)
        if present.all():
            return items.take(pa.array(self.base[page] + idx - 1))
        glob = np.where(present, self.base[page] + idx - 1, 0)
        return items.take(pa.array(glob, mask=~present))

    def _take_few(
        self, all_items: pa.Array, state: list[int] | take_few.Span | take_few.Few, bufs: list[memoryview]
    ) -> pa.Array | None:
        few = self.indices.few
        if isinstance(state, list):  # no null indices
            pages, idx, valid = state, take_few.uints(b"".join(bufs), few.width), None
        elif isinstance(state, take_few.Span):
            pages, idx, valid = state.pages, take_few.uints(few.span_values(state, bufs), few.width), None
        else:
            pages, idx, valid = state.pages, take_few.uints(few.values(state, bufs), few.width), few.valid(state, bufs)
        base, counts, page = self._base_list, self._count_list, pages[0]
        if valid is None and page == pages[-1]:  # one page (rows are sorted), no null index
            if max(idx) > counts[page]:
                raise self.table.error("dictionary index out of range of the page's items", page)
            first = base[page] - 1
            picks = [first + i if i else -1 for i in idx]
        else:
            picks = []
            for j, (p, i) in enumerate(zip(pages, idx)):
                if i > counts[p]:
                    raise self.table.error("dictionary index out of range of the page's items", p)
                picks.append(base[p] + i - 1 if i and (valid is None or valid[j]) else -1)
        items = self._items_few
        if items is None:
            items = self._items_few = take_few.Items(all_items)
        if items.valid is not None:  # null items
            picks = [g if g >= 0 and items.valid[g] else -1 for g in picks]
        data, lengths = items.pick(picks)
        offsets = take_few.offsets(lengths, items.large)
        if offsets is None:
            return None  # let the generic path raise its error
        vbuf = None if min(picks) >= 0 else take_few.validity([g >= 0 for g in picks])
        return pa.Array.from_buffers(items.type, len(picks), [vbuf, offsets, pa.py_buffer(data)])


class BinaryPlan(TakePlan):
    """Binary pages: no-null flat end offsets (null-adjusted) and flat bytes (two rounds: the end offsets around each
    row, then its bytes)."""

    def __init__(self, table: Column, pages: list[tuple[int, int, int, int, int, int]], dtype: pa.DataType) -> None:
        """``pages``: per page (offsets position, offsets size, offset width, data position, data size, null
        adjustment)."""
        self.table, self.dtype = table, dtype
        self._large = pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype)
        self._lists: list[list[int]] = [list(c) for c in zip(*pages)]

    @cached_property
    def offsets(self) -> np.ndarray:
        return np.column_stack(self._lists[:2]).astype(np.int64)

    @cached_property
    def widths(self) -> np.ndarray:
        return np.array(self._lists[2], np.int64)

    @cached_property
    def data(self) -> np.ndarray:
        return np.column_stack(self._lists[3:5]).astype(np.int64)

    @cached_property
    def adjust(self) -> np.ndarray:
        return np.array(self._lists[5], np.uint64)

    def point(self, rows: np.ndarray) -> tuple[object, list[tuple[int, int]]] | None:
        """A few rows: their pages, and the ranges of their end offsets (the bytes, a second round, are asked for by
        ``take_point``); None otherwise."""
        if len(rows) > FEW_ROWS:
            return None
        pages, local = take_few.locate(self.table.starts, rows.tolist())
        base, size, widths = self._lists[:3]
        return pages, take_few.binary_offset_ranges(base, size, widths, pages, local, self.table.error)

    def take_point(self, rows: np.ndarray, state: object, bufs: list[memoryview]) -> Fetch[pa.Array | None]:
        """The rows of ``pages`` from the bytes of their end offsets (``point``): their bytes fetched, then joined."""
        assert isinstance(state, list)  # point planned it
        pages = state
        widths, data_base, data_size, adjust = self._lists[2:]
        starts, stops, valid = take_few.binary_bounds(bufs, pages, widths, adjust, data_size, self.table.error)
        offsets = take_few.offsets([b - a for a, b in zip(starts, stops)], self._large)
        if offsets is None:
            return None  # let the generic path raise its error
        lo, hi, page = min(starts), max(stops), pages[0]
        if page == pages[-1] and hi - lo <= take_few.BINARY_SPAN_MAX:  # one page, near each other: one range
            (buf,) = yield [(data_base[page] + lo, hi - lo)]
            data = [buf[a - lo : b - lo] for a, b in zip(starts, stops)]
        else:
            data = yield [(data_base[p] + a, b - a) for p, a, b in zip(pages, starts, stops)]
        vbuf = take_few.validity(valid)
        return pa.Array.from_buffers(self.dtype, len(pages), [vbuf, offsets, pa.py_buffer(b"".join(data))])

    def _bounds(self, rows: np.ndarray) -> Fetch[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """First round: (page, start, stop, valid) of each row's bytes in its page's data buffer."""
        page, local = self.table.locate(rows)
        w = self.widths[page]
        _check(self.table, (local + 1) * w > self.offsets[page, 1], page, "binary offsets are shorter than the rows")
        first = local > 0
        raw = yield from _fetch(self.offsets[page, 0] + (local - first) * w, w * (1 + first))
        if (w == w[0]).all():
            ends = raw.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[int(w[0])]).astype(np.uint64)
        else:  # pages with different offset widths: decode entry by entry width
            counts = 1 + first
            ends = np.concatenate(
                [
                    np.frombuffer(
                        raw[int(o) : int(o) + int(c * wi)].tobytes(),
                        {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[int(wi)],
                    )
                    for o, c, wi in zip(np.cumsum(np.r_[0, (counts * w)[:-1]]), counts, w)
                ]
            ).astype(np.uint64)
        last = np.cumsum(1 + first) - 1
        adj = np.repeat(self.adjust[page], 1 + first)
        real = np.where((adj > 0) & (ends >= adj), ends - adj, ends).astype(np.int64)
        valid = ~((self.adjust[page] > 0) & (ends[last] >= self.adjust[page]))
        stop = real[last]
        start = np.where(first, real[last - 1], 0)
        bad = (start < 0) | (stop < start) | (stop > self.data[page, 1])  # (an offset >= 2**63 wraps negative)
        _check(self.table, bad, page, "binary offsets are not monotonic")
        return page, start, stop, valid

    def take(self, rows: np.ndarray) -> Fetch[pa.Array | None]:
        found = self.point(rows)
        if found is not None:
            state, ranges = found
            return (yield from self.take_point(rows, state, (yield ranges)))
        page, start, stop, valid = yield from self._bounds(rows)
        data = yield from _fetch(self.data[page, 0] + start, stop - start)
        n = len(rows)
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(stop - start, out=offsets[1:])
        if not self._large:
            if offsets[-1] > np.iinfo(np.int32).max:
                return None  # let the generic path raise its error
            offsets = offsets.astype(np.int32)
        vbuf = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
        return pa.Array.from_buffers(self.dtype, n, [vbuf, pa.py_buffer(offsets), pa.py_buffer(data)])


class GenericPlan(TakePlan):
    """Pages of no vectorized shape, inside a MixedPlan: the generic decoder, run by run."""

    def __init__(self, read: Callable[[np.ndarray], Fetch[pa.Array]]) -> None:
        self.read = read

    def take(self, rows: np.ndarray) -> Fetch[pa.Array | None]:
        return (yield from self.read(rows))


class MixedPlan(TakePlan):
    """A column whose pages differ in shape (e.g. dictionary pages and a binary tail page): each row goes to the plan of
    its page's group (their rounds side by side), the parts are put back in row order."""

    def __init__(self, table: Column, group: np.ndarray, plans: list[TakePlan]) -> None:
        self.table, self.group, self.plans = table, group, plans

    def take(self, rows: np.ndarray) -> Fetch[pa.Array | None]:
        g = self.group[self.table.locate(rows)[0]]
        if (g == g[0]).all():
            return (yield from self.plans[int(g[0])].take(rows))
        sels = [np.flatnonzero(g == k) for k in np.unique(g)]
        keys = [int(k) for k in np.unique(g)]
        parts = yield from gather([self.plans[k].take(rows[sel]) for k, sel in zip(keys, sels)])
        if any(part is None for part in parts):
            return None
        where = np.empty(len(rows), np.int64)
        where[np.concatenate(sels)] = np.arange(len(rows))
        return pa.concat_arrays(parts).take(pa.array(where))


#: page shapes (the kind keys of ``_page_kind``) page groups (the keys of ``_page_kind``)
FLAT, DICTIONARY, BINARY = "flat", "dictionary", "binary"


def _page_kind(table: Column, i: int, dtype: pa.DataType) -> tuple[str] | tuple[str, int] | None:
    """The plan group of page ``i`` by its shape (whole.page_shape): (FLAT,), (DICTIONARY, index width) or (BINARY,);
    None for the generic decoder."""
    s = table.shape(i, dtype)
    if isinstance(s, whole.Flat) or (s == whole.ALL_NULLS and whole.fixed_bits(dtype) is not None):
        return (FLAT,)
    binary = s.items if isinstance(s, whole.Dictionary) else s
    if not isinstance(binary, whole.Binary) or table.buffer(i, binary.offsets) is None:
        return None
    if table.buffer(i, binary.data) is None:
        return None  # the generic path reports the bad buffer index
    if isinstance(s, whole.Dictionary):
        return None if table.buffer(i, s.indices) is None else (DICTIONARY, s.width)
    return (BINARY,)


def _flat(s: whole.Shape | None, bits: int) -> tuple[int, int, int, int]:
    """(kind, values buffer, validity buffer, bits per value) of a Flat or all-null page."""
    if isinstance(s, whole.Flat):
        return (NO_VALIDITY if s.validity < 0 else SOME_NULLS), s.values, s.validity, s.bits
    return ALL_NULLS, -1, -1, bits  # (also the pages of other groups: never asked)


def _flat_plan(table: Column, dtype: pa.DataType, pages: list[int]) -> TakePlan:
    bits = whole.fixed_bits(dtype)
    assert bits is not None  # FLAT pages are of a fixed-width type
    plans = [_flat(table.shape(i, dtype) if i in pages else None, bits) for i in range(len(table.bufs))]
    return FlatPlan(table, FixedValues(table, plans, max(bits // 8, 1), bits == 1), dtype)


def _dictionary_plan(table: Column, dtype: pa.DataType, pages: list[int]) -> TakePlan:
    n = len(table.bufs)
    plans = [(ALL_NULLS, -1, -1, 8)] * n
    counts = [0] * n
    shapes = {i: cast(whole.Dictionary, table.shape(i, dtype)) for i in pages}
    for i, d in shapes.items():
        plans[i], counts[i] = (NO_VALIDITY, d.indices, -1, d.width * 8), d.count
    width = max(p[3] for p in plans) // 8 or 1
    return DictionaryPlan(table, FixedValues(table, plans, width), dtype, shapes, counts)


def _binary_plan(table: Column, dtype: pa.DataType, pages: list[int]) -> TakePlan:
    rows = [(0, 0, 1, 0, 0, 0)] * len(table.bufs)  # (pages of other groups are never asked)
    for i in pages:
        s = cast(whole.Binary, table.shape(i, dtype))
        rows[i] = (*table.bufs[i][s.offsets], s.width, *table.bufs[i][s.data], s.adjust)
    return BinaryPlan(table, rows, dtype)


def plan_take(column: Column, dtype: pa.DataType, generic: Callable[[np.ndarray], Fetch[pa.Array]]) -> TakePlan | None:
    """The vectorized plan for a leaf column (field_reader.Column), or None for the generic path.

    Pages are grouped by shape; a column of one shape gets that shape's plan, a column of several a MixedPlan (pages of
    no vectorized shape then use ``generic``, rows -> array)."""
    n = len(column.info.meta.pages)
    if n == 0:
        return None
    kinds = [_page_kind(column, i, dtype) for i in range(n)]
    keys = list(dict.fromkeys(kinds))
    if keys == [None]:
        return None
    plans: list[TakePlan] = []
    for k in keys:
        pages = [i for i in range(n) if kinds[i] == k]
        if k is None:
            plans.append(GenericPlan(generic))
        elif k[0] == FLAT:
            plans.append(_flat_plan(column, dtype, pages))
        elif k[0] == DICTIONARY:
            plans.append(_dictionary_plan(column, dtype, pages))
        else:
            plans.append(_binary_plan(column, dtype, pages))
    if len(plans) == 1:
        return plans[0]
    group = np.array([keys.index(k) for k in kinds], np.int64)
    return MixedPlan(column, group, plans)
