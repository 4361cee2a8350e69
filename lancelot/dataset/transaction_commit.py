"""Committing a ``LanceOperation`` or ``Transaction`` (``LanceDataset.commit``, ``commit_batch``):
each operation filled into its transaction.proto message and given the builder of its manifest
(operation.py, operation_changes.py, config.py; DataReplacement and CreateIndex here), then
committed with the conflict rules of its kind (transaction.py) against what was committed since its
read version. Operations are read by class name and fields, so pylance's objects commit too.
"""

from __future__ import annotations

import os
import uuid as _uuid
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lancelot.dataset.commit import commit_transaction
from lancelot.dataset.commit_options import check_commit_lock, merged_properties, with_commit_lock
from lancelot.dataset.config import build_restore, build_update_config
from lancelot.dataset.lance_operation import LanceOperation, as_data_file, as_fragment_metadata
from lancelot.dataset.manifest import FLAG_STABLE_ROW_IDS, ManifestFile, fix_data_format
from lancelot.dataset.operation import _finish, _start, build_delete
from lancelot.dataset.operation_changes import NewFragment, build_merge, build_project, build_update
from lancelot.dataset.rowids import row_ids, row_versions
from lancelot.dataset.store import ObjectStore
from lancelot.dataset.transaction_api import (
    Transaction,
    TransactionError,
    UnsupportedTransactionError,
    _frags,
    as_pyarrow_schema,
    operation_from_pb,
    schema_fields_of,
)
from lancelot.errors import LanceError, VersionNotFoundError
from lancelot.format.pb import rowids_pb2, table_pb2, transaction_pb2

if TYPE_CHECKING:
    from lancelot.dataset.commit import Builder
    from lancelot.dataset.dataset import LanceDataset


def _mode(update_mode: str) -> int:
    if update_mode in ("", "rewrite_rows", "RewriteRows"):
        return int(transaction_pb2.Transaction.REWRITE_ROWS)
    if update_mode in ("rewrite_columns", "RewriteColumns"):
        return int(transaction_pb2.Transaction.REWRITE_COLUMNS)
    raise TransactionError(f"unknown update_mode {update_mode!r} (use 'rewrite_rows' or 'rewrite_columns')")


def _created_at(read: ManifestFile, touched: set[int], kept: np.ndarray, uri: str) -> np.ndarray:
    """Created-at versions of the rows with stable ids ``kept``, from the fragments they were in at
    the read version (pylance derives them at commit likewise)."""
    if not len(kept):
        return np.empty(0, np.uint64)
    ids, created = [], []
    for f in read.manifest.fragments:
        if int(f.id) in touched:
            where = f"dataset {uri!r} fragment {f.id}"
            ids.append(row_ids(f, where))
            created.append(row_versions(f, "created_at", None, where))
    if not ids:
        return np.full(len(kept), int(read.manifest.version), np.uint64)
    all_ids, all_created = np.concatenate(ids), np.concatenate(created)
    order = np.argsort(all_ids, kind="stable")
    all_ids, all_created = all_ids[order], all_created[order]
    at = np.clip(np.searchsorted(all_ids, kept), 0, len(all_ids) - 1)
    found = all_ids[at] == kept
    return np.where(found, all_created[at], np.uint64(read.manifest.version)).astype(np.uint64)


def _decode_ids(pb: table_pb2.DataFragment, where: str) -> np.ndarray:
    """The row ids a new fragment carries over (its first rows): its inline row id sequence."""
    from lancelot.dataset.rowids import segment_values

    if pb.WhichOneof("row_id_sequence") != "inline_row_ids":
        return np.empty(0, np.uint64)
    seq = rowids_pb2.RowIdSequence()
    seq.ParseFromString(pb.inline_row_ids)
    parts = [segment_values(s, where) for s in seq.segments]
    return np.concatenate(parts).astype(np.uint64) if parts else np.empty(0, np.uint64)


def build_data_replacement(groups: list[transaction_pb2.Transaction.DataReplacementGroup], uri: str) -> Builder:
    """Each group's fragment gets its new file in place of the file with the same fields and file
    version, or added when no file holds those fields yet (an all-null column gaining data)."""
    if len({tuple(g.new_file.fields) for g in groups}) > 1:
        raise TransactionError("DataReplacement: all new data files must have the same fields")

    def build(base: ManifestFile | None, version: int) -> tuple[table_pb2.Manifest, bytes | None]:
        if base is None:
            raise LanceError(f"dataset {uri!r} does not exist")
        m = _start(base)
        by_id = {int(f.id): f for f in m.fragments}
        for g in groups:
            frag = by_id.get(int(g.fragment_id))
            if frag is None:
                raise TransactionError(f"dataset {uri!r}: fragment {g.fragment_id} being replaced does not exist")
            new, changed = g.new_file, False
            covered: set[int] = set()
            for d in frag.files:
                same = list(d.fields) == list(new.fields) and (d.file_major_version, d.file_minor_version) == (
                    new.file_major_version,
                    new.file_minor_version,
                )
                if same:
                    d.path, d.file_size_bytes, changed = new.path, new.file_size_bytes, True
                covered.update(int(x) for x in d.fields)
            if covered.isdisjoint(int(x) for x in new.fields):
                frag.files.append(new)
                changed = True
            if not changed:
                raise TransactionError(
                    f"dataset {uri!r} fragment {g.fragment_id}: the new data file matches none of the fragment's "
                    "files (same fields and file version)"
                )
        stable = bool(m.reader_feature_flags & FLAG_STABLE_ROW_IDS)
        fix_data_format(m, f"dataset {uri!r} version {version}")
        _finish(m, version, stable)
        return m, base.index_section

    return build


def _plan(op: Any, pb: transaction_pb2.Transaction, store: ObjectStore, uri: str, read: ManifestFile | None) -> Builder:
    """Fill ``pb`` with ``op`` and return the builder of its manifest."""
    kind = type(op).__name__
    if read is None and kind not in ("Restore",):
        raise TransactionError(f"dataset {uri!r} does not exist: only Overwrite can create it")
    if kind == "Delete":
        updated = _frags(list(op.updated_fragments))
        pb.delete.updated_fragments.extend(updated)
        pb.delete.deleted_fragment_ids.extend(int(i) for i in op.deleted_fragment_ids)
        pb.delete.predicate = str(op.predicate or "")
        return build_delete(updated, [int(i) for i in op.deleted_fragment_ids], uri)
    if kind == "Update":
        assert read is not None
        u = pb.update
        updated = _frags(list(op.updated_fragments))
        removed = [int(i) for i in op.removed_fragment_ids]
        touched = set(removed) | {int(f.id) for f in updated}
        new = []
        for f in _frags(list(op.new_fragments)):
            u.new_fragments.append(f)
            kept = _decode_ids(f, f"dataset {uri!r}: a new fragment")
            bare = table_pb2.DataFragment()
            bare.CopyFrom(f)
            for name in ("inline_row_ids", "external_row_ids", "inline_created_at_versions",
                         "external_created_at_versions", "inline_last_updated_at_versions",
                         "external_last_updated_at_versions"):  # fmt: skip
                bare.ClearField(name)
            new.append(NewFragment(bare, kept, _created_at(read, touched, kept, uri)))
        u.removed_fragment_ids.extend(removed)
        u.updated_fragments.extend(updated)
        u.fields_modified.extend(int(i) for i in op.fields_modified)
        u.fields_for_preserving_frag_bitmap.extend(int(i) for i in op.fields_for_preserving_frag_bitmap)
        u.update_mode = _mode(str(op.update_mode or ""))  # type: ignore[assignment]
        return build_update(updated, removed, new, uri)
    if kind == "Merge":
        assert read is not None
        if isinstance(op.schema, pa.Schema):
            warnings.warn(
                "Passing a pyarrow.Schema to Merge is deprecated. Please use a LanceSchema instead.",
                DeprecationWarning,
                stacklevel=4,
            )
        frags = _frags(list(op.fragments))
        fields, md = schema_fields_of(op.schema)
        pb.merge.fragments.extend(frags)
        pb.merge.schema.extend(fields)
        for k, v in md.items():
            pb.merge.schema_metadata[k] = v
        read_ids = {int(f.id) for f in read.manifest.fragments}
        return build_merge(frags, fields, md or None, read_ids, uri)
    if kind == "Project":
        fields, _ = schema_fields_of(op.schema)
        pb.project.schema.extend(fields)
        return build_project(fields, None, uri)
    if kind == "Restore":
        from lancelot.dataset.commit import list_versions, load_manifest

        pb.restore.version = int(op.version)
        versions = list_versions(store, uri)
        if int(op.version) not in versions.names:
            raise VersionNotFoundError(f"dataset {uri!r}: cannot restore version {op.version}: no such version")
        return build_restore(load_manifest(store, uri, versions, int(op.version)), uri)
    if kind == "DataReplacement":
        for g in op.replacements:
            pb.data_replacement.replacements.add(fragment_id=int(g.fragment_id), new_file=as_data_file(g.new_file))
        return build_data_replacement(list(pb.data_replacement.replacements), uri)
    if kind == "UpdateConfig":
        from lancelot.dataset.config import update_map

        c = pb.update_config
        for name in ("config_updates", "table_metadata_updates", "schema_metadata_updates"):
            m = getattr(op, name)
            if m is not None:
                getattr(c, name).CopyFrom(update_map(dict(m.updates), bool(m.replace)))
        for fid, m in (op.field_metadata_updates or {}).items():
            c.field_metadata_updates[int(fid)].CopyFrom(update_map(dict(m.updates), bool(m.replace)))
        return build_update_config(c, uri)
    if kind == "CreateIndex":
        assert read is not None
        new_idx = [_index_metadata(i) for i in op.new_indices]
        gone = [_index_metadata(i) for i in op.removed_indices]
        pb.create_index.new_indices.extend(new_idx)
        pb.create_index.removed_indices.extend(gone)
        return build_create_index(new_idx, gone, uri)
    if kind == "Rewrite":
        from lancelot.dataset.rewrite_commit import build_user_rewrite, fill_rewrite

        groups, rewritten = fill_rewrite(op, pb)
        return build_user_rewrite(groups, rewritten, uri, store)
    raise NotImplementedError(f"LanceDataset.commit of a {kind} operation is not supported by lancelot")


def _index_metadata(index: Any) -> table_pb2.IndexMetadata:
    """An ``IndexMetadata`` message of a pylance ``Index`` (or of such a message itself)."""
    from pyroaring import BitMap

    if isinstance(index, table_pb2.IndexMetadata):
        return index
    m = table_pb2.IndexMetadata(name=str(index.name), fields=[int(f) for f in index.fields])
    m.uuid.uuid = _uuid.UUID(str(index.uuid)).bytes
    m.dataset_version = int(index.dataset_version)
    m.fragment_bitmap = BitMap(sorted(int(f) for f in index.fragment_ids)).serialize()
    m.index_version = int(getattr(index, "index_version", 0) or 0)
    created = getattr(index, "created_at", None)
    if created is not None:
        m.created_at = int(created.timestamp() * 1000)
    if getattr(index, "base_id", None) is not None:
        m.base_id = int(index.base_id)
    details = getattr(index, "index_details", None)
    if details is not None:
        m.index_details.type_url, m.index_details.value = str(details[0]), bytes(details[1])
    return m


def build_create_index(new: list[table_pb2.IndexMetadata], removed: list[table_pb2.IndexMetadata], uri: str) -> Builder:
    """The index section with ``removed`` (by uuid) taken out and ``new`` added."""

    def build(base: ManifestFile | None, version: int) -> tuple[table_pb2.Manifest, bytes | None]:
        if base is None:
            raise LanceError(f"dataset {uri!r} does not exist")
        m = _start(base)
        section = table_pb2.IndexSection()
        if base.index_section:
            section.ParseFromString(base.index_section)
        gone = {bytes(i.uuid.uuid) for i in removed} | {bytes(i.uuid.uuid) for i in new}
        keep = [i for i in section.indices if bytes(i.uuid.uuid) not in gone]
        del section.indices[:]
        section.indices.extend(keep + list(new))
        _finish(m, version, bool(m.reader_feature_flags & FLAG_STABLE_ROW_IDS))
        out: bytes = section.SerializeToString()
        return m, out

    return build


def _refuse_rebase(store: ObjectStore, uri: str, pb: transaction_pb2.Transaction, read_version: int) -> None:
    """A Delete given as an operation carries deletion files, not the rows it meant: where a commit
    since its read version changed the same fragments' deletions, pylance cannot merge them and asks
    for a retry; so does lancelot (its own ``delete`` merges them: it knows the rows)."""
    from lancelot.dataset.commit import RetryableCommitConflictError, list_versions, load_manifest, load_transaction
    from lancelot.dataset.transaction import REBASE, conflict

    versions = list_versions(store, uri)
    for v in range(read_version + 1, (versions.latest or 0) + 1):
        if v not in versions.names:
            continue
        other = load_transaction(store, load_manifest(store, uri, versions, v), where=f"dataset {uri!r} version {v}")
        c = conflict(pb, other)
        if c is not None and c.kind == REBASE and other is not None:
            raise RetryableCommitConflictError(
                f"dataset {uri!r}: Retryable commit conflict for version {v}: this Delete transaction was "
                f"preempted by concurrent transaction {type(operation_from_pb(other)).__name__} at version {v} "
                f"({c.reason}). Please retry."
            )


def check_strict_overwrite(
    uri: str | os.PathLike[str], read_version: int | None, storage_options: dict[str, Any] | None
) -> None:
    """A strict Overwrite (``max_retries=0``) is not rebased: any version after its read version
    refuses it (pylance's "Commit conflict ... after 0 retries")."""
    from lancelot.dataset.commit import CommitConflictError, list_versions

    store = ObjectStore(uri, storage_options)
    latest = list_versions(store, store.uri).latest
    if latest is not None and read_version != latest:
        raise CommitConflictError(
            f"dataset {store.uri!r}: Commit conflict for version {(read_version or 0) + 1}: a strict overwrite "
            "(max_retries=0) "
            f"read at version {read_version} cannot be committed after version {latest}: "
            "Failed to commit the transaction after 0 retries."
        )


def commit_any(
    uri: str | os.PathLike[str],
    operation: Any,
    read_version: int | None,
    storage_options: dict[str, Any] | None,
    *,
    transaction_properties: dict[str, str] | None = None,
    commit_lock: Any = None,
) -> LanceDataset:
    """Commit a ``Transaction`` (its read version, uuid and properties) or a bare operation (with
    ``transaction_properties``), its manifest written under ``commit_lock`` if given."""
    from lancelot.dataset.commit import list_versions, load_manifest
    from lancelot.dataset.dataset import LanceDataset

    props: dict[str, str] = dict(transaction_properties or {})
    tid = str(_uuid.uuid4())
    if type(operation).__name__ == "Transaction":
        txn = operation
        read_version, tid, props = int(txn.read_version), str(txn.uuid), dict(txn.transaction_properties or {})
        operation = txn.operation
        if type(operation).__name__ in ("Append", "Overwrite"):
            return commit_operation(
                uri,
                operation,
                read_version if type(operation).__name__ == "Append" else (read_version or None),
                storage_options=storage_options,
                transaction_properties=props,
                commit_lock=commit_lock,
                transaction_uuid=tid,
            )
    if type(operation).__name__ == "Clone":
        from lancelot.dataset.clone import commit_clone

        return commit_clone(
            uri, operation, read_version, storage_options, transaction_properties=props, commit_lock=commit_lock
        )
    store = ObjectStore(uri, storage_options)
    uri = store.uri
    versions = list_versions(store, uri)
    if read_version is None:  # a Restore: against the latest
        read_version = versions.latest
    read = None
    if read_version is not None and versions.latest is not None:
        if int(read_version) not in versions.names:
            raise VersionNotFoundError(f"dataset {uri!r}: read version {read_version} does not exist")
        read = load_manifest(store, uri, versions, int(read_version))
    pb = transaction_pb2.Transaction(read_version=int(read_version or 0), uuid=tid)
    for k, v in props.items():
        pb.transaction_properties[k] = v
    build = _plan(operation, pb, store, uri, read)
    if pb.WhichOneof("operation") == "delete" and read_version is not None:
        _refuse_rebase(store, uri, pb, int(read_version))
    version = commit_transaction(with_commit_lock(store, commit_lock), uri, pb, build, read_version=read_version)
    return LanceDataset(uri, version=version, storage_options=storage_options, _store=store)


def refuse_unsupported(**options: Any) -> None:
    """pylance's options lancelot has no use for: refused unless left at their defaults (None)."""
    given = sorted(k for k, v in options.items() if v is not None)
    if given:
        raise NotImplementedError(f"lancelot's commit does not support {', '.join(given)}")


def commit_with_options(
    base_uri: Any,
    operation: Any,
    read_version: int | None,
    *,
    commit_lock: Any = None,
    storage_options: dict[str, Any] | None = None,
    enable_v2_manifest_paths: bool | None = None,
    detached: bool = False,
    max_retries: int = 20,
    commit_message: str | None = None,
    enable_stable_row_ids: bool | None = None,
) -> LanceDataset:
    """``LanceDataset.commit``: pylance's argument checks, then a detached or an attached commit."""
    from lancelot.dataset.dataset import LanceDataset

    check_commit_lock(commit_lock)
    if isinstance(base_uri, LanceDataset):
        storage_options = storage_options or base_uri.storage_options
        base_uri = base_uri.uri
    elif not isinstance(base_uri, (str, os.PathLike)):
        raise TypeError(f"base_uri must be str, Path, or LanceDataset, got {type(base_uri)}")
    is_txn = type(operation).__name__ == "Transaction"
    if is_txn and commit_message is not None:
        raise TransactionError(
            "commit_message is not supported when calling commit with a Transaction.  Set the message on the "
            "transaction properties instead."
        )
    props = merged_properties(commit_message, None)
    kind = type(operation).__name__
    if kind in ("Append", "Overwrite") and read_version and not detached:
        _check_read_version(base_uri, int(read_version), storage_options)
    if detached:
        from lancelot.dataset.detached import commit_detached

        if not is_txn and read_version is None and type(operation).__name__ not in ("Overwrite", "Restore"):
            raise ValueError("read_version is required for all operations except Overwrite and Restore")
        return commit_detached(
            base_uri, operation, read_version, storage_options, transaction_properties=props, commit_lock=commit_lock
        )
    return commit_operation(
        base_uri,
        operation,
        read_version,
        storage_options=storage_options,
        enable_stable_row_ids=enable_stable_row_ids,
        max_retries=max_retries,
        transaction_properties=props,
        commit_lock=commit_lock,
        enable_v2_manifest_paths=enable_v2_manifest_paths,
    )


def _check_read_version(uri: Any, read_version: int, storage_options: dict[str, Any] | None) -> None:
    """The read version must exist (pylance opens the dataset at it; the other kinds load it in
    ``commit_any``)."""
    from lancelot.dataset.commit import list_versions

    store = ObjectStore(uri, storage_options)
    versions = list_versions(store, store.uri)
    if versions.latest is not None and read_version not in versions.names:
        raise VersionNotFoundError(f"dataset {store.uri!r}: read version {read_version} does not exist")


def commit_batch(
    dest: Any,
    transactions: Sequence[Any],
    storage_options: dict[str, Any] | None = None,
    *,
    commit_lock: Any = None,
    detached: bool = False,
) -> dict[str, Any]:
    """Several Append transactions merged into one and committed (pylance's ``commit_batch``: only
    appends may be batched)."""
    from lancelot.dataset.dataset import LanceDataset

    if isinstance(dest, LanceDataset):
        storage_options = storage_options or dest.storage_options
        dest = dest.uri
    if not transactions:
        raise TransactionError("commit_batch needs at least one transaction")
    frags: list[Any] = []
    for t in transactions:
        if type(t.operation).__name__ != "Append":
            raise UnsupportedTransactionError("Only append transactions are supported in batch commits")
        frags.extend(t.operation.fragments)
    merged = Transaction(int(transactions[0].read_version), LanceOperation.Append(frags))
    check_commit_lock(commit_lock)
    if detached:
        from lancelot.dataset.detached import commit_detached

        ds = commit_detached(dest, merged, None, storage_options, commit_lock=commit_lock)
    else:
        ds = commit_any(dest, merged, None, storage_options, commit_lock=commit_lock)
    return {"dataset": ds, "merged": merged}


def commit_operation(
    base_uri: str | os.PathLike[str] | LanceDataset,
    operation: Any,
    read_version: int | None = None,
    *,
    storage_options: dict[str, Any] | None = None,
    enable_stable_row_ids: bool | None = None,
    max_retries: int = 20,
    transaction_properties: dict[str, str] | None = None,
    commit_lock: Any = None,
    enable_v2_manifest_paths: bool | None = None,
    transaction_uuid: str | None = None,
) -> LanceDataset:
    """Commit ``operation`` (a ``LanceOperation`` or a ``Transaction``) as one new version
    (``LanceDataset.commit``); ``max_retries=0`` makes an Overwrite strict (pylance's "strict
    overwrite": refused if any version was committed after ``read_version``)."""
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.write import commit

    if isinstance(base_uri, LanceDataset):
        storage_options = storage_options or base_uri.storage_options
        base_uri = base_uri.uri
    kind = type(operation).__name__
    if kind == "Transaction":
        return commit_any(base_uri, operation, None, storage_options, commit_lock=commit_lock)
    if not hasattr(operation, "__dataclass_fields__"):
        raise TypeError(f"operation must be a LanceOperation.BaseOperation or Transaction, got {type(operation)}")
    if read_version is None and kind not in ("Overwrite", "Restore"):
        raise ValueError("read_version is required for all operations except Overwrite and Restore")
    if kind == "Append":
        frags = [as_fragment_metadata(f) for f in operation.fragments]
        return commit(
            base_uri,
            "append",
            fragments=frags,
            read_version=read_version or None,  # (pylance: read at version 0, checked against nothing)
            storage_options=storage_options,
            transaction_properties=transaction_properties,
            commit_lock=commit_lock,
            transaction_uuid=transaction_uuid,
        )
    if kind == "Overwrite":
        if max_retries == 0:
            check_strict_overwrite(base_uri, read_version, storage_options)

        frags = [as_fragment_metadata(f) for f in operation.fragments]
        for f in frags:
            if f.deletion_file is not None:
                raise ValueError("Overwrite: a fragment with a deletion file cannot be committed (use Delete)")
        return commit(
            base_uri,
            "overwrite",
            fragments=frags,
            schema=as_pyarrow_schema(operation.new_schema),
            read_version=read_version,
            storage_options=storage_options,
            enable_stable_row_ids=bool(enable_stable_row_ids),
            transaction_properties=transaction_properties,
            commit_lock=commit_lock,
            enable_v2_manifest_paths=enable_v2_manifest_paths,
            transaction_uuid=transaction_uuid,
        )
    return commit_any(
        base_uri,
        operation,
        read_version,
        storage_options,
        transaction_properties=transaction_properties,
        commit_lock=commit_lock,
    )
