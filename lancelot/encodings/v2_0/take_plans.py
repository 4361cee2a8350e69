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
from lancelot.encodings.v2_0.binary import variable
from lancelot.util.arrays import is_large

if TYPE_CHECKING:
    from lancelot.encodings.v2_0.field_reader import Column

NO_VALIDITY, SOME_NULLS, ALL_NULLS = take_few.NO_VALIDITY, take_few.SOME_NULLS, take_few.ALL_NULLS


class TakePlan:
    """A vectorized take for one leaf column (or for some of its pages, inside a MixedPlan)."""

    #: ``take_point`` needs no round after the planned one: ``finish`` gives its result directly
    one_round = False

    def finish(self, rows: np.ndarray, state: object, bufs: list[memoryview]) -> pa.Array | None:
        """``take_point`` of a one-round plan, without a Fetch step."""
        raise NotImplementedError

    def take(self, rows: np.ndarray) -> Fetch[pa.Array | None]:
        """The rows (sorted, unique, in range), or None to fall back to the generic decoder: ``point``'s round, then
        ``take_point``'s."""
        found = self.point(rows)
        if found is None:
            return None
        state, ranges = found
        return (yield from self.take_point(rows, state, (yield ranges)))

    def point(self, rows: np.ndarray) -> tuple[object, list[tuple[int, int]]] | None:
        """A take of ``rows`` planned from its first fetch round without a load first: (state, its byte ranges) for
        ``take_point``, or None when this plan cannot."""
        return None

    def take_point(self, rows: np.ndarray, state: object, bufs: list[memoryview]) -> Fetch[pa.Array | None]:
        """The take ``point(rows)`` planned, from the bytes of its ranges (and any later round it asks for); None: use
        the generic decoder."""
        raise NotImplementedError


class _FixedPlan(TakePlan):
    """A plan whose first round is a FlatValues read, and its last (``finish``)."""

    table: Column
    values: take_few.FlatValues
    one_round = True

    def take_point(self, rows: np.ndarray, state: object, bufs: list[memoryview]) -> Fetch[pa.Array | None]:
        return self.finish(rows, state, bufs)
        yield  # (a Fetch of no further round)


class FlatPlan(_FixedPlan):
    def __init__(self, table: Column, values: take_few.FlatValues, dtype: pa.DataType) -> None:
        self.table, self.values, self.dtype = table, values, dtype

    def point(self, rows: np.ndarray) -> tuple[object, list[tuple[int, int]]] | None:
        if self.values.bit and len(rows) > take_few.FEW_ROWS:
            return None  # booleans: the generic decoder
        return self.values.plan(rows)

    def finish(self, rows: np.ndarray, state: object, bufs: list[memoryview]) -> pa.Array:
        raw, valid = self.values.read(state, bufs)
        return whole.fixed_array(self.dtype, len(rows), take_few.validity(valid), pa.py_buffer(raw))


class DictionaryPlan(_FixedPlan):
    """Plain string/binary pages stored as 1-based dictionary indices (0 = null) into Binary items (whole.py's shapes);
    a take is one round, the column's first also fetching every page's items."""

    def __init__(
        self,
        table: Column,
        indices: take_few.FlatValues,
        dtype: pa.DataType,
        shapes: dict[int, whole.Dictionary],
        counts: list[int],
    ) -> None:
        self.table, self.values, self.dtype, self._shapes = table, indices, dtype, shapes
        self._items: pa.Array | None = None
        self._item_ranges = [table.bufs[i][r] for i, d in shapes.items() for r in (d.items.offsets, d.items.data)]
        self._count_list = counts
        self._base_list = list(accumulate(counts[:-1], initial=0))  # each page's first item
        self._items_few: take_few.Items | None = None

    @cached_property
    def _bases(self) -> tuple[np.ndarray, np.ndarray]:
        """Each page's first item and item count, as numpy arrays."""
        return np.array(self._base_list, np.int64), np.array(self._count_list, np.int64)

    def point(self, rows: np.ndarray) -> tuple[object, list[tuple[int, int]]]:
        """The indices' ranges, then (until the items are loaded) the items' buffers."""
        state, ranges = self.values.plan(rows)
        extra = self._item_ranges if self._items is None else []
        return (state, len(extra)), ranges + extra

    def _load(self, bufs: list[memoryview]) -> pa.Array | None:
        """Every page's items from the bytes of ``_item_ranges`` (None: they do not add up)."""
        parts = []
        for k, d in enumerate(self._shapes.values()):
            part = whole.shared_strings(d.items, d.num_items, bufs[2 * k], bufs[2 * k + 1], self.dtype)
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
        raw, valid = self.values.read(state, bufs)
        if isinstance(state, list | take_few.Span | take_few.Few):  # few rows
            assert not isinstance(raw, np.ndarray) and not isinstance(valid, np.ndarray)
            pages = state if isinstance(state, list) else state.pages
            return self._take_few(items, pages, take_few.uints(raw, self.values.width), valid)
        assert isinstance(state, tuple) and isinstance(raw, np.ndarray)
        page = state[0]
        idx = raw.view(whole.UINT[raw.shape[1]]).ravel().astype(np.int64)
        base, counts = self._bases
        take_few.check(self.table, idx > counts[page], page, "dictionary index out of range of the page's items")
        present = idx > 0 if valid is None else valid & (idx > 0)
        if present.all():
            return items.take(pa.array(base[page] + idx - 1))
        glob = np.where(present, base[page] + idx - 1, 0)
        return items.take(pa.array(glob, mask=~present))

    def _take_few(
        self, all_items: pa.Array, pages: list[int], idx: list[int], valid: list[bool] | None
    ) -> pa.Array | None:
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
        self._lists: list[list[int]] = [list(c) for c in zip(*pages)]

    @cached_property
    def _arrays(self) -> list[np.ndarray]:
        """The numpy twins of ``_lists`` (built on the first take of more than a few rows)."""
        return [np.array(c, np.uint64 if i == 5 else np.int64) for i, c in enumerate(self._lists)]

    def point(self, rows: np.ndarray) -> tuple[object, list[tuple[int, int]]] | None:
        """A few rows: their pages, and the ranges of their end offsets (the bytes, a second round, are asked for by
        ``take_point``); None otherwise."""
        if len(rows) > take_few.FEW_ROWS:
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
        offsets = take_few.offsets([b - a for a, b in zip(starts, stops)], is_large(self.dtype))
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

    def take(self, rows: np.ndarray) -> Fetch[pa.Array | None]:
        """A few rows: ``point`` then ``take_point``; more: the same two rounds with numpy."""
        if len(rows) <= take_few.FEW_ROWS:
            return (yield from super().take(rows))
        base, size, widths, data_base, data_size, adjust = self._arrays
        page, local = self.table.locate(rows)
        w = widths[page]
        take_few.check(self.table, (local + 1) * w > size[page], page, "binary offsets are shorter than the rows")
        first = local > 0
        counts = 1 + first
        raw = yield from _fetch(base[page] + (local - first) * w, w * counts)
        if (w == w[0]).all():
            ends = raw.view(whole.UINT[int(w[0])]).astype(np.uint64)
        else:  # pages with different offset widths: each row's entries at their width
            at = (np.cumsum(counts * w) - counts * w).tolist()
            parts = [
                np.frombuffer(raw[o : o + c * k], whole.UINT[k]) for o, c, k in zip(at, counts.tolist(), w.tolist())
            ]
            ends = np.concatenate(parts).astype(np.uint64)
        last = np.cumsum(counts) - 1
        adj = np.repeat(adjust[page], counts)
        real = np.where((adj > 0) & (ends >= adj), ends - adj, ends).astype(np.int64)
        valid = ~((adjust[page] > 0) & (ends[last] >= adjust[page]))
        stop = real[last]
        start = np.where(first, real[last - 1], 0)
        bad = (start < 0) | (stop < start) | (stop > data_size[page])  # (an offset >= 2**63 wraps negative)
        take_few.check(self.table, bad, page, "binary offsets are not monotonic")
        data = yield from _fetch(data_base[page] + start, stop - start)
        return variable(self.dtype, stop - start, valid, pa.py_buffer(data))  # (None: the generic path reports it)


def _fetch(pos: np.ndarray, lengths: np.ndarray) -> Fetch[np.ndarray]:
    """The bytes at each (pos, length), concatenated in order (one round)."""
    bufs = yield take_few.nonempty(pos, lengths)
    return np.frombuffer(b"".join(bufs), np.uint8)


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
    return FlatPlan(table, take_few.FlatValues(table, plans, max(bits // 8, 1), bits == 1), dtype)


def _dictionary_plan(table: Column, dtype: pa.DataType, pages: list[int]) -> TakePlan:
    n = len(table.bufs)
    plans = [(ALL_NULLS, -1, -1, 8)] * n
    counts = [0] * n
    shapes = {i: cast(whole.Dictionary, table.shape(i, dtype)) for i in pages}
    for i, d in shapes.items():
        plans[i], counts[i] = (NO_VALIDITY, d.indices, -1, d.width * 8), d.num_items
    width = max(p[3] for p in plans) // 8 or 1
    return DictionaryPlan(table, take_few.FlatValues(table, plans, width), dtype, shapes, counts)


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
