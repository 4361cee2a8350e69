"""Background threads that encode the pages of a 2.1/2.2 file and write them in order.

The writer's main thread shreds batches, gathers each column's rows and keeps
lancelot's zone maps; a page task then runs in two steps on a small pool:

* ``encode`` (numpy, pyarrow and numba kernels, which mostly release the GIL)
  runs on any of ``workers`` threads, several pages at once;
* ``commit`` (writing the page's buffers, recording its metadata) runs in
  submission order: each task waits for the commit of the task before it, so
  the file's bytes and metadata are the same whatever the thread timing.

Tasks start in submission order (the pool's queue is FIFO), so the oldest
unfinished task never waits: no deadlock.  At most ``max_pending`` pages wait
or run at once (the writer's memory stays bounded by pages); the first error of
a page is raised in the main thread by the next ``submit`` or by ``drain``, and
no page commits after a failed one.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


def default_workers() -> int:
    """Encode threads: one per core, at most 4 (``LANCELOT_WRITE_THREADS`` overrides)."""
    env = os.environ.get("LANCELOT_WRITE_THREADS")
    if env:
        return max(1, int(env))
    return max(1, min(4, os.cpu_count() or 1))


class PageWorker:
    """Encodes pages on ``workers`` threads and commits them one at a time, in submission order."""

    def __init__(self, workers: int | None = None, max_pending: int | None = None) -> None:
        self.workers = workers or default_workers()
        self.max_pending = max_pending or 4 * self.workers
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="lancelot-pages")
        self._futures: deque[tuple[Future, threading.Event]] = deque()
        self._last: threading.Event | None = None
        self._failed = False

    def submit(self, encode: Callable[[], Any], commit: Callable[[Any], None]) -> None:
        """Queue ``commit(encode())``; wait while too many pages are in flight (re-raising their errors)."""
        prev, done = self._last, threading.Event()
        self._last = done

        def run() -> None:
            try:
                result, error = None, None
                try:
                    result = encode()
                except BaseException as e:  # committed (raised) in order, after the pages before it
                    error = e
                if prev is not None:
                    prev.wait()
                if self._failed:
                    return
                if error is not None:
                    raise error
                commit(result)
            except BaseException:
                self._failed = True
                raise
            finally:
                done.set()

        self._futures.append((self._pool.submit(run), done))
        while len(self._futures) > self.max_pending:
            self._futures.popleft()[0].result()

    def drain(self) -> None:
        """Wait for every queued page (re-raising the first error)."""
        while self._futures:
            self._futures.popleft()[0].result()

    def close(self) -> None:
        """Stop: queued pages are dropped, running ones finish without committing; errors are not raised."""
        self._failed = True
        for f, done in self._futures:
            f.cancel()
            done.set()  # a task started after a cancelled one must not wait for it
        self._pool.shutdown(wait=True)
        self._futures.clear()
