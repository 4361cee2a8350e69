"""Pages of one field decoded side by side (a large read of a field of several pages).

The reader already decodes fields on its own pool (reader.py); a read dominated by one
large field (TPC-H orders' free-text o_comment: 8 FSST pages) still decodes that field's
pages one after another.  ``run_all`` runs a list of page decodes on the calling thread
and up to ``cpu_count - 1`` helper threads of a small process-wide pool: every thread
claims the next task until none is left, and the caller waits only for tasks already
running.  A helper that starts late finds nothing to do, so a call never waits for a
queued helper, and nesting inside the reader's pool cannot deadlock.  The heavy parts of
a page decode (numba kernels, numpy, pread) release the GIL.  The writer uses it too: the FSST encode of a
large string page runs in pieces (write_strategy.py), from a thread of the writer's page pool.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

#: a round of page decodes is spread over threads when its pages fetched at least this many bytes
PARALLEL_MIN_BYTES = 1 << 20

_POOL: ThreadPoolExecutor | None = None
_LOCK = threading.Lock()


def threads() -> int:
    """Threads a round may use (the caller's included): one per CPU, at most 8."""
    return max(1, min(8, os.cpu_count() or 1))


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=max(1, threads() - 1), thread_name_prefix="lancelot-read-pages")
        return _POOL


def run_all(tasks: list[Callable[[], None]]) -> None:
    """Run every task once, side by side; return when all have finished.  The first failure (in
    task order) is raised once every started task has finished; tasks not yet started then are
    skipped."""
    n = len(tasks)
    helpers = min(n, threads()) - 1
    if helpers <= 0:
        for t in tasks:
            t()
        return
    lock = threading.Lock()
    done = threading.Condition(lock)
    state = {"next": 0, "running": 0, "failed": False}
    errors: list[tuple[int, BaseException]] = []

    def work() -> None:
        while True:
            with lock:
                i = state["next"]
                if i >= n or state["failed"]:
                    return
                state["next"] = i + 1
                state["running"] += 1
            try:
                tasks[i]()
            except BaseException as e:  # handed to the caller
                with lock:
                    errors.append((i, e))
                    state["failed"] = True
            finally:
                with lock:
                    state["running"] -= 1
                    done.notify_all()

    pool = _pool()
    for _ in range(helpers):
        pool.submit(work)
    work()
    with lock:
        while state["running"]:
            done.wait()
    if errors:
        raise min(errors, key=lambda e: e[0])[1]
