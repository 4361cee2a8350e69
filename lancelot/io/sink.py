"""Ordered background writes to a local file (the writer's side of lancelot/io/source.py).

``BackgroundWriter.write`` queues bytes and returns at once; one thread writes them to the
file in the order they were queued, so encoding the next page overlaps the disk write of
the last one (the kernel's page-cache copy and any writeback throttling are paid there,
not by the encoder).  At most ``max_bytes`` wait at a time (memory stays bounded); the
first write error is raised by the next ``write`` or by ``close``.  Queued data must not be
modified until written: the writer only queues freshly encoded buffers and immutable Arrow
buffers.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from typing import BinaryIO

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
#: the writer thread syncs the data written so far every this many bytes, so the closing fsync
#: (the file must be on disk before it is renamed into place) finds little left to do
SYNC_EVERY = 64 * 1024 * 1024


class BackgroundWriter:
    """Writes queued buffers to ``f`` on one thread, in order."""

    def __init__(self, f: BinaryIO, max_bytes: int = DEFAULT_MAX_BYTES, sync_every: int = SYNC_EVERY) -> None:
        self._f = f
        self._max = max_bytes
        self._sync_every = sync_every
        self._unsynced = 0
        self._queue: deque = deque()
        self._pending = 0  # bytes queued or being written
        self._cond = threading.Condition()
        self._error: BaseException | None = None
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="lancelot-file", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue:
                    return
                data = self._queue.popleft()
            try:
                if self._error is None:
                    self._f.write(data)
                    self._unsynced += len(data)
                    if self._unsynced >= self._sync_every:
                        self._f.flush()
                        os.fdatasync(self._f.fileno())
                        self._unsynced = 0
            except BaseException as e:  # raised in the caller's thread
                self._error = e
            with self._cond:
                self._pending -= len(data)
                self._cond.notify_all()

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def write(self, data) -> None:
        """Queue ``data`` (bytes or a byte memoryview); blocks while ``max_bytes`` are already waiting."""
        self._raise()
        n = len(data)
        with self._cond:
            while self._pending and self._pending + n > self._max and self._error is None:
                self._cond.wait()
            self._queue.append(data)
            self._pending += n
            self._cond.notify_all()
        self._raise()

    def flush(self) -> None:
        """Wait until everything queued is written (and raise a write error)."""
        with self._cond:
            while self._pending and self._error is None:
                self._cond.wait()
        self._raise()
        self._f.flush()

    def close(self) -> None:
        """Stop the thread after the queued writes (errors are not raised: call ``flush`` first)."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._thread.join()

    def abort(self) -> None:
        """Drop what is queued and stop the thread."""
        with self._cond:
            self._queue.clear()
            self._pending = 0
            self._closing = True
            self._cond.notify_all()
        self._thread.join()
