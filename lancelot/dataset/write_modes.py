"""``write_dataset``'s three modes (create, append, overwrite) over the writing machinery
(writing.py): the input's schema fitted to the dataset's on append, the file version chosen, the
data written as new fragments (``write_fragments``), then one commit (``commit_version``) with the
call's ``WriteOptions`` (write_options.py).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from lancelot.dataset import append_fill, blob_schema, stale_append
from lancelot.dataset.commit_options import lock_of
from lancelot.dataset.manifest import LEGACY_DATA_VERSION, ManifestFile, manifest_schema
from lancelot.dataset.store import ObjectStore
from lancelot.dataset.write_options import WriteOptions, auto_cleanup_config
from lancelot.dataset.write_schema import check_append_schema, check_metadata, fit_to_dataset
from lancelot.dataset.writing import (
    Committed,
    DatasetExistsError,
    as_batches,
    commit_version,
    listed_versions,
    storage_version,
    write_fragments,
)
from lancelot.errors import LanceValueError
from lancelot.schema import normalize_schema
from lancelot.writer import resolve_version

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset

_DEFAULTS = WriteOptions()
Batches = Iterator[pa.RecordBatch]


def _fit_append(
    base: ManifestFile, schema: pa.Schema, stored: pa.Schema, full: pa.Schema, batches: Batches, uri: str
) -> tuple[pa.Schema, pa.Schema, Batches]:
    """(schema, stored form, batches) of appended data whose schema differs from the dataset's ``full``:
    columns reordered, nullable fields left out checked, types fitted (else a DatasetSchemaError)."""
    names = [f.name for f in base.manifest.fields if f.parent_id == -1]
    if append_fill.is_subset(stored, full):  # nullable fields left out
        append_fill.check_missing(stored, full, uri)
    if stored.names != names and sorted(stored.names) == sorted(names):  # same columns, other order
        schema = pa.schema([schema.field(n) for n in names], metadata=schema.metadata)
        stored = normalize_schema(schema)
        batches = (b.select(names) for b in batches)
    target = check_append_schema(base, stored, uri, full)
    dv = base.manifest.data_format.version
    # a blob v2 field stays the data's own (its logical struct is what the blob writer makes of it)
    target = pa.schema(
        [s if blob_schema.is_v2_input(s, dv) else t for s, t in zip(stored, target)], metadata=target.metadata
    )
    if not stored.equals(target, check_metadata=False):
        schema, stored = target, normalize_schema(target)
        batches = (fit_to_dataset(b, target, uri) for b in batches)
    return schema, stored, batches


def write_version(
    data_obj: object,
    uri: str | os.PathLike[str] | LanceDataset,
    options: WriteOptions = _DEFAULTS,
    *,
    schema: pa.Schema | None = None,
    mode: str = "create",
) -> Committed:
    """``write_dataset`` (write.py), up to the version it commits: the data written as new fragments
    of a new dataset, or appended to or overwriting ``uri``'s."""
    if mode not in ("create", "append", "overwrite"):
        raise LanceValueError(f"unknown mode {mode!r} (use 'create', 'append' or 'overwrite')")
    o = options
    if o.namespace_client is not None or o.table_id is not None:
        raise LanceValueError("lancelot.write_dataset: namespaces are not supported")
    data_storage_version = o.data_storage_version
    if o.use_legacy_format is not None:
        warnings.warn("use_legacy_format is deprecated, use data_storage_version instead", DeprecationWarning, 2)
        data_storage_version = "legacy" if o.use_legacy_format else "stable"
    data_storage_version = storage_version(data_storage_version)
    commit_lock = o.commit_lock or lock_of(uri)  # (a dataset opened with a commit lock writes under it)
    storage_options = o.storage_options
    read: int | None = None  # a LanceDataset's commit builds on the version it reads (conflicts checked since)
    shown = None  # (and the data means the columns it shows)
    if hasattr(uri, "uri") and hasattr(uri, "manifest"):  # a LanceDataset names its own place, as in pylance
        storage_options = storage_options or getattr(uri, "storage_options", None)
        shown = uri.manifest
        uri, read = uri.uri, int(getattr(uri, "version"))  # noqa: B009 - mypy narrows no hasattr
    store = ObjectStore(uri, storage_options)
    uri = store.uri
    known = listed_versions(store, uri)
    base = known[1]
    schema, batches = as_batches(data_obj, schema)
    if mode == "append" and shown is not None and base is not None and shown.version != base.manifest.version:
        schema, batches = stale_append.as_latest(shown, base.manifest, schema, batches)
    check_metadata(schema)
    stored = normalize_schema(schema)
    if mode == "create" and base is not None:
        raise DatasetExistsError(f"dataset {uri!r} already exists (version {base.manifest.version})")
    if mode == "append" and base is not None:
        full = manifest_schema(base.manifest)
        if not stored.equals(full, check_metadata=True):  # (the dataset's very schema: nothing to check or fit)
            schema, stored, batches = _fit_append(base, schema, stored, full, batches, uri)
    elif mode == "append":
        mode = "create"
    if data_storage_version is None and base is not None and mode == "overwrite":
        data_storage_version = base.manifest.data_format.version or None
        if data_storage_version == LEGACY_DATA_VERSION:  # lancelot writes no legacy files: its default
            data_storage_version = str(resolve_version(None))
    frags = write_fragments(
        batches,
        uri,
        schema=stored,
        data_storage_version=data_storage_version,
        max_rows_per_file=o.max_rows_per_file,
        max_bytes_per_file=o.max_bytes_per_file,
        progress=o.progress,
        profile=o.profile,
        max_page_bytes=o.max_page_bytes,
        _store=store,
        _base=base,
        _append=mode == "append",
        _allow_external_blobs=o.allow_external_blob_outside_bases,
        _checked=True,
    )
    return commit_version(
        uri,
        mode,
        frags,
        o.replace(data_storage_version=data_storage_version, storage_options=storage_options, commit_lock=commit_lock),
        schema=None if mode == "append" else schema,  # (an append's schema was checked above)
        read_version=read or (int(base.manifest.version) if base is not None else None),
        _config=auto_cleanup_config(o.auto_cleanup_options) if base is None else None,
        _store=store,
        _known=known,
    )
