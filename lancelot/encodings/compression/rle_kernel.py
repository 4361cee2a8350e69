"""Run-length chunks decoded in one numba loop (lance.encodings21.Rle, chunked.py's batch path).

Each mini-block chunk holds its run values (buffer 0) and run lengths (buffer 1);
a chunk of ``n`` values takes runs in order until ``n`` values are out (surplus
runs, which pylance may leave, are ignored).  The numpy formulation needed a
dozen passes (repeats, cumulative sums, clips); this loop reads each run once.
"""

from __future__ import annotations

import numpy as np

from lancelot.encodings.compression.jit import njit

OK, PART_VALUES, PART_LENGTHS, MISMATCH, NO_RUNS, SHORT_RUNS = range(6)
MESSAGES = {
    PART_VALUES: "RLE values part is not a whole number of values",
    PART_LENGTHS: "RLE run lengths part is not a whole number of lengths",
    MISMATCH: "RLE has a different number of values and run lengths",
    NO_RUNS: "RLE chunk without runs",
    SHORT_RUNS: "RLE runs cover fewer values than the chunk holds",
}


@njit(cache=True, nogil=True)
def _le(data, pos, nbytes) -> np.uint64:
    v = np.uint64(0)
    for b in range(nbytes):
        v |= np.uint64(data[pos + b]) << np.uint64(8 * b)
    return v


@njit(cache=True, nogil=True)
def _runs(vdata, vstarts, vsizes, ldata, lstarts, lsizes, counts, wb, lb, out) -> int:
    p = 0
    for k in range(len(counts)):
        n = counts[k]
        if n == 0:
            continue
        if vsizes[k] % wb:
            return PART_VALUES
        if lsizes[k] % lb:
            return PART_LENGTHS
        runs = vsizes[k] // wb
        if runs != lsizes[k] // lb:
            return MISMATCH
        if runs == 0:
            return NO_RUNS
        done = 0
        for r in range(runs):
            if done >= n:
                break
            length = np.int64(min(_le(ldata, lstarts[k] + r * lb, lb), np.uint64(n - done)))
            value = _le(vdata, vstarts[k] + r * wb, wb)
            for j in range(p + done, p + done + length):
                out[j] = value
            done += length
        if done < n:
            return SHORT_RUNS
        p += n
    return OK


def decode_runs(vdata: np.ndarray, vstarts: np.ndarray, vsizes: np.ndarray, ldata: np.ndarray, lstarts: np.ndarray,
                lsizes: np.ndarray, counts: np.ndarray, dtype: np.dtype, len_bytes: int) -> tuple[int, np.ndarray]:
    """(status, values of ``dtype``) of every chunk: values at ``vdata[vstarts[k]:...]``, run lengths of
    ``len_bytes`` bytes at ``ldata[lstarts[k]:...]``, ``counts[k]`` values each."""
    dtype = np.dtype(dtype)
    out = np.empty(int(counts.sum()), dtype=dtype)
    i64 = np.int64
    status = _runs(vdata, vstarts.astype(i64, copy=False), vsizes.astype(i64, copy=False), ldata,
                   lstarts.astype(i64, copy=False), lsizes.astype(i64, copy=False), counts.astype(i64, copy=False),
                   dtype.itemsize, int(len_bytes), out)
    return status, out
