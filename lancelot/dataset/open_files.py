"""Data files kept open across dataset objects, and the pool fragments are read on.

Data files are immutable (their names are never reused), so a process opens each once: an LRU of ``MAX_OPEN_FILES``
``LanceFile`` objects keyed by store, path and storage options, shared by every ``LanceDataset`` (a dataset reopened at
another version finds its files already open)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from lancelot.errors import LanceError, LanceFileNotFoundError

if TYPE_CHECKING:
    from lancelot.dataset.store import ObjectStore
    from lancelot.reader import LanceFile

#: data files kept open across dataset objects
MAX_OPEN_FILES = 128
_FILES: OrderedDict[tuple[str, str, str], LanceFile] = OrderedDict()
_LOCK = threading.Lock()
#: fragments a scan reads at once
FRAGMENT_READAHEAD = 2
_POOL: ThreadPoolExecutor | None = None
_K = TypeVar("_K")
_V = TypeVar("_V")


def kept(cache: OrderedDict[_K, _V], key: _K, lock: threading.Lock = _LOCK) -> _V | None:
    """``cache[key]``, now its most recently used entry (None: not kept); ``lock`` guards ``cache``."""
    with lock:
        hit = cache.get(key)
        if hit is not None:
            cache.move_to_end(key)
        return hit


def fragment_pool() -> ThreadPoolExecutor:
    """Fragments read side by side (their fields decode on the reader's own pool)."""
    global _POOL
    with _LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=FRAGMENT_READAHEAD, thread_name_prefix="lancelot-fragments")
        return _POOL


def _options_key(storage_options: dict[str, Any] | None) -> str:
    return repr(sorted(storage_options.items())) if storage_options else "[]"


def files_open(storage_options: dict[str, Any] | None) -> dict[tuple[str, str], LanceFile]:
    """The data files open now with these storage options, by (store uri, path) (a session's accounting).

    Args:
        storage_options: The options the files were opened with.

    Returns:
        A new dict (the cache goes on changing).
    """
    options = _options_key(storage_options)
    with _LOCK:
        return {k[:2]: lf for k, lf in _FILES.items() if k[2] == options}


def open_data_file(store: ObjectStore, path: str, where: str, storage_options: dict[str, Any] | None) -> LanceFile:
    """The data file at ``path`` in ``store`` (opened once per process); a missing file is a LanceFileNotFoundError and
    any other failure names ``where`` and the path."""
    from lancelot.reader import LanceFile

    key = (store.uri, path, _options_key(storage_options))
    lf = kept(_FILES, key)
    if lf is not None:
        return lf
    try:
        lf = LanceFile(store.open_input(path))
    except FileNotFoundError:
        raise LanceFileNotFoundError(f"{where}: data file {path} is missing", path=path) from None
    except LanceError as e:
        raise type(e)(f"{where}: data file {path}: {e.message}", path=e.path) from None
    with _LOCK:
        lf = _FILES.setdefault(key, lf)
        while len(_FILES) > MAX_OPEN_FILES:
            _FILES.popitem(last=False)[1].close()
    return lf
