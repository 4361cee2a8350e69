"""Writing datasets, the machinery: data files under ``data/`` (``write_fragments``: nothing becomes
visible), then one commit (``commit_version``); ``write_version`` does both.  write.py's
``write_dataset`` and ``commit`` open the version these commit, so the operations below the dataset
class (changes, compaction, schema evolution, the commit wing) write through this module.

Data files are ordinary Lance files whose schema carries the dataset's field ids; each
fragment's DataFile lists the ids and the file column of each (table format, "Data files":
at 2.0 every field owns a column, at 2.1+ only leaf fields do).  Input is streamed: at
most one batch and the open file's pending pages are in memory.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from types import EllipsisType
from typing import Any, NamedTuple, cast

import pyarrow as pa

from lancelot import versions
from lancelot.dataset import blob_schema, blob_write  # blob v2 columns at 2.2+
from lancelot.dataset import cleanup as _cleanup  # noqa: F401 - registers the auto-cleanup hook (commit.AFTER_COMMIT)
from lancelot.dataset.commit import (
    Builder,
    CommitConflictError,
    Versions,
    commit_manifest,
    latest_by_hint,
    list_versions,
    load_manifest,
)
from lancelot.dataset.commit_options import merged_properties, set_properties, with_commit_lock
from lancelot.dataset.fragment_metadata import DATA_DIR, FragmentMetadata
from lancelot.dataset.manifest import FLAG_STABLE_ROW_IDS, LEGACY_DATA_VERSION, ManifestFile, writable_data_version
from lancelot.dataset.memo import IdentityMemo
from lancelot.dataset.operation import build_append, build_overwrite
from lancelot.dataset.store import ObjectStore
from lancelot.dataset.transaction import new_transaction
from lancelot.dataset.write_options import DEFAULT_MAX_BYTES_PER_FILE, WriteOptions, progress_begin, progress_complete
from lancelot.dataset.write_options import DEFAULT_MAX_ROWS_PER_FILE as DEFAULT_MAX_ROWS_PER_FILE
from lancelot.dataset.write_schema import (
    check_append_schema,
    check_metadata,
    dataset_fields,
    file_field_lists,
    schema_metadata,
)
from lancelot.errors import (
    DatasetSchemaError,
    LanceError,
    LanceValueError,
    OSErrorMessage,
    UnsupportedTypeError,
    UnsupportedVersionError,
)
from lancelot.format.pb import table_pb2
from lancelot.schema import normalize_schema
from lancelot.writer import LanceWriter, resolve_version

_DEFAULTS = WriteOptions()


class Committed(NamedTuple):
    """A version just committed, as ``LanceDataset`` opens it without listing or reading again."""

    uri: str
    version: int
    storage_options: dict[str, Any] | None
    store: ObjectStore
    known: tuple[Versions, ManifestFile] | None


class DatasetExistsError(CommitConflictError, FileExistsError):
    """``mode="create"`` where a dataset already exists (pylance: OSError "Dataset already exists")."""

    __str__ = BaseException.__str__  # the LanceError message, not OSError's "[Errno None] ..."

    def __init__(self, message: str) -> None:
        LanceError.__init__(self, message)


def as_batches(data: Any, schema: pa.Schema | None = None) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """(schema, batches) of a Table, RecordBatch, RecordBatchReader, pandas DataFrame, iterable
    of batches, dict of columns or list of row dicts."""
    from lancelot.inputs import as_batches as _as_batches

    got, batches = _as_batches(data, schema, caller="write_dataset", records=True)
    if got is None:
        raise LanceValueError("no data and no schema given: an empty iterable of batches needs schema=")
    return got, batches


def storage_version(name: str | None) -> str | None:
    """The data storage version a public name means (None stays None: the dataset's or the default).

    pylance resolves its aliases ("stable", "next", any case) before it records the version in the
    manifest; a manifest holding the alias itself cannot be opened by pylance.  "legacy" names the
    pre-2.0 format, which lancelot does not write; "next" is pylance's unstable 2.3, which it does."""
    if name is None:
        return None
    text = str(getattr(name, "value", name)).strip().lower()
    if text in ("legacy", LEGACY_DATA_VERSION):
        raise UnsupportedVersionError(
            f"data_storage_version {name!r}: the legacy format (0.1, before Lance 2.0) is not written by lancelot"
        )
    if text in versions.NOT_SUPPORTED:  # "next": pylance's unstable 2.3
        raise UnsupportedVersionError(f"data_storage_version {name!r}: {versions.NOT_SUPPORTED[text]}")
    try:
        return str(resolve_version(text).value)
    except UnsupportedVersionError:
        raise UnsupportedVersionError(
            f"unknown data_storage_version {name!r} (use 'stable', '2.0', '2.1' or '2.2')"
        ) from None


def listed_versions(store: ObjectStore, uri: str) -> tuple[Versions, ManifestFile | None]:
    """The dataset's versions and its latest manifest (None: no dataset yet), read once per write:
    through the version hint on a local disk, as pylance's commit (no listing of a long _versions/)."""
    if (hinted := latest_by_hint(store, uri)) is not None:
        return hinted
    versions = list_versions(store, uri)
    if versions.latest is None:
        return versions, None
    return versions, load_manifest(store, uri, versions, versions.latest)


#: blob_schema.manifest_schema by the stored schema's object and the version: appends of one schema pass the
#: same object (schema.py's cache of normalized schemas)
_LOGICAL = IdentityMemo(64)


def _logical_schema(stored: pa.Schema, version: str) -> pa.Schema:
    return _LOGICAL.recall((id(stored), version), stored, blob_schema.manifest_schema, stored, version)


def _bytes_written(w: LanceWriter) -> int:
    return w.bytes_written


def write_fragments(
    data: object,
    uri: str | os.PathLike[str],
    *,
    schema: pa.Schema | None = None,
    data_storage_version: str | None = None,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    max_rows_per_group: int | None = 1024,
    storage_options: dict[str, Any] | None = None,
    profile: str | None = None,
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
    progress: Any = None,
    max_page_bytes: int | None = None,
    _store: ObjectStore | None = None,
    _base: ManifestFile | None | EllipsisType = ...,
    _append: bool = False,
    _allow_external_blobs: bool | None = None,
    _checked: bool = False,
    _name: str | None = None,
) -> list[FragmentMetadata]:
    """Write data files under ``uri/data/`` without committing them: the first half of a two-step
    write (what each Spark task does); ``commit`` makes them one version.

    Field ids are the dataset's when ``uri`` holds one with the same schema, else fresh; nothing
    is visible to readers until ``commit``. pylance's counterpart is
    ``LanceFragment.create`` / ``lance.fragment.write_fragments`` plus ``LanceDataset.commit``.

    Args:
        data: Anything ``write_dataset`` accepts.
        uri: The dataset's location (it need not exist yet).
        schema: The schema of ``data`` (required for an empty iterable).
        data_storage_version: The file version (default: the dataset's, 2.2 for a new one).
        max_rows_per_file: The most rows a data file holds.
        max_rows_per_group: Accepted for pylance's signature (legacy files only: 2.x files have no row groups).
        storage_options: Object store options.
        profile: ``"fast"``, ``"balanced"`` (default) or ``"compact"``.
        max_page_bytes: The largest page per column, in bytes.
        max_bytes_per_file: A data file is closed, and the next rows go to a new one, once the
            bytes written to it reach this (checked after each input batch, as pylance does:
            a soft limit; pages still buffered are not counted).
        progress: pylance's ``FragmentWriteProgress``: ``begin`` as each data file opens,
            ``complete`` as each full one closes (rows or bytes; pylance 14 does not call it for
            the last file when the input ends first).

    Returns:
        One [`FragmentMetadata`][lancelot.dataset.fragment.FragmentMetadata] per file written, ids
        not yet assigned (``commit`` numbers them).

    Examples:
        >>> from lancelot.dataset import commit, write_fragments
        >>> frags = write_fragments(table, "two-step.lance")
        >>> commit("two-step.lance", "create", fragments=frags, schema=table.schema).count_rows()
        10
    """
    if max_rows_per_file <= 0:
        raise ValueError("max_rows_per_file must be positive")
    if max_bytes_per_file < 0:
        raise OverflowError("max_bytes_per_file: can't convert negative int to unsigned")
    data_storage_version = storage_version(data_storage_version)
    store = _store or ObjectStore(uri, storage_options)
    uri = store.uri
    if _checked and schema is not None:  # write_version's batches of ``schema``, stored form, metadata checked
        batches, stored = cast(Iterator[pa.RecordBatch], data), schema
    else:
        schema, batches = as_batches(data, schema)
        check_metadata(schema)
        stored = normalize_schema(schema)
    base = _base if _base is not ... else listed_versions(store, uri)[1]
    if data_storage_version is None:
        data_storage_version = (
            writable_data_version(base.manifest, f"dataset {uri!r} version {base.manifest.version}")
            if base is not None
            else None
        )
    version = resolve_version(data_storage_version)
    major, minor = versions.parse(version).key
    logical = _logical_schema(stored, version)  # blob v2: the logical type
    plain = logical is stored  # no blob v2 field: the file holds the data as given
    fields = dataset_fields(logical, base, subset=_append)
    ids, cols = file_field_lists(fields if plain else blob_schema.collapse_fields(fields), version)  # blob v2: 1 column
    out: list[FragmentMetadata] = []
    writer: LanceWriter | None = None
    # the bytes in the file so far; a limit of one's own waits for the pages being encoded (the same files every run)
    size = LanceWriter.next_position if max_bytes_per_file < DEFAULT_MAX_BYTES_PER_FILE else _bytes_written
    name = ""  # the open data file's
    blobs: blob_write.BlobV2Writer | None = None  # the open data file's blob v2 bytes

    def close(w: LanceWriter, full: bool = False) -> None:
        nonlocal writer
        writer = None
        if blobs is not None:
            blobs.finish()
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
        if full:
            progress_complete(progress, out[-1])

    try:
        for batch in batches:
            if batch.schema.names != stored.names:
                raise DatasetSchemaError(f"batch columns {batch.schema.names} differ from the schema's {stored.names}")
            while batch.num_rows:
                if writer is None:
                    name, _name = _name or data_file_name(), None  # (_name: the first file's, chosen by the caller)
                    writer = store.open_output(
                        f"{DATA_DIR}/{name}",
                        stored if plain else blob_schema.file_schema(stored, version),  # blob v2: descriptions
                        version=version,
                        profile=profile,
                        max_page_bytes=max_page_bytes,
                        in_place=True,  # (a new data file's name is its own: no temporary file)
                    )
                    if not plain:  # (rewrites keep the external blobs that were written)
                        external = _allow_external_blobs is not False
                        blobs = blob_write.BlobV2Writer(
                            store, f"{DATA_DIR}/{name}", writer, stored, version, allow_external=external
                        )
                    progress_begin(progress)
                room = max_rows_per_file - writer.num_rows
                part, batch = batch.slice(0, room), batch.slice(room)
                writer.write(blobs.convert(part) if blobs is not None else part)
                if writer.num_rows >= max_rows_per_file or size(writer) >= max_bytes_per_file:
                    close(writer, full=True)
        if writer is not None and writer.num_rows:
            close(writer)
        elif writer is not None:
            writer.abort()
    except BaseException as e:
        if writer is not None:
            writer.abort()
            if blobs is not None:
                blobs.abort()
        if isinstance(e, UnsupportedTypeError) and not isinstance(e, OSError):
            raise UnwritableTypeError(str(e)) from e
        raise
    return out


def data_file_name() -> str:
    """A new data file's name, as pylance names them: a random UUID's first 3 bytes as 24 binary digits (object
    stores partition on name prefixes), its other 13 as hex, then ``.lance``."""
    b = uuid.uuid4().bytes
    return f"{int.from_bytes(b[:3], 'big'):024b}{b[3:].hex()}.lance"


class UnwritableTypeError(OSErrorMessage, UnsupportedTypeError, OSError):
    """Data the file version cannot hold (a null struct at 2.0, a map before 2.2): an OSError, as pylance's write,
    insert, update or merge_insert raises."""


def _with_config(build: Builder, config: dict[str, str]) -> Builder:
    def with_config(base: ManifestFile | None, version: int) -> tuple[table_pb2.Manifest, bytes | None]:
        m, index = build(base, version)
        m.config.update(config)
        return m, index

    return with_config


def commit_version(
    uri: str | os.PathLike[str],
    operation: str,
    fragments: list[FragmentMetadata],
    options: WriteOptions = _DEFAULTS,
    *,
    schema: pa.Schema | None = None,
    read_version: int | None = None,
    transaction_uuid: str | None = None,
    _config: dict[str, str] | None = None,
    _store: ObjectStore | None = None,
    _known: tuple[Versions, ManifestFile | None] | None = None,
) -> Committed:
    """``commit`` (write.py), up to the version it commits: an Append, Overwrite or new dataset of
    ``fragments``; ``_store`` and ``_known`` (the versions listed and the latest manifest) save reading them again."""
    data_storage_version = storage_version(options.data_storage_version)
    storage_options, enable_stable_row_ids = options.storage_options, options.enable_stable_row_ids
    store = _store or ObjectStore(uri, storage_options)
    uri = store.uri
    frags = [f.to_pb() if isinstance(f, FragmentMetadata) else f for f in fragments]
    txn = new_transaction(read_version or 0)
    set_properties(txn, merged_properties(options.commit_message, options.transaction_properties))
    if transaction_uuid:
        txn.uuid = transaction_uuid
    known = _known or listed_versions(store, uri)  # (write_dataset read them just before: not again)
    if known[1] is not None:
        known[1].owned = True  # (read for this commit: its builder may take the message over)
    if operation == "append":
        base = known[1]
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
        base = known[1]
        if operation == "create" and base is not None:
            raise DatasetExistsError(f"dataset {uri!r} already exists (version {base.manifest.version})")
        if read_version is None and base is not None:
            txn.read_version = read_version = int(base.manifest.version)
        versions = {f"{d.file_major_version}.{d.file_minor_version}" for f in frags for d in f.files}
        dv = (
            data_storage_version
            or (max(versions) if versions else None)
            or (base.manifest.data_format.version if base is not None else None)
            or resolve_version(None)
        )
        stored = blob_schema.manifest_schema(stored, str(dv))  # blob v2: the logical type
        fields = dataset_fields(stored, base)
        md = schema_metadata(stored)
        txn.overwrite.fragments.extend(frags)
        txn.overwrite.schema.extend(fields)
        for k, v in md.items():
            txn.overwrite.schema_metadata[k] = v
        stable = enable_stable_row_ids or (
            base is not None and bool(base.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS)
        )
        build = build_overwrite(frags, fields, md, dv, stable_row_ids=stable)
        if _config:  # (auto_cleanup_options of a new dataset: table config, as pylance's Overwrite upserts it)
            txn.overwrite.config_upsert_values.update(_config)
            build = _with_config(build, _config)
        create = operation == "create"
    else:
        raise ValueError(f"unknown operation {operation!r} (use 'create', 'append' or 'overwrite')")
    version, listed, mf = commit_manifest(
        with_commit_lock(store, options.commit_lock),
        uri,
        txn,
        build,
        read_version=read_version if not create else None,
        create=create,
        scheme="v1" if options.enable_v2_manifest_paths is False else "v2",
        known=known,
    )
    committed = (listed, mf) if mf is not None else None
    return Committed(uri, version, storage_options, store, committed)
