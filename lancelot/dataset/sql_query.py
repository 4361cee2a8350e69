"""``LanceDataset.sql``: pylance's SQL query builder and query over one dataset.

``ds.sql("SELECT ... FROM dataset ...").table_name(...).build()`` gives a ``SqlQuery``; running it
(``to_batch_records``, ``to_stream_reader``) parses and runs the query then, as pylance's does (its
errors come from the run, not the build).  lancelot runs a subset of SQL (lancelot/dataset/sql_plan.py)
and refuses the rest with ``UnsupportedQueryError``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pyarrow as pa

from lancelot.errors import LanceError, LanceValueError

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset

_BLOB_HANDLING = ("all_binary", "blobs_descriptions", "all_descriptions")


@dataclass(frozen=True)
class _Options:
    table_name: str = "dataset"
    with_row_id: bool = False
    with_row_addr: bool = False
    batch_size: int | None = None


class SqlQuery:
    """An executable SQL query (made by ``SqlQueryBuilder.build``)."""

    def __init__(self, ds: LanceDataset, sql: str, options: _Options) -> None:
        self._ds, self._sql, self._options = ds, sql, options

    def _table(self) -> pa.Table:
        from lancelot.dataset.sql_plan import SqlQueryError
        from lancelot.dataset.sql_run import run_select

        o = self._options
        try:
            return run_select(
                self._ds, self._sql, o.table_name, with_row_id=o.with_row_id, with_row_addr=o.with_row_addr
            )
        except LanceError as e:
            if isinstance(e, SqlQueryError) or not isinstance(e, ValueError):
                raise
            raise SqlQueryError(e.message) from None

    def to_batch_records(self) -> list[pa.RecordBatch]:
        """Run the query and return its result.

        Returns:
            The result's batches (none when it has no rows), of at most ``batch_size`` rows when the builder set it.
        """
        return self._batches(self._table())

    def to_stream_reader(self) -> pa.RecordBatchReader:
        """Run the query and return its result as a reader.

        Returns:
            A ``RecordBatchReader`` of the result's schema and batches.
        """
        table = self._table()
        return pa.RecordBatchReader.from_batches(table.schema, self._batches(table))

    def _batches(self, table: pa.Table) -> list[pa.RecordBatch]:
        if table.num_rows == 0:
            return []
        batches: list[pa.RecordBatch] = table.combine_chunks().to_batches(max_chunksize=self._options.batch_size)
        return batches


class SqlQueryBuilder:
    """A SQL query on a dataset being configured (returned by ``LanceDataset.sql``); each setter returns the builder."""

    def __init__(self, ds: LanceDataset, sql: str) -> None:
        self._ds, self._sql, self._options = ds, sql, _Options()

    def table_name(self, table_name: str) -> SqlQueryBuilder:
        """Set the name the query's FROM gives the dataset (default ``"dataset"``).

        Args:
            table_name: The name.

        Returns:
            This builder.
        """
        self._options = replace(self._options, table_name=str(table_name))
        return self

    def with_row_id(self, with_row_id: bool = True) -> SqlQueryBuilder:
        """Make ``_rowid`` a column of the table (``*`` includes it).

        Args:
            with_row_id: Whether to.

        Returns:
            This builder.
        """
        self._options = replace(self._options, with_row_id=bool(with_row_id))
        return self

    def with_row_addr(self, with_row_addr: bool = True) -> SqlQueryBuilder:
        """Make ``_rowaddr`` a column of the table (``*`` includes it).

        Args:
            with_row_addr: Whether to.

        Returns:
            This builder.
        """
        self._options = replace(self._options, with_row_addr=bool(with_row_addr))
        return self

    def blob_handling(self, blob_handling: str) -> SqlQueryBuilder:
        """Accepted for pylance's API: how blob columns are returned (lancelot's SQL reads none differently).

        Args:
            blob_handling: ``"all_binary"``, ``"blobs_descriptions"`` or ``"all_descriptions"``.

        Returns:
            This builder.

        Raises:
            ValueError: Another value.
        """
        if blob_handling not in _BLOB_HANDLING:
            raise LanceValueError(f"blob_handling must be one of {', '.join(_BLOB_HANDLING)}, not {blob_handling!r}")
        return self

    def batch_size(self, batch_size: int) -> SqlQueryBuilder:
        """Set the most rows a result batch holds.

        Args:
            batch_size: The number of rows (positive).

        Returns:
            This builder.
        """
        if int(batch_size) <= 0:
            raise LanceValueError(f"batch_size must be positive, not {batch_size}")
        self._options = replace(self._options, batch_size=int(batch_size))
        return self

    def batch_size_bytes(self, batch_size_bytes: int) -> SqlQueryBuilder:
        """Accepted for pylance's API (a limit on the scan's batches in bytes; lancelot's results are not split so).

        Args:
            batch_size_bytes: The approximate bytes.

        Returns:
            This builder.
        """
        return self

    def build(self) -> SqlQuery:
        """The query, to run.

        Returns:
            A ``SqlQuery``.
        """
        return SqlQuery(self._ds, self._sql, self._options)
