"""The dataset schema of written data: field ids, file field lists, and whether appended data fits.

Table format, "Schema" and "Data files": a new schema's fields get ids pre-order from 0; data written to a
dataset keeps its ids, so files and manifest agree; a data file lists the ids it holds (every field at 2.0,
leaf fields at 2.1+).  An append must match the dataset's fields by path and type, nullability aside.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from lancelot import field_metadata
from lancelot.dataset import append_fill, blob_schema
from lancelot.dataset.manifest import ManifestFile, field_paths
from lancelot.dataset.memo import IdentityMemo
from lancelot.dataset.write_options import DEFAULT_MAX_ROWS_PER_FILE as DEFAULT_MAX_ROWS_PER_FILE
from lancelot.errors import DatasetSchemaError, LanceValueError
from lancelot.format.pb import file_pb2
from lancelot.schema import PRIMARY_KEY_KEY, to_descriptor

#: schema_fields' results by the Arrow schema's IPC bytes (pa.Schema's ``==`` ignores metadata)
_FIELDS = IdentityMemo(64)


def schema_fields(schema: pa.Schema) -> list[file_pb2.Field]:
    """The manifest's fields of a new schema: pre-order, ids from 0 (what pylance assigns).
    The descriptor is a pure function of the schema, so it is built once per schema; each call
    gets fields of its own (callers may change them)."""
    try:
        key = schema.serialize().to_pybytes()
    except (pa.ArrowException, TypeError, ValueError):  # a type IPC cannot carry: not cached
        return list(to_descriptor(schema, 0).schema.fields)
    raw = _FIELDS.recall(key, None, lambda: to_descriptor(schema, 0).schema.SerializeToString())
    return list(file_pb2.Schema.FromString(raw).fields)


def dataset_fields(schema: pa.Schema, base: ManifestFile | None, *, subset: bool = False) -> list[file_pb2.Field]:
    """The fields (with ids) data of ``schema`` is written and committed with: the dataset's own
    when it has the same schema (its ids may have gaps where columns were dropped), or with
    ``subset`` (an append) holds some of the dataset's fields; else fresh.
    write_fragments and commit both use this rule, so files and manifest always agree."""
    fields = schema_fields(schema)
    if base is not None and _type_key(base.manifest.fields) == _type_key(fields):
        out = []
        for theirs, mine in zip(base.manifest.fields, fields):  # the ids of the dataset, the metadata of the data
            f = file_pb2.Field()
            f.CopyFrom(theirs)
            f.metadata.clear()
            if mine.metadata:
                f.metadata.update(mine.metadata)
            out.append(f)
        return out
    if subset and base is not None:  # an append leaving nullable fields out
        by_path = field_paths(base.manifest.fields)
        given = field_paths(fields)
        if all(p in by_path and by_path[p].logical_type == m.logical_type for p, m in given.items()):
            out = []
            for p, m in given.items():
                g = file_pb2.Field()
                g.CopyFrom(by_path[p])
                g.metadata.clear()
                g.metadata.update(m.metadata)
                out.append(g)
            return out
    return fields


def check_metadata(schema: pa.Schema) -> None:
    """Refuse schema or field metadata that is not UTF-8 (pylance refuses it: a ValueError), and an unenforced
    primary key field (``lance-schema:unenforced-primary-key``) other than a non-nullable leaf outside lists (pylance:
    OSError)."""

    def check(md: dict[bytes, bytes] | None, where: str) -> None:
        for k, v in (md or {}).items():
            for what, b in (("key", k), ("value", v)):
                try:
                    b.decode("utf-8")
                except UnicodeDecodeError:
                    raise LanceValueError(
                        f"{where} metadata {what} {b!r} is not valid UTF-8 (encode binary metadata, e.g. as base64)"
                    ) from None

    def walk(f: pa.Field, path: str, bad: str | None) -> None:
        """``bad``: why a primary key may not be here (an ancestor's nullability or list type), None if it may."""
        check(f.metadata, f"field {path!r}")
        bad = bad or ("and all its ancestors must not be nullable" if f.nullable else None)
        children = _child_fields(f.type)
        if (f.metadata or {}).get(PRIMARY_KEY_KEY.encode(), b"").decode().lower() in ("true", "1", "yes"):
            why = "must be a leaf" if children else bad
            if why:
                raise DatasetSchemaError(f"field {path!r}: a primary key column {why}")
        inside = "must not be in a list type" if pa.types.is_list(f.type) or pa.types.is_large_list(f.type) else None
        for child in children:
            walk(child, f"{path}.{child.name}", bad or inside)

    check(schema.metadata, "schema")
    for f in schema:
        walk(f, f.name, None)


def _child_fields(t: pa.DataType) -> list[pa.Field]:
    if not t.num_fields:  # (a primitive)
        return []
    if pa.types.is_struct(t):
        return [t.field(i) for i in range(t.num_fields)]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [t.value_field]
    if pa.types.is_map(t):
        return [t.key_field, t.item_field]
    return []


def _field_paths(fields: Iterable[file_pb2.Field]) -> dict[str, str]:
    """{dotted path: logical type} of a manifest's (pre-order) fields."""
    return {path: f.logical_type for path, f in field_paths(fields).items()}


def schema_difference(dataset: Iterable[file_pb2.Field], data: Iterable[file_pb2.Field]) -> str | None:
    """How the data's fields differ from the dataset's, nullability aside (None: they match)."""
    theirs, mine = _field_paths(dataset), _field_paths(data)
    missing = [p for p in theirs if p not in mine and "." not in p]
    unexpected = [p for p in mine if p not in theirs and "." not in p]
    if missing or unexpected:
        return f"fields do not match: missing={missing}, unexpected={unexpected}"
    for path, lt in theirs.items():
        if path not in mine:
            return f"field {path!r} is missing from the data"
        if mine[path] != lt:
            return f"field {path!r} should have type {lt} but the data's is {mine[path]}"
    extra = [p for p in mine if p not in theirs]
    if extra:
        return f"field {extra[0]!r} is not in the dataset"
    if list(theirs) != list(mine):
        return f"the fields are in another order: {list(mine)} (the dataset's: {list(theirs)})"
    return None


def _null_free(col: pa.Array | pa.ChunkedArray, field: pa.Field, path: str, uri: str) -> None:
    """Refuse nulls in a column (or a struct child) whose dataset field is not nullable."""
    if not field.nullable and col.null_count:
        raise DatasetSchemaError(
            f"dataset {uri!r}: the field {path!r} contains null values, but it is marked non-null in the "
            "dataset's schema"
        )
    if pa.types.is_struct(field.type):
        chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
        for i in range(field.type.num_fields):
            child = field.type.field(i)
            for c in chunks:
                _null_free(c.field(i), child, f"{path}.{child.name}", uri)


def fit_to_dataset(batch: pa.RecordBatch, target: pa.Schema, uri: str) -> pa.RecordBatch:
    """An appended batch in the dataset's schema: data that is nullable where the dataset's field is
    not is accepted when it holds no nulls there (as pylance accepts it)."""
    if batch.schema.equals(target, check_metadata=False):
        return pa.RecordBatch.from_arrays(batch.columns, schema=target)
    cols = []
    for col, field in zip(batch.columns, target):
        _null_free(col, field, field.name, uri)
        cols.append(_cast(col, field.type))
    return pa.RecordBatch.from_arrays(cols, schema=target)


def _cast(col: pa.Array, to: pa.DataType) -> pa.Array:
    """``col`` as type ``to``; an extension type (arrow.json over string vs large_string...) through
    its storage, which pyarrow will not cast between extension types itself."""
    if col.type == to:
        return col
    if isinstance(to, pa.BaseExtensionType):
        storage = col.storage if isinstance(col.type, pa.BaseExtensionType) else col
        return pa.ExtensionArray.from_storage(to, storage.cast(to.storage_type))
    return col.cast(to)


def schema_metadata(schema: pa.Schema) -> dict[str, bytes]:
    return {k.decode(): v for k, v in (schema.metadata or {}).items()}


def _type_key(fields: Iterable[file_pb2.Field]) -> list[tuple[str, str, bool]]:
    return [(f.name, f.logical_type, f.nullable) for f in fields]


def file_field_lists(fields: list[file_pb2.Field], version: str) -> tuple[list[int], list[int]]:
    """(DataFile.fields, DataFile.column_indices) of a file holding ``fields`` at ``version``."""
    ids = [int(f.id) for f in field_metadata.column_owners(fields, version)]
    return ids, list(range(len(ids)))


def check_append_schema(base: ManifestFile, schema: pa.Schema, uri: str, full: pa.Schema | None = None) -> pa.Schema:
    """The dataset's schema, when appended data of ``schema`` fits it (nullability may differ: nulls
    are checked as the data is written); else a DatasetSchemaError naming the field that differs.
    ``full``: the dataset's schema when the caller has it already (``manifest_schema(base.manifest)``)."""
    schema = blob_schema.manifest_schema(schema, base.manifest.data_format.version)  # blob v2: the logical type
    if full is None:
        from lancelot.dataset.manifest import manifest_schema

        full = manifest_schema(base.manifest)
    if append_fill.is_subset(schema, full):  # nullable fields left out: the files hold only the others
        append_fill.check_missing(schema, full, uri)
        full = append_fill.restrict(full, schema)
        why = schema_difference(schema_fields(full), schema_fields(schema))
    else:
        why = schema_difference(base.manifest.fields, schema_fields(schema))
    if why is not None:
        raise DatasetSchemaError(f"dataset {uri!r}: append with a different schema: {why}")
    return full
