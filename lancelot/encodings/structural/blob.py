"""The blob page layout (lance.encodings21.BlobLayout; encoding.md, "Blob Page Layout").

Large binary values live out of line, anywhere in the file; the page holds,
in its ``inner_layout`` (one all-valid item layer), one description per value:
a struct of u64 ``position`` (absolute file offset) and u64 ``size``.  The
definition level is smuggled into the description: size 0 and position 0 is
an empty value, size 0 and position p > 0 a null whose repetition level is
``p & 0xFFFF`` and definition level ``(p >> 16) & 0xFFFF``.  The
blob layout's own ``layers`` give the meaning of those levels.  Reading takes
three fetches: search cache, descriptions, then the blobs themselves.

Read with the leaf type ``DESCRIPTION`` instead of a binary type, the page returns the
descriptions themselves (null where the value is null), as pylance's dataset scans do; the
bytes are then read on demand (``lancelot.dataset.blob``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from lancelot.encodings.structural.page import PageInfo, PageLevels, PageReader, Range, as_u8
from lancelot.encodings.structural.repdef import LevelMeaning
from lancelot.errors import CorruptFileError, UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

DESCRIPTION = pa.struct([("position", pa.uint64()), ("size", pa.uint64())])
MAX_BLOB = 1 << 40


class BlobPage(PageReader):
    """Reads rows of a blob page through the reader of its inner layout."""

    def __init__(
        self,
        info: PageInfo,
        cache: dict[Any, Any],
        layout: pb.BlobLayout,
        leaf_type: pa.DataType,
        make_reader: Callable[[PageInfo, dict[Any, Any], pb.PageLayout, pa.DataType], PageReader],
    ) -> None:
        super().__init__(info, cache)
        self.meaning = LevelMeaning.of(layout.layers)
        if self.meaning.max_rep:
            raise UnsupportedEncodingError("blob values inside lists are not supported")
        self.describe = leaf_type == DESCRIPTION
        if not (self.describe or pa.types.is_large_binary(leaf_type) or pa.types.is_binary(leaf_type)):
            raise UnsupportedEncodingError(f"blob pages of type {leaf_type}")
        self.leaf_type = leaf_type
        if not layout.HasField("inner_layout") or layout.inner_layout.HasField("blob_layout"):
            raise CorruptFileError("blob layout without a usable inner layout")
        self.inner = make_reader(info, cache, layout.inner_layout, DESCRIPTION)

    def search_ranges(self) -> list[Range]:
        return self.inner.search_ranges()

    def load_search(self, bufs: list[memoryview]) -> None:
        self.inner.load_search(bufs)

    def plan(self, rows: np.ndarray) -> list[Range]:
        return self.inner.plan(rows)

    def decode(self, rows: np.ndarray, bufs: list[memoryview]) -> PageLevels:
        return self.inner.decode(rows, bufs)

    def finish(self, levels: PageLevels) -> tuple[PageLevels, list[Range] | None]:
        desc = levels.values
        if levels.rep is not None or len(desc) != levels.num_levels:
            raise CorruptFileError("blob descriptions must be one all-valid item per row")
        pos = np.asarray(desc.field("position").to_numpy(zero_copy_only=False), dtype=np.uint64)
        size = np.asarray(desc.field("size").to_numpy(zero_copy_only=False), dtype=np.uint64)
        null = (size == 0) & (pos != 0)
        if np.any(pos[null] & np.uint64(0xFFFF)):
            raise CorruptFileError("blob description carries a repetition level outside a list")
        dfn = np.where(null, (pos >> np.uint64(16)) & np.uint64(0xFFFF), 0).astype(np.int64)
        if len(dfn) and int(dfn.max()) > self.meaning.max_def:
            raise CorruptFileError(f"blob definition level {int(dfn.max())} exceeds {self.meaning.max_def}")
        if self.describe:
            self._dfn = dfn.astype(np.uint16) if null.any() else None
            return self._described(levels, pos, size, null), None
        fetch = ~null & (size > 0)
        pos_i, size_i = pos.astype(np.int64), size.astype(np.int64)
        if np.any(size[fetch] > MAX_BLOB):
            raise CorruptFileError("implausible blob size")
        self._fetch = np.flatnonzero(fetch)
        self._sizes = np.where(fetch, size_i, 0)
        self._dfn = dfn.astype(np.uint16) if null.any() else None
        return levels, [(int(pos_i[i]), int(size_i[i])) for i in self._fetch]

    def complete(self, levels: PageLevels, bufs: list[memoryview]) -> PageLevels:
        offsets = np.zeros(levels.num_levels + 1, dtype=np.int64)
        np.cumsum(self._sizes, out=offsets[1:])
        data = np.concatenate([as_u8(b) for b in bufs]) if bufs else np.zeros(0, np.uint8)
        large = pa.types.is_large_binary(self.leaf_type)
        if not large and offsets[-1] >= 1 << 31:
            raise UnsupportedEncodingError("blobs of more than 2 GiB in one read need large_binary")
        values = pa.Array.from_buffers(
            self.leaf_type,
            levels.num_levels,
            [None, pa.py_buffer(offsets.astype(np.int64 if large else np.int32)), pa.py_buffer(data)],
        )
        return PageLevels(self.meaning, None, self._dfn, levels.num_levels, values)

    def _described(self, levels: PageLevels, pos: np.ndarray, size: np.ndarray, null: np.ndarray) -> PageLevels:
        """The descriptions as values (children null where the value is null, as pylance returns them)."""
        mask = null if null.any() else None
        values = pa.StructArray.from_arrays(
            [pa.array(pos, pa.uint64(), mask=mask), pa.array(size, pa.uint64(), mask=mask)],
            fields=list(DESCRIPTION),
        )
        return PageLevels(self.meaning, None, self._dfn, levels.num_levels, values)
