"""Reading Lance files: ``LanceFile`` and ``read_table`` (the file layer's read path).

Opening a file reads its tail once (footer, offset tables, column metadata,
schema in global buffer 0).  Each read plans per top-level field, fetches the
byte ranges it needs through the ByteSource, and decodes them (the read loop:
read_loop.py; whole reads of small files and simple pages: read_whole.py); the per-version FieldReaders live in
encodings/v2_0 (2.0) and encodings/structural (2.1+).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from numpy.typing import ArrayLike

from lancelot import encodings
from lancelot.encodings.base import ColumnInfo, FieldContext, FieldReader
from lancelot.encodings.served import recording
from lancelot.errors import CorruptFileError, LanceError, OutOfRangeError
from lancelot.extension_types import extension_names, resolve_schema, view_as
from lancelot.format.container import FileMetadata, read_metadata
from lancelot.format.pb import file_pb2
from lancelot.io.source import ByteSource, open_source
from lancelot.read_loop import ReadLoop
from lancelot.read_whole import WholeReadsMixin
from lancelot.schema import stored_schema
from lancelot.versions import FileVersion

if TYPE_CHECKING:
    from lancelot.zonemap_pruning import ZoneMaps


#: reads of at least this many rows (takes of this many rows) decode their fields in parallel
PARALLEL_MIN_ROWS = 32_768
PARALLEL_MIN_TAKE = 256
#: takes of at most this many indices check them in Python lists
FEW_INDICES = 64
#: reads of at least this many rows of several fields first tell the OS every field's byte ranges
#: (read_loop.READ_AHEAD_MAX_BYTES bounds them)
READ_AHEAD_MIN_ROWS = 512
#: column selections whose readers and schema a file keeps for its takes
MAX_SELECTIONS = 64
#: parsed schemas (global buffer 0) of opened files by their bytes: (descriptor, stored schema,
#: schema when it holds no extension type, {version: columns per field, ("spans", version): (name,
#: first column, column count) per field}); shared read-only by the files that repeat them
MAX_SCHEMAS = 256
_SCHEMAS: dict[bytes, tuple[file_pb2.FileDescriptor, pa.Schema, pa.Schema | None, dict[Any, Any]]] = {}
#: (schema, fields, result schema) of a column selection, per schema object and selection: files that
#: share their schema (``_SCHEMAS``) share these too
_SHAPES: dict[tuple[int, tuple[str, ...] | None], tuple[pa.Schema, list[pa.Field], pa.Schema]] = {}
#: files of at most this many rows read at least half their rows whole when their columns allow it
#: (encodings/structural/simple_pages.py)
SIMPLE_MAX_ROWS = 1 << 15


def file_shape(
    raw: bytes,
) -> tuple[file_pb2.FileDescriptor, pa.Schema, pa.Schema | None, dict[Any, Any]]:
    """(descriptor, stored schema, schema when it holds no extension type, per-version column counts)
    of a file's schema bytes (global buffer 0), parsed once per distinct bytes: files of one writer
    and schema repeat them (``_SCHEMAS``)."""
    known = _SCHEMAS.get(raw)
    if known is None:
        fd = file_pb2.FileDescriptor()
        try:
            fd.ParseFromString(raw)
        except Exception as e:
            raise CorruptFileError(f"schema in global buffer 0 does not parse: {e}") from None
        stored = stored_schema(fd)  # the fields as the columns store them (extension types as storage)
        # extension types resolve against the types registered now: only a schema without any is
        # resolved once for good
        plain = not any(extension_names(f) for f in stored)
        known = (fd, stored, stored if plain else None, {})
        if len(_SCHEMAS) >= MAX_SCHEMAS:
            _SCHEMAS.clear()
        _SCHEMAS[raw] = known
    return known


class LanceFile(WholeReadsMixin, ReadLoop):
    """A Lance file (2.0, 2.1 or 2.2) opened for reading (like ``pyarrow.parquet.ParquetFile``).

    Opening reads the footer, the column metadata and the schema; every read then plans the byte
    ranges it needs from them, fetches those in one coalesced pass and decodes them, so a take of
    a few rows reads only those rows' bytes.  A context manager (``close`` on exit).

    Attributes:
        schema: the file's Arrow schema.
        num_rows: the number of rows.
        version: the file's Lance version (``str(f.version)`` is ``"2.0"``, ``"2.1"`` or ``"2.2"``).
        path: the path or URL given.

    Args:
        source: a local path, an fsspec URL (``memory://...``, ``s3://...``) or a ByteSource.
        storage_options: options of the fsspec filesystem of ``source`` (s3fs's names or pylance's).

    Raises:
        LanceFileNotFoundError: no file at ``source``.
        NotALanceFileError: the bytes are not a Lance file.
        CorruptFileError: the footer or metadata do not fit the file.

    Examples:
        >>> lancelot.write_table(table, "t.lance")
        >>> with lancelot.LanceFile("t.lance") as f:
        ...     f.num_rows, str(f.version), f.take([5, 0, 5], columns=["id"]).to_pydict()
        (10, '2.2', {'id': [5, 0, 5]})
    """

    def __init__(
        self, source: str | os.PathLike[str] | ByteSource, *, storage_options: dict[str, Any] | None = None
    ) -> None:
        self._src = open_source(source, storage_options)
        self.path = self._src.path
        try:
            self.metadata: FileMetadata = read_metadata(self._src)
            known = file_shape(self._read_schema_bytes())
            self._descriptor, self._stored, resolved, counts = known
            #: the stored schema's fields by name, shared by the files of the same schema
            self._stored_fields: dict[str, pa.Field] = counts.setdefault("fields", {})
            self.schema = resolved if resolved is not None else resolve_schema(self._stored)
        except LanceError as e:
            self._src.close()
            raise e.at(path=self.path) from None
        self.num_rows: int = int(self._descriptor.length)
        self.version: FileVersion = self.metadata.version
        self._module = encodings.field_package(self.version)
        self._cache: dict[Any, Any] = {}
        #: decode the fields of large reads on the shared thread pool (set False to stay on the caller's thread)
        self.parallel: bool = True
        self._readers: dict[str, FieldReader] = {}
        #: per column selection of the takes: (fields, their readers, the result's schema)
        self._selections: dict[tuple[str, ...] | None, tuple[list[pa.Field], list[FieldReader], pa.Schema]] = {}
        cols = self.metadata.columns
        in_file = getattr(self._module, "columns_in_file", None)  # 2.0: a few early layouts differ
        spans = counts.get(("spans", self.version)) if in_file is None else None
        if spans is None:
            spans = self._spans(in_file)
            if in_file is None:
                counts[("spans", self.version)] = spans
        if spans and spans[-1][1] + spans[-1][2] > len(cols):
            raise CorruptFileError(f"schema needs more than the file's {len(cols)} columns", path=self.path)
        self._columns: dict[str, list[ColumnInfo]] = {
            name: [ColumnInfo(i, cols[i]) for i in range(pos, pos + n)] for name, pos, n in spans
        }

    def _spans(self, in_file: Callable[..., int] | None) -> list[tuple[str, int, int]]:
        """(name, first column, column count) of every top-level field; ``in_file`` (2.0) counts a
        field's columns from the file itself."""
        spans, pos, cols = [], 0, self.metadata.columns
        for f in self._stored:
            n = in_file(f, self._src, cols, pos) if in_file is not None else self._module.column_count(f)
            if pos + n > len(cols):
                raise CorruptFileError(f"schema needs more than the file's {len(cols)} columns", path=self.path)
            spans.append((f.name, pos, n))
            pos += n
        return spans

    def _read_schema_bytes(self) -> bytes:
        if not self.metadata.global_buffers:
            raise CorruptFileError("no global buffer 0 (schema)", path=self.path)
        if self.metadata.schema_bytes is not None:  # read with the tail
            return self.metadata.schema_bytes
        return bytes(self._src.read(*self.metadata.global_buffers[0]))

    # -- the read API --------------------------------------------------------------------

    def _fields(self, columns: Sequence[str] | None) -> list[pa.Field]:
        if columns is None:
            return list(self.schema)
        out = []
        for c in columns:
            idx = self.schema.get_field_index(c)
            if idx < 0:
                raise LanceError(f"no column named {c!r} (columns: {self.schema.names})", path=self.path)
            out.append(self.schema.field(idx))
        return out

    def _reader(self, field: pa.Field) -> FieldReader:
        r = self._readers.get(field.name)
        if r is None:  # the decoders see storage types (one field object per schema: readers may key on it)
            stored = self._stored_fields.get(field.name)
            if stored is None:
                stored = self._stored_fields[field.name] = self._stored.field(field.name)
            r = self._readers[field.name] = self.make_field_reader(stored)
        return r

    def make_field_reader(self, stored: pa.Field) -> FieldReader:
        """A new reader of the columns of the top-level field named ``stored.name``.

        Its reads raise low-level errors on bad bytes: run them through ``guard``.

        Args:
            stored: The field to decode the columns as (a storage type; the blob columns read
                their descriptions this way).

        Returns:
            The field's reader (``read_range``, ``take``).
        """
        ctx = FieldContext(self._src, self.version, stored, self._columns[stored.name], self.num_rows, self._cache)
        reader: FieldReader = self._module.make_field_reader(ctx)
        return reader

    def _selection(self, columns: Sequence[str] | None) -> tuple[list[pa.Field], list[FieldReader], pa.Schema]:
        """The fields, readers and result schema of ``columns`` (kept per selection: a take of a
        few rows would otherwise spend much of its time looking them up again)."""
        key = None if columns is None else tuple(columns)
        sel = self._selections.get(key)
        if sel is None:
            shape = _SHAPES.get((id(self.schema), key))  # files of one schema share their fields' shapes
            if shape is None or shape[0] is not self.schema:
                fields = self._fields(columns)
                shape = (self.schema, fields, pa.schema(fields, metadata=self.schema.metadata))
                if len(_SHAPES) >= MAX_SCHEMAS:
                    _SHAPES.clear()
                _SHAPES[(id(self.schema), key)] = shape
            fields = shape[1]
            sel = (fields, [self._reader(f) for f in fields], shape[2])
            if len(self._selections) >= MAX_SELECTIONS:
                self._selections.clear()
            self._selections[key] = sel
        return sel

    def _table(
        self, fields: list[pa.Field], arrays: list[pa.Array], n: int, schema: pa.Schema | None = None
    ) -> pa.Table:
        if schema is None:
            schema = pa.schema(fields, metadata=self.schema.metadata)
        if not fields:
            return (
                pa.table({}, schema=schema).slice(0, 0)
                if n == 0
                else pa.Table.from_batches([pa.RecordBatch.from_pydict({}, schema=schema)]).slice(0, 0)
            )
        if self._stored is not self.schema:  # extension types: their storage arrays seen as them
            arrays = [view_as(a, f.type) for a, f in zip(arrays, schema)]
        return pa.Table.from_arrays(arrays, schema=schema)

    def read_range(self, start: int, stop: int, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows ``[start, stop)`` as a Table; ``stop`` past the end is clipped to the file (as a slice).

        Note pylance's ``LanceFileReader.read_range(start, num_rows)`` takes a count instead.

        Args:
            start: the first row.
            stop: the row after the last (exclusive).
            columns: the column names to read (default: all), in the order wanted.

        Returns:
            A ``pyarrow.Table`` of ``stop - start`` rows (fewer at the end of the file).

        Raises:
            OutOfRangeError: a negative ``start``, or a ``stop`` before ``start``.
            LanceError: a name in ``columns`` that the file does not have.
        """
        start, stop = int(start), int(stop)
        if start < 0 or stop < start:
            raise OutOfRangeError(
                f"read_range({start}, {stop}): " + ("start is negative" if start < 0 else "stop is before start"),
                path=self.path,
            )
        start, stop = min(start, self.num_rows), min(self.num_rows, stop)
        staged = self._stage_whole(start, stop, columns)
        try:
            return self._read_range(start, stop, columns, bool(staged))
        finally:
            if staged:
                self._src.unstage(staged)

    def _read_range(self, start: int, stop: int, columns: Sequence[str] | None, staged: bool) -> pa.Table:
        """``read_range`` of clipped rows (``staged``: the file's bytes are in memory)."""
        rows = range(start, stop)
        if (stop - start) * 2 >= self.num_rows > 0 and self.num_rows <= SIMPLE_MAX_ROWS:
            sel = self._selections.get(None if columns is None else tuple(columns))
            fields = sel[0] if sel is not None else self._fields(columns)
            plans = self._simple_plans(fields, rows)  # (no field readers built for the simple fields)
            if plans is not None:
                arrays = self._run(fields, plans, "range")
                return self._table(fields, arrays, stop - start, None if sel is None else sel[2])
        fields, readers, schema = self._selection(columns)
        spread = stop - start >= PARALLEL_MIN_ROWS
        announce = stop - start >= READ_AHEAD_MIN_ROWS and not staged
        arrays = self._read_fields(fields, readers, rows, "range", spread, announce)
        return self._table(fields, arrays, stop - start, schema)

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        """The whole file as a Table.

        Args:
            columns: the column names to read (default: all), in the order wanted.

        Returns:
            A ``pyarrow.Table`` of every row.
        """
        return self.read_range(0, self.num_rows, columns)

    def take(self, indices: ArrayLike | pa.Array | pa.ChunkedArray, columns: Sequence[str] | None = None) -> pa.Table:
        """The rows at ``indices`` (any order, duplicates allowed), in the order asked.

        Only the bytes holding those rows are read (for a few rows: one round of requests).

        Args:
            indices: row numbers, as a list, a numpy array or an Arrow integer array.
            columns: the column names to read (default: all), in the order wanted.

        Returns:
            A ``pyarrow.Table`` with one row per index.

        Raises:
            OutOfRangeError: an index is negative or past the end (the message names it).
            LanceError: indices that are not integers, or an unknown column name.
        """
        if type(indices) is np.ndarray and indices.dtype == np.int64 and indices.ndim == 1:
            idx = indices
        else:
            idx = np.asarray(indices.to_numpy() if isinstance(indices, pa.Array | pa.ChunkedArray) else indices)
            if idx.size and not np.issubdtype(idx.dtype, np.integer):
                raise LanceError("take indices must be integers", path=self.path)
            idx = idx.astype(np.int64, copy=False).reshape(-1)
        ordered = None
        if 0 < idx.size <= FEW_INDICES:  # checked in Python: cheaper than numpy's reductions on a few
            listed = idx.tolist()
            ordered = all(a < b for a, b in zip(listed, listed[1:]))
            lo, hi = (listed[0], listed[-1]) if ordered else (min(listed), max(listed))
            in_range = lo >= 0 and hi < self.num_rows
        else:
            in_range = not idx.size or (idx.min() >= 0 and idx.max() < self.num_rows)
        if not in_range:
            bad = idx[(idx < 0) | (idx >= self.num_rows)]
            raise OutOfRangeError(
                f"take index {int(bad[0])} (position {int(np.flatnonzero(idx == bad[0])[0])}) is out of range "
                f"for a file of {self.num_rows} rows" + (f" ({bad.size} indices are)" if bad.size > 1 else ""),
                path=self.path,
            )
        if ordered is None:
            ordered = bool(np.all(idx[1:] > idx[:-1]))  # sorted and unique: no re-ordering afterwards
        uniq, inverse = (idx, None) if ordered else np.unique(idx, return_inverse=True)
        fields, readers, schema = self._selection(columns)
        spread = len(uniq) >= PARALLEL_MIN_TAKE or self._src.round_trip_costly
        arrays = self._read_fields(fields, readers, uniq, "take", spread)
        if inverse is not None:
            order = pa.array(inverse)
            arrays = [a.take(order) for a in arrays]
        return self._table(fields, arrays, len(idx), schema)

    def explain_take(
        self, indices: ArrayLike | pa.Array | pa.ChunkedArray, columns: Sequence[str] | None = None
    ) -> dict[str, list[str]]:
        """Take ``indices`` and say, per field, which decode path served it (encodings/served.py:
        e.g. ``points/ColumnPoints``, ``pages/MiniBlockPage``, ``plan/...`` at 2.0).

        Args:
            indices: row numbers, as for ``take``.
            columns: the column names to take (default: all).

        Returns:
            Per column name, the decode paths that ran.
        """
        with recording() as rec:
            self.take(indices, columns)
        return {f.name: rec.paths(f.name, "take") for f in self._fields(columns)}

    def iter_batches(self, batch_size: int = 65536, columns: Sequence[str] | None = None) -> Iterator[pa.RecordBatch]:
        """Stream the file as RecordBatches of at most ``batch_size`` rows.

        Each step reads ``batch_size`` rows; where a column's pages end inside the step the
        batch is cut there too (no copy to glue pages together), so memory stays one step.

        Args:
            batch_size: the most rows a batch holds (positive).
            columns: the column names to read (default: all).

        Yields:
            ``pyarrow.RecordBatch`` objects, in row order.
        """
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        for s in range(0, self.num_rows, batch_size):
            t = self.read_range(s, s + batch_size, columns)
            yield from t.to_batches(max_chunksize=batch_size) or []

    # -- metadata access -----------------------------------------------------------------

    @property
    def descriptor(self) -> file_pb2.FileDescriptor:
        """The file's schema descriptor (file.proto ``FileDescriptor``: the Lance schema, row count)."""
        return self._descriptor

    @property
    def columns(self) -> Mapping[str, Sequence[ColumnInfo]]:
        """Per top-level field name, the columns it owns (number and ``ColumnMetadata``), in order."""
        return MappingProxyType(self._columns)

    @property
    def size(self) -> int:
        """The file's size in bytes."""
        return int(self._src.size)

    @property
    def num_global_buffers(self) -> int:
        """How many global buffers the file has (buffer 0 holds the schema)."""
        return len(self.metadata.global_buffers)

    def read_global_buffer(self, i: int) -> bytes:
        """The bytes of global buffer ``i`` (as pylance's ``read_global_buffer``).

        Args:
            i: the buffer's number, from 0 to ``num_global_buffers - 1``.

        Returns:
            The buffer's bytes.

        Raises:
            LanceError: no such buffer.
        """
        if not 0 <= i < len(self.metadata.global_buffers):
            raise LanceError(f"no global buffer {i}", path=self.path)
        return bytes(self._src.read(*self.metadata.global_buffers[i]))

    def read_bytes(self, offset: int, length: int) -> bytes:
        """Raw bytes of the file (checked against its size).

        Args:
            offset: the first byte's position.
            length: how many bytes.

        Returns:
            The bytes.
        """
        return bytes(self._src.read(offset, length))

    def zone_maps(self) -> ZoneMaps | None:
        """The file's zone maps: per column and zone of rows, the minimum, maximum and null count.

        lancelot's writer stores them in a global buffer that pylance ignores; filters use them
        to skip rows.

        Returns:
            A ``ZoneMaps``, or None for a file without them (every file pylance writes).
        """
        from lancelot.zonemaps import MAGICS, parse_zone_maps

        width = len(MAGICS[0])
        for i in range(1, self.num_global_buffers):
            pos, size = self.metadata.global_buffers[i]
            if size >= width and bytes(self._src.read(pos, width)) in MAGICS:  # (a format it does not know: none)
                return parse_zone_maps(self.read_global_buffer(i))
        return None

    def close(self) -> None:
        """Release the file (its open handle or connection); ``with`` calls it on exit."""
        self._src.close()

    def __enter__(self) -> LanceFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LanceFile({self.path!r}, version={self.version}, rows={self.num_rows}, columns={self.schema.names})"


def read_table(
    source: str | os.PathLike[str] | ByteSource,
    columns: Sequence[str] | None = None,
    *,
    storage_options: dict[str, Any] | None = None,
) -> pa.Table:
    """Read a whole Lance file into a Table (like ``pyarrow.parquet.read_table``).

    Args:
        source: a local path, an fsspec URL (``memory://...``, ``s3://...``) or a ByteSource.
        columns: the column names to read (default: all), in the order wanted.
        storage_options: options of the fsspec filesystem of ``source``.

    Returns:
        A ``pyarrow.Table``.

    Raises:
        LanceFileNotFoundError: no file at ``source``.
        NotALanceFileError: the bytes are not a Lance file.
        CorruptFileError: the file is damaged (the message names the column and page).

    Examples:
        >>> lancelot.write_table(table, "t.lance")
        >>> lancelot.read_table("t.lance", columns=["id"]).num_rows
        10
    """
    with LanceFile(source, storage_options=storage_options) as f:
        return f.read(columns)
