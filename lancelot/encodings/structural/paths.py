"""Column allocation of 2.1+ files: which leaves of an Arrow field own columns.

In 2.1+ only leaves own columns; structs, lists, maps and fixed-size lists of
structural types are carried by the repetition/definition levels of each leaf
column (encoding.md, "Structural Encoding").  Leaves, in pre-order:

* primitives (fixed-width, boolean, binary/string, dictionary-typed fields);
* fixed-size lists of fixed-width items (any depth): one column, the list is
  flattened by the FixedSizeList compressive encoding;
* packed structs (``lance-encoding:packed``) and blobs (``lance-encoding:blob``);
* structs without children and the null type (all-null constant pages).

A ``ColumnPath`` records the steps from the top-level field down to one leaf
(one per RepDefLayer above the item layer) with each node's type pruned to the
children on the path; the full-width types are restored when columns merge.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from lancelot import field_metadata
from lancelot.errors import UnsupportedTypeError
from lancelot.field_metadata import is_fixed_width, is_list_like
from lancelot.versions import FileVersion

__all__ = [
    "ColumnPath",
    "Step",
    "column_count",
    "column_paths",
    "is_blob",
    "is_fixed_width",
    "is_list_like",
    "is_packed",
]


def is_packed(field: pa.Field) -> bool:
    """A struct stored row-major in one column of a 2.1+ file (``field_metadata.is_packed_struct``)."""
    return field_metadata.is_packed_struct(field, FileVersion.V2_1)


def is_blob(field: pa.Field) -> bool:
    """A binary field stored out of line (``field_metadata.is_blob``)."""
    return field_metadata.is_blob(field)


@dataclass(frozen=True)
class Step:
    """One structural level above a leaf: ``kind`` is struct, list or fsl.

    ``type`` is the node's type pruned to the path; for a struct, ``child`` is
    the index (in the full type) of the field taken.  A map is a list step
    (type: the map type) followed by a struct step over its entries.
    """

    kind: str
    type: pa.DataType
    full_type: pa.DataType
    child: int = 0

    @property
    def dimension(self) -> int:
        return self.type.list_size if self.kind == "fsl" else 1


@dataclass(frozen=True)
class ColumnPath:
    """The steps from a top-level field down to the leaf stored in one column."""

    steps: tuple[Step, ...]
    leaf: pa.Field
    blob: bool = False

    @property
    def row_scale(self) -> int:
        """Page rows per field row: fixed-size lists above any list multiply levels."""
        scale = 1
        for s in self.steps:
            if s.kind == "list":
                break
            if s.kind == "fsl":
                scale *= s.dimension
        return scale


def _is_leaf(field: pa.Field) -> bool:
    """A field that owns its column; also a fixed-size list of strings / binary, which pylance (and
    lancelot's writer) store as one leaf whose pages are all null, its levels one per list, not per item."""
    t = field.type
    if pa.types.is_fixed_size_list(t) and field_metadata.is_variable_width(t.value_type):
        return True
    return field_metadata.owns_column(field, FileVersion.V2_1)


def _walk(
    field: pa.Field,
    out: list[tuple[list[tuple[str, pa.DataType, int]], pa.Field]],
    prefix: list[tuple[str, pa.DataType, int]],
) -> None:
    t = field.type
    if _is_leaf(field):
        out.append((prefix, field))
        return
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            _walk(t.field(i), out, prefix + [("struct", t, i)])
    elif pa.types.is_map(t):
        entries = pa.struct([t.key_field, t.item_field])
        for i, child in enumerate((t.key_field, t.item_field)):
            _walk(child, out, prefix + [("list", t, 0), ("struct", entries, i)])
    elif is_list_like(t):
        _walk(t.value_field, out, prefix + [("list", t, 0)])
    elif pa.types.is_fixed_size_list(t):
        _walk(t.value_field, out, prefix + [("fsl", t, 0)])
    else:  # pragma: no cover - _is_leaf covers every other type
        raise UnsupportedTypeError(f"type {t} cannot be stored in a 2.1+ file")


def _prune(steps: list[tuple[str, pa.DataType, int]], leaf: pa.Field) -> pa.DataType:
    """The type of the first step's node with every struct reduced to the path's child."""
    child = leaf
    for kind, t, idx in reversed(steps):
        if kind == "struct":
            child = pa.field("_", pa.struct([t.field(idx).with_type(child.type)]))
        elif kind == "list" and pa.types.is_map(t):
            child = pa.field("_", pa.list_(pa.field("entries", child.type, nullable=False)))
        elif kind == "list":
            child = pa.field(
                "_", (pa.large_list if pa.types.is_large_list(t) else pa.list_)(t.value_field.with_type(child.type))
            )
        else:
            child = pa.field("_", pa.list_(t.value_field.with_type(child.type), t.list_size))
    return child.type


#: the paths of a field object (files of one schema share their field objects: reader.py), read-only
_PATHS: dict[int, tuple[pa.Field, list[ColumnPath]]] = {}


def column_paths(field: pa.Field) -> list[ColumnPath]:
    """One ColumnPath per column the field owns, in file order (a list not to be changed: the same for
    every call with the same field object)."""
    known = _PATHS.get(id(field))
    if known is not None and known[0] is field:
        return known[1]
    paths = _column_paths(field)
    if len(_PATHS) >= 1024:
        _PATHS.clear()
    _PATHS[id(field)] = (field, paths)
    return paths


def _column_paths(field: pa.Field) -> list[ColumnPath]:
    if not pa.types.is_nested(field.type):  # (a leaf: no walk)
        return [ColumnPath((), field, is_blob(field))]
    found: list[tuple[list[tuple[str, pa.DataType, int]], pa.Field]] = []
    _walk(field, found, [])
    paths = []
    for prefix, leaf in found:
        steps = tuple(Step(kind, _prune(prefix[i:], leaf), t, idx) for i, (kind, t, idx) in enumerate(prefix))
        paths.append(ColumnPath(steps, leaf, is_blob(leaf)))
    return paths


def column_count(field: pa.Field) -> int:
    """How many columns a top-level field owns in a 2.1/2.2 file."""
    return field_metadata.column_count(field, FileVersion.V2_1)
