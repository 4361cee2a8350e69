"""``LanceDataset``'s operations that change rows or columns, each committing one new version that the object then shows
(dataset/changes.py, merge_insert.py, schema_evolution.py, schema_alter.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.changes import DEFAULT_RETRY_TIMEOUT

if TYPE_CHECKING:
    from lancelot.dataset.changes import DeleteResult
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.merge_insert import MergeInsertBuilder


class ChangesMixin:
    """LanceDataset's row and column changes (mixed into ``LanceDataset``; see dataset/dataset.py)."""

    def truncate_table(self: LanceDataset) -> None:
        """Delete every row (one new version with a Delete transaction, as pylance)."""
        self.delete("true")

    def delete(
        self: LanceDataset,
        predicate: str | pc.Expression,
        *,
        conflict_retries: int = 10,
        retry_timeout: timedelta = DEFAULT_RETRY_TIMEOUT,
    ) -> DeleteResult:
        """Delete the rows matching ``predicate``, as one new version (also when none match, as pylance); this object
        then shows the new version.

        Deletions are recorded in deletion files; data files are rewritten only by ``compact_files``.

        Args:
            predicate: SQL text or a ``pyarrow.compute`` Expression.
            conflict_retries: How often to retry on a concurrent commit that conflicts.
            retry_timeout: No retry starts once this much time has passed (30 s, as pylance).

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

    def update(
        self: LanceDataset,
        updates: dict[str, str],
        where: str | pc.Expression | None = None,
        conflict_retries: int = 10,
        retry_timeout: timedelta = DEFAULT_RETRY_TIMEOUT,
        data_storage_version: str | None = None,
    ) -> dict[str, int]:
        """Set columns to SQL expressions on the rows where ``where`` holds, as one new version; this object then shows
        it.

        Updated rows are deleted from their fragments and rewritten into new ones (as pylance does).

        Args:
            updates: Column name to SQL expression over the row (``{"name": "upper(name)"}``).
            where: SQL text or an Expression; None updates every row.
            conflict_retries: How often to retry on a concurrent commit that conflicts.
            retry_timeout: No retry starts once this much time has passed (30 s, as pylance).
            data_storage_version: The file version of the rewritten rows' data files (``"2.1"``, ``"stable"``...;
                default the dataset's), written beside the dataset's other files as pylance does.

        Returns:
            ``{"num_rows_updated": n}``, as pylance.

        Examples:
            >>> ds.update({"name": "upper(name)"}, where="id < 2")
            {'num_rows_updated': 2}
            >>> ds.to_table(columns=["name"], filter="id < 3").to_pydict()  # updated rows move to a new fragment
            {'name': ['n2', 'N0', 'N1']}
        """
        from lancelot.dataset.changes import update

        return update(self, updates, where, conflict_retries, retry_timeout, data_storage_version)

    def merge_insert(self: LanceDataset, on: str | Sequence[str] | None = None) -> MergeInsertBuilder:
        """Start a merge-insert (an upsert, an insert-if-not-exists, a replace of a range), as pylance's.

        Args:
            on: The key column(s) rows are matched on; None for the schema's unenforced primary key (fields with the
                metadata ``lance-schema:unenforced-primary-key: true`` when written); ValueError when it has none.

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

    def insert(self: LanceDataset, data: Any, *, mode: str = "append", **kwargs: Any) -> None:
        """Write ``data`` into this dataset (``write_dataset(data, self, mode=mode)``); this object then shows the new
        version.

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
        self: LanceDataset,
        transforms: Any,
        read_columns: list[str] | None = None,
        reader_schema: pa.Schema | None = None,
        batch_size: int | None = None,
    ) -> None:
        """Add columns, as one new version; existing data files are not rewritten (new columns go to new files of the
        same fragments, as pylance writes them).

        Args:
            transforms: One of: a dict of new column name to SQL expression over the row; a function from a
                ``RecordBatch`` to a batch (or DataFrame) of the new columns; a ``RecordBatchReader`` of the new
                columns, row-aligned with the dataset; or a ``pyarrow.Field`` / list / schema of all-null columns.
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

    def alter_columns(self: LanceDataset, *alterations: dict[str, Any]) -> None:
        """Rename columns, change their nullability or cast them, as one new version.

        Args:
            *alterations: One dict per column: ``path`` (the column, ``"s.x"`` for a nested one) and any of ``name``
                (rename), ``nullable`` (True to allow nulls), ``data_type`` (a cast: the column's files are rewritten).

        Examples:
            >>> ds.alter_columns({"path": "name", "name": "label"})
            >>> ds.schema.names
            ['id', 'label']
        """
        from lancelot.dataset.schema_alter import alter_columns

        alter_columns(self, *alterations)

    def drop_columns(self: LanceDataset, columns: list[str]) -> None:
        """Remove columns from the schema, as one new version (metadata only: the files keep the data until
        ``compact_files`` rewrites them, as pylance).

        Args:
            columns: Column names (``"s.x"`` for a struct's child).

        Raises:
            ValueError: A column that is not in the schema, or dropping every column.
        """
        from lancelot.dataset.schema_alter import drop_columns

        drop_columns(self, columns)

    def merge(
        self: LanceDataset, data_obj: Any, left_on: str, right_on: str | None = None, schema: pa.Schema | None = None
    ) -> None:
        """Add the other columns of ``data_obj`` to the dataset, joined on a key (a left join: rows without a match get
        nulls), as one new version.

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
