"""Copying many slices of one buffer into another at once (the writer's page assembly).

A mini-block page is ~1000 chunks, each a header and one or more buffers placed at
computed offsets; copying them one numpy slice assignment at a time costs a Python
round trip per piece.  ``copy_slices`` does every copy in one numba pass (releasing the
GIL: pages are assembled on the writer's page pool).  Until the kernel is loaded (a fresh
process) the same copies run as a Python loop, and the kernel is prepared in the
background once the path is hot (jit.py ``NumpyUntilHot``).
"""

from __future__ import annotations

import numpy as np

from lancelot.util.jit import NumpyUntilHot, njit


@njit(cache=True, nogil=True)
def _copy_slices(out: np.ndarray, dst: np.ndarray, src: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> None:
    for k in range(len(lens)):
        d, s = dst[k], starts[k]
        out[d : d + lens[k]] = src[s : s + lens[k]]


#: kernel prepared in the background after 32 calls or 16 MiB copied (a small first write never loads numba)
HOT = NumpyUntilHot(_copy_slices, warm_work=16 << 20)


def _warm_type(x: np.ndarray) -> bool:
    """Whether ``x`` is of the types the kernel is warmed for (writable C-contiguous int64)."""
    return x.dtype == np.int64 and x.flags.c_contiguous and x.flags.writeable


def copy_slices(out: np.ndarray, dst: np.ndarray, src: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> None:
    """``out[dst[k]:dst[k] + lens[k]] = src[starts[k]:starts[k] + lens[k]]`` for every k (uint8 arrays;
    int64 positions)."""
    if not (_warm_type(dst) and _warm_type(starts) and _warm_type(lens)):
        dst, starts, lens = (np.require(x, np.int64, ["C", "W"]) for x in (dst, starts, lens))
    src = np.ascontiguousarray(src)
    if HOT.ready():
        _copy_slices(out, dst, src, starts, lens)
        return

    def warm() -> None:  # both forms of the source: a writable array and a read-only (Arrow or bytes) buffer
        frozen = np.zeros(0, np.uint8)
        frozen.flags.writeable = False
        for s in (np.zeros(0, np.uint8), frozen):
            _copy_slices(np.zeros(0, np.uint8), dst[:0].copy(), s, starts[:0].copy(), lens[:0].copy())

    HOT.numpy_call(warm, int(lens.sum()))
    for d, s, n in zip(dst.tolist(), starts.tolist(), lens.tolist()):
        out[d : d + n] = src[s : s + n]
