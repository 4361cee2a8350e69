"""The full-zip page layout (lance.encodings21.FullZipLayout; encoding.md, "Full Zip Page Layout").

Buffer 0 zips every level entry: a control word (``(rep << bits_def) | def``,
little endian, 1, 2 or 4 bytes by ``bits_rep + bits_def``; absent when both
are 0) and, when the entry is visible, its value: ``bits_per_value / 8``
bytes (fixed width, null items included) or, for a valid item, a length of
``bits_per_offset / 8`` bytes followed by that many bytes (variable width;
null items carry no length).  Buffer 1, present for variable width or
repetition, is the repetition index: ``num_rows + 1`` offsets (1, 2, 4 or 8
bytes each) of the row starts in buffer 0.

Random access reads only the bytes of the rows asked (the repetition index is
decoded once into the search cache).  Rows are unzipped in rounds: round k
parses the k-th entry of every row still open, so the work is vectorized
over rows.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelot.encodings import compression
from lancelot.encodings.compression.block import FixedWidthBlock
from lancelot.encodings.compression.segments import gather
from lancelot.encodings.structural.leaf import values_to_arrow
from lancelot.encodings.structural.page import PageInfo, PageLevels, PageReader, Range, as_u8
from lancelot.encodings.structural.repdef import LevelMeaning
from lancelot.errors import CorruptFileError, LanceError, UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

_UINT = {1: "<u1", 2: "<u2", 4: "<u4", 8: "<u8"}


def _read_uint(buf: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """Little-endian unsigned ints of ``width`` bytes at byte positions ``pos``."""
    out = np.zeros(len(pos), dtype=np.uint64)
    for b in range(width):
        out |= buf[pos + b].astype(np.uint64) << np.uint64(8 * b)
    return out


class FullZipPage(PageReader):
    """Reads rows of a full-zip page."""

    def __init__(self, info: PageInfo, cache: dict, layout: pb.FullZipLayout, leaf_type: pa.DataType) -> None:
        super().__init__(info, cache)
        self.layout = layout
        self.leaf_type = leaf_type
        self.meaning = LevelMeaning.of(layout.layers)
        self.bits_rep, self.bits_def = int(layout.bits_rep), int(layout.bits_def)
        if self.bits_rep > 16 or self.bits_def > 16:
            raise CorruptFileError(f"control words of {self.bits_rep}+{self.bits_def} bits")
        total = self.bits_rep + self.bits_def
        self.cw = 0 if total == 0 else 1 if total <= 8 else 2 if total <= 16 else 4
        kind = layout.WhichOneof("details")
        if kind is None:
            raise CorruptFileError("full-zip layout without bits_per_value or bits_per_offset")
        self.variable = kind == "bits_per_offset"
        if self.variable:
            if layout.bits_per_offset not in (8, 16, 32, 64):
                raise CorruptFileError(f"full-zip lengths of {layout.bits_per_offset} bits")
            self.len_bytes = int(layout.bits_per_offset) // 8
        else:
            if layout.bits_per_value == 0 or layout.bits_per_value % 8:
                raise UnsupportedEncodingError(f"full-zip values of {layout.bits_per_value} bits")
            self.value_bytes = int(layout.bits_per_value) // 8
        self.has_index = info.num_buffers > 1
        if not self.has_index and (self.variable or self.meaning.max_rep):
            raise CorruptFileError("a variable-width or repeated full-zip page needs a repetition index")

    # -- search cache: the row offsets ----------------------------------------------------

    @property
    def row_offsets(self) -> np.ndarray | None:
        return self.cache.get(self.cache_key)

    def search_ranges(self) -> list[Range]:
        if not self.has_index or self.row_offsets is not None:
            return []
        return [self.info.buffer(1)]

    def load_search(self, bufs: list[memoryview]) -> None:
        if not bufs:
            return
        raw = as_u8(bufs[0])
        n = self.info.num_rows + 1
        width = len(raw) // n if n else 0
        if width not in _UINT or width * n != len(raw):
            raise CorruptFileError(f"repetition index of {len(raw)} bytes for {n - 1} rows")
        offs = np.frombuffer(bytes(raw), dtype=_UINT[width]).astype(np.int64)
        data_size = self.info.buffer(0)[1]
        if np.any(np.diff(offs) < 0) or offs[-1] > data_size or offs[0] < 0:
            raise CorruptFileError("repetition index offsets are not increasing or point past the data buffer")
        self.cache[self.cache_key] = offs

    # -- plan / decode -------------------------------------------------------------------

    def _row_bounds(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.has_index:
            offs = self.row_offsets
            if offs is None:
                raise LanceError(
                    "full-zip search cache used before load_search", column=self.info.column, page=self.info.index
                )
            return offs[rows], offs[rows + 1]
        stride = self.cw + self.value_bytes
        data_size = self.info.buffer(0)[1]
        if self.info.num_rows * stride > data_size:
            raise CorruptFileError(f"{self.info.num_rows} rows of {stride} bytes overrun the {data_size}-byte buffer")
        return rows * stride, (rows + 1) * stride

    def _runs(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Byte bounds of each row and of each run of consecutive rows (one range per run)."""
        lo, hi = self._row_bounds(rows)
        brk = np.flatnonzero(rows[1:] != rows[:-1] + 1) + 1
        return lo, hi, lo[np.r_[0, brk]], hi[np.r_[brk - 1, len(rows) - 1]]

    def plan(self, rows: np.ndarray) -> list[Range]:
        _, _, run_lo, run_hi = self._runs(rows)
        pos = self.info.buffer(0)[0]
        return [(pos + int(a), int(b - a)) for a, b in zip(run_lo, run_hi)]

    def decode(self, rows: np.ndarray, bufs: list[memoryview]) -> PageLevels:
        if not self.meaning.max_rep and not self.variable:
            return self._decode_fixed(rows, bufs)
        lo, hi, run_lo, run_hi = self._runs(rows)
        if len(bufs) != len(run_lo):
            raise CorruptFileError(f"fetched {len(bufs)} ranges, planned {len(run_lo)}")
        data = np.concatenate([as_u8(b) for b in bufs]) if len(bufs) != 1 else as_u8(bufs[0])
        # positions of each row inside the concatenated fetched runs
        run_of = np.searchsorted(run_lo, lo, side="right") - 1
        run_base = np.cumsum(run_hi - run_lo) - (run_hi - run_lo)
        start = lo - run_lo[run_of] + run_base[run_of]
        end = start + (hi - lo)
        if not self.meaning.max_rep:
            return self._decode_variable(data, start, end)
        return self._unzip(data, start, end)

    def _decode_fixed(self, rows: np.ndarray, bufs: list[memoryview]) -> PageLevels:
        """No lists, fixed width: every row is one control word and one value (null items too)."""
        n = len(rows)
        stride = self.cw + self.value_bytes
        data_size = self.info.buffer(0)[1]
        if self.info.num_rows * stride > data_size:
            raise CorruptFileError(f"{self.info.num_rows} rows of {stride} bytes overrun the {data_size}-byte buffer")
        data = np.concatenate([as_u8(b) for b in bufs]) if len(bufs) != 1 else as_u8(bufs[0])
        return self.fixed_rows(data, n)

    def fixed_rows(self, data: np.ndarray, n: int) -> PageLevels:
        """``n`` whole rows of a fixed-width page without lists, back to back in ``data``."""
        stride = self.cw + self.value_bytes
        if len(data) != n * stride:
            raise CorruptFileError(f"fetched {len(data)} bytes for {n} full-zip rows of {stride} bytes")
        table = data.reshape(n, stride)
        dfn = None
        if self.cw:
            cw = _read_uint(table[:, : self.cw].reshape(-1), np.arange(n) * self.cw, self.cw)
            dfn = (cw & np.uint64((1 << self.bits_def) - 1)).astype(np.uint16) if self.bits_def else None
            body = np.ascontiguousarray(table[:, self.cw :]).reshape(-1)
        else:
            body = data
        block = FixedWidthBlock(body, self.value_bytes * 8, n)
        return self._levels(None, dfn, n, block)

    def _decode_variable(self, data: np.ndarray, start: np.ndarray, end: np.ndarray) -> PageLevels:
        """No lists, variable width: a control word, then a length and bytes for valid items."""
        n = len(start)
        if np.any(start + self.cw > end):
            raise CorruptFileError("a full-zip control word runs past its row")
        cw = _read_uint(data, start, self.cw) if self.cw else np.zeros(n, dtype=np.uint64)
        dfn = (cw & np.uint64((1 << self.bits_def) - 1)).astype(np.int64)
        has_len = dfn == 0
        body = start + self.cw
        lens = np.zeros(n, dtype=np.int64)
        lp = body[has_len]
        if np.any(lp + self.len_bytes > end[has_len]):
            raise CorruptFileError("a full-zip value length runs past its row")
        lens[has_len] = _read_uint(data, lp, self.len_bytes).astype(np.int64)
        if np.any(lens < 0) or np.any(body + has_len * self.len_bytes + lens != end):
            raise CorruptFileError("a full-zip row is not one control word and one value")
        decoded = compression.decompress_per_value_spans(
            self.layout.value_compression, data, body + self.len_bytes, np.where(has_len, lens, 0)
        )
        return self._levels(None, dfn.astype(np.uint16) if self.bits_def else None, n, decoded=decoded)

    def _levels(self, rep, dfn, n: int, block=None, decoded=None) -> PageLevels:
        """The page levels with the values of ``block`` (zipped values, still compressed per
        value) or ``decoded`` (already decompressed)."""
        if decoded is None:
            decoded = compression.decompress_per_value(self.layout.value_compression, block)
        values = values_to_arrow(decoded, self.leaf_type)
        return PageLevels(self.meaning, rep, dfn, n, values)

    def _unzip(self, data: np.ndarray, start: np.ndarray, end: np.ndarray) -> PageLevels:
        n_rows = len(start)
        row_ids, rounds, cws, vstart, vlen = [], [], [], [], []
        cur = start.astype(np.int64).copy()
        active = np.flatnonzero(cur < end) if self.meaning.max_rep else np.arange(n_rows)
        if not self.meaning.max_rep and np.any(cur >= end):
            raise CorruptFileError("a full-zip row has no entry")
        k = 0
        max_rounds = int((end - start).max()) + 1 if n_rows else 0
        while len(active):
            if k > max_rounds:
                raise CorruptFileError("full-zip rows do not parse")
            pos = cur[active]
            if np.any(pos + self.cw > end[active]):
                raise CorruptFileError("a full-zip control word runs past its row")
            cw = _read_uint(data, pos, self.cw) if self.cw else np.zeros(len(pos), dtype=np.uint64)
            dfn = (cw & np.uint64((1 << self.bits_def) - 1)).astype(np.int64)
            visible = (
                dfn <= self.meaning.max_visible
                if (self.bits_def and self.meaning.max_rep)
                else np.ones(len(pos), dtype=bool)
            )
            body = pos + self.cw
            if self.variable:
                has_len = visible & (dfn == 0)
                lens = np.zeros(len(pos), dtype=np.int64)
                lp = body[has_len]
                if np.any(lp + self.len_bytes > end[active][has_len]):
                    raise CorruptFileError("a full-zip value length runs past its row")
                lens[has_len] = _read_uint(data, lp, self.len_bytes).astype(np.int64)
                vs = body + has_len * self.len_bytes
                size = self.cw + has_len * self.len_bytes + lens
            else:
                lens = visible * self.value_bytes
                vs = body
                size = self.cw + lens
            nxt = pos + size
            if np.any(nxt > end[active]) or np.any(lens < 0):
                raise CorruptFileError("a full-zip value runs past its row")
            row_ids.append(active)
            rounds.append(np.full(len(active), k, dtype=np.int64))
            cws.append(cw)
            vstart.append(np.where(visible, vs, -1))
            vlen.append(np.where(visible, lens, -1))
            cur[active] = nxt
            if self.meaning.max_rep:
                active = active[nxt < end[active]]
            else:
                if np.any(nxt != end[active]):
                    raise CorruptFileError("a full-zip row holds more than its one value")
                active = active[:0]
            k += 1
        return self._assemble(data, row_ids, rounds, cws, vstart, vlen)

    def _assemble(self, data, row_ids, rounds, cws, vstart, vlen) -> PageLevels:
        if row_ids:
            rid, rnd = np.concatenate(row_ids), np.concatenate(rounds)
            order = np.lexsort((rnd, rid)) if len(row_ids) > 1 else np.arange(len(rid))
            cw = np.concatenate(cws)[order]
            vs = np.concatenate(vstart)[order]
            vl = np.concatenate(vlen)[order]
        else:
            cw = np.zeros(0, np.uint64)
            vs = vl = np.zeros(0, np.int64)
        n = len(cw)
        rep = (cw >> np.uint64(self.bits_def)).astype(np.uint16) if self.bits_rep else None
        dfn = (cw & np.uint64((1 << self.bits_def) - 1)).astype(np.uint16) if self.bits_def else None
        vis = vl >= 0
        vs, vl = vs[vis], vl[vis]
        if self.variable:
            decoded = compression.decompress_per_value_spans(self.layout.value_compression, data, vs, vl)
            return self._levels(rep, dfn, n, decoded=decoded)
        block = FixedWidthBlock(gather(data, vs, vl), self.value_bytes * 8, len(vs))
        return self._levels(rep, dfn, n, block)
