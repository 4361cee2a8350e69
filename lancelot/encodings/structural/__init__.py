"""2.1+ structural encodings: mini-block, full-zip, constant/all-null and blob page
layouts, with repetition/definition levels (encodings_v2_1.proto, PageLayout).

The reader (lancelot/reader.py) uses ``column_count`` to allocate a field's
columns and ``make_field_reader`` to read it.
"""

from __future__ import annotations

from lancelot.encodings.base import FieldContext, FieldReader
from lancelot.encodings.structural.field import StructuralFieldReader
from lancelot.encodings.structural.paths import column_count, column_paths

__all__ = ["column_count", "column_paths", "make_field_reader"]


def make_field_reader(ctx: FieldContext) -> FieldReader:
    """The FieldReader of one top-level field of a 2.1/2.2 file."""
    return StructuralFieldReader(ctx)
