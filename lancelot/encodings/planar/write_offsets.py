"""Writing 2.3 mini-block strings and binaries with delta-coded offsets (docs/format-2.3.md,
"Mini-block strings and binaries: coded offsets").

pylance 14 writes a chunk of strings as ``Variable{offsets: Delta{1: offset bits, 3:
OutOfLineBitpacking{offset bits -> w}}}`` with two chunk buffers: the value lengths (the
deltas of the offsets ``0, l0, l0 + l1, ...``), bit-packed with one width for the whole
page, then the bytes (chunk sizes: chunk_sizes.py).  A page of empty values alone has
``Constant`` offsets (0) and one chunk buffer, the (no) bytes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lancelot.encodings.compression.bitpacking import compress_out_of_line_bitpacking
from lancelot.encodings.compression.block import FixedWidthBlock, VariableWidthBlock
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util import wire

#: CompressiveEncoding case 15 (Delta): {1: bits per value, 2: base, 3: deltas}
_DELTA = 15


def delta_offsets_encoding(bits: int, width: int) -> pb.CompressiveEncoding:
    """``Variable`` whose offsets are a Delta of out-of-line bit-packed lengths (``width`` bits each)."""
    deltas = pb.CompressiveEncoding(
        out_of_line_bitpacking=pb.OutOfLineBitpacking(
            uncompressed_bits_per_value=bits, values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=width))
        )
    )
    offsets = pb.CompressiveEncoding()
    # (case 15 is not in the 2.1 schema: kept as an unknown field, serialized as given)
    offsets.ParseFromString(wire.encode((_DELTA, wire.encode((1, bits), (3, deltas.SerializeToString())))))
    return pb.CompressiveEncoding(variable=pb.Variable(offsets=offsets))


def delta_offsets_chunks(
    block: VariableWidthBlock, bits: int
) -> tuple[Callable[[int, int], tuple[pb.CompressiveEncoding, list[np.ndarray]]], np.ndarray]:
    """The chunk encoder of a page of strings (items [a, a + n) -> (encoding, [lengths, bytes])) and the
    cumulative costs pylance cuts its chunks by (bytes and offsets of the first k values)."""
    offsets = block.offsets.astype(np.int64)
    lengths = np.diff(offsets).astype(f"<u{bits // 8}")
    width = int(lengths.max()).bit_length() if len(lengths) else 0
    data = block.data
    costs = (offsets - offsets[0]) + (bits // 8) * np.arange(len(offsets), dtype=np.int64)
    if width == 0:  # every value empty: Constant offsets and the (no) bytes, as pylance writes them
        empty = pb.CompressiveEncoding(
            variable=pb.Variable(offsets=pb.CompressiveEncoding(constant=pb.Constant(value=bytes(bits // 8))))
        )
        return (lambda a, n: (empty, [data[:0]])), costs
    enc = delta_offsets_encoding(bits, width)

    def chunk(a: int, n: int) -> tuple[pb.CompressiveEncoding, list[np.ndarray]]:
        lens = np.ascontiguousarray(lengths[a : a + n])
        _, (packed,) = compress_out_of_line_bitpacking(FixedWidthBlock(lens.view(np.uint8), bits, n), width)
        return enc, [packed, data[int(offsets[a]) : int(offsets[a + n])]]

    return chunk, costs
