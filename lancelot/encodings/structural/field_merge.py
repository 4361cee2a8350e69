"""The merge of a 2.1+ field's path arrays: each leaf column decodes into the array of its path
(repdef.py, paths.py); a field of several columns (structs, lists of structs, maps) is the merge of
them, the outer levels (offsets, validity) taken from the first column.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelot.errors import CorruptFileError
from lancelot.util.arrays import from_numpy


def _children_by_field(t: pa.StructType, spines: list[pa.Array]) -> list[list[pa.Array]]:
    groups: list[list[pa.Array]] = [[] for _ in range(t.num_fields)]
    names = [t.field(i).name for i in range(t.num_fields)]
    cursor = 0
    for s in spines:
        name = s.type.field(0).name
        while cursor < len(names) and names[cursor] != name:
            cursor += 1
        if cursor == len(names):
            raise CorruptFileError(f"struct child {name!r} does not belong to {t}")
        groups[cursor].append(s.field(0))
    return groups


def _list_parts(spine: pa.Array) -> tuple[pa.Array, pa.Array, np.ndarray | None]:
    """Offsets (starting at 0), values and null mask of a list-like spine."""
    offsets = np.asarray(spine.offsets)
    values = spine.values
    lo, hi = int(offsets[0]), int(offsets[-1])
    if lo or hi != len(values):
        values = values.slice(lo, hi - lo)
        offsets = offsets - lo
    mask = None if spine.null_count == 0 else np.asarray(spine.is_null())
    return offsets, values, mask


def _mask(mask: np.ndarray | None) -> pa.Array | None:
    return None if mask is None else from_numpy(mask, type=pa.bool_())


def merge(t: pa.DataType, spines: list[pa.Array]) -> pa.Array:
    """Merge the path arrays of a field's columns into one array of type ``t``."""
    if len(spines) == 1 and spines[0].type == t:
        return spines[0]
    first = spines[0]
    mask = None if first.null_count == 0 else np.asarray(first.is_null())
    if pa.types.is_struct(t):
        groups = _children_by_field(t, spines)
        if any(not g for g in groups):
            raise CorruptFileError(f"no column holds some child of {t}")
        children = [merge(t.field(i).type, g) for i, g in enumerate(groups)]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=_mask(mask))
    if pa.types.is_map(t):
        offsets, _, mask = _list_parts(first)
        entries = merge(pa.struct([t.key_field, t.item_field]), [_list_parts(s)[1] for s in spines])
        return pa.MapArray.from_arrays(
            from_numpy(offsets.astype(np.int32)), entries.field(0), entries.field(1), type=t, mask=_mask(mask)
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        offsets, _, mask = _list_parts(first)
        values = merge(t.value_type, [_list_parts(s)[1] for s in spines])
        cls, dt = (pa.LargeListArray, np.int64) if pa.types.is_large_list(t) else (pa.ListArray, np.int32)
        return cls.from_arrays(from_numpy(offsets.astype(dt)), values, type=t, mask=_mask(mask))
    if pa.types.is_fixed_size_list(t):
        d = t.list_size
        values = merge(t.value_type, [s.values.slice(s.offset * d, len(s) * d) for s in spines])
        return pa.FixedSizeListArray.from_arrays(values, type=t, mask=_mask(mask))
    if len(spines) != 1:
        raise CorruptFileError(f"{len(spines)} columns for the leaf type {t}")
    if first.type != t:
        return first.cast(t)
    return first
