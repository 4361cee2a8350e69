"""``FileShapes``: what one dataset object works out once for all its data files of one shape.

Data files written alike share one descriptor object (reader.py keeps one per schema), so a mapping worked out for one
file (its columns' dataset names, the column index of each scanned field) holds for every file of that shape. Each
``LanceDataset`` owns one ``FileShapes``: a bounded memo keyed by the descriptor's id and what else the mapping depends
on, an entry trusted only while it names that same descriptor object (an id can be reused once the object is gone)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

_V = TypeVar("_V")


class FileShapes:
    """A dataset object's memo of per-shape mappings (fragment_columns.py's column names, group_files.py's pages)."""

    #: entries kept (dropped all at once beyond it: a dataset has few shapes)
    LIMIT = 512

    def __init__(self) -> None:
        self._memo: dict[Hashable, tuple[object, Any]] = {}

    def recall(self, key: Hashable, descriptor: object, make: Callable[[], _V]) -> _V:
        """The value kept under ``key`` for ``descriptor``, else ``make()``, kept.

        Args:
            key: What the value depends on, ``id(descriptor)`` among it.
            descriptor: The data file's descriptor object the value was worked out for.
            make: Works the value out (called on a miss only).
        """
        hit = self._memo.get(key)
        if hit is not None and hit[0] is descriptor:
            return hit[1]  # type: ignore[no-any-return]
        value = make()
        if len(self._memo) >= self.LIMIT:
            self._memo.clear()
        self._memo[key] = (descriptor, value)
        return value
