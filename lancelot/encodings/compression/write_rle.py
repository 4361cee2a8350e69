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

from lancelot.util.jit import NumpyUntilHot, lazy_intrinsic, njit

load_u64 = lazy_intrinsic("lancelot.util.jit_intrinsics", "load_u64")


@njit(cache=True, nogil=True)
def _runs(data: np.ndarray, width: int, n: int, max_run: int) -> tuple[np.ndarray, np.ndarray]:
    """(run values' bytes, u8 run lengths) of the ``n`` values of ``width`` (1..8) bytes in ``data``, each run
    cut into pieces of at most ``max_run`` values.  Each value is one masked 8-byte load (byte by byte in the
    last 8 bytes); helpers are written out (numba would count the references of an array passed to one)."""
    values = np.empty(n * width, np.uint8)
    lengths = np.empty(n, np.uint8)
    nd = len(data)
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - 8 * width)
    k = 0  # pieces written
    start = 0  # the current piece's first value
    cur = np.uint64(0)
    for i in range(n + 1):
        x = np.uint64(0)
        if i < n:
            pos = i * width
            if pos + 8 <= nd:
                x = load_u64(data, pos) & mask
            else:
                for b in range(width):
                    x |= np.uint64(data[pos + b]) << np.uint64(8 * b)
        if i > 0 and (i == n or x != cur or i - start == max_run):
            for b in range(width):
                values[k * width + b] = np.uint8((cur >> np.uint64(8 * b)) & np.uint64(0xFF))
            lengths[k] = i - start
            k += 1
            start = i
        cur = x
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
