"""``LanceDataset.sql``: pylance's SQL query builder and query over one dataset.

``ds.sql("SELECT ... FROM dataset ...").table_name(...).build()`` gives a ``SqlQuery``; running it
(``to_batch_records``, ``to_stream_reader``) parses and runs the query then, as pylance's does (its
errors come from the run, not the build; those of evaluating rows from reading the reader).
lancelot runs a subset of SQL (lancelot/dataset/sql_plan.py) and refuses the rest with
``UnsupportedQueryError``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pyarrow as pa

from lancelot.dataset.sql_plan import SqlQueryError
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

    def _run(self) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
        """The result's schema and batches (non-empty, of at most ``batch_size`` rows): planned now, read as they are
        asked for."""
        from lancelot.dataset.sql_run import run_select

        o = self._options
        with _query_errors():
            schema, batches = run_select(
                self._ds,
                self._sql,
                o.table_name,
                with_row_id=o.with_row_id,
                with_row_addr=o.with_row_addr,
                batch_size=o.batch_size,
            )
        return schema, self._cut(batches)

    def _cut(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        size = self._options.batch_size
        with _query_errors(SqlRunError):
            for b in batches:
                for start in range(0, b.num_rows, size or b.num_rows or 1):
                    yield b.slice(start, size) if size else b

    def to_batch_records(self) -> list[pa.RecordBatch]:
        """Run the query and return its result.

        Returns:
            The result's batches (none when it has no rows), of at most ``batch_size`` rows when the builder set it.
        """
        return list(self._run()[1])

    def to_stream_reader(self) -> pa.RecordBatchReader:
        """Run the query and return its result as a reader (a query without grouping, DISTINCT or ORDER BY reads the
        dataset as the reader is read, and a LIMIT stops the reads).

        Returns:
            A ``RecordBatchReader`` of the result's schema and batches.
        """
        return pa.RecordBatchReader.from_batches(*self._run())


class SqlRunError(SqlQueryError, pa.ArrowInvalid):  # type: ignore[misc]  # (pyarrow has no type hints)
    """A query that fails as its rows are read (``1 / 0``, a text that is no number cast to one): pylance raises
    ValueError from ``to_batch_records`` and ``pyarrow.ArrowInvalid`` from reading ``to_stream_reader``'s reader."""


@contextmanager
def _query_errors(kind: type[SqlQueryError] = SqlQueryError) -> Iterator[None]:
    """A ValueError of lancelot's as pylance raises it from a query: a ``kind`` (a ValueError and an OSError)."""
    try:
        yield
    except LanceError as e:
        if isinstance(e, SqlQueryError) or not isinstance(e, ValueError):
            raise
        raise kind(e.message) from None


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
