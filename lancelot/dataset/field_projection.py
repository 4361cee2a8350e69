"""A data file's nested column seen through the dataset's schema, matched by field id.

Dropping or renaming a nested field (``drop_columns(["s.b"])``, ``alter_columns`` of ``s.c``)
changes only the manifest's schema (table format, "Schema evolution": fields are identified
by id, not by name or position). The data files keep the old struct: more children, old
names. Reading such a column takes the file's array and keeps, for each field of the
dataset's type, the file child of the same id, under the dataset's name; a dataset child the
file lacks reads as nulls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from lancelot.errors import CorruptFileError


@dataclass
class FieldNode:
    """One field of a schema (a manifest's or a data file's): its id and its children in order."""

    id: int
    name: str
    children: list[FieldNode] = field(default_factory=list)


def field_trees(fields: Iterable[object]) -> dict[str, FieldNode]:
    """Top-level fields by name, from a flat pre-order list of ``Field`` messages (``id``,
    ``parent_id``, ``name``), as manifests and file descriptors store them."""
    nodes: dict[int, FieldNode] = {}
    tops: dict[str, FieldNode] = {}
    for f in fields:
        fid, parent, name = int(f.id), int(f.parent_id), str(f.name)  # type: ignore[attr-defined]
        node = FieldNode(fid, name)
        nodes[fid] = node
        if parent == -1:
            tops[name] = node
        elif parent in nodes:
            nodes[parent].children.append(node)
    return tops


def project(
    col: pa.Array | pa.ChunkedArray,
    file_node: FieldNode,
    ds_node: FieldNode,
    target: pa.DataType,
    ids: Mapping[int, int],
    where: str,
) -> pa.Array | pa.ChunkedArray:
    """``col`` (the file's column for ``file_node``) as ``target`` (the dataset's type of
    ``ds_node``); ``ids`` maps a file field id to its dataset id where they differ (-2: dropped)."""
    if isinstance(col, pa.ChunkedArray):
        chunks = [_project(c, file_node, ds_node, target, ids, where) for c in col.chunks]
        return pa.chunked_array(chunks, target)
    return _project(col, file_node, ds_node, target, ids, where)


def _project(
    arr: pa.Array, fnode: FieldNode, dnode: FieldNode, target: pa.DataType, ids: Mapping[int, int], where: str
) -> pa.Array:
    if arr.type == target:
        return arr
    t = arr.type
    if pa.types.is_struct(t) and pa.types.is_struct(target):
        by_id = {ids.get(c.id, c.id): i for i, c in enumerate(fnode.children)}
        children, fields = [], []
        for dchild, tf in zip(dnode.children, target, strict=False):
            i = by_id.get(dchild.id)
            if i is None:
                children.append(pa.nulls(len(arr), tf.type))
            else:
                children.append(_project(arr.field(i), fnode.children[i], dchild, tf.type, ids, where))
            fields.append(tf)
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    one_child = (pa.types.is_list(t), pa.types.is_large_list(t), pa.types.is_fixed_size_list(t))
    if any(one_child) and type(t) is type(target) and fnode.children and dnode.children:
        values = _project(arr.values, fnode.children[0], dnode.children[0], target.value_type, ids, where)
        mask = arr.is_null() if arr.null_count else None
        if pa.types.is_fixed_size_list(t):
            size = t.list_size
            start = arr.offset * size
            values = values.slice(start, len(arr) * size)
            return pa.FixedSizeListArray.from_arrays(values, type=target, mask=mask)
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        return cls.from_arrays(arr.offsets, values, type=target, mask=mask)
    raise CorruptFileError(
        f"{where}: column {dnode.name!r} is {arr.type} in its data file, the dataset's schema says {target}"
    )
