"""A struct or list column whose fields lie in several data files of one fragment, put back together by field id.

Casting a struct's field (pylance's ``alter_columns({"path": "s.a", "data_type": ...})`` at 2.1+) gives the field a
new id and writes it alone to a new data file of each fragment; the struct's other fields stay in the old file (whose
copy of the old field no longer belongs to the schema). Each dataset field is read from the file that holds its id."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.field_projection import FieldNode, project


@dataclass
class Part:
    """One data file's column for the struct: its array, its node in the file's schema, and {file id: dataset id}
    where they differ."""

    array: pa.Array
    node: FieldNode
    ids: Mapping[int, int]

    def holds(self, dataset_id: int) -> int | None:
        """The index of the file child that is dataset field ``dataset_id``, if this part has it."""
        for i, c in enumerate(self.node.children):
            if self.ids.get(c.id, c.id) == dataset_id:
                return i
        return None


def merge_parts(parts: Sequence[Part], ds_node: FieldNode, target: pa.DataType, where: str) -> pa.Array:
    """The dataset's column ``ds_node`` (of type ``target``) from ``parts``: each field from the first part holding
    its id (nulls when none does); a struct's validity is the first part's."""
    first = parts[0]
    if (pa.types.is_list(target) or pa.types.is_large_list(target)) and len(parts) > 1 and ds_node.children:
        return _merged_list(parts, ds_node, target, where)
    if not pa.types.is_struct(target) or len(parts) == 1:
        return project(first.array, first.node, ds_node, target, first.ids, where)
    children = []
    for dchild, tf in zip(ds_node.children, target, strict=False):
        held = [(p, i) for p in parts if (i := p.holds(dchild.id)) is not None]
        sub = [Part(p.array.field(i), p.node.children[i], p.ids) for p, i in held]
        children.append(merge_parts(sub, dchild, tf.type, where) if sub else pa.nulls(len(first.array), tf.type))
    mask = first.array.is_null() if first.array.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)


def _merged_list(parts: Sequence[Part], ds_node: FieldNode, target: pa.DataType, where: str) -> pa.Array:
    """A list column from the files holding its item: from one file whole, or its items merged (every file holds
    the same lists: their offsets and validity are the first's)."""
    held = [(p, i) for p in parts if (i := p.holds(ds_node.children[0].id)) is not None]
    if len(held) <= 1:
        p = held[0][0] if held else parts[0]
        return project(p.array, p.node, ds_node, target, p.ids, where)
    sub = [Part(p.array.flatten(), p.node.children[i], p.ids) for p, i in held]
    values = merge_parts(sub, ds_node.children[0], target.value_type, where)
    first = held[0][0].array
    offsets = pc.subtract(first.offsets, first.offsets[0])
    cls = pa.ListArray if pa.types.is_list(target) else pa.LargeListArray
    return cls.from_arrays(offsets, values, type=target, mask=first.is_null() if first.null_count else None)
