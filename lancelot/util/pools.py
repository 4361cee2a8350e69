"""Process-wide thread pools by name, created on first use and kept for the next call."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

_POOLS: dict[str, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def shared_pool(name: str, workers: int) -> ThreadPoolExecutor:
    """A process-wide pool of ``workers`` threads kept for the next operation: a thread's start waits
    until the new thread runs, which on a loaded machine cost more than a small operation's work.
    Its jobs must not wait for other jobs of the same pool."""
    with _POOLS_LOCK:
        pool = _POOLS.get(name)
        if pool is None:
            pool = _POOLS[name] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"lancelot-{name}")
        return pool
