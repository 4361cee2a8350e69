"""Flat: fixed-width values stored as they are (lance.encodings21.Flat).

``bits_per_value`` bits per value, packed contiguously, little endian; 1-bit values (booleans) are an LSB-first bitmap.
The same single-buffer layout serves mini-block chunks, whole-page blocks and full-zip values."""

from __future__ import annotations

import numpy as np

from lancelot.encodings.compression.block import FixedWidthBlock
from lancelot.encodings.compression.buffers import as_u8, check_size, require
from lancelot.encodings.compression.points import OK, SHORT_BUFFER, le
from lancelot.errors import UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.jit import njit

#: sanity bound on one value's width (a wide fixed-size-list of doubles fits easily)
MAX_BITS_PER_VALUE = 1 << 32


def flat_nbytes(bits_per_value: int, num_values: int) -> int:
    """Bytes that ``num_values`` values of ``bits_per_value`` bits occupy."""
    return (bits_per_value * num_values + 7) // 8


def check_flat(flat: pb.Flat) -> int:
    """Validate a Flat message and return its bits_per_value."""
    bits = flat.bits_per_value
    require(0 < bits <= MAX_BITS_PER_VALUE, f"flat encoding with {bits} bits per value")
    if flat.HasField("data"):
        raise UnsupportedEncodingError("flat encoding with per-buffer compression")
    return bits


def decompress_flat(flat: pb.Flat, buffers: list[np.ndarray], num_values: int) -> FixedWidthBlock:
    """Decode one buffer of flat values."""
    bits = check_flat(flat)
    require(len(buffers) >= 1, "flat encoding expects one buffer, got none")
    buf = as_u8(buffers[0])
    need = flat_nbytes(bits, num_values)
    check_size(need, "flat values")
    require(need <= len(buf), f"flat values need {need} bytes, buffer has {len(buf)}")
    return FixedWidthBlock(buf[:need], bits, num_values)


def compress_flat(block: FixedWidthBlock) -> tuple[pb.CompressiveEncoding, list[np.ndarray]]:
    """Store a fixed-width block as it is."""
    data = as_u8(block.data)[: flat_nbytes(block.bits_per_value, block.num_values)]
    enc = pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=block.bits_per_value))
    return enc, [data]


# -- point reads (compression/points.py): one value of a mini-block chunk's Flat buffer


@njit(cache=True, nogil=True, inline="always")
def flat_point(data: np.ndarray, at: int, size: int, i: int, nbytes: int, out: np.ndarray, j: int) -> int:
    """Copy value ``i`` (``nbytes`` bytes) of the Flat buffer at ``data[at:at + size]`` to slot ``j`` of ``out``."""
    if (i + 1) * nbytes > size:
        return SHORT_BUFFER
    for b in range(nbytes):
        out[j * nbytes + b] = data[at + i * nbytes + b]
    return OK


@njit(cache=True, nogil=True, inline="always")
def bit_point(data: np.ndarray, at: int, size: int, i: int, out: np.ndarray, j: int) -> int:
    """Bit ``i`` of the 1-bit Flat buffer at ``data[at:at + size]`` as byte ``j`` of ``out``."""
    if i // 8 >= size:
        return SHORT_BUFFER
    out[j] = (data[at + i // 8] >> (i % 8)) & 1
    return OK


@njit(cache=True, nogil=True, inline="always")
def flat_level_point(data: np.ndarray, at: int, size: int, i: int, nbytes: int) -> tuple[int, np.uint64]:
    """(status, level ``i``) of Flat levels of ``nbytes`` bytes each at ``data[at:at + size]``."""
    if (i + 1) * nbytes > size:
        return SHORT_BUFFER, np.uint64(0)
    return OK, le(data, at + i * nbytes, nbytes)
