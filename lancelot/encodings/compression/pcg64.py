"""``numpy.random.default_rng(0).integers(0, n)``, draw by draw, without importing numpy.random.

FSST training samples its strings with that generator (write_fsst.py ``_sample``); importing ``numpy.random`` costs
30-50 ms in a fresh process, more than the draws a sample needs (about a thousand: ~0.5 ms here).  The same numbers as
numpy's, for ``n`` up to 2**32:

* the bit generator is PCG64 (a 128-bit LCG, XSL-RR output) in the state ``PCG64(0)`` seeds it with (through
  SeedSequence(0): a constant, ``SEED0``);
* 32-bit draws take the low then the high half of each 64-bit output;
* a draw in [0, n) is Lemire's multiply-and-reject on a 32-bit draw, as numpy's ``random_bounded_uint64_fill`` does for
  ranges below 2**32."""

from __future__ import annotations

from collections.abc import Iterator

MULTIPLIER = (2549297995355413924 << 64) + 4865540595714422341
#: (state, increment) of ``numpy.random.PCG64(0)``
SEED0 = (35399562948360463058890781895381311971, 87136372517582989555478159403783844777)
MAX_N = 1 << 32
_M128 = (1 << 128) - 1
_M64 = (1 << 64) - 1
_M32 = (1 << 32) - 1


def _uint32s() -> Iterator[int]:
    """The 32-bit draws of PCG64(0): each 64-bit output's low half, then its high half."""
    state, inc = SEED0
    while True:
        state = (state * MULTIPLIER + inc) & _M128
        x = ((state >> 64) ^ state) & _M64
        r = state >> 122
        out = ((x >> r) | (x << ((-r) & 63))) & _M64
        yield out & _M32
        yield out >> 32


def integers(n: int) -> Iterator[int]:
    """``default_rng(0).integers(0, n, size=k)``'s values, one at a time (1 <= n <= 2**32)."""
    if not 1 <= n <= MAX_N:
        raise ValueError(f"n must be in [1, 2**32], got {n}")
    if n == 1:
        while True:
            yield 0
    bits = _uint32s()
    threshold = (_M32 - (n - 1)) % n
    for u in bits:
        m = u * n
        if (m & _M32) < n:
            while (m & _M32) < threshold:
                m = next(bits) * n
        yield m >> 32
