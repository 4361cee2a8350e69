"""Background threads that encode the pages of a 2.1/2.2 file and write them in order.

The writer's main thread shreds batches, gathers each column's rows and keeps
lancelot's zone maps; a page task then runs in two steps on a small pool:

* ``encode`` (numpy, pyarrow and numba kernels, which mostly release the GIL)
  runs on any of ``workers`` threads, several pages at once;
* ``commit`` (writing the page's buffers, recording its metadata) runs in
  submission order, one at a time, so the file's bytes and metadata are the
  same whatever the thread timing.

No thread ever waits for another page's commit: a task that finishes encoding
out of order leaves its result behind and its thread takes the next page; the
thread that commits a page goes on to commit every later page already encoded.
(A worker blocked until the page before its own committed left a core idle
behind one long page, e.g. the FSST page of a long text column.)  At most
``max_pending`` pages wait for or run their encode, and at most twice that many
are not yet committed (encoded pages may wait behind a long one, while the caller
queues the next); the pages not yet committed hold at most ``max_bytes`` of input
(``submit``'s ``nbytes``; a single page may hold more): each page of a vector
column is a 32 MiB batch, and pages piling up behind a slow one were the writer's
peak memory.  Encodes start largest first among the pages queued (by ``nbytes``: a file's
last pages are all queued at once by ``close``, and its longest page, e.g. the FSST page
of a long text column, should not start last and leave a core idle at the end); the
commit order, and so the file's bytes, stay the submission order.  The first error in page order is raised in the main
thread by the next ``submit`` or by ``drain``, and no page commits after a
failed one.
"""

from __future__ import annotations

import heapq
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

#: input bytes of the pages submitted and not yet committed (``PageWorker.max_bytes``): four 8 MiB pages,
#: or one 32 MiB page and the next one waiting to be queued
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
#: a page of fewer input bytes, submitted while no page is in flight, is encoded and committed on the
#: caller's thread: handing a small file's few tiny pages to the pool cost more (thread wake-ups, the
#: GIL passed back and forth) than encoding them
INLINE_BYTES = 32 * 1024


_SHARED: dict[int, ThreadPoolExecutor] = {}
_SHARED_LOCK = threading.Lock()


def shared_pool(workers: int) -> ThreadPoolExecutor:
    """The process-wide pool of ``workers`` encode threads, kept for the next file: a thread's start
    waits until the new thread runs, which on a loaded machine cost more than a small file's pages.
    Its jobs never wait for other jobs (see the module docstring), so files may share it."""
    with _SHARED_LOCK:
        pool = _SHARED.get(workers)
        if pool is None:
            pool = _SHARED[workers] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lancelot-pages")
        return pool


#: (os.cpu_count reads /sys on every call: once per file written)
_CPUS = os.cpu_count() or 1


def default_workers() -> int:
    """Encode threads: one per core, at most 4 (``LANCELOT_WRITE_THREADS`` overrides)."""
    env = os.environ.get("LANCELOT_WRITE_THREADS")
    if env:
        return max(1, int(env))
    return max(1, min(4, _CPUS))


class PageWorker:
    """Encodes pages on ``workers`` threads and commits them one at a time, in submission order
    (``workers`` None: the process's shared pool of ``default_workers()`` threads)."""

    def __init__(
        self,
        workers: int | None = None,
        max_pending: int | None = None,
        max_bytes: int | None = None,
        inline_bytes: int = INLINE_BYTES,
    ) -> None:
        self.workers = workers or default_workers()
        self.inline_bytes = inline_bytes
        self.max_pending = max_pending or 4 * self.workers
        self.max_bytes = max_bytes or DEFAULT_MAX_BYTES
        #: the shared pool for the default size; a pool of its own for a size asked for (tests)
        self._own = workers is not None
        self._pool = (
            ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="lancelot-pages")
            if self._own
            else shared_pool(self.workers)
        )
        self._jobs: set[Future[Any]] = set()  # this writer's jobs on the shared pool, not yet done
        self._cond = threading.Condition()
        #: encoded pages waiting for the pages before them: seq -> (commit, result, error, nbytes)
        self._ready: dict[int, tuple[Callable[[Any], None], Any, BaseException | None, int]] = {}
        self._submitted = 0
        self._encoded = 0  # pages encoded (committed or waiting for the pages before them)
        self._committed = 0  # pages committed (or dropped after a failure), a prefix of the submitted ones
        self._committing = False
        self._held = 0  # ``nbytes`` of the pages submitted and not yet committed (or dropped)
        self.peak_held = 0  # the most ``_held`` reached (tests)
        #: pages waiting for a thread: (-nbytes, seq, task); each pool job takes the largest
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._failed = False
        self._error: BaseException | None = None

    def submit(self, encode: Callable[[], Any], commit: Callable[[Any], None], nbytes: int = 0) -> None:
        """Queue ``commit(encode())`` for a page of ``nbytes`` input bytes; wait while too many pages or
        bytes are in flight (re-raising their errors).  Of the queued pages, the largest is encoded
        first (ties: in submission order).  A page under ``inline_bytes`` submitted while every page
        before it is committed runs here, on the caller's thread (its error is raised at once)."""
        with self._cond:
            self._raise()
            inline = nbytes < self.inline_bytes and self._committed == self._submitted and not self._failed
            if inline:
                self._submitted += 1
                self._encoded += 1
        if inline:
            self._run_inline(encode, commit)
            return
        with self._cond:
            seq = self._submitted
            self._submitted += 1
            self._held += nbytes
            self.peak_held = max(self.peak_held, self._held)

        def run() -> None:
            if self._failed:  # closed or failed: the page is dropped
                return
            result, error = None, None
            try:
                result = encode()
            except BaseException as e:  # raised in order, after the pages before it
                error = e
            with self._cond:
                self._ready[seq] = (commit, result, error, nbytes)
                self._encoded += 1
                self._cond.notify_all()
            del result  # held by _ready until committed (this thread may commit many later pages)
            self._commit_ready()

        with self._cond:
            heapq.heappush(self._queue, (-nbytes, seq, run))
        self._track(self._pool.submit(self._run_next))
        with self._cond:
            while not self._failed and (
                self._submitted - self._encoded > self.max_pending
                or self._submitted - self._committed > 2 * self.max_pending
                or (self._held > self.max_bytes and self._submitted - self._committed > 1)
            ):
                self._cond.wait()
            self._raise()

    def _run_inline(self, encode: Callable[[], Any], commit: Callable[[Any], None]) -> None:
        """(``submit``'s small page, nothing in flight.) Encode and commit it on this thread."""
        try:
            commit(encode())
        except BaseException as e:
            with self._cond:
                self._failed, self._error = True, e
            raise
        finally:
            with self._cond:
                self._committed += 1
                self._cond.notify_all()

    def run(self, job: Callable[[], Any]) -> Future[Any]:
        """Run ``job`` on the pool, outside the page order (e.g. zone statistics); its Future."""
        return self._track(self._pool.submit(job))

    def _track(self, fut: Future[Any]) -> Future[Any]:
        with self._cond:
            self._jobs.add(fut)
        fut.add_done_callback(self._untrack)
        return fut

    def _untrack(self, fut: Future[Any]) -> None:
        with self._cond:
            self._jobs.discard(fut)

    def _run_next(self) -> None:
        """(A pool job: one per queued page.) Encode and commit the largest queued page."""
        with self._cond:
            if not self._queue:  # closed: the queue was dropped
                return
            run = heapq.heappop(self._queue)[2]
        run()

    def _commit_ready(self) -> None:
        """Commit the next pages in order while they are encoded (one thread commits at a time)."""
        while True:
            with self._cond:
                if self._committing or self._committed not in self._ready:
                    return
                self._committing = True
                seq = self._committed
                commit, result, error, nbytes = self._ready.pop(seq)
            try:
                if not self._failed:
                    if error is not None:
                        raise error
                    commit(result)
            except BaseException as e:
                with self._cond:
                    if not self._failed:
                        self._failed, self._error = True, e
            finally:
                with self._cond:
                    self._held -= nbytes
                    self._committed += 1
                    self._committing = False
                    self._cond.notify_all()

    def _raise(self) -> None:
        """(With the lock held.) Re-raise the first failure (every time: a failed file stays failed)."""
        if self._error is not None:
            raise self._error

    def drain(self) -> None:
        """Wait for every queued page (re-raising the first error)."""
        with self._cond:
            while self._committed < self._submitted and not self._failed:
                self._cond.wait()
            self._raise()

    def close(self) -> None:
        """Stop: queued pages are dropped, running ones finish without committing; errors are not raised."""
        with self._cond:
            self._failed = True
            self._cond.notify_all()
            jobs = list(self._jobs)
        for fut in jobs:
            fut.cancel()
        if jobs:  # (a small file's pages were all encoded inline: nothing to wait for)
            wait(jobs)  # (the shared pool stays up for the next file)
        if self._own:
            self._pool.shutdown(wait=True, cancel_futures=True)
        with self._cond:
            self._ready.clear()
            self._queue.clear()
