"""Zero-copy views of Arrow array buffers, shared by the 2.0 and 2.1+ writers."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def is_large(t: pa.DataType) -> bool:
    """A type with 64-bit offsets (large string/binary/list)."""
    return pa.types.is_large_string(t) or pa.types.is_large_binary(t) or pa.types.is_large_list(t)


def arrow_offsets(arr: pa.Array) -> np.ndarray:
    """The len+1 offsets of a variable-width or list array, its slice offset applied (not rebased)."""
    dtype = np.int64 if is_large(arr.type) else np.int32
    return np.frombuffer(arr.buffers()[1], dtype)[arr.offset : arr.offset + len(arr) + 1]
