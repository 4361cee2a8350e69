"""Byte stream split of 32/64-bit values (lance.encodings21.ByteStreamSplit).

Mini-block only.  A chunk of n values of B bytes is one buffer of B streams of n bytes: stream j holds byte j of every
value.  ``values`` is a Flat giving the width.  Usually wrapped in General (zstd/lz4) compression."""

from __future__ import annotations

import numpy as np

from lancelot.encodings.compression.block import FixedWidthBlock
from lancelot.encodings.compression.buffers import as_u8, check_size, require
from lancelot.errors import UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb


def value_bits(bss: pb.ByteStreamSplit) -> int:
    if bss.values.WhichOneof("compression") != "flat":
        raise UnsupportedEncodingError("byte stream split whose values are not flat")
    bits = int(bss.values.flat.bits_per_value)
    if bits not in (32, 64):
        raise UnsupportedEncodingError(f"byte stream split of {bits}-bit values")
    return bits


def decompress_byte_stream_split(
    bss: pb.ByteStreamSplit, buffers: list[np.ndarray], num_values: int
) -> FixedWidthBlock:
    """Interleave the byte streams of one chunk back into values."""
    bits = value_bits(bss)
    nb = bits // 8
    if num_values == 0:
        return FixedWidthBlock(np.zeros(0, np.uint8), bits, 0)
    require(len(buffers) == 1, f"byte stream split expects 1 buffer, got {len(buffers)}")
    buf = as_u8(buffers[0])
    check_size(num_values * nb, "byte stream split values")
    require(len(buf) == num_values * nb, f"byte stream split: {len(buf)} bytes for {num_values} values of {nb} bytes")
    data = np.ascontiguousarray(buf.reshape(nb, num_values).T).reshape(-1)
    return FixedWidthBlock(data, bits, num_values)


def compress_byte_stream_split(block: FixedWidthBlock) -> tuple[pb.CompressiveEncoding, list[np.ndarray]]:
    """Split one chunk's values into byte streams."""
    bits = block.bits_per_value
    if bits not in (32, 64):
        raise UnsupportedEncodingError(f"byte stream split of {bits}-bit values")
    nb = bits // 8
    data = as_u8(block.data)[: block.num_values * nb]
    streams = np.ascontiguousarray(data.reshape(block.num_values, nb).T).reshape(-1)
    enc = pb.CompressiveEncoding(
        byte_stream_split=pb.ByteStreamSplit(values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=bits)))
    )
    return enc, [streams]
