"""Data blocks: the input and output of 2.1+ compressive encodings.

(encodings_v2_1.proto, "Compressive Encodings": "data blocks are a simplified version of arrays".)  A compressive
encoding turns buffers back into a block; the structural layer (mini-block, full-zip) then adds validity and offsets
from repetition/definition levels and builds the Arrow array.

Buffers are numpy uint8 arrays (zero-copy views of fetched bytes where possible)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass
class FixedWidthBlock:
    """``num_values`` values of ``bits_per_value`` bits each, packed in ``data``.

    For bits_per_value that are multiples of 8, ``data`` holds exactly num_values * bits_per_value / 8 bytes, little
    endian; bits_per_value == 1 is an LSB-first bitmap (booleans)."""

    data: np.ndarray  # uint8
    bits_per_value: int
    num_values: int

    def as_dtype(self, dtype: npt.DTypeLike) -> np.ndarray:
        """View the values as numpy ``dtype`` (whole bytes only)."""
        return self.data[: self.num_values * (self.bits_per_value // 8)].view(dtype)


@dataclass
class VariableWidthBlock:
    """``num_values`` byte strings: value i is data[offsets[i]:offsets[i+1]]."""

    offsets: np.ndarray  # uint32 or uint64, num_values + 1 entries
    data: np.ndarray  # uint8
    num_values: int
    #: the offsets are known not to decrease (written in order by a decoder, not read from the file):
    #: whoever makes an Arrow array of the block need not check them again
    ordered: bool = False


@dataclass
class FixedSizeListBlock:
    """A fixed-size-list data block: ``child`` holds num_values * dimension items.

    ``validity`` (FixedSizeList.has_validity) is one bool per CHILD item (num_values * dimension entries): whether each
    item of the lists is valid."""

    child: DataBlock
    dimension: int
    num_values: int
    validity: np.ndarray | None = None  # bool per child item, when has_validity


@dataclass
class StructBlock:
    """A packed struct: one child block per struct field, each of num_values."""

    children: list[DataBlock]
    num_values: int


@dataclass
class ConstantBlock:
    """Every value equals ``value`` (raw bytes of one value); None = all null."""

    value: bytes | None
    num_values: int


DataBlock = FixedWidthBlock | VariableWidthBlock | FixedSizeListBlock | StructBlock | ConstantBlock
