"""Where a 2.0 take's bytes are (encodings_v2_0.proto: Flat, Binary, Dictionary), for the take plans (take_plans.py).

``FlatValues`` locates the rows of Flat pages (values, validity bits; dictionary indices too): a take of at most
``FEW_ROWS`` rows in Python ints (ten numpy calls cost more than a loop over ten ints), a larger one with numpy, with
the same checks.  The other helpers are the few-row steps of Binary and Dictionary pages."""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from functools import cached_property
from itertools import accumulate
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lancelot.errors import CorruptFileError

if TYPE_CHECKING:
    from lancelot.encodings.v2_0.field_reader import Column

#: takes of at most this many rows use this module
FEW_ROWS = 32
#: a few rows' values in one page within this many bytes are read as one range (``Span``)
SPAN_MAX = 16 << 10
#: a few rows' bytes in one Binary page within this many bytes are read as one range
BINARY_SPAN_MAX = 64 << 10
#: struct codes of unsigned ints by width in bytes (memoryview.cast)
_UINT_CODES = {1: "B", 2: "H", 4: "I", 8: "Q"}
LITTLE = sys.byteorder == "little"
#: the largest end offset of a 32-bit-offset string array
MAX_INT32 = (1 << 31) - 1

#: page kinds (take_plans.NO_VALIDITY, SOME_NULLS, ALL_NULLS)
NO_VALIDITY, SOME_NULLS, ALL_NULLS = 0, 1, 2

Error = Callable[[str, int], CorruptFileError]
Ranges = list[tuple[int, int]]


def locate(starts: list[int], rows: list[int]) -> tuple[list[int], list[int]]:
    """(page, row within the page) of each row (sorted); ``starts`` are the pages' first rows and the end."""
    if len(starts) == 2 or not rows:
        return [0] * len(rows), rows
    p = bisect_right(starts, rows[0]) - 1
    if rows[-1] < starts[p + 1]:  # all in one page (a clustered take): one search
        first = starts[p]
        return [p] * len(rows), [r - first for r in rows]
    pages = [bisect_right(starts, r) - 1 for r in rows]
    return pages, [r - starts[p] for r, p in zip(rows, pages)]


class Span:
    """A few rows' take of whole-byte Flat values with no nulls, all in one page and near each other: one range holds
    them, each row's value at its offset in it."""

    __slots__ = ("pages", "offsets")

    def __init__(self, pages: list[int], offsets: list[int]) -> None:
        self.pages, self.offsets = pages, offsets


class Few:
    """A few rows' take of Flat values with nulls or of bits: their pages and rows in them; the first ``split`` fetched
    ranges hold the values of the rows not in all-null pages, the others the validity bytes of the rows in pages with
    some nulls."""

    __slots__ = ("pages", "local", "split")

    def __init__(self, pages: list[int], local: list[int], split: int) -> None:
        self.pages, self.local, self.split = pages, local, split


class FlatValues:
    """Values and validity of a column's Flat pages of one width (also dictionary indices), per page: the value
    buffer's position and how many values it holds, the page's kind (no validity, some nulls, all null), its bitmap's
    position and size; ``width`` bytes a value, or one bit (``bit``: booleans, read here for a few rows only).

    ``plan`` locates a take's bytes (a few rows in Python ints, more with numpy), checked against the buffers; ``read``
    gives their values and validity from the fetched bytes."""

    def __init__(self, table: Column, plans: list[tuple[int, int, int, int]], width: int, bit: bool = False) -> None:
        """``plans``: per page (kind, values buffer index, validity buffer index, bits per value)."""
        self.table, self.width, self.bit = table, width, bit
        self.kinds = [p[0] for p in plans]
        self.all_valid = not any(self.kinds)  # no page of the column has a validity buffer or is all null
        values = [self._buffer(i, p[1]) if p[0] != ALL_NULLS else (0, 0) for i, p in enumerate(plans)]
        validity = [self._buffer(i, p[2]) if p[0] == SOME_NULLS else (0, 0) for i, p in enumerate(plans)]
        self.base, self.vbase = [v[0] for v in values], [v[0] for v in validity]
        self.vsize = [v[1] for v in validity]
        self.cap = [v[1] * 8 for v in values] if bit else [v[1] // width for v in values]  # values each buffer holds
        self._values, self._validity = values, validity

    def _buffer(self, page: int, i: int) -> tuple[int, int]:
        loc = self.table.buffer(page, i)
        if loc is None:
            raise self.table.error(f"buffer index {i} out of {len(self.table.bufs[page])} buffers", page)
        return loc

    def plan(self, rows: np.ndarray) -> tuple[object, Ranges]:
        """(state for ``read``, the byte ranges of the rows' values then of their validity bytes)."""
        if len(rows) <= FEW_ROWS:
            return self._few(*locate(self.table.starts, rows.tolist()))
        page, local = self.table.locate(rows)
        return (page, local), nonempty(*self._positions(page, local))

    def read(
        self, state: object, bufs: Sequence[memoryview]
    ) -> tuple[bytes | np.ndarray, list[bool] | np.ndarray | None]:
        """(the rows' values, ``width`` bytes each (bits: a bitmap); their validity, None when all valid) from the bytes
        of ``plan``'s ranges."""
        if isinstance(state, list):  # few rows, whole-byte values, no nulls
            return b"".join(bufs), None
        if isinstance(state, Span):
            w, buf = self.width, bufs[0]
            return b"".join([buf[o : o + w] for o in state.offsets]), None
        if isinstance(state, Few):
            return self._few_values(state, bufs), self._few_valid(state, bufs)
        assert isinstance(state, tuple)
        page, local = state
        return self._decode(np.frombuffer(b"".join(bufs), np.uint8), page, local)

    def _few(self, pages: list[int], local: list[int]) -> tuple[list[int] | Span | Few, Ranges]:
        """A few rows: of whole-byte values with no nulls, a ``Span`` when they lie near each other in one page (one
        range: a clustered take), else just ``pages`` (the values are the ranges' bytes); else a ``Few``."""
        base, cap, error = self.base, self.cap, self.table.error
        if self.all_valid and not self.bit:
            w, p = self.width, pages[0]
            first = local[0]
            span = (local[-1] - first + 1) * w
            if span <= SPAN_MAX and p == pages[-1] and first >= 0:  # rows sorted: one page, near each other
                if local[-1] >= cap[p]:
                    raise error("flat buffer is shorter than the page's rows", p)
                return Span(pages, [(i - first) * w for i in local]), [(base[p] + first * w, span)]
            out = []
            for p, i in zip(pages, local):
                if i >= cap[p]:
                    raise error("flat buffer is shorter than the page's rows", p)
                out.append((base[p] + i * w, w))
            return pages, out
        kinds, bit, w = self.kinds, self.bit, self.width
        ranges, bits = [], []
        for p, i in zip(pages, local):
            kind = kinds[p]
            if kind != ALL_NULLS:
                if i >= cap[p]:
                    raise error("flat buffer is shorter than the page's rows", p)
                ranges.append((base[p] + (i >> 3), 1) if bit else (base[p] + i * w, w))
            if kind == SOME_NULLS:
                if i >> 3 >= self.vsize[p]:
                    raise error("validity buffer is shorter than the page's rows", p)
                bits.append((self.vbase[p] + (i >> 3), 1))
        return Few(pages, local, len(ranges)), ranges + bits

    def _few_valid(self, few: Few, bufs: Sequence[memoryview]) -> list[bool] | None:
        if self.all_valid:
            return None
        kinds, out, at = self.kinds, [], few.split
        for p, i in zip(few.pages, few.local):
            kind = kinds[p]
            if kind == SOME_NULLS:
                out.append(bool(bufs[at][0] >> (i & 7) & 1))
                at += 1
            else:
                out.append(kind == NO_VALIDITY)
        return None if all(out) else out

    def _few_values(self, few: Few, bufs: Sequence[memoryview]) -> bytes:
        """Zeros for rows of all-null pages; bits: an LSB-first bitmap."""
        kinds, at = self.kinds, 0
        if self.bit:
            bits = 0
            for j, (p, i) in enumerate(zip(few.pages, few.local)):
                if kinds[p] != ALL_NULLS:
                    bits |= (bufs[at][0] >> (i & 7) & 1) << j
                    at += 1
            return bits.to_bytes((len(few.pages) + 7) // 8, "little")
        out: list[bytes | memoryview] = []
        zero = bytes(self.width)
        for p in few.pages:
            if kinds[p] == ALL_NULLS:
                out.append(zero)
            else:
                out.append(bufs[at])
                at += 1
        return b"".join(out)

    @cached_property
    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The numpy twins (built on the first take of more than a few rows): kinds, (position, size) of the values and
        of the validity, the values' ends."""
        values = np.array(self._values, np.int64).reshape(-1, 2)
        validity = np.array(self._validity, np.int64).reshape(-1, 2)
        return np.array(self.kinds, np.int8), values, validity, values[:, 0] + values[:, 1]

    def _positions(self, page: np.ndarray, local: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """File positions and lengths of the rows' values, then of their validity bytes (checked)."""
        w, (kinds_of, values, validity, end) = self.width, self._arrays
        kinds = None if self.all_valid else kinds_of[page]
        if kinds is None or not kinds.any():  # every page asked has no validity (the common case)
            at = values[page, 0] + local * w
            check(self.table, at + w > end[page], page, "flat buffer is shorter than the page's rows")
            return at, np.full(len(page), w, np.int64)
        has, some = kinds != ALL_NULLS, kinds == SOME_NULLS
        check(
            self.table, has & ((local + 1) * w > values[page, 1]), page, "flat buffer is shorter than the page's rows"
        )
        check(
            self.table,
            some & (local // 8 >= validity[page, 1]),
            page,
            "validity buffer is shorter than the page's rows",
        )
        pos = np.concatenate([values[page, 0] + local * w, validity[page, 0] + local // 8])
        return pos, np.concatenate([np.where(has, w, 0), some.astype(np.int64)])

    def _decode(self, raw: np.ndarray, page: np.ndarray, local: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(raw values, rows x width; validity or None) from the bytes of the non-empty ``_positions`` ranges."""
        w = self.width
        kinds = None if self.all_valid else self._arrays[0][page]
        if kinds is None or not kinds.any():
            return raw.reshape(-1, w), None
        has, some = kinds != ALL_NULLS, kinds == SOME_NULLS
        out = np.zeros((len(page), w), np.uint8)
        nv = int(has.sum())
        out[has] = raw[: nv * w].reshape(-1, w)
        if has.all() and not some.any():
            return out, None
        valid = has.copy()
        if some.any():
            valid[some] = (raw[nv * w :] >> (local[some] % 8).astype(np.uint8)) & 1 == 1
        return out, valid


def check(table: Column, bad: np.ndarray, page: np.ndarray, msg: str) -> None:
    """Raise ``msg`` naming the first bad row's page, if any row is bad."""
    if bad.any():
        raise table.error(msg, int(page[bad][0]))


def nonempty(pos: np.ndarray, lengths: np.ndarray) -> Ranges:
    """The non-empty (pos, length) pairs, in order."""
    sizes = lengths.tolist()
    if all(sizes):
        return list(zip(pos.tolist(), sizes))
    return [(p, n) for p, n in zip(pos.tolist(), sizes) if n]


def uints(data: bytes, width: int) -> list[int]:
    """Little-endian unsigned ints of ``width`` bytes (a memoryview cast on a little-endian host: no numpy call)."""
    code = _UINT_CODES.get(width)
    if code is not None and LITTLE and len(data) % width == 0:
        ints: list[int] = memoryview(data).cast(code).tolist()  # type: ignore[call-overload]
        return ints
    return np.frombuffer(data, f"<u{width}").tolist()  # type: ignore[no-any-return]


def binary_offset_ranges(
    base: list[int], size: list[int], widths: list[int], pages: list[int], local: list[int], error: Error
) -> Ranges:
    """The end offsets around each row of a Binary page: its own, and the one before when any."""
    out = []
    for p, i in zip(pages, local):
        w = widths[p]
        if (i + 1) * w > size[p]:
            raise error("binary offsets are shorter than the rows", p)
        out.append((base[p] + (i - 1) * w, 2 * w) if i else (base[p], w))
    return out


def binary_bounds(
    raw: Sequence[memoryview], pages: list[int], widths: list[int], adjust: list[int], size: list[int], error: Error
) -> tuple[list[int], list[int], list[bool]]:
    """(start, stop, valid) of each row's bytes in its page's data buffer, from the offsets that
    ``binary_offset_ranges`` located; an end offset of at least the page's null adjustment marks a null and is that much
    above the real end."""
    starts, stops, valid = [], [], []
    w = widths[pages[0]] if pages else 0
    ints = iter(uints(b"".join(raw), w)) if all(widths[p] == w for p in pages) else None
    for b, p in zip(raw, pages):
        w, adj = widths[p], adjust[p]
        if ints is not None:  # one offset width: all decoded at once
            start = next(ints) if len(b) > w else 0
            stop = next(ints)
        else:
            stop = int.from_bytes(b[len(b) - w :], "little")
            start = int.from_bytes(b[:w], "little") if len(b) > w else 0
        ok = True
        if adj:
            if stop >= adj:
                stop, ok = stop - adj, False
            if len(b) > w and start >= adj:
                start -= adj
        if stop < start or stop > size[p]:
            raise error("binary offsets are not monotonic", p)
        starts.append(start)
        stops.append(stop)
        valid.append(ok)
    return starts, stops, valid


def validity(valid: list[bool] | np.ndarray | None) -> pa.Buffer | None:
    """An Arrow validity bitmap, or None when every value is valid (or ``valid`` is None)."""
    if valid is None:
        return None
    if isinstance(valid, np.ndarray):
        return None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    if all(valid):
        return None
    bits = sum(1 << i for i, ok in enumerate(valid) if ok)
    return pa.py_buffer(bits.to_bytes((len(valid) + 7) // 8, "little"))


def offsets(lengths: list[int], large: bool) -> pa.Buffer | None:
    """Arrow offsets of values of ``lengths`` bytes (None when they overflow 32-bit offsets)."""
    ends = list(accumulate(lengths, initial=0))
    if not large and ends[-1] > MAX_INT32:
        return None
    return pa.py_buffer(array("q" if large else "i", ends))


class Items:
    """A dictionary's string/binary items as Python offsets and bytes, to pick a few by index."""

    def __init__(self, items: pa.Array) -> None:
        self.type = items.type
        self.large = large = pa.types.is_large_string(items.type) or pa.types.is_large_binary(items.type)
        bufs = items.buffers()
        ends = np.frombuffer(bufs[1], np.int64 if large else np.int32)[items.offset : items.offset + len(items) + 1]
        self.ends: list[int] = ends.tolist()
        self.data = b"" if bufs[2] is None else bufs[2].to_pybytes()
        self.valid: list[bool] | None = items.is_valid().to_pylist() if items.null_count else None

    def pick(self, picks: list[int]) -> tuple[bytes, list[int]]:
        """The bytes of items ``picks`` (-1: an empty value), concatenated, and their lengths."""
        ends, data = self.ends, self.data
        parts = [data[ends[g] : ends[g + 1]] if g >= 0 else b"" for g in picks]
        return b"".join(parts), [len(x) for x in parts]
