"""A local fsspec filesystem that adds a fixed latency to every request, and counts them.

``latency:///abs/path`` reads the local file ``/abs/path``; every request (``cat_file``,
``info``/``size``, ``isdir``, ``open``) sleeps ``LatencyFileSystem.latency`` seconds (20 ms by
default), like a round trip to an object store.  ``stats`` counts the requests and the
*round trips*: periods during which at least one request is in flight (requests issued
concurrently share one), which is what a remote reader's latency is made of.
"""

from __future__ import annotations

import threading
import time

import fsspec
from fsspec.implementations.local import LocalFileSystem


class LatencyStats:
    """Requests and round trips (busy periods) seen by the filesystem."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.requests = 0
            self.round_trips = 0
            self.bytes = 0
            self._in_flight = 0

    def begin(self) -> None:
        with self._lock:
            self.requests += 1
            if self._in_flight == 0:
                self.round_trips += 1
            self._in_flight += 1

    def end(self, nbytes: int = 0) -> None:
        with self._lock:
            self._in_flight -= 1
            self.bytes += nbytes


class LatencyFileSystem(LocalFileSystem):
    """Local files behind a per-request delay (see the module docstring)."""

    protocol = "latency"
    root_marker = "/"
    latency = 0.020
    stats = LatencyStats()
    cachable = False

    def _request(self, fn, *args, **kwargs):
        self.stats.begin()
        nbytes = 0
        try:
            time.sleep(self.latency)
            out = fn(*args, **kwargs)
            nbytes = len(out) if isinstance(out, bytes | bytearray) else 0
            return out
        finally:
            self.stats.end(nbytes)

    @classmethod
    def _strip_protocol(cls, path):
        if isinstance(path, str) and path.startswith("latency://"):
            path = path[len("latency://") :]
        return LocalFileSystem._strip_protocol(path)

    def cat_file(self, path, start=None, end=None, **kwargs):
        return self._request(_read_local, self._strip_protocol(path), start, end)

    def info(self, path, **kwargs):
        return self._request(super().info, path, **kwargs)

    def isdir(self, path):
        try:
            return self.info(path)["type"] == "directory"
        except OSError:
            return False

    def _open(self, path, mode="rb", **kwargs):
        return self._request(super()._open, path, mode=mode, **kwargs)


def _read_local(path: str, start: int | None, end: int | None) -> bytes:
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        start = 0 if start is None else (start if start >= 0 else max(size + start, 0))
        end = size if end is None else (end if end >= 0 else max(size + end, 0))
        f.seek(start)
        return f.read(max(end - start, 0))


def register(latency: float = 0.020) -> LatencyStats:
    """Register the ``latency://`` protocol with the given delay; returns the shared counters."""
    LatencyFileSystem.latency = latency
    fsspec.register_implementation("latency", LatencyFileSystem, clobber=True)
    return LatencyFileSystem.stats
