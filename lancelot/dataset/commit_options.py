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

import copy
import dataclasses
import datetime as _dt
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from lancelot.dataset.store import ObjectStore
from lancelot.errors import LanceError, LanceValueError, OSErrorMessage
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


def create_manifest(store: ObjectStore, path: str, version: int, data: bytes) -> None:
    """Create ``version``'s manifest at ``path`` (``put_if_not_exists``), inside the store's commit lock for that
    version when it has one (``with_commit_lock``).

    Raises:
        FileExistsError: Another writer created it first.
        CommitLockError: The lock raised on taking or releasing (an OSError).
    """
    if store.commit_lock is None:
        store.put_if_not_exists(path, data)
        return
    try:
        lease = store.commit_lock(version)
        lease.__enter__()
    except Exception as e:
        raise CommitLockError.of(e) from e
    try:
        store.put_if_not_exists(path, data)
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


class CommitLockError(OSErrorMessage, LanceError, OSError):
    """The user's commit lock raised (on taking or releasing): pylance's OSError "Error from commit
    handler: <class>: <message>", not retried."""

    @staticmethod
    def of(e: BaseException) -> CommitLockError:
        return CommitLockError(f"Error from commit handler: {type(e).__name__}: {e}")


def lock_of(dataset: Any) -> CommitLock | None:
    """The commit lock a dataset object was opened with (``lancelot.dataset(uri, commit_lock=...)``),
    if ``dataset`` is one: writes through it (``write_dataset(data, ds)``, ``ds.insert``) take it."""
    store = getattr(dataset, "store", None)
    return store.commit_lock if isinstance(store, ObjectStore) else None


def with_commit_lock(store: ObjectStore, commit_lock: CommitLock | None) -> ObjectStore:
    """``store`` itself, or a copy of it (sharing its file system) whose commits take ``commit_lock``."""
    check_commit_lock(commit_lock)
    if not commit_lock:
        return store
    locked = copy.copy(store)
    locked.commit_lock = commit_lock
    return locked


# -- detached versions (table format: a version outside the lineage, top bit set) --------------------

#: the bit that marks a detached version (pylance's ``DETACHED_VERSION_MASK``)
DETACHED_VERSION_MASK = 1 << 63


def is_detached(version: int) -> bool:
    return int(version) & DETACHED_VERSION_MASK != 0


def detached_manifest_name(version: int) -> str:
    """``d{version}.manifest``: after every attached manifest in a listing, and skipped by it."""
    return f"d{int(version)}.manifest"


# -- commit_timeout: how long a commit, its retries included, may take (pylance's CommitBuilder timeout)


class CommitTimeoutError(OSErrorMessage, LanceError, TimeoutError):
    """The commit did not finish within ``commit_timeout`` (pylance raises TimeoutError)."""


class InvalidCommitTimeoutError(OSErrorMessage, LanceValueError, OSError):
    """A ``commit_timeout`` pylance refuses: zero (its OSError) or negative (its ValueError)."""


#: (monotonic deadline, the timeout) of the commit under way in this thread/context, if it has one
_DEADLINE: ContextVar[tuple[float, _dt.timedelta] | None] = ContextVar("lancelot_commit_deadline", default=None)


def _duration_text(d: _dt.timedelta) -> str:
    """A duration as Rust's ``Duration`` debug-prints it (``1µs``, ``2.5ms``, ``1800s``)."""
    us = d // _dt.timedelta(microseconds=1)
    for unit, size in (("s", 1_000_000), ("ms", 1000)):
        if us >= size:
            return f"{us / size:g}{unit}"
    return f"{us}µs"


@contextmanager
def commit_deadline(timeout: _dt.timedelta | None) -> Iterator[None]:
    """Run a commit that must finish within ``timeout`` (None: no limit), checked before each attempt;
    pylance's rules for the value: a timedelta, positive (zero: an invalid-input OSError)."""
    if timeout is not None and not isinstance(timeout, _dt.timedelta):
        raise TypeError(
            f"argument 'commit_timeout': {type(timeout).__name__!r} object is not an instance of 'timedelta'"
        )
    if timeout is not None and timeout < _dt.timedelta(0):
        raise InvalidCommitTimeoutError("It is not possible to convert a negative timedelta to a Rust Duration")
    if timeout is not None and not timeout:
        raise InvalidCommitTimeoutError(
            "Invalid user input: CommitBuilder timeout must be non-zero; pass `None` to disable"
        )
    token = _DEADLINE.set((time.monotonic() + timeout.total_seconds(), timeout) if timeout is not None else None)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check_deadline(uri: str) -> None:
    """Raise CommitTimeoutError when the commit under way is past its ``commit_timeout``."""
    got = _DEADLINE.get()
    if got is not None and time.monotonic() >= got[0]:
        raise CommitTimeoutError(
            f"dataset {uri!r}: Operation timed out: Commit timed out after {_duration_text(got[1])}. "
            "Increase commit_timeout or pass None to disable."
        )


@dataclass(frozen=True)
class CommitRequest:
    """One commit of a ``LanceOperation`` or ``Transaction`` (``LanceDataset.commit``, ``commit_batch``,
    a Clone), its arguments gathered once and handed whole down the commit wing
    (transaction_commit.py, detached.py, clone.py)."""

    uri: Any
    operation: Any
    read_version: int | None = None
    storage_options: dict[str, Any] | None = None
    commit_lock: Any = None
    transaction_properties: dict[str, str] | None = None
    transaction_uuid: str | None = None
    enable_v2_manifest_paths: bool | None = None
    enable_stable_row_ids: bool | None = None
    max_retries: int = 20

    def unwrapped(self) -> CommitRequest:
        """A ``Transaction`` as its operation, with its read version, uuid and properties (these win
        over the request's, as in pylance); a bare operation as it is."""
        t = self.operation
        if type(t).__name__ != "Transaction":
            return self
        props = dict(t.transaction_properties or {})
        return dataclasses.replace(
            self, operation=t.operation, read_version=int(t.read_version), transaction_uuid=str(t.uuid),
            transaction_properties=props,
        )  # fmt: skip

    def but(self, **changes: Any) -> CommitRequest:
        return dataclasses.replace(self, **changes)
