"""Run-length encoding of fixed-width values (lance.encodings21.Rle).

Mini-block only.  Two buffers per chunk: the run values (``values.flat``
bits each) and the run lengths, one u8 each (``run_lengths.flat`` of 8 bits);
a run longer than 255 is split into runs of 255 and a remainder.  The runs
may cover more values than the chunk holds; the surplus is dropped.
"""

from __future__ import annotations

import numpy as np

from lancelot.encodings.compression.block import FixedWidthBlock
from lancelot.encodings.compression.buffers import as_u8, check_size, require, uint_dtype
from lancelot.errors import UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

MAX_RUN = 255


def _widths(rle: pb.Rle) -> tuple[int, int]:
    for name in ("values", "run_lengths"):
        kind = getattr(rle, name).WhichOneof("compression")
        if kind != "flat":
            raise UnsupportedEncodingError(f"RLE {name} compressed with {kind!r}")
    bits = int(rle.values.flat.bits_per_value)
    if bits not in (8, 16, 32, 64):
        raise UnsupportedEncodingError(f"RLE of {bits}-bit values")
    len_bits = int(rle.run_lengths.flat.bits_per_value)
    if len_bits != 8:
        raise UnsupportedEncodingError(f"RLE with {len_bits}-bit run lengths")
    return bits, len_bits


def decompress_rle(rle: pb.Rle, buffers: list, num_values: int) -> FixedWidthBlock:
    """Expand the runs of one mini-block chunk."""
    bits, _ = _widths(rle)
    wb = bits // 8
    if num_values == 0:
        return FixedWidthBlock(np.zeros(0, np.uint8), bits, 0)
    require(len(buffers) == 2, f"RLE expects 2 buffers, got {len(buffers)}")
    values, lengths = as_u8(buffers[0]), as_u8(buffers[1])
    require(len(values) % wb == 0, f"RLE values buffer of {len(values)} bytes for {bits}-bit values")
    require(len(values) // wb == len(lengths), f"RLE has {len(values) // wb} values but {len(lengths)} run lengths")
    check_size(num_values * wb, "RLE values")
    ends = np.cumsum(lengths, dtype=np.int64)
    require(len(ends) > 0 and int(ends[-1]) >= num_values,
            f"RLE runs cover {int(ends[-1]) if len(ends) else 0} values, expected {num_values}")
    keep = int(np.searchsorted(ends, num_values)) + 1  # runs needed to reach num_values
    counts = lengths[:keep].astype(np.int64)
    counts[-1] -= int(ends[keep - 1]) - num_values
    vals = np.frombuffer(values[: keep * wb].tobytes(), dtype=uint_dtype(bits))
    return FixedWidthBlock(np.repeat(vals, counts).view(np.uint8), bits, num_values)


def runs(vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(run values, run lengths as int64) of an array."""
    if len(vals) == 0:
        return vals[:0], np.zeros(0, np.int64)
    starts = np.concatenate([[0], np.nonzero(vals[1:] != vals[:-1])[0] + 1])
    lengths = np.diff(np.append(starts, len(vals)))
    return vals[starts], lengths


def compress_rle(block: FixedWidthBlock) -> tuple[pb.CompressiveEncoding, list[np.ndarray]]:
    """Runs of one chunk: values then u8 lengths (long runs split at 255)."""
    bits = block.bits_per_value
    vals = block.as_dtype(uint_dtype(bits, "RLE value"))
    run_vals, run_lens = runs(vals)
    pieces = -(-run_lens // MAX_RUN)
    out_vals = np.repeat(run_vals, pieces)
    out_lens = np.full(int(pieces.sum()), MAX_RUN, dtype=np.int64)
    last = np.cumsum(pieces) - 1
    out_lens[last] = run_lens - (pieces - 1) * MAX_RUN
    enc = pb.CompressiveEncoding(rle=pb.Rle(
        values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=bits)),
        run_lengths=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=8))))
    return enc, [out_vals.view(np.uint8), out_lens.astype(np.uint8)]


def rle_size(block: FixedWidthBlock) -> int:
    """Bytes compress_rle would produce (for the writer's choice)."""
    _, run_lens = runs(block.as_dtype(uint_dtype(block.bits_per_value, "RLE value")))
    return int((-(-run_lens // MAX_RUN)).sum()) * (block.bits_per_value // 8 + 1)
