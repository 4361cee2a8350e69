"""Fragments: a set of rows stored as one or more data files plus an optional deletion file (table format, "Fragments"
and "Data files").

``FragmentMetadata`` is the picklable description that travels between processes (Spark executors to the driver);
``Fragment`` reads one fragment of one dataset version: the columns of each data file are matched to dataset fields by
the field ids in the file's schema, fields in no data file read as nulls, deleted rows are never returned."""

from __future__ import annotations

import os
from collections.abc import Iterable
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.deletion import deletion_path, read_deletions
from lancelot.dataset.fragment_columns import ColumnsMixin
from lancelot.dataset.fragment_metadata import DATA_DIR as DATA_DIR  # (re-exported: its home before)
from lancelot.dataset.fragment_metadata import DataFile
from lancelot.dataset.fragment_metadata import FragmentMetadata as FragmentMetadata
from lancelot.dataset.fragment_metadata import manifest_live_rows as manifest_live_rows
from lancelot.dataset.fragment_reads import CLEAN_RUN_ROWS, ReadsMixin, deletion_segments
from lancelot.dataset.manifest import rows_trusted
from lancelot.errors import CorruptFileError, LanceError, LanceValueError, OSErrorMessage
from lancelot.format.pb import table_pb2

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.reader import LanceFile


class Fragment(ColumnsMixin, ReadsMixin):
    """One fragment of a dataset version: a set of rows stored as one or more data files (one per group of columns) and
    an optional deletion file (pylance's ``LanceFragment``, also ``lancelot.LanceFragment``), from
    ``LanceDataset.get_fragments()``.

    A fragment pickles as (dataset, fragment id), so Spark or multiprocessing workers can each read their own.

    Examples:
        >>> _ = lancelot.write_dataset(table, uri, mode="append")
        >>> frags = lancelot.dataset(uri).get_fragments()
        >>> [(f.fragment_id, f.count_rows()) for f in frags]
        [(0, 10), (1, 10)]
        >>> frags[1].to_table(columns=["id"], filter="id < 2").to_pydict()
        {'id': [0, 1]}
    """

    def __init__(self, ds: LanceDataset, frag: table_pb2.DataFragment) -> None:
        """Wrap one fragment of a manifest (use ``LanceDataset.get_fragments``).

        Args:
            ds: The dataset version it belongs to.
            frag: Its ``DataFragment`` message from the manifest.
        """
        self._ds = ds
        self._pb = frag
        self.fragment_id: int = int(frag.id)
        self._deleted: np.ndarray | None = None
        self._row_ids: np.ndarray | None = None
        self._fc: list[tuple[LanceFile, dict[str, str]]] | None = None
        #: the manifest's row count, unless it cannot be trusted (then counted from a data file)
        self._physical: int | None = int(frag.physical_rows) if rows_trusted(ds.manifest, frag) else None
        #: live rows when the manifest says (a deletion file without a count is read on demand)
        d = frag.deletion_file if frag.HasField("deletion_file") else None
        self._live: int | None = (
            None
            if self._physical is None
            else self._physical
            if d is None
            else self._physical - int(d.num_deleted_rows)
            if d.num_deleted_rows
            else None
        )

    @property
    def data_fragment(self) -> table_pb2.DataFragment:
        """The fragment's ``DataFragment`` message in the manifest (shared with the dataset: read it, copy it to change
        it)."""
        return self._pb

    @property
    def dataset(self) -> LanceDataset:
        """The dataset (version) the fragment belongs to."""
        return self._ds

    @property
    def partition_expression(self) -> Any:
        """Not implemented, as in pylance 14 (fragments have no partition expression).

        Raises:
            NotImplementedError: Always.
        """
        raise NotImplementedError("Not implemented yet for LanceFragment")

    @property
    def physical_rows(self) -> int:
        """Rows in the fragment's data files, deleted ones included."""
        if self._physical is None:
            self._physical = self._count_physical()
        return self._physical

    def _count_physical(self) -> int:
        """The row count of the fragment's first data file (manifests that lack or mistrust it)."""
        if not len(self._pb.files):
            raise CorruptFileError(f"{self.where}: the fragment has no data files and no row count")
        return int(self._ds.data_file(self._pb.files[0], self.where).num_rows)

    @property
    def metadata(self) -> FragmentMetadata:
        """The fragment's manifest entry (id, data files, deletion file, row counts), as pylance's
        ``LanceFragment.metadata``."""
        return FragmentMetadata.from_pb(self._pb)

    @cached_property
    def where(self) -> str:
        """Dataset, version and fragment id, as error messages name them."""
        return f"dataset {self._ds.uri!r} version {self._ds.version} fragment {self.fragment_id}"

    def __repr__(self) -> str:
        return f"Fragment(id={self.fragment_id}, physical_rows={self.physical_rows}, files={len(self._pb.files)})"

    def delete(self, predicate: str | pc.Expression) -> FragmentMetadata | None:
        """Delete the rows matching ``predicate`` from this fragment, uncommitted (pylance's ``LanceFragment.delete``):
        a new deletion file is written, the data files are untouched.

        Args:
            predicate: SQL text or a ``pyarrow.compute`` Expression.

        Returns:
            The fragment's new metadata, to commit with ``LanceOperation.Delete``; None when no
            row is left.
        """
        from lancelot.dataset.fragment_delete import delete

        return delete(self, predicate)

    def delete_rows(self, offsets: Iterable[int]) -> FragmentMetadata | None:
        """Delete rows by their physical positions in this fragment, uncommitted (pylance's
        ``LanceFragment.delete_rows``): as ``delete``, for rows already known (rows deleted before stay deleted).

        Args:
            offsets: 0-based physical positions (deleted rows count too), in any order, repeats allowed.

        Returns:
            The fragment's new metadata, to commit with ``LanceOperation.Delete``; None when no row is left.

        Raises:
            ValueError: A position past the fragment's physical rows.
            OverflowError: A negative position (as pylance).
        """
        from lancelot.dataset.deletion import new_deletion_file, serialize_deletions

        positions = np.unique(np.array([int(o) for o in offsets], dtype=np.int64))
        if len(positions) and positions[0] < 0:
            raise OverflowError(f"{self.where}: delete_rows offset {int(positions[0])} is negative")
        if len(positions) and positions[-1] >= self.physical_rows:
            raise LanceValueError(
                f"{self.where}: delete_rows offset {int(positions[-1])} is out of range ({self.physical_rows} rows)"
            )
        deleted = np.union1d(self.deleted_positions().astype(np.int64), positions)
        if len(deleted) >= self.physical_rows:
            return None
        kind, data = serialize_deletions(deleted)  # a new deletion file even when nothing changed, as pylance's
        d = new_deletion_file(kind, self._ds.version, len(deleted))
        self._ds.store.put(deletion_path(self.fragment_id, d), data)
        pb = table_pb2.DataFragment()
        pb.CopyFrom(self._pb)
        pb.deletion_file.CopyFrom(d)
        return FragmentMetadata.from_pb(pb)

    def validate(self) -> None:
        """Check this fragment's data and deletion files against its manifest entry (pylance's
        ``LanceFragment.validate``; ``LanceDataset.validate`` checks every fragment).

        Raises:
            CorruptFileError: An inconsistency (a missing file: FileNotFoundError, an OSError as pylance's).
        """
        from lancelot.dataset.validate import validate_fragment

        validate_fragment(self._ds, self._pb)

    def merge_columns(
        self,
        value_func: Any,
        columns: list[str] | None = None,
        batch_size: int | None = None,
        reader_schema: pa.Schema | None = None,
    ) -> tuple[FragmentMetadata, Any]:
        """New columns in a new data file of this fragment, uncommitted (pylance's ``LanceFragment.merge_columns``):
        commit with ``LanceOperation.Merge(fragments, schema)``.

        Args:
            value_func: A function from a batch of the fragment's rows to a batch of new columns, or a
                ``RecordBatchReader`` of the new columns (pylance's forms).
            columns: The columns the function reads (default all).
            batch_size: Rows per batch given to the function.
            reader_schema: The schema of the new columns, for a reader.

        Returns:
            ``(FragmentMetadata, LanceSchema)``.
        """
        from lancelot.dataset.schema_evolution import merge_columns

        return merge_columns(self, value_func, columns, batch_size, reader_schema)

    @property
    def loaded_deletions(self) -> np.ndarray | None:
        """The deleted positions if ``deleted_positions`` has read them already, else None (no I/O: what a session
        counts as held).

        Returns:
            The uint32 numpy array, or None.
        """
        return self._deleted

    def deleted_positions(self) -> np.ndarray:
        """The deleted rows of the fragment, from its deletion file (read once per process: ``read_deletions``).

        Returns:
            Their physical positions, ascending (a uint32 numpy array; empty without deletions).

        Raises:
            FileNotFoundError: The manifest names a deletion file that is missing.
        """
        if self._deleted is None:
            if not self._pb.HasField("deletion_file"):
                self._deleted = np.empty(0, np.uint32)
            else:
                d = self._pb.deletion_file
                store, prefix = self._ds.base_store(d, self.where)
                path = deletion_path(self.fragment_id, d)
                if prefix == "":
                    path = path.split("/", 1)[1]  # a base that is a plain directory holds the file itself
                # a missing deletion file is a LanceFileNotFoundError, as a missing data file is
                self._deleted = read_deletions(
                    store, self.fragment_id, d, self.physical_rows, self.where, path, cached=True
                )
                if d.num_deleted_rows and d.num_deleted_rows != len(self._deleted):
                    raise CorruptFileError(
                        f"{self.where}: deletion file {path} holds {len(self._deleted)} rows, "
                        f"the manifest says {d.num_deleted_rows}"
                    )
        return self._deleted

    @property
    def deletions_read(self) -> bool:
        """Whether the deleted positions are known (``deleted_positions`` answers without reading a file)."""
        return self._deleted is not None

    def set_deleted_positions(self, positions: np.ndarray) -> None:
        """Install the fragment's deleted positions, read from its deletion file by the caller (many at once).

        Args:
            positions: Their physical positions, ascending (uint32), checked against the manifest by the caller.
        """
        self._deleted = positions

    def row_ids(self) -> np.ndarray:
        """The row id of every physical row, decoded once per fragment object.

        Returns:
            A uint64 numpy array: the stable row ids where the dataset has them, else the row
            addresses (fragment id << 32 | position).
        """
        if self._row_ids is None:
            if self._pb.WhichOneof("row_id_sequence") is None:
                pos = np.arange(self.physical_rows, dtype=np.uint64)
                self._row_ids = (np.uint64(self.fragment_id) << np.uint64(32)) | pos
            else:
                from lancelot.dataset.rowids import row_ids

                self._row_ids = row_ids(self._pb, self.where)
        return self._row_ids

    def filter_cost(self) -> int:
        """How much work deletions add to a full read of the fragment.

        Returns:
            Rows a full read must filter for deletions (those outside long runs without deletions);
            0 when it has none.
        """
        if not self._pb.HasField("deletion_file"):
            return 0
        if self._physical is not None and self._physical < CLEAN_RUN_ROWS:
            # no clean run fits: every row is filtered (known without reading the deletion file,
            # so a scan of many small fragments does not read them all serially before it starts)
            return self._physical
        return sum(b - a for a, b, dirty in deletion_segments(self.deleted_positions(), self.physical_rows) if dirty)

    def count_rows(self, filter: str | pc.Expression | None = None) -> int:
        """The fragment's live rows, or those matching ``filter``.

        Args:
            filter: SQL text or a ``pyarrow.compute`` Expression; None counts from the manifest.

        Returns:
            The row count.

        Raises:
            OSError: A filter it cannot use (as pylance; also a ValueError).
        """
        if filter is not None:
            from lancelot.dataset.scanner import as_filter, row_columns_in
            from lancelot.sql.errors import CountFilterError, SqlError

            try:
                filter = as_filter(filter, self._ds.schema) if isinstance(filter, str) else filter
                if row_columns_in(filter, self._ds.schema):  # _rowid & co: computed by the scanner
                    return self._ds.scanner(columns=[], filter=filter, fragments=[self]).count_rows()
                return int(self.read(columns=[], filter=filter).num_rows)
            except SqlError as e:
                raise CountFilterError(str(e)) from None
        if self._live is None:
            self._live = self.physical_rows - len(self.deleted_positions())
        return self._live

    def physical_of_live(self, live: np.ndarray) -> np.ndarray:
        """Physical positions of live-row indices, without materialising all live rows (the k-th live row sits at k plus
        the number of deleted rows at or before it).

        Args:
            live: Indices among the fragment's live rows.

        Returns:
            Their physical positions (int64).
        """
        live = np.asarray(live, dtype=np.int64)
        deleted = self.deleted_positions()
        if not len(deleted):
            return live
        before = deleted.astype(np.int64) - np.arange(len(deleted), dtype=np.int64)  # live rows before each
        return live + np.searchsorted(before, live, side="right")

    def live_positions(self) -> np.ndarray:
        """The physical positions of the live rows.

        Returns:
            An ascending int64 numpy array.
        """
        return self.physical_of_live(np.arange(self.count_rows(), dtype=np.int64))

    @property
    def schema(self) -> pa.Schema:
        """The dataset's schema (every fragment of a version has all its columns)."""
        return self._ds.schema

    @property
    def num_deletions(self) -> int:
        """Deleted rows of the fragment."""
        return self.physical_rows - self.count_rows()

    def data_files(self) -> list[DataFile]:
        """The fragment's data files.

        Returns:
            Their ``DataFile``s (``path``, ``fields``, ``column_indices``, file version, size), as pylance's.
        """
        return [DataFile.from_pb(d) for d in self._pb.files]

    def deletion_file(self) -> str | None:
        """The fragment's deletion file.

        Returns:
            Its path relative to the dataset root, or None without deletions.
        """
        if not self._pb.HasField("deletion_file"):
            return None
        return deletion_path(self.fragment_id, self._pb.deletion_file)

    def open_session(
        self, columns: list[str] | dict[str, str] | None = None, with_row_address: bool | None = None
    ) -> FragmentSession:
        """A session of repeated ``take``s of the same columns from this fragment (pylance's ``FragmentSession``).

        Args:
            columns: The column names (None: all); a dict is refused, as pylance's.
            with_row_address: Also return each row's ``_rowaddr``.

        Returns:
            The ``FragmentSession``.

        Raises:
            TypeError: ``columns`` a dict.
        """
        if isinstance(columns, dict):
            raise TypeError("argument 'columns': 'dict' object is not an instance of 'Sequence'")
        names = list(self.schema.names if columns is None else columns)
        return FragmentSession(self, names + ["_rowaddr"] * bool(with_row_address))

    @staticmethod
    def create_from_file(filename: str, dataset: LanceDataset, fragment_id: int) -> FragmentMetadata:
        """The metadata of a fragment made of one data file already in the dataset's ``data/`` directory, uncommitted
        (pylance's ``LanceFragment.create_from_file``: e.g. to recover a file a manifest lost).

        Args:
            filename: The data file's name in ``data/`` (a plain name).
            dataset: The dataset it belongs to: the file holds its fields (all, or some), in its order.
            fragment_id: The id to record.

        Returns:
            The fragment's metadata (its data file's fields, version and rows), for ``LanceDataset.commit``.

        Raises:
            FileNotFoundError: No such file in ``data/`` (also an OSError, as pylance's).
            OSError: A file whose schema does not fit the dataset's (also a ValueError).
        """
        from lancelot.dataset.open_files import open_data_file
        from lancelot.dataset.write_schema import check_append_schema, dataset_fields, file_field_lists
        from lancelot.errors import LanceFileNotFoundError

        where = f"dataset {dataset.uri!r}: data file {filename!r}"
        path = f"{DATA_DIR}/{filename}"
        if any(c in filename for c in "/\\") or not dataset.store.exists(path):  # (pylance: one object's name)
            raise LanceFileNotFoundError(f"{where}: not found", path=dataset.store.url(path))
        lf = open_data_file(dataset.store, path, where, dataset.storage_options)
        check_append_schema(dataset.manifest_file, lf.schema, dataset.uri)  # (its fields, in the dataset's order)
        ids, cols = file_field_lists(dataset_fields(lf.schema, dataset.manifest_file, subset=True), lf.version.value)
        major, minor = lf.version.key
        df = table_pb2.DataFile(
            path=filename, fields=ids, column_indices=cols, file_major_version=major, file_minor_version=minor
        )
        return FragmentMetadata.from_pb(table_pb2.DataFragment(id=fragment_id, files=[df], physical_rows=lf.num_rows))

    @staticmethod
    def create(
        dataset_uri: str | os.PathLike[str],
        data: Any,
        fragment_id: int | None = None,
        schema: pa.Schema | None = None,
        max_rows_per_group: int | None = 1024,
        progress: Any = None,
        mode: str = "append",
        *,
        data_storage_version: str | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> FragmentMetadata:
        """Write ``data`` as the data file of one new fragment; nothing is committed.

        Args:
            dataset_uri: the dataset the fragment is for (its field ids are reused on append).
            data: a Table, RecordBatch(es), a reader or a pandas DataFrame.
            fragment_id: the id to record (``LanceDataset.commit`` of an Append assigns fresh ids).
            schema: the data's schema, when ``data`` is an iterable of batches.
            max_rows_per_group: accepted for pylance's signature (pages are sized by bytes).
            progress: pylance's ``FragmentWriteProgress``: ``begin`` before the data file is written (the fragment
                with its id and the file's name, no fields yet), ``complete`` once it is.
            mode: "append" (the dataset's field ids) or "overwrite" / "create" (fresh ones).
            data_storage_version: the file version (default: the dataset's, 2.2 for a new one).
            storage_options: object-store options.

        Returns:
            The fragment's metadata, for ``LanceDataset.commit(uri, LanceOperation...)``.

        Raises:
            EmptySchemaError: Data of no columns.
        """
        from lancelot.dataset.writing import as_batches, data_file_name, write_fragments

        if mode not in ("append", "overwrite", "create"):
            raise ValueError(f"mode must be 'append', 'overwrite' or 'create', not {mode!r}")
        schema, batches = as_batches(data, schema)
        if not len(schema):
            raise EmptySchemaError("Invalid user input: Cannot write with an empty schema.")
        name, fid = data_file_name(), fragment_id or 0
        if progress is not None:
            progress.begin(FragmentMetadata(id=fid, files=[DataFile(name, [])], physical_rows=0))
        frags = write_fragments(
            batches,
            dataset_uri,
            schema=schema,
            data_storage_version=data_storage_version,
            max_rows_per_file=2**62,
            storage_options=storage_options,
            _base=... if mode == "append" else None,
            _name=name,
        )
        if len(frags) != 1:
            raise ValueError(f"LanceFragment.create wrote {len(frags)} fragments: give it at least one row")
        pb = frags[0].to_pb()
        pb.id = fid
        out = FragmentMetadata.from_pb(pb)
        if progress is not None:
            progress.complete(out)
        return out

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        """Pickles as (dataset, fragment id): the dataset reopens at the same version."""
        return _fragment_of, (self._ds, self.fragment_id)


class FragmentSession:
    """Repeated ``take``s of the same columns from one fragment (pylance's ``FragmentSession``).

    Args:
        fragment: The fragment.
        columns: The columns each ``take`` returns (``_rowaddr`` among them for row addresses).
    """

    def __init__(self, fragment: Fragment, columns: list[str]) -> None:
        self._fragment, self._columns = fragment, columns

    def take(self, indices: Any) -> pa.Table:
        """Rows by their index among the fragment's live rows.

        Args:
            indices: Indices among the live rows (array-like).

        Returns:
            A ``pyarrow.Table`` of the session's columns, one row per index.
        """
        return self._fragment.take(indices, columns=self._columns)


class EmptySchemaError(OSErrorMessage, LanceError, OSError):
    """Data of no columns given to ``LanceFragment.create``: pylance's OSError."""


def _fragment_of(ds: LanceDataset, fragment_id: int) -> Fragment:
    f = ds.get_fragment(fragment_id)
    if f is None:
        raise CorruptFileError(f"dataset {ds.uri!r} version {ds.version}: fragment {fragment_id} is gone")
    return f
