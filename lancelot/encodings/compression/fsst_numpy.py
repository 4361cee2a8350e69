"""FSST decoding of a few strings in numpy (fsst_kernel.py's loops without numba).

For the strings of a take, or of a fresh process's first scans, a dozen numpy passes cost less than importing numba and
loading (or compiling) the kernel.  The walk's only sequential rule, "255 escapes the next byte", is resolved per run of
0xFF bytes: inside a string, the first byte of such a run is always an escape (it follows a symbol, a literal or the
string start), the run alternates escape / literal, and the byte after a run of odd length is a literal.  Same statuses
as the kernels: OK, ESCAPE_AT_END, BAD_CODE."""

from __future__ import annotations

import numpy as np

from lancelot.encodings.compression.buffers import check_size
from lancelot.encodings.compression.segments import gather

OK, ESCAPE_AT_END, BAD_CODE = 0, 1, 2
#: larger inputs (a scan while the kernel is not loaded) are decoded in groups of strings of about this many
#: codes (temporaries of a few bytes per code and output byte stay in the caches)
BLOCK_CODES = 1 << 16
#: symbols (t, 256 or more, 8), their lengths (t, ...) and counts (t,) of t symbol tables
Tables = tuple[np.ndarray, np.ndarray, np.ndarray]


def decode_numpy_blocks(
    codes: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    symbols: np.ndarray,
    lengths: np.ndarray,
    n_symbols: np.ndarray,
    table_of: np.ndarray,
) -> tuple[int, np.ndarray, np.ndarray]:
    """The strings decoded in groups of whole strings of about ``BLOCK_CODES`` codes each (its temporaries are a few
    int64 per code): the same bytes, offsets and first error."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    table_of = np.asarray(table_of, dtype=np.int64)
    tables = (symbols, lengths, n_symbols)
    cum = np.cumsum(ends - starts)
    total = int(cum[-1]) if len(cum) else 0
    if total <= BLOCK_CODES:
        return _decode_group(codes, starts, ends, tables, table_of, 0)
    cuts = np.unique(np.searchsorted(cum, np.arange(BLOCK_CODES, total, BLOCK_CODES), side="right"))
    bounds = [0, *cuts[(cuts > 0) & (cuts < len(starts))].tolist(), len(starts)]
    outs, offs = [], [np.zeros(1, np.int64)]
    base = 0
    for a, b in zip(bounds[:-1], bounds[1:]):
        status, out, o = _decode_group(codes, starts[a:b], ends[a:b], tables, table_of[a:b], base)
        if status != OK:
            return status, np.zeros(0, np.uint8), np.zeros(0, np.int64)
        outs.append(out)
        offs.append(o[1:] + base)
        base += len(out)
    return OK, np.concatenate(outs), np.concatenate(offs)


def _decode_group(
    codes: np.ndarray, starts: np.ndarray, ends: np.ndarray, tables: Tables, table_of: np.ndarray, done: int
) -> tuple[int, np.ndarray, np.ndarray]:
    """(status, decoded bytes, offsets) of strings ``codes[starts[s]:ends[s]]``, string ``s`` by table ``table_of[s]``
    of ``tables``: symbols (t, 256 or more, 8), lengths (t, ...) and n_symbols (t,); ``done`` bytes already decoded
    before these strings count towards the output size limit.

    Every code becomes an entry of one flat table (each table's symbols, then the 256 literal bytes, then the empty
    entry of an escape); the output is one gather from that table."""
    symbols, lengths, n_symbols = tables
    lens = ends - starts
    n_str = len(starts)
    bounds = np.zeros(n_str + 1, dtype=np.int64)
    np.cumsum(lens, out=bounds[1:])
    total = int(bounds[-1])
    if total == 0:
        return OK, np.zeros(0, np.uint8), np.zeros(n_str + 1, np.int64)
    if n_str == 1 or bool(np.all(starts[1:] == ends[:-1])):  # the strings of a page lie back to back
        c = codes[int(starts[0]) : int(starts[0]) + total]
    else:
        c = gather(codes, starts, lens)
    n_tables, width = symbols.shape[0], symbols.shape[1]
    one_table = n_tables == 1 or not len(table_of) or bool(np.all(table_of == table_of[0]))
    t0 = int(table_of[0]) if len(table_of) else 0
    nonempty = lens > 0
    head = np.zeros(total + 1, dtype=bool)  # the first code of each string (and the end)
    head[bounds[:-1][nonempty]] = True
    head[total] = True
    # escapes: in a run of 0xFF bytes inside a string the 1st, 3rd, ... are escapes, the others literals
    ff = np.flatnonzero(c == 255)
    run_start = head[ff] | np.concatenate([[True], ff[1:] != ff[:-1] + 1])
    first_of_run = ff[run_start][np.cumsum(run_start) - 1]
    escape = ff[(ff - first_of_run) % 2 == 0]
    bad_escape = escape[head[escape + 1]]  # the last code of its string
    literal = escape[~head[escape + 1]] + 1
    if one_table:
        bad_code = np.flatnonzero(c >= int(np.asarray(n_symbols)[t0]))
        t = None
    else:
        t = np.repeat(table_of, lens)
        bad_code = np.flatnonzero(c >= np.asarray(n_symbols)[t])
    if len(bad_code) and len(ff):  # an escape, or the byte after it, is no symbol
        bad_code = np.setdiff1d(bad_code, np.concatenate([escape, literal]), assume_unique=True)
    if len(bad_escape) or len(bad_code):  # the walk's first error
        first_escape = bad_escape[0] if len(bad_escape) else total
        first_code = bad_code[0] if len(bad_code) else total
        return (ESCAPE_AT_END if first_escape < first_code else BAD_CODE), np.zeros(0, np.uint8), np.zeros(0, np.int64)
    # the flat table: symbol k of table i at (i * width + k) * 8, literal byte b at lit + b; escapes empty
    width = min(width, 256)  # (codes are bytes: the entries of codes 0-255, padded to 256 per table)
    table = np.zeros((n_tables, 256, 8), dtype=np.uint8)
    table[:, :width] = np.asarray(symbols)[:, :width]
    entry_len = np.zeros((n_tables, 256), dtype=np.int64)
    entry_len[:, :width] = np.asarray(lengths)[:, :width]
    lit = n_tables * 256 * 8
    flat = np.concatenate([table.reshape(-1), np.arange(256, dtype=np.uint8)])
    entry = c.astype(np.int64)
    entry += t0 * 256 if t is None else t * 256
    src = entry * 8
    out_len = entry_len.reshape(-1)[entry]
    if len(ff):
        src[literal] = lit + c[literal].astype(np.int64)
        out_len[literal] = 1
        out_len[escape] = 0
    out_at = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(out_len, out=out_at[1:])
    size = int(out_at[-1])
    check_size(size + done, "FSST output")
    return OK, flat[_byte_sources(src, out_at[:-1], out_len, size)], out_at[bounds]


def _byte_sources(src: np.ndarray, at: np.ndarray, length: np.ndarray, size: int) -> np.ndarray:
    """The flat table index of every output byte: entry ``k`` copies ``length[k]`` bytes from ``src[k]`` on to ``at[k]``
    on.  One cumulative sum of the steps between consecutive bytes (1 within an entry, the jump to the next entry's
    source at its first byte), not an ``np.repeat`` over the output."""
    if not bool(length.all()):  # escapes copy nothing (and share the position of the literal after them)
        keep = length > 0
        src, at, length = src[keep], at[keep], length[keep]
    idx_type = np.int32 if size + (int(src.max()) if len(src) else 0) < 2**31 else np.int64
    steps = np.ones(size, dtype=idx_type)
    if len(src):
        jumps = src.astype(idx_type)
        jumps[1:] -= (src[:-1] + length[:-1] - 1).astype(idx_type)
        steps[at] = jumps
    return np.cumsum(steps, dtype=idx_type, out=steps)
