"""2.3 mini-block strings and binaries: ``Variable`` values whose offsets are delta-coded
(docs/format-2.3.md, "Delta offsets").

2.3 adds a compression case to ``CompressiveEncoding``: field 15, a delta coding
``{1: bits per reconstructed value, 2: base, 3: the deltas' CompressiveEncoding}``.  pylance 14
uses it for the offsets of mini-block strings: such a chunk holds two value buffers,
the deltas (one per value: its byte length, here out-of-line bit-packed) and the
value bytes.  Offsets are ``base, base + d0, base + d0 + d1, ...`` (``n + 1`` offsets from ``n``
deltas; field 2, the base, is absent, i.e. 0, in what pylance writes) over the chunk's bytes.

The 2.1 descriptor lancelot parses the layout with keeps field 15 as an unknown
field of ``Variable.offsets``; ``delta_offsets`` reads it back from there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from lancelot.encodings import compression
from lancelot.encodings.compression.block import FixedWidthBlock, VariableWidthBlock
from lancelot.encodings.compression.chunked import decompress_level_chunks
from lancelot.encodings.planar import wire
from lancelot.encodings.structural.miniblock import MiniBlockPage
from lancelot.encodings.structural.miniblock_chunks import DecodedChunks, chunk_buffers
from lancelot.encodings.structural.page import PageInfo, PageLevels, as_u8, levels_u16
from lancelot.errors import CorruptFileError, UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

#: CompressiveEncoding's 2.3 delta case and its fields
DELTA = 15
_BASE = 2
#: where pylance puts it: the offsets of Variable values
DELTA_FIELD = ("lance.encodings21.Variable.offsets", DELTA)
_BITS, _DELTAS = 1, 3


def delta_offsets(layout: pb.MiniBlockLayout) -> tuple[int, int, pb.CompressiveEncoding] | None:
    """(offset bits, first offset, the deltas' encoding) when the page's values are Variable with
    delta-coded offsets, else None."""
    enc = layout.value_compression
    if enc.WhichOneof("compression") != "variable":
        return None
    offsets = enc.variable.offsets
    if offsets.WhichOneof("compression") is not None:
        return None
    f = wire.fields(offsets.SerializeToString())
    raw = wire.message(f, DELTA)
    if raw is None:
        return None
    d = wire.fields(raw)
    wire.only(d, {_BITS, _BASE, _DELTAS}, "delta offsets")
    bits = wire.varint(d, _BITS)
    if bits not in (32, 64):
        raise UnsupportedEncodingError(f"delta offsets of {bits} bits")
    if enc.variable.HasField("values"):
        raise UnsupportedEncodingError("delta-offset strings with compressed value bytes are not supported")
    raw_deltas = wire.message(d, _DELTAS) or b""
    wire.check_known(raw_deltas, pb.CompressiveEncoding.DESCRIPTOR, "delta offsets")
    deltas = pb.CompressiveEncoding()
    deltas.ParseFromString(raw_deltas)
    if deltas.WhichOneof("compression") is None:
        raise CorruptFileError("delta offsets without an encoding of their deltas")
    return bits, wire.varint(d, _BASE), deltas


class DeltaBinaryPage(MiniBlockPage):
    """A mini-block page of strings or binaries with delta-coded offsets (two buffers per chunk)."""

    def __init__(
        self, info: PageInfo, cache: dict[Any, Any], layout: pb.MiniBlockLayout, value_type: pa.DataType
    ) -> None:
        found = delta_offsets(layout)
        if found is None:
            raise CorruptFileError("not a page of delta-offset values")
        # the mini-block machinery (chunk table, plans, level selection) sees Variable values with
        # flat offsets of the same width; ``decode`` reads the real two-buffer chunks
        seen = pb.MiniBlockLayout()
        seen.CopyFrom(layout)
        seen.value_compression.variable.offsets.Clear()
        seen.value_compression.variable.offsets.flat.bits_per_value = found[0]
        super().__init__(info, cache, seen, value_type)
        if layout.num_buffers != 2:
            raise CorruptFileError(f"delta-offset values in {layout.num_buffers} chunk buffers, expected 2")
        if layout.HasField("dictionary"):
            raise UnsupportedEncodingError("dictionary pages of delta-offset values are not supported")
        self.offset_bits, self.base, self.deltas = found
        self.points = None  # the point kernels do not know the two-buffer chunks

    def decode(self, rows: np.ndarray, bufs: list[memoryview]) -> PageLevels:
        if len(rows) == 0:
            return self._empty()
        plan = self._planned_chunks(rows)
        if len(bufs) != len(plan.ranges):
            raise CorruptFileError(f"fetched {len(bufs)} chunk runs, planned {len(plan.ranges)}")
        data = as_u8(bufs[0]) if len(bufs) == 1 else np.concatenate([as_u8(b) for b in bufs])
        if len(data) != int(plan.pos[-1]):
            raise CorruptFileError(f"fetched {len(data)} bytes of chunks, planned {int(plan.pos[-1])}")
        found = chunk_buffers(self.fmt, data, plan.pos[:-1], plan.size)
        num_levels = found.num_levels
        rep = dfn = None
        if found.rep is not None:
            rep = self._levels(self.layout.rep_compression, found.rep, num_levels, "repetition")
        if found.dfn is not None:
            dfn = self._levels(self.layout.def_compression, found.dfn, num_levels, "definition")
        items = plan.items
        if not (self.fmt.has_rep or self.fmt.has_def):
            num_levels = items.astype(np.int64)
        elif not self.fmt.has_rep and np.any(num_levels != items):
            raise CorruptFileError("a mini-block chunk holds a different number of levels and values")
        lengths, data_segs = found.values
        parts = [
            self._to_arrow(self._chunk(lengths.chunk(k), data_segs.chunk(k), int(items[k]))) for k in range(len(items))
        ]
        values = parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
        return self._select(rows, plan.chunks, DecodedChunks(num_levels, rep, dfn, values))

    def _chunk(self, lengths: np.ndarray, data: np.ndarray, n: int) -> VariableWidthBlock:
        block = compression.decompress_block(self.deltas, lengths, n)
        if not isinstance(block, FixedWidthBlock) or block.bits_per_value not in (8, 16, 32, 64):
            raise CorruptFileError("delta offsets: the deltas are not whole fixed-width integers")
        deltas = block.as_dtype(f"<u{block.bits_per_value // 8}")[:n].astype(np.int64)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(deltas, out=offsets[1:])
        # offsets count from the chunk's value buffer: the first is the base (0 as pylance writes)
        if self.base + int(offsets[-1]) > len(data):
            raise CorruptFileError(f"delta offsets: {int(offsets[-1])} bytes of values in a buffer of {len(data)}")
        data = data[self.base :]
        if self.offset_bits == 32 and int(offsets[-1]) >= 1 << 32:
            raise CorruptFileError("delta offsets overflow their 32 bits")
        dt = np.uint32 if self.offset_bits == 32 else np.uint64
        return VariableWidthBlock(offsets.astype(dt), data[: int(offsets[-1])], n, ordered=True)

    @staticmethod
    def _levels(enc: pb.CompressiveEncoding, seg: Any, counts: np.ndarray, what: str) -> np.ndarray:
        out = decompress_level_chunks(enc, seg, counts)
        if out is None:
            parts = [
                levels_u16(compression.decompress_block(enc, seg.chunk(k), int(counts[k])), int(counts[k]), what)
                for k in range(len(seg))
            ]
            out = np.concatenate(parts) if parts else np.zeros(0, np.uint16)
        if len(out) != int(counts.sum()):
            raise CorruptFileError(f"{what} levels: decoded {len(out)}, the chunk headers say {int(counts.sum())}")
        return out
