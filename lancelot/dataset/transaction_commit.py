"""Committing a ``LanceOperation`` or ``Transaction`` (``LanceDataset.commit``, ``commit_batch``):
each operation planned (transaction_plan.py), then committed with the conflict rules of its kind
(transaction.py) against what was committed since its read version; ``detached`` ones through
detached.py, Clone through clone.py.  The version committed is returned as a ``Committed``, which
``LanceDataset`` opens (dataset_versions.py).
"""

from __future__ import annotations

import os
import uuid as _uuid
from collections.abc import Sequence
from typing import Any

from lancelot.dataset.commit import commit_manifest
from lancelot.dataset.commit_options import CommitRequest, check_commit_lock, merged_properties, with_commit_lock
from lancelot.dataset.lance_operation import LanceOperation, as_fragment_metadata
from lancelot.dataset.store import ObjectStore
from lancelot.dataset.transaction_api import (
    InvalidOperationError,
    Transaction,
    TransactionError,
    UnsupportedTransactionError,
    as_pyarrow_schema,
)
from lancelot.dataset.transaction_plan import plan_operation
from lancelot.dataset.write_options import WriteOptions
from lancelot.dataset.writing import Committed, commit_version
from lancelot.errors import VersionNotFoundError
from lancelot.format.pb import transaction_pb2


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


def commit_any(req: CommitRequest) -> Committed:
    """Commit a ``Transaction`` (its read version, uuid and properties) or a bare operation (with the
    request's transaction properties), its manifest written under the request's commit lock if any."""
    from lancelot.dataset.commit import list_versions, load_manifest

    was_txn = type(req.operation).__name__ == "Transaction"
    req = req.unwrapped()
    kind = type(req.operation).__name__
    if was_txn and kind in ("Append", "Overwrite"):
        return commit_operation(req if kind == "Append" else req.but(read_version=req.read_version or None))
    if kind == "Clone":
        from lancelot.dataset.clone import commit_clone

        return commit_clone(req)
    operation, read_version, storage_options = req.operation, req.read_version, req.storage_options
    store = ObjectStore(req.uri, storage_options)
    uri = store.uri
    versions = list_versions(store, uri)
    if read_version is None:  # a Restore: against the latest
        read_version = versions.latest
    read = None
    if read_version is not None and versions.latest is not None:
        if int(read_version) not in versions.names:
            raise VersionNotFoundError(f"dataset {uri!r}: read version {read_version} does not exist")
        read = load_manifest(store, uri, versions, int(read_version))
    pb = transaction_pb2.Transaction(
        read_version=int(read_version or 0), uuid=req.transaction_uuid or str(_uuid.uuid4())
    )
    for k, v in (req.transaction_properties or {}).items():
        pb.transaction_properties[k] = v
    # (a Delete given as an operation carries deletion files, not its rows: a commit since that changed the same
    # fragments' deletions is a retryable conflict, as pylance's, since ``commit_manifest`` rebases none unasked)
    build = plan_operation(operation, pb, store, uri, read)
    known = None
    if read is not None and read_version == versions.latest:  # (the commit neither lists nor reads it again)
        read.owned = True  # (planned already: the builder may take its message over)
        known = (versions, read)
    version, listed, mf = commit_manifest(
        with_commit_lock(store, req.commit_lock), uri, pb, build, read_version=read_version, known=known
    )
    return Committed(uri, version, storage_options, store, (listed, mf) if mf is not None else None)


def refuse_unsupported(**options: Any) -> None:
    """pylance's options lancelot has no use for: refused unless left at their defaults (None)."""
    given = sorted(k for k, v in options.items() if v is not None)
    if given:
        raise NotImplementedError(f"lancelot's commit does not support {', '.join(given)}")


def commit_with_options(req: CommitRequest, *, detached: bool = False, commit_message: str | None = None) -> Committed:
    """``LanceDataset.commit``: pylance's argument checks, then a detached or an attached commit."""
    check_commit_lock(req.commit_lock)
    if not isinstance(req.uri, (str, os.PathLike)):  # (a LanceDataset: its uri and storage options, given)
        raise TypeError(f"base_uri must be str, Path, or LanceDataset, got {type(req.uri)}")
    kind = type(req.operation).__name__
    if kind == "Transaction" and commit_message is not None:
        raise TransactionError(
            "commit_message is not supported when calling commit with a Transaction.  Set the message on the "
            "transaction properties instead."
        )
    req = req.but(transaction_properties=merged_properties(commit_message, None))
    if kind in ("Append", "Overwrite") and req.read_version and not detached:
        _check_read_version(req.uri, int(req.read_version), req.storage_options)
    if detached:
        from lancelot.dataset.detached import commit_detached

        if kind != "Transaction" and req.read_version is None and kind not in ("Overwrite", "Restore"):
            raise ValueError("read_version is required for all operations except Overwrite and Restore")
        return commit_detached(req)
    return commit_operation(req)


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

        ds = commit_detached(CommitRequest(dest, merged, None, storage_options, commit_lock))
    else:
        ds = commit_any(CommitRequest(dest, merged, None, storage_options, commit_lock))
    return {"dataset": ds, "merged": merged}


def commit_operation(req: CommitRequest) -> Committed:
    """Commit ``req.operation`` (a ``LanceOperation`` or a ``Transaction``) as one new version
    (``LanceDataset.commit``); ``max_retries=0`` makes an Overwrite strict (pylance's "strict
    overwrite": refused if any version was committed after ``read_version``)."""
    operation, read_version = req.operation, req.read_version
    kind = type(operation).__name__
    if kind == "Transaction":
        return commit_any(req.but(read_version=None))
    if not hasattr(operation, "__dataclass_fields__"):
        raise TypeError(f"operation must be a LanceOperation.BaseOperation or Transaction, got {type(operation)}")
    if read_version is None and kind not in ("Overwrite", "Restore"):
        raise ValueError("read_version is required for all operations except Overwrite and Restore")
    if kind not in ("Append", "Overwrite"):
        return commit_any(req)
    frags = [as_fragment_metadata(f) for f in operation.fragments]
    if kind == "Overwrite":
        if req.max_retries == 0:
            check_strict_overwrite(req.uri, read_version, req.storage_options)
        for f in frags:
            if f.deletion_file is not None:
                raise InvalidOperationError(
                    f"Invalid user input: Overwrite fragments must be newly written, but fragment {f.id} carries "
                    f"deletion file {f.deletion_file.path(f.id)}. Use Delete to commit deletions against existing "
                    "fragments, or Merge to change their schema."
                )
    options = WriteOptions(
        storage_options=req.storage_options,
        enable_stable_row_ids=bool(req.enable_stable_row_ids),
        transaction_properties=req.transaction_properties,
        commit_lock=req.commit_lock,
        enable_v2_manifest_paths=req.enable_v2_manifest_paths is not False if kind == "Overwrite" else True,
    )
    schema = as_pyarrow_schema(operation.new_schema) if kind == "Overwrite" else None
    read_version = read_version or None if kind == "Append" else read_version  # (Append at 0: checked against nothing)
    return commit_version(
        req.uri,
        kind.lower(),
        frags,
        options,
        schema=schema,
        read_version=read_version,
        transaction_uuid=req.transaction_uuid,
    )
