"""Writing datasets: data files under ``data/`` (``write_fragments``: nothing becomes
visible), then one commit (``commit``); ``write_dataset`` does both.

Data files are ordinary Lance files whose schema carries the dataset's field ids; each
fragment's DataFile lists the ids and the file column of each (table format, "Data files":
at 2.0 every field owns a column, at 2.1+ only leaf fields do).  Input is streamed: at
most one batch and the open file's pending pages are in memory.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Iterator
from types import EllipsisType
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lancelot import versions
from lancelot.dataset.commit import commit_transaction, list_versions, load_manifest
from lancelot.dataset.fragment import DATA_DIR, FragmentMetadata
from lancelot.dataset.manifest import (
    FLAG_STABLE_ROW_IDS,
    LEGACY_DATA_VERSION,
    ManifestFile,
    writable_data_version,
)
from lancelot.dataset.operation import build_append, build_overwrite
from lancelot.dataset.store import ObjectStore
from lancelot.dataset.transaction import new_transaction
from lancelot.errors import LanceError, SchemaMismatchError
from lancelot.format.pb import file_pb2, table_pb2
from lancelot.schema import normalize_schema, to_descriptor
from lancelot.writer import LanceWriter, resolve_version

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset

DEFAULT_MAX_ROWS_PER_FILE = 1024 * 1024


def as_batches(data: Any, schema: pa.Schema | None = None) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """(schema, batches) of a Table, RecordBatch, RecordBatchReader, pandas DataFrame or iterable
    of batches."""
    from lancelot.inputs import as_batches as _as_batches

    got, batches = _as_batches(data, schema, caller="write_dataset")
    if got is None:
        raise LanceError("no data and no schema given")
    return got, batches


def schema_fields(schema: pa.Schema) -> list[file_pb2.Field]:
    """The manifest's fields of a new schema: pre-order, ids from 0 (what pylance assigns)."""
    return list(to_descriptor(schema, 0).schema.fields)


def dataset_fields(schema: pa.Schema, base: ManifestFile | None) -> list[file_pb2.Field]:
    """The fields (with ids) data of ``schema`` is written and committed with: the dataset's own
    when it has the same schema (its ids may have gaps where columns were dropped), else fresh.
    write_fragments and commit both use this rule, so files and manifest always agree."""
    fields = schema_fields(schema)
    if base is not None and _type_key(base.manifest.fields) == _type_key(fields):
        return list(base.manifest.fields)
    return fields


def schema_metadata(schema: pa.Schema) -> dict[str, bytes]:
    return {k.decode(): v for k, v in (schema.metadata or {}).items()}


def _type_key(fields: Iterable[file_pb2.Field]) -> list[tuple[str, str, bool]]:
    return [(f.name, f.logical_type, f.nullable) for f in fields]


def file_field_lists(fields: list[file_pb2.Field], version: str) -> tuple[list[int], list[int]]:
    """(DataFile.fields, DataFile.column_indices) of a file holding ``fields`` at ``version``."""
    if not versions.parse(version).structural:
        ids = [int(f.id) for f in fields]
    else:
        parents = {int(f.parent_id) for f in fields}
        ids = [int(f.id) for f in fields if int(f.id) not in parents]
    return ids, list(range(len(ids)))


def _existing(store: ObjectStore, uri: str) -> ManifestFile | None:
    versions = list_versions(store, uri)
    if versions.latest is None:
        return None
    return load_manifest(store, uri, versions, versions.latest)


def write_fragments(
    data: object,
    uri: str | os.PathLike[str],
    *,
    schema: pa.Schema | None = None,
    data_storage_version: str | None = None,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    storage_options: dict[str, Any] | None = None,
    profile: str | None = None,
    max_page_bytes: int | None = None,
    _store: ObjectStore | None = None,
    _base: ManifestFile | None | EllipsisType = ...,
) -> list[FragmentMetadata]:
    """Write data files under ``uri/data/`` and return their fragments (ids unassigned).

    Nothing becomes visible until ``commit``.  Field ids are the dataset's when ``uri``
    holds a dataset with the same schema, else fresh; the file version defaults to the
    dataset's (2.2 for a new dataset).  ``profile`` and ``max_page_bytes`` go to every file's
    LanceWriter.
    """
    if max_rows_per_file <= 0:
        raise ValueError("max_rows_per_file must be positive")
    store = _store or ObjectStore(uri, storage_options)
    uri = store.uri
    schema, batches = as_batches(data, schema)
    stored = normalize_schema(schema)
    base = _base if _base is not ... else _existing(store, uri)
    fields = dataset_fields(stored, base)
    if data_storage_version is None:
        data_storage_version = (
            writable_data_version(base.manifest, f"dataset {uri!r} version {base.manifest.version}")
            if base is not None
            else None
        )
    version = resolve_version(data_storage_version)
    major, minor = versions.parse(version).key
    ids, cols = file_field_lists(fields, version)
    out: list[FragmentMetadata] = []
    writer: LanceWriter | None = None
    name = ""  # the open data file's

    def close(w: LanceWriter) -> None:
        nonlocal writer
        writer = None
        w.close()
        df = table_pb2.DataFile(
            path=name,
            fields=ids,
            column_indices=cols,
            file_major_version=major,
            file_minor_version=minor,
            file_size_bytes=int(getattr(w, "file_size", 0)),
        )
        out.append(FragmentMetadata.from_pb(table_pb2.DataFragment(files=[df], physical_rows=w.num_rows)))

    try:
        for batch in batches:
            if batch.schema.names != stored.names:
                raise SchemaMismatchError(f"batch columns {batch.schema.names} differ from the schema's {stored.names}")
            while batch.num_rows:
                if writer is None:
                    name = f"{uuid.uuid4().hex}.lance"
                    writer = store.open_output(
                        f"{DATA_DIR}/{name}", stored, version=version, profile=profile, max_page_bytes=max_page_bytes
                    )
                room = max_rows_per_file - writer.num_rows
                part, batch = batch.slice(0, room), batch.slice(room)
                writer.write(part)
                if writer.num_rows >= max_rows_per_file:
                    close(writer)
        if writer is not None and writer.num_rows:
            close(writer)
        elif writer is not None:
            writer.abort()
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    return out


def commit(
    uri: str | os.PathLike[str],
    operation: str,
    *,
    fragments: list[FragmentMetadata],
    schema: pa.Schema | None = None,
    read_version: int | None = None,
    storage_options: dict[str, Any] | None = None,
    data_storage_version: str | None = None,
    enable_stable_row_ids: bool = False,
) -> LanceDataset:
    """Commit fragments written by ``write_fragments`` as one new version; returns the dataset.

    ``operation``: "create" (fails if the dataset exists), "append" or "overwrite".
    """
    from lancelot.dataset.dataset import LanceDataset

    store = ObjectStore(uri, storage_options)
    uri = store.uri
    frags = [f.to_pb() if isinstance(f, FragmentMetadata) else f for f in fragments]
    txn = new_transaction(read_version or 0)
    if operation == "append":
        base = _existing(store, uri)
        if base is None:
            raise LanceError(f"dataset {uri!r} does not exist: use mode 'create'")
        if schema is not None:
            check_append_schema(base, normalize_schema(schema), uri)
        if read_version is None:
            txn.read_version = read_version = int(base.manifest.version)
        for f in frags:
            f.ClearField("id")
        txn.append.fragments.extend(frags)
        build = build_append(frags, uri)
        create = False
    elif operation in ("create", "overwrite"):
        if schema is None:
            raise LanceError(f"{operation} needs the schema")
        stored = normalize_schema(schema)
        base = _existing(store, uri)
        if operation == "create" and base is not None:
            from lancelot.dataset.commit import CommitConflictError

            raise CommitConflictError(f"dataset {uri!r} already exists (version {base.manifest.version})")
        fields = dataset_fields(stored, base)
        if read_version is None and base is not None:
            txn.read_version = read_version = int(base.manifest.version)
        versions = {f"{d.file_major_version}.{d.file_minor_version}" for f in frags for d in f.files}
        dv = (
            data_storage_version
            or (max(versions) if versions else None)
            or (base.manifest.data_format.version if base is not None else None)
            or resolve_version(None)
        )
        md = schema_metadata(stored)
        txn.overwrite.fragments.extend(frags)
        txn.overwrite.schema.extend(fields)
        for k, v in md.items():
            txn.overwrite.schema_metadata[k] = v
        stable = enable_stable_row_ids or (
            base is not None and bool(base.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS)
        )
        build = build_overwrite(frags, fields, md, dv, stable_row_ids=stable)
        create = operation == "create"
    else:
        raise ValueError(f"unknown operation {operation!r} (use 'create', 'append' or 'overwrite')")
    version = commit_transaction(
        store, uri, txn, build, read_version=read_version if not create else None, create=create
    )
    return LanceDataset(uri, version=version, storage_options=storage_options, _store=store)


def check_append_schema(base: ManifestFile, schema: pa.Schema, uri: str) -> None:
    theirs = _type_key(base.manifest.fields)
    if _type_key(schema_fields(schema)) != theirs:
        from lancelot.dataset.dataset import manifest_schema

        raise SchemaMismatchError(
            f"dataset {uri!r}: appended data's schema\n{schema}\ndiffers from the dataset's\n"
            f"{manifest_schema(base.manifest)}"
        )


def write_dataset(
    data: object,
    uri: str | os.PathLike[str],
    *,
    mode: str = "create",
    data_storage_version: str | None = None,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    storage_options: dict[str, Any] | None = None,
    schema: pa.Schema | None = None,
    enable_stable_row_ids: bool = False,
    profile: str | None = None,
    max_page_bytes: int | None = None,
) -> LanceDataset:
    """Write a Table, RecordBatch, RecordBatchReader or iterable of batches as a dataset version.

    ``mode``: "create" (error if the dataset exists), "append" (schema must match; files keep
    the dataset's data storage version unless asked otherwise) or "overwrite" (a new version
    with only the new data; older versions stay readable).  ``profile`` ("fast", "balanced" (default),
    "compact") and ``max_page_bytes`` are the data files' writer settings (``lancelot.write_table``).
    """
    if mode not in ("create", "append", "overwrite"):
        raise ValueError(f"unknown mode {mode!r} (use 'create', 'append' or 'overwrite')")
    store = ObjectStore(uri, storage_options)
    uri = store.uri
    base = _existing(store, uri)
    schema, batches = as_batches(data, schema)
    stored = normalize_schema(schema)
    if mode == "create" and base is not None:
        from lancelot.dataset.commit import CommitConflictError

        raise CommitConflictError(f"dataset {uri!r} already exists (version {base.manifest.version})")
    if mode == "append":
        if base is None:
            mode = "create"
        else:
            names = [f.name for f in base.manifest.fields if f.parent_id == -1]
            if stored.names != names and sorted(stored.names) == sorted(names):  # same columns, other order
                schema = pa.schema([schema.field(n) for n in names], metadata=schema.metadata)
                stored = normalize_schema(schema)
                batches = (b.select(names) for b in batches)
            check_append_schema(base, stored, uri)
    if data_storage_version is None and base is not None and mode == "overwrite":
        data_storage_version = base.manifest.data_format.version or None
        if data_storage_version == LEGACY_DATA_VERSION:  # lancelot writes no legacy files: its default
            data_storage_version = str(resolve_version(None))
    frags = write_fragments(
        batches,
        uri,
        schema=schema,
        data_storage_version=data_storage_version,
        max_rows_per_file=max_rows_per_file,
        profile=profile,
        max_page_bytes=max_page_bytes,
        _store=store,
        _base=base,
    )
    read_version = int(base.manifest.version) if base is not None else None
    return commit(
        uri,
        mode,
        fragments=frags,
        schema=schema,
        read_version=read_version,
        storage_options=storage_options,
        data_storage_version=data_storage_version,
        enable_stable_row_ids=enable_stable_row_ids,
    )
