"""``DatasetDelta``: the changes between two versions of a dataset (pylance's ``LanceDataset.delta``).

Rows inserted or updated in the range ``(begin_version, end_version]`` are the rows of the dataset object's own version
whose ``_row_created_at_version`` / ``_row_last_updated_at_version`` fall in it: both are per-row sequences kept in the
fragment metadata (rowids.py), version 1 where a fragment has none (no stable row ids), as pylance reads them.  Deleted
row ids are the stable row ids live at ``begin_version`` and gone at ``end_version``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lancelot.dataset.rowids import row_versions
from lancelot.errors import LanceValueError, VersionNotFoundError

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.transaction_api import Transaction

_VERSION_COLUMNS = ("_row_created_at_version", "_row_last_updated_at_version")


def version_range(
    ds: LanceDataset, compared_against: int | None, begin_version: int | None, end_version: int | None
) -> tuple[int, int]:
    """``(begin, end)`` of ``ds.delta(...)``'s arguments, as pylance's builder orders them.

    Raises:
        ValueError: Neither ``compared_against`` nor a range is given, or half a range.
    """
    if compared_against is not None:  # (begin and end then ignored, as pylance's)
        cur = ds.version
        return (compared_against, cur) if cur > compared_against else (cur, compared_against)
    if begin_version is None and end_version is None:
        raise LanceValueError(
            "Must specify either compared_against_version or both with_begin_version and with_end_version"
        )
    if begin_version is None or end_version is None:
        raise LanceValueError("Must specify both with_begin_version and with_end_version")
    return int(begin_version), int(end_version)


class DatasetDelta:
    """The differences between two versions of a dataset (pylance's ``lance.dataset.DatasetDelta``), made by
    [`LanceDataset.delta`][lancelot.dataset.dataset.LanceDataset.delta]."""

    def __init__(self, ds: LanceDataset, begin_version: int, end_version: int) -> None:
        """A delta over ``(begin_version, end_version]``, its rows read from ``ds``'s version.

        Args:
            ds: The dataset object the delta was asked of.
            begin_version: The start of the range (exclusive).
            end_version: The end of the range (inclusive).
        """
        self._ds, self.begin_version, self.end_version = ds, begin_version, end_version

    def list_transactions(self) -> list[Transaction]:
        """The transactions of versions ``begin_version + 1`` to ``end_version``, oldest first.

        Returns:
            A list of ``Transaction`` (versions storing none are left out, as pylance does).

        Raises:
            ValueError: A version of the range is gone (cleaned up) or was never made.
        """
        out = []
        for v in range(self.begin_version + 1, self.end_version + 1):
            try:
                t = self._ds.read_transaction(v)
            except (ValueError, FileNotFoundError):
                raise VersionNotFoundError(f"Can not find version {v}, please check if it has been cleanup.") from None
            if t is not None:
                out.append(t)
        return out

    def get_inserted_rows(self) -> pa.RecordBatchReader:
        """The rows created in the range (``begin < _row_created_at_version <= end``).

        Returns:
            A ``pyarrow.RecordBatchReader`` of every column, ``_rowid``, ``_row_created_at_version`` and
            ``_row_last_updated_at_version``.
        """
        b, e = self.begin_version, self.end_version
        return self._rows(lambda c, u: (c > b) & (c <= e))

    def get_updated_rows(self) -> pa.RecordBatchReader:
        """The rows created up to ``begin_version`` and updated in the range.

        Returns:
            A ``pyarrow.RecordBatchReader`` with the columns of ``get_inserted_rows``.
        """
        b, e = self.begin_version, self.end_version
        return self._rows(lambda c, u: (c <= b) & (u > b) & (u <= e))

    def get_deleted_row_ids(self) -> pa.RecordBatchReader:
        """The stable row ids live at ``begin_version`` and no longer at ``end_version``.

        Returns:
            A ``pyarrow.RecordBatchReader`` of one ``_rowid`` column, ascending.

        Raises:
            ValueError: ``begin_version`` is newer than ``end_version``, or either version has no stable row ids.
        """
        b, e = self.begin_version, self.end_version
        if b > e:
            raise LanceValueError(f"begin version {b} is newer than end version {e}")
        before = self._live_ids(b) if b > 0 else np.empty(0, np.uint64)
        after = self._live_ids(e) if len(before) else before
        gone = np.setdiff1d(before, after)
        schema = pa.schema([pa.field("_rowid", pa.uint64())])
        batch = pa.record_batch([pa.array(gone, pa.uint64())], schema=schema)
        return pa.RecordBatchReader.from_batches(schema, [batch])

    def _live_ids(self, version: int) -> np.ndarray:
        ds = self._ds if version == self._ds.version else self._ds.checkout_version(version)
        if not ds.has_stable_row_ids:
            raise LanceValueError(f"deleted row ids require stable row ids, version {version} does not use them")
        t = ds.to_table(columns=[], with_row_id=True)
        return np.asarray(t.column("_rowid").to_numpy(zero_copy_only=False), np.uint64)

    def _rows(self, keep: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> pa.RecordBatchReader:
        ds = self._ds
        versions = {}
        for f in ds.manifest.fragments:
            where = f"dataset {ds.uri!r} fragment {f.id}"
            created = row_versions(f, "created_at", None, where)
            versions[int(f.id)] = (created, row_versions(f, "last_updated_at", created, where))
        scan = ds.scanner(with_row_id=True, with_row_address=True)
        base = scan.projected_schema
        names = [n for n in base.names if n != "_rowaddr"]
        fields = [base.field(n) for n in names] + [pa.field(n, pa.uint64()) for n in _VERSION_COLUMNS]
        schema = pa.schema(fields, metadata=base.metadata)

        def batches() -> Iterator[pa.RecordBatch]:
            for batch in scan.to_batches():
                addr = batch.column("_rowaddr").to_numpy(zero_copy_only=False).astype(np.uint64)
                created = np.empty(len(addr), np.uint64)
                updated = np.empty(len(addr), np.uint64)
                frag, pos = (addr >> np.uint64(32)).astype(np.int64), (addr & np.uint64(0xFFFFFFFF)).astype(np.int64)
                for fid in np.unique(frag):
                    at = frag == fid
                    c, u = versions[int(fid)]
                    created[at], updated[at] = c[pos[at]], u[pos[at]]
                mask = keep(created, updated)
                cols = [batch.column(n) for n in names] + [pa.array(created), pa.array(updated)]
                yield pa.record_batch(cols, schema=schema).filter(pa.array(mask))

        return pa.RecordBatchReader.from_batches(schema, batches())
