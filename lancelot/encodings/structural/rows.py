"""Row index arrays shared by the 2.1+ page readers."""

from __future__ import annotations

import numpy as np

_RANGE = np.zeros(0, dtype=np.int64)
#: row ranges longer than this are not served from the shared arange
MAX_SHARED_RANGE = 1 << 22


def row_range(lo: int, hi: int) -> np.ndarray:
    """``np.arange(lo, hi)`` (int64), as a read-only view of one shared arange when it is not huge.

    Reads of whole pages pass their rows as such ranges; sharing one array saves
    allocating and filling an index per column and page.
    """
    global _RANGE
    if hi > len(_RANGE):
        if hi > MAX_SHARED_RANGE:
            return np.arange(lo, hi, dtype=np.int64)
        grown = np.arange(min(MAX_SHARED_RANGE, max(hi, 2 * len(_RANGE))), dtype=np.int64)
        grown.flags.writeable = False
        _RANGE = grown
    return _RANGE[lo:hi]
