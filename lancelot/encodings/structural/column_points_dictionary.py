"""The page dictionaries of a ``ColumnPoints`` column (column_points.py): joined, and a few-row take's items looked
up in them from Python lists or the dictionary's words (a dozen Arrow or numpy calls on ten rows cost more than the
loops)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from lancelot.encodings.compression.block import VariableWidthBlock
from lancelot.encodings.structural.leaf import PageDictionary, fixed_rows
from lancelot.encodings.structural.miniblock_points import PointReader
from lancelot.errors import CorruptFileError

#: dictionaries of at most this many strings serve a few-row take from Python lists
FEW_DICTIONARY = 1 << 16
#: a string dictionary as lists: offsets, bytes, each page's first item and item count
_DictLists = tuple[list[int], memoryview, list[int], list[int]]
_UINTS: dict[int, np.dtype[Any]] = {1: np.dtype("<u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}
_NONE = np.zeros(0, np.int64)


class DictionaryMixin:
    """The dictionary side of ``ColumnPoints`` (mixed into it: column_points.py)."""

    reader: PointReader
    value_type: pa.DataType
    page_ids: Sequence[int]
    page_dicts: list[PageDictionary] | None
    dict_base: np.ndarray
    dict_size: np.ndarray
    _dictionary: pa.Array | None
    _dict_lists: _DictLists | None | Literal[False]
    _looked_up: bool
    _dict_words: np.ndarray | None | Literal[False]

    @staticmethod
    def _join_dictionaries(
        pages: list[PageDictionary | None],
    ) -> tuple[list[PageDictionary] | None, np.ndarray, np.ndarray]:
        """The pages' dictionaries (None: they have none), each one's first item in their join and size."""
        dicts = [d for d in pages if d is not None]
        if len(dicts) < len(pages):  # the pages share their shape: all have a dictionary or none has
            return None, _NONE, _NONE
        sizes = [d.size for d in dicts]
        return dicts, np.array([0, *accumulate(sizes[:-1])], dtype=np.int64), np.array(sizes, dtype=np.int64)

    @property
    def dictionary(self) -> pa.Array | None:
        """The pages' dictionaries joined as one Arrow array (made on first need)."""
        if self._dictionary is None and self.page_dicts is not None:
            arrays = [d.arrow for d in self.page_dicts]
            self._dictionary = arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)
        return self._dictionary

    def _dictionary_lists(self) -> _DictLists | None:
        """A string or binary dictionary without nulls (of at most ``FEW_DICTIONARY`` items) as
        Python lists: its offsets, its bytes, and each page's first item and item count."""
        if self._dict_lists is False:
            self._dict_lists = None
            one = self.page_dicts[0] if self.page_dicts is not None and len(self.page_dicts) == 1 else None
            if one is not None and one.kind:  # (its lists from the block: no Arrow array made)
                if one.kind == "strings" and one.size <= FEW_DICTIONARY:
                    self._dict_lists = (*one.lists(), [0], [one.size])
                return self._dict_lists
            d, t = self.dictionary, self.value_type
            if (
                d is not None
                and len(d) <= FEW_DICTIONARY
                and not d.null_count
                and d.type == t
                and (pa.types.is_string(t) or pa.types.is_binary(t))
            ):
                bufs = d.buffers()
                offsets = np.frombuffer(bufs[1], np.int32)[d.offset : d.offset + len(d) + 1].tolist()
                data = memoryview(bufs[2]) if bufs[2] is not None else memoryview(b"")
                self._dict_lists = (offsets, data, self.dict_base.tolist(), self.dict_size.tolist())
        return self._dict_lists

    def _few_from_dictionary(
        self, fixed: np.ndarray, page_of_row: np.ndarray, valid: np.ndarray | None
    ) -> pa.Array | None:
        """A take's few strings looked up in the column's dictionary (no validity yet), or None
        when the lists do not apply.  An index past its page's dictionary must be a null item."""
        width = self.reader.value_bytes
        if width not in _UINTS:
            return None
        if not self._looked_up:  # a first take: its items looked up in one page's block, not all made lists
            self._looked_up = True  # (a file taken from again makes the lists)
            one = self.page_dicts[0] if self.page_dicts is not None and len(self.page_dicts) == 1 else None
            if one is not None and one.kind == "strings" and len(page_of_row) < one.size:
                return self._few_from_strings(one, fixed.view(_UINTS[width]), valid)
        lists = self._dictionary_lists()
        if lists is None:
            return self._few_from_fixed_dictionary(fixed.view(_UINTS[width]), page_of_row, valid)
        offsets, data, base, size = lists
        ok = None if valid is None else valid.tolist()
        pieces, ends, end = [], [0], 0
        for j, (x, p) in enumerate(zip(fixed.view(_UINTS[width]).tolist(), page_of_row.tolist())):
            if x < size[p]:
                a, b = offsets[x + base[p]], offsets[x + base[p] + 1]
                pieces.append(data[a:b])
                end += b - a
            elif ok is None or ok[j]:
                raise CorruptFileError("dictionary index beyond the page's dictionary items", page=self.page_ids[p])
            ends.append(end)
        return self._strings(ends, pieces)

    def _strings(self, ends: list[int], pieces: Sequence[memoryview | bytes]) -> pa.Array | None:
        """The string array of ``pieces`` ending at ``ends`` (from 0), None past 32-bit offsets."""
        if ends[-1] >= 1 << 31:
            return None
        return pa.Array.from_buffers(
            self.value_type,
            len(ends) - 1,
            [None, pa.py_buffer(np.array(ends, np.int32)), pa.py_buffer(b"".join(pieces))],
        )

    def _few_from_strings(self, one: PageDictionary, local: np.ndarray, valid: np.ndarray | None) -> pa.Array | None:
        """``_few_from_dictionary`` of one page's "strings" dictionary, its items looked up in its block."""
        listed, n = local.tolist(), one.size
        ok = None if valid is None else valid.tolist()
        for j, x in enumerate(listed):
            if x >= n and (ok is None or ok[j]):
                raise CorruptFileError("dictionary index beyond the page's dictionary items", page=self.page_ids[0])
        at = np.array([x if x < n else 0 for x in listed], dtype=np.int64)  # (a null item: any slot, unread)
        block = one.block
        assert isinstance(block, VariableWidthBlock)  # (a "strings" dictionary's)
        offsets = np.asarray(block.offsets)
        starts, stops = (offsets[at].tolist(), offsets[at + 1].tolist()) if n else ([0] * len(listed),) * 2
        data = np.ascontiguousarray(block.data).data
        pieces = [data[a:b] if x < n else b"" for a, b, x in zip(starts, stops, listed)]
        return self._strings([0, *accumulate([len(p) for p in pieces])], pieces)

    def _few_from_fixed_dictionary(
        self, local: np.ndarray, page_of_row: np.ndarray, valid: np.ndarray | None
    ) -> pa.Array | None:
        """``_few_from_dictionary`` for a dictionary of whole-byte fixed-width values without
        nulls (its items as rows of words, kept per column); None when it is not one."""
        if self._dict_words is False:
            self._dict_words = None
            if self.page_dicts is not None and len(self.page_dicts) == 1:
                self._dict_words = self.page_dicts[0].words()
            elif (d := self.dictionary) is not None and len(d) and d.type == self.value_type:
                self._dict_words = fixed_rows(d)
        words = self._dict_words
        if words is None:
            return None
        base, size = self.dict_base[page_of_row], self.dict_size[page_of_row]
        local = local.astype(np.int64)
        bad = local >= size
        if bad.any():
            if valid is None or bool(np.any(bad & valid)):
                p = int(page_of_row[np.flatnonzero(bad if valid is None else bad & valid)[0]])
                raise CorruptFileError("dictionary index beyond the page's dictionary items", page=self.page_ids[p])
            local[bad] = 0  # null items: any item does
            base[bad] = 0
        out = words.take(local + base, axis=0)
        return pa.Array.from_buffers(self.value_type, len(local), [None, pa.py_buffer(out)])
