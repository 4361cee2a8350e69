"""``LanceDataset``'s versions and tags: resolving, listing and checking out versions, ``restore``, and the static
``commit`` / ``drop`` (dataset/commit.py, refs.py, lance_operation.py)."""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from lancelot.dataset.commit import commit_manifest, latest_hinted, list_versions
from lancelot.dataset.transaction import new_transaction
from lancelot.errors import DatasetNotFoundError, LanceValueError, VersionNotFoundError

if TYPE_CHECKING:
    from lancelot.dataset.commit import Versions
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.delta import DatasetDelta
    from lancelot.dataset.lance_operation import LanceOperation
    from lancelot.dataset.refs import Tags
    from lancelot.dataset.store import ObjectStore
    from lancelot.dataset.transaction_api import LanceSchema, Transaction
    from lancelot.dataset.writing import Committed


#: a version as ``checkout_version`` takes it: a number, a tag, or a (branch, version) pair
Reference = int | str | tuple[str | None, int | None]
Options = dict[str, Any] | None


class VersionsMixin:
    """LanceDataset's versions and tags (mixed into ``LanceDataset``; see dataset/dataset.py)."""

    def resolve_version(self: LanceDataset, version: int | str) -> int:
        """The version a number or a tag names (lancelot's own).

        Args:
            version: A version number (as an int or digits) or a tag name.

        Returns:
            The version number.

        Raises:
            ValueError: No such version (the listing of ``_versions/`` re-read first) or tag.
        """
        if isinstance(version, str) and not version.isdigit():
            return self.tags.get_version(version)
        v = int(version)
        self._state.versions = listed(self._store, self.uri, self._state.versions, v)
        return v

    def _version_asof(self: LanceDataset, asof: _dt.datetime | str) -> int:
        """The newest version committed before ``asof`` (pylance: a naive time is local time)."""
        from lancelot.dataset.history import as_local_time, version_asof

        found = version_asof(self.store, self.uri, asof)
        if found is None:
            cutoff = as_local_time(asof)
            raise VersionNotFoundError(f"{cutoff} is earlier than the first version of dataset {self.uri!r}")
        return found

    def version_names(self: LanceDataset) -> dict[int, str]:
        """Every version of the dataset now and its manifest's file name under ``_versions/`` (lancelot's own).

        Returns:
            ``{version: file name}``, from a fresh listing (an object opened by version knows that one only).
        """
        self._state.versions = list_versions(self._store, self.uri)
        return self._state.versions.names

    @property
    def latest_version(self: LanceDataset) -> int:
        """The newest version of the dataset now (re-read: the version hint, else a listing of ``_versions/``; not
        this object's version)."""
        latest = latest_hinted(self._store) or list_versions(self._store, self.uri).latest
        if latest is None:
            raise DatasetNotFoundError(f"dataset {self.uri!r} no longer exists (no manifest in _versions/)")
        return int(latest)

    def version_refs(self: LanceDataset) -> list[dict[str, int]]:
        """Every version of the dataset now, oldest first, without reading their manifests (pylance's ``VersionRef``
        dicts).

        Returns:
            One ``{"version": n}`` per manifest under ``_versions/`` (a fresh listing).
        """
        self._state.versions = list_versions(self._store, self.uri)
        return [{"version": v} for v in sorted(self._state.versions.names)]

    def delta(
        self: LanceDataset,
        compared_against: int | None = None,
        *,
        begin_version: int | None = None,
        end_version: int | None = None,
    ) -> DatasetDelta:
        """The changes between two versions: rows inserted or updated in the range, row ids deleted, transactions.

        Args:
            compared_against: Compare this object's version with this one (the older of the two begins the range);
                ``begin_version`` and ``end_version`` are then ignored, as pylance ignores them.
            begin_version: The start of the range (exclusive), with ``end_version``.
            end_version: The end of the range (inclusive), with ``begin_version``.

        Returns:
            A ``DatasetDelta``; its rows are read from this object's version, as pylance's.

        Raises:
            ValueError: Neither ``compared_against`` nor a range is given, or half a range.
        """
        from lancelot.dataset.delta import DatasetDelta, version_range

        return DatasetDelta(self, *version_range(self, compared_against, begin_version, end_version))

    def versions(self: LanceDataset) -> list[dict[str, Any]]:
        """Every version of the dataset, oldest first.

        Returns:
            One dict per version: ``version`` (int), ``timestamp`` (a naive datetime in local time, as pylance gives it)
                and ``metadata`` (the manifest's summary: ``total_fragments``, ``total_rows``... as strings).

        Examples:
            >>> [v["version"] for v in ds.versions()]
            [1]
        """
        from lancelot.dataset.history import versions_list

        return versions_list(self.store, self.uri)

    def get_version(self: LanceDataset) -> dict[str, Any]:
        """This object's version as ``versions()`` lists it (``version``, ``timestamp``, ``metadata``), from the
        manifest already loaded.

        Examples:
            >>> ds.get_version()["metadata"]["total_rows"]
            '10'
        """
        from lancelot.dataset.history import manifest_summary, version_time

        ts = self.manifest.timestamp
        ns = int(ts.seconds) * 1_000_000_000 + int(ts.nanos)
        return {"version": self.version, "timestamp": version_time(ns), "metadata": manifest_summary(self.manifest)}

    def tracked_files(
        self: LanceDataset,
        *,
        min_version: int | None = None,
        progress: Callable[[int, int | None], object] | None = None,
    ) -> pa.RecordBatchReader:
        """The files every version's manifest names (pylance's ``tracked_files``).

        Args:
            min_version: Only versions from this one on.
            progress: Called as ``progress(manifests_done, manifests_total)`` after each version.

        Returns:
            A ``pyarrow.RecordBatchReader`` of ``version``, ``base_uri``, ``path`` (relative to it) and ``type``
            (``"manifest"``, ``"transaction file"``, ``"data file"``, ``"deletion file"``, ``"index file"``).
        """
        from lancelot.dataset.tracked_files import tracked_files

        return tracked_files(self, min_version, progress)

    def all_files(self: LanceDataset) -> pa.RecordBatchReader:
        """Every file present under the dataset's root, named by a manifest or not (pylance's ``all_files``).

        Returns:
            A ``pyarrow.RecordBatchReader`` of ``base_uri``, ``path``, ``size_bytes`` and ``last_modified`` (UTC).
        """
        from lancelot.dataset.tracked_files import all_files

        return all_files(self)

    def checkout_version(self: LanceDataset, version: int | str | tuple[str | None, int | None]) -> LanceDataset:
        """This dataset at another version, as a new object (this one does not move).

        Args:
            version: A version number, a tag name, or pylance's ``(branch, number)`` pair with the branch None or
                ``"main"`` (lancelot has no branches).

        Returns:
            A `LanceDataset` at that version.

        Raises:
            ValueError: No such version or tag, or a branch other than main.

        Examples:
            >>> _ = ds.delete("id < 5")
            >>> ds.checkout_version(1).count_rows(), ds.count_rows()
            (10, 5)
        """
        if isinstance(version, tuple):
            branch, number = version
            if branch not in (None, "main"):
                raise LanceValueError(f"dataset {self.uri!r}: branches are not supported by lancelot ({branch!r})")
            version = number if number is not None else self.latest_version
        return type(self)(self.uri, version, storage_options=self.storage_options, _store=self._store)

    @property
    def tags(self: LanceDataset) -> Tags:
        """The dataset's tags (names for versions, under ``_refs/tags/`` as pylance writes them): ``create(tag,
        version)``, ``update``, ``delete``, ``get_version``, ``list``, ``list_ordered``.

        Examples:
            >>> ds.tags.create("first", 1)
            >>> ds.tags.get_version("first")
            1
            >>> lancelot.dataset(uri, version="first").version
            1
        """
        from lancelot.dataset.refs import Tags

        return Tags(self)

    def restore(self: LanceDataset) -> None:
        """Make this (older) version the latest again, as one new version (a Restore commit, as pylance writes it); this
        object then shows the new version.

        Examples:
            >>> _ = ds.delete("id < 5")
            >>> old = ds.checkout_version(1)
            >>> old.restore()
            >>> old.version, old.count_rows()
            (3, 10)
        """
        from lancelot.dataset.config import build_restore

        txn = new_transaction(self.latest_version)
        txn.restore.version = self.version
        v, versions, mf = commit_manifest(
            self._store, self.uri, txn, build_restore(self.manifest_file, self.uri), read_version=txn.read_version
        )
        self.move_to(v, (versions, mf) if mf is not None else None)

    @classmethod
    def commit(
        cls: type[LanceDataset],
        base_uri: str | os.PathLike[str] | LanceDataset,
        operation: LanceOperation.BaseOperation | Transaction,
        read_version: int | None = None,
        commit_lock: Any = None,
        storage_options: dict[str, Any] | None = None,
        enable_v2_manifest_paths: bool | None = None,
        detached: bool | None = False,
        max_retries: int = 20,
        *,
        commit_message: str | None = None,
        enable_stable_row_ids: bool | None = None,
        namespace_client: Any = None,
        table_id: list[str] | None = None,
        namespace_client_managed_versioning: bool = False,
        base_store_params: dict[str, dict[str, str]] | None = None,
        commit_timeout: _dt.timedelta | None = _dt.timedelta(seconds=1800),
    ) -> LanceDataset:
        """Commit a change planned elsewhere (fragments from ``LanceFragment.create`` / ``write_fragments``, a
        ``Transaction`` from ``execute_uncommitted``) as one version.

        Args:
            base_uri: the dataset (created by an ``Overwrite`` when it does not exist).
            operation: a ``LanceOperation`` (Append, Overwrite, Delete, Update, Merge, Project, Restore, Rewrite,
                DataReplacement, CreateIndex, UpdateConfig) or a ``Transaction``; fragments from lancelot or from
                pylance.
            read_version: the version the operation was planned against (required but for Overwrite and Restore; a
                Transaction carries its own).
            commit_lock: pylance's ``CommitLock``: called with the version about to be committed, it returns a context
                manager held while that version's manifest is written.
            storage_options: object-store options.
            enable_v2_manifest_paths: False names a new dataset's manifests by version (V1 naming).
            detached: commit a version outside the lineage (a random number with the top bit set): never the latest,
                found only by ``checkout_version``.
            max_retries: 0 makes an Overwrite strict, as pylance's: refused if anything was committed after
                ``read_version`` (otherwise conflicts are resolved as the operation allows).
            commit_message: stored as the transaction property ``__lance_commit_message`` (not with a Transaction: set
                its properties instead).
            enable_stable_row_ids: for an Overwrite creating the dataset, give rows stable ids.
            namespace_client: must be None (lancelot has no namespaces).
            table_id: must be None (a namespace's table id).
            namespace_client_managed_versioning: must be False.
            base_store_params: must be None (other bases are opened with ``storage_options``).
            commit_timeout: the longest the commit, its retries on conflict included, may take (checked before each
                attempt: past it, a ``CommitTimeoutError``, a TimeoutError); None: no limit; zero or negative is
                refused, as pylance refuses it.

        Returns:
            The dataset at the new version.

        Raises:
            ValueError: Append without ``read_version``; a commit_message with a Transaction.
            TypeError: a commit_lock that is not callable.
            CommitConflictError: a concurrent commit the operation cannot be rebased over (an OSError).
            CommitTimeoutError: not committed within ``commit_timeout`` (a TimeoutError).
        """
        from lancelot.dataset.commit_options import CommitRequest, commit_deadline
        from lancelot.dataset.transaction_commit import commit_with_options, refuse_unsupported

        refuse_unsupported(
            namespace_client=namespace_client,
            table_id=table_id,
            namespace_client_managed_versioning=namespace_client_managed_versioning or None,
            base_store_params=base_store_params,
        )
        base_uri, storage_options = _place(base_uri, storage_options)
        req = CommitRequest(
            base_uri, operation, read_version, storage_options, commit_lock,
            enable_v2_manifest_paths=enable_v2_manifest_paths, enable_stable_row_ids=enable_stable_row_ids,
            max_retries=max_retries,
        )  # fmt: skip
        with commit_deadline(commit_timeout):
            committed = commit_with_options(req, detached=bool(detached), commit_message=commit_message)
        return _opened(cls, committed)

    @classmethod
    def commit_batch(
        cls: type[LanceDataset],
        dest: str | os.PathLike[str] | LanceDataset,
        transactions: Sequence[Transaction],
        commit_lock: Any = None,
        storage_options: dict[str, Any] | None = None,
        enable_v2_manifest_paths: bool | None = None,
        detached: bool | None = False,
        max_retries: int = 20,
        base_store_params: dict[str, dict[str, str]] | None = None,
        commit_timeout: _dt.timedelta | None = _dt.timedelta(seconds=1800),
    ) -> dict[str, Any]:
        """Commit several Append transactions as one version (pylance's ``commit_batch``).

        Args:
            dest: The dataset (a URI or a ``LanceDataset``).
            transactions: ``Transaction`` objects of Append operations.
            commit_lock: pylance's ``CommitLock`` (see ``commit``).
            storage_options: Object-store options.
            enable_v2_manifest_paths: Accepted for pylance's signature.
            detached: Commit the merged append as a detached version (see ``commit``).
            max_retries: Accepted for pylance's signature.
            base_store_params: Must be None.
            commit_timeout: The longest the commit may take, retries included (see ``commit``).

        Returns:
            ``{"dataset": the new version, "merged": the one Append transaction committed}``.
        """
        from lancelot.dataset.commit_options import commit_deadline
        from lancelot.dataset.transaction_commit import commit_batch, refuse_unsupported

        refuse_unsupported(base_store_params=base_store_params)
        dest, storage_options = _place(dest, storage_options)
        with commit_deadline(commit_timeout):
            out = commit_batch(dest, transactions, storage_options, commit_lock=commit_lock, detached=bool(detached))
        return {**out, "dataset": _opened(cls, out["dataset"])}

    def shallow_clone(
        self: LanceDataset,
        target_path: str | os.PathLike[str],
        reference: int | str | tuple[str | None, int | None],
        storage_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> LanceDataset:
        """A new dataset at ``target_path`` holding this dataset's version ``reference`` without copying data: its
        manifest references this dataset's files through a base path (a Clone commit, as pylance writes it; the clone's
        version number is the source's).

        Args:
            target_path: Where the clone goes (no dataset may be there).
            reference: A version number, a tag name, or a ``(branch, version)`` pair (branch None/"main").
            storage_options: Object-store options of the target (default: this dataset's).
            **kwargs: pylance's further options; none is used by lancelot.

        Returns:
            The clone, as a `LanceDataset`.
        """
        return self._clone(target_path, reference, storage_options, deep=False)

    def deep_clone(
        self: LanceDataset,
        target_path: str | os.PathLike[str],
        reference: Reference,
        storage_options: Options = None,
        **kwargs: Any,
    ) -> LanceDataset:
        """As ``shallow_clone`` (same arguments and result), but the clone is independent: the version's data, deletion
        and index files are copied to ``target_path`` (a deep Clone commit, as pylance writes it).

        Args:
            target_path: Where the clone goes (no dataset may be there).
            reference: A version number, a tag name, or a ``(branch, version)`` pair.
            storage_options: Object-store options of the target (default: this dataset's).
            **kwargs: pylance's further options; none is used by lancelot.

        Returns:
            The clone, as a `LanceDataset`.
        """
        return self._clone(target_path, reference, storage_options, deep=True)

    def _clone(self: LanceDataset, target: Any, reference: Any, storage_options: Any, *, deep: bool) -> LanceDataset:
        from lancelot.dataset.clone import commit_clone, deep_clone
        from lancelot.dataset.commit_options import CommitRequest
        from lancelot.dataset.lance_operation import LanceOperation

        version = self.checkout_version(reference).version
        options = storage_options or self.storage_options
        if deep:
            return _opened(type(self), deep_clone(self, target, version, options))
        op = LanceOperation.Clone(True, None, version, self.uri)
        return _opened(type(self), commit_clone(CommitRequest(target, op, version, options)))

    def read_transaction(self: LanceDataset, version: int) -> Transaction | None:
        """The transaction that committed ``version``.

        Args:
            version: A version of this dataset.

        Returns:
            A ``Transaction``, or None where none is stored.
        """
        from lancelot.dataset.transaction_api import read_transaction

        return read_transaction(self, version)

    def get_transactions(self: LanceDataset, recent_transactions: int = 10) -> list[Transaction | None]:
        """The transactions of the latest versions, newest first.

        Args:
            recent_transactions: How many versions back.

        Returns:
            One ``Transaction`` (or None where none is stored) per version.
        """
        from lancelot.dataset.transaction_api import get_transactions

        return get_transactions(self, recent_transactions)

    @property
    def lance_schema(self: LanceDataset) -> LanceSchema:
        """The schema with Lance field ids (for ``LanceOperation.Merge`` / ``Project``)."""
        from lancelot.dataset.transaction_api import LanceSchema

        return LanceSchema(self.manifest.fields, dict(self.manifest.schema_metadata))

    @staticmethod
    def drop(
        base_uri: str | os.PathLike[str],
        storage_options: dict[str, Any] | None = None,
        ignore_not_found: bool | None = None,
    ) -> None:
        """Delete the dataset at ``base_uri`` and everything under it.

        Args:
            base_uri: the dataset's root.
            storage_options: object-store options.
            ignore_not_found: return quietly when there is no dataset.

        Raises:
            DatasetNotFoundError: no dataset there (unless ``ignore_not_found``).
        """
        from lancelot.dataset.validate import drop

        drop(base_uri, storage_options, ignore_not_found)

    def checkout_latest(self: LanceDataset) -> None:
        """Move this object to the latest version."""
        self.move_to(self.latest_version)


def listed(store: ObjectStore, uri: str, versions: Versions, version: int) -> Versions:
    """A listing holding ``version``: ``versions``, else ``_versions/`` listed anew (a version committed since).

    Raises:
        VersionNotFoundError: Not in the new listing either (a ValueError).
    """
    if version not in versions.names:
        versions = list_versions(store, uri)
        if version not in versions.names:
            names = sorted(versions.names)
            raise VersionNotFoundError(
                f"dataset {uri!r}: version {version} does not exist "
                f"(versions: {names[:20]}{'...' if len(names) > 20 else ''})"
            )
    return versions


def _place(uri: Any, storage_options: dict[str, Any] | None) -> tuple[Any, dict[str, Any] | None]:
    """A commit's destination: a LanceDataset names its own URI, and its storage options unless given."""
    if isinstance(uri, VersionsMixin):  # (a LanceDataset)
        ds = cast("LanceDataset", uri)
        return ds.uri, storage_options or ds.storage_options
    return uri, storage_options


def _opened(cls: type[LanceDataset], c: Committed) -> LanceDataset:
    """The version a commit wrote, opened from what the commit already read (``LanceDataset`` is above the commit wing:
    the wing returns the version, the class opens it)."""
    return cls(c.uri, version=c.version, storage_options=c.storage_options, _store=c.store, _committed=c.known)
