"""Arrow extension types in Lance files and datasets.

A Lance field stores an extension type as its *storage* type (the logical type string says ``fixed_size_binary:16`` for
``arrow.uuid``), with the extension's name in ``Field.extension_name`` and, as pylance 14 writes them, both
``ARROW:extension:name`` and ``ARROW:extension:metadata`` (the serialized parameters, possibly empty) in the field's
metadata.  Reading rebuilds the extension type when it is registered in the process (pyarrow's canonical ones always
are: ``arrow.uuid``, ``arrow.fixed_shape_tensor``, ``arrow.bool8``, ``arrow.opaque``...; Python ones such as pylance's
``lance.bfloat16`` once their module is imported), exactly as pyarrow's IPC reader does; an unregistered one stays its
storage type with those two metadata keys.

``arrow.json`` (``pa.json_()``) is the one extension pylance rewrites rather than stores: a JSON field (a column, or a
field inside structs and lists) becomes ``large_binary`` JSONB values (``lancelot.jsonb``) under pylance's own
``lance.json`` name, logical type ``json``; a file reader returns those bytes as they are, a dataset scan returns them
as ``arrow.json`` text again (``dataset_schema`` / ``dataset_columns``), at any depth (structs, lists, maps)."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

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


def check_writable(t: pa.DataType, name: str) -> None:
    """Refuse an extension type lancelot cannot store as pylance does.  None left: ``arrow.json`` is JSONB at any depth
    (struct, list, map), the others their storage (``schema.normalize_field`` refuses a storage Lance has no type for,
    naming the extension)."""
    del t, name


def _holds_json(t: pa.DataType) -> bool:
    """``arrow.json`` in ``t`` or below it (not inside another extension's storage)."""
    if is_arrow_json(t):
        return True
    if is_extension(t) or pa.types.is_dictionary(t):
        return False
    return any(_holds_json(t.field(i).type) for i in range(t.num_fields))


def stored_array(col: pa.Array | pa.ChunkedArray, stored: pa.DataType) -> pa.Array | pa.ChunkedArray | None:
    """A column holding ``arrow.json`` (at the top level or in structs and lists) as its stored values, JSON text as
    JSONB; None when plain storage does (the caller casts)."""
    if not _holds_json(col.type):
        return None
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array([_to_stored(c, stored) for c in col.chunks], stored)
    return _to_stored(col, stored)


def _mask(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


def _to_stored(arr: pa.Array, stored: pa.DataType) -> pa.Array:
    """``arr`` as values of its stored type ``stored``: JSON text as JSONB, at any struct / list depth."""
    if is_arrow_json(arr.type):
        return jsonb.encode_array(arr)
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    if not _holds_json(arr.type):
        return arr if arr.type == stored else arr.cast(stored)
    kids = child_fields(stored)
    return map_child_arrays(arr, stored, lambda child, i: _to_stored(child, kids[i].type))


def child_fields(t: pa.DataType) -> list[pa.Field]:
    """The children of a nested type as ``map_child_arrays`` numbers them: a struct's fields, a list's item, a map's
    key and item."""
    if pa.types.is_struct(t):
        return [t.field(i) for i in range(t.num_fields)]
    return [t.key_field, t.item_field] if pa.types.is_map(t) else [t.value_field]


def map_child_arrays(arr: pa.Array, out: pa.DataType, fn: Callable[[pa.Array, int], pa.Array]) -> pa.Array:
    """``arr`` (a struct, a list of any kind or a map) as type ``out``, each child (``child_fields``' number ``i``)
    replaced by ``fn(child, i)``; validity kept, list offsets rebased to 0 (the child passed is the span they cover:
    pyarrow builds no list from sliced offsets with a null mask).  The one rebuild the JSON and blob rewrites share."""
    t = arr.type
    if pa.types.is_struct(t):
        children = [fn(arr.field(i), i) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=child_fields(out), mask=_mask(arr))
    if pa.types.is_fixed_size_list(t):
        values = fn(arr.values.slice(arr.offset * t.list_size, len(arr) * t.list_size), 0)
        return pa.FixedSizeListArray.from_arrays(values, type=out, mask=_mask(arr))
    if not (pa.types.is_map(t) or pa.types.is_list(t) or pa.types.is_large_list(t)):
        raise UnsupportedTypeError(f"JSON inside {t} is not writable")
    offs = arr.offsets
    start = int(offs[0].as_py()) if len(offs) else 0
    n = (int(offs[-1].as_py()) if len(offs) else 0) - start
    offs = pc.subtract(offs, pa.scalar(start, offs.type))
    if pa.types.is_map(t):
        keys, items = fn(arr.keys.slice(start, n), 0), fn(arr.items.slice(start, n), 1)
        return pa.MapArray.from_arrays(offs, keys, items, type=out, mask=_mask(arr))
    cls = pa.LargeListArray if pa.types.is_large_list(out) else pa.ListArray
    return cls.from_arrays(offs, fn(arr.values.slice(start, n), 0), type=out, mask=_mask(arr))


def _is_jsonb(f: pa.Field) -> bool:
    """A stored JSON field: JSONB (``large_binary``) under the ``lance.json`` name."""
    return bool(f.metadata) and f.metadata.get(NAME_KEY) == LANCE_JSON.encode() and pa.types.is_large_binary(f.type)


def holds_lance_json(f: pa.Field) -> bool:
    """``f`` or a field below it is stored JSON (what a dataset scan turns back into text)."""
    if _is_jsonb(f):
        return True
    t = f.type
    if is_extension(t) or pa.types.is_dictionary(t):
        return False
    return any(holds_lance_json(t.field(i)) for i in range(t.num_fields))


def _json_field(f: pa.Field) -> pa.Field:
    """The field a dataset shows for a stored one: JSONB as ``arrow.json``, at any depth."""
    if _is_jsonb(f):
        md = {k: v for k, v in f.metadata.items() if k not in LANCE_JSON_METADATA}
        return pa.field(f.name, pa.json_(), f.nullable, md or None)
    if not holds_lance_json(f):
        return f
    return map_children(f, _json_field)


def map_children(f: pa.Field, fn: Callable[[pa.Field], pa.Field]) -> pa.Field:
    """``f`` with ``fn`` applied to its child fields when it is a struct, list (of any kind) or map; other fields as
    they are.  The one rebuild the JSON and blob schema rewrites share."""
    t = f.type
    if pa.types.is_struct(t):
        nt: pa.DataType = pa.struct([fn(t.field(i)) for i in range(t.num_fields)])
    elif pa.types.is_large_list(t):
        nt = pa.large_list(fn(t.value_field))
    elif pa.types.is_fixed_size_list(t):
        nt = pa.list_(fn(t.value_field), t.list_size)
    elif pa.types.is_list(t):
        nt = pa.list_(fn(t.value_field))
    elif pa.types.is_map(t):
        nt = pa.map_(fn(t.key_field), fn(t.item_field), t.keys_sorted)
    else:
        return f
    return pa.field(f.name, nt, f.nullable, f.metadata)


def dataset_schema(schema: pa.Schema) -> pa.Schema:
    """The schema a dataset shows (pylance's): JSONB fields as ``arrow.json`` (string storage)."""
    if not any(holds_lance_json(f) for f in schema):
        return schema
    return pa.schema([_json_field(f) for f in schema], metadata=schema.metadata)


def _decoded(arr: pa.Array, f: pa.Field) -> pa.Array:
    """The values of stored field ``f`` as a dataset scan returns them (JSONB as JSON text)."""
    if _is_jsonb(f):
        return jsonb.decode_array(arr)
    if not holds_lance_json(f):
        return arr
    kids = child_fields(f.type)
    return map_child_arrays(arr, _json_field(f).type, lambda child, i: _decoded(child, kids[i]))


def dataset_columns(table: pa.Table) -> list[pa.ChunkedArray | pa.Array]:
    """The columns of a data file's ``table`` as a dataset scan returns them: JSONB as JSON text."""
    out = []
    for f, col in zip(table.schema, table.columns):
        if holds_lance_json(f):
            try:
                chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
                parts = [_decoded(c, f) for c in chunks]
                col = (
                    pa.chunked_array(parts, _json_field(f).type) if parts else pa.chunked_array([], _json_field(f).type)
                )
            except CorruptFileError as e:
                raise CorruptFileError(f"column {f.name!r}: {e.message}", column=f.name) from None
        out.append(col)
    return out


def resolve_field(field: pa.Field) -> pa.Field:
    """``field`` with the extension types registered in this process rebuilt from their metadata (at any depth), as
    pyarrow's IPC reader rebuilds them; the field itself when there are none, or when a registered type refuses its
    stored parameters, or one of ``KEPT_AS_STORAGE`` is in it."""
    names = extension_names(field)
    if not names or names & KEPT_AS_STORAGE:
        return field
    try:
        return pa.ipc.read_schema(pa.py_buffer(pa.schema([field]).serialize())).field(0)
    except (pa.ArrowException, ValueError, TypeError, KeyError):
        return field


def extension_names(field: pa.Field) -> set[str]:
    """The extension names in the metadata of ``field`` and its children."""
    out = set()
    if field.metadata and NAME_KEY in field.metadata:
        out.add(field.metadata[NAME_KEY].decode("utf-8", "replace"))
    t = field.type
    if not pa.types.is_dictionary(t):
        for i in range(t.num_fields):
            out |= extension_names(t.field(i))
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
    if pa.types.is_null(arr.type) and isinstance(t, pa.BaseExtensionType):  # a view keeps no null count
        if isinstance(arr, pa.ChunkedArray):
            return pa.chunked_array([pa.ExtensionArray.from_storage(t, c) for c in arr.chunks], t)
        return pa.ExtensionArray.from_storage(t, arr)
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([c.view(t) for c in arr.chunks], t)
    return arr.view(t)
