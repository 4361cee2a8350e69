"""Blob v2 fields in the schemas of 2.2+ datasets, as pylance 14 writes them.

A ``large_binary`` field with ``lance-encoding:blob`` (or a ``lance.blob.v2`` extension struct, what
``lance.blob_array`` builds) is in the manifest ``struct<data: large_binary, uri: string>`` with the extension
name ``lance.blob.v2`` (one column), in the data file a packed-struct column of descriptions
(``blob.DESCRIPTION_V2``) whose children have no ids.  blob_write.py writes the bytes they point at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa

from lancelot import field_metadata, versions
from lancelot.dataset.blob import description_v2, holds_blob, is_blob_field, is_blob_v2
from lancelot.errors import LanceError, UnsupportedTypeError
from lancelot.extension_types import map_children
from lancelot.format.pb import file_pb2
from lancelot.util.types import is_offsets_list

INLINE_KEY = "lance-encoding:blob-inline-size-threshold"
DEDICATED_KEY = "lance-encoding:blob-dedicated-size-threshold"
PACK_FILE_KEY = "lance-encoding:blob-pack-file-size-threshold"
EXT_KEY = "ARROW:extension:name"
EXT_META_KEY = "ARROW:extension:metadata"
LOGICAL = pa.struct([pa.field("data", pa.large_binary()), pa.field("uri", pa.string())])


def _v2(version: str) -> bool:
    """2.2 and later (a legacy or unknown version string is not)."""
    try:
        return versions.parse(version).key >= (2, 2)
    except LanceError:
        return False


def is_v2_input(field: pa.Field, version: str) -> bool:
    """A field written with blob v2 values at ``version`` (itself, or a struct field below it)."""
    return _v2(version) and holds_blob(field, is_blob_field)


def _in_fixed_size_list(field: pa.Field, below: bool = False) -> pa.Field | None:
    """A blob field inside a fixed-size list at or below ``field`` (the first), else None."""
    if below and is_blob_field(field):
        return field
    t = field.type
    if is_offsets_list(t) or pa.types.is_fixed_size_list(t):
        return _in_fixed_size_list(t.value_field, below or pa.types.is_fixed_size_list(t))
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            hit = _in_fixed_size_list(t.field(i), below)
            if hit is not None:
                return hit
    return None


def check_version(schema: pa.Schema, version: str | None) -> None:
    """Refuse a ``lance.blob.v2`` field below 2.2, as pylance does (the layout is 2.2's), and at 2.2+ a blob inside a
    fixed-size list (lancelot writes blob v2 values at the top level, in structs and in lists)."""
    if version and _v2(version):
        for f in schema:
            hit = _in_fixed_size_list(f)
            if hit is not None:
                raise UnsupportedTypeError(
                    f"blob field {hit.name!r} inside a fixed-size list (column {f.name!r}) is not writable at "
                    f"{version} (pylance 14's writer fails on them too)",
                    column=f.name,
                )
    if not version or _v2(version):
        return
    for f in schema:
        for _, leaf in leaf_paths(f):
            if is_blob_v2(leaf):
                raise UnsupportedTypeError(
                    f"blob field {leaf.name!r} (lance.blob.v2) needs file version 2.2 or later, not {version}",
                    column=leaf.name,
                )


def map_v2(field: pa.Field, leaf: Callable[[pa.Field], pa.Field]) -> pa.Field:
    """``field`` with each blob v2 value field below it (or itself) replaced by ``leaf(field)``."""
    if is_blob_field(field):
        return leaf(field)
    if not holds_blob(field, is_blob_field):
        return field
    return map_children(field, lambda f: map_v2(f, leaf))


def manifest_schema(schema: pa.Schema, version: str | None) -> pa.Schema:
    """The dataset's (logical) schema of data of ``schema`` written at ``version``."""
    check_version(schema, version)
    if not version or not any(is_v2_input(f, version) for f in schema):
        return schema
    fields = [map_v2(f, _logical) if is_v2_input(f, version) else f for f in schema]
    return pa.schema(fields, metadata=schema.metadata)


def _logical(f: pa.Field) -> pa.Field:
    """The manifest's field: the extension's own storage struct when given as one (pylance keeps it, with its empty
    serialized metadata), else ``struct<data, uri>``."""
    md = {**_thresholds(f), EXT_KEY: "lance.blob.v2"}
    if is_blob_v2(f):
        md[EXT_META_KEY] = field_metadata.value(f, EXT_META_KEY) or ""
        return pa.field(f.name, f.type, f.nullable, md)
    return pa.field(f.name, LOGICAL, f.nullable, md)


def _thresholds(f: pa.Field) -> dict[str, str]:
    md = field_metadata.metadata_of(f)
    return {k: md[k] for k in (INLINE_KEY, DEDICATED_KEY, PACK_FILE_KEY) if k in md}


def file_schema(schema: pa.Schema, version: str) -> pa.Schema:
    """The data file's schema: blob v2 fields (at any struct depth) as their description column."""
    if not any(is_v2_input(f, version) for f in schema):
        return schema
    fields = [map_v2(f, description_v2) if is_v2_input(f, version) else f for f in schema]
    return pa.schema(fields, metadata=schema.metadata)


def collapse_fields(fields: list[file_pb2.Field]) -> list[file_pb2.Field]:
    """The manifest's fields without the children of blob v2 fields (the struct owns the column)."""
    v2 = {int(f.id) for f in fields if f.extension_name == "lance.blob.v2"}
    if not v2:
        return fields
    return [f for f in fields if int(f.parent_id) not in v2]


def leaf_paths(field: pa.Field, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], pa.Field]]:
    """(name path, field) of each blob v2 value field at or below ``field``."""
    here = (*path, field.name)
    if is_blob_field(field):
        yield here, field
    elif is_offsets_list(field.type):
        yield from leaf_paths(field.type.value_field, here)
    elif pa.types.is_struct(field.type):
        for i in range(field.type.num_fields):
            yield from leaf_paths(field.type.field(i), here)
