"""The changes between two versions of a dataset (pylance's ``LanceDataset.delta`` and ``DatasetDelta``): the rows
inserted and updated in between, found by the row-version columns (``_row_created_at_version``,
``_row_last_updated_at_version``) of the dataset's own version; the stable row ids deleted in between (live at the
first version, not at the last); the transactions of the versions in between."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lancelot.dataset.row_id_columns import ROW_CREATED_AT, ROW_ID, ROW_UPDATED_AT
from lancelot.errors import LanceValueError

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.transaction_api import Transaction


class DatasetDelta:
    """What changed after ``begin_version`` up to ``end_version`` (inclusive), as seen from ``dataset``; made by
    ``LanceDataset.delta``.

    Args:
        dataset: The dataset whose rows are read for inserted and updated rows.
        begin_version: The version the changes are counted from (excluded).
        end_version: The last version they are counted to.
    """

    def __init__(self, dataset: LanceDataset, begin_version: int, end_version: int) -> None:
        self._ds, self.begin_version, self.end_version = dataset, int(begin_version), int(end_version)

    def list_transactions(self) -> list[Transaction]:
        """The transactions of the versions after ``begin_version`` up to ``end_version``, oldest first.

        Returns:
            One ``Transaction`` per version that stores one.
        """
        found = (self._ds.read_transaction(v) for v in range(self.begin_version + 1, self.end_version + 1))
        return [t for t in found if t is not None]

    def get_inserted_rows(self) -> pa.RecordBatchReader:
        """The rows created in the range, with their ``_rowid`` and row versions.

        Returns:
            A ``pyarrow.RecordBatchReader``.
        """
        b, e = self.begin_version, self.end_version
        return self._rows(f"{ROW_CREATED_AT} > {b} AND {ROW_CREATED_AT} <= {e}")

    def get_updated_rows(self) -> pa.RecordBatchReader:
        """The rows created before the range and updated in it, with their ``_rowid`` and row versions.

        Returns:
            A ``pyarrow.RecordBatchReader``.
        """
        b, e = self.begin_version, self.end_version
        return self._rows(f"{ROW_CREATED_AT} <= {b} AND {ROW_UPDATED_AT} > {b} AND {ROW_UPDATED_AT} <= {e}")

    def get_deleted_row_ids(self) -> pa.RecordBatchReader:
        """The stable row ids live at ``begin_version`` and not at ``end_version``, ascending, in one ``_rowid`` column.

        Returns:
            A ``pyarrow.RecordBatchReader``.

        Raises:
            LanceValueError: The range runs backwards, or ``begin_version`` has no stable row ids (ValueErrors, as
                pylance's).
        """
        b, e = self.begin_version, self.end_version
        if b > e:
            raise LanceValueError(f"Invalid user input: begin version {b} is newer than end version {e}")
        first, last = self._ds.checkout_version(b), self._ds.checkout_version(e)
        if not first.has_stable_row_ids:
            raise LanceValueError(
                f"Invalid user input: deleted row ids require stable row ids, version {b} does not use them"
            )
        before, after = self._ids(first), self._ids(last)
        gone = pa.table({ROW_ID: pa.array(np.setdiff1d(before, after), pa.uint64())})
        return pa.RecordBatchReader.from_batches(gone.schema, gone.to_batches())

    @staticmethod
    def _ids(ds: LanceDataset) -> np.ndarray:
        ids: np.ndarray = ds.to_table(columns=[ROW_ID]).column(0).to_numpy()
        return ids

    def _rows(self, where: str) -> pa.RecordBatchReader:
        columns = [*self._ds.schema.names, ROW_ID, ROW_CREATED_AT, ROW_UPDATED_AT]
        return self._ds.scanner(columns=columns, filter=where).to_reader()


def delta(
    ds: LanceDataset, compared_against: int | None, begin_version: int | None, end_version: int | None
) -> DatasetDelta:
    """``LanceDataset.delta``: ``compared_against`` (the range between it and ``ds``'s version, either way round; it
    wins over a range, as pylance's), or both ``begin_version`` and ``end_version``."""
    if compared_against is not None:
        a, b = sorted((int(compared_against), ds.version))
        return DatasetDelta(ds, a, b)
    if begin_version is None and end_version is None:
        raise LanceValueError(
            "Invalid user input: Must specify either compared_against_version or both with_begin_version and "
            "with_end_version"
        )
    if begin_version is None or end_version is None:
        raise LanceValueError("Invalid user input: Must specify both with_begin_version and with_end_version")
    return DatasetDelta(ds, begin_version, end_version)
