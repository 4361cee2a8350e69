"""Zstd chunk buffers of a read inflated in one numba loop that calls libzstd (General/ZSTD).

(encoding.md, "Compression": pylance's zstd buffer is a u64 little-endian decompressed size and one zstd frame;
general.py.)  A take inflates one mini-block chunk of a few KiB per row and column, a scan a thousand of them: a Python
call per chunk costs about what zstd takes to inflate it.  Here one kernel call per column walks all of a read's chunks
and calls ``ZSTD_decompressDCtx`` (through zstd_intrinsics) on each:

* ``inflate_frames``: chunk buffers one after another (chunked.py's scans);
* and, through ``decompress_into``, miniblock_general_kernel.py's rebuild of the mini-block chunks of a take (lz4 or
  zstd).

libzstd is python-zstandard's own copy (its cffi module exports the zstd API), else the system's ``libzstd``; without
either, and for anything the kernels do not vouch for (a bare frame of an older file, an empty buffer, an implausible
size, a frame that fails), the callers take their per-chunk Python path, which reads the same bytes or raises the same
error."""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from collections.abc import Callable
from functools import cache

import numpy as np
from numpy.typing import NDArray

from lancelot.encodings.compression.segments import readonly
from lancelot.util.arrays import empty
from lancelot.util.jit import NumpyUntilHot, lazy_intrinsic, njit

decompress_into = lazy_intrinsic("lancelot.encodings.compression.zstd_intrinsics", "decompress_into")
#: the zstd frame magic, little-endian: a buffer that starts with it may be a bare frame (general.py)
MAGIC = 0xFD2FB528
#: a zstd buffer's size prefix
PREFIX = 8
#: the largest expansion accepted (general._MAX_RATIO: zstd RLE blocks reach ~32768x)
RATIO = 65536
#: a call's chunks announcing more than this many bytes in all go chunk by chunk instead (the per-chunk path
#: holds one chunk's output at a time: damaged size prefixes must not make a kernel allocate their sum)
MAX_CALL_BYTES = 256 << 20


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


def dctx() -> int:
    """This thread's decompression context (0 when libzstd could not make one)."""
    ctx = getattr(_LOCAL, "ctx", None)
    if ctx is None:
        lib = zstd_library()
        ctx = _LOCAL.ctx = _Context(lib) if lib is not None else None
    return ctx.ptr if ctx is not None else 0


@njit(cache=True, nogil=True)
def _frames(
    data: NDArray[np.uint8],
    starts: NDArray[np.int64],
    sizes: NDArray[np.int64],
    out_starts: NDArray[np.int64],
    out: NDArray[np.uint8],
    ctx: int,
) -> int:
    """Inflate buffer k (``data[starts[k]:starts[k] + sizes[k]]``) into ``out[out_starts[k]:out_starts[k + 1]]``; -1
    when every frame fills its part exactly, else the bad buffer's index."""
    for k in range(len(starts)):
        want = out_starts[k + 1] - out_starts[k]
        got = decompress_into(ctx, out, out_starts[k], want, data, starts[k] + PREFIX, sizes[k] - PREFIX)
        if got != want:
            return k
    return -1


def _warm() -> None:
    """The kernel on empty inputs of the real calls' types (jit.NumpyUntilHot), when libzstd is there."""
    if zstd_library() is None:
        return
    z = np.zeros(0, np.int64)
    _frames(readonly(np.zeros(0, np.uint8)), z, z, np.zeros(1, np.int64), np.zeros(0, np.uint8), dctx())


#: scans whose zstd chunks are inflated one Python call each before the kernel is prepared
HOT_ZSTD = NumpyUntilHot(_frames, warm_work=16 << 20)


def ready(hot: NumpyUntilHot, warm: Callable[[], object], work: int) -> int:
    """This thread's context when ``hot``'s kernels can run now, else 0 (the call counts towards preparing them with
    ``warm``, which prepares nothing without libzstd: looking for it costs ~2.5 ms, which a fresh process's first takes
    do not pay)."""
    if not hot.ready():
        hot.numpy_call(warm, work)
        return 0
    return dctx()


def inflate_frames(
    data: np.ndarray, starts: np.ndarray, sizes: np.ndarray, out_sizes: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """The zstd buffers ``data[starts[k]:starts[k] + sizes[k]]`` (size prefix included) inflated and concatenated, with
    their sizes; None when the kernels cannot vouch for them or are not ready (the caller goes chunk by chunk).
    ``out_sizes``: the size prefixes, when the caller has read them and checked them as this does
    (general._decompress_zstd_values)."""
    starts, sizes = np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(sizes, np.int64)
    if not len(sizes) or int(sizes.min()) <= PREFIX or int(starts.min()) < 0:
        return None
    if int((starts + sizes).max()) > len(data):
        return None
    if out_sizes is None:
        head = np.ascontiguousarray(data[starts[:, None] + np.arange(PREFIX)]).view("<u8").reshape(-1)
        if ((head & 0xFFFFFFFF) == MAGIC).any() or (head > (sizes - PREFIX) * RATIO + 4096).any():
            return None
        out_sizes = head.astype(np.int64)
    if not out_sizes.all() or int(out_sizes.sum()) > MAX_CALL_BYTES:
        return None
    ctx = ready(HOT_ZSTD, _warm, int(out_sizes.sum()))
    if not ctx:
        return None
    out_starts = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(out_sizes, out=out_starts[1:])
    out = empty(int(out_starts[-1]), np.uint8)
    if _frames(readonly(np.ascontiguousarray(data, np.uint8)), starts, sizes, out_starts, out, ctx) >= 0:
        return None
    return out, out_sizes
