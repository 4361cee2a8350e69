"""Shallow clones (transaction.proto ``Clone``; table format, "Base paths"): a new dataset whose first manifest is the
source's manifest at ``ref_version``, with every data file, deletion file and index that lived in the source's own root
now pointing at it through a new ``base_paths`` entry (``is_dataset_root``). No data is copied; the clone's version
number is the source's.

``LanceDataset.shallow_clone`` and ``LanceDataset.commit(target, LanceOperation.Clone(...))`` both land here, as in
pylance. A deep clone (``LanceDataset.deep_clone``) copies the version's own files (data, deletion and index files in
the source's root) into the target, whose manifest is then the source's as it is; committing a deep Clone operation
directly is refused, as pylance refuses it (the files would not be there)."""

from __future__ import annotations

import os
import uuid as _uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lancelot.dataset.commit import Versions, list_versions, load_manifest, write_version_hint
from lancelot.dataset.commit_options import CommitRequest, create_manifest, with_commit_lock
from lancelot.dataset.manifest import FLAG_STABLE_ROW_IDS, VERSIONS_DIR, ManifestFile, manifest_name, serialize_manifest
from lancelot.dataset.operation import finish_manifest, start_manifest
from lancelot.dataset.store import ObjectStore
from lancelot.dataset.transaction import TRANSACTIONS_DIR, new_transaction, transaction_name
from lancelot.dataset.transaction_api import InvalidOperationError
from lancelot.dataset.writing import Committed
from lancelot.errors import DatasetNotFoundError, VersionNotFoundError
from lancelot.format.pb import table_pb2

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset


def commit_clone(req: CommitRequest, *, _copied: bool = False) -> Committed:
    """Create the dataset ``req.uri`` as a clone of ``req.operation.ref_path`` at its ``ref_version`` (a deep one only
    from ``deep_clone``, ``_copied``: after it copied the files)."""
    from lancelot.dataset.writing import DatasetExistsError

    operation, storage_options = req.operation, req.storage_options

    if not operation.is_shallow and not _copied:
        raise InvalidOperationError(
            "Invalid user input: A deep Clone cannot be committed directly: the commit does not copy the source "
            "files, so the new dataset would reference files that do not exist. Use deep_clone instead."
        )
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
    store = ObjectStore(req.uri, storage_options)
    uri = store.uri
    existing = list_versions(store, uri)
    if existing.latest is not None:
        raise DatasetExistsError(f"dataset {uri!r} already exists (version {existing.latest}): cannot clone into it")
    if operation.is_shallow:
        m, index = _cloned_manifest(src, ref_path, operation.ref_name)
    else:
        m, index = start_manifest(src), src.index_section
        finish_manifest(m, ref_version, bool(src.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS))
    txn = new_transaction(int(req.read_version or 0))
    c = txn.clone
    c.is_shallow, c.ref_version, c.ref_path = bool(operation.is_shallow), ref_version, ref_path
    if operation.ref_name is not None:
        c.ref_name = str(operation.ref_name)
    for k, v in (req.transaction_properties or {}).items():
        txn.transaction_properties[k] = v
    name = transaction_name(txn)
    store.put(f"{TRANSACTIONS_DIR}/{name}", txn.SerializeToString())
    m.transaction_file = name
    file = manifest_name(ref_version, "v2")
    locked = with_commit_lock(store, req.commit_lock)
    create_manifest(locked, f"{VERSIONS_DIR}/{file}", ref_version, serialize_manifest(m, index))
    write_version_hint(store, ref_version)
    known = (Versions({ref_version: file}, "v2"), ManifestFile(m, index, None))
    return Committed(uri, ref_version, storage_options, store, known)


def _cloned_manifest(src: ManifestFile, ref_path: str, ref_name: str | None) -> tuple[table_pb2.Manifest, bytes | None]:
    """The source manifest with its own root's files re-based onto a new base path."""
    m = start_manifest(src)
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
    finish_manifest(m, int(src.manifest.version), bool(src.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS))
    return m, index


def deep_clone(
    source: LanceDataset, target: str | os.PathLike[str], version: int, storage_options: dict[str, Any] | None
) -> Committed:
    """Copy version ``version``'s own files (those in the source's root) into ``target``, then commit the deep Clone
    there (pylance's ``deep_clone``)."""
    from lancelot.dataset.deletion import deletion_path
    from lancelot.dataset.fragment_metadata import DATA_DIR
    from lancelot.dataset.lance_operation import LanceOperation
    from lancelot.dataset.writing import DatasetExistsError

    at = source.checkout_version(version)
    dest = ObjectStore(target, storage_options)
    if list_versions(dest, dest.uri).latest is not None:
        raise DatasetExistsError(f"dataset {dest.uri!r} already exists: cannot clone into it")
    paths: list[str] = []
    for f in at.manifest.fragments:
        paths += [f"{DATA_DIR}/{d.path}" for d in f.files if not d.HasField("base_id")]
        if f.HasField("deletion_file") and not f.deletion_file.HasField("base_id"):
            paths.append(deletion_path(int(f.id), f.deletion_file))
    if at.manifest_file.index_section:
        section = table_pb2.IndexSection()
        section.ParseFromString(at.manifest_file.index_section)
        for i in section.indices:
            if not i.HasField("base_id"):
                folder = f"_indices/{_uuid.UUID(bytes=bytes(i.uuid.uuid))}"
                paths += [f"{folder}/{name}" for name in at.store.list(folder)]
    for p in paths:
        _copy(at.store, dest, p)
    op = LanceOperation.Clone(False, None, int(version), source.uri)
    return commit_clone(CommitRequest(dest.uri, op, int(version), storage_options), _copied=True)


def _copy(src: ObjectStore, dest: ObjectStore, path: str) -> None:
    """One file, from ``src`` to the same path under ``dest`` (a file copy on a local disk)."""
    if src.is_local and dest.is_local:
        import shutil

        out = dest.full_path(path)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        shutil.copyfile(src.full_path(path), out)
    else:
        dest.put(path, src.read(path))


@dataclass(frozen=True)
class DatasetBasePath:
    """A base path registered in a dataset's manifest (a shallow clone's source, a directory of data files), as
    pylance's ``DatasetBasePath``."""

    id: int
    name: str | None
    path: str
    is_dataset_root: bool
