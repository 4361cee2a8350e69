"""Shallow clones (transaction.proto ``Clone``; table format, "Base paths"): a new dataset whose first
manifest is the source's manifest at ``ref_version``, with every data file, deletion file and index
that lived in the source's own root now pointing at it through a new ``base_paths`` entry
(``is_dataset_root``). No data is copied; the clone's version number is the source's.

``LanceDataset.shallow_clone`` and ``LanceDataset.commit(target, LanceOperation.Clone(...))`` both
land here, as in pylance.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from lancelot.dataset.commit import Versions, _write_hint, list_versions, load_manifest
from lancelot.dataset.commit_options import with_commit_lock
from lancelot.dataset.manifest import (
    FLAG_STABLE_ROW_IDS,
    VERSIONS_DIR,
    ManifestFile,
    manifest_name,
    serialize_manifest,
)
from lancelot.dataset.operation import _finish, _start
from lancelot.dataset.store import ObjectStore
from lancelot.dataset.transaction import TRANSACTIONS_DIR, new_transaction, transaction_name
from lancelot.errors import DatasetNotFoundError, VersionNotFoundError
from lancelot.format.pb import table_pb2

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset


def commit_clone(
    target: str | os.PathLike[str],
    operation: Any,
    read_version: int | None,
    storage_options: dict[str, Any] | None,
    *,
    transaction_properties: dict[str, str] | None = None,
    commit_lock: Any = None,
) -> LanceDataset:
    """Create the dataset ``target`` as a shallow clone of ``operation.ref_path`` at ``ref_version``."""
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.write import DatasetExistsError

    if not operation.is_shallow:
        raise NotImplementedError("lancelot commits shallow clones only (is_shallow=True)")
    if getattr(operation, "branch_name", None):
        raise NotImplementedError("lancelot has no branches: a Clone with a branch_name is not supported")
    ref_path = str(operation.ref_path)
    source = ObjectStore(ref_path, storage_options)
    versions = list_versions(source, source.uri)
    if versions.latest is None:
        raise DatasetNotFoundError(f"dataset {source.uri!r} (the clone's source) does not exist", path=source.uri)
    ref_version = int(operation.ref_version)
    if ref_version not in versions.names:
        raise VersionNotFoundError(f"dataset {source.uri!r}: version {ref_version} (to clone) does not exist")
    src = load_manifest(source, source.uri, versions, ref_version)
    store = ObjectStore(target, storage_options)
    uri = store.uri
    existing = list_versions(store, uri)
    if existing.latest is not None:
        raise DatasetExistsError(f"dataset {uri!r} already exists (version {existing.latest}): cannot clone into it")
    m, index = _cloned_manifest(src, ref_path, operation.ref_name)
    txn = new_transaction(int(read_version or 0))
    c = txn.clone
    c.is_shallow, c.ref_version, c.ref_path = True, ref_version, ref_path
    if operation.ref_name is not None:
        c.ref_name = str(operation.ref_name)
    for k, v in (transaction_properties or {}).items():
        txn.transaction_properties[k] = v
    name = transaction_name(txn)
    store.put(f"{TRANSACTIONS_DIR}/{name}", txn.SerializeToString())
    m.transaction_file = name
    file = manifest_name(ref_version, "v2")
    with_commit_lock(store, commit_lock).put_if_not_exists(f"{VERSIONS_DIR}/{file}", serialize_manifest(m, index))
    _write_hint(store, ref_version)
    known = (Versions({ref_version: file}, "v2"), ManifestFile(m, index, None))
    return LanceDataset(uri, version=ref_version, storage_options=storage_options, _store=store, _committed=known)


def _cloned_manifest(src: ManifestFile, ref_path: str, ref_name: str | None) -> tuple[table_pb2.Manifest, bytes | None]:
    """The source manifest with its own root's files re-based onto a new base path."""
    m = _start(src)
    base_id = max((int(b.id) for b in m.base_paths), default=-1) + 1
    for f in m.fragments:
        for d in f.files:
            if not d.HasField("base_id"):
                d.base_id = base_id
        if f.HasField("deletion_file") and not f.deletion_file.HasField("base_id"):
            f.deletion_file.base_id = base_id
    bp = m.base_paths.add(id=base_id, is_dataset_root=True, path=ref_path)
    if ref_name is not None:
        bp.name = str(ref_name)
    index = src.index_section
    if index:
        section = table_pb2.IndexSection()
        section.ParseFromString(index)
        for i in section.indices:
            if not i.HasField("base_id"):
                i.base_id = base_id
        index = section.SerializeToString()
    _finish(m, int(src.manifest.version), bool(src.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS))
    return m, index
