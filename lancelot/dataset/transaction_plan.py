"""Planning a ``LanceOperation``'s commit (``LanceDataset.commit``): each operation filled into its
transaction.proto message and given the builder of its manifest (operation.py, operation_changes.py,
config.py; DataReplacement and CreateIndex here).  Operations are read by class name and fields, so
pylance's objects plan too.  Below the attached and detached commits (transaction_commit.py,
detached.py), which both commit what ``plan_operation`` builds.
"""

from __future__ import annotations

import uuid as _uuid
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lancelot.dataset.config import build_restore, build_update_config
from lancelot.dataset.fragment_metadata import as_data_file
from lancelot.dataset.manifest import FLAG_STABLE_ROW_IDS, ManifestFile, fix_data_format
from lancelot.dataset.operation import build_delete, finish_manifest, start_manifest
from lancelot.dataset.operation_changes import NewFragment, build_merge, build_project, build_update
from lancelot.dataset.rowids import row_ids, row_versions
from lancelot.dataset.store import ObjectStore
from lancelot.dataset.transaction_api import (
    TransactionError,
    fragment_protos,
    schema_fields_of,
)
from lancelot.errors import LanceError, VersionNotFoundError
from lancelot.format.pb import rowids_pb2, table_pb2, transaction_pb2

if TYPE_CHECKING:
    from lancelot.dataset.commit import Builder


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
        m = start_manifest(base)
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
        finish_manifest(m, version, stable)
        return m, base.index_section

    return build


def plan_operation(
    op: Any, pb: transaction_pb2.Transaction, store: ObjectStore, uri: str, read: ManifestFile | None
) -> Builder:
    """Fill ``pb`` with ``op`` and return the builder of its manifest."""
    kind = type(op).__name__
    if read is None and kind not in ("Restore",):
        raise TransactionError(f"dataset {uri!r} does not exist: only Overwrite can create it")
    if kind == "Delete":
        updated = fragment_protos(list(op.updated_fragments))
        pb.delete.updated_fragments.extend(updated)
        pb.delete.deleted_fragment_ids.extend(int(i) for i in op.deleted_fragment_ids)
        pb.delete.predicate = str(op.predicate or "")
        return build_delete(updated, [int(i) for i in op.deleted_fragment_ids], uri)
    if kind == "Update":
        assert read is not None
        u = pb.update
        updated = fragment_protos(list(op.updated_fragments))
        removed = [int(i) for i in op.removed_fragment_ids]
        touched = set(removed) | {int(f.id) for f in updated}
        new = []
        for f in fragment_protos(list(op.new_fragments)):
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
        frags = fragment_protos(list(op.fragments))
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
    for f in getattr(index, "files", None) or ():
        m.files.add(path=str(f.path), size_bytes=int(f.size_bytes))
    return m


def build_create_index(new: list[table_pb2.IndexMetadata], removed: list[table_pb2.IndexMetadata], uri: str) -> Builder:
    """The index section with ``removed`` (by uuid) taken out and ``new`` added."""

    def build(base: ManifestFile | None, version: int) -> tuple[table_pb2.Manifest, bytes | None]:
        if base is None:
            raise LanceError(f"dataset {uri!r} does not exist")
        m = start_manifest(base, take=True)
        section = table_pb2.IndexSection()
        if base.index_section:
            section.ParseFromString(base.index_section)
        gone = {bytes(i.uuid.uuid) for i in removed} | {bytes(i.uuid.uuid) for i in new}
        keep = [i for i in section.indices if bytes(i.uuid.uuid) not in gone]
        del section.indices[:]
        section.indices.extend(keep + list(new))
        finish_manifest(m, version, bool(m.reader_feature_flags & FLAG_STABLE_ROW_IDS))
        out: bytes = section.SerializeToString()
        return m, out

    return build
