"""Zstd frames for the compact writer: frames with raw literals, and what inflating a frame costs.

(encoding.md, "Compression": a General/ZSTD buffer is a u64 size and one standard zstd frame, which any zstd decoder
reads; general.py.)  The compact profile (write_profile.py) prices each choice by the time a take spends inflating a
chunk, and libzstd's time depends less on a frame's size than on what is in it (RFC 8878, "Compressed Blocks"):

* a block's literals, when Huffman-coded, cost a table to build (~1.1 us) and ~0.5 us per KiB;
* each sequence (a match to copy) costs ~7 ns;
* a frame costs ~0.4 us, and ~0.4 us more when it holds a compressed block at all.

``inflate_us`` reads those counts from a frame's block and section headers (the model fitted to libzstd 1.5.7 inflating
the chunks of TPC-H's compact columns, 2, 4, 8 and 16 KiB, levels 9 and 15, with and without Huffman literals: median
error 4%, 90th percentile 14%; the old per-KiB model's median error was 66%).

``compress(..., raw_literals=True)`` asks libzstd (``ZSTD_c_literalCompressionMode``, an experimental parameter of zstd
>= 1.4.5) to leave the literals uncompressed: a chunk of FSST codes or short strings then inflates 1.5-2.5x sooner for
2-25% more bytes (TPC-H supplier), a choice the compact profile weighs like any other.  libzstd is the one
zstd_kernel.py reads with; without it the option is not offered."""

from __future__ import annotations

import ctypes
import threading
from functools import cache

from lancelot.encodings.compression.zstd_kernel import zstd_library

#: ZSTD_c_compressionLevel and ZSTD_c_literalCompressionMode (ZSTD_c_experimentalParam5), and the
#: latter's ZSTD_ps_disable (zstd.h)
_LEVEL, _LITERAL_MODE, _DISABLE = 100, 1002, 2
#: ZSTD_reset_session_and_parameters
_RESET_ALL = 3
#: the model (microseconds): per frame, per frame holding a compressed block, per sequence, per
#: Huffman-coded KiB of literals, per block whose literals are Huffman-coded (at least HUFFMAN_LEAST
#: bytes: shorter sections cost no table worth counting), per KiB inflated
FRAME_US, BLOCK_US, SEQUENCE_US, HUFFMAN_KIB_US, TABLE_US, KIB_US = 0.44, 0.43, 0.007, 0.51, 1.15, 0.05
HUFFMAN_LEAST = 64
_MAGIC = b"\x28\xb5\x2f\xfd"
_LOCAL = threading.local()


@cache
def _library() -> ctypes.CDLL | None:
    lib = zstd_library()
    if lib is None:
        return None
    try:
        lib.ZSTD_createCCtx.restype = ctypes.c_void_p
        lib.ZSTD_CCtx_reset.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.ZSTD_CCtx_reset.restype = ctypes.c_size_t
        lib.ZSTD_CCtx_setParameter.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        lib.ZSTD_CCtx_setParameter.restype = ctypes.c_size_t
        lib.ZSTD_compress2.argtypes = [
            ctypes.c_void_p,
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.c_char_p,
            ctypes.c_size_t,
        ]
        lib.ZSTD_compress2.restype = ctypes.c_size_t
        lib.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
        lib.ZSTD_compressBound.restype = ctypes.c_size_t
        lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
        lib.ZSTD_isError.restype = ctypes.c_uint
        lib.ZSTD_freeCCtx.argtypes = [ctypes.c_void_p]
    except AttributeError:
        return None
    return lib


class _Context:
    """This thread's ZSTD_CCtx, freed with the thread."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib, self.ptr = lib, lib.ZSTD_createCCtx()

    def __del__(self) -> None:
        if self.ptr:
            self.lib.ZSTD_freeCCtx(self.ptr)


@cache
def raw_literals_available() -> bool:
    """Whether ``compress(..., raw_literals=True)`` can be served (libzstd found, the parameter known)."""
    lib = _library()
    if lib is None:
        return False
    try:
        compress(b"probe probe probe", 3, raw_literals=True)
    except RuntimeError:
        return False
    return True


def compress(data: bytes, level: int, raw_literals: bool) -> bytes:
    """One zstd frame of ``data`` at ``level``, its literals left uncompressed when ``raw_literals``."""
    lib = _library()
    if lib is None:
        raise RuntimeError("libzstd not found")
    ctx = getattr(_LOCAL, "ctx", None)
    if ctx is None or not ctx.ptr:
        ctx = _LOCAL.ctx = _Context(lib)
    for code in (
        lib.ZSTD_CCtx_reset(ctx.ptr, _RESET_ALL),
        lib.ZSTD_CCtx_setParameter(ctx.ptr, _LEVEL, level),
        lib.ZSTD_CCtx_setParameter(ctx.ptr, _LITERAL_MODE, _DISABLE) if raw_literals else 0,
    ):
        if lib.ZSTD_isError(code):
            raise RuntimeError("libzstd refused a compression parameter")
    out = ctypes.create_string_buffer(lib.ZSTD_compressBound(len(data)))
    n = lib.ZSTD_compress2(ctx.ptr, out, len(out), data, len(data))
    if lib.ZSTD_isError(n):
        raise RuntimeError("libzstd failed to compress")
    return out.raw[:n]


def inflate_us(frame: bytes, size: int) -> float:
    """The modelled microseconds libzstd takes to inflate ``frame`` (one the writer just made) to ``size`` bytes. RFC
    8878: frame header, then blocks (3-byte headers); a compressed block opens with its literals section header, then
    the literals, then the sequences section header, whose first bytes count the sequences."""
    b = frame
    if b[:4] != _MAGIC:
        raise ValueError("not a zstd frame")
    d = b[4]
    single, dict_id, fcs = (d >> 5) & 1, d & 3, d >> 6
    p = 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_id] + (single, 2, 4, 8)[fcs]
    us, compressed = FRAME_US, False
    while True:
        header = int.from_bytes(b[p : p + 3], "little")
        kind, size = (header >> 1) & 3, header >> 3
        p += 3
        if kind == 2:  # compressed: literals, then sequences
            compressed = True
            q, out_lit, huffman = _literals(b, p)
            us += _sequences(b, q) * SEQUENCE_US
            if huffman:
                us += out_lit / 1024 * HUFFMAN_KIB_US + (TABLE_US if out_lit >= HUFFMAN_LEAST else 0.0)
            p += size
        else:  # raw (size bytes) or RLE (one byte regenerated ``size`` times)
            p += size if kind == 0 else 1
        if header & 1:
            break
    return us + (BLOCK_US if compressed else 0.0) + size / 1024 * KIB_US


def _literals(b: bytes, p: int) -> tuple[int, int, bool]:
    """(where the sequences section starts, literal bytes regenerated, whether Huffman-coded) of the literals section at
    ``p`` (RFC 8878, "Literals_Section_Header")."""
    kind, form = b[p] & 3, (b[p] >> 2) & 3
    if kind < 2:  # raw or RLE
        if form in (0, 2):
            n, head = b[p] >> 3, 1
        elif form == 1:
            n, head = (b[p] >> 4) + (b[p + 1] << 4), 2
        else:
            n, head = (b[p] >> 4) + (b[p + 1] << 4) + (b[p + 2] << 12), 3
        return p + head + (n if kind == 0 else 1), n, False
    v = int.from_bytes(b[p : p + 5], "little")
    bits, head = {0: (10, 3), 1: (10, 3), 2: (14, 4), 3: (18, 5)}[form]
    mask = (1 << bits) - 1
    n, packed = (v >> 4) & mask, (v >> (4 + bits)) & mask
    return p + head + packed, n, True


def _sequences(b: bytes, q: int) -> int:
    """The count in the sequences section header at ``q`` (RFC 8878, "Sequences_Section_Header")."""
    first = b[q]
    if first < 128:
        return first
    if first < 255:
        return ((first - 128) << 8) + b[q + 1]
    return b[q + 1] + (b[q + 2] << 8) + 0x7F00
