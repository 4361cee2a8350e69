"""The FSST decoding loop as numba kernels (lance.encodings21.Fsst; see fsst.py for the format).

Decoding is a walk over the codes: a code below 255 emits its symbol (1..8 bytes), 255 escapes the next byte.  The
output position of each code depends on every code before it, which numpy can only express with a dozen full-size passes
(runs of 0xFF, cumulative lengths, eight scatters); this scalar loop touches each byte once (measured on 200k short
texts, 1.3 MB of codes: 5 ms against 120 ms for the former numpy formulation).

The kernel returns a status instead of raising: 0 = fine, 1 = a string ends inside an escape, 2 = a code beyond the
symbol table (3: ``decode_from``'s output is full). A symbol is copied as one unaligned 8-byte load and store
(jit_intrinsics.py: numba's eight byte stores cost three times as much)."""

from __future__ import annotations

import numpy as np

from lancelot.util.jit import lazy_intrinsic, njit

OK, ESCAPE_AT_END, BAD_CODE, NO_ROOM = 0, 1, 2, 3
MAX_SYMBOL = 8
load_u64 = lazy_intrinsic("lancelot.util.jit_intrinsics", "load_u64")
store_u64 = lazy_intrinsic("lancelot.util.jit_intrinsics", "store_u64")


@njit(cache=True, nogil=True)
def decoded_size(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray, lengths: np.ndarray, n_symbols: int) -> int:
    """The exact number of bytes ``decode_from`` writes, or -1 - status on bad codes (a first pass, so the output is
    allocated at its real size rather than 8 bytes per code)."""
    total = 0
    for s in range(len(starts)):
        i = starts[s]
        end = ends[s]
        while i < end:
            c = codes[i]
            if c == 255:
                if i + 1 >= end:
                    return -1 - ESCAPE_AT_END
                total += 1
                i += 2
            else:
                if c >= n_symbols:
                    return -1 - BAD_CODE
                total += lengths[c]
                i += 1
    return total


# decoded_size's loop written out again on purpose: the hot first pass of every decode, kept free of calls
@njit(cache=True, nogil=True)
def decoded_size_tables(
    codes: np.ndarray, offsets: np.ndarray, table_of: np.ndarray, lengths: np.ndarray, n_symbols: np.ndarray
) -> int:
    """``decoded_size`` with string ``s`` decoded by table ``table_of[s]``."""
    total = 0
    for s in range(len(offsets) - 1):
        t = table_of[s]
        i = offsets[s]
        end = offsets[s + 1]
        while i < end:
            c = codes[i]
            if c == 255:
                if i + 1 >= end:
                    return -1 - ESCAPE_AT_END
                total += 1
                i += 2
            else:
                if c >= n_symbols[t]:
                    return -1 - BAD_CODE
                total += lengths[t, c]
                i += 1
    return total


@njit(cache=True, nogil=True)
def decode_from(
    codes: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    symbols: np.ndarray,
    lengths: np.ndarray,
    n_symbols: int,
    out: np.ndarray,
    out_offsets: np.ndarray,
    first: int,
    pos: int,
) -> tuple[int, int, int]:
    """Decode strings ``first``, ``first + 1``... (``codes[starts[s]:ends[s]]``) into ``out`` from byte ``pos`` on,
    their ends into ``out_offsets[s + 1]``, until done or ``out`` is full.

    Returns (status, next string, next byte): status NO_ROOM when string ``next string`` does not fit (the caller grows
    ``out`` and calls again from there).  Every symbol is stored as 8 bytes (the position advances by its length), so
    ``out`` holds 8 bytes more than it is filled.  ``symbols`` is C-contiguous uint8 (n, 8)."""
    room = len(out) - MAX_SYMBOL
    p = pos
    for s in range(first, len(starts)):
        i = starts[s]
        end = ends[s]
        if p + MAX_SYMBOL * (end - i) > room:  # near the end of ``out``: does this string fit?
            need = 0
            j = i
            while j < end:
                c = codes[j]
                if c == 255:
                    need += 1
                    j += 2
                else:
                    need += lengths[c] if c < n_symbols else 0
                    j += 1
            if p + need > room:
                return NO_ROOM, s, p
        while i < end:
            c = codes[i]
            if c == 255:
                if i + 1 >= end:
                    return ESCAPE_AT_END, s, p
                out[p] = codes[i + 1]
                p += 1
                i += 2
            else:
                if c >= n_symbols:
                    return BAD_CODE, s, p
                store_u64(out, p, load_u64(symbols, c * MAX_SYMBOL))
                p += lengths[c]
                i += 1
        out_offsets[s + 1] = p
    return OK, len(starts), p


@njit(cache=True, nogil=True)
def decode_tables(
    codes: np.ndarray,
    offsets: np.ndarray,
    table_of: np.ndarray,
    symbols: np.ndarray,
    lengths: np.ndarray,
    n_symbols: np.ndarray,
    out: np.ndarray,
    out_offsets: np.ndarray,
) -> int:
    """``decode_from`` from string 0 into an ``out`` of the decoded size + 8, string ``s`` by table ``table_of[s]`` of
    ``symbols`` (t, 256, 8, C-contiguous) and ``lengths`` (t, 256)."""
    n_rows = symbols.shape[1]
    p = 0
    out_offsets[0] = 0
    for s in range(len(offsets) - 1):
        t = table_of[s]
        i = offsets[s]
        end = offsets[s + 1]
        while i < end:
            c = codes[i]
            if c == 255:
                if i + 1 >= end:
                    return ESCAPE_AT_END
                out[p] = codes[i + 1]
                p += 1
                i += 2
            else:
                if c >= n_symbols[t]:
                    return BAD_CODE
                store_u64(out, p, load_u64(symbols, (t * n_rows + c) * MAX_SYMBOL))
                p += lengths[t, c]
                i += 1
        out_offsets[s + 1] = p
    return OK
