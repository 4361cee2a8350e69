"""Lance 2.0 array encodings (encodings_v2_0.proto): one column per field in
pre-order (structs and lists included), a tree of ArrayEncoding nodes per page.

Which fields own columns is decided by ``lancelot.field_metadata`` (shared with 2.1+)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from lancelot import field_metadata
from lancelot.versions import FileVersion

if TYPE_CHECKING:
    from lancelot.encodings.base import FieldContext, FieldReader


def is_packed_struct(field: pa.Field) -> bool:
    """A struct stored as one packed-struct column in a 2.0 file (``field_metadata.is_packed_struct``)."""
    return field_metadata.is_packed_struct(field, FileVersion.V2_0)


def column_count(field: pa.Field) -> int:
    """Columns a field occupies in a 2.0 file (itself plus its descendants)."""
    return field_metadata.column_count(field, FileVersion.V2_0)


def make_field_reader(ctx: FieldContext) -> FieldReader:
    from lancelot.encodings.v2_0.field_reader import FieldReader20

    return FieldReader20(ctx)
