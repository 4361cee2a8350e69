"""Which decode path served a read, for debugging and for tests.

A take or range read of one field is planned by one of several planners, chosen by format
version, page layout and row count (the whole-column point readers of 2.1+, page by page
decoding, whole simple pages, the vectorized 2.0 take plans, the generic 2.0 decoder); each
``Plan`` names its planner (encodings/base.py).  The reader's read loop reports the planner of
each field's last round here: at DEBUG level on the ``lancelot.read`` logger, and to every
``recording()`` block active in the process (process-wide, because fields decode on pool threads).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

log = logging.getLogger("lancelot.read")

_lock = threading.Lock()
_recorders: list[Recorder] = []


@dataclass(frozen=True)
class Served:
    """One field read: the field, the operation ("take" or "range") and the path that served it."""

    field: str
    op: str
    path: str


@dataclass
class Recorder:
    """What was served while a ``recording()`` block was open."""

    reads: list[Served] = field(default_factory=list)

    def paths(self, name: str, op: str | None = None) -> list[str]:
        """The paths that served field ``name`` (optionally only ``op`` reads), in order."""
        return [s.path for s in self.reads if s.field == name and (op is None or s.op == op)]


def served(field_name: str, op: str, path: str) -> None:
    """Report that ``path`` served an ``op`` read of ``field_name``."""
    if _recorders:
        s = Served(field_name, op, path)
        with _lock:
            for r in _recorders:
                r.reads.append(s)
    if log.isEnabledFor(logging.DEBUG):
        log.debug("%s of field %r served by %s", op, field_name, path)


@contextmanager
def recording() -> Iterator[Recorder]:
    """Record every field read served in this process while the block runs."""
    r = Recorder()
    with _lock:
        _recorders.append(r)
    try:
        yield r
    finally:
        with _lock:
            _recorders.remove(r)
