"""The constant page layout (lance.encodings21.ConstantLayout; 2.1: AllNullLayout).

Every visible item of the page is the same value, or null.  2.1 only writes
all-null pages (``layers`` alone).  2.2 adds the value: ``inline_value``
(the little-endian bytes of one fixed-width value) or, when absent, a value
buffer holding one Arrow value as ``u32 buffer count, u32 size per buffer,
the buffers`` (e.g. i32 offsets then the bytes of one string).

Page buffers: [value] when there is a value buffer, then [rep, def] when the
page has levels (an odd count means a value buffer comes first; a size-0
buffer means no levels of that kind).  Levels are raw u16 unless
``rep_compression`` / ``def_compression`` describe them (then
``num_rep_values`` / ``num_def_values`` count them).  Everything is decoded
once into the search cache; reads fetch nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lancelot.encodings import compression
from lancelot.encodings.structural.leaf import leaf_value_type, scalar_from_bytes
from lancelot.encodings.structural.page import (
    PageInfo,
    PageLevels,
    PageReader,
    Range,
    as_u8,
    levels_u16,
    select_rows,
)
from lancelot.encodings.structural.paths import is_fixed_width
from lancelot.encodings.structural.repdef import LevelMeaning, row_starts, visible_mask
from lancelot.errors import CorruptFileError, LanceError, UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.arrays import from_numpy

MAX_SCALAR_BUFFERS = 8


@dataclass
class ConstantState:
    """The search cache of a constant page: its value and levels."""

    scalar: pa.Array | None  # one value, or None when every item is null
    rep: np.ndarray | None
    dfn: np.ndarray | None
    num_levels: int


def scalar_from_value_buffer(raw: np.ndarray, t: pa.DataType) -> pa.Array:
    """One Arrow value of type ``t`` from a serialized scalar buffer."""
    if len(raw) < 4:
        raise CorruptFileError("constant value buffer is shorter than its header")
    n = int(raw[:4].view("<u4")[0]) if raw[:4].ctypes.data % 4 == 0 else int.from_bytes(bytes(raw[:4]), "little")
    if n > MAX_SCALAR_BUFFERS or len(raw) < 4 + 4 * n:
        raise CorruptFileError(f"constant value buffer claims {n} buffers")
    sizes = np.frombuffer(bytes(raw[4 : 4 + 4 * n]), dtype="<u4").astype(np.int64)
    pos = 4 + 4 * n
    if pos + int(sizes.sum()) > len(raw):
        raise CorruptFileError("constant value buffers run past the value buffer")
    bufs = []
    for s in sizes:
        bufs.append(pa.py_buffer(bytes(raw[pos : pos + int(s)])))
        pos += int(s)
    vt = leaf_value_type(t)
    if pa.types.is_string(vt) or pa.types.is_binary(vt) or pa.types.is_large_string(vt) or pa.types.is_large_binary(vt):
        if n != 2:
            raise CorruptFileError(f"a {vt} constant needs 2 buffers, found {n}")
        wide = len(bufs[0]) == 16
        stored = {
            (True, True): pa.large_string(),
            (True, False): pa.string(),
            (False, True): pa.large_binary(),
            (False, False): pa.binary(),
        }[(pa.types.is_string(vt) or pa.types.is_large_string(vt), wide)]
        if len(bufs[0]) not in (8, 16):
            raise CorruptFileError("constant string offsets must hold two offsets")
        arr = pa.Array.from_buffers(stored, 1, [None, *bufs])
        arr.validate(full=True)
        return arr.cast(vt) if stored != vt else arr
    if is_fixed_width(vt) and n == 1:
        return scalar_from_bytes(bufs[0].to_pybytes(), vt)
    raise UnsupportedEncodingError(f"constant pages of type {vt} are not supported")


class ConstantPage(PageReader):
    """Reads rows of a constant (or all-null) page."""

    def __init__(
        self, info: PageInfo, cache: dict[Any, Any], layout: pb.ConstantLayout, leaf_type: pa.DataType
    ) -> None:
        super().__init__(info, cache)
        self.layout = layout
        self.leaf_type = leaf_type
        self.meaning = LevelMeaning.of(layout.layers)
        nb = info.num_buffers
        inline = layout.HasField("inline_value")
        if nb not in (0, 1, 2, 3) or (inline and nb % 2):
            raise CorruptFileError(f"constant layout with {nb} buffers{' and an inline value' if inline else ''}")
        self.value_buffer = 0 if nb % 2 else None
        self.level_buffers = (nb - 2, nb - 1) if nb >= 2 else None

    @property
    def state(self) -> ConstantState:
        """The decoded page; ``load_search`` fills it before any decode."""
        state: ConstantState | None = self.cache.get(self.cache_key)
        if state is None:
            raise LanceError("constant page decoded before load_search", column=self.info.column, page=self.info.index)
        return state

    def search_ranges(self) -> list[Range]:
        if self.cache.get(self.cache_key) is not None:
            return []
        idx = ([self.value_buffer] if self.value_buffer is not None else []) + list(self.level_buffers or ())
        if not idx:  # nothing to fetch: the layout alone describes the page
            self.load_search([])
        return [self.info.buffer(i) for i in idx]

    def load_search(self, bufs: list[memoryview]) -> None:
        it = iter(bufs)
        t = self.leaf_type
        scalar = None
        if self.layout.HasField("inline_value"):
            scalar = scalar_from_bytes(self.layout.inline_value, leaf_value_type(t))
        if self.value_buffer is not None:
            scalar = scalar_from_value_buffer(as_u8(next(it)), t)
        rep = dfn = None
        if self.level_buffers is not None:
            rep = self._levels(as_u8(next(it)), "rep")
            dfn = self._levels(as_u8(next(it)), "def")
        n = len(rep) if rep is not None else len(dfn) if dfn is not None else self.info.num_rows
        if rep is not None and dfn is not None and len(rep) != len(dfn):
            raise CorruptFileError(f"{len(rep)} repetition levels but {len(dfn)} definition levels")
        if rep is None and n != self.info.num_rows:
            raise CorruptFileError(f"{n} levels for a page of {self.info.num_rows} rows")
        if self.meaning.max_rep and rep is not None:
            if len(row_starts(self.meaning, rep, n)) != self.info.num_rows:
                raise CorruptFileError(f"levels hold a different number of rows than the page's {self.info.num_rows}")
        self.cache[self.cache_key] = ConstantState(scalar, rep, dfn, n)

    def _levels(self, buf: np.ndarray, kind: str) -> np.ndarray | None:
        enc_field, count_field = f"{kind}_compression", f"num_{kind}_values"
        if self.layout.HasField(enc_field):
            count = int(getattr(self.layout, count_field))
            block = compression.decompress_block(getattr(self.layout, enc_field), buf, count)
            return levels_u16(block, count, kind)
        if len(buf) == 0:
            return None
        if len(buf) % 2:
            raise CorruptFileError(f"{kind} levels of {len(buf)} bytes are not u16s")
        return np.frombuffer(bytes(buf), dtype="<u2").astype(np.uint16)

    def plan(self, rows: np.ndarray) -> list[Range]:
        return []

    def decode(self, rows: np.ndarray, bufs: list[memoryview]) -> PageLevels:
        s = self.state
        vis = visible_mask(self.meaning, s.dfn, s.num_levels)
        n_vis = s.num_levels if vis is None else int(vis.sum())
        # select the rows' levels first (over a placeholder without buffers), then repeat the
        # value only as many times as they need: a 10-row read of a page of big constant values
        # must not hold the whole page's
        span = PageLevels(self.meaning, s.rep, s.dfn, s.num_levels, pa.nulls(n_vis))
        sel = select_rows(span, 0, rows)
        n = len(sel.values)
        t = self.leaf_type
        if s.scalar is None:
            values = _nulls(n, t)
        else:
            one = s.scalar
            if pa.types.is_dictionary(t):
                one = one.dictionary_encode().cast(t)
            values = one.take(from_numpy(np.zeros(n, dtype=np.int64)))
        return PageLevels(sel.meaning, sel.rep, sel.dfn, sel.num_levels, values)


def _nulls(n: int, t: pa.DataType) -> pa.Array:
    if pa.types.is_struct(t) and t.num_fields == 0:
        return pa.Array.from_buffers(t, n, [None])
    return pa.nulls(n, t)
