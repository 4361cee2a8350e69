"""Handing the C allocator's free pages back to the OS during a long write (glibc's ``malloc_trim``).

Numpy's temporaries come from glibc's malloc: once a large one is freed, glibc raises its mmap and
trim thresholds (up to 32 and 64 MiB), so later temporaries of a few MiB land in its per-thread
arenas, whose free space it keeps; small long-lived objects between them keep it from trimming the
top.  Over a 4 GiB streaming write the arenas held 100-125 MiB free (mallinfo2) beside ~50 MiB in
use.  ``malloc_trim(0)`` releases every free page of every arena (about 1 ms a call there); the
writer's file thread calls it at each periodic sync (io/sink.py).  A no-op where the C library has
no ``malloc_trim`` (not Linux, musl).
"""

from __future__ import annotations

import ctypes
import functools
import sys
from typing import Any


@functools.cache
def _malloc_trim() -> Any:
    """The C library's ``malloc_trim``, or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None).malloc_trim  # the process's C library
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


def release_free_memory() -> bool:
    """Return the C heap's free pages to the OS; False where that is not available."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
