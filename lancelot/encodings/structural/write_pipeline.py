"""A background thread that encodes and writes the pages of a 2.1/2.2 file.

The writer's main thread shreds batches, gathers each column's rows and keeps
lancelot's zone maps; encoding a page (numpy, pyarrow and numba kernels, which
release the GIL) and writing its buffers runs on one worker thread, in the
order pages were handed over, so the two overlap on a second core.  At most
``max_pending`` pages wait or run at once (the writer's memory stays bounded by
pages); the first error of a page is raised in the main thread by the next
``submit`` or by ``drain``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor


class PageWorker:
    """Runs page tasks one at a time on one thread, in submission order."""

    def __init__(self, max_pending: int = 2) -> None:
        self.max_pending = max_pending
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lancelot-pages")
        self._futures: deque[Future] = deque()

    def submit(self, task: Callable[..., None], *args) -> None:
        """Queue ``task(*args)``; wait while too many pages are in flight (re-raising their errors)."""
        self._futures.append(self._pool.submit(task, *args))
        while len(self._futures) > self.max_pending:
            self._futures.popleft().result()

    def drain(self) -> None:
        """Wait for every queued page (re-raising the first error)."""
        while self._futures:
            self._futures.popleft().result()

    def close(self) -> None:
        """Stop: queued pages are dropped, a running one finishes; errors are not raised."""
        for f in self._futures:
            f.cancel()
        self._pool.shutdown(wait=True)
        self._futures.clear()
