"""Arrow schema <-> the lance.file ``FileDescriptor`` stored in global buffer 0.

The schema is a flat, pre-order list of ``Field`` messages linked by ``id`` and
``parent_id`` (-1 at the top level); each field's Arrow type is a *logical type*
string such as ``int64``, ``timestamp:us:UTC``, ``fixed_size_list:float:128``
or ``dict:string:int32:false``.  Lists and structs carry their children as
separate fields; fixed-size lists and dictionaries encode their inner type in
the string.  Field and schema metadata are maps of bytes.
"""

from __future__ import annotations

import pyarrow as pa

from lancelot import extension_types, field_metadata
from lancelot.errors import CorruptFileError, UnsupportedTypeError
from lancelot.format.pb import file_pb2
from lancelot.util.types import is_binary_like, is_string_like

EXT_NAME_KEY = extension_types.NAME_KEY
#: Arrow field metadata marking a field of the unenforced primary key (file.proto Field.unenforced_primary_key)
PRIMARY_KEY_KEY = "lance-schema:unenforced-primary-key"

_SIMPLE: dict[str, pa.DataType] = {
    "null": pa.null(),
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "uint8": pa.uint8(),
    "int16": pa.int16(),
    "uint16": pa.uint16(),
    "int32": pa.int32(),
    "uint32": pa.uint32(),
    "int64": pa.int64(),
    "uint64": pa.uint64(),
    "halffloat": pa.float16(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "large_string": pa.large_string(),
    "large_binary": pa.large_binary(),
    "json": pa.large_binary(),
    "date32:day": pa.date32(),
    "date64:ms": pa.date64(),
}
#: pylance's bfloat16 extension: a vector of it has a logical type of its own
BFLOAT16 = "lance.bfloat16"
_BFLOAT16_ITEM_METADATA = {EXT_NAME_KEY: BFLOAT16.encode(), extension_types.META_KEY: b""}


def _is_bfloat16(f: pa.Field) -> bool:
    """A bfloat16 field, as an extension type or as its stored form (fixed_size_binary:2 and the name)."""
    if extension_types.is_extension(f.type):
        return bool(f.type.extension_name == BFLOAT16)
    return (
        pa.types.is_fixed_size_binary(f.type)
        and f.type.byte_width == 2
        and (f.metadata or {}).get(EXT_NAME_KEY) == BFLOAT16.encode()
    )


_SIMPLE_NAMES = {str(t): name for name, t in _SIMPLE.items() if name != "json"}
_UNITS = {"s", "ms", "us", "ns"}


def _struct_item(f: pa.Field) -> bool:
    """A list's items are structs ("list.struct"), except blob v2 items written from bytes: pylance names
    the list by the bytes it was given ("list"); those given as ``lance.blob_array`` structs carry the
    extension's (empty) serialized metadata and keep "list.struct"."""
    md = f.metadata or {}
    if md.get(b"ARROW:extension:name") == b"lance.blob.v2" and b"ARROW:extension:metadata" not in md:
        return False
    return bool(pa.types.is_struct(f.type))


def logical_type(t: pa.DataType) -> str:
    """The logical type string of an Arrow type (children are separate fields)."""
    if pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary_view(t):
        return "binary"
    key = str(t)
    if key in _SIMPLE_NAMES and not pa.types.is_timestamp(t):
        return _SIMPLE_NAMES[key]
    if pa.types.is_decimal128(t) or pa.types.is_decimal256(t):
        return f"decimal:{t.bit_width}:{t.precision}:{t.scale}"
    for head in ("time32", "time64", "duration"):  # "<head>:<unit>", as parse_logical_type reads them
        if getattr(pa.types, f"is_{head}")(t):
            return f"{head}:{t.unit}"
    if pa.types.is_timestamp(t):
        return f"timestamp:{t.unit}:{t.tz if t.tz else '-'}"
    if pa.types.is_struct(t):
        return "struct"
    if pa.types.is_map(t):
        return "map"
    if pa.types.is_list(t) or pa.types.is_list_view(t):
        return "list.struct" if _struct_item(t.value_field) else "list"
    if pa.types.is_large_list(t) or pa.types.is_large_list_view(t):
        return "large_list.struct" if _struct_item(t.value_field) else "large_list"
    if pa.types.is_fixed_size_list(t):
        if _is_bfloat16(t.value_field):
            return f"fixed_size_list:{BFLOAT16}:{t.list_size}"
        return f"fixed_size_list:{logical_type(t.value_type)}:{t.list_size}"
    if pa.types.is_fixed_size_binary(t):
        return f"fixed_size_binary:{t.byte_width}"
    if pa.types.is_dictionary(t):
        return f"dict:{logical_type(t.value_type)}:{logical_type(t.index_type)}:false"
    raise UnsupportedTypeError(f"Arrow type {t} has no Lance logical type")


def parse_logical_type(lt: str) -> pa.DataType:
    """The Arrow type of a logical type string, for types without child fields."""
    if lt in _SIMPLE:
        return _SIMPLE[lt]
    parts = lt.split(":")
    head = parts[0]
    try:
        if head in ("time32", "time64", "duration") and len(parts) == 2 and parts[1] in _UNITS:
            return getattr(pa, head)(parts[1])
        if head == "timestamp" and len(parts) >= 3 and parts[1] in _UNITS:
            tz = ":".join(parts[2:])
            return pa.timestamp(parts[1], None if tz == "-" else tz)
        if head == "decimal" and len(parts) == 4:
            bits, p, s = int(parts[1]), int(parts[2]), int(parts[3])
            return (pa.decimal128 if bits == 128 else pa.decimal256)(p, s)
        if head == "fixed_size_binary" and len(parts) == 2:
            return pa.binary(int(parts[1]))
        if head == "fixed_size_list" and len(parts) >= 3:
            inner = ":".join(parts[1:-1])
            if inner == BFLOAT16:  # a vector of pylance's bfloat16 extension
                return pa.list_(pa.field("item", pa.binary(2), True, _BFLOAT16_ITEM_METADATA), int(parts[-1]))
            return pa.list_(pa.field("item", parse_logical_type(inner), True), int(parts[-1]))
        if head == "dict" and len(parts) >= 4:
            value = parse_logical_type(":".join(parts[1:-2]))
            index = parse_logical_type(parts[-2])
            return pa.dictionary(index, value)
    except (ValueError, TypeError) as e:
        raise CorruptFileError(f"bad logical type {lt!r}: {e}") from None
    raise UnsupportedTypeError(f"unknown logical type {lt!r}")


def _encoding_tag(t: pa.DataType) -> int:
    """The legacy Field.encoding tag pylance sets (PLAIN / VAR_BINARY / DICTIONARY)."""
    if pa.types.is_dictionary(t):
        return file_pb2.DICTIONARY
    if is_string_like(t) or is_binary_like(t):
        return file_pb2.VAR_BINARY
    if pa.types.is_struct(t) or pa.types.is_null(t):
        return file_pb2.NONE
    return file_pb2.PLAIN


def normalize_type(t: pa.DataType) -> pa.DataType:
    """The type as stored: views become their plain equivalents, extensions their storage."""
    if extension_types.is_extension(t):
        return normalize_type(t.storage_type)
    if pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_list_view(t):
        return pa.list_(normalize_field(t.value_field))
    if pa.types.is_large_list_view(t):
        return pa.large_list(normalize_field(t.value_field))
    if pa.types.is_list(t):
        return pa.list_(normalize_field(t.value_field))
    if pa.types.is_large_list(t):
        return pa.large_list(normalize_field(t.value_field))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(normalize_field(t.value_field), t.list_size)
    if pa.types.is_map(t):
        return pa.map_(normalize_field(t.key_field), normalize_field(t.item_field), t.keys_sorted)
    if pa.types.is_struct(t):
        return pa.struct([normalize_field(t.field(i)) for i in range(t.num_fields)])
    return t


def normalize_field(f: pa.Field) -> pa.Field:
    """The field as stored: an extension type becomes its storage type with the extension's name and
    serialized parameters in the field's metadata (both keys, as pylance writes them), at any depth."""
    md = dict(f.metadata or {})
    if extension_types.is_arrow_json(f.type):  # pylance's JSONB column
        md.update(extension_types.LANCE_JSON_METADATA)
        return pa.field(f.name, pa.large_binary(), f.nullable, md)
    if extension_types.is_extension(f.type):
        extension_types.check_writable(f.type, f.name)
        md[EXT_NAME_KEY] = f.type.extension_name.encode()
        md[extension_types.META_KEY] = extension_types.serialize(f.type)
        stored = normalize_type(f.type)
        try:
            logical_type(stored)
        except UnsupportedTypeError:
            raise UnsupportedTypeError(
                f"field {f.name!r} of extension type {f.type} is not writable: Lance stores no {stored} (its storage)",
                column=f.name,
            ) from None
        return pa.field(f.name, stored, f.nullable, md)
    return pa.field(f.name, normalize_type(f.type), f.nullable, md or None)


class Normalized:
    """A schema as Lance files store it (``normalize_schema``), its FileDescriptor fields (made once) and, in
    ``derived``, what a writer derives from it per version and profile (lancelot/writer.py)."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema, self.derived = schema, dict[object, object]()
        self._fields: file_pb2.FileDescriptor | None = None

    def descriptor(self, num_rows: int) -> file_pb2.FileDescriptor:
        """The FileDescriptor of a file of this schema and ``num_rows`` rows (global buffer 0)."""
        if self._fields is None:
            self._fields = _descriptor_schema(self.schema)
        out = file_pb2.FileDescriptor(length=num_rows)
        out.schema.CopyFrom(self._fields.schema)
        return out


#: ``Normalized`` of recent schemas by ``_key``: one append after another writes the same schema (a dataset
#: write normalizes it several times); cleared when CACHED are held
_NORMALIZED: dict[tuple[bytes, str], Normalized] = {}
CACHED = 64
#: the same by the schema object (held, so its id is not reused): a schema met again is not serialized again
_BY_ID: dict[int, tuple[pa.Schema, Normalized]] = {}


def _key(schema: pa.Schema) -> tuple[bytes, str]:
    """What normalizing depends on: the IPC form (every field's and the schema's metadata, at any depth)
    and the printed types (extension types by their class, which the IPC form leaves out)."""
    return schema.serialize().to_pybytes(), str(schema)


def normalize_schema(schema: pa.Schema) -> pa.Schema:
    """The schema as a Lance file stores it (see ``normalize_type``; JSON only at the top level)."""
    return normalized(schema).schema


def normalized(schema: pa.Schema) -> Normalized:
    """``normalize_schema`` with what is derived from it (one object per schema while cached)."""
    same = _BY_ID.get(id(schema))
    if same is not None and same[0] is schema:  # (a writer given the stored schema normalize_schema returned)
        return same[1]
    key = _key(schema)
    hit = _NORMALIZED.get(key)
    if hit is not None:
        _remember(schema, hit)
        return hit
    for f in schema:
        extension_types.check_writable(f.type, f.name)
    out = Normalized(pa.schema([normalize_field(f) for f in schema], metadata=schema.metadata))
    if len(_NORMALIZED) >= CACHED:
        _NORMALIZED.clear()
    _NORMALIZED[key] = out
    _remember(schema, out)
    return out


def _remember(schema: pa.Schema, out: Normalized) -> None:
    if len(_BY_ID) >= CACHED:
        _BY_ID.clear()
    _BY_ID[id(schema)] = (schema, out)


def _children(t: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(t):
        return [t.field(i) for i in range(t.num_fields)]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [t.value_field]
    if pa.types.is_map(t):
        return [pa.field("entries", pa.struct([t.key_field, t.item_field]), False)]
    if pa.types.is_fixed_size_list(t) and _nested(t.value_type):
        return [t.value_field]  # pylance 14 lists the item field of a vector of structs/lists
    return []


def _nested(t: pa.DataType) -> bool:
    return (
        pa.types.is_struct(t)
        or pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_map(t)
        or (pa.types.is_fixed_size_list(t) and _nested(t.value_type))
    )


def to_descriptor(schema: pa.Schema, num_rows: int) -> file_pb2.FileDescriptor:
    """Flatten an Arrow schema into the FileDescriptor pylance stores in global buffer 0."""
    return normalized(schema).descriptor(num_rows)


def _descriptor_schema(schema: pa.Schema) -> file_pb2.FileDescriptor:
    """A FileDescriptor without a length holding the fields of the normalized ``schema``."""
    out = file_pb2.FileDescriptor()
    next_id = 0

    def add(f: pa.Field, parent: int) -> None:
        nonlocal next_id
        fid = next_id
        next_id += 1
        md = {k.decode(): v for k, v in (f.metadata or {}).items()}
        ext = md.pop(EXT_NAME_KEY.decode(), b"").decode()
        pf = out.schema.fields.add(
            name=f.name,
            id=fid,
            parent_id=parent,
            logical_type="json" if ext == extension_types.LANCE_JSON else logical_type(f.type),
            nullable=f.nullable,
            encoding=_encoding_tag(f.type),
            extension_name=ext,
            unenforced_primary_key=md.get(PRIMARY_KEY_KEY, b"").decode().lower() in ("true", "1", "yes"),
        )
        for k, v in md.items():
            pf.metadata[k] = v
        if ext:  # pylance keeps the extension name in the metadata too
            pf.metadata[EXT_NAME_KEY.decode()] = ext.encode()
        if field_metadata.is_blob_description(f):  # pylance lists these children without ids
            for c in _children(f.type):
                out.schema.fields.add(
                    name=c.name,
                    id=-1,
                    parent_id=-1,
                    logical_type=logical_type(c.type),
                    nullable=c.nullable,
                    encoding=_encoding_tag(c.type),
                )
            return
        for c in _children(f.type):
            add(c, fid)

    for f in schema:
        add(f, -1)
    for k, v in (schema.metadata or {}).items():
        out.schema.metadata[k.decode()] = v
    return out


def _adopt_unnumbered(fields: list[file_pb2.Field]) -> list[file_pb2.Field]:
    """Give unnumbered fields (``id`` -1) their struct parent back.

    pylance 14 writes the schema of a 2.2 data file holding a blob v2 column with the blob
    description's children (``kind``, ``position``, ``size``, ``blob_id``, ``blob_uri``) right
    after their struct but with ``id`` and ``parent_id`` both -1.  A run of such fields that
    follows a struct without numbered children belongs to that struct: they are renumbered
    (negative ids below -1, never clashing with real ones) under it.  Files without id -1
    fields are returned unchanged."""
    if not any(f.id == -1 and f.parent_id == -1 for f in fields):
        return fields
    parents = {f.parent_id for f in fields if f.id != -1}
    out: list[file_pb2.Field] = []
    owner: int | None = None
    next_id = -2
    for f in fields:
        if f.id == -1 and f.parent_id == -1 and owner is not None:
            g = file_pb2.Field()
            g.CopyFrom(f)
            g.id, g.parent_id = next_id, owner
            next_id -= 1
            out.append(g)
            continue
        owner = f.id if f.logical_type == "struct" and f.id != -1 and f.id not in parents else None
        out.append(f)
    return out


def from_descriptor(fd: file_pb2.FileDescriptor) -> pa.Schema:
    """Rebuild the Arrow schema from a FileDescriptor, with the extension types registered in this
    process (``extension_types.resolve_schema`` of ``stored_schema``)."""
    return extension_types.resolve_schema(stored_schema(fd))


def stored_schema(fd: file_pb2.FileDescriptor) -> pa.Schema:
    """The Arrow schema of a FileDescriptor as stored: extension types as their storage types, with
    their name and parameters in the field metadata."""
    fields = _adopt_unnumbered(list(fd.schema.fields))
    kids: dict[int, list[file_pb2.Field]] = {}
    for f in fields:
        kids.setdefault(f.parent_id, []).append(f)

    def build(f: file_pb2.Field, depth: int = 0) -> pa.Field:
        if depth > 64:
            raise CorruptFileError("schema nests deeper than 64 levels (a cycle?)")
        lt = f.logical_type
        children = [build(c, depth + 1) for c in kids.get(f.id, []) if c.id != f.id]
        if lt == "struct":
            t = pa.struct(children)
        elif lt in ("list", "list.struct", "large_list", "large_list.struct"):
            if len(children) != 1:
                raise CorruptFileError(f"list field {f.name!r} has {len(children)} children")
            t = (pa.large_list if lt.startswith("large") else pa.list_)(children[0])
        elif lt == "map":
            if len(children) != 1 or not pa.types.is_struct(children[0].type) or children[0].type.num_fields != 2:
                raise CorruptFileError(f"map field {f.name!r} does not hold a key/value struct")
            entries = children[0].type
            t = pa.map_(entries.field(0), entries.field(1))
        elif lt.startswith("fixed_size_list:") and children:
            try:
                size = int(lt.rsplit(":", 1)[1])
            except ValueError:
                raise CorruptFileError(f"bad logical type {lt!r}") from None
            t = pa.list_(children[0], size)
        else:
            t = parse_logical_type(lt)
        md = {k.encode(): bytes(v) for k, v in f.metadata.items()}
        if f.extension_name:
            md[EXT_NAME_KEY] = f.extension_name.encode()
        return pa.field(f.name, t, f.nullable, md or None)

    top = [build(f) for f in kids.get(-1, [])]
    md = {k.encode(): bytes(v) for k, v in fd.schema.metadata.items()}
    return pa.schema(top, metadata=md or None)
