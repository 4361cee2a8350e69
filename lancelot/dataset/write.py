"""Writing datasets (pylance's ``write_dataset``, ``commit`` and ``write_fragments``): data files
under ``data/`` (``write_fragments``: nothing becomes visible), then one commit (``commit``);
``write_dataset`` does both.  These entry points open the version they commit as a ``LanceDataset``;
the machinery is writing.py, below the dataset class, so the operations its methods call write through
it without importing the class back.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

from lancelot.dataset.dataset import LanceDataset
from lancelot.dataset.fragment_metadata import FragmentMetadata
from lancelot.dataset.write_modes import write_version
from lancelot.dataset.write_options import DEFAULT_MAX_BYTES_PER_FILE, DEFAULT_MAX_ROWS_PER_FILE, WriteOptions
from lancelot.dataset.write_schema import check_append_schema as check_append_schema
from lancelot.dataset.write_schema import schema_fields as schema_fields
from lancelot.dataset.write_schema import schema_metadata as schema_metadata
from lancelot.dataset.writing import Committed, commit_version
from lancelot.dataset.writing import DatasetExistsError as DatasetExistsError
from lancelot.dataset.writing import as_batches as as_batches
from lancelot.dataset.writing import write_fragments as write_fragments


def _opened(c: Committed) -> LanceDataset:
    """The version just committed, opened from what the commit already read."""
    return LanceDataset(c.uri, version=c.version, storage_options=c.storage_options, _store=c.store, _committed=c.known)


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
    transaction_properties: dict[str, str] | None = None,
    commit_lock: Any = None,
    enable_v2_manifest_paths: bool | None = None,
    transaction_uuid: str | None = None,
) -> LanceDataset:
    """Commit fragments written by ``write_fragments`` as one new version (atomically: a conflicting
    concurrent commit is retried on top, or refused).

    Args:
        uri: The dataset's location.
        operation: ``"create"`` (fails if a dataset exists), ``"append"`` or ``"overwrite"``.
        fragments: The fragments, as ``write_fragments`` returned them (from any number of writers).
        schema: The data's schema (required to create or overwrite; checked on append).
        read_version: The version the writers planned against (default: the latest at commit).
        storage_options: Object store options.
        data_storage_version: The file version the fragments were written at.
        enable_stable_row_ids: Give rows stable row ids (create only).
        transaction_properties: Stored in the transaction file (commit_options.py).
        commit_lock: pylance's ``CommitLock`` (commit_options.py).
        enable_v2_manifest_paths: False names a new dataset's manifests by version (V1 naming).
        transaction_uuid: The transaction's uuid (a committed ``Transaction`` keeps its own).

    Returns:
        The new version, as a ``LanceDataset``.

    Raises:
        DatasetExistsError: ``"create"`` where a dataset exists.
        LanceError: ``"append"`` where none exists, or no schema to create with.
    """
    options = WriteOptions.of(locals())
    return _opened(
        commit_version(
            uri,
            operation,
            fragments,
            options,
            schema=schema,
            read_version=read_version,
            transaction_uuid=transaction_uuid,
        )
    )


def write_dataset(
    data_obj: object,
    uri: str | os.PathLike[str] | LanceDataset,
    schema: pa.Schema | None = None,
    mode: str = "create",
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    *,
    data_storage_version: str | None = None,
    storage_options: dict[str, Any] | None = None,
    enable_stable_row_ids: bool = False,
    profile: str | None = None,
    max_page_bytes: int | None = None,
    allow_external_blob_outside_bases: bool = False,
    max_rows_per_group: int = 1024,
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
    commit_lock: Any = None,
    progress: Any = None,
    enable_v2_manifest_paths: bool = True,
    auto_cleanup_options: dict[str, int] | None = None,
    commit_message: str | None = None,
    transaction_properties: dict[str, str] | None = None,
    data_cache_bytes: int | None = None,
    use_legacy_format: bool | None = None,
    namespace_client: Any = None,
    table_id: list[str] | None = None,
    session: Any = None,
) -> LanceDataset:
    """Write data as a new dataset, or as a new version of one (pylance's ``lance.write_dataset``).

    The rows go into new fragments of at most ``max_rows_per_file`` rows; the version is committed
    atomically (put-if-not-exists of its manifest), so concurrent writers, lancelot or pylance,
    retry on top of each other. ``schema``, ``mode`` and ``max_rows_per_file`` may be given by
    position, as pylance's; the other options are keyword-only.

    Args:
        data_obj: A Table, RecordBatch, RecordBatchReader, an iterable of batches (its schema: the
            first batch's, or ``schema``), a pandas DataFrame, a ``LanceDataset``, or any object
            with ``__arrow_c_stream__`` (polars, DuckDB) or ``__dataframe__``.
        uri: A local path, an fsspec URL, or a ``LanceDataset`` (its URI and storage options).
        mode: ``"create"`` (error if a dataset exists), ``"append"`` (the schema must match, column
            order aside; creates the dataset when there is none) or ``"overwrite"`` (a new version
            with only these rows; older versions stay readable).
        data_storage_version: The Lance file version of the data files: ``"2.0"``, ``"2.1"``,
            ``"2.2"`` or ``"stable"`` (2.2). Default: the dataset's on append and overwrite, 2.2 for
            a new one. pylance's unstable ``"next"`` (2.3) with an ``UnstableVersionWarning``; ``"legacy"`` is
            refused.
        max_rows_per_file: The most rows a fragment's data file holds (default 1Mi).
        storage_options: Object store options (credentials, ``endpoint``, ``region``...).
        schema: The schema of ``data_obj`` (required for an empty iterable; casts a Table to it).
        enable_stable_row_ids: Give rows stable row ids that survive compaction (new datasets only).
        profile: How hard the 2.1+ writer compresses: ``"fast"``, ``"balanced"`` (default) or
            ``"compact"`` (lancelot only; see ``LanceWriter``).
        max_page_bytes: The largest page per column, in bytes.
        allow_external_blob_outside_bases: Store blob v2 values that are external URIs (``lance.blob_array``
            of URIs) as references; refused without it, as pylance refuses them.
        max_rows_per_group: Accepted for pylance's signature (legacy files only: 2.x files have no row groups).
        max_bytes_per_file: Start a new data file (a new fragment) once the bytes written to the
            current one reach this: a soft limit, checked after each input batch (default 90 GiB).
        progress: pylance's ``FragmentWriteProgress``: ``begin(fragment)`` as each data file opens,
            ``complete(fragment)`` as each full one closes (by rows or bytes); as in pylance 14, the
            last file, closed because the input ended, gets no ``complete``.
        commit_lock: pylance's ``CommitLock``: called with the version about to be committed, it returns a
            context manager held while that version's manifest is written.
        enable_v2_manifest_paths: False names a new dataset's manifests by version (V1 naming).
        auto_cleanup_options: pylance's ``AutoCleanupConfig`` (``{"interval": 20,
            "older_than_seconds": 1209600}``): stored, when the write creates the dataset, as the table
            config ``lance.auto_cleanup.interval`` / ``lance.auto_cleanup.older_than`` (so pylance's
            commits clean up old versions; lancelot's commits do not run the cleanup themselves).
        commit_message: Stored with the version, under the transaction property ``__lance_commit_message``.
        transaction_properties: Strings stored in the version's transaction file (``read_transaction``).
        data_cache_bytes: Accepted for pylance's signature (lancelot's writer sizes its own buffers).
        use_legacy_format: Deprecated, as in pylance: False means ``data_storage_version="stable"``,
            True the legacy format (refused: lancelot writes no legacy files).
        namespace_client: Must be None (lancelot has no namespaces).
        table_id: Must be None (a namespace's table id).
        session: Accepted for pylance's signature (lancelot keeps no session caches).

    Returns:
        The new version, as a [`LanceDataset`][lancelot.dataset.dataset.LanceDataset].

    Raises:
        DatasetExistsError: ``mode="create"`` and a dataset exists at ``uri`` (a ``FileExistsError``).
        DatasetSchemaError: An append whose schema differs (a ``ValueError``; the message names the field).
        UnsupportedVersionError: An unknown or unsupported ``data_storage_version``.
        TypeError: ``data_obj`` is none of the accepted inputs.

    Examples:
        >>> ds = lancelot.write_dataset(table, "w.lance")
        >>> ds = lancelot.write_dataset(table.slice(0, 3), "w.lance", mode="append")
        >>> ds.version, ds.count_rows(), len(ds.get_fragments()), ds.data_storage_version
        (2, 13, 2, '2.2')
    """
    return _opened(write_version(data_obj, uri, WriteOptions.of(locals()), schema=schema, mode=mode))
