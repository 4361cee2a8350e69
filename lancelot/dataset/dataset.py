"""``LanceDataset``: one version of a Lance dataset, read through its manifest (table format).

``lancelot.dataset(uri, version=None)`` opens the latest version (or ``version``); reads see
exactly that version's fragments, minus deleted rows.  ``delete`` commits a new version.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import ArrayLike

from lancelot.dataset.commit import (
    Versions,
    commit_transaction,
    latest_by_hint,
    list_versions,
    load_manifest,
    locate_version,
)
from lancelot.dataset.config import commit_update_config, field_metadata_maps, string_map, update_map
from lancelot.dataset.fragment import DATA_DIR, Fragment, manifest_live_rows
from lancelot.dataset.history import versions_list
from lancelot.dataset.manifest import FLAG_STABLE_ROW_IDS, ManifestFile, check_reader_flags, data_version
from lancelot.dataset.open_files import open_data_file
from lancelot.dataset.store import ObjectStore
from lancelot.dataset.transaction import new_transaction
from lancelot.errors import (
    CorruptFileError,
    DatasetNotFoundError,
    LanceError,
    LanceValueError,
    VersionNotFoundError,
)
from lancelot.extension_types import dataset_schema
from lancelot.format.pb import file_pb2, table_pb2
from lancelot.schema import from_descriptor

if TYPE_CHECKING:
    from pyroaring import BitMap

    from lancelot.dataset.blob_file import BlobFile
    from lancelot.dataset.changes import DeleteResult
    from lancelot.dataset.cleanup import CleanupStats
    from lancelot.dataset.compact import CompactionMetrics, Optimizer
    from lancelot.dataset.indices import IndexDescription
    from lancelot.dataset.lance_operation import LanceOperation
    from lancelot.dataset.merge_insert import MergeInsertBuilder
    from lancelot.dataset.refs import Tags
    from lancelot.dataset.scanner import LanceScanner
    from lancelot.dataset.stats import LanceStats
    from lancelot.reader import LanceFile


def manifest_schema(m: table_pb2.Manifest) -> pa.Schema:
    fd = file_pb2.FileDescriptor()
    fd.schema.fields.extend(m.fields)
    for k, v in m.schema_metadata.items():
        fd.schema.metadata[k] = v
    return dataset_schema(from_descriptor(fd))  # JSON columns: arrow.json


class LanceDataset:
    """One version of a Lance dataset: its schema, fragments and rows, and the operations that read it
    or commit a new version (pylance's ``lance.LanceDataset``).

    Open one with [`lancelot.dataset`][lancelot.dataset.dataset.dataset]; write one with
    [`lancelot.write_dataset`][lancelot.dataset.write.write_dataset]. An object stays at its version
    for reads; the methods that commit (``delete``, ``update``, ``add_columns``, ``restore``...) move
    it on to the version they create, as pylance's do.

    Examples:
        >>> ds = lancelot.dataset(uri)
        >>> ds.count_rows(), ds.version
        (10, 1)
        >>> ds.schema.names
        ['id', 'name']
    """

    def __init__(
        self,
        uri: str | os.PathLike[str],
        version: int | str | None = None,
        *,
        asof: _dt.datetime | str | None = None,
        storage_options: dict[str, Any] | None = None,
        _store: ObjectStore | None = None,
        _committed: tuple[Versions, ManifestFile] | None = None,
    ) -> None:
        """Open the dataset at ``uri`` (prefer [`lancelot.dataset`][lancelot.dataset.dataset.dataset]).

        Args:
            uri: A local path or an fsspec URL (``s3://``, ``gs://``, ``memory://``...).
            version: A version number or a tag name; None for the latest version.
            asof: Open the newest version committed at or before this time (a datetime or an ISO string).
            storage_options: Options for the object store (credentials, endpoint, region).

        Raises:
            DatasetNotFoundError: No manifest under ``uri/_versions/`` (a ``FileNotFoundError``).
            ValueError: ``version`` names no version or tag of the dataset.
        """
        self._store = _store or ObjectStore(uri, storage_options)
        self.uri: str = self._store.uri
        self.storage_options = storage_options
        if _committed is None and asof is None and (isinstance(version, int) or str(version).isdigit()):
            _committed = locate_version(self._store, self.uri, int(version))  # type: ignore[arg-type]
        elif _committed is None and asof is None and version is None:
            _committed = latest_by_hint(self._store, self.uri)
        # (_committed: the listing and manifest a commit just made, or the version asked for, read by name)
        self._versions = _committed[0] if _committed else list_versions(self._store, self.uri)
        if self._versions.latest is None:
            e = DatasetNotFoundError(f"dataset {self.uri!r} does not exist (no manifest in _versions/)")
            e.filename = self.uri
            raise e
        if version is None and asof is not None:
            version = self._version_asof(asof)
        v = self._versions.latest if version is None else self._resolve_version(version)
        if _committed and _committed[1].manifest.version == v:
            self._mf = _committed[1]
        else:
            self._mf = load_manifest(self._store, self.uri, self._versions, v)
        self.manifest: table_pb2.Manifest = self._mf.manifest
        self.version: int = int(self.manifest.version)
        check_reader_flags(self.manifest, f"dataset {self.uri!r} version {self.version}")
        self._schema: pa.Schema | None = None  # built on first use (count_rows needs none)
        self._index_fields()
        self._bases: dict[int, ObjectStore] = {}
        self._fragment_list: list[Fragment] | None = None  # built on first use (count_rows needs none)
        #: the live row count when every fragment's manifest entry gives it (else counted on demand)
        self._live_rows: int | None = manifest_live_rows(self.manifest)

    @property
    def _fragments(self) -> list[Fragment]:
        """The version's Fragment objects, built on first use: opening a dataset of thousands of
        fragments and counting its rows builds none (a race builds two lists; one is kept)."""
        frags = self._fragment_list
        if frags is None:
            frags = [Fragment(self, f) for f in self.manifest.fragments]
            if self._fragment_list is None:
                self._fragment_list = frags
            frags = self._fragment_list
        return frags

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of this version (from the manifest's fields)."""
        if self._schema is None:
            try:
                self._schema = manifest_schema(self.manifest)
            except LanceError as e:
                raise type(e)(f"dataset {self.uri!r} version {self.version}: schema: {e.message}") from None
        return self._schema

    def _index_fields(self) -> None:
        """Top-level field name of every field id, and the ids under each top-level field."""
        parent = {int(f.id): int(f.parent_id) for f in self.manifest.fields}
        name = {int(f.id): f.name for f in self.manifest.fields}
        self._top_by_id: dict[int, str] = {}
        self._top_of_id: dict[int, str] = {}
        self._subtree_ids: dict[str, set[int]] = {}
        where = f"dataset {self.uri!r} version {self.version}: schema"
        if len(parent) != len(self.manifest.fields):
            raise CorruptFileError(f"{where}: field ids repeat")
        for fid, p in parent.items():
            if p != -1 and p not in parent:
                raise CorruptFileError(f"{where}: field {fid} names parent {p}, which is not in the schema")
        for fid in parent:
            top, hops = fid, 0
            while parent.get(top, -1) != -1 and hops < 256:
                top, hops = parent[top], hops + 1
            if parent.get(top, -1) == -1:
                self._subtree_ids.setdefault(name[top], set()).add(fid)
                self._top_of_id[fid] = name[top]
                if top == fid:
                    self._top_by_id[fid] = name[fid]

    def _base(self, base_id: int | None, where: str) -> tuple[ObjectStore, str]:
        """(store, path prefix) of the files of a base path (None: this dataset, under data/).

        Files may live outside the dataset's root only where the manifest declares a base path
        (shallow clones): ``base_paths[id]`` is a dataset root (files under data/) or a directory."""
        if base_id is None:
            return self._store, f"{DATA_DIR}/"
        bp = next((b for b in self.manifest.base_paths if b.id == base_id), None)
        if bp is None:
            raise CorruptFileError(f"{where}: base path id {base_id} is not declared by the manifest")
        store = self._bases.get(base_id)
        if store is None:
            try:
                store = self._bases[base_id] = ObjectStore(bp.path, self.storage_options)
            except LanceError as e:
                raise LanceError(f"{where}: base path {bp.path!r}: {e}") from None
        return store, f"{DATA_DIR}/" if bp.is_dataset_root else ""

    def _open_file(self, path: str, where: str, store: ObjectStore | None = None) -> LanceFile:
        """The data file at ``path`` (opened once per process: data files never change)."""
        return open_data_file(store or self._store, path, where, self.storage_options)

    def __repr__(self) -> str:
        return f"LanceDataset({self.uri!r}, version={self.version}, fragments={len(self._fragments)})"

    # -- versions and tags ---------------------------------------------------------------------
    def _resolve_version(self, version: int | str) -> int:
        """A version number, or the version a tag names."""
        if isinstance(version, str) and not version.isdigit():
            return self.tags.get_version(version)
        v = int(version)
        if v not in self._versions.names:
            self._versions = list_versions(self._store, self.uri)
            if v not in self._versions.names:
                raise VersionNotFoundError(
                    f"dataset {self.uri!r}: version {v} does not exist "
                    f"(versions: {sorted(self._versions.names)[:20]}{'...' if len(self._versions.names) > 20 else ''})"
                )
        return v

    def _version_asof(self, asof: _dt.datetime | str) -> int:
        """The newest version committed before ``asof`` (pylance: a naive time is local time)."""
        from lancelot.dataset.history import as_local_time, version_asof

        found = version_asof(self._store, self.uri, asof)
        if found is None:
            cutoff = as_local_time(asof)
            raise VersionNotFoundError(f"{cutoff} is earlier than the first version of dataset {self.uri!r}")
        return found

    def _version_names(self) -> dict[int, str]:
        self._versions = list_versions(self._store, self.uri)
        return self._versions.names

    def _manifest_size(self, version: int) -> int:
        from lancelot.dataset.manifest import VERSIONS_DIR

        return self._store.size(f"{VERSIONS_DIR}/{self._version_names()[version]}")

    @property
    def latest_version(self) -> int:
        """The newest version of the dataset now (re-read from ``_versions/``, not this object's version)."""
        latest = list_versions(self._store, self.uri).latest
        if latest is None:
            raise DatasetNotFoundError(f"dataset {self.uri!r} no longer exists (no manifest in _versions/)")
        return int(latest)

    def versions(self) -> list[dict[str, Any]]:
        """Every version of the dataset, oldest first.

        Returns:
            One dict per version: ``version`` (int), ``timestamp`` (a naive datetime in local time, as
                pylance gives it) and ``metadata`` (the manifest's summary: ``total_fragments``,
                ``total_rows``... as strings).

        Examples:
            >>> [v["version"] for v in ds.versions()]
            [1]
        """
        return versions_list(self._store, self.uri)

    def checkout_version(self, version: int | str | tuple[str | None, int | None]) -> LanceDataset:
        """This dataset at another version, as a new object (this one does not move).

        Args:
            version: A version number, a tag name, or pylance's ``(branch, number)`` pair with the branch
                None or ``"main"`` (lancelot has no branches).

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
        return LanceDataset(self.uri, version, storage_options=self.storage_options, _store=self._store)

    @property
    def tags(self) -> Tags:
        """The dataset's tags (names for versions, under ``_refs/tags/`` as pylance writes them):
        ``create(tag, version)``, ``update``, ``delete``, ``get_version``, ``list``, ``list_ordered``.

        Examples:
            >>> ds.tags.create("first", 1)
            >>> ds.tags.get_version("first")
            1
            >>> lancelot.dataset(uri, version="first").version
            1
        """
        from lancelot.dataset.refs import Tags

        return Tags(self)

    def restore(self) -> None:
        """Make this (older) version the latest again, as one new version (a Restore commit, as pylance
        writes it); this object then shows the new version.

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
        v = commit_transaction(
            self._store, self.uri, txn, build_restore(self._mf, self.uri), read_version=txn.read_version
        )
        self._move_to(v)

    def _move_to(self, version: int) -> None:
        self.__dict__.update(self.checkout_version(version).__dict__)

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow C stream of a full scan: a dataset is data to write, or to hand to any Arrow
        consumer (as pylance's is)."""
        return self.scanner().to_reader().__arrow_c_stream__(requested_schema)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickles as (uri, version, storage options): the copy reopens this same version."""
        return _reopen, (self.uri, self.version, self.storage_options)

    # -- config and metadata (UpdateConfig commits, dataset/config.py) ---------------------------
    def config(self) -> dict[str, str]:
        """The table config (the manifest's string map of settings).

        Returns:
            A copy of the config: changing it changes nothing on disk (use ``update_config``).
        """
        return dict(self.manifest.config)

    def update_config(self, values: dict[str, str | None], *, replace: bool = False) -> dict[str, str]:
        """Set or remove table config keys, as one new version (an UpdateConfig commit).

        Args:
            values: The keys to set; a value of None removes its key.
            replace: Replace the whole config with ``values`` instead of merging into it.

        Returns:
            The new config.

        Examples:
            >>> ds.update_config({"owner": "etl"})
            {'owner': 'etl'}
        """
        self._move_to(commit_update_config(self, config_updates=update_map(string_map(values, "config"), replace)))
        return self.config()

    def delete_config_keys(self, keys: list[str]) -> None:
        """Remove table config keys, as one new version.

        Args:
            keys: The keys to remove (absent keys are ignored).
        """
        self._move_to(commit_update_config(self, config_updates=update_map(dict.fromkeys(keys), False)))

    def update_metadata(self, values: dict[str, str | None], *, replace: bool = False) -> dict[str, str]:
        """Set or remove table metadata keys, as one new version.

        Args:
            values: The keys to set; a value of None removes its key.
            replace: Replace all table metadata with ``values`` instead of merging into it.

        Returns:
            The new table metadata.
        """
        maps = update_map(string_map(values, "metadata"), replace)
        self._move_to(commit_update_config(self, table_metadata_updates=maps))
        return self.metadata

    @property
    def metadata(self) -> dict[str, str]:
        """The table metadata."""
        return dict(self.manifest.table_metadata)

    @property
    def schema_metadata(self) -> dict[str, str]:
        """The schema metadata, as strings."""
        return {k: v.decode() for k, v in self.manifest.schema_metadata.items()}

    def update_schema_metadata(self, values: dict[str, str | None], *, replace: bool = False) -> dict[str, str]:
        """Set or remove schema metadata keys, as one new version.

        Args:
            values: The keys to set; a value of None removes its key.
            replace: Replace all schema metadata with ``values`` instead of merging into it.

        Returns:
            The new schema metadata.
        """
        maps = update_map(string_map(values, "schema metadata"), replace)
        self._move_to(commit_update_config(self, schema_metadata_updates=maps))
        return self.schema_metadata

    def update_field_metadata(
        self, field_updates: dict[str | int, dict[str, str | None]], *, replace: bool = False
    ) -> None:
        """Set or remove metadata keys of fields, as one new version.

        Args:
            field_updates: Per field, named by path (``"s.x"`` for a struct's child) or field id, the keys
                to set; a value of None removes its key.
            replace: Replace each named field's metadata instead of merging into it.

        Raises:
            ValueError: A path or id names no field of the schema.
        """
        maps = field_metadata_maps(self, field_updates, replace)
        self._move_to(commit_update_config(self, field_metadata_updates=maps))

    def replace_schema_metadata(self, new_metadata: dict[str, str]) -> None:
        """Replace all schema metadata (deprecated in pylance, and here: it warns).

        Args:
            new_metadata: The new schema metadata; same as ``update_schema_metadata(new_metadata, replace=True)``.
        """
        import warnings

        warnings.warn(
            "replace_schema_metadata is deprecated. Use update_schema_metadata(metadata, replace=True) instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        self.update_schema_metadata(dict(new_metadata), replace=True)

    def replace_field_metadata(self, field_name: str, new_metadata: dict[str, str]) -> None:
        """Replace one field's metadata (deprecated in pylance, and here: it warns).

        Args:
            field_name: The field's path.
            new_metadata: Its new metadata; same as ``update_field_metadata({field_name: new_metadata}, replace=True)``.
        """
        import warnings

        warnings.warn(
            "replace_field_metadata is deprecated. Use update_field_metadata with field paths and replace=True "
            "instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        self.update_field_metadata({field_name: dict(new_metadata)}, replace=True)

    @property
    def stats(self) -> LanceStats:
        """Statistics of this version: ``stats.dataset_stats()`` and ``stats.data_stats()`` (pylance's)."""
        from lancelot.dataset.stats import LanceStats

        return LanceStats(self)

    @property
    def data_storage_version(self) -> str:
        """As pylance reports it (manifests before Lance 0.16 have none: from their files or flags)."""
        return data_version(self.manifest, f"dataset {self.uri!r} version {self.version}")

    @staticmethod
    def commit(
        base_uri: str | os.PathLike[str] | LanceDataset,
        operation: LanceOperation.BaseOperation,
        read_version: int | None = None,
        commit_lock: Any = None,
        storage_options: dict[str, Any] | None = None,
        enable_v2_manifest_paths: bool | None = None,
        detached: bool | None = False,
        max_retries: int = 20,
        *,
        commit_message: str | None = None,
        enable_stable_row_ids: bool | None = None,
    ) -> LanceDataset:
        """Commit fragments written by ``LanceFragment.create`` / ``write_fragments`` as one version.

        Args:
            base_uri: the dataset (created by an ``Overwrite`` when it does not exist).
            operation: ``LanceOperation.Append(fragments)`` or ``LanceOperation.Overwrite(schema,
                fragments)``; fragments from lancelot or from pylance.
            read_version: the version the fragments were planned against (required for Append).
            commit_lock: pylance's custom lock; lancelot's commits are atomic without one (must be None).
            storage_options: object-store options.
            enable_v2_manifest_paths: accepted for pylance's signature (lancelot keeps the dataset's naming).
            detached: must be False (lancelot has no detached versions).
            max_retries: accepted for pylance's signature (conflicts retry as the operation allows).
            commit_message: must be None.
            enable_stable_row_ids: for an Overwrite creating the dataset, give rows stable ids.

        Returns:
            The dataset at the new version.

        Raises:
            ValueError: Append without ``read_version``, or an option lancelot does not offer.
        """
        from lancelot.dataset.lance_operation import commit_operation

        if commit_lock is not None or detached or commit_message is not None:
            raise ValueError("lancelot's commit takes no commit_lock, detached or commit_message")
        return commit_operation(
            base_uri,
            operation,
            read_version,
            storage_options=storage_options,
            enable_stable_row_ids=enable_stable_row_ids,
        )

    def validate(self) -> None:
        """Check this version's manifest against its files (pylance's ``validate``).

        Raises:
            CorruptFileError: naming the fragment and file of the first inconsistency.
        """
        from lancelot.dataset.validate import validate

        validate(self)

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

    def slice(self, start: int, end: int, columns: Sequence[str] | dict[str, str] | None = None) -> pa.Table:
        """Rows ``start`` (inclusive) to ``end`` (exclusive) by position among the live rows.

        Args:
            start: the first row's position.
            end: one past the last row's position (beyond the end: to the end).
            columns: the columns to read (default: all).

        Returns:
            A table of at most ``end - start`` rows.

        Raises:
            ValueError: ``start`` negative or ``end`` before it.
        """
        if start < 0:
            raise ValueError(f"start must be non-negative, got {start}")
        if end < start:
            raise ValueError(f"end ({end}) must be >= start ({start})")
        return self.scanner(offset=start, limit=end - start, columns=columns).to_table()

    def fragment_ids(self) -> BitMap:
        """The ids of this version's fragments."""
        from pyroaring import BitMap

        return BitMap(int(f.id) for f in self.manifest.fragments)

    def truncate_table(self) -> None:
        """Delete every row (one new version with a Delete transaction, as pylance)."""
        self.delete("true")

    # -- indices (described from the manifest; lancelot's reads do not use them) ----------------
    def describe_indices(self) -> list[IndexDescription]:
        """The indices of this version by name, with their segments (pylance's ``describe_indices``).

        Returns:
            One ``IndexDescription`` per index name, sorted by name; pylance's ``details``
            (the decoded index parameters) are not provided.
        """
        from lancelot.dataset.indices import describe_indices

        return describe_indices(self)

    def list_indices(self) -> list[dict[str, Any]]:
        """Deprecated in pylance for ``describe_indices``: one dict per index segment."""
        from lancelot.dataset.indices import list_indices

        return list_indices(self)

    @property
    def has_index(self) -> bool:
        """Whether this version has any user index."""
        return len(self.describe_indices()) > 0

    # -- reads -------------------------------------------------------------------------------
    def get_fragments(self, filter: pc.Expression | None = None) -> list[Fragment]:
        """The fragments of this version, in order.

        Args:
            filter: Not supported (pylance refuses it too); must be None.

        Returns:
            One [`LanceFragment`][lancelot.dataset.fragment.Fragment] per fragment.
        """
        if filter is not None:
            raise LanceValueError("get_fragments() does not support filter yet")
        return list(self._fragments)

    def __len__(self) -> int:
        return self.count_rows()

    @property
    def has_stable_row_ids(self) -> bool:
        """Whether the dataset keeps stable row ids (the manifest's stable-row-id feature flag)."""
        return bool(self.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS)

    @property
    def max_field_id(self) -> int:
        """The largest field id of this version's schema (-1 for none)."""
        return max((int(f.id) for f in self.manifest.fields), default=-1)

    def checkout_latest(self) -> None:
        """Move this object to the latest version."""
        self._move_to(self.latest_version)

    def to_pandas(
        self,
        columns: Sequence[str] | dict[str, str] | None = None,
        filter: str | pc.Expression | None = None,
        limit: int | None = None,
        offset: int | None = None,
        nearest: dict[str, Any] | None = None,
        batch_size: int | None = None,
        batch_readahead: int | None = None,
        fragment_readahead: int | None = None,
        scan_in_order: bool | None = None,
        *,
        prefilter: bool | None = None,
        with_row_id: bool | None = None,
        with_row_address: bool | None = None,
        **kwargs: Any,
    ) -> Any:
        """``to_table(...).to_pandas()``: needs pandas installed.

        Args:
            columns: As in ``scanner``.
            filter: As in ``scanner``.
            limit: As in ``scanner``.
            offset: As in ``scanner``.
            nearest: As in ``scanner``.
            batch_size: As in ``scanner``.
            batch_readahead: Accepted; no effect.
            fragment_readahead: Accepted; no effect.
            scan_in_order: Accepted; no effect.
            prefilter: As in ``scanner``.
            with_row_id: As in ``scanner``.
            with_row_address: As in ``scanner``.

        Returns:
            A pandas DataFrame.
        """
        return self.to_table(
            columns,
            filter,
            limit,
            offset,
            nearest,
            batch_size,
            prefilter=prefilter,
            with_row_id=with_row_id,
            with_row_address=with_row_address,
        ).to_pandas()

    def get_fragment(self, fragment_id: int) -> Fragment | None:
        """One fragment of this version.

        Args:
            fragment_id: The fragment's id (``FragmentMetadata.id``, not its position).

        Returns:
            The [`LanceFragment`][lancelot.dataset.fragment.Fragment], or None when this version has no
            fragment of that id.
        """
        if self._fragment_list is None:  # one Fragment, not one per fragment of the version
            return next((Fragment(self, f) for f in self.manifest.fragments if f.id == fragment_id), None)
        return next((f for f in self._fragments if f.fragment_id == fragment_id), None)

    def count_rows(self, filter: str | pc.Expression | None = None, **kwargs: Any) -> int:
        """The number of live (not deleted) rows, or of those matching ``filter``.

        Without a filter the count comes from the manifest (no data file is opened when each fragment
        records its row count, as pylance's writers do).

        Args:
            filter: SQL text (``"id > 5 AND name LIKE 'a%'"``) or a ``pyarrow.compute`` Expression.
            **kwargs: Other scanner options (``scanner``).

        Returns:
            The row count.

        Examples:
            >>> ds.count_rows(), ds.count_rows("id >= 7")
            (10, 3)
        """
        if filter is None and not kwargs:
            if self._live_rows is None:
                self._live_rows = sum(f.count_rows() for f in self._fragments)
            return self._live_rows
        return self.scanner(filter=filter, **kwargs).count_rows()

    def scanner(
        self,
        columns: Sequence[str] | dict[str, str] | None = None,
        filter: str | pc.Expression | None = None,
        limit: int | None = None,
        offset: int | None = None,
        nearest: dict[str, Any] | None = None,
        batch_size: int | None = None,
        batch_size_bytes: int | None = None,
        batch_readahead: int | None = None,
        fragment_readahead: int | None = None,
        scan_in_order: bool | None = None,
        fragments: Iterable[Fragment] | None = None,
        index_segments: Iterable[Any] | None = None,
        full_text_query: Any = None,
        *,
        prefilter: bool | None = None,
        with_row_id: bool | None = None,
        with_row_address: bool | None = None,
        use_stats: bool | None = None,
        fast_search: bool | None = None,
        io_buffer_size: int | None = None,
        late_materialization: bool | list[str] | None = None,
        blob_handling: str | None = None,
        use_scalar_index: bool | None = None,
        include_deleted_rows: bool | None = None,
        scan_stats_callback: Any = None,
        strict_batch_size: bool | None = None,
        order_by: list[Any] | None = None,
        disable_scoring_autoprojection: bool | None = None,
        row_addr_allowlist: bytes | None = None,
        row_addr_blocklist: bytes | None = None,
    ) -> LanceScanner:
        """A scan of this version: what to read, which rows, in what shape (pylance's ``scanner``).

        Nothing is read until the scanner's ``to_table``, ``to_batches``, ``to_reader``,
        ``count_rows`` or ``head`` runs. Read-tuning options are accepted and ignored; options lancelot
        cannot honour are refused rather than silently dropped.

        Args:
            columns: The columns to return: a list of names (nested fields as ``"s.x"``; ``_rowid``,
                ``_rowaddr``, ``_rowoffset`` too), or a dict of output name to SQL expression. None: all.
            filter: A row filter: SQL text as pylance parses it (comparisons, ``AND``/``OR``/``NOT``,
                ``IN``, ``LIKE``, ``IS NULL``, ``regexp_match``, casts...) or a ``pyarrow.compute``
                Expression. Zone maps skip pages that cannot match.
            limit: At most this many rows.
            offset: Skip this many rows first.
            nearest: A vector search: ``{"column": name, "q": vector, "k": 10, "metric": "l2"}``
                (also ``"cosine"``, ``"dot"``). lancelot's search is exact (brute force over the live
                rows); pylance uses a vector index when there is one.
            batch_size: Rows per batch of ``to_batches`` (default 8192, or ``LANCE_DEFAULT_BATCH_SIZE``).
            batch_size_bytes: Accepted; no effect.
            batch_readahead: Accepted; no effect.
            fragment_readahead: Accepted; no effect.
            scan_in_order: Accepted; no effect (results are always in fragment order).
            fragments: Scan only these fragments (``LanceFragment`` objects or ids), in this order.
            index_segments: Not supported (refused when given).
            full_text_query: Not supported: lancelot has no full-text search (refused when given).
            prefilter: With ``nearest``: filter before searching (True) or after (False, the default).
            with_row_id: Add the ``_rowid`` column.
            with_row_address: Add the ``_rowaddr`` column (fragment id << 32 | position in fragment).
            use_stats: Accepted; no effect.
            fast_search: Accepted; no effect.
            io_buffer_size: Accepted; no effect.
            late_materialization: Accepted; no effect.
            blob_handling: Accepted; no effect (blob columns read as pylance's default: descriptions).
            use_scalar_index: Accepted; no effect (lancelot uses no index).
            include_deleted_rows: Also return deleted rows (needs ``with_row_id``), as pylance.
            scan_stats_callback: Accepted; never called.
            strict_batch_size: Accepted; no effect.
            order_by: Sort keys: column names or ``ColumnOrdering(name, ascending, nulls_first)``.
            disable_scoring_autoprojection: With ``nearest``: leave out the ``_distance`` column.
            row_addr_allowlist: Not supported (refused when given).
            row_addr_blocklist: Not supported (refused when given).

        Returns:
            A [`LanceScanner`][lancelot.dataset.scanner.LanceScanner].

        Raises:
            ValueError: An unknown column, a filter that does not parse or names no column, a negative
                limit or offset, or an option lancelot does not support.

        Examples:
            >>> s = ds.scanner(columns={"id2": "id * 2"}, filter="id < 5", limit=3, with_row_id=True)
            >>> s.to_table().to_pydict()
            {'id2': [0, 2, 4], '_rowid': [0, 1, 2]}
        """
        from lancelot.dataset.scanner import LanceScanner, unsupported

        unsupported(
            f"dataset {self.uri!r}",
            index_segments=index_segments,
            full_text_query=full_text_query,
            row_addr_allowlist=row_addr_allowlist,
            row_addr_blocklist=row_addr_blocklist,
        )
        return LanceScanner(
            self,
            columns,
            filter,
            limit,
            offset,
            nearest,
            batch_size,
            fragments,
            prefilter=prefilter,
            with_row_id=with_row_id,
            with_row_address=with_row_address,
            include_deleted_rows=include_deleted_rows,
            disable_scoring_autoprojection=disable_scoring_autoprojection,
            order_by=order_by,
        )

    def to_table(
        self,
        columns: Sequence[str] | dict[str, str] | None = None,
        filter: str | pc.Expression | None = None,
        limit: int | None = None,
        offset: int | None = None,
        nearest: dict[str, Any] | None = None,
        batch_size: int | None = None,
        batch_size_bytes: int | None = None,
        batch_readahead: int | None = None,
        fragment_readahead: int | None = None,
        scan_in_order: bool | None = None,
        *,
        prefilter: bool | None = None,
        with_row_id: bool | None = None,
        with_row_address: bool | None = None,
        use_stats: bool | None = None,
        fast_search: bool | None = None,
        full_text_query: Any = None,
        io_buffer_size: int | None = None,
        late_materialization: bool | list[str] | None = None,
        blob_handling: str | None = None,
        use_scalar_index: bool | None = None,
        include_deleted_rows: bool | None = None,
        order_by: list[Any] | None = None,
        disable_scoring_autoprojection: bool | None = None,
    ) -> pa.Table:
        """The live rows (matching ``filter``) as one table, in fragment order: ``scanner(...).to_table()``.

        Args:
            columns: The columns to return: a list of names (nested fields as ``"s.x"``; ``_rowid``,
                ``_rowaddr``, ``_rowoffset`` too), or a dict of output name to SQL expression. None: all.
            filter: A row filter: SQL text as pylance parses it (comparisons, ``AND``/``OR``/``NOT``,
                ``IN``, ``LIKE``, ``IS NULL``, ``regexp_match``, casts...) or a ``pyarrow.compute``
                Expression. Zone maps skip pages that cannot match.
            limit: At most this many rows.
            offset: Skip this many rows first.
            nearest: A vector search: ``{"column": name, "q": vector, "k": 10, "metric": "l2"}``
                (also ``"cosine"``, ``"dot"``). lancelot's search is exact (brute force over the live
                rows); pylance uses a vector index when there is one.
            batch_size: Rows per batch of ``to_batches`` (default 8192, or ``LANCE_DEFAULT_BATCH_SIZE``).
            batch_size_bytes: Accepted; no effect.
            batch_readahead: Accepted; no effect.
            fragment_readahead: Accepted; no effect.
            scan_in_order: Accepted; no effect (results are always in fragment order).
            prefilter: With ``nearest``: filter before searching (True) or after (False, the default).
            with_row_id: Add the ``_rowid`` column.
            with_row_address: Add the ``_rowaddr`` column (fragment id << 32 | position in fragment).
            use_stats: Accepted; no effect.
            fast_search: Accepted; no effect.
            full_text_query: Not supported (refused when given).
            io_buffer_size: Accepted; no effect.
            late_materialization: Accepted; no effect.
            blob_handling: Accepted; no effect (blob columns read as pylance's default: descriptions).
            use_scalar_index: Accepted; no effect (lancelot uses no index).
            include_deleted_rows: Also return deleted rows (needs ``with_row_id``).
            order_by: Sort keys: column names or ``ColumnOrdering(name, ascending, nulls_first)``.
            disable_scoring_autoprojection: With ``nearest``: leave out the ``_distance`` column.

        Returns:
            A ``pyarrow.Table`` of the projected schema.

        Raises:
            ValueError: As ``scanner``.

        Examples:
            >>> ds.to_table(columns=["id"], filter="id > 6 AND name LIKE 'n%'").to_pydict()
            {'id': [7, 8, 9]}
        """
        return self.scanner(
            columns,
            filter,
            limit,
            offset,
            nearest,
            batch_size,
            full_text_query=full_text_query,
            prefilter=prefilter,
            with_row_id=with_row_id,
            with_row_address=with_row_address,
            include_deleted_rows=include_deleted_rows,
            order_by=order_by,
            disable_scoring_autoprojection=disable_scoring_autoprojection,
        ).to_table()

    def to_batches(
        self,
        columns: Sequence[str] | dict[str, str] | None = None,
        filter: str | pc.Expression | None = None,
        limit: int | None = None,
        offset: int | None = None,
        nearest: dict[str, Any] | None = None,
        batch_size: int | None = None,
        batch_size_bytes: int | None = None,
        batch_readahead: int | None = None,
        fragment_readahead: int | None = None,
        scan_in_order: bool | None = None,
        *,
        prefilter: bool | None = None,
        with_row_id: bool | None = None,
        with_row_address: bool | None = None,
        use_stats: bool | None = None,
        full_text_query: Any = None,
        io_buffer_size: int | None = None,
        late_materialization: bool | list[str] | None = None,
        blob_handling: str | None = None,
        use_scalar_index: bool | None = None,
        strict_batch_size: bool | None = None,
        order_by: list[Any] | None = None,
        disable_scoring_autoprojection: bool | None = None,
        **kwargs: Any,
    ) -> Iterator[pa.RecordBatch]:
        """The scan's result in record batches: ``scanner(...).to_batches()``.

        A batch holds at most ``batch_size`` rows, and never rows of two fragments (as in pylance).

        Args:
            columns: The columns to return: a list of names (nested fields as ``"s.x"``; ``_rowid``,
                ``_rowaddr``, ``_rowoffset`` too), or a dict of output name to SQL expression. None: all.
            filter: A row filter: SQL text as pylance parses it (comparisons, ``AND``/``OR``/``NOT``,
                ``IN``, ``LIKE``, ``IS NULL``, ``regexp_match``, casts...) or a ``pyarrow.compute``
                Expression. Zone maps skip pages that cannot match.
            limit: At most this many rows.
            offset: Skip this many rows first.
            nearest: A vector search: ``{"column": name, "q": vector, "k": 10, "metric": "l2"}``
                (also ``"cosine"``, ``"dot"``). lancelot's search is exact (brute force over the live
                rows); pylance uses a vector index when there is one.
            batch_size: Rows per batch of ``to_batches`` (default 8192, or ``LANCE_DEFAULT_BATCH_SIZE``).
            batch_size_bytes: Accepted; no effect.
            batch_readahead: Accepted; no effect.
            fragment_readahead: Accepted; no effect.
            scan_in_order: Accepted; no effect (results are always in fragment order).
            prefilter: With ``nearest``: filter before searching (True) or after (False, the default).
            with_row_id: Add the ``_rowid`` column.
            with_row_address: Add the ``_rowaddr`` column (fragment id << 32 | position in fragment).
            use_stats: Accepted; no effect.
            full_text_query: Not supported (refused when given).
            io_buffer_size: Accepted; no effect.
            late_materialization: Accepted; no effect.
            blob_handling: Accepted; no effect (blob columns read as pylance's default: descriptions).
            use_scalar_index: Accepted; no effect (lancelot uses no index).
            strict_batch_size: Accepted; no effect.
            order_by: Sort keys: column names or ``ColumnOrdering(name, ascending, nulls_first)``.
            disable_scoring_autoprojection: With ``nearest``: leave out the ``_distance`` column.
            **kwargs: Other ``scanner`` options.

        Returns:
            An iterator of ``pyarrow.RecordBatch``.

        Examples:
            >>> [b.num_rows for b in ds.to_batches(batch_size=4)]
            [4, 4, 2]
        """
        return self.scanner(
            columns,
            filter,
            limit,
            offset,
            nearest,
            batch_size,
            full_text_query=full_text_query,
            prefilter=prefilter,
            with_row_id=with_row_id,
            with_row_address=with_row_address,
            order_by=order_by,
            disable_scoring_autoprojection=disable_scoring_autoprojection,
            **kwargs,
        ).to_batches()

    def _empty(self, columns: Sequence[str] | dict[str, str] | None) -> pa.Table:
        return self.scanner(columns=columns).projected_schema.empty_table()

    def take(
        self, indices: ArrayLike | pa.Array | pa.ChunkedArray, columns: Sequence[str] | dict[str, str] | None = None
    ) -> pa.Table:
        """Rows by position among the live rows of all fragments, in the order asked.

        Only the pages holding the asked rows are read. Positions may repeat and come in any order.

        Args:
            indices: Row positions (0 to ``count_rows() - 1``): a list, numpy array or Arrow array.
            columns: As in ``scanner`` (names, or a dict of SQL expressions); None for all.

        Returns:
            A ``pyarrow.Table`` with one row per index.

        Raises:
            IndexError: A position is out of range (an ``OutOfRangeError``).

        Examples:
            >>> ds.take([4, 0, 4], columns=["id"]).to_pydict()
            {'id': [4, 0, 4]}
        """
        from lancelot.dataset.take import take

        return take(self, indices, columns)

    def _take_rows(
        self,
        row_ids: Sequence[int] | pa.Array | np.ndarray,
        columns: Sequence[str] | dict[str, str] | None = None,
        *,
        ignore_deletions: bool = False,
        **kargs: Any,
    ) -> pa.Table:
        """Rows by row id (the row address, or the stable row id of datasets that have them), in the
        order asked; deleted rows are left out unless ``ignore_deletions``."""
        from lancelot.dataset.take import take_rows

        return take_rows(self, row_ids, columns, ignore_deletions=ignore_deletions)

    def _rows_at(
        self,
        addr: np.ndarray,
        columns: Sequence[str] | dict[str, str] | None,
        *,
        ignore_deletions: bool,
        scan: LanceScanner | None = None,
    ) -> pa.Table:
        from lancelot.dataset.take import rows_at

        return rows_at(self, addr, columns, ignore_deletions=ignore_deletions, scan=scan)

    def sample(
        self,
        num_rows: int,
        columns: Sequence[str] | dict[str, str] | None = None,
        randomize_order: bool = True,
        **kwargs: Any,
    ) -> pa.Table:
        """Live rows drawn at random, without replacement.

        Args:
            num_rows: How many rows (at most ``count_rows()``).
            columns: As in ``take``.
            randomize_order: Return them shuffled (True) or in dataset order (False).
            **kwargs: Accepted for pylance's scanner options; no effect.

        Returns:
            A ``pyarrow.Table`` of ``num_rows`` rows.
        """
        from lancelot.dataset.take import sample

        return sample(self, num_rows, columns, randomize_order)

    def head(self, num_rows: int, **kwargs: Any) -> pa.Table:
        """The first rows of a scan.

        Args:
            num_rows: How many rows.
            **kwargs: Scanner options (``columns``, ``filter``...).

        Returns:
            A ``pyarrow.Table`` of at most ``num_rows`` rows.

        Examples:
            >>> ds.head(2, columns=["name"]).to_pydict()
            {'name': ['n0', 'n1']}
        """
        if not kwargs and not isinstance(num_rows, int | np.integer):  # the older (n, columns) call
            raise LanceValueError(f"dataset {self.uri!r}: head needs a number of rows, not {num_rows!r}")
        return self.scanner(**kwargs).head(int(num_rows))

    # -- writes ------------------------------------------------------------------------------
    def delete(
        self, predicate: str | pc.Expression, *, conflict_retries: int = 10, retry_timeout: Any = None
    ) -> DeleteResult:
        """Delete the rows matching ``predicate``, as one new version (also when none match, as pylance);
        this object then shows the new version.

        Deletions are recorded in deletion files; data files are rewritten only by ``compact_files``.

        Args:
            predicate: SQL text or a ``pyarrow.compute`` Expression.
            conflict_retries: How often to retry on a concurrent commit that conflicts.
            retry_timeout: Accepted for pylance's signature; retries are bounded by ``conflict_retries``.

        Returns:
            ``{"num_deleted_rows": n}``, as pylance.

        Examples:
            >>> ds.delete("id >= 8")
            {'num_deleted_rows': 2}
            >>> ds.count_rows(), ds.version
            (8, 2)
        """
        from lancelot.dataset.changes import delete

        return delete(self, predicate, conflict_retries, retry_timeout)

    # -- maintenance (compact.py, cleanup.py) ---------------------------------------------------
    def compact_files(self, **options: Any) -> CompactionMetrics:
        """Rewrite small fragments into larger ones and drop deleted rows, as one new version; this object
        then shows it. pylance has this as ``ds.optimize.compact_files``, also here.

        Args:
            **options: pylance's ``CompactionOptions``: ``target_rows_per_fragment`` (default 1Mi),
                ``max_rows_per_group``, ``materialize_deletions``, ``materialize_deletions_threshold``,
                ``num_threads``... Datasets with indices are not compacted yet (refused).

        Returns:
            A ``CompactionMetrics`` (``fragments_removed``, ``fragments_added``, ``files_removed``,
            ``files_added``), as pylance.
        """
        from lancelot.dataset.compact import compact_files

        before = self.latest_version
        metrics = compact_files(self, **options)
        latest = self.latest_version
        if latest != before:  # like pylance: this object moves on to the compacted version
            self._move_to(latest)
        return metrics

    @property
    def optimize(self) -> Optimizer:
        """Maintenance operations (``optimize.compact_files``), as pylance's ``dataset.optimize``."""
        from lancelot.dataset.compact import Optimizer

        return Optimizer(self)

    def cleanup_old_versions(
        self, older_than: _dt.timedelta | None = None, *, delete_unverified: bool = False, **options: Any
    ) -> CleanupStats:
        """Remove old versions' manifests and the data, deletion and index files only they use.

        The latest version and tagged versions are kept.

        Args:
            older_than: Remove versions older than this (default: two weeks, as pylance).
            delete_unverified: Also remove unreferenced files younger than seven days (which may belong
                to a write still in progress).
            **options: pylance's other options (``retain_versions``, ``error_if_tagged_old_versions``...).

        Returns:
            A ``CleanupStats`` (``bytes_removed``, ``old_versions``...), as pylance.
        """
        from lancelot.dataset.cleanup import cleanup_old_versions

        return cleanup_old_versions(self, older_than, delete_unverified=delete_unverified, **options)

    # -- blobs (dataset/blob.py) ---------------------------------------------------------------
    def take_blobs(
        self,
        blob_column: str,
        ids: Any = None,
        addresses: Any = None,
        indices: Any = None,
        *,
        buffer_size: int = 512 * 1024,
    ) -> list[BlobFile | None]:
        """Lazy file-like objects over the blobs of some rows of a blob column.

        Give exactly one of ``ids``, ``addresses``, ``indices``. Nothing is read until a ``BlobFile`` is.

        Args:
            blob_column: A blob column (``lance-encoding:blob`` metadata, or blob v2 at 2.2).
            ids: Row ids.
            addresses: Row addresses.
            indices: Row positions, as in ``take``.
            buffer_size: Bytes read ahead by each ``BlobFile``.

        Returns:
            One [`BlobFile`][lancelot.dataset.blob_file.BlobFile] per row (None for a null blob).

        Raises:
            ValueError: Not exactly one selector, or the column is not a blob column.
        """
        from lancelot.dataset import blob

        return blob.take_blobs(self, blob_column, ids, addresses, indices, buffer_size=buffer_size)

    def read_blobs(
        self,
        blob_column: str,
        ids: Any = None,
        addresses: Any = None,
        indices: Any = None,
        *,
        io_buffer_size: int | None = None,
        preserve_order: bool | None = None,
    ) -> list[tuple[int, bytes | None]]:
        """The bytes of the blobs of some rows of a blob column, read eagerly.

        Args:
            blob_column: A blob column.
            ids: Row ids (give exactly one of ``ids``, ``addresses``, ``indices``).
            addresses: Row addresses.
            indices: Row positions.
            io_buffer_size: Accepted; no effect.
            preserve_order: Accepted; results are always in the order asked.

        Returns:
            ``(row address, bytes or None)`` per row.
        """
        from lancelot.dataset import blob

        return blob.read_blobs(
            self, blob_column, ids, addresses, indices, io_buffer_size=io_buffer_size, preserve_order=preserve_order
        )

    def read_blob_ranges(
        self,
        blob_column: str,
        requests: Sequence[tuple[int, int, int]],
        *,
        selector: str,
        io_buffer_size: int | None = None,
        preserve_order: bool | None = None,
    ) -> list[tuple[int, int, bytes | None]]:
        """Byte ranges of blobs: one read per ``(row, offset, length)`` request.

        Args:
            blob_column: A blob column.
            requests: ``(row, offset, length)`` triples; ``row`` is what ``selector`` says.
            selector: ``"ids"``, ``"addresses"`` or ``"indices"``.
            io_buffer_size: Accepted; no effect.
            preserve_order: Accepted; results are always in request order.

        Returns:
            ``(request index, row address, bytes or None)`` per request.
        """
        from lancelot.dataset import blob

        return blob.read_blob_ranges(
            self, blob_column, requests, selector=selector, io_buffer_size=io_buffer_size, preserve_order=preserve_order
        )

    # -- changing data (dataset/changes.py) ------------------------------------------------------
    def update(
        self,
        updates: dict[str, str],
        where: str | pc.Expression | None = None,
        conflict_retries: int = 10,
        retry_timeout: Any = None,
    ) -> dict[str, int]:
        """Set columns to SQL expressions on the rows where ``where`` holds, as one new version; this
        object then shows it.

        Updated rows are deleted from their fragments and rewritten into new ones (as pylance does).

        Args:
            updates: Column name to SQL expression over the row (``{"name": "upper(name)"}``).
            where: SQL text or an Expression; None updates every row.
            conflict_retries: How often to retry on a concurrent commit that conflicts.
            retry_timeout: Accepted for pylance's signature.

        Returns:
            ``{"num_rows_updated": n}``, as pylance.

        Examples:
            >>> ds.update({"name": "upper(name)"}, where="id < 2")
            {'num_rows_updated': 2}
            >>> ds.to_table(columns=["name"], filter="id < 3").to_pydict()  # updated rows move to a new fragment
            {'name': ['n2', 'N0', 'N1']}
        """
        from lancelot.dataset.changes import update

        return update(self, updates, where, conflict_retries, retry_timeout)

    def merge_insert(self, on: str | Sequence[str]) -> MergeInsertBuilder:
        """Start a merge-insert (an upsert, an insert-if-not-exists, a replace of a range), as pylance's.

        Args:
            on: The key column(s) rows are matched on.

        Returns:
            A [`MergeInsertBuilder`][lancelot.dataset.merge_insert.MergeInsertBuilder]: say what to do
            with matched and unmatched rows, then ``execute(data)``.

        Examples:
            >>> new = pa.table({"id": [8, 9, 10], "name": ["x8", "x9", "x10"]})
            >>> r = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(new)
            >>> r["num_updated_rows"], r["num_inserted_rows"], ds.count_rows()
            (2, 1, 11)
        """
        from lancelot.dataset.merge_insert import MergeInsertBuilder

        return MergeInsertBuilder(self, on)

    def insert(self, data: Any, *, mode: str = "append", **kwargs: Any) -> None:
        """Write ``data`` into this dataset (``write_dataset(data, self, mode=mode)``); this object then
        shows the new version.

        Args:
            data: Anything ``write_dataset`` accepts.
            mode: ``"append"`` (default), ``"overwrite"`` or ``"create"``.
            **kwargs: Other ``write_dataset`` options.

        Examples:
            >>> ds.insert(pa.table({"id": [10], "name": ["n10"]}))
            >>> ds.count_rows(), ds.version
            (11, 2)
        """
        from lancelot.dataset.changes import insert

        insert(self, data, mode=mode, **kwargs)

    def add_columns(
        self,
        transforms: Any,
        read_columns: list[str] | None = None,
        reader_schema: pa.Schema | None = None,
        batch_size: int | None = None,
    ) -> None:
        """Add columns, as one new version; existing data files are not rewritten (new columns go to new
        files of the same fragments, as pylance writes them).

        Args:
            transforms: One of: a dict of new column name to SQL expression over the row; a function
                from a ``RecordBatch`` to a batch (or DataFrame) of the new columns; a
                ``RecordBatchReader`` of the new columns, row-aligned with the dataset; or a
                ``pyarrow.Field`` / list / schema of all-null columns.
            read_columns: For a function: the columns it receives (default all).
            reader_schema: For a function: the schema of what it returns (default: from its first result).
            batch_size: For a function: rows per call.

        Raises:
            ValueError: A name already in the schema, or an expression that does not parse.

        Examples:
            >>> ds.add_columns({"even": "id % 2 = 0"})
            >>> ds.head(3, columns=["even"]).to_pydict()
            {'even': [True, False, True]}
        """
        from lancelot.dataset.schema_evolution import add_columns

        add_columns(self, transforms, read_columns, reader_schema, batch_size)

    def alter_columns(self, *alterations: dict[str, Any]) -> None:
        """Rename columns, change their nullability or cast them, as one new version.

        Args:
            *alterations: One dict per column: ``path`` (the column, ``"s.x"`` for a nested one) and any
                of ``name`` (rename), ``nullable`` (True to allow nulls), ``data_type`` (a cast: the
                column's files are rewritten).

        Examples:
            >>> ds.alter_columns({"path": "name", "name": "label"})
            >>> ds.schema.names
            ['id', 'label']
        """
        from lancelot.dataset.schema_alter import alter_columns

        alter_columns(self, *alterations)

    def drop_columns(self, columns: list[str]) -> None:
        """Remove columns from the schema, as one new version (metadata only: the files keep the data until
        ``compact_files`` rewrites them, as pylance).

        Args:
            columns: Column names (``"s.x"`` for a struct's child).

        Raises:
            ValueError: A column that is not in the schema, or dropping every column.
        """
        from lancelot.dataset.schema_alter import drop_columns

        drop_columns(self, columns)

    def merge(self, data_obj: Any, left_on: str, right_on: str | None = None, schema: pa.Schema | None = None) -> None:
        """Add the other columns of ``data_obj`` to the dataset, joined on a key (a left join: rows without
        a match get nulls), as one new version.

        Args:
            data_obj: A Table, RecordBatchReader or anything ``write_dataset`` accepts.
            left_on: The key column in the dataset.
            right_on: The key column in ``data_obj`` (default: ``left_on``).
            schema: The schema of ``data_obj`` when it is an iterable of batches.

        Examples:
            >>> ds.merge(pa.table({"id": [0, 1], "score": [0.5, 0.7]}), "id")
            >>> ds.head(3, columns=["score"]).to_pydict()
            {'score': [0.5, 0.7, None]}
        """
        from lancelot.dataset.schema_evolution import merge

        merge(self, data_obj, left_on, right_on, schema)


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

    pylance's cache and session arguments are accepted and ignored; the ones lancelot cannot honour
    (a namespace, a commit lock, default scan options) are refused.

    Args:
        uri: A local path or an fsspec URL (``s3://``, ``gs://``, ``az://``, ``memory://``...).
        version: A version number or a tag name; None for the latest.
        asof: The newest version committed at or before this time (a datetime or an ISO string).
        block_size: Accepted; no effect.
        commit_lock: Not supported (refused when given): commits are atomic through the object store.
        index_cache_size: Accepted; no effect.
        storage_options: Object store options (credentials, ``endpoint``, ``region``...).
        default_scan_options: Not supported (refused when given): pass options to each scan.
        metadata_cache_size_bytes: Accepted; no effect.
        index_cache_size_bytes: Accepted; no effect.
        read_params: Accepted; no effect.
        session: Accepted; no effect.
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
    if namespace_client is not None or table_id is not None or commit_lock is not None:
        raise LanceValueError("lancelot.dataset: namespaces and custom commit locks are not supported")
    if default_scan_options:
        raise LanceValueError("lancelot.dataset: default_scan_options is not supported (pass the options to each scan)")
    return LanceDataset(uri, version, asof=asof, storage_options=storage_options)


def _reopen(uri: str, version: int, storage_options: dict[str, Any] | None) -> LanceDataset:
    return LanceDataset(uri, version, storage_options=storage_options)
