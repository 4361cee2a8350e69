"""Lance 2.0 array encodings (encodings_v2_0.proto): one column per field in pre-order (structs and lists included), a
tree of ArrayEncoding nodes per page.

Which fields own columns is decided by ``lancelot.field_metadata`` (shared with 2.1+)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from lancelot import field_metadata
from lancelot.util.types import is_variable
from lancelot.versions import FileVersion

if TYPE_CHECKING:
    from collections.abc import Sequence

    from lancelot.encodings.base import FieldContext, FieldReader
    from lancelot.format.pb import file2_pb2
    from lancelot.io.source import ByteSource


def is_packed_struct(field: pa.Field) -> bool:
    """A struct stored as one packed-struct column in a 2.0 file (``field_metadata.is_packed_struct``)."""
    return field_metadata.is_packed_struct(field, FileVersion.V2_0)


def column_count(field: pa.Field) -> int:
    """Columns a field occupies in a 2.0 file (itself plus its descendants)."""
    return field_metadata.column_count(field, FileVersion.V2_0)


def make_field_reader(ctx: FieldContext) -> FieldReader:
    from lancelot.encodings.v2_0.field_reader import FieldReader20

    return FieldReader20(ctx)


def columns_in_file(field: pa.Field, src: ByteSource, cols: Sequence[file2_pb2.ColumnMetadata], pos: int) -> int:
    """Columns a top-level field occupies in this 2.0 file: ``column_count``, except a string or binary field that an
    early 2.0 writer (Lance 0.13) stored as a List of UInt8, an offsets column then a bytes column (its first page's
    encoding is ``list``)."""
    n = 1 if not pa.types.is_nested(field.type) else column_count(field)  # (a leaf: one column)
    if n != 1 or not is_variable(field.type) or pos + 1 >= len(cols) or not cols[pos].pages:
        return n
    enc = cols[pos].pages[0].encoding
    if enc.WhichOneof("location") != "direct":  # what such writers wrote; never fetch more at open
        return n
    from lancelot.encodings.v2_0.page import direct_message
    from lancelot.format.pb import encodings_v2_0_pb2 as pb

    msg = direct_message(src, enc, pb.ArrayEncoding, column=pos, page=0)
    return 2 if msg is not None and msg.WhichOneof("array_encoding") == "list" else n
