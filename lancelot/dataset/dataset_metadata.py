"""``LanceDataset``'s metadata: table config, schema and field metadata (UpdateConfig commits, dataset/config.py),
statistics, indices as the manifest describes them, and row-id facts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lancelot.dataset.config import commit_update_config, field_metadata_maps, string_map, update_map
from lancelot.dataset.manifest import FLAG_STABLE_ROW_IDS, data_version
from lancelot.dataset.signatures import inherit_arguments

if TYPE_CHECKING:
    from pyroaring import BitMap

    from lancelot.dataset.clone import DatasetBasePath
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.indices import IndexDescription
    from lancelot.dataset.io_stats import IOStats
    from lancelot.dataset.session import Session
    from lancelot.dataset.stats import LanceStats


class MetadataMixin:
    """LanceDataset's config, metadata, statistics and indices (mixed into ``LanceDataset``)."""

    def config(self: LanceDataset) -> dict[str, str]:
        """The table config (the manifest's string map of settings).

        Returns:
            A copy of the config: changing it changes nothing on disk (use ``update_config``).
        """
        return dict(self.manifest.config)

    def update_config(self: LanceDataset, values: dict[str, str | None], *, replace: bool = False) -> dict[str, str]:
        """Set or remove table config keys, as one new version (an UpdateConfig commit).

        Args:
            values: The keys to set; a value of None removes its key.
            replace: Replace all keys with ``values`` instead of merging into them.

        Returns:
            The new config.

        Examples:
            >>> ds.update_config({"owner": "etl"})
            {'owner': 'etl'}
        """
        self._update_strings("config_updates", "config", values, replace)
        return self.config()

    def delete_config_keys(self: LanceDataset, keys: list[str]) -> None:
        """Remove table config keys, as one new version.

        Args:
            keys: The keys to remove (absent keys are ignored).
        """
        self.move_to(*commit_update_config(self, config_updates=update_map(dict.fromkeys(keys), False)))

    def update_metadata(self: LanceDataset, values: dict[str, str | None], *, replace: bool = False) -> dict[str, str]:
        """Set or remove table metadata keys, as one new version.

        Args:

        Returns:
            The new table metadata.
        """
        self._update_strings("table_metadata_updates", "metadata", values, replace)
        return self.metadata

    @property
    def metadata(self: LanceDataset) -> dict[str, str]:
        """The table metadata."""
        return dict(self.manifest.table_metadata)

    @property
    def schema_metadata(self: LanceDataset) -> dict[str, str]:
        """The schema metadata, as strings."""
        return {k: v.decode() for k, v in self.manifest.schema_metadata.items()}

    def update_schema_metadata(
        self: LanceDataset, values: dict[str, str | None], *, replace: bool = False
    ) -> dict[str, str]:
        """Set or remove schema metadata keys, as one new version.

        Args:

        Returns:
            The new schema metadata.
        """
        self._update_strings("schema_metadata_updates", "schema metadata", values, replace)
        return self.schema_metadata

    def _update_strings(
        self: LanceDataset, updates: str, what: str, values: dict[str, str | None], replace: bool
    ) -> None:
        """Commit one UpdateConfig whose string-map ``updates`` sets ``values`` (None: remove the key)."""
        self.move_to(*commit_update_config(self, **{updates: update_map(string_map(values, what), replace)}))

    def update_field_metadata(
        self: LanceDataset, field_updates: dict[str | int, dict[str, str | None]], *, replace: bool = False
    ) -> None:
        """Set or remove metadata keys of fields, as one new version.

        Args:
            field_updates: Per field, named by path (``"s.x"`` for a struct's child) or field id, the keys to set; a
                value of None removes its key.
            replace: Replace each named field's metadata instead of merging into it.

        Raises:
            ValueError: A path or id names no field of the schema.
        """
        maps = field_metadata_maps(self, field_updates, replace)
        self.move_to(*commit_update_config(self, field_metadata_updates=maps))

    def replace_schema(self: LanceDataset, schema: Any) -> None:
        """Refused, as pylance refuses it (pyarrow's ``Dataset.replace_schema``): a Lance schema changes by
        ``add_columns``, ``alter_columns``, ``drop_columns`` or the metadata methods.

        Args:
            schema: Not used.

        Raises:
            NotImplementedError: Always.
        """
        raise NotImplementedError(
            f"dataset {self.uri!r}: cannot replace the schema of a dataset; use replace_schema_metadata or "
            "replace_field_metadata to change its metadata"
        )

    def replace_schema_metadata(self: LanceDataset, new_metadata: dict[str, str]) -> None:
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

    def replace_field_metadata(self: LanceDataset, field_name: str, new_metadata: dict[str, str]) -> None:
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

    def io_stats_snapshot(self: LanceDataset) -> IOStats:
        """The dataset's I/O statistics so far, the counters kept (pylance's; see lancelot/dataset/io_stats.py for
        what lancelot counts: data file reads of the process since the dataset was opened, no writes).

        Returns:
            An ``IOStats``: ``read_iops``, ``read_bytes``, ``write_iops``, ``written_bytes``.
        """
        from lancelot.dataset.io_stats import stats

        return stats(self.store, reset=False)

    def io_stats_incremental(self: LanceDataset) -> IOStats:
        """The dataset's I/O statistics since the last call (or since it was opened), then reset to zero (pylance's).

        Returns:
            An ``IOStats``, as ``io_stats_snapshot``'s.
        """
        from lancelot.dataset.io_stats import stats

        return stats(self.store, reset=True)

    @property
    def initial_storage_options(self: LanceDataset) -> dict[str, str] | None:
        """The storage options the dataset was opened with (a copy), None without any.

        pylance adds its ``user_agent`` entry; lancelot gives the options as they were passed.
        """
        return None if self.storage_options is None else dict(self.storage_options)

    @property
    def storage_options_accessor(self: LanceDataset) -> None:
        """pylance's accessor of refreshed storage options (for namespaces): None, as pylance's without one."""
        return None

    @property
    def partition_expression(self: LanceDataset) -> Any:
        """Not implemented, as in pylance 14 (a Lance dataset has no partitioning).

        Raises:
            NotImplementedError: Always.
        """
        raise NotImplementedError("partitioning not yet supported")

    def base_paths(self: LanceDataset) -> dict[int, DatasetBasePath]:
        """The base paths registered in this version's manifest, by id (pylance's ``base_paths()``).

        Returns:
            ``{id: DatasetBasePath}``; empty when the dataset has none (a shallow clone has its source's).
        """
        from lancelot.dataset.clone import DatasetBasePath

        return {
            int(b.id): DatasetBasePath(int(b.id), b.name if b.HasField("name") else None, b.path, b.is_dataset_root)
            for b in self.manifest.base_paths
        }

    def latest_storage_options(self: LanceDataset) -> dict[str, str] | None:
        """The storage options in use now: the ones the dataset was opened with (lancelot has no storage options
        provider to refresh them from).

        Returns:
            A copy of the options, None without any.
        """
        return self.initial_storage_options

    def session(self: LanceDataset) -> Session:
        """The dataset's session: the caches its reads keep and their size (pylance's ``session``).

        Returns:
            The ``Session`` it was opened with, else its own (lancelot/dataset/session.py).
        """
        from lancelot.dataset.session import session_of

        return session_of(self)

    @property
    def stats(self: LanceDataset) -> LanceStats:
        """Statistics of this version: ``stats.dataset_stats()`` and ``stats.data_stats()`` (pylance's)."""
        from lancelot.dataset.stats import LanceStats

        return LanceStats(self)

    @property
    def data_storage_version(self: LanceDataset) -> str:
        """As pylance reports it (manifests before Lance 0.16 have none: from their files or flags)."""
        return data_version(self.manifest, f"dataset {self.uri!r} version {self.version}")

    def fragment_ids(self: LanceDataset) -> BitMap:
        """The ids of this version's fragments."""
        from pyroaring import BitMap

        return BitMap(int(f.id) for f in self.manifest.fragments)

    def create_scalar_index(
        self: LanceDataset,
        column: str,
        index_type: str,
        name: str | None = None,
        *,
        replace: bool = True,
        train: bool = True,
        fragment_ids: list[int] | None = None,
        index_uuid: str | None = None,
        **kwargs: Any,
    ) -> None:
        """Build a scalar index of ``column`` and commit it as a new version (pylance's ``create_scalar_index``;
        lancelot builds BTREE and BITMAP, which pylance's queries use).

        Args:
            column: The column (a dotted path for a struct field).
            index_type: ``"BTREE"`` or ``"BITMAP"``.
            name: The index's name (default ``"{column}_idx"``).
            replace: Replace an index of that name (else an existing one is an error).
            train: Accepted for pylance's signature (an index is always trained).
            fragment_ids: Index only these fragments.
            index_uuid: The index's uuid (default a new one).
            **kwargs: pylance's index parameters; not used.
        """
        from lancelot.dataset.index_build import create_scalar_index

        self.move_to(
            *create_scalar_index(
                self, column, index_type, name, replace=replace, fragment_ids=fragment_ids, index_uuid=index_uuid
            )
        )

    def drop_index(self: LanceDataset, name: str) -> None:
        """Remove the index named ``name``, as a new version (its files stay until cleanup).

        Args:
            name: The index's name.
        """
        from lancelot.dataset.index_build import drop_index

        self.move_to(*drop_index(self, name))

    def describe_indices(self: LanceDataset) -> list[IndexDescription]:
        """The indices of this version by name, with their segments (pylance's ``describe_indices``).

        Returns:
            One ``IndexDescription`` per index name, sorted by name; pylance's ``details``
            (the decoded index parameters) are not provided.
        """
        from lancelot.dataset.indices import describe_indices

        return describe_indices(self)

    def list_indices(self: LanceDataset) -> list[dict[str, Any]]:
        """Deprecated in pylance for ``describe_indices``: one dict per index segment."""
        from lancelot.dataset.indices import list_indices

        return list_indices(self)

    @property
    def has_index(self: LanceDataset) -> bool:
        """Whether this version has any user index."""
        return len(self.describe_indices()) > 0

    @property
    def has_stable_row_ids(self: LanceDataset) -> bool:
        """Whether the dataset keeps stable row ids (the manifest's stable-row-id feature flag)."""
        return bool(self.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS)

    @property
    def max_field_id(self: LanceDataset) -> int:
        """The largest field id of this version's schema (-1 for none)."""
        return max((int(f.id) for f in self.manifest.fields), default=-1)


for _fn in (MetadataMixin.update_metadata, MetadataMixin.update_schema_metadata):
    inherit_arguments(_fn, MetadataMixin.update_config)
