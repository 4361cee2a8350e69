"""Lance 2.0 array encodings (encodings_v2_0.proto): one column per field in
pre-order (structs and lists included), a tree of ArrayEncoding nodes per page."""

from __future__ import annotations

import pyarrow as pa


def is_packed_struct(field: pa.Field) -> bool:
    """A struct whose field metadata asks for the packed-struct encoding."""
    md = field.metadata or {}
    flag = md.get(b"lance-encoding:packed", md.get(b"packed", b"")).lower()
    return pa.types.is_struct(field.type) and flag in (b"true", b"1", b"yes")


def column_count(field: pa.Field) -> int:
    """Columns a field occupies in a 2.0 file (itself plus its descendants)."""
    t = field.type
    if is_packed_struct(field):
        return 1
    if pa.types.is_struct(t):
        return 1 + sum(column_count(t.field(i)) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return 1 + column_count(t.value_field)
    return 1


def make_field_reader(ctx):
    from lancelot.encodings.v2_0.field_reader import FieldReader20

    return FieldReader20(ctx)
