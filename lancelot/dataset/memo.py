"""``IdentityMemo``: values worked out once for an object (a schema, a data file's descriptor) and kept for it.

Files written alike share one schema and descriptor object (reader.py), so what is worked out for one file holds for
every file of that shape. An entry is trusted only while it names that same object (ids are reused once it is gone)."""

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

    def values(self) -> list[Any]:
        """The values kept now (a session counts their bytes: dataset/session.py)."""
        return [value for _, value in self._memo.values()]
