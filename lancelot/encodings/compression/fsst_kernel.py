"""The FSST decoding loop as numba kernels (lance.encodings21.Fsst; see fsst.py for the format).

Decoding is a walk over the codes: a code below 255 emits its symbol (1..8
bytes), 255 escapes the next byte.  The output position of each code depends on
every code before it, which numpy can only express with a dozen full-size passes
(runs of 0xFF, cumulative lengths, eight scatters); this scalar loop touches
each byte once (measured on 200k short texts, 1.3 MB of codes: 5 ms against
120 ms for the former numpy formulation).

The kernel returns a status instead of raising: 0 = fine, 1 = a string ends
inside an escape, 2 = a code beyond the symbol table.
"""

from __future__ import annotations

import numpy as np

from lancelot.encodings.compression.jit import njit

OK, ESCAPE_AT_END, BAD_CODE = 0, 1, 2


@njit(cache=True, nogil=True)
def decoded_size(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray, lengths: np.ndarray, n_symbols: int) -> int:
    """The exact number of bytes ``decode`` writes, or -1 - status on bad codes (a first pass,
    so the output is allocated at its real size rather than 8 bytes per code)."""
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
def decode(
    codes: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    symbols: np.ndarray,
    lengths: np.ndarray,
    n_symbols: int,
    out: np.ndarray,
    out_offsets: np.ndarray,
) -> int:
    """Decode the strings ``codes[starts[s]:ends[s]]`` into ``out``, their bounds into ``out_offsets``.

    ``out`` must hold the decoded size (``decoded_size``) plus 8 (every symbol is written as
    8 bytes and the position advances by its length).  Returns a status; stops at the first error.
    """
    p = 0
    out_offsets[0] = 0
    for s in range(len(starts)):
        i = starts[s]
        end = ends[s]
        while i < end:
            c = codes[i]
            if c == 255:
                if i + 1 >= end:
                    return ESCAPE_AT_END
                out[p] = codes[i + 1]
                p += 1
                i += 2
            else:
                if c >= n_symbols:
                    return BAD_CODE
                out[p] = symbols[c, 0]
                out[p + 1] = symbols[c, 1]
                out[p + 2] = symbols[c, 2]
                out[p + 3] = symbols[c, 3]
                out[p + 4] = symbols[c, 4]
                out[p + 5] = symbols[c, 5]
                out[p + 6] = symbols[c, 6]
                out[p + 7] = symbols[c, 7]
                p += lengths[c]
                i += 1
        out_offsets[s + 1] = p
    return OK


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
    """``decode``, string ``s`` by table ``table_of[s]`` of ``symbols`` (t, 256, 8) and ``lengths`` (t, 256)."""
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
                for b in range(8):
                    out[p + b] = symbols[t, c, b]
                p += lengths[t, c]
                i += 1
        out_offsets[s + 1] = p
    return OK
