"""Arrow field metadata that changes how Lance stores a field, and the column-allocation rules.

One module owns these rules so that the 2.0 and 2.1+ readers and writers agree on them
(format.md "Field metadata"; encoding.md "Structural Encoding", "Packed Struct", "Blob").
The values are pylance 14.0.2's, checked against files it writes (tests/file/test_field_metadata.py):

* ``lance-encoding:packed`` / ``packed`` on a struct: one packed-struct column.  A value is
  *truthy* when it is ``true``, ``1``, ``yes``, ``y`` or ``on`` (any case, nothing stripped).
  At 2.1+ the struct is packed when either key is truthy.  At 2.0 the bare ``packed`` key decides
  when present (truthy), otherwise the mere presence of ``lance-encoding:packed`` does, whatever
  its value.  (pylance's 2.1+ *reader* accepts only ``true``: it cannot read back its own file of a
  struct packed with ``1``; its 2.0 reader cannot read its own ``lance-encoding:packed=false``.
  lancelot reads and writes the layout pylance's writer produces.)
* ``lance-encoding:blob`` on a binary / large-binary field: values stored out of line (2.1+ blob
  layout; 2.0 a packed descriptor struct).  The key's presence is the flag: ``false`` is a blob too.
  On a packed struct it marks a 2.2 dataset's blob v2 description column (an ordinary packed struct
  to the file layer; ``lancelot.dataset.blob`` reads it).
* the other ``lance-encoding:*`` keys choose compression (``encodings/strategy.py`` reads them).

Column allocation: a 2.0 file has one column per field in pre-order (structs and lists included,
a packed struct's children excluded); a 2.1+ file one column per leaf (primitives, fixed-size lists
of fixed-width values, packed structs, blobs, structs without children).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from lancelot.format.pb import file_pb2

PREFIX = "lance-encoding:"
PACKED_KEY = PREFIX + "packed"
LEGACY_PACKED_KEY = "packed"
BLOB_KEY = PREFIX + "blob"
COMPRESSION_KEY = PREFIX + "compression"
STRUCTURAL_ENCODING_KEY = PREFIX + "structural-encoding"
#: the values pylance's writer takes for "yes" (compared case-insensitively, not stripped)
TRUTHY = ("true", "1", "yes", "y", "on")


def _text(v: bytes | str) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def metadata_of(field: pa.Field) -> dict[str, str]:
    """The field's metadata as text (Arrow keeps it as bytes)."""
    return {_text(k): _text(v) for k, v in (field.metadata or {}).items()}


def value(field: pa.Field, key: str) -> str | None:
    """The value of one metadata key of ``field`` (None when absent)."""
    md = field.metadata
    if not md:
        return None
    raw = md.get(key.encode())
    return None if raw is None else _text(raw)


def is_truthy(text: str | None) -> bool:
    """Whether a flag's value means yes (pylance's set of spellings)."""
    return text is not None and text.lower() in TRUTHY


def is_structural(version: str) -> bool:
    """2.1 and later: only leaves own columns."""
    from lancelot.versions import parse  # versions imports the error classes only: no cycle at run time

    return parse(version).structural


def is_packed_struct(field: pa.Field, version: str) -> bool:
    """A struct stored as one packed-struct column in a file of ``version``."""
    if not pa.types.is_struct(field.type):
        return False
    return _packed(value(field, LEGACY_PACKED_KEY), value(field, PACKED_KEY), version)


def column_owners(fields: Sequence[file_pb2.Field], version: str) -> list[file_pb2.Field]:
    """The fields of a Lance schema (pre-order) that own the columns of a file of ``version``, in column order: at 2.0
    every field, at 2.1+ the leaves; a packed struct owns one column and its descendants none.  Their ids are a
    ``DataFile``'s ``fields`` as pylance writes them (a packed struct's children listed would shift every later
    column)."""
    inside: set[int] = set()  # the ids of packed structs and their descendants
    for f in fields:
        md = f.metadata
        raw = md.get(LEGACY_PACKED_KEY), md.get(PACKED_KEY)
        legacy, key = (None if r is None else _text(r) for r in raw)
        if f.parent_id in inside or (f.logical_type == "struct" and _packed(legacy, key, version)):
            inside.add(f.id)
    owned = [f for f in fields if f.parent_id not in inside]
    if not is_structural(version):
        return owned
    parents = {f.parent_id for f in owned}
    return [f for f in owned if f.id not in parents or f.id in inside]


def _packed(legacy: str | None, key: str | None, version: str) -> bool:
    if is_structural(version):
        return is_truthy(legacy) or is_truthy(key)
    if legacy is not None:
        return is_truthy(legacy)
    return key is not None


def is_blob(field: pa.Field) -> bool:
    """A binary field whose values are stored out of line (the blob key is present, any value)."""
    return value(field, BLOB_KEY) is not None and (
        pa.types.is_binary(field.type) or pa.types.is_large_binary(field.type)
    )


def asks_blob(field: pa.Field) -> bool:
    """The blob key is present (on a type that may not support it: writers refuse those), except on
    a blob v2 description column (``is_blob_description``), which is written as a packed struct."""
    return value(field, BLOB_KEY) is not None and not is_blob_description(field)


def is_blob_description(field: pa.Field) -> bool:
    """The column of a 2.2 dataset's blob v2 field as its data file stores it: a struct (kind,
    position, size, blob_id, blob_uri) with the blob key and a truthy packed key, a packed struct."""
    return (
        pa.types.is_struct(field.type)
        and value(field, BLOB_KEY) is not None
        and (is_truthy(value(field, PACKED_KEY)) or is_truthy(value(field, LEGACY_PACKED_KEY)))
    )


def is_fixed_width(t: pa.DataType) -> bool:
    """A type whose every value has the same number of bits: booleans, numbers, decimals, dates and
    times, fixed-size binary, and fixed-size lists of those (dictionary and null types are not)."""
    if pa.types.is_fixed_size_list(t):
        return is_fixed_width(t.value_type)
    if pa.types.is_dictionary(t) or pa.types.is_null(t):
        return False
    if pa.types.is_boolean(t):
        return True
    try:
        return int(t.bit_width) > 0
    except ValueError:
        return False


def is_variable_width(t: pa.DataType) -> bool:
    """Strings and binary, small or large."""
    return bool(
        pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)
    )


def is_list_like(t: pa.DataType) -> bool:
    """Types stored through repetition levels (2.1+) or an offsets column (2.0): lists and maps."""
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t))


def owns_column(field: pa.Field, version: str) -> bool:
    """Whether the field is a leaf that owns a column of its own and no column below it.

    2.0: packed structs and every non-struct, non-list field.  2.1+: packed structs, blobs, structs
    without children, fixed-size lists of fixed-width values and every other non-nested type.
    """
    t = field.type
    if is_packed_struct(field, version):
        return True
    if pa.types.is_struct(t):
        return is_structural(version) and t.num_fields == 0
    if not is_structural(version):  # 2.0 has list columns, no map columns (maps need 2.2)
        return not (pa.types.is_list(t) or pa.types.is_large_list(t))
    if is_list_like(t):
        return False
    if is_blob(field):
        return True
    if pa.types.is_fixed_size_list(t):
        return is_fixed_width(t.value_type)
    return True


def children(field: pa.Field) -> list[pa.Field]:
    """The child fields walked for column allocation (a map's key and value, a list's item...)."""
    t = field.type
    if pa.types.is_struct(t):
        return [t.field(i) for i in range(t.num_fields)]
    if pa.types.is_map(t):
        return [t.key_field, t.item_field]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [t.value_field]
    return []


def column_count(field: pa.Field, version: str) -> int:
    """How many columns a top-level field owns in a file of ``version``."""
    if owns_column(field, version):
        return 1
    own = 0 if is_structural(version) else 1  # 2.0: structs and lists own a column too
    return own + sum(column_count(c, version) for c in children(field))
