"""Point reads of single values out of compressed buffers: the numba helpers.

A take of a few rows needs one value from each of a few chunks; decoding those
chunks whole costs a hundred numpy calls whatever the row count.  These helpers
read one value where the technique's byte layout puts it, for the point kernel
of structural/miniblock_points.py:

* ``_le``: a little-endian unsigned integer of 1..8 bytes at a byte position;
* ``_unpack_one``: value ``(row, lane)`` of a FastLanes-packed block
  (bitpacking.py): bits ``row * width`` of the lane's stream of T-bit words;
* ``lane_positions``: the (row, lane) of each of the 1024 values of a block.
"""

from __future__ import annotations

import numpy as np

from lancelot.encodings.compression.bitpacking import CHUNK, _permutations
from lancelot.encodings.compression.jit import njit

_LANE_OF: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def lane_positions(t: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, lane) of each of the 1024 values of a FastLanes chunk of T-bit values."""
    if t not in _LANE_OF:
        gather, _ = _permutations(t)  # value index -> lane-major position (lane * t + row)
        _LANE_OF[t] = ((gather % t).astype(np.int64), (gather // t).astype(np.int64))
    return _LANE_OF[t]


@njit(cache=True, nogil=True, inline="always")
def _le(data: np.ndarray, pos: int, nbytes: int) -> np.uint64:
    v = np.uint64(0)
    for b in range(nbytes):
        v |= np.uint64(data[pos + b]) << np.uint64(8 * b)
    return v


@njit(cache=True, nogil=True, inline="always")
def _unpack_one(data: np.ndarray, base: int, t: int, w: int, row: int, lane: int) -> np.uint64:
    """Value at (row, lane) of the packed words starting at ``base`` (width w > 0)."""
    tb = t // 8
    lanes = CHUNK // t
    bit = row * w
    word = bit // t
    shift = bit % t
    v = _le(data, base + (word * lanes + lane) * tb, tb) >> np.uint64(shift)
    if shift + w > t:
        v |= _le(data, base + ((word + 1) * lanes + lane) * tb, tb) << np.uint64(t - shift)
    if w < 64:
        v &= (np.uint64(1) << np.uint64(w)) - np.uint64(1)
    return v
