"""``IOStats``: pylance's ``io_stats_snapshot`` / ``io_stats_incremental`` of a dataset, from lancelot's I/O counters.

pylance counts every request its dataset's object store makes (manifests, data files, writes).  lancelot counts the
read requests of data file bytes the process makes (io/counters.py: manifests and other metadata are not counted, nor
reads served from memory) and every object it writes: data, deletion and transaction files, manifests, the version
hint (one request each, as pylance's for files under its multipart size).  A dataset's statistics are those counts
since it was opened (or since its last ``io_stats_incremental``), shared with the objects checked out from it as
pylance shares them; I/O the process makes for other datasets meanwhile is counted too."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lancelot.io.counters import bytes_read_counter, iops_counter, write_counters

if TYPE_CHECKING:
    from lancelot.dataset.store import ObjectStore

#: the counters' values when each dataset's statistics were last reset, by the dataset's object store
_BASE: weakref.WeakKeyDictionary[ObjectStore, tuple[int, int, int, int]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


@dataclass(frozen=True)
class IOStats:
    """I/O statistics of a dataset (pylance's ``IOStats``: the same attributes)."""

    #: read requests of data file bytes
    read_iops: int
    #: data file bytes read
    read_bytes: int
    #: objects written
    write_iops: int = 0
    #: bytes written
    written_bytes: int = 0


def _now() -> tuple[int, int, int, int]:
    return (iops_counter(), bytes_read_counter(), *write_counters())


def start(store: ObjectStore) -> None:
    """Start counting for the dataset of ``store`` (a no-op for a store already counted: a checkout's)."""
    with _LOCK:
        if store not in _BASE:
            _BASE[store] = _now()


def stats(store: ObjectStore, reset: bool) -> IOStats:
    """The statistics of ``store``'s dataset; ``reset``: start again from them.

    Args:
        store: The dataset's object store.
        reset: Reset the counts to zero once read (``io_stats_incremental``).

    Returns:
        An ``IOStats``.
    """
    now = _now()
    with _LOCK:
        base = _BASE.setdefault(store, now)
        if reset:
            _BASE[store] = now
    return IOStats(*(a - b for a, b in zip(now, base, strict=True)))
