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

from lancelot.dataset.commit import commit_transaction, list_versions, load_manifest
from lancelot.dataset.config import commit_update_config, field_metadata_maps, string_map, update_map
from lancelot.dataset.fragment import DATA_DIR, Fragment, manifest_live_rows
from lancelot.dataset.history import manifest_summary, version_time
from lancelot.dataset.manifest import FLAG_STABLE_ROW_IDS, check_reader_flags, data_version
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
    from lancelot.dataset.blob_file import BlobFile
    from lancelot.dataset.changes import DeleteResult
    from lancelot.dataset.cleanup import CleanupStats
    from lancelot.dataset.compact import CompactionMetrics, Optimizer
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
    """One version of a dataset (like ``lance.dataset(...)``)."""

    def __init__(
        self,
        uri: str | os.PathLike[str],
        version: int | str | None = None,
        *,
        asof: _dt.datetime | str | None = None,
        storage_options: dict[str, Any] | None = None,
        _store: ObjectStore | None = None,
    ) -> None:
        self._store = _store or ObjectStore(uri, storage_options)
        self.uri: str = self._store.uri
        self.storage_options = storage_options
        self._versions = list_versions(self._store, self.uri)
        if self._versions.latest is None:
            e = DatasetNotFoundError(f"dataset {self.uri!r} does not exist (no manifest in _versions/)")
            e.filename = self.uri
            raise e
        if version is None and asof is not None:
            version = self._version_asof(asof)
        v = self._versions.latest if version is None else self._resolve_version(version)
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
        from lancelot.dataset.history import as_local_time

        cutoff = as_local_time(asof)
        before = [v["version"] for v in self.versions() if v["timestamp"] < cutoff]
        if not before:
            raise VersionNotFoundError(f"{cutoff} is earlier than the first version of dataset {self.uri!r}")
        return int(max(before))

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
        """Every version: ``version``, ``timestamp`` (local time, as pylance) and ``metadata`` (the
        manifest's summary: total_fragments, total_rows... as strings, as pylance gives them)."""
        out = []
        versions = list_versions(self._store, self.uri)
        for v in sorted(versions.names):
            m = load_manifest(self._store, self.uri, versions, v).manifest
            ts = version_time(m.timestamp.seconds * 1_000_000_000 + m.timestamp.nanos)
            out.append({"version": v, "timestamp": ts, "metadata": manifest_summary(m)})
        return out

    def checkout_version(self, version: int | str | tuple[str | None, int | None]) -> LanceDataset:
        """This dataset at another version (a number or a tag)."""
        if isinstance(version, tuple):
            branch, number = version
            if branch not in (None, "main"):
                raise LanceValueError(f"dataset {self.uri!r}: branches are not supported by lancelot ({branch!r})")
            version = number if number is not None else self.latest_version
        return LanceDataset(self.uri, version, storage_options=self.storage_options, _store=self._store)

    @property
    def tags(self) -> Tags:
        """The dataset's tags (``_refs/tags/``): create, update, delete, list, get_version."""
        from lancelot.dataset.refs import Tags

        return Tags(self)

    def restore(self) -> None:
        """Make this (older) version the latest: a Restore commit, as pylance writes it; this object
        then shows the new version."""
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
        """The table config (a string map in the manifest)."""
        return dict(self.manifest.config)

    def update_config(self, values: dict[str, str | None], *, replace: bool = False) -> dict[str, str]:
        """Set (None: remove) table config keys as a new version; returns the new config."""
        self._move_to(commit_update_config(self, config_updates=update_map(string_map(values, "config"), replace)))
        return self.config()

    def delete_config_keys(self, keys: list[str]) -> None:
        """Remove table config keys as a new version."""
        self._move_to(commit_update_config(self, config_updates=update_map(dict.fromkeys(keys), False)))

    def update_metadata(self, values: dict[str, str | None], *, replace: bool = False) -> dict[str, str]:
        """Set (None: remove) table metadata keys as a new version; returns the new table metadata."""
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
        """Set (None: remove) schema metadata keys as a new version; returns the new schema metadata."""
        maps = update_map(string_map(values, "schema metadata"), replace)
        self._move_to(commit_update_config(self, schema_metadata_updates=maps))
        return self.schema_metadata

    def update_field_metadata(
        self, field_updates: dict[str | int, dict[str, str | None]], *, replace: bool = False
    ) -> None:
        """Set (None: remove) field metadata keys, fields named by path ("s.x") or id, as a new version."""
        maps = field_metadata_maps(self, field_updates, replace)
        self._move_to(commit_update_config(self, field_metadata_updates=maps))

    def replace_schema_metadata(self, new_metadata: dict[str, str]) -> None:
        """Deprecated in pylance: ``update_schema_metadata(new_metadata, replace=True)``."""
        import warnings

        warnings.warn(
            "replace_schema_metadata is deprecated. Use update_schema_metadata(metadata, replace=True) instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        self.update_schema_metadata(dict(new_metadata), replace=True)

    def replace_field_metadata(self, field_name: str, new_metadata: dict[str, str]) -> None:
        """Deprecated in pylance: ``update_field_metadata({field_name: new_metadata}, replace=True)``."""
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

    # -- reads -------------------------------------------------------------------------------
    def get_fragments(self, filter: pc.Expression | None = None) -> list[Fragment]:
        """The fragments of this version (pylance does not support ``filter`` here either)."""
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
        """``to_table(...).to_pandas()``."""
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
        """The fragment with ``fragment_id`` in this version, or None."""
        if self._fragment_list is None:  # one Fragment, not one per fragment of the version
            return next((Fragment(self, f) for f in self.manifest.fragments if f.id == fragment_id), None)
        return next((f for f in self._fragments if f.fragment_id == fragment_id), None)

    def count_rows(self, filter: str | pc.Expression | None = None, **kwargs: Any) -> int:
        """Live rows (matching ``filter``: SQL text or a pyarrow.compute Expression)."""
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
        """A scan of this version (pylance's ``LanceDataset.scanner``; lancelot/dataset/scanner.py).

        Read-tuning options (readahead, buffer sizes, late materialisation, index use) are accepted
        and have no effect; options lancelot cannot honour (full-text search, index segments,
        row-address allow/block lists) are refused."""
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
        """The live rows (matching ``filter``), in fragment order; options as ``scanner``."""
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
        """The scan's result in batches (at most ``batch_size`` rows; a fragment's rows never share a
        batch with another fragment's)."""
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
        """Rows by index over the live rows of all fragments in order (any order, duplicates)."""
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
        """``num_rows`` live rows drawn at random without replacement (ascending unless ``randomize_order``)."""
        from lancelot.dataset.take import sample

        return sample(self, num_rows, columns, randomize_order)

    def head(self, num_rows: int, **kwargs: Any) -> pa.Table:
        """The first ``num_rows`` rows of a scan (``kwargs``: the scanner's options)."""
        if not kwargs and not isinstance(num_rows, int | np.integer):  # the older (n, columns) call
            raise LanceValueError(f"dataset {self.uri!r}: head needs a number of rows, not {num_rows!r}")
        return self.scanner(**kwargs).head(int(num_rows))

    # -- writes ------------------------------------------------------------------------------
    def delete(
        self, predicate: str | pc.Expression, *, conflict_retries: int = 10, retry_timeout: Any = None
    ) -> DeleteResult:
        """Delete the rows matching ``predicate`` (SQL text or a pyarrow Expression) as one new
        version, also when none match (as pylance); this object then shows the new version.
        Returns pylance's ``{"num_deleted_rows": n}`` (lancelot/dataset/changes.py)."""
        from lancelot.dataset.changes import delete

        return delete(self, predicate, conflict_retries, retry_timeout)

    # -- maintenance (compact.py, cleanup.py) ---------------------------------------------------
    def compact_files(self, **options: Any) -> CompactionMetrics:
        """Merge small fragments and materialise deletions (pylance's ``optimize.compact_files``)."""
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
        """Remove versions older than ``older_than`` and the files only they use (pylance's name)."""
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
        """Lazy file-like ``BlobFile`` objects for the blobs of the selected rows (exactly one of
        ``ids``, ``addresses``, ``indices``); None for a null blob."""
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
        """``(row address, bytes)`` of each selected row's blob (None for a null blob)."""
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
        """``(request index, row address, bytes)`` per ``(row, offset, length)`` request."""
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
        """Set columns to SQL expressions over the row where ``where`` holds (pylance's ``update``);
        returns ``{"num_rows_updated": n}``."""
        from lancelot.dataset.changes import update

        return update(self, updates, where, conflict_retries, retry_timeout)

    def merge_insert(self, on: str | Sequence[str]) -> MergeInsertBuilder:
        """A builder for an upsert / insert-if-not-exists / replace-range (pylance's ``merge_insert``)."""
        from lancelot.dataset.merge_insert import MergeInsertBuilder

        return MergeInsertBuilder(self, on)

    def insert(self, data: Any, *, mode: str = "append", **kwargs: Any) -> None:
        """Write ``data`` into this dataset (``write_dataset`` with ``mode``); this object moves on."""
        from lancelot.dataset.changes import insert

        insert(self, data, mode=mode, **kwargs)

    def add_columns(
        self,
        transforms: Any,
        read_columns: list[str] | None = None,
        reader_schema: pa.Schema | None = None,
        batch_size: int | None = None,
    ) -> None:
        """New columns: SQL expressions, a function over batches, a reader, or all-null fields."""
        from lancelot.dataset.schema_evolution import add_columns

        add_columns(self, transforms, read_columns, reader_schema, batch_size)

    def alter_columns(self, *alterations: dict[str, Any]) -> None:
        """Rename columns, make them nullable, or cast them (pylance's ``alter_columns``)."""
        from lancelot.dataset.schema_alter import alter_columns

        alter_columns(self, *alterations)

    def drop_columns(self, columns: list[str]) -> None:
        """Remove columns from the schema (metadata only, as pylance's ``drop_columns``)."""
        from lancelot.dataset.schema_alter import drop_columns

        drop_columns(self, columns)

    def merge(self, data_obj: Any, left_on: str, right_on: str | None = None, schema: pa.Schema | None = None) -> None:
        """Left-join ``data_obj``'s other columns onto the dataset as new columns (pylance's ``merge``)."""
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
    """Open a Lance dataset (a local path or an fsspec URL) at its latest version, at ``version``
    (a number or a tag), or as of a time (``asof``: the newest version committed before it).

    pylance's cache and session arguments are accepted and have no effect; a namespace, a commit
    lock or default scan options, which lancelot does not honour, are refused."""
    if namespace_client is not None or table_id is not None or commit_lock is not None:
        raise LanceValueError("lancelot.dataset: namespaces and custom commit locks are not supported")
    if default_scan_options:
        raise LanceValueError("lancelot.dataset: default_scan_options is not supported (pass the options to each scan)")
    return LanceDataset(uri, version, asof=asof, storage_options=storage_options)


def _reopen(uri: str, version: int, storage_options: dict[str, Any] | None) -> LanceDataset:
    return LanceDataset(uri, version, storage_options=storage_options)
