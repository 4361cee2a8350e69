"""Options every commit takes, as pylance's ``write_dataset`` / ``LanceDataset.commit`` do: a commit
message and transaction properties (transaction.proto ``Transaction.transaction_properties``, the
message under the reserved key ``__lance_commit_message``), and a user's commit lock.

The commit lock is pylance's ``CommitLock``: a callable taking the version about to be committed and
returning a context manager, entered before that version's manifest is written and exited after
(with the exception, when the write failed). An exception from the lock fails the commit, as in
pylance 14.0.2 (a ``CommitLockError``, an OSError naming the lock's error; not retried). lancelot
still creates the manifest with put-if-not-exists inside the lock, so the lock adds safety on stores
without an atomic create and costs nothing on those with one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from lancelot.dataset.manifest import VERSIONS_DIR, parse_manifest_name
from lancelot.dataset.store import ObjectStore
from lancelot.errors import LanceError, _OSErrorMessage
from lancelot.format.pb import transaction_pb2

#: the transaction property pylance stores a commit message under
LANCE_COMMIT_MESSAGE_KEY = "__lance_commit_message"

CommitLock = Callable[[int], AbstractContextManager[None]]


def merged_properties(commit_message: str | None, properties: Mapping[str, str] | None) -> dict[str, str]:
    """The transaction properties to store: ``properties`` with the commit message over its key
    (pylance's priority)."""
    out = {str(k): str(v) for k, v in (properties or {}).items()}
    if commit_message is not None:
        out[LANCE_COMMIT_MESSAGE_KEY] = str(commit_message)
    return out


def set_properties(txn: transaction_pb2.Transaction, properties: Mapping[str, str] | None) -> None:
    for k, v in (properties or {}).items():
        txn.transaction_properties[k] = v


def check_commit_lock(commit_lock: Any) -> None:
    """pylance's check: a commit lock must be callable (TypeError otherwise)."""
    if commit_lock and not callable(commit_lock):
        raise TypeError(f"commit_lock must be a function, got {type(commit_lock)}")


class LockedStore(ObjectStore):
    """The dataset's store, with each manifest creation under ``_versions/`` done inside the user's
    commit lock for its version (every other object written as the store does)."""

    def __init__(self, store: ObjectStore, commit_lock: CommitLock) -> None:  # noqa: D107 - a view of ``store``
        self.__dict__.update(store.__dict__)
        self._commit_lock = commit_lock

    def put_if_not_exists(self, path: str, data: bytes) -> None:
        name = path.rsplit("/", 1)[-1]
        parsed = parse_manifest_name(name) if path.startswith(f"{VERSIONS_DIR}/") else None
        version = parsed[0] if parsed is not None else detached_version_of(name)
        if version is None:
            super().put_if_not_exists(path, data)
            return
        try:
            lease = self._commit_lock(version)
            lease.__enter__()
        except Exception as e:
            raise CommitLockError.of(e) from e
        try:
            super().put_if_not_exists(path, data)
        except BaseException:
            try:
                if lease.__exit__(*sys.exc_info()):
                    return
            except Exception as e:
                raise CommitLockError.of(e) from e
            raise
        try:
            lease.__exit__(None, None, None)
        except Exception as e:
            raise CommitLockError.of(e) from e


class CommitLockError(_OSErrorMessage, LanceError, OSError):
    """The user's commit lock raised (on taking or releasing): pylance's OSError "Error from commit
    handler: <class>: <message>", not retried."""

    @staticmethod
    def of(e: BaseException) -> CommitLockError:
        return CommitLockError(f"Error from commit handler: {type(e).__name__}: {e}")


def lock_of(dataset: Any) -> CommitLock | None:
    """The commit lock a dataset object was opened with (``lancelot.dataset(uri, commit_lock=...)``),
    if ``dataset`` is one: writes through it (``write_dataset(data, ds)``, ``ds.insert``) take it."""
    store = getattr(dataset, "store", None)
    return store._commit_lock if isinstance(store, LockedStore) else None


def with_commit_lock(store: ObjectStore, commit_lock: CommitLock | None) -> ObjectStore:
    """``store`` itself, or a view of it whose commits take ``commit_lock``."""
    check_commit_lock(commit_lock)
    return LockedStore(store, commit_lock) if commit_lock else store


# -- detached versions (table format: a version outside the lineage, top bit set) --------------------

#: the bit that marks a detached version (pylance's ``DETACHED_VERSION_MASK``)
DETACHED_VERSION_MASK = 1 << 63


def is_detached(version: int) -> bool:
    return int(version) & DETACHED_VERSION_MASK != 0


def detached_manifest_name(version: int) -> str:
    """``d{version}.manifest``: after every attached manifest in a listing, and skipped by it."""
    return f"d{int(version)}.manifest"


def detached_version_of(name: str) -> int | None:
    if name.startswith("d") and name.endswith(".manifest") and name[1 : -len(".manifest")].isdigit():
        return int(name[1 : -len(".manifest")])
    return None
