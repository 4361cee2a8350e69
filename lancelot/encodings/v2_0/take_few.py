"""Takes of a few rows for the 2.0 take plans (take_plans.py), in Python ints.

A take of ten rows costs ten or so numpy calls per column on the vectorized path, each dearer than a loop over ten ints;
so up to ``FEW_ROWS`` rows the plans find each row's page, byte positions and values here, with the same checks
(encodings_v2_0.proto: Flat, Binary, Dictionary). Flat pages with nulls and one-bit (boolean) pages are read here too
(``FewValues``)."""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate

import numpy as np
import pyarrow as pa

from lancelot.errors import CorruptFileError

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


def fixed_ranges(
    base: list[int], cap: list[int], width: int, pages: list[int], local: list[int], error: Error
) -> Ranges:
    """The (position, width) of each row's value in a Flat buffer that holds ``cap`` values."""
    out = []
    for p, i in zip(pages, local):
        if i >= cap[p]:
            raise error("flat buffer is shorter than the page's rows", p)
        out.append((base[p] + i * width, width))
    return out


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


class FewValues:
    """Flat values (and validity bitmaps) of a column's pages, per page in Python lists: the value buffer's position and
    how many values it holds, the page's kind (no validity, some nulls, all null), its bitmap's position and size;
    ``width`` bytes a value, or one bit (``bit``)."""

    def __init__(
        self,
        base: list[int],
        cap: list[int],
        width: int,
        kinds: list[int],
        vbase: list[int],
        vsize: list[int],
        bit: bool = False,
    ) -> None:
        self.base, self.cap, self.width, self.kinds = base, cap, width, kinds
        self.vbase, self.vsize, self.bit = vbase, vsize, bit
        self.all_valid = not any(kinds)

    def plan(self, pages: list[int], local: list[int], error: Error) -> tuple[list[int] | Span | Few, Ranges]:
        """(state, the rows' value ranges then validity ranges), checked against the buffers. Rows of whole-byte values
        with no nulls: a ``Span`` when they lie near each other in one page (one range: a clustered take), else just
        ``pages`` (the values are the ranges' bytes)."""
        if self.all_valid and not self.bit:
            w, p = self.width, pages[0]
            first = local[0]
            span = (local[-1] - first + 1) * w
            if span <= SPAN_MAX and p == pages[-1] and first >= 0:  # rows sorted: one page, near each other
                if local[-1] >= self.cap[p]:
                    raise error("flat buffer is shorter than the page's rows", p)
                return Span(pages, [(i - first) * w for i in local]), [(self.base[p] + first * w, span)]
            return pages, fixed_ranges(self.base, self.cap, w, pages, local, error)
        base, cap, kinds, bit, w = self.base, self.cap, self.kinds, self.bit, self.width
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

    def span_values(self, span: Span, bufs: Sequence[memoryview]) -> bytes:
        """The rows' values from the one range of a ``Span``."""
        w, buf = self.width, bufs[0]
        return b"".join([buf[o : o + w] for o in span.offsets])

    def valid(self, few: Few, bufs: Sequence[memoryview]) -> list[bool] | None:
        """Each row's validity (None: all valid)."""
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

    def values(self, few: Few, bufs: Sequence[memoryview]) -> bytes:
        """The rows' values, ``width`` bytes each (zeros for rows of all-null pages); bits: an LSB-first bitmap."""
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


def validity(valid: list[bool]) -> pa.Buffer | None:
    """An Arrow validity bitmap, or None when every value is valid."""
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
