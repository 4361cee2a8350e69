"""Takes of a few rows for the 2.0 take plans (take_plans.py), in Python ints.

A take of ten rows costs ten or so numpy calls per column on the vectorized path, each dearer
than a loop over ten ints; so up to ``FEW_ROWS`` rows the plans find each row's page, byte
positions and values here, with the same checks (encodings_v2_0.proto: Flat, Binary, Dictionary).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate

import numpy as np
import pyarrow as pa

from lancelot.errors import CorruptFileError

#: takes of at most this many rows use this module
FEW_ROWS = 32
#: the largest end offset of a 32-bit-offset string array
MAX_INT32 = (1 << 31) - 1

Error = Callable[[str, int], CorruptFileError]
Ranges = list[tuple[int, int]]


def locate(starts: list[int], rows: list[int]) -> tuple[list[int], list[int]]:
    """(page, row within the page) of each row; ``starts`` are the pages' first rows and the end."""
    if len(starts) == 2:
        return [0] * len(rows), rows
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


def uints(data: bytes, width: int) -> list[int]:
    """Little-endian unsigned ints of ``width`` bytes."""
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
    raw: Sequence[memoryview],
    pages: list[int],
    widths: list[int],
    adjust: list[int],
    size: list[int],
    error: Error,
) -> tuple[list[int], list[int], list[bool]]:
    """(start, stop, valid) of each row's bytes in its page's data buffer, from the offsets that
    ``binary_offset_ranges`` located; an end offset of at least the page's null adjustment marks
    a null and is that much above the real end."""
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
        large = pa.types.is_large_string(items.type) or pa.types.is_large_binary(items.type)
        bufs = items.buffers()
        ends = np.frombuffer(bufs[1], np.int64 if large else np.int32)[items.offset : items.offset + len(items) + 1]
        self.ends: list[int] = ends.tolist()
        self.data = b"" if bufs[2] is None else bufs[2].to_pybytes()

    def pick(self, picks: list[int]) -> tuple[bytes, list[int]]:
        """The bytes of items ``picks`` (-1: an empty value), concatenated, and their lengths."""
        ends, data = self.ends, self.data
        parts = [data[ends[g] : ends[g + 1]] if g >= 0 else b"" for g in picks]
        return b"".join(parts), [len(x) for x in parts]
