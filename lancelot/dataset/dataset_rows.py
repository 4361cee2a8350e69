"""``LanceDataset``'s row reads by position (``take``, ``slice``, ``head``, ``sample``, dataset/take.py) and its blob
reads (``take_blobs``, ``read_blobs``, dataset/blob.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from numpy.typing import ArrayLike

from lancelot.dataset import take as _take
from lancelot.errors import LanceValueError

if TYPE_CHECKING:
    from lancelot.dataset.blob_file import BlobFile
    from lancelot.dataset.dataset import LanceDataset


class RowsMixin:
    """LanceDataset's row and blob reads (mixed into ``LanceDataset``; see dataset/dataset.py)."""

    def slice(
        self: LanceDataset, start: int, end: int, columns: Sequence[str] | dict[str, str] | None = None
    ) -> pa.Table:
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

    def take(
        self: LanceDataset,
        indices: ArrayLike | pa.Array | pa.ChunkedArray,
        columns: Sequence[str] | dict[str, str] | None = None,
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
        return _take.take(self, indices, columns)

    _take_rows = _take.take_rows

    def sample(
        self: LanceDataset,
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
        return _take.sample(self, num_rows, columns, randomize_order)

    def head(self: LanceDataset, num_rows: int, **kwargs: Any) -> pa.Table:
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

    def take_blobs(
        self: LanceDataset,
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

        return blob.take_blobs(self, blob_column, blob.choose(self, blob_column, ids, addresses, indices), buffer_size)

    def read_blobs(
        self: LanceDataset,
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

        rows = blob.choose(self, blob_column, ids, addresses, indices)
        return blob.read_blobs(self, blob_column, rows, preserve_order)  # (io_buffer_size: no buffer to size)

    def read_blob_ranges(
        self: LanceDataset,
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

        return blob.read_blob_ranges(self, blob_column, requests, selector, preserve_order)
