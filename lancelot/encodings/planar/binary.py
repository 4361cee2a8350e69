"""2.3 mini-block strings and binaries: ``Variable`` values whose offsets use the cases 2.3
adds to ``CompressiveEncoding`` (docs/format-2.3.md, "Coded offsets").

* case 15, delta ``{1: bits, 2: base, 3: the deltas' CompressiveEncoding}``: the chunk holds
  two value buffers, the deltas (one per value: its byte length, out-of-line bit-packed as
  pylance 14 writes them) and the value bytes; offsets are ``base, base + d0, ...``
  (``n + 1`` offsets from ``n`` deltas; pylance leaves the base out, i.e. 0);
* case 14, range ``{1: bits, 2: start, 3: step}``: every value has the same length
  (``step``); the chunk holds one buffer, the bytes, and offsets are ``start + step * i``;
* a delta whose deltas are a range, RLE whose run values and run lengths are ranges, and
  Constant offsets (every value empty), which pylance writes for small chunks: the chunk
  holds the bytes alone.

The 2.1 descriptor lancelot parses the layout with keeps these cases as unknown fields of
``Variable.offsets``; ``coded_offsets`` reads them back from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lancelot.encodings import compression
from lancelot.encodings.compression.block import DataBlock, FixedWidthBlock, VariableWidthBlock
from lancelot.encodings.structural.miniblock import MiniBlockPage
from lancelot.encodings.structural.miniblock_chunks import DecodedChunks, chunk_buffers, level_chunks
from lancelot.encodings.structural.page import PageInfo, PageLevels, as_u8
from lancelot.errors import CorruptFileError, UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util import wire

#: CompressiveEncoding's 2.3 cases and their fields
RANGE, DELTA = 14, 15
_BITS, _BASE, _DELTAS = 1, 2, 3  # delta
_START, _STEP = 2, 3  # range
RLE = 8  # (2.1's case; its run values may be a range)
#: where pylance puts them: the offsets of Variable values, and the run values of RLE offsets
OFFSET_CASES = {
    "lance.encodings21.Variable.offsets": frozenset({RANGE, DELTA}),
    "lance.encodings21.Rle.values": frozenset({RANGE}),
    "lance.encodings21.Rle.run_lengths": frozenset({RANGE}),
}


@dataclass(frozen=True)
class CodedOffsets:
    """Offsets of Variable values coded by a 2.3 case."""

    bits: int  # 32 or 64
    first: int  # the delta's base, the range's start or the constant
    step: int  # the range's step (delta, constant: 0)
    #: the delta's deltas: an encoding (in a chunk buffer) or a range's (start, step) (range: None)
    deltas: pb.CompressiveEncoding | tuple[int, int] | None
    #: RLE offsets: (the run values, the run lengths), each an encoding or a range's (start, step)
    rle: tuple[pb.CompressiveEncoding | tuple[int, int], pb.CompressiveEncoding | tuple[int, int]] | None = None

    @property
    def num_buffers(self) -> int:
        """Value buffers per chunk: the coded offsets and the bytes, or the bytes alone (offsets coded
        in the layout: a range, a constant, deltas or runs that are ranges)."""
        if self.rle is not None:
            return 1 if all(isinstance(part, tuple) for part in self.rle) else 2
        return 2 if isinstance(self.deltas, pb.CompressiveEncoding) else 1


def coded_offsets(layout: pb.MiniBlockLayout) -> CodedOffsets | None:
    """How the page's Variable offsets are coded, or None when they are not Variable values with
    2.3-coded offsets."""
    enc = layout.value_compression
    if enc.WhichOneof("compression") != "variable":
        return None
    offsets = enc.variable.offsets
    if offsets.WhichOneof("compression") == "constant":  # every value empty (pylance, small pages)
        value = offsets.constant.value
        if enc.variable.HasField("values") or len(value) not in (4, 8):
            raise UnsupportedEncodingError(f"constant offsets of {len(value)} bytes")
        return CodedOffsets(8 * len(value), int.from_bytes(value, "little"), 0, None)
    if offsets.WhichOneof("compression") not in (None, "rle"):  # (2.1's flat offsets: the 2.2 reader)
        return None
    f = wire.fields(offsets.SerializeToString())
    if len(f) != 1 or not ({RANGE, DELTA, RLE} & set(f)):
        return None
    if RLE in f:
        r = wire.fields(wire.message(f, RLE) or b"")
        wire.only(r, {1, 2}, "RLE offsets")
        values_raw, lengths_raw = wire.message(r, 1) or b"", wire.message(r, 2) or b""
        values, bits = _range_or_known(values_raw, "RLE offsets: run values")
        lengths, _ = _range_or_known(lengths_raw, "RLE offsets: run lengths")
        if enc.variable.HasField("values"):
            raise UnsupportedEncodingError("coded-offset strings with compressed value bytes are not supported")
        # (the offsets' width: a range of run values says it; pylance's flat run values of strings run in u32)
        return CodedOffsets(bits if bits in (32, 64) else 32, 0, 0, None, (values, lengths))
    if enc.variable.HasField("values"):
        raise UnsupportedEncodingError("coded-offset strings with compressed value bytes are not supported")
    if RANGE in f:
        r = wire.fields(wire.message(f, RANGE) or b"")
        wire.only(r, {_BITS, _START, _STEP}, "range offsets")
        out = CodedOffsets(wire.varint(r, _BITS), wire.varint(r, _START), wire.varint(r, _STEP), None)
    else:
        d = wire.fields(wire.message(f, DELTA) or b"")
        wire.only(d, {_BITS, _BASE, _DELTAS}, "delta offsets")
        deltas, _ = _range_or_known(wire.message(d, _DELTAS) or b"", "delta offsets: the deltas")
        out = CodedOffsets(wire.varint(d, _BITS), wire.varint(d, _BASE), 0, deltas)
    if out.bits not in (32, 64):
        raise UnsupportedEncodingError(f"coded offsets of {out.bits} bits")
    return out


def _range_or_known(raw: bytes, what: str) -> tuple[pb.CompressiveEncoding | tuple[int, int], int]:
    """A range's or a constant's (start, step) and the range's bits, or a 2.1 encoding (bits 0)."""
    f = wire.fields(raw)
    inline = wire.inline_sequence(raw)
    if inline is not None:
        bits = wire.varint(wire.fields(wire.message(f, RANGE) or b""), _BITS) if RANGE in f else 0
        return inline, bits
    return _known(raw, what), 0


def _ranged(r: tuple[int, int], n: int) -> np.ndarray:
    """``n`` values of a range's (start, step)."""
    out: np.ndarray = r[0] + r[1] * np.arange(n, dtype=np.int64)
    return out


def _known(raw: bytes, what: str) -> pb.CompressiveEncoding:
    wire.check_known(raw, pb.CompressiveEncoding.DESCRIPTOR, what)
    enc = pb.CompressiveEncoding()
    enc.ParseFromString(raw)
    if enc.WhichOneof("compression") is None:
        raise CorruptFileError(f"{what} name no encoding")
    return enc


def _whole_ints(block: DataBlock, count: int, what: str) -> np.ndarray:
    if not isinstance(block, FixedWidthBlock) or block.bits_per_value not in (8, 16, 32, 64):
        raise CorruptFileError(f"{what} are not whole fixed-width integers")
    if block.num_values < count:
        raise CorruptFileError(f"{what}: {block.num_values} values, {count} needed")
    return block.as_dtype(f"<u{block.bits_per_value // 8}")[:count].astype(np.int64)


def _rle_offsets(code: CodedOffsets, buf: np.ndarray, n: int) -> np.ndarray:
    """``n`` offsets from one chunk buffer of RLE offsets: u64 bytes of the run values, the run
    values, then the run lengths (as many as there are runs)."""
    assert code.rle is not None
    values_enc, lengths_enc = code.rle
    if isinstance(values_enc, tuple) and isinstance(lengths_enc, tuple):  # no buffer: runs until n offsets
        start, step = lengths_enc
        if step < 0 or (step == 0 and start <= 0):
            raise CorruptFileError("RLE offsets: run lengths that never reach the offsets")
        k = np.arange(n + 1, dtype=np.int64)
        runs = int(np.searchsorted(np.cumsum(start + step * k), n)) + 1
        lengths = _ranged((start, step), runs)
        lengths[-1] -= int(lengths.sum()) - n  # (the last run may run past the chunk)
        values = _ranged(values_enc, runs)
        if np.any(lengths < 0):
            raise CorruptFileError("RLE offsets: negative run lengths")
        out_: np.ndarray = np.repeat(values, lengths)
        return out_
    if len(buf) < 8:
        raise CorruptFileError("RLE offsets shorter than their header")
    n_values = int(np.frombuffer(bytes(buf[:8]), dtype="<u8")[0])
    if 8 + n_values > len(buf):
        raise CorruptFileError(f"RLE offsets: {n_values} bytes of run values in a {len(buf)}-byte buffer")
    lengths_buf = buf[8 + n_values :]
    if isinstance(lengths_enc, tuple):
        assert not isinstance(values_enc, tuple)
        bits = int(values_enc.flat.bits_per_value) if values_enc.WhichOneof("compression") == "flat" else 0
        if bits not in (8, 16, 32, 64):
            raise UnsupportedEncodingError("RLE offsets: ranged run lengths over run values that are not flat")
        runs = n_values * 8 // bits
        lengths = _ranged(lengths_enc, runs)
    else:
        if lengths_enc.WhichOneof("compression") != "flat" or lengths_enc.flat.bits_per_value not in (8, 16, 32, 64):
            raise UnsupportedEncodingError("RLE offsets whose run lengths are not flat whole integers")
        runs = len(lengths_buf) * 8 // int(lengths_enc.flat.bits_per_value)
        lengths = _whole_ints(compression.decompress_block(lengths_enc, lengths_buf, runs), runs, "RLE run lengths")
    if isinstance(values_enc, tuple):
        values = _ranged(values_enc, runs)
    else:
        values = _whole_ints(compression.decompress_block(values_enc, buf[8 : 8 + n_values], runs), runs, "RLE runs")
    if np.any(lengths < 0) or int(lengths.sum()) != n:
        raise CorruptFileError(f"RLE offsets: runs of {int(lengths.sum())} offsets, {n} needed")
    out: np.ndarray = np.repeat(values, lengths)
    return out


class CodedOffsetsPage(MiniBlockPage):
    """A mini-block page of strings or binaries whose offsets are 2.3-coded."""

    def __init__(
        self, info: PageInfo, cache: dict[Any, Any], layout: pb.MiniBlockLayout, value_type: pa.DataType
    ) -> None:
        found = coded_offsets(layout)
        if found is None:
            raise CorruptFileError("not a page of coded-offset values")
        # the mini-block machinery (chunk table, plans, level selection) sees Variable values with
        # flat offsets of the same width; ``decode`` reads the real two-buffer chunks
        seen = pb.MiniBlockLayout()
        seen.CopyFrom(layout)
        seen.value_compression.variable.offsets.Clear()
        seen.value_compression.variable.offsets.flat.bits_per_value = found.bits
        super().__init__(info, cache, seen, value_type)
        if layout.num_buffers != found.num_buffers:
            raise CorruptFileError(
                f"coded-offset values in {layout.num_buffers} chunk buffers, expected {found.num_buffers}"
            )
        if layout.HasField("dictionary"):
            raise UnsupportedEncodingError("dictionary pages of coded-offset values are not supported")
        self.offsets = found
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
            rep = level_chunks(self.layout.rep_compression, found.rep, num_levels, "repetition")
        if found.dfn is not None:
            dfn = level_chunks(self.layout.def_compression, found.dfn, num_levels, "definition")
        items = plan.items
        if not (self.fmt.has_rep or self.fmt.has_def):
            num_levels = items.astype(np.int64)
        elif not self.fmt.has_rep and np.any(num_levels != items):
            raise CorruptFileError("a mini-block chunk holds a different number of levels and values")
        segs = found.values
        parts = [self._to_arrow(self._chunk([seg.chunk(k) for seg in segs], int(items[k]))) for k in range(len(items))]
        values = parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
        return self._select(rows, plan, DecodedChunks(num_levels, rep, dfn, values))

    def _chunk(self, bufs: list[np.ndarray], n: int) -> VariableWidthBlock:
        """The values of one chunk from its value buffers."""
        code, data = self.offsets, bufs[-1]
        offsets = np.zeros(n + 1, dtype=np.int64)
        if code.rle is not None:
            offsets = _rle_offsets(code, bufs[0], n + 1)
            if np.any(np.diff(offsets) < 0):
                raise CorruptFileError("RLE offsets decrease")
        elif isinstance(code.deltas, tuple):  # deltas in a range: lengths start, start + step, ...
            np.cumsum(_ranged(code.deltas, n), out=offsets[1:])
        elif code.deltas is not None:
            block = compression.decompress_block(code.deltas, bufs[0], n)
            if not isinstance(block, FixedWidthBlock) or block.bits_per_value not in (8, 16, 32, 64):
                raise CorruptFileError("delta offsets: the deltas are not whole fixed-width integers")
            np.cumsum(block.as_dtype(f"<u{block.bits_per_value // 8}")[:n], out=offsets[1:])
        else:
            offsets[:] = code.step * np.arange(n + 1, dtype=np.int64)
        # offsets count from the chunk's value bytes, from the base (0 as pylance writes)
        end = code.first + int(offsets[-1])
        if end > len(data):
            raise CorruptFileError(f"coded offsets: values end at byte {end} of a buffer of {len(data)}")
        if code.bits == 32 and int(offsets[-1]) >= 1 << 32:
            raise CorruptFileError("coded offsets overflow their 32 bits")
        dt = np.uint32 if code.bits == 32 else np.uint64
        return VariableWidthBlock(offsets.astype(dt), data[code.first : end], n, ordered=True)
