"""Run-length encoding of fixed-width values (lance.encodings21.Rle).

Two parts: the run values (``values.flat`` bits each) and the run lengths (``run_lengths.flat`` bits each, pylance 14
writes u8); a run longer than the largest length is split into several runs of the same value.  The runs may cover more
values than asked for; the surplus is dropped.

Where the two parts live depends on the context:

* mini-block chunk: two buffers, values then lengths;
* block (one whole buffer, e.g. the rep/def levels of a mini-block chunk or of a constant layout, 2.2): a little-endian
  u64 giving the byte size of the values part, then the values, then the run lengths up to the buffer's end."""

from __future__ import annotations

import numpy as np

from lancelot.encodings.compression.block import FixedWidthBlock
from lancelot.encodings.compression.buffers import as_u8, check_size, require, uint_dtype
from lancelot.encodings.compression.write_rle import split_runs
from lancelot.errors import UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

MAX_RUN = 255
#: bytes of the values-size prefix of a block-context RLE buffer
BLOCK_HEADER = 8


def _part_bits(enc: pb.CompressiveEncoding, name: str) -> int:
    """The width of one RLE part: Flat, General over Flat (2.3, a field asking for zstd: each part compressed on its
    own) or out-of-line bitpacking (2.3: the run values, or the run lengths of flat values)."""
    kind = enc.WhichOneof("compression")
    if kind == "general" and enc.general.values.WhichOneof("compression") == "flat":
        return int(enc.general.values.flat.bits_per_value)
    if kind == "out_of_line_bitpacking":
        return int(enc.out_of_line_bitpacking.uncompressed_bits_per_value)
    if kind != "flat":
        raise UnsupportedEncodingError(f"RLE {name} compressed with {kind!r}")
    return int(enc.flat.bits_per_value)


def rle_widths(rle: pb.Rle) -> tuple[int, int]:
    bits = _part_bits(rle.values, "values")
    if bits not in (8, 16, 32, 64):
        raise UnsupportedEncodingError(f"RLE of {bits}-bit values")
    len_bits = _part_bits(rle.run_lengths, "run_lengths")
    if len_bits not in (8, 16, 32, 64):
        raise UnsupportedEncodingError(f"RLE with {len_bits}-bit run lengths")
    return bits, len_bits


def _expand(values: np.ndarray, lengths: np.ndarray, bits: int, len_bits: int, num_values: int) -> FixedWidthBlock:
    """Repeat each run value by its run length; keep the first ``num_values``."""
    wb, lb = bits // 8, len_bits // 8
    require(len(values) % wb == 0, f"RLE values part of {len(values)} bytes for {bits}-bit values")
    require(len(lengths) % lb == 0, f"RLE run lengths part of {len(lengths)} bytes for {len_bits}-bit lengths")
    num_runs = len(values) // wb
    require(num_runs == len(lengths) // lb, f"RLE has {num_runs} values but {len(lengths) // lb} run lengths")
    check_size(num_values * wb, "RLE values")
    # a run longer than num_values only adds surplus: clip first, so sums cannot overflow
    raw = np.frombuffer(lengths.tobytes(), dtype=uint_dtype(len_bits)).astype(np.uint64)
    counts = np.minimum(raw, np.uint64(num_values)).astype(np.int64)
    ends = np.cumsum(counts, dtype=np.float64)  # exact below 2**53, and num_values is far below that
    require(
        num_runs > 0 and ends[-1] >= num_values,
        f"RLE runs cover {int(ends[-1]) if num_runs else 0} values, expected {num_values}",
    )
    keep = int(np.searchsorted(ends, num_values)) + 1  # runs needed to reach num_values
    counts = counts[:keep]
    counts[-1] = num_values - int(counts[:-1].sum())
    vals = np.frombuffer(values[: keep * wb].tobytes(), dtype=uint_dtype(bits))
    return FixedWidthBlock(np.repeat(vals, counts).view(np.uint8), bits, num_values)


def flat_values(rle: pb.Rle) -> bool:
    """Whether both parts are stored flat (the batch and point kernels read only those; 2.3 may bit-pack the run values
    out of line or General-compress the parts, which ``decompress_rle`` reads)."""
    return bool(rle.values.WhichOneof("compression") == "flat" and rle.run_lengths.WhichOneof("compression") == "flat")


def _parts(
    rle: pb.Rle, values: np.ndarray, lengths: np.ndarray, bits: int, len_bits: int
) -> tuple[np.ndarray, np.ndarray]:
    """The (run values, run lengths) parts as flat bytes: as stored, inflated (General), or unpacked from out-of-line
    bitpacking (the values one per run length, the lengths one per run value)."""
    if rle.run_lengths.HasField("out_of_line_bitpacking"):
        from lancelot.encodings.compression.bitpacking import decompress_out_of_line_bitpacking

        if rle.values.HasField("general"):
            from lancelot.encodings.compression.general import decompress_buffer

            values = as_u8(decompress_buffer(rle.values.general.compression, values))
        elif not rle.values.HasField("flat"):
            raise UnsupportedEncodingError("RLE with both parts bit-packed")
        num_runs = len(values) // (bits // 8)
        packed = rle.run_lengths.out_of_line_bitpacking
        return values, as_u8(decompress_out_of_line_bitpacking(packed, lengths, num_runs).data)
    if rle.run_lengths.HasField("general"):
        from lancelot.encodings.compression.general import decompress_buffer

        lengths = as_u8(decompress_buffer(rle.run_lengths.general.compression, lengths))
    if rle.values.HasField("general"):
        from lancelot.encodings.compression.general import decompress_buffer

        values = as_u8(decompress_buffer(rle.values.general.compression, values))
    elif rle.values.HasField("out_of_line_bitpacking"):
        from lancelot.encodings.compression.bitpacking import decompress_out_of_line_bitpacking

        num_runs = len(lengths) // (len_bits // 8)
        values = as_u8(decompress_out_of_line_bitpacking(rle.values.out_of_line_bitpacking, values, num_runs).data)
    return values, lengths


def decompress_rle(rle: pb.Rle, buffers: list[np.ndarray], num_values: int) -> FixedWidthBlock:
    """Expand the runs of one mini-block chunk (values buffer, lengths buffer)."""
    bits, len_bits = rle_widths(rle)
    if num_values == 0:
        return FixedWidthBlock(np.zeros(0, np.uint8), bits, 0)
    require(len(buffers) == 2, f"RLE expects 2 buffers, got {len(buffers)}")
    values, lengths = _parts(rle, as_u8(buffers[0]), as_u8(buffers[1]), bits, len_bits)
    return _expand(values, lengths, bits, len_bits, num_values)


def decompress_rle_block(rle: pb.Rle, buffer: np.ndarray, num_values: int) -> FixedWidthBlock:
    """Expand the runs of one whole buffer: u64 values size, values, run lengths."""
    bits, len_bits = rle_widths(rle)
    buf = as_u8(buffer)
    if num_values == 0:
        return FixedWidthBlock(np.zeros(0, np.uint8), bits, 0)
    require(len(buf) >= BLOCK_HEADER, f"RLE block of {len(buf)} bytes has no values-size header")
    values_size = int.from_bytes(buf[:BLOCK_HEADER].tobytes(), "little")
    require(
        values_size <= len(buf) - BLOCK_HEADER,
        f"RLE block values part of {values_size} bytes overruns the {len(buf)}-byte buffer",
    )
    start = BLOCK_HEADER + values_size
    values, lengths = _parts(rle, buf[BLOCK_HEADER:start], buf[start:], bits, len_bits)
    return _expand(values, lengths, bits, len_bits, num_values)


def runs(vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(run values, run lengths as int64) of an array."""
    if len(vals) == 0:
        return vals[:0], np.zeros(0, np.int64)
    starts = np.concatenate([[0], np.nonzero(vals[1:] != vals[:-1])[0] + 1])
    lengths = np.diff(np.append(starts, len(vals)))
    return vals[starts], lengths


def _split_runs(block: FixedWidthBlock) -> tuple[pb.CompressiveEncoding, np.ndarray, np.ndarray]:
    """The encoding and the (values, u8 lengths) parts, runs longer than 255 split (one numba pass once write_rle's
    kernel is loaded)."""
    bits = block.bits_per_value
    vals = block.as_dtype(uint_dtype(bits, "RLE value"))
    made = split_runs(vals.view(np.uint8), bits // 8, block.num_values, MAX_RUN)
    if made is not None:
        out_vals, out_lens = made
    else:
        run_vals, run_lens = runs(vals)
        pieces = -(-run_lens // MAX_RUN)
        out_vals = np.repeat(run_vals, pieces)
        lens = np.full(int(pieces.sum()), MAX_RUN, dtype=np.int64)
        lens[np.cumsum(pieces) - 1] = run_lens - (pieces - 1) * MAX_RUN
        out_lens = lens.astype(np.uint8)
    enc = pb.CompressiveEncoding(
        rle=pb.Rle(
            values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=bits)),
            run_lengths=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=8)),
        )
    )
    return enc, out_vals.view(np.uint8), out_lens


def compress_rle(block: FixedWidthBlock) -> tuple[pb.CompressiveEncoding, list[np.ndarray]]:
    """Runs of one chunk: values then u8 lengths (long runs split at 255)."""
    enc, values, lengths = _split_runs(block)
    return enc, [values, lengths]


def compress_rle_block(block: FixedWidthBlock) -> tuple[pb.CompressiveEncoding, np.ndarray]:
    """Runs of a whole block in one buffer: u64 values size, values, u8 lengths."""
    enc, values, lengths = _split_runs(block)
    header = np.array([len(values)], dtype="<u8").view(np.uint8)
    return enc, np.concatenate([header, values, lengths])


def rle_size(block: FixedWidthBlock) -> int:
    """Bytes compress_rle would produce (for the writer's choice)."""
    _, run_lens = runs(block.as_dtype(uint_dtype(block.bits_per_value, "RLE value")))
    return int((-(-run_lens // MAX_RUN)).sum()) * (block.bits_per_value // 8 + 1)
