"""Point reads: one value read where a technique's byte layout puts it.

A take of a few rows needs one value from each of a few chunks; decoding those chunks whole costs a hundred numpy calls
whatever the row count.  The point kernel of structural/miniblock_points.py parses each fetched mini-block chunk's
header and calls, per row, the point helpers that live with each technique (numba, inlined into the kernel):

* flat.py: ``flat_point``, ``bit_point``, ``flat_level_point`` (Flat values and levels);
* bitpacking_kernel.py: ``inline_chunk_width``, ``inline_point`` (InlineBitpacking values), ``out_of_line_fits``,
  ``out_of_line_point`` (OutOfLineBitpacking levels);
* variable_kernel.py: ``variable_fits``, ``variable_point`` (Variable values, FSST codes);
* rle_kernel.py: ``rle_fits``, ``rle_block_layout``, ``rle_point`` (Rle values and levels).

Each checks the sizes it relies on and returns one of the statuses below (the kernel raises nothing: the caller turns a
status into CorruptFileError).  This module holds what they share: the statuses and ``le``, a little-endian unsigned
integer of 1..8 bytes at a byte position."""

from __future__ import annotations

import numpy as np

from lancelot.util.jit import njit

OK, SHORT_CHUNK, LEVELS, BAD_WIDTH, SHORT_BUFFER, BAD_OFFSETS, SHORT_RUNS = range(7)
MESSAGES = {
    SHORT_CHUNK: "a chunk's header or buffers run past the chunk end",
    LEVELS: "a chunk holds a different number of levels and values",
    BAD_WIDTH: "bit width larger than the values",
    SHORT_BUFFER: "a chunk buffer is too short for its values",
    BAD_OFFSETS: "variable-width offsets out of order or past the chunk",
    SHORT_RUNS: "RLE runs cover fewer values than the chunk holds",
}


@njit(cache=True, nogil=True, inline="always")
def le(data: np.ndarray, pos: int, nbytes: int) -> np.uint64:
    """The little-endian unsigned integer of ``nbytes`` (<= 8) bytes at ``data[pos]``."""
    v: np.uint64 = np.uint64(0)  # (numpy's stubs type scalars as Any for Python 3.10)
    for b in range(nbytes):
        v |= np.uint64(data[pos + b]) << np.uint64(8 * b)
    return v


@njit(cache=True, nogil=True, inline="always")
def store_le(value: np.uint64, nbytes: int, out: np.ndarray, at: int) -> None:
    """Write the low ``nbytes`` bytes of ``value`` little-endian at ``out[at]``."""
    for b in range(nbytes):
        out[at + b] = (value >> np.uint64(8 * b)) & np.uint64(0xFF)
