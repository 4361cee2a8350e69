"""Scattered rows of a mini-block page without lists, in one numba call (MiniBlockLayout).

For the techniques pylance writes most (values: Flat, InlineBitpacking,
Variable and FSST over it, Rle; definition levels: none, OutOfLineBitpacking
or Flat), ``PointReader`` parses each fetched chunk's header (u16 level count,
u16 def size, one u16/u32 size per value buffer, buffers padded to 8 bytes),
reads the row's definition level and value where they lie, and checks every
size against the chunk.  Other shapes go through miniblock_chunks.decode_points.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from lancelot.encodings.compression.bitpacking import CHUNK, inline_bits, lane_positions, out_of_line_bits
from lancelot.encodings.compression.bitpacking_kernel import (
    inline_chunk_width,
    inline_point,
    out_of_line_fits,
    out_of_line_point,
)
from lancelot.encodings.compression.block import DataBlock, FixedWidthBlock, VariableWidthBlock
from lancelot.encodings.compression.chunked import symbol_table
from lancelot.encodings.compression.flat import bit_point, check_flat, flat_level_point, flat_point
from lancelot.encodings.compression.fsst import fsst_decode
from lancelot.encodings.compression.points import (
    BAD_OFFSETS,
    BAD_WIDTH,
    LEVELS,
    MESSAGES,
    OK,
    SHORT_BUFFER,
    SHORT_CHUNK,
    SHORT_RUNS,
    le,
    store_le,
)
from lancelot.encodings.compression.rle import flat_values as rle_flat_values
from lancelot.encodings.compression.rle import rle_widths
from lancelot.encodings.compression.rle_kernel import rle_block_layout, rle_fits, rle_point
from lancelot.encodings.compression.segments import gather, readonly
from lancelot.encodings.compression.variable import offset_bits
from lancelot.encodings.compression.variable_kernel import variable_fits, variable_point
from lancelot.encodings.structural.leaf import values_to_arrow
from lancelot.encodings.structural.miniblock_points_numpy import points_numpy
from lancelot.errors import CorruptFileError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.jit import NumpyUntilHot, njit

# value techniques
FLAT, BITS, INLINE, VARIABLE, RLE = 0, 1, 2, 3, 4
# definition level techniques (DEF_RLE: a block-context Rle, u64 values size, values, run lengths;
# its run lengths' byte width travels as the chunk's "def width")
NO_DEF, DEF_OUT_OF_LINE, DEF_FLAT, DEF_RLE = 0, 1, 2, 3
#: the statuses (compression/points.py), named here for the numpy twin and the callers
STATUSES = (OK, SHORT_CHUNK, LEVELS, BAD_WIDTH, SHORT_BUFFER, BAD_OFFSETS, SHORT_RUNS)


@njit(cache=True, nogil=True)
def _points(
    data: np.ndarray,
    pos: np.ndarray,
    size: np.ndarray,
    counts: np.ndarray,
    k_of: np.ndarray,
    idx: np.ndarray,
    has_def: int,
    word: int,
    nb: int,
    def_kind: int,
    def_t: int,
    def_ws: np.ndarray,
    def_rows: np.ndarray,
    def_lanes: np.ndarray,
    vkind: int,
    vparam: int,
    vparam2: int,
    rows: np.ndarray,
    lanes: np.ndarray,
    dfn_out: np.ndarray,
    fixed_out: np.ndarray,
    var_start: np.ndarray,
    var_len: np.ndarray,
    where: np.ndarray,
) -> int:
    """Item ``idx[j]`` of chunk ``k_of[j]`` for every j: this kernel parses the chunk headers (the
    mini-block layout); each technique's point helpers read the levels and values (points.py)."""
    head = 2 + 2 * has_def + word * nb
    last_k = -1
    # the current chunk's layout (parsed once per run of rows in one chunk)
    p0 = def_start = def_size = v0 = v0_size = v1 = v1_size = n = def_w = w = 0
    run = covered = 0  # RLE values: the run reached so far and the values it and the runs before cover
    d_run = d_cov = d_runs = d_vs = 0  # the same for RLE definition levels
    for j in range(len(k_of)):
        where[0] = j
        k = k_of[j]
        i = idx[j]
        status = OK
        if k != last_k:
            last_k = k
            def_w = def_ws[k]
            p0 = pos[k]
            csize = size[k]
            n = counts[k]
            if csize < head:
                return SHORT_CHUNK
            cursor = (head + 7) // 8 * 8
            def_start = 0
            def_size = 0
            if has_def:
                if np.int64(le(data, p0, 2)) != n:
                    return LEVELS
                def_size = np.int64(le(data, p0 + 2, 2))
                def_start = cursor
                cursor = (cursor + def_size + 7) // 8 * 8
                if def_start + def_size > csize:
                    return SHORT_CHUNK
            field = 2 + 2 * has_def
            v0 = cursor
            v0_size = np.int64(le(data, p0 + field, word))
            v1 = 0
            v1_size = 0
            end = v0 + v0_size
            if nb > 1:
                v1 = (end + 7) // 8 * 8
                v1_size = np.int64(le(data, p0 + field + word, word))
                end = v1 + v1_size
            if end > csize:
                return SHORT_CHUNK
            if def_kind == DEF_OUT_OF_LINE:
                status = out_of_line_fits(n, def_size, def_t, def_w)
            elif def_kind == DEF_RLE:
                status, d_vs, d_runs = rle_block_layout(data, p0 + def_start, def_size, def_t // 8, def_w)
                d_run = 0
                d_cov = 0
            if status != OK:
                return status
            if vkind == INLINE:
                status, w = inline_chunk_width(data, p0 + v0, v0_size, vparam)
            elif vkind == VARIABLE:
                status = variable_fits(n, v0_size, vparam)
            elif vkind == RLE:
                status = rle_fits(v0_size, v1_size, vparam, vparam2)
                run = 0
                covered = 0
            if status != OK:
                return status
        # the definition level
        if def_kind == DEF_OUT_OF_LINE:
            dfn_out[j] = out_of_line_point(data, p0 + def_start, n, def_size, def_t, def_w, i, def_rows, def_lanes)
        elif def_kind == DEF_FLAT:
            status, level = flat_level_point(data, p0 + def_start, def_size, i, def_t // 8)
            dfn_out[j] = level
        elif def_kind == DEF_RLE:  # rows of a chunk come in order
            values_at = p0 + def_start + 8
            status, d_run, d_cov, level = rle_point(
                data, values_at, values_at + d_vs, d_runs, i, def_t // 8, def_w, d_run, d_cov
            )
            dfn_out[j] = level
        if status != OK:
            return status
        # the value
        s = p0 + v0
        if vkind == FLAT:
            status = flat_point(data, s, v0_size, i, vparam, fixed_out, j)
        elif vkind == BITS:
            status = bit_point(data, s, v0_size, i, fixed_out, j)
        elif vkind == INLINE:
            store_le(inline_point(data, s, vparam, w, rows[i], lanes[i]), vparam // 8, fixed_out, j * (vparam // 8))
        elif vkind == VARIABLE:
            status, start, length = variable_point(data, s, v0_size, n, i, vparam)
            var_start[j] = start
            var_len[j] = length
        else:  # RLE: values in buffer 0, run lengths in buffer 1; rows of a chunk come in order
            status, run, covered, value = rle_point(
                data, s, p0 + v1, v1_size // vparam2, i, vparam, vparam2, run, covered
            )
            store_le(value, vparam, fixed_out, j * vparam)
        if status != OK:
            return status
    return OK


#: takes of at most this many strings build their Arrow array in Python (``PointReader.arrow``)
FEW_STRINGS = 64
#: how ``PointReader.arrow`` builds an array (``PointReader.arrow_kind``)
ARROW_STRINGS, ARROW_FIXED = 1, 2
#: takes of at most this many rows use the numpy formulation while the kernel is not loaded
NUMPY_ROWS = 64
#: "auto" (numpy for few rows until the kernel is loaded), "numpy" or "kernel" (tests)
mode = {"points": "auto"}


def use_kernel(n: int) -> bool:
    """Whether a read of ``n`` rows runs the numba kernel (a few rows in a process that has not
    loaded it yet run the numpy formulation: no numba import or compilation for a first take)."""
    m = mode["points"]
    if m != "auto":
        return m == "kernel"
    return n > NUMPY_ROWS or HOT.ready()


HOT = NumpyUntilHot(_points)
_NO_LEVELS = np.empty(0, np.uint16)
_NO_SPANS = (np.empty(0, np.int64), np.empty(0, np.int64))


@dataclass
class PointReader:
    """The technique codes of one page, for ``_points``."""

    has_def: int
    word: int
    nb: int
    def_kind: int
    def_t: int
    def_w: int
    vkind: int
    vparam: int
    vparam2: int
    fsst: bytes | None  # the FSST symbol table over Variable values
    general: pb.BufferCompression | None = None  # General compression of each chunk's first value buffer

    @classmethod
    def of(cls, layout: pb.MiniBlockLayout, word: int) -> PointReader | None:
        """The reader for a page's layout, or None when a technique has no point kernel here."""
        if layout.HasField("rep_compression") or layout.num_buffers not in (1, 2):
            return None
        def_kind, def_t, def_w = NO_DEF, 0, 0
        if layout.HasField("def_compression"):
            d = layout.def_compression
            kind = d.WhichOneof("compression")
            if kind == "out_of_line_bitpacking":
                def_kind = DEF_OUT_OF_LINE
                def_t, def_w = out_of_line_bits(d.out_of_line_bitpacking)
            elif kind == "flat" and check_flat(d.flat) in (8, 16):
                def_kind, def_t = DEF_FLAT, int(d.flat.bits_per_value)
            elif kind == "rle" and rle_flat_values(d.rle):
                bits, len_bits = rle_widths(d.rle)
                if bits not in (8, 16) or len_bits % 8 or not 0 < len_bits <= 64:
                    return None
                def_kind, def_t, def_w = DEF_RLE, bits, len_bits // 8
            else:
                return None
        enc = layout.value_compression
        kind = enc.WhichOneof("compression")
        general = None
        if kind == "general":  # the touched chunks are inflated first (miniblock_general)
            general = enc.general.compression
            enc = enc.general.values
            kind = enc.WhichOneof("compression")
        fsst = None
        if kind == "fsst":
            fsst = bytes(enc.fsst.symbol_table)
            enc = enc.fsst.values
            kind = enc.WhichOneof("compression")
            if kind != "variable":
                return None
        vparam2 = 0
        if kind == "flat":
            bits = check_flat(enc.flat)
            if bits != 1 and bits % 8:
                return None
            vkind, vparam = (BITS, 1) if bits == 1 else (FLAT, bits // 8)
        elif kind == "inline_bitpacking":
            vkind, vparam = INLINE, inline_bits(enc.inline_bitpacking)
        elif kind == "variable":
            vkind, vparam = VARIABLE, offset_bits(enc.variable) // 8
        elif kind == "rle" and rle_flat_values(enc.rle):
            bits, len_bits = rle_widths(enc.rle)
            vkind, vparam, vparam2 = RLE, bits // 8, len_bits // 8
        else:
            return None
        if (vkind == RLE) != (layout.num_buffers == 2):
            return None
        has_def, nb = int(layout.HasField("def_compression")), int(layout.num_buffers)
        return cls(has_def, word, nb, def_kind, def_t, def_w, vkind, vparam, vparam2, fsst, general)

    def inflate(self, data: np.ndarray, pos: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The fetched chunks as the kernel reads them: unchanged, or with General undone."""
        if self.general is None:
            return data, pos, size
        from lancelot.encodings.structural.miniblock_general import inflate_chunks

        return inflate_chunks(
            data, pos, size, has_def=self.has_def, word=self.word, nb=self.nb, compression=self.general
        )

    def __post_init__(self) -> None:
        #: bytes per value the kernel writes (0 for variable width)
        self.value_bytes: int = {FLAT: self.vparam, BITS: 1, INLINE: self.vparam // 8, RLE: self.vparam}.get(
            self.vkind, 0
        )
        #: the kernel's arguments fixed by the page's techniques (made on first need): levels' before
        #: and after ``def_ws``, values'
        self._fixed_args: tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]] | None = None
        self._kinds: dict[pa.DataType, int] = {}  # ``arrow_kind`` per type
        general = None if self.general is None else int(self.general.scheme)  # (its level: the writer's business)
        #: what must agree for pages to be read by one kernel call (widths of levels may differ)
        techniques = (self.def_kind, self.def_t, self.vkind, self.vparam, self.vparam2)
        self.codes: tuple[object, ...] = (self.has_def, self.word, self.nb, *techniques, general)

    def run(
        self,
        data: np.ndarray,
        pos: np.ndarray,
        size: np.ndarray,
        counts: np.ndarray,
        k_of: NDArray[np.int64],
        idx: NDArray[np.int64],
        def_ws: np.ndarray,
        counts_checked: bool = False,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The kernel over item ``idx[j]`` of chunk ``k_of[j]``: (def levels, fixed bytes, value starts, lengths).

        ``def_ws`` is the definition levels' bit width of each chunk.  A bad chunk raises
        PointReadError naming the row ``j`` that met it.  ``counts_checked``: the caller knows
        no chunk holds more items than an inline-bitpacked chunk can.
        """
        n = len(k_of)
        if self.vkind == INLINE and not counts_checked and len(counts) and _most(counts) > CHUNK:
            bad = int(np.flatnonzero(counts > CHUNK)[0])
            row = np.flatnonzero(k_of == bad)
            message = f"mini-block point read: an inline-bitpacked chunk holds more than {CHUNK} values"
            raise PointReadError(message, int(row[0])) if len(row) else CorruptFileError(message)
        if self.vkind == FLAT and n * self.value_bytes > len(data):  # (each row's value lies in its chunk)
            short = np.flatnonzero(counts * self.value_bytes > size)
            row = np.flatnonzero(np.isin(k_of, short))
            message = f"mini-block point read: {n} values of {self.value_bytes} bytes past their chunks"
            raise PointReadError(message, int(row[0])) if len(row) else CorruptFileError(message)
        # (outputs a page's techniques do not write: shared empty arrays)
        dfn = np.empty(n, dtype=np.uint16) if self.has_def else _NO_LEVELS
        fixed = np.empty(n * self.value_bytes, dtype=np.uint8)
        var_start, var_len = (np.empty(n, np.int64), np.empty(n, np.int64)) if self.vkind == VARIABLE else _NO_SPANS
        if self._fixed_args is None:
            rows, lanes = lane_positions(self.vparam if self.vkind == INLINE else 8)
            def_rows, def_lanes = lane_positions(self.def_t if self.def_kind == DEF_OUT_OF_LINE else 8)
            self._fixed_args = (
                (self.has_def, self.word, self.nb, self.def_kind, self.def_t),
                (def_rows, def_lanes),
                (self.vkind, self.vparam, self.vparam2, rows, lanes),
            )
        before, after, values = self._fixed_args
        where = np.zeros(1, dtype=np.int64)
        # (the kernel's arguments in its order: the chunks and rows, the levels' technique, the values', the outputs)
        fixed_techniques: tuple[Any, ...] = (*before, def_ws, *after, *values)
        args = (readonly(data), pos, size, counts, k_of, idx, *fixed_techniques, dfn, fixed, var_start, var_len, where)
        if use_kernel(n):
            status = _points(*args)
        else:
            status = points_numpy(*args)
            if mode["points"] == "auto":
                HOT.numpy_call(lambda: _points(*args[:19], *(np.empty_like(a) for a in args[19:])))
        if status != OK:
            raise PointReadError(f"mini-block point read: {MESSAGES[status]}", int(where[0]))
        return dfn, fixed, var_start, var_len

    def block(
        self, data: np.ndarray, fixed: np.ndarray, var_start: np.ndarray, var_len: np.ndarray, fsst: bytes | None
    ) -> DataBlock:
        """The values the kernel found as a data block (FSST strings decoded with table ``fsst``)."""
        if self.vkind == VARIABLE:
            return self.strings(data, var_start, var_len, fsst)
        n = len(fixed) // max(self.value_bytes, 1)
        if self.vkind == BITS:
            return FixedWidthBlock(np.packbits(fixed, bitorder="little"), 1, n)
        return FixedWidthBlock(fixed, self.value_bytes * 8, n)

    def arrow_kind(self, t: pa.DataType) -> int:
        """How ``arrow`` builds values of type ``t``: ``ARROW_STRINGS`` (plain variable-width values of
        a string or binary type), ``ARROW_FIXED`` (whole-byte fixed-width values), else 0 (leaf.py)."""
        kind = self._kinds.get(t)
        if kind is None:
            if self.vkind == VARIABLE:
                kind = ARROW_STRINGS if pa.types.is_string(t) or pa.types.is_binary(t) else 0
            else:
                width = self.value_bytes
                kind = ARROW_FIXED if self.vkind != BITS and width and _plain_width(t) == 8 * width else 0
            if len(self._kinds) < 64:
                self._kinds[t] = kind
        return kind

    def arrow(
        self,
        data: np.ndarray,
        fixed: np.ndarray,
        var_start: np.ndarray,
        var_len: np.ndarray,
        t: pa.DataType,
        kind: int,
    ) -> pa.Array:
        """The values the kernel found (plain: no FSST, no dictionary) as an array of type ``t``
        (``kind``: ``arrow_kind(t)``).

        A take's few strings are sliced and joined in Python and their offsets written as Arrow's
        (the kernel checked every value lies inside its chunk), fixed-width values are the bytes
        the kernel wrote; anything else goes through ``leaf.values_to_arrow``."""
        if kind == ARROW_FIXED:
            return pa.Array.from_buffers(t, len(fixed) // self.value_bytes, [None, pa.py_buffer(fixed)])
        n = len(var_start)
        if kind == ARROW_STRINGS and n <= FEW_STRINGS:
            lengths = var_len.tolist()
            ends = [0, *accumulate(lengths)]
            if ends[-1] < 1 << 31:
                offsets = np.array(ends, dtype=np.int32)
                view = data.data
                joined = b"".join([view[a : a + m] for a, m in zip(var_start.tolist(), lengths)])
                return pa.Array.from_buffers(t, n, [None, pa.py_buffer(offsets), pa.py_buffer(joined)])
        return values_to_arrow(self.block(data, fixed, var_start, var_len, None), t)

    def few_strings(self, data: np.ndarray, var_start: np.ndarray, var_len: np.ndarray) -> VariableWidthBlock:
        """``strings`` of a take's few values without FSST: sliced and joined in Python."""
        n = len(var_start)
        offsets = np.empty(n + 1, dtype=np.int64)
        offsets[0] = 0
        var_len.cumsum(out=offsets[1:])
        view = data.data
        joined = b"".join([view[a : a + m] for a, m in zip(var_start.tolist(), var_len.tolist())])
        return VariableWidthBlock(offsets, np.frombuffer(joined, np.uint8), n)

    def strings(
        self, data: np.ndarray, var_start: np.ndarray, var_len: np.ndarray, fsst: bytes | None
    ) -> VariableWidthBlock:
        """The variable-width values the kernel found (``vkind == VARIABLE``), FSST-decoded with table ``fsst``."""
        n = len(var_start)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(var_len, out=offsets[1:])
        block = VariableWidthBlock(offsets, gather(data, var_start, var_len), n)
        return block if fsst is None else fsst_decode(symbol_table(fsst), block)

    def read(
        self, data: np.ndarray, pos: np.ndarray, size: np.ndarray, counts: np.ndarray, k_of: np.ndarray, idx: np.ndarray
    ) -> tuple[np.ndarray | None, DataBlock]:
        """Definition levels (None without) and values of item ``idx[j]`` of chunk ``k_of[j]`` of one page.

        The caller ensures ``idx[j] < counts[k_of[j]]`` and that the chunks lie inside ``data``.
        """
        data, pos, size = self.inflate(data, pos, size)
        dfn, fixed, var_start, var_len = self.run(
            data, pos, size, counts, k_of, idx, np.full(len(pos), self.def_w, dtype=np.int64)
        )
        return (dfn if self.has_def else None), self.block(data, fixed, var_start, var_len, self.fsst)


def _most(counts: np.ndarray) -> int:
    """The largest of ``counts`` (a few in Python: cheaper than numpy's reduction)."""
    return max(counts.tolist()) if len(counts) <= 64 else int(counts.max())


def small_strings_arrow(block: VariableWidthBlock, t: pa.DataType) -> pa.Array:
    """A string or binary array of a block whose int64 offsets start at 0 and increase, ending
    below 2 GiB (built here: the checks of ``leaf.values_to_arrow`` cost more than a take's strings)."""
    return pa.Array.from_buffers(
        t,
        block.num_values,
        [None, pa.py_buffer(np.asarray(block.offsets).astype(np.int32)), pa.py_buffer(np.asarray(block.data))],
    )


def _plain_width(t: pa.DataType) -> int:
    """Bits per value of a whole-byte fixed-width type whose array is its values buffer alone (else 0)."""
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t) or pa.types.is_decimal(t)):
        return 0
    bits: int = t.bit_width
    return bits if bits % 8 == 0 else 0


class PointReadError(CorruptFileError):
    """A bad chunk met by the point kernel at row ``row`` of the read."""

    def __init__(
        self,
        message: str,
        row: int | None = None,
        *,
        path: str | None = None,
        column: int | str | None = None,
        page: int | None = None,
    ) -> None:
        super().__init__(message, path=path, column=column, page=page)
        self.row = row
