"""The runs of one RLE chunk in one numba pass (the writer's side of rle.py).

A page of sorted keys (TPC-H l_orderkey's dictionary indices) is ~250 RLE chunks of 4096
values; rle.py's numpy formulation costs a dozen calls (~45 us) per chunk, this loop a few
microseconds.  Runs are cut at ``max_run`` values from their start, as rle.py cuts them, so
the bytes are the same.  Until the kernel is loaded (a fresh process) rle.py's numpy path
runs and the kernel is prepared in the background once the path is hot (jit.py
``NumpyUntilHot``).
"""

from __future__ import annotations

import numpy as np

from lancelot.encodings.compression.jit import NumpyUntilHot, njit


@njit(cache=True, nogil=True)
def _runs(data: np.ndarray, width: int, n: int, max_run: int) -> tuple[np.ndarray, np.ndarray]:
    """(run values' bytes, u8 run lengths) of the ``n`` values of ``width`` bytes in ``data``, each run cut
    into pieces of at most ``max_run`` values.  (The byte compare is written out: numba would count the
    references of an array passed to a helper on every value.)"""
    values = np.empty(n * width, np.uint8)
    lengths = np.empty(n, np.uint8)
    k = 0
    i = 0
    while i < n:
        j = i + 1
        while j < n and j - i < max_run:
            b = 0
            while b < width and data[j * width + b] == data[i * width + b]:
                b += 1
            if b < width:
                break
            j += 1
        for b in range(width):
            values[k * width + b] = data[i * width + b]
        lengths[k] = j - i
        k += 1
        i = j
    return values[: k * width], lengths[:k]


#: kernel prepared in the background after 32 numpy calls or 1 Mi values
HOT = NumpyUntilHot(_runs, warm_work=1 << 20)


def _warm() -> None:
    """Both forms of the data: a writable array and a read-only (Arrow) buffer."""
    frozen = np.zeros(8, np.uint8)
    frozen.flags.writeable = False
    for data in (np.zeros(8, np.uint8), frozen):
        _runs(data, 8, 1, 255)


def split_runs(data: np.ndarray, width: int, n: int, max_run: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``_runs`` once the kernel is loaded, else None (the caller's numpy path; the call is counted)."""
    if HOT.ready():
        return _runs(np.ascontiguousarray(data), width, n, max_run)
    HOT.numpy_call(_warm, n)
    return None
