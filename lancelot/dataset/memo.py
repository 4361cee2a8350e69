"""``IdentityMemo``: values worked out once for an object (a schema, a data file's descriptor) and kept for it.

Data files written alike share one schema and one descriptor object (reader.py keeps one per shape), so what is worked
out for one file (its scan schema, its columns' dataset names, the column index of each scanned field) holds for every
file of that shape. An entry is keyed by the object's id and what else the value depends on, and trusted only while it
names that same object (an id is reused once its object is gone)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

_V = TypeVar("_V")


class IdentityMemo:
    """A bounded memo of values per object: all entries are dropped at once beyond ``limit`` (few shapes recur)."""

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self._memo: dict[Hashable, tuple[object, Any]] = {}

    def recall(self, key: Hashable, owner: object, make: Callable[..., _V], *args: Any) -> _V:
        """The value kept under ``key`` (``id(owner)`` among it) for ``owner``, else ``make(*args)``, kept (an owner
        of None: a value of ``key`` alone)."""
        hit = self._memo.get(key)
        if hit is not None and hit[0] is owner:
            return hit[1]  # type: ignore[no-any-return]
        value = make(*args)
        if len(self._memo) >= self.limit:
            self._memo.clear()
        self._memo[key] = (owner, value)
        return value
