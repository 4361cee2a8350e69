"""Arrow extension types in Lance files and datasets.

A Lance field stores an extension type as its *storage* type (the logical type string says
``fixed_size_binary:16`` for ``arrow.uuid``), with the extension's name in ``Field.extension_name``
and, as pylance 14 writes them, both ``ARROW:extension:name`` and ``ARROW:extension:metadata``
(the serialized parameters, possibly empty) in the field's metadata.  Reading rebuilds the
extension type when it is registered in the process (pyarrow's canonical ones always are:
``arrow.uuid``, ``arrow.fixed_shape_tensor``, ``arrow.bool8``, ``arrow.opaque``...; Python
ones such as pylance's ``lance.bfloat16`` once their module is imported), exactly as pyarrow's
IPC reader does; an unregistered one stays its storage type with those two metadata keys.

``arrow.json`` (``pa.json_()``) is the one extension pylance rewrites rather than stores: a
top-level JSON column becomes ``large_binary`` JSONB values (``lancelot.jsonb``) under pylance's own
``lance.json`` name, logical type ``json``; a file reader returns those bytes as they are, a dataset
scan returns them as ``arrow.json`` text again (``dataset_schema`` / ``dataset_columns``).  JSON
nested in a struct or list is refused (``check_writable``).
"""

from __future__ import annotations

import pyarrow as pa

from lancelot import jsonb
from lancelot.errors import CorruptFileError, UnsupportedTypeError
from lancelot.util.c_schema import metadata_pairs

NAME_KEY = b"ARROW:extension:name"
META_KEY = b"ARROW:extension:metadata"
#: extensions read as their storage (the blob v2 description struct: ``lancelot.dataset.blob`` reads it)
KEPT_AS_STORAGE = frozenset({"lance.blob.v2"})
#: Arrow's JSON extension, and pylance's name for the JSONB it stores JSON columns as
ARROW_JSON, LANCE_JSON = "arrow.json", "lance.json"
#: the field metadata of a stored JSON column
LANCE_JSON_METADATA = {NAME_KEY: LANCE_JSON.encode(), META_KEY: b""}


def is_extension(t: pa.DataType) -> bool:
    """An extension type: pyarrow's C++ canonical ones and Python ``pa.ExtensionType`` subclasses."""
    return isinstance(t, pa.BaseExtensionType)


def serialize(t: pa.DataType) -> bytes:
    """The serialized parameters of an extension type (``ARROW:extension:metadata``)."""
    if isinstance(t, pa.ExtensionType):
        return bytes(t.__arrow_ext_serialize__())
    return dict(metadata_pairs(pa.field("x", t))).get(META_KEY, b"")


def is_arrow_json(t: pa.DataType) -> bool:
    return is_extension(t) and t.extension_name == ARROW_JSON


def check_writable(t: pa.DataType, name: str, top: bool = True) -> None:
    """Refuse an extension type that pylance stores in a form lancelot does not write: ``arrow.json``
    below the top level of a field (at the top it becomes JSONB)."""
    if is_arrow_json(t) and not top:
        raise UnsupportedTypeError(
            f"field {name!r} holds a JSON ({t}) column inside a struct or list: not writable "
            "(JSON columns are written at the top level only)",
            column=name,
        )
    if is_extension(t):
        check_writable(t.storage_type, name, False)
        return
    for i in range(t.num_fields):
        check_writable(t.field(i).type, name, False)


def stored_array(col: pa.Array | pa.ChunkedArray, stored: pa.DataType) -> pa.Array | pa.ChunkedArray | None:
    """A top-level column of an extension type as its stored values (JSON text as JSONB), None when
    plain storage does (the caller casts)."""
    if is_arrow_json(col.type) and pa.types.is_large_binary(stored):
        return jsonb.encode_array(col)
    return None


def _is_lance_json(f: pa.Field) -> bool:
    return bool(f.metadata) and f.metadata.get(NAME_KEY) == LANCE_JSON.encode() and pa.types.is_large_binary(f.type)


def dataset_schema(schema: pa.Schema) -> pa.Schema:
    """The schema a dataset shows (pylance's): JSONB columns as ``arrow.json`` (string storage)."""
    if not any(_is_lance_json(f) for f in schema):
        return schema
    fields = [
        pa.field(f.name, pa.json_(), f.nullable, {k: v for k, v in f.metadata.items() if k not in LANCE_JSON_METADATA})
        if _is_lance_json(f)
        else f
        for f in schema
    ]
    return pa.schema(fields, metadata=schema.metadata)


def dataset_columns(table: pa.Table) -> list[pa.ChunkedArray | pa.Array]:
    """The columns of a data file's ``table`` as a dataset scan returns them: JSONB as JSON text."""
    out = []
    for f, col in zip(table.schema, table.columns):
        if _is_lance_json(f):
            try:
                col = jsonb.decode_array(col)
            except CorruptFileError as e:
                raise CorruptFileError(f"column {f.name!r}: {e.message}", column=f.name) from None
        out.append(col)
    return out


def resolve_field(field: pa.Field) -> pa.Field:
    """``field`` with the extension types registered in this process rebuilt from their metadata
    (at any depth), as pyarrow's IPC reader rebuilds them; the field itself when there are none,
    or when a registered type refuses its stored parameters, or one of ``KEPT_AS_STORAGE`` is in it."""
    names = _extension_names(field)
    if not names or names & KEPT_AS_STORAGE:
        return field
    try:
        return pa.ipc.read_schema(pa.py_buffer(pa.schema([field]).serialize())).field(0)
    except (pa.ArrowException, ValueError, TypeError, KeyError):
        return field


def _extension_names(field: pa.Field) -> set[str]:
    """The extension names in the metadata of ``field`` and its children."""
    out = set()
    if field.metadata and NAME_KEY in field.metadata:
        out.add(field.metadata[NAME_KEY].decode("utf-8", "replace"))
    t = field.type
    if not pa.types.is_dictionary(t):
        for i in range(t.num_fields):
            out |= _extension_names(t.field(i))
    return out


def resolve_schema(schema: pa.Schema) -> pa.Schema:
    """``resolve_field`` of every field."""
    fields = [resolve_field(f) for f in schema]
    if all(a is b for a, b in zip(fields, schema)):
        return schema
    return pa.schema(fields, metadata=schema.metadata)


def view_as(arr: pa.Array | pa.ChunkedArray, t: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """The storage array ``arr`` seen as type ``t`` (the same layout with extension types in it; zero-copy)."""
    if arr.type == t:
        return arr
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([c.view(t) for c in arr.chunks], t)
    return arr.view(t)
