"""Point reads of a column whose every page is one constant value (ConstantLayout, 2.2).

A column that never changes (a flag, a default, TPC-H ``o_shippriority``) is written by
pylance 2.2 as constant pages: the value lives in the page's search cache and the page has
no levels when every item is valid.  When all pages of a top-level primitive field are such
pages holding the same value, a take or short range read of n rows is that value n times:
no plan, no fetch, no per-page levels (constant.py's page path selects levels page by page).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lancelot.encodings.structural.constant import ConstantPage
from lancelot.encodings.structural.page import PageReader
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.arrays import from_numpy


class ColumnConstant:
    """n copies of a column's single value (see the module docstring)."""

    def __init__(self, value: pa.Array) -> None:
        self.value = value  # length 1, the field's type
        self.fixed: bytes | None = None  # the value's bytes, for whole-byte fixed-width types
        t = value.type
        numeric = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
        if (numeric or pa.types.is_temporal(t)) and t.bit_width % 8 == 0:
            width = t.bit_width // 8
            data = value.buffers()[1]
            if data is not None:
                self.fixed = data.to_pybytes()[value.offset * width : (value.offset + 1) * width]

    @classmethod
    def of(cls, pages: Sequence[PageReader], value_type: pa.DataType) -> ColumnConstant | None:
        """The reader, or None unless every page is constant, all valid, of one equal value."""
        if not pages or pa.types.is_dictionary(value_type):
            return None
        value: pa.Array | None = None
        for p in pages:
            if not isinstance(p, ConstantPage) or list(p.meaning.layers) != [pb.REPDEF_ALL_VALID_ITEM]:
                return None
            state = p.cache.get(p.cache_key)  # loaded with the field's search caches
            if state is None or state.scalar is None or state.rep is not None or state.dfn is not None:
                return None
            if state.scalar.type != value_type or len(state.scalar) != 1 or state.scalar.null_count:
                return None
            if value is None:
                value = state.scalar
            elif not state.scalar.equals(value):
                return None
        return None if value is None else cls(value)

    def plan(self, rows: np.ndarray) -> tuple[None, list[tuple[int, int]]]:
        return None, []

    def decode(self, rows: np.ndarray, plan: None, bufs: list[memoryview]) -> pa.Array:
        n = len(rows)
        if self.fixed is not None:
            return pa.Array.from_buffers(self.value.type, n, [None, pa.py_buffer(self.fixed * n)])
        return self.value.take(from_numpy(np.zeros(n, dtype=np.int64)))
