"""The point kernel of miniblock_points.py in numpy, for takes of a few rows.

Same inputs, outputs, checks and statuses as ``miniblock_points._points``, computed
for all rows at once instead of row by row: every value the kernel reads with ``_le``
is a little-endian integer at a computed byte position, so a few fancy-indexing
gathers do it.  Used when a take has few rows and the numba kernel is not loaded yet
in this process (see ``PointReader.run``): no numba import, no compilation, on the
first take of a fresh process.  Positions outside the fetched bytes (only reached
on chunks the checks reject) are clipped, never read.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lancelot.encodings.compression.bitpacking import CHUNK

FLAT, BITS, INLINE, VARIABLE, RLE = 0, 1, 2, 3, 4
NO_DEF, DEF_OUT_OF_LINE, DEF_FLAT, DEF_RLE = 0, 1, 2, 3
OK, SHORT_CHUNK, LEVELS, BAD_WIDTH, SHORT_BUFFER, BAD_OFFSETS, SHORT_RUNS = range(7)

_U = {1: "u1", 2: "<u2", 4: "<u4", 8: "<u8"}


def le(data: NDArray[np.uint8], pos: NDArray[np.int64], nbytes: int) -> NDArray[np.uint64]:
    """The little-endian unsigned integers of ``nbytes`` bytes at byte positions ``pos`` (uint64)."""
    pos = np.asarray(pos, dtype=np.int64)
    if nbytes == 0 or len(data) == 0:
        return np.zeros(pos.shape, dtype=np.uint64)
    idx = np.minimum(np.maximum(pos, 0)[..., None] + np.arange(nbytes), len(data) - 1)
    raw = data[idx]
    if nbytes in _U:
        return np.ascontiguousarray(raw).view(_U[nbytes])[..., 0].astype(np.uint64)
    shifts = np.arange(nbytes, dtype=np.uint64) * np.uint64(8)
    joined: NDArray[np.uint64] = np.bitwise_or.reduce(raw.astype(np.uint64) << shifts, axis=-1)
    return joined


def unpack_one(
    data: NDArray[np.uint8],
    base: NDArray[np.int64],
    t: int,
    w: NDArray[np.int64],
    row: NDArray[np.int64],
    lane: NDArray[np.int64],
) -> NDArray[np.uint64]:
    """``points._unpack_one`` for many values: value (row, lane) of the packed words at ``base``, width w > 0."""
    tb = t // 8
    lanes = CHUNK // t
    bit = row * w
    word = bit // t
    shift = bit % t
    v = le(data, base + (word * lanes + lane) * tb, tb) >> shift.astype(np.uint64)
    spill = shift + w > t
    if spill.any():
        hi = le(data, base + ((word + 1) * lanes + lane) * tb, tb)
        up = np.where(spill, t - shift, 0).astype(np.uint64)
        v = np.where(spill, v | (hi << up), v)
    mask = np.where(
        w < 64, (np.uint64(1) << np.minimum(w, 63).astype(np.uint64)) - np.uint64(1), np.uint64(0xFFFFFFFFFFFFFFFF)
    )
    values: NDArray[np.uint64] = v & mask
    return values


def _run_of(
    data: np.ndarray, lens_at: np.ndarray, runs: np.ndarray, lb: np.ndarray, k: np.ndarray, i: np.ndarray
) -> np.ndarray:
    """Per row: the run of chunk ``k`` holding item ``i`` (the first whose cumulative length exceeds
    i; ``runs[k]`` or more when the runs end first).  Chunk c's run lengths are ``runs[c]`` integers
    of ``lb[c]`` bytes at ``lens_at[c]``."""
    run_base = np.zeros(len(runs) + 1, dtype=np.int64)
    np.cumsum(runs, out=run_base[1:])
    if run_base[-1] == 0:
        return np.zeros(len(k), dtype=np.int64)
    owner = np.repeat(np.arange(len(runs)), runs)
    at = lens_at[owner] + (np.arange(run_base[-1]) - run_base[owner]) * lb[owner]
    lengths = np.zeros(len(at), dtype=np.int64)
    for width in np.unique(lb[owner]).tolist():
        sel = lb[owner] == width
        lengths[sel] = le(data, at[sel], int(width)).astype(np.int64)
    cum = np.cumsum(lengths)
    before = np.where(run_base[:-1] > 0, cum[np.maximum(run_base[:-1] - 1, 0)], 0)
    run: NDArray[np.int64] = np.searchsorted(cum, before[k] + i, side="right") - run_base[k]
    return run


def _bytes_of(values: np.ndarray, nbytes: int) -> np.ndarray:
    """The low ``nbytes`` little-endian bytes of each uint64, flattened."""
    return np.ascontiguousarray(values.astype("<u8")).view(np.uint8).reshape(-1, 8)[:, :nbytes].reshape(-1)


def points_numpy(
    data: np.ndarray,
    pos: np.ndarray,
    size: np.ndarray,
    counts: np.ndarray,
    k_of: np.ndarray,
    idx: np.ndarray,
    has_def: int,
    word: int,
    nb: int,
    def_kind: int,
    def_t: int,
    def_ws: np.ndarray,
    def_rows: np.ndarray,
    def_lanes: np.ndarray,
    vkind: int,
    vparam: int,
    vparam2: int,
    rows: np.ndarray,
    lanes: np.ndarray,
    dfn_out: np.ndarray,
    fixed_out: np.ndarray,
    var_start: np.ndarray,
    var_len: np.ndarray,
    where: np.ndarray,
) -> int:
    """``miniblock_points._points`` (same arguments, outputs and status), vectorized with numpy."""
    n_rows = len(k_of)
    if n_rows == 0:
        return OK
    pos, size, counts = (np.asarray(a, dtype=np.int64) for a in (pos, size, counts))
    k_of, idx, def_ws = (np.asarray(a, dtype=np.int64) for a in (k_of, idx, def_ws))
    # the layout of every fetched chunk
    head = 2 + 2 * has_def + word * nb
    cst = np.where(size < head, SHORT_CHUNK, OK)
    cursor = np.full(len(pos), (head + 7) // 8 * 8, dtype=np.int64)
    def_start = np.zeros(len(pos), dtype=np.int64)
    def_size = np.zeros(len(pos), dtype=np.int64)
    if has_def:
        levels = le(data, pos, 2).astype(np.int64)
        cst = np.where((cst == OK) & (levels != counts), LEVELS, cst)
        def_size = le(data, pos + 2, 2).astype(np.int64)
        def_start = cursor
        cursor = (cursor + def_size + 7) // 8 * 8
        cst = np.where((cst == OK) & (def_start + def_size > size), SHORT_CHUNK, cst)
    field = 2 + 2 * has_def
    v0 = cursor
    v0_size = le(data, pos + field, word).astype(np.int64)
    v1 = np.zeros(len(pos), dtype=np.int64)
    v1_size = np.zeros(len(pos), dtype=np.int64)
    end = v0 + v0_size
    if nb > 1:
        v1 = (end + 7) // 8 * 8
        v1_size = le(data, pos + field + word, word).astype(np.int64)
        end = v1 + v1_size
    cst = np.where((cst == OK) & (end > size), SHORT_CHUNK, cst)
    n = counts
    if def_kind == DEF_OUT_OF_LINE:
        tb = def_t // 8
        group_bytes = (CHUNK // 8) * def_ws
        whole, tail = n // CHUNK, n % CHUNK
        raw_tail = (tail > 0) & (def_size == whole * group_bytes + tail * tb)
        packed = whole + ((tail > 0) & ~raw_tail)
        need = packed * group_bytes + np.where(raw_tail, tail * tb, 0)
        cst = np.where((cst == OK) & (def_size < need), SHORT_BUFFER, cst)
    d_vs = np.zeros(len(pos), dtype=np.int64)
    d_runs = np.zeros(len(pos), dtype=np.int64)
    if def_kind == DEF_RLE:
        tb = def_t // 8
        lb = np.maximum(def_ws, 1)
        cst = np.where((cst == OK) & (def_size < 8), SHORT_BUFFER, cst)
        d_vs = le(data, pos + def_start, 8).astype(np.int64)
        cst = np.where((cst == OK) & (d_vs > def_size - 8), SHORT_BUFFER, cst)
        d_runs = np.where(cst == OK, (def_size - 8 - d_vs) // lb, 0)
        cst = np.where((cst == OK) & (d_vs < d_runs * tb), SHORT_BUFFER, cst)
        d_runs = np.where(cst == OK, d_runs, 0)
    w = np.zeros(len(pos), dtype=np.int64)
    if vkind == INLINE:
        tb = vparam // 8
        cst = np.where((cst == OK) & (v0_size < tb), SHORT_BUFFER, cst)
        w = le(data, pos + v0, tb).astype(np.int64)
        cst = np.where((cst == OK) & ((w < 0) | (w > vparam)), BAD_WIDTH, cst)
        cst = np.where((cst == OK) & (tb + (CHUNK // 8) * w > v0_size), SHORT_BUFFER, cst)
    elif vkind == VARIABLE:
        cst = np.where((cst == OK) & ((n + 1) * vparam > v0_size), SHORT_BUFFER, cst)
    elif vkind == RLE:
        cst = np.where((cst == OK) & (v0_size < (v1_size // vparam2) * vparam), SHORT_BUFFER, cst)
    # per row: status of its chunk (met at the chunk's first row), then of its level and value
    k, i = k_of, idx
    first = np.ones(n_rows, dtype=bool)
    first[1:] = k[1:] != k[:-1]
    rst = np.where(first, cst[k], OK)
    bad_chunk = cst[k] != OK  # rows after a chunk's first: never reached by the kernel
    p0 = pos[k]
    if def_kind == DEF_OUT_OF_LINE:
        tb = def_t // 8
        dw = def_ws[k]
        group_bytes = (CHUNK // 8) * dw
        nk = n[k]
        whole, tail = nk // CHUNK, nk % CHUNK
        full = whole * group_bytes
        raw_tail = (tail > 0) & (def_size[k] == full + tail * tb)
        packed = whole + ((tail > 0) & ~raw_tail)
        g = i // CHUNK
        r = i % CHUNK
        raw = le(data, p0 + def_start[k] + full + (i - whole * CHUNK) * tb, tb)
        bits = unpack_one(
            data, p0 + def_start[k] + g * group_bytes, def_t, np.maximum(dw, 1), def_rows[r], def_lanes[r]
        )
        dfn_out[:] = np.where(g >= packed, raw, np.where(dw == 0, 0, bits))
    elif def_kind == DEF_FLAT:
        tb = def_t // 8
        rst = np.where((rst == OK) & ((i + 1) * tb > def_size[k]), SHORT_BUFFER, rst)
        dfn_out[:] = le(data, p0 + def_start[k] + i * tb, tb)
    elif def_kind == DEF_RLE:
        tb = def_t // 8
        lb = np.maximum(def_ws, 1)
        run = _run_of(data, pos + def_start + 8 + d_vs, d_runs, lb, k, i)
        rst = np.where((rst == OK) & (run >= d_runs[k]), SHORT_RUNS, rst)
        dfn_out[:] = le(data, p0 + def_start[k] + 8 + run * tb, tb)
    s = p0 + v0[k]
    if vkind == FLAT:
        rst = np.where((rst == OK) & ((i + 1) * vparam > v0_size[k]), SHORT_BUFFER, rst)
        at = np.minimum((s + i * vparam)[:, None] + np.arange(vparam), max(len(data) - 1, 0))
        fixed_out[:] = data[at].reshape(-1) if len(data) else 0
    elif vkind == BITS:
        rst = np.where((rst == OK) & (i // 8 >= v0_size[k]), SHORT_BUFFER, rst)
        fixed_out[:] = (le(data, s + i // 8, 1) >> (i % 8).astype(np.uint64)) & np.uint64(1)
    elif vkind == INLINE:
        tb = vparam // 8
        wk = w[k]
        value = unpack_one(data, s + tb, vparam, np.maximum(wk, 1), rows[i % CHUNK], lanes[i % CHUNK])
        fixed_out[:] = _bytes_of(np.where(wk > 0, value, np.uint64(0)), tb)
    elif vkind == VARIABLE:
        ow = vparam
        a = le(data, s + i * ow, ow).astype(np.int64)
        b = le(data, s + (i + 1) * ow, ow).astype(np.int64)
        rst = np.where((rst == OK) & ((a < (n[k] + 1) * ow) | (b < a) | (b > v0_size[k])), BAD_OFFSETS, rst)
        var_start[:] = s + a
        var_len[:] = b - a
    else:  # RLE: the run holding item i is the first whose cumulative length exceeds i
        runs = np.where(cst == OK, v1_size // vparam2, 0)  # a rejected chunk's sizes are not trusted
        run = _run_of(data, pos + v1, runs, np.full(len(pos), vparam2, dtype=np.int64), k, i)
        rst = np.where((rst == OK) & (run >= runs[k]), SHORT_RUNS, rst)
        fixed_out[:] = _bytes_of(le(data, s + run * vparam, vparam), vparam)
    rst = np.where(bad_chunk & ~first, OK, rst)
    bad = np.flatnonzero(rst != OK)
    if len(bad):
        where[0] = bad[0]
        return int(rst[bad[0]])
    return OK
