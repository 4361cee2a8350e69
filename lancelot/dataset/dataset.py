"""``LanceDataset``: one version of a Lance dataset, read through its manifest (table format).

``lancelot.dataset(uri, version=None)`` opens the latest version (or ``version``); reads see exactly that version's
fragments, minus deleted rows.  ``delete`` commits a new version."""

from __future__ import annotations

import copy
import datetime as _dt
import os
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lancelot.dataset.commit import Versions, latest_by_hint, list_versions, load_manifest, locate_version, still_latest
from lancelot.dataset.dataset_changes import ChangesMixin
from lancelot.dataset.dataset_maintenance import MaintenanceMixin
from lancelot.dataset.dataset_metadata import MetadataMixin
from lancelot.dataset.dataset_rows import RowsMixin
from lancelot.dataset.dataset_scans import ScansMixin
from lancelot.dataset.dataset_versions import VersionsMixin, listed
from lancelot.dataset.fragment import Fragment
from lancelot.dataset.fragment_columns import check_relative_path
from lancelot.dataset.fragment_metadata import DATA_DIR
from lancelot.dataset.io_stats import start as start_io_stats
from lancelot.dataset.manifest import ManifestFile
from lancelot.dataset.manifest import manifest_schema as manifest_schema  # (re-exported: its home before)
from lancelot.dataset.memo import IdentityMemo
from lancelot.dataset.open_files import open_data_file
from lancelot.dataset.snapshot import Snapshot
from lancelot.dataset.store import ObjectStore
from lancelot.errors import CorruptFileError, DatasetNotFoundError, LanceError, LanceValueError
from lancelot.format.pb import table_pb2

if TYPE_CHECKING:
    from lancelot.dataset.session import FileCache
    from lancelot.dataset.sql_query import SqlQueryBuilder
    from lancelot.reader import LanceFile

#: the listing of versions and the manifest a commit just made (or a version read by name)
Committed = tuple[Versions, ManifestFile]
Asof = _dt.datetime | str | None


class LanceDataset(ScansMixin, RowsMixin, ChangesMixin, VersionsMixin, MetadataMixin, MaintenanceMixin):
    """One version of a Lance dataset: its schema, fragments and rows, and the operations that read it or commit a new
    version (pylance's ``lance.LanceDataset``).

    Open one with [`lancelot.dataset`][lancelot.dataset.dataset.dataset]; write one with
    [`lancelot.write_dataset`][lancelot.dataset.write.write_dataset]. An object stays at its version for reads; the
    methods that commit (``delete``, ``update``, ``add_columns``, ``restore``...) move it on to the version they create,
    as pylance's do.

    Examples:
        >>> ds = lancelot.dataset(uri)
        >>> ds.count_rows(), ds.version
        (10, 1)
        >>> ds.schema.names
        ['id', 'name']
    """

    #: the data files of a session with its own metadata capacity (None: the process-wide ones, open_files.py)
    file_cache: FileCache | None = None

    def __init__(
        self,
        uri: str | os.PathLike[str],
        version: int | str | None = None,
        *,
        asof: _dt.datetime | str | None = None,
        storage_options: dict[str, Any] | None = None,
        default_scan_options: dict[str, Any] | None = None,
        _store: ObjectStore | None = None,
        _committed: Committed | None = None,
    ) -> None:
        """Open the dataset at ``uri`` (prefer [`lancelot.dataset`][lancelot.dataset.dataset.dataset]).

        Args:
            uri: A local path or an fsspec URL (``s3://``, ``gs://``, ``memory://``...).
            version: A version number or a tag name; None for the latest version.
            asof: Open the newest version committed at or before this time (a datetime or an ISO string).
            storage_options: Options for the object store (credentials, endpoint, region).
            default_scan_options: ``scanner`` options every scan of this object starts from (``dataset``'s).

        Raises:
            DatasetNotFoundError: No manifest under ``uri/_versions/`` (a ``FileNotFoundError``).
            ValueError: ``version`` names no version or tag of the dataset.
        """
        self._store = _store or ObjectStore(uri, storage_options)
        start_io_stats(self._store)  # (a checkout shares its origin's store, and so its statistics)
        self.storage_options = storage_options
        #: ``scanner`` options every scan of this object starts from, as pylance's (``dataset(default_scan_options=)``)
        self._default_scan_options = default_scan_options
        #: the version shown: replaced, never changed, when an operation moves this object on (``move_to``)
        self._state = self._read(version, asof, _committed)

    def _read(self, version: int | str | None, asof: Asof, committed: Committed | None) -> Snapshot:
        """The snapshot of ``version`` (a tag, or as of a time; None: the latest).  ``committed``: the listing and
        manifest a commit just made, or the version asked for, read by name."""
        if committed is None and asof is None and (isinstance(version, int) or str(version).isdigit()):
            committed = locate_version(self._store, self.uri, int(version))  # type: ignore[arg-type]
        elif committed is None and asof is None and version is None:
            committed = latest_by_hint(self._store, self.uri)
        versions = committed[0] if committed else list_versions(self._store, self.uri)
        if versions.latest is None:
            e = DatasetNotFoundError(f"dataset {self.uri!r} does not exist (no manifest in _versions/)")
            e.filename = self.uri
            raise e
        if version is None and asof is not None:
            version = self._version_asof(asof)
        if version is None:
            v = versions.latest
        elif isinstance(version, str) and not version.isdigit():
            v = self.tags.get_version(version)
        else:
            v = int(version)
            versions = listed(self._store, self.uri, versions, v)
        if committed and committed[1].manifest.version == v:
            return Snapshot.read(versions, committed[1], self.uri)
        return Snapshot.read(versions, load_manifest(self._store, self.uri, versions, v), self.uri)

    def move_to(self, version: int, committed: Committed | None = None) -> None:
        """Show ``version`` from now on (lancelot's own: the operations that commit move the object they are called
        on, as pylance's do): the object's snapshot is replaced by that version's.

        Args:
            version: A version of the dataset.
            committed: The listing and manifest the commit of ``version`` made (not read back).
        """
        from lancelot.dataset.session import reattach

        self._state = self._read(version, None, committed)
        reattach(self)  # (a session's policy for the new snapshot)

    @property
    def uri(self) -> str:
        """The location of the data (the dataset's root: a local path or a URL), as pylance's ``uri``."""
        return self._store.uri

    @property
    def manifest(self) -> table_pb2.Manifest:
        """This version's ``Manifest`` message (lancelot's own: read it, never change it)."""
        return self._state.manifest

    @property
    def version(self) -> int:
        """This object's version number."""
        return self._state.version

    @property
    def snapshot(self) -> Snapshot:
        """The version shown, as read (lancelot's own): its manifest, the listing it was found in, and what is built
        from them so far (fragments, schema...); ``move_to`` replaces it."""
        return self._state

    @property
    def file_shapes(self) -> IdentityMemo:
        """What is worked out once for all the data files of one shape (fragment_columns.py, group_files.py)."""
        return self._state.file_shapes

    @property
    def fragments(self) -> list[Fragment]:
        """The version's Fragment objects, built on first use and shared (not copied, unlike ``get_fragments``):
        opening a dataset of thousands of fragments and counting its rows builds none (a race builds two lists; one is
        kept)."""
        state = self._state
        frags = state.fragments
        if frags is None:
            frags = [Fragment(self, f) for f in state.manifest.fragments]
            if state.fragments is None:
                state.fragments = frags
            frags = state.fragments
        return frags

    @property
    def store(self) -> ObjectStore:
        """The object store holding the dataset's files (lancelot's own: pylance has no such attribute)."""
        return self._store

    @property
    def manifest_file(self) -> ManifestFile:
        """This version's manifest file as read: its ``Manifest`` message and raw index section."""
        return self._state.manifest_file

    def read_as_latest(self) -> tuple[Versions, ManifestFile] | None:
        """This version and its manifest, when a fresh read of the version hint says it is still the
        latest (``still_latest``): a commit builds on them without listing ``_versions/``.  Should
        another writer commit meanwhile, creating the manifest fails and the commit lists."""
        return still_latest(self._store, self._state.versions, self._state.manifest_file)

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of this version (from the manifest's fields); with default scan options, the schema of
        their scan (``_rowid`` added by ``with_row_id``...), as pylance's."""
        if self._default_scan_options is not None:
            return self.scanner().projected_schema
        state = self._state
        if state.schema is None:
            try:
                state.schema = manifest_schema(state.manifest)
            except LanceError as e:
                raise type(e)(f"dataset {self.uri!r} version {self.version}: schema: {e.message}") from None
        return state.schema

    def _without_scan_defaults(self) -> LanceDataset:
        """This version without default scan options, what their scans read: its schema is the stored one (a view
        sharing the opened manifest and files; its fragments are its own)."""
        view = copy.copy(self)
        view._default_scan_options, view._state = None, replace(self._state, fragments=None)
        return view

    @property
    def top_field_names(self) -> Mapping[int, str]:
        """The top-level field's name of each field id of the schema (a nested field's: its top-level ancestor's)."""
        return self._state.top_of_id

    def base_store(self, file: table_pb2.DataFile | table_pb2.DeletionFile, where: str) -> tuple[ObjectStore, str]:
        """The store holding a data or deletion file of this version, and the prefix of its path there: the dataset's
        own (data/), or the base path its ``base_id`` names.

        Files may live outside the dataset's root only where the manifest declares a base path (shallow clones):
        ``base_paths[id]`` is a dataset root (files under data/) or a directory.

        Args:
            file: The file's ``DataFile`` or ``DeletionFile`` message in the manifest.
            where: The fragment, for messages.

        Returns:
            ``(store, prefix)``: the file's path in the store is the prefix and its own path.

        Raises:
            CorruptFileError: The manifest declares no base path ``base_id``.
        """
        if not file.HasField("base_id"):
            return self._store, f"{DATA_DIR}/"
        base_id = int(file.base_id)
        bp = next((b for b in self.manifest.base_paths if b.id == base_id), None)
        if bp is None:
            raise CorruptFileError(f"{where}: base path id {base_id} is not declared by the manifest")
        bases = self._state.bases
        store = bases.get(base_id)
        if store is None:
            try:
                store = bases[base_id] = ObjectStore(bp.path, self.storage_options)
            except LanceError as e:
                raise LanceError(f"{where}: base path {bp.path!r}: {e}") from None
        return store, f"{DATA_DIR}/" if bp.is_dataset_root else ""

    def data_file(self, df: table_pb2.DataFile, where: str) -> LanceFile:
        """A fragment's data file, opened (once per process: data files never change) from its base's store.

        Args:
            df: The ``DataFile`` entry of the fragment.
            where: The fragment, for messages.

        Returns:
            The ``LanceFile``.

        Raises:
            CorruptFileError: Its path leaves the data directory, or its base path is not declared.
            FileNotFoundError: The file is missing.
        """
        store, prefix = self.base_store(df, where)
        path = f"{prefix}{check_relative_path(df.path, where)}"
        if self.file_cache is not None:
            return self.file_cache.open(store, path, where, self.storage_options)
        return open_data_file(store, path, where, self.storage_options)

    def checkout_version(self, version: int | str | tuple[str | None, int | None]) -> LanceDataset:
        from lancelot.dataset.session import session_of

        out = super().checkout_version(version)
        session_of(self).attach(out)  # a checkout shares the session, as pylance's
        return out

    checkout_version.__doc__ = VersionsMixin.checkout_version.__doc__

    def sql(self, sql: str) -> SqlQueryBuilder:
        """A SQL query over this version (pylance's ``sql``): ``ds.sql("SELECT id FROM dataset WHERE x > 1").build()``.

        Args:
            sql: One SELECT; its FROM names the dataset by the builder's ``table_name`` (default ``dataset``).

        Returns:
            A ``SqlQueryBuilder``; lancelot runs a subset of SQL (lancelot/dataset/sql_plan.py) and refuses the rest.
        """
        from lancelot.dataset.sql_query import SqlQueryBuilder

        return SqlQueryBuilder(self, sql)

    def migrate_manifest_paths_v2(self) -> None:
        """Rename the dataset's manifests to the V2 naming scheme (``{u64::MAX - version:020}.manifest``, which lists
        the latest first), as pylance's; idempotent. Not to be run while others write to the dataset, and to be run to
        its end before they do (as pylance's)."""
        from lancelot.dataset.manifest import migrate_names_v2

        migrate_names_v2(self._store)
        self._state.versions = list_versions(self._store, self.uri)

    def __repr__(self) -> str:
        return f"LanceDataset({self.uri!r}, version={self.version}, fragments={len(self.manifest.fragments)})"

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow C stream of a full scan: a dataset is data to write, or to hand to any Arrow consumer (as pylance's
        is)."""
        return self.scanner().to_reader().__arrow_c_stream__(requested_schema)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickles as (uri, version, storage options, default scan options): the copy reopens this same version."""
        return _reopen, (self.uri, self.version, self.storage_options, self._default_scan_options)


def dataset(
    uri: str | os.PathLike[str],
    version: int | str | None = None,
    asof: _dt.datetime | str | None = None,
    block_size: int | None = None,
    commit_lock: Any = None,
    index_cache_size: int | None = None,
    storage_options: dict[str, Any] | None = None,
    default_scan_options: dict[str, Any] | None = None,
    metadata_cache_size_bytes: int | None = None,
    index_cache_size_bytes: int | None = None,
    read_params: dict[str, Any] | None = None,
    session: Any = None,
    namespace_client: Any = None,
    table_id: list[str] | None = None,
    base_store_params: dict[str, dict[str, str]] | None = None,
) -> LanceDataset:
    """Open a Lance dataset at its latest version, at a given version, or as of a time.

    pylance's arguments lancelot has no use for are accepted and ignored; the ones it cannot honour (a namespace)
    are refused.

    Args:
        uri: A local path or an fsspec URL (``s3://``, ``gs://``, ``az://``, ``memory://``...).
        version: A version number or a tag name; None for the latest.
        asof: The newest version committed at or before this time (a datetime or an ISO string).
        block_size: Accepted; no effect.
        commit_lock: pylance's ``CommitLock``, taken by every commit made through this object.
        index_cache_size: Accepted; no effect.
        storage_options: Object store options (credentials, ``endpoint``, ``region``...).
        default_scan_options: ``scanner`` options every scan of the dataset object starts from (a scan's own
            options override them), e.g. ``{"with_row_id": True}``; its ``schema`` is their scan's, as pylance's.
        metadata_cache_size_bytes: The bytes of metadata (opened data files) the dataset may keep cached, in a session
            of its own; 0 keeps none. None: the process-wide caches (lancelot/dataset/session.py).
        index_cache_size_bytes: Accepted (lancelot keeps no index cache).
        read_params: Accepted; no effect.
        session: A ``Session`` whose caches the dataset shares (``LanceDataset.session()`` of another dataset).
        namespace_client: Not supported (refused when given).
        table_id: Not supported (refused when given).
        base_store_params: Accepted; no effect.

    Returns:
        A [`LanceDataset`][lancelot.dataset.dataset.LanceDataset].

    Raises:
        DatasetNotFoundError: Nothing at ``uri`` is a dataset (a ``FileNotFoundError``).
        ValueError: ``version`` names no version or tag; an unsupported argument.

    Examples:
        >>> ds = lancelot.dataset(uri)
        >>> ds.version, ds.count_rows()
        (1, 10)
    """
    if namespace_client is not None or table_id is not None:
        raise LanceValueError("lancelot.dataset: namespaces are not supported")
    store = None
    if commit_lock:  # every commit through this object (and its checkouts) takes the lock
        from lancelot.dataset.commit_options import with_commit_lock

        store = with_commit_lock(ObjectStore(uri, storage_options), commit_lock)
    scans, options = default_scan_options, storage_options
    ds = LanceDataset(uri, version, asof=asof, storage_options=options, default_scan_options=scans, _store=store)
    if session is not None or metadata_cache_size_bytes is not None or index_cache_size_bytes is not None:
        from lancelot.dataset.session import open_with_session

        open_with_session(ds, session, metadata_cache_size_bytes, index_cache_size_bytes)
    return ds


def _reopen(
    uri: str, version: int, storage_options: dict[str, Any] | None, scan_options: dict[str, Any] | None = None
) -> LanceDataset:
    return LanceDataset(uri, version, storage_options=storage_options, default_scan_options=scan_options)
