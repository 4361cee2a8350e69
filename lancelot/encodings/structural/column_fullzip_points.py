"""Takes of a few rows from a whole fixed-width full-zip leaf column, across its pages, in one pass
(the mini-block columns' twin: column_points.py).

Every row of a full-zip page without lists is ``control word + value`` at ``row * stride`` of the
page's buffer 0 (lance.encodings21.FullZipLayout), so a take is one byte range per row (adjacent
rows merged) and one decode.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np
import pyarrow as pa

from lancelot.encodings.structural.column_points import FEW_ROWS
from lancelot.encodings.structural.fullzip import FullZipPage
from lancelot.encodings.structural.leaf import with_validity
from lancelot.encodings.structural.page import PageReader
from lancelot.errors import CorruptFileError
from lancelot.util.types import is_plain_fixed


class ColumnFullZipPoints:
    """Point reads over all pages of a fixed-width full-zip column without lists (vectors, wide values).

    Every row is ``control word + value`` at ``row * stride`` of its page's buffer 0,
    so a take is one byte range per row (adjacent rows merged) and one decode.
    """

    def __init__(self, pages: list[FullZipPage], page_ends: np.ndarray) -> None:
        self.pages = pages
        self.page_ends = page_ends
        self.page_firsts = page_ends - np.array([p.info.num_rows for p in pages], dtype=np.int64)
        self.base = np.array([p.info.buffer(0)[0] for p in pages], dtype=np.int64)
        self.stride = pages[0].cw + pages[0].value_bytes
        self._lists: tuple[list[int], list[int], list[int]] = (
            self.page_ends.tolist(),
            self.page_firsts.tolist(),
            self.base.tolist(),
        )
        self.plain = _plain_rows(pages[0])

    def _plain_array(self, t: pa.DataType, n: int, bufs: list[memoryview]) -> pa.Array:
        """Rows that are their values' bytes (``plain``) as an Arrow array, without a copy for one range."""
        data = bufs[0] if len(bufs) == 1 else b"".join(bufs)
        if len(data) != n * self.stride:
            raise CorruptFileError(f"fetched {len(data)} bytes for {n} full-zip rows of {self.stride} bytes")
        values = pa.py_buffer(data)
        if pa.types.is_fixed_size_list(t):
            items = pa.Array.from_buffers(t.value_type, n * t.list_size, [None, values])
            return pa.Array.from_buffers(t, n, [None], children=[items])
        return pa.Array.from_buffers(t, n, [None, values])

    @classmethod
    def of(cls, pages: list[PageReader], page_ends: np.ndarray) -> ColumnFullZipPoints | None:
        """The reader, or None unless every page is fixed-width full-zip of one shape without lists."""
        full = [p for p in pages if isinstance(p, FullZipPage)]
        if not pages or len(full) != len(pages):
            return None
        if not all(not p.variable and not p.meaning.max_rep and not p.has_index for p in full):
            return None
        shape = {
            (p.cw, p.value_bytes, p.bits_def, tuple(p.meaning.layers), p.layout.value_compression.SerializeToString())
            for p in full
        }
        if len(shape) != 1 or len(full[0].meaning.layers) != 1:
            return None
        stride = full[0].cw + full[0].value_bytes
        if any(p.info.num_rows * stride > p.info.buffer(0)[1] for p in full):
            return None  # the page-by-page path reports it
        return cls(full, page_ends)

    def plan(self, rows: np.ndarray) -> tuple[np.ndarray | None, list[tuple[int, int]]]:
        """(state, the byte ranges of the rows, adjacent rows merged); the state (None: a few
        rows, planned in Python ints) is not needed to decode."""
        if len(rows) <= FEW_ROWS:
            ends, firsts, base = self._lists
            stride, p, end = self.stride, 0, -1
            ranges: list[tuple[int, int]] = []
            for r in rows.tolist():
                if r >= ends[p]:
                    p = bisect_right(ends, r, p)
                pos = base[p] + (r - firsts[p]) * stride
                if pos == end:
                    ranges[-1] = (ranges[-1][0], ranges[-1][1] + stride)
                else:
                    ranges.append((pos, stride))
                end = pos + stride
            return None, ranges
        page = np.searchsorted(self.page_ends, rows, side="right")
        starts = self.base[page] + (rows - self.page_firsts[page]) * self.stride
        brk = np.flatnonzero(starts[1:] != starts[:-1] + self.stride) + 1
        lo = starts[np.concatenate([[0], brk])]
        hi = starts[np.concatenate([brk - 1, [len(rows) - 1]])] + self.stride
        return page, list(zip(lo.tolist(), (hi - lo).tolist()))

    def decode(self, rows: np.ndarray, page: np.ndarray | None, bufs: list[memoryview]) -> pa.Array:
        if self.plain is not None:
            return self._plain_array(self.plain, len(rows), bufs)
        data = np.frombuffer(bufs[0] if len(bufs) == 1 else b"".join(bufs), np.uint8)
        levels = self.pages[0].fixed_rows(data, len(rows))
        valid = None if levels.dfn is None else levels.dfn == 0
        return with_validity(levels.values, valid)


def _whole_bytes(t: pa.DataType, bits: int) -> bool:
    """Whether ``t`` is a plain fixed-width type of ``bits`` bits, whole bytes."""
    return is_plain_fixed(t) and t.bit_width == bits and bits % 8 == 0


def _plain_rows(page: FullZipPage) -> pa.DataType | None:
    """The leaf type when each full-zip row of ``page`` is just its value's bytes, as Arrow lays them
    out (no control word; a plain Flat, or a FixedSizeList of one without validity): else None."""
    t, enc = page.leaf_type, page.layout.value_compression
    if page.cw or page.variable:
        return None
    which = enc.WhichOneof("compression")
    if which == "flat":
        return t if _whole_bytes(t, enc.flat.bits_per_value) and page.value_bytes * 8 == t.bit_width else None
    if which != "fixed_size_list" or not pa.types.is_fixed_size_list(t):
        return None
    fsl = enc.fixed_size_list
    if fsl.has_validity or fsl.items_per_value != t.list_size or fsl.values.WhichOneof("compression") != "flat":
        return None
    bits = fsl.values.flat.bits_per_value
    if not _whole_bytes(t.value_type, bits) or page.value_bytes * 8 != bits * t.list_size:
        return None
    return t
