"""FSST decoding of a few strings in numpy (fsst_kernel.py's loops without numba).

For the strings of a take, or of a fresh process's first scans, a dozen numpy passes
cost less than importing numba and loading (or compiling) the kernel.  The walk's only
sequential rule, "255 escapes the next byte", is resolved per run of 0xFF bytes: inside
a string, the first byte of such a run is always an escape (it follows a symbol, a literal or the string start), the
run alternates escape / literal, and the byte after a run of odd length is a
literal.  Same statuses as the kernels: OK, ESCAPE_AT_END, BAD_CODE.
"""

from __future__ import annotations

import numpy as np

OK, ESCAPE_AT_END, BAD_CODE = 0, 1, 2
#: larger inputs (a scan while the kernel is not loaded) are decoded in groups of strings of about this many codes
BLOCK_CODES = 1 << 18


def decode_numpy_blocks(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray, symbols: np.ndarray,
                        lengths: np.ndarray, n_symbols: np.ndarray,
                        table_of: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """``decode_numpy`` over groups of whole strings of about ``BLOCK_CODES`` codes each (its temporaries
    are a few int64 per code): the same bytes, offsets and first error."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    table_of = np.asarray(table_of, dtype=np.int64)
    cum = np.cumsum(ends - starts)
    total = int(cum[-1]) if len(cum) else 0
    if total <= BLOCK_CODES:
        return decode_numpy(codes, starts, ends, symbols, lengths, n_symbols, table_of)
    cuts = np.unique(np.searchsorted(cum, np.arange(BLOCK_CODES, total, BLOCK_CODES), side="right"))
    bounds = [0, *cuts[(cuts > 0) & (cuts < len(starts))].tolist(), len(starts)]
    outs, offs = [], [np.zeros(1, np.int64)]
    base = 0
    for a, b in zip(bounds[:-1], bounds[1:]):
        status, out, o = decode_numpy(codes, starts[a:b], ends[a:b], symbols, lengths, n_symbols, table_of[a:b])
        if status != OK:
            return status, np.zeros(0, np.uint8), np.zeros(0, np.int64)
        outs.append(out)
        offs.append(o[1:] + base)
        base += len(out)
    return OK, np.concatenate(outs), np.concatenate(offs)


def decode_numpy(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray, symbols: np.ndarray, lengths: np.ndarray,
                 n_symbols: np.ndarray, table_of: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """(status, decoded bytes, offsets) of strings ``codes[starts[s]:ends[s]]``, string ``s`` by table
    ``table_of[s]`` of ``symbols`` (t, 256 or more, 8), ``lengths`` (t, ...) and ``n_symbols`` (t,)."""
    starts = np.asarray(starts, dtype=np.int64)
    lens = np.asarray(ends, dtype=np.int64) - starts
    n_str = len(starts)
    bounds = np.zeros(n_str + 1, dtype=np.int64)
    np.cumsum(lens, out=bounds[1:])
    total = int(bounds[-1])
    if total == 0:
        return OK, np.zeros(0, np.uint8), np.zeros(n_str + 1, np.int64)
    owner = np.repeat(np.arange(n_str), lens)
    at = np.arange(total, dtype=np.int64)
    c = codes[starts[owner] + at - bounds[owner]].astype(np.int64)
    head = np.zeros(total, dtype=bool)  # the first code of each string
    head[bounds[:-1][lens > 0]] = True
    ff = c == 255
    run_start = ff & (head | ~np.concatenate([[False], ff[:-1]]))
    first_of_run = np.maximum.accumulate(np.where(run_start, at, 0))
    escape = ff & ((at - first_of_run) % 2 == 0)
    literal = np.zeros(total, dtype=bool)
    literal[1:] = escape[:-1] & ~head[1:]
    last = bounds[1:][lens > 0] - 1
    symbol = ~escape & ~literal
    t = np.asarray(table_of, dtype=np.int64)[owner]
    bad_escape = last[escape[last]]
    bad_code = np.flatnonzero(symbol & (c >= np.asarray(n_symbols)[t]))
    if len(bad_escape) or len(bad_code):  # the walk's first error
        first_escape = bad_escape[0] if len(bad_escape) else total
        first_code = bad_code[0] if len(bad_code) else total
        return (ESCAPE_AT_END if first_escape < first_code else BAD_CODE), np.zeros(0, np.uint8), \
            np.zeros(0, np.int64)
    cs = np.where(symbol, c, 0)
    out_len = np.where(literal, 1, np.where(symbol, lengths[t, cs].astype(np.int64), 0))
    out_at = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(out_len, out=out_at[1:])
    size = int(out_at[-1])
    src = np.repeat(at, out_len)
    byte = np.arange(size, dtype=np.int64) - out_at[src]
    out = np.where(literal[src], c[src], symbols[t[src], cs[src], np.minimum(byte, 7)]).astype(np.uint8)
    return OK, out, out_at[bounds]
