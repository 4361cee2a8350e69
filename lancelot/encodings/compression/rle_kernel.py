"""Run-length chunks decoded in one numba loop (lance.encodings21.Rle, chunked.py's batch path).

Each mini-block chunk holds its run values (buffer 0) and run lengths (buffer 1); a chunk of ``n`` values takes runs in
order until ``n`` values are out (surplus runs, which pylance may leave, are ignored).  The numpy formulation needed a
dozen passes (repeats, cumulative sums, clips); this loop reads each run once."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from lancelot.encodings.compression import points
from lancelot.encodings.compression.segments import Segments, gather
from lancelot.util.arrays import empty
from lancelot.util.jit import NumpyUntilHot, njit

OK, PART_VALUES, PART_LENGTHS, MISMATCH, NO_RUNS, SHORT_RUNS = range(6)
MESSAGES = {
    PART_VALUES: "RLE values part is not a whole number of values",
    PART_LENGTHS: "RLE run lengths part is not a whole number of lengths",
    MISMATCH: "RLE has a different number of values and run lengths",
    NO_RUNS: "RLE chunk without runs",
    SHORT_RUNS: "RLE runs cover fewer values than the chunk holds",
}


_le = points.le  # a little-endian unsigned integer of 1..8 bytes


@njit(cache=True, nogil=True)
def _runs(
    vdata: NDArray[np.uint8],
    vstarts: NDArray[np.int64],
    vsizes: NDArray[np.int64],
    ldata: NDArray[np.uint8],
    lstarts: NDArray[np.int64],
    lsizes: NDArray[np.int64],
    counts: NDArray[np.int64],
    wb: int,
    lb: int,
    out: NDArray[Any],
) -> int:
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


def decode_runs(
    vdata: np.ndarray,
    vstarts: np.ndarray,
    vsizes: np.ndarray,
    ldata: np.ndarray,
    lstarts: np.ndarray,
    lsizes: np.ndarray,
    counts: np.ndarray,
    dtype: np.dtype,
    len_bytes: int,
) -> tuple[int, np.ndarray]:
    """(status, values of ``dtype``) of every chunk: values at ``vdata[vstarts[k]:...]``, run lengths of ``len_bytes``
    bytes at ``ldata[lstarts[k]:...]``, ``counts[k]`` values each."""
    dtype = np.dtype(dtype)
    i64 = np.int64
    vstarts, vsizes, lstarts, lsizes, counts = (
        np.ascontiguousarray(a, dtype=i64) for a in (vstarts, vsizes, lstarts, lsizes, counts)
    )
    if not HOT_RUNS.ready():  # a fresh process: numpy until the kernel is loaded (same values and statuses)
        z = counts[:0].copy()
        HOT_RUNS.numpy_call(
            lambda: _runs(vdata, z, z, ldata, z, z, z, dtype.itemsize, int(len_bytes), np.empty(0, dtype)),
            work=len(counts),
        )
        return decode_runs_numpy(
            Segments(vdata, vstarts, vsizes), Segments(ldata, lstarts, lsizes), counts, dtype, len_bytes
        )
    out = empty(int(counts.sum()), dtype)
    status = _runs(vdata, vstarts, vsizes, ldata, lstarts, lsizes, counts, dtype.itemsize, int(len_bytes), out)
    return status, out


def decode_runs_numpy(
    runs_values: Segments, run_lengths: Segments, counts: np.ndarray, dtype: np.dtype, len_bytes: int
) -> tuple[int, np.ndarray]:
    """``decode_runs`` in numpy: every chunk's checks at once (the first bad chunk decides, as in the kernel), then each
    run's length cut to what its chunk still needs and one repeat."""
    vdata, vstarts, vsizes = runs_values.data, runs_values.starts, runs_values.sizes
    ldata, lstarts, lsizes = run_lengths.data, run_lengths.starts, run_lengths.sizes
    dtype = np.dtype(dtype)
    wb, lb = dtype.itemsize, int(len_bytes)
    live = counts > 0
    runs = vsizes // wb
    status = np.zeros(len(counts), dtype=np.int64)
    status[live & (runs == 0)] = NO_RUNS
    status[live & (runs != lsizes // lb)] = MISMATCH
    status[live & (lsizes % lb != 0)] = PART_LENGTHS
    status[live & (vsizes % wb != 0)] = PART_VALUES
    bad = np.flatnonzero(status)
    limit = int(bad[0]) if len(bad) else len(counts)  # chunks before the first bad one are decoded
    ks = np.flatnonzero(live[:limit])
    n_runs = runs[ks]
    values = np.ascontiguousarray(gather(vdata, vstarts[ks], n_runs * wb)).view(dtype.newbyteorder("<"))
    lengths = np.ascontiguousarray(gather(ldata, lstarts[ks], n_runs * lb)).view(f"<u{lb}")
    need = np.repeat(counts[ks], n_runs)  # the values of each run's chunk
    lengths = np.minimum(lengths.astype(np.uint64), need.astype(np.uint64)).astype(np.int64)
    ends = np.cumsum(lengths)
    first = np.cumsum(n_runs) - n_runs  # each chunk's first run
    before = np.repeat(ends[first] - lengths[first], n_runs)  # the values of the chunks before
    done = np.minimum(ends - before, need)  # a run's chunk's values out after it
    took = np.diff(np.concatenate([[0], done]))
    took[first] = done[first]
    got = np.add.reduceat(took, first) if len(first) else np.zeros(0, np.int64)
    short = np.flatnonzero(got < counts[ks])
    if len(short):
        k = int(ks[short[0]])
        if k < limit:
            return SHORT_RUNS, np.empty(0, dtype)
    if len(bad):
        return int(status[limit]), np.empty(0, dtype)
    return OK, np.repeat(values, took).astype(dtype, copy=False)


#: RLE reads decoded with numpy before the kernel is prepared in the background (or 100k chunks)
HOT_RUNS = NumpyUntilHot(_runs, warm_work=100_000)


# -- point reads (compression/points.py): one value of run-length encoded values or levels


@njit(cache=True, nogil=True, inline="always")
def rle_fits(values_size: int, lengths_size: int, vb: int, lb: int) -> int:
    """Whether a chunk's values buffer holds one value of ``vb`` bytes per run length of ``lb`` bytes."""
    if values_size < (lengths_size // lb) * vb:
        return points.SHORT_BUFFER
    return points.OK


@njit(cache=True, nogil=True, inline="always")
def rle_block_layout(data: np.ndarray, at: int, size: int, vb: int, lb: int) -> tuple[int, int, int]:
    """(status, values size, runs) of a block-context Rle (u64 values size, values, run lengths)."""
    if size < 8:
        return points.SHORT_BUFFER, 0, 0
    values_size = np.int64(points.le(data, at, 8))
    if values_size > size - 8:
        return points.SHORT_BUFFER, 0, 0
    runs = (size - 8 - values_size) // lb
    if values_size < runs * vb:
        return points.SHORT_BUFFER, 0, 0
    return points.OK, values_size, runs


@njit(cache=True, nogil=True, inline="always")
def rle_point(
    data: np.ndarray, values_at: int, lengths_at: int, runs: int, i: int, vb: int, lb: int, run: int, covered: int
) -> tuple[int, int, int, np.uint64]:
    """(status, run, covered, value) of item ``i``: rows of a chunk come in order, so the search resumes from the
    caller's ``run`` and ``covered`` (the items runs 0..run cover; 0 = not started)."""
    if run < runs and covered == 0:
        covered = np.int64(points.le(data, lengths_at, lb))
    while run < runs and covered <= i:
        run += 1
        if run < runs:
            covered += np.int64(points.le(data, lengths_at + run * lb, lb))
    if run >= runs:
        return points.SHORT_RUNS, run, covered, np.uint64(0)
    return points.OK, run, covered, points.le(data, values_at + run * vb, vb)
