"""Constant: every value equals one scalar kept in the description (lance.encodings21.Constant).

There is no buffer.  An absent ``value`` means every value is null."""

from __future__ import annotations

import numpy as np

from lancelot.encodings.compression.block import ConstantBlock
from lancelot.format.pb import encodings_v2_1_pb2 as pb


def decompress_constant(const: pb.Constant, num_values: int) -> ConstantBlock:
    """The constant block of ``num_values`` copies of the scalar."""
    value = bytes(const.value) if const.HasField("value") else None
    return ConstantBlock(value, num_values)


def compress_constant(value: bytes | None) -> tuple[pb.CompressiveEncoding, list[np.ndarray]]:
    """Describe ``value`` (raw bytes of one value, or None for all-null) as a constant."""
    const = pb.Constant() if value is None else pb.Constant(value=bytes(value))
    return pb.CompressiveEncoding(constant=const), []
