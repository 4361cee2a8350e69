"""``LanceDataset.stats``: pylance's dataset statistics.

``dataset_stats`` counts deleted rows, fragments and "small" fragments (fewer physical rows than
``max_rows_per_group``); ``data_stats`` gives each field's bytes on disk: the sum of the page buffer sizes of the
columns the field owns in every data file (a column that starts no field continues the previous one, as nested fields
span several columns)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset


class DatasetStats(TypedDict):
    num_deleted_rows: int
    num_fragments: int
    num_small_files: int


@dataclass
class FieldStatistics:
    """Statistics about a field in the dataset."""

    id: int  #: the field id
    bytes_on_disk: int  #: (possibly compressed) bytes on disk used to store the field


@dataclass
class DataStatistics:
    """Statistics about the data in the dataset."""

    fields: list[FieldStatistics]


class LanceStats:
    """Statistics of one dataset version."""

    def __init__(self, ds: LanceDataset) -> None:
        """The statistics of ``ds`` (use ``LanceDataset.stats``).

        Args:
            ds: The dataset version.
        """
        self._ds = ds

    def dataset_stats(self, max_rows_per_group: int = 1024) -> DatasetStats:
        """Fragment-level statistics of the version, as pylance's ``stats.dataset_stats()``.

        Args:
            max_rows_per_group: A fragment with fewer rows counts as a small file.

        Returns:
            ``{"num_deleted_rows", "num_fragments", "num_small_files"}``.

        Examples:
            >>> _ = ds.delete("id < 3")
            >>> ds.stats.dataset_stats()
            {'num_deleted_rows': 3, 'num_fragments': 1, 'num_small_files': 1}
        """
        frags = self._ds.get_fragments()
        return {
            "num_deleted_rows": sum(f.physical_rows - f.count_rows() for f in frags),
            "num_fragments": len(frags),
            "num_small_files": sum(1 for f in frags if f.physical_rows < max_rows_per_group),
        }

    def data_stats(self) -> DataStatistics:
        """Per-field storage, as pylance's ``stats.data_stats()``: the bytes of every page of each field's columns, in
        every data file of the version.

        Returns:
            A ``DataStatistics``: one ``FieldStatistics(id, bytes_on_disk)`` per field, in schema order.
        """
        ds = self._ds
        ids = [int(f.id) for f in ds.manifest.fields]
        sizes = dict.fromkeys(ids, 0)
        for frag in ds.get_fragments():
            for df in frag.data_fragment.files:
                lf = ds.data_file(df, frag.where)
                col_to_field = {int(c): int(f) for f, c in zip(df.fields, df.column_indices) if c >= 0}
                current = -1
                metas = sorted(((ci.index, ci.meta) for cols in lf.columns.values() for ci in cols), key=lambda x: x[0])
                for index, meta in metas:
                    current = col_to_field.get(index, current)
                    if current in sizes:
                        sizes[current] += sum(sum(p.buffer_sizes) for p in meta.pages)
        return DataStatistics([FieldStatistics(i, sizes[i]) for i in ids])

    def index_stats(self, index_name: str) -> dict[str, Any]:
        """Statistics of the index named ``index_name`` (all its segments), as pylance's ``stats.index_stats``: for a
        BTREE or BITMAP index, each segment's value range and pages (BTREE) or bitmap count (BITMAP), and the
        fragments and live rows it covers or misses.

        Args:
            index_name: The index's name.

        Returns:
            pylance's dict: ``index_type``, ``name``, ``num_indices``, ``num_segments``, ``indices``, ``segments``,
            ``num_indexed_fragments``, ``num_indexed_rows``, ``num_unindexed_fragments``, ``num_unindexed_rows``,
            ``num_indexed_rows_per_delta``, ``updated_at_timestamp_ms``.

        Raises:
            KeyError: No index of that name.
            ValueError: An index of another type (vector, full-text...).
        """
        from lancelot.dataset.index_stats import index_stats

        return index_stats(self._ds, index_name)
