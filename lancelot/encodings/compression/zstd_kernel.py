"""Zstd chunk buffers of a read inflated in one numba loop that calls libzstd (General/ZSTD).

(encoding.md, "Compression": pylance's zstd buffer is a u64 little-endian decompressed size and one
zstd frame; general.py.)  A take inflates one mini-block chunk of a few KiB per row and column, a
scan a thousand of them: a Python call per chunk costs about what zstd takes to inflate it.  Here
one kernel call per column walks all of a read's chunks and calls ``ZSTD_decompressDCtx`` (through
zstd_intrinsics) on each:

* ``inflate_frames``: chunk buffers one after another (chunked.py's scans);
* ``rebuild_chunks``: whole mini-block chunks, each rebuilt as if written without General
  compression (miniblock_general.py's takes: same bytes as its Python path).

libzstd is python-zstandard's own copy (its cffi module exports the zstd API), else the system's
``libzstd``; without either, and for anything the kernels do not vouch for (a bare frame of an older
file, an empty buffer, an implausible size, a frame that fails), the callers take their per-chunk
Python path, which reads the same bytes or raises the same error.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from functools import cache

import numpy as np
from numpy.typing import NDArray

from lancelot.encodings.arrays import empty
from lancelot.encodings.compression.buffers import MAX_DECODED_BYTES
from lancelot.encodings.compression.jit import NumpyUntilHot, lazy_intrinsic, njit
from lancelot.encodings.compression.segments import readonly

decompress_into = lazy_intrinsic("lancelot.encodings.compression.zstd_intrinsics", "decompress_into")
#: the zstd frame magic, little-endian: a buffer that starts with it may be a bare frame (general.py)
MAGIC = 0xFD2FB528
#: a zstd buffer's size prefix
PREFIX = 8
#: the largest expansion accepted (general._MAX_RATIO: zstd RLE blocks reach ~32768x)
RATIO = 65536
#: mini-block chunks' buffers are padded to this many bytes (miniblock_chunks.ALIGN)
ALIGN = 8


@cache
def zstd_library() -> ctypes.CDLL | None:
    """A loaded libzstd exporting ``ZSTD_decompressDCtx``, or None."""
    paths: list[str] = []
    try:
        from zstandard import _cffi  # type: ignore[attr-defined]

        paths.append(_cffi.__file__)
    except ImportError:
        pass
    found = ctypes.util.find_library("zstd")
    if found:
        paths.append(found)
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
            lib.ZSTD_decompressDCtx  # noqa: B018 (present?)
            lib.ZSTD_createDCtx.restype = ctypes.c_void_p
            lib.ZSTD_freeDCtx.argtypes = [ctypes.c_void_p]
            return lib
        except (OSError, AttributeError):
            continue
    return None


class _Context:
    """One thread's ZSTD_DCtx (a context is not thread-safe), freed with the thread."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        self.ptr: int = lib.ZSTD_createDCtx() or 0

    def __del__(self) -> None:
        if self.ptr:
            self.lib.ZSTD_freeDCtx(self.ptr)


_LOCAL = threading.local()


def _dctx() -> int:
    """This thread's decompression context (0 when libzstd could not make one)."""
    ctx = getattr(_LOCAL, "ctx", None)
    if ctx is None:
        lib = zstd_library()
        ctx = _LOCAL.ctx = _Context(lib) if lib is not None else None
    return ctx.ptr if ctx is not None else 0


@njit(cache=True, nogil=True, inline="always")
def _word(data: NDArray[np.uint8], at: int, width: int) -> int:
    """The little-endian unsigned integer of ``width`` bytes at ``at``."""
    v = 0
    for b in range(width):
        v |= int(data[at + b]) << (8 * b)
    return v


@njit(cache=True, nogil=True, inline="always")
def _plausible(data: NDArray[np.uint8], at: int, n: int, limit: int) -> int:
    """The decompressed size the zstd buffer ``data[at:at + n]`` announces, or -1 unless the kernels
    vouch for it (a prefix and a frame, no magic where the prefix is, 0 < size < ``limit``)."""
    if n <= PREFIX or _word(data, at, 4) == MAGIC:
        return -1
    size = _word(data, at, PREFIX)
    if size <= 0 or size >= limit or size > (n - PREFIX) * RATIO + 4096:
        return -1
    return size


@njit(cache=True, nogil=True)
def _frames(
    data: NDArray[np.uint8],
    starts: NDArray[np.int64],
    sizes: NDArray[np.int64],
    out_starts: NDArray[np.int64],
    out: NDArray[np.uint8],
    dctx: int,
) -> int:
    """Inflate buffer k (``data[starts[k]:starts[k] + sizes[k]]``) into ``out[out_starts[k]:out_starts[k + 1]]``;
    -1 when every frame fills its part exactly, else the bad buffer's index."""
    for k in range(len(starts)):
        want = out_starts[k + 1] - out_starts[k]
        got = decompress_into(dctx, out, out_starts[k], want, data, starts[k] + PREFIX, sizes[k] - PREFIX)
        if got != want:
            return k
    return -1


@njit(cache=True, nogil=True)
def _rebuild(
    data: NDArray[np.uint8],
    pos: NDArray[np.int64],
    size: NDArray[np.int64],
    has_def: int,
    word: int,
    nb: int,
    dctx: int,
) -> tuple[int, NDArray[np.uint8], NDArray[np.int64], NDArray[np.int64]]:
    """(bad chunk or -1, new data, new positions, new sizes): miniblock_general._inflate_few's chunk
    rebuild (header with the inflated size, definition levels, inflated first buffer, second buffer,
    each padded to ALIGN with zeros)."""
    n = len(pos)
    head = 2 + 2 * has_def + word * nb
    front = (head + ALIGN - 1) // ALIGN * ALIGN
    field = 2 + 2 * has_def
    limit = 1 << (8 * word)
    at_ = np.empty(n, np.int64)
    raw_ = np.empty(n, np.int64)
    new_pos = np.empty(n, np.int64)
    new_size = np.empty(n, np.int64)
    end = 0
    for k in range(n):
        p, s = pos[k], size[k]
        if p < 0 or s < head or p + s > len(data):
            return k, data[:0].copy(), new_pos, new_size
        ds = _word(data, p + 2, 2) if has_def else 0
        at = front + (ds + ALIGN - 1) // ALIGN * ALIGN
        v0 = _word(data, p + field, word)
        if at + v0 > s:
            return k, data[:0].copy(), new_pos, new_size
        new = 0
        if nb > 1:
            s1 = _word(data, p + field + word, word)
            if (at + v0 + ALIGN - 1) // ALIGN * ALIGN + s1 > s:
                return k, data[:0].copy(), new_pos, new_size
            new = (s1 + ALIGN - 1) // ALIGN * ALIGN
        raw = _plausible(data, p + at, v0, min(limit, MAX_DECODED_BYTES))
        if raw < 0:
            return k, data[:0].copy(), new_pos, new_size
        at_[k], raw_[k] = at, raw
        new += at + (raw + ALIGN - 1) // ALIGN * ALIGN
        new_pos[k], new_size[k] = end, new
        end += new
    out = np.zeros(end, np.uint8)
    for k in range(n):
        p, o, at, raw = pos[k], new_pos[k], at_[k], raw_[k]
        for b in range(head):
            out[o + b] = data[p + b]
        for b in range(word):
            out[o + field + b] = (raw >> (8 * b)) & 0xFF
        for b in range(front, at):
            out[o + b] = data[p + b]
        v0 = _word(data, p + field, word)
        got = decompress_into(dctx, out, o + at, raw, data, p + at + PREFIX, v0 - PREFIX)
        if got != raw:
            return k, data[:0].copy(), new_pos, new_size
        if nb > 1:
            s1 = _word(data, p + field + word, word)
            a1 = (at + v0 + ALIGN - 1) // ALIGN * ALIGN
            b1 = o + at + (raw + ALIGN - 1) // ALIGN * ALIGN
            out[b1 : b1 + s1] = data[p + a1 : p + a1 + s1]
    return -1, out, new_pos, new_size


def _warm() -> None:
    """Both kernels, on empty inputs of the real calls' types (jit.NumpyUntilHot)."""
    data, z = readonly(np.zeros(0, np.uint8)), np.zeros(0, np.int64)
    _frames(data, z, z, np.zeros(1, np.int64), np.zeros(0, np.uint8), _dctx())
    _rebuild(data, z, z, 1, 2, 2, _dctx())


#: reads whose zstd chunks are inflated one Python call each before the kernels are prepared
HOT_ZSTD = NumpyUntilHot(_frames, _rebuild, warm_work=16 << 20)


def _ready(work: int) -> int:
    """This thread's context when the kernels can run now, else 0 (the call counts towards preparing them)."""
    if zstd_library() is None:
        return 0
    if not HOT_ZSTD.ready():
        HOT_ZSTD.numpy_call(_warm, work)
        return 0
    return _dctx()


def inflate_frames(data: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The zstd buffers ``data[starts[k]:starts[k] + sizes[k]]`` (size prefix included) inflated and
    concatenated, with their sizes; None when the kernels cannot vouch for them or are not ready (the
    caller goes chunk by chunk)."""
    starts, sizes = np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(sizes, np.int64)
    if not len(sizes) or int(sizes.min()) <= PREFIX or int(starts.min()) < 0:
        return None
    if int((starts + sizes).max()) > len(data):
        return None
    head = np.ascontiguousarray(data[starts[:, None] + np.arange(PREFIX)]).view("<u8").reshape(-1)
    out_sizes = head.astype(np.int64)
    if ((head & 0xFFFFFFFF) == MAGIC).any():
        return None
    if (head == 0).any() or (head > (sizes - PREFIX) * RATIO + 4096).any() or int(out_sizes.sum()) > MAX_DECODED_BYTES:
        return None
    dctx = _ready(int(out_sizes.sum()))
    if not dctx:
        return None
    out_starts = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(out_sizes, out=out_starts[1:])
    out = empty(int(out_starts[-1]), np.uint8)
    if _frames(readonly(np.ascontiguousarray(data, np.uint8)), starts, sizes, out_starts, out, dctx) >= 0:
        return None
    return out, out_sizes


def rebuild_chunks(
    data: np.ndarray, pos: np.ndarray, size: np.ndarray, *, has_def: int, word: int, nb: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """miniblock_general.inflate_chunks for zstd in one kernel call: (new data, positions, sizes), or
    None when the kernels cannot vouch for a chunk or are not ready (the caller's Python path then
    reads the same bytes or raises the same error)."""
    if nb > 2 or word not in (2, 4):
        return None
    dctx = _ready(0)
    if not dctx:
        return None
    bad, out, new_pos, new_size = _rebuild(
        readonly(np.ascontiguousarray(data, np.uint8)),
        np.ascontiguousarray(pos, np.int64),
        np.ascontiguousarray(size, np.int64),
        has_def,
        word,
        nb,
        dctx,
    )
    return None if bad >= 0 else (out, new_pos, new_size)
