"""Detached commits (``LanceDataset.commit(..., detached=True)``): a version built on the read version but outside the
dataset's lineage. Its number is random with the top bit set (pylance's ``DETACHED_VERSION_MASK``), its manifest
``_versions/d{version}.manifest``: listings skip it, it never becomes the latest, and only ``checkout_version(version)``
finds it (table format, "Detached versions"). No conflict check: nothing is committed on top of it."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from lancelot.dataset.commit import Versions, list_versions, load_manifest
from lancelot.dataset.commit_options import (
    DETACHED_VERSION_MASK,
    CommitRequest,
    check_deadline,
    create_manifest,
    detached_manifest_name,
    with_commit_lock,
)
from lancelot.dataset.manifest import VERSIONS_DIR, ManifestFile, serialize_manifest
from lancelot.dataset.store import ObjectStore
from lancelot.dataset.transaction import TRANSACTIONS_DIR, transaction_name
from lancelot.dataset.transaction_api import TransactionError, UnsupportedTransactionError, fragment_protos
from lancelot.dataset.writing import Committed
from lancelot.errors import CommitConflictError, VersionNotFoundError
from lancelot.format.pb import transaction_pb2

if TYPE_CHECKING:
    from lancelot.dataset.commit import Builder

#: random versions tried before giving up (a clash needs two equal random 63-bit numbers)
ATTEMPTS = 20


def commit_detached(req: CommitRequest) -> Committed:
    """Commit ``req``'s operation (or ``Transaction``) as a detached version on top of its read version."""
    from lancelot.dataset.transaction_plan import plan_operation

    req = req.unwrapped()
    operation, read_version, tid = req.operation, req.read_version, req.transaction_uuid
    props = dict(req.transaction_properties or {})
    store = ObjectStore(req.uri, req.storage_options)
    uri = store.uri
    versions = list_versions(store, uri)
    if read_version is None:
        read_version = versions.latest
    if read_version is None:
        raise TransactionError(f"dataset {uri!r} does not exist: a detached commit needs a version to build on")
    if versions.scheme == "v1":
        raise UnsupportedTransactionError(
            f"dataset {uri!r}: Not supported: detached commits cannot be used with v1 manifest paths"
        )
    read = _read_manifest(store, uri, versions, int(read_version))
    pb = transaction_pb2.Transaction(read_version=int(read_version))
    if tid:
        pb.uuid = tid
    else:
        import uuid as _uuid

        pb.uuid = str(_uuid.uuid4())
    for k, v in props.items():
        pb.transaction_properties[k] = v
    build = _append_builder(operation, pb, uri) or plan_operation(operation, pb, store, uri, read)
    name = transaction_name(pb)
    store.put(f"{TRANSACTIONS_DIR}/{name}", pb.SerializeToString())
    locked = with_commit_lock(store, req.commit_lock)
    for _ in range(ATTEMPTS):
        check_deadline(uri)
        version = secrets.randbits(64) | DETACHED_VERSION_MASK
        m, index = build(read, version)
        m.version = version
        m.transaction_file = name
        file = detached_manifest_name(version)
        try:
            create_manifest(locked, f"{VERSIONS_DIR}/{file}", version, serialize_manifest(m, index))
        except FileExistsError:
            continue
        known = (Versions({version: file}, "v2"), ManifestFile(m, index, None))
        return Committed(uri, version, req.storage_options, store, known)
    raise CommitConflictError(f"dataset {uri!r}: no unused detached version found after {ATTEMPTS} tries")


def _read_manifest(store: ObjectStore, uri: str, versions: Versions, version: int) -> ManifestFile:
    from lancelot.dataset.commit import locate_version

    if version in versions.names:
        return load_manifest(store, uri, versions, version)
    found = locate_version(store, uri, version)  # a detached read version: found by its name only
    if found is None:
        raise VersionNotFoundError(f"dataset {uri!r}: read version {version} does not exist")
    return found[1]


def _append_builder(operation: Any, pb: transaction_pb2.Transaction, uri: str) -> Builder | None:
    """An Append's builder (the other kinds are planned as attached commits plan them)."""
    from lancelot.dataset.operation import build_append

    kind = type(operation).__name__
    if kind == "Overwrite":
        raise NotImplementedError("lancelot does not commit a detached Overwrite")
    if kind != "Append":
        return None
    frags = fragment_protos(list(operation.fragments))
    for f in frags:
        f.ClearField("id")
    pb.append.fragments.extend(frags)
    return build_append(frags, uri)
