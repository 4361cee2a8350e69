"""Writing Lance files: ``LanceWriter`` and ``write_table`` (the file layer's write path).

Batches of any size arrive; each column buffers until a page is worth writing
(``max_page_bytes``), encodes it and writes it at once, so memory is bounded
by pages, not by the file.  At 2.1/2.2 pages are encoded on a small thread pool
(encodings/structural/write_pipeline.py) while the caller's thread goes on with
the next batches; the file's bytes are written by a background thread
(io/sink.py).  The file is written under a temporary name beside
the target and renamed into place by ``close()`` (or, for another fsspec URL, uploaded
in one put): a failed write leaves nothing at the target path.
"""

from __future__ import annotations

import os
import threading
from types import TracebackType
from typing import Any

import numpy as np
import pyarrow as pa

from lancelot import encodings, field_metadata, versions
from lancelot.encodings.strategy import WriteSettings, check_profile
from lancelot.encodings.structural.write_field import Leaves, plan_leaves
from lancelot.encodings.structural.write_profile import FilePrice
from lancelot.errors import LanceError, SchemaMismatchError
from lancelot.extension_types import stored_array
from lancelot.format.container import ContainerWriter
from lancelot.inputs import as_batches, type_name
from lancelot.io.counters import count_write
from lancelot.schema import normalize_schema, normalized
from lancelot.versions import FileVersion
from lancelot.zonemap_stats import leaf_columns
from lancelot.zonemaps import ZoneMapBuilder

DEFAULT_MAX_PAGE_BYTES = 32 * 1024 * 1024  # pylance's page limit; columns gather 8 MiB (encodings/paging.py)
#: re-exported for callers of the writer (spark, dataset): lancelot/versions.py owns them
DEFAULT_VERSION = versions.DEFAULT


def resolve_version(version: str | FileVersion | None) -> FileVersion:
    """The version a public name (``2.0``...``2.2``, ``stable``, ``next``; None: the default) writes."""
    return versions.resolve_writable(version)


def _cast(col: pa.Array, to: pa.DataType) -> pa.Array:
    """``col.cast(to)``; pyarrow < 18 cannot cast view types (string_view, binary_view, list_view)
    to their plain forms, so there they are rebuilt from Python values (a compatibility path only)."""
    try:
        return col.cast(to)
    except pa.ArrowNotImplementedError:
        return pa.array(col.to_pylist(), to)


class NullsNotAllowedError(SchemaMismatchError, OSError):
    """A null where the schema allows none (a column, or a field inside one): pylance's write raises OSError."""


def _required_below(t: pa.DataType) -> bool:
    """Whether a field inside type ``t`` (a struct's child, a list's item, deeper) is non-nullable."""
    if pa.types.is_struct(t):
        return any(not f.nullable or _required_below(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return not t.value_field.nullable or _required_below(t.value_type)
    return False


def _may_break(col: pa.Array, f: pa.Field) -> bool:
    """Whether ``col`` may hold a null where ``f`` (non-nullable, or with such a field inside) allows none."""
    return bool(col.null_count) if not f.nullable else _nulls_below(col, f.type) is not None


def _nulls_below(arr: pa.Array, t: pa.DataType) -> str | None:
    """The name of a non-nullable field inside ``arr`` (of type ``t``) that holds a null where its parent does not (a
    struct's child, a list's item), as pylance refuses them; None when there is none."""
    if pa.types.is_struct(t):
        children = arr.flatten()  # (the struct's nulls masked onto each child)
        for f, child in zip(t, children, strict=True):
            if not f.nullable and child.null_count > arr.null_count:
                return str(f.name)
            deeper = _nulls_below(child, f.type)
            if deeper is not None:
                return deeper
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        values = arr.flatten()
        if not t.value_field.nullable and values.null_count:
            return str(t.value_field.name)
        return _nulls_below(values, t.value_type)
    return None


class _Setup:
    """What a writer derives from its normalized schema, version and profile alone (kept in the schema's
    ``Normalized.derived``): each field's column count, each field's leaves (write_field.plan_leaves; made by
    the first 2.1+ writer without a file price) and the zone maps' columns."""

    def __init__(self, schema: pa.Schema, version: FileVersion) -> None:
        self.counts = [field_metadata.column_count(f, version) for f in schema]
        self.leaves: list[Leaves] | None = None
        self.zone_columns = leaf_columns(schema)
        # (the columns that may hold no nulls, or have a field inside that may not)
        self.required = [i for i, f in enumerate(schema) if not f.nullable or _required_below(f.type)]


class LanceWriter:
    """Writes one Lance file from streamed batches (like ``pyarrow.parquet.ParquetWriter``); a context manager.

    Memory is bounded by pages, not by the file: a column's values gather until a page is worth
    writing, the page is encoded and written, and only its metadata stays.  The file appears at
    ``path`` only when ``close`` completes (written under a temporary name beside it, then
    renamed; one upload for other URLs), so a failed write leaves nothing there.  Safe to share
    between threads: each ``write`` call appends its batches whole (one lock orders the calls;
    the encoding work inside a call still runs on the page pool).

    Args:
        path: a local path or an fsspec URL (``memory://...``, ``s3://...``).
        schema: the file's Arrow schema; every batch written must have its column names and types.
        version: the Lance file version: ``"2.0"``, ``"2.1"``, ``"2.2"`` (the default, also called
            ``"stable"``) or ``"2.3"`` (also called ``"next"``: pylance's unstable version, written with
            its warning, ``lancelot.versions.UnstableVersionWarning``).
        max_page_bytes: the largest page per column, in bytes (default 32 MiB; pages gather 8 MiB).
        storage_options: options of the fsspec filesystem of ``path`` (s3fs's names or pylance's).
        profile: how hard the 2.1+ writer compresses: ``"fast"``, ``"balanced"`` (the default; at 2.3
            ``"fast"``, as pylance compresses 2.3 chunks only as asked) or ``"compact"``.

    Raises:
        TypeError: ``schema`` is not a ``pyarrow.Schema``.
        UnsupportedTypeError: a type ``version`` cannot hold (a map before 2.2, a null struct at 2.0).
        LanceFileNotFoundError: the directory to write into does not exist.

    Examples:
        >>> with lancelot.LanceWriter("big.lance", table.schema, version="2.1") as w:
        ...     for batch in table.to_batches(max_chunksize=4):
        ...         w.write(batch)
        >>> lancelot.LanceFile("big.lance").num_rows
        10
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        schema: pa.Schema,
        *,
        version: str | FileVersion | None = None,
        max_page_bytes: int | None = None,
        storage_options: dict[str, Any] | None = None,
        profile: str | None = None,
    ) -> None:
        if not isinstance(schema, pa.Schema):
            raise TypeError(f"LanceWriter expects a pyarrow Schema, got {type_name(schema)}")
        self.path = os.fspath(path)
        self.version = resolve_version(version)
        self.schema = schema
        self._normalized = normalized(schema)
        self._stored = self._normalized.schema
        # pylance 14 compresses 2.3 chunks only as asked (no General wrapper of its own): "fast" is that profile
        profile = check_profile(profile if profile is not None or not self.version.planar else "fast")
        setup = self._normalized.derived.get((self.version, profile))
        if not isinstance(setup, _Setup):
            setup = self._normalized.derived[(self.version, profile)] = _Setup(self._stored, self.version)
        counts, self._required = setup.counts, setup.required
        self.settings = WriteSettings(
            version=self.version,
            max_page_bytes=int(max_page_bytes or DEFAULT_MAX_PAGE_BYTES),
            profile=profile,
            columns=sum(counts),
            price=FilePrice() if profile == "compact" and self.version.structural else None,
        )
        self.max_page_bytes = self.settings.max_page_bytes
        self.num_rows = 0
        self._lock = threading.RLock()  # one write/close/abort at a time: batches stay whole
        self._out = ContainerWriter(self.path, self.version, storage_options)
        self._extra_buffers: list[bytes] = []
        self._closed = False
        self._worker = None
        try:
            self._worker = encodings.page_worker(self.version)
            make = encodings.field_writer_factory(self.version)
            self._writers = []
            first = 0  # each field's columns follow the columns of the fields before it (the readers' rule)
            priced = self.settings.price is not None  # (a file's own price is in its leaves' options)
            if setup.leaves is None and self.version.structural and not priced:
                setup.leaves = [plan_leaves(f, self.settings) for f in self._stored]
            for i, (f, count) in enumerate(zip(self._stored, counts)):
                more = {"leaves": setup.leaves[i]} if setup.leaves is not None and not priced else {}
                self._writers.append(
                    make(self._out, f, first_column=first, settings=self.settings, worker=self._worker, **more)
                )
                first += count
            self._num_columns = first
            if self.settings.price is not None:  # its price is solved on a sample of every column
                self.settings.price.columns = [c for w in self._writers for c in getattr(w, "columns", [])]
            # zone statistics computed on the page pool (the caller's thread goes on shredding)
            run = self._worker.run if self._worker is not None else None
            self._zones: ZoneMapBuilder | None = ZoneMapBuilder(self._stored, run=run, columns=setup.zone_columns)
        except BaseException:
            self._stop_worker()
            self._out.abort()
            raise

    def _stop_worker(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def _check(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if batch.schema.equals(self._stored, check_metadata=True) and not (
            self._required and any(_may_break(batch.column(i), self._stored.field(i)) for i in self._required)
        ):
            return batch  # (already the stored form: nothing to cast, no nulls where none may be)
        if batch.schema.names != self._stored.names:
            raise SchemaMismatchError(
                f"batch columns {batch.schema.names} do not match the writer's {self._stored.names}", path=self.path
            )
        cols = []
        for f, col in zip(self._stored, batch.columns):
            if col.type != f.type:
                try:
                    plain = normalize_schema(pa.schema([pa.field(f.name, col.type)]))[0].type
                    stored = stored_array(col, f.type) if plain == f.type else None  # JSON: as JSONB
                    col = stored if stored is not None else _cast(col, f.type) if plain == f.type else None
                except pa.ArrowInvalid:
                    col = None
                if col is None:
                    raise SchemaMismatchError(
                        f"column {f.name!r} has type {batch.column(batch.schema.get_field_index(f.name)).type}, "
                        f"the writer's schema says {f.type}",
                        path=self.path,
                        column=f.name,
                    )
            if not f.nullable and col.null_count:
                raise NullsNotAllowedError(
                    f"non-nullable column {f.name!r} has {col.null_count} nulls", path=self.path, column=f.name
                )
            inner = _nulls_below(col, f.type)
            if inner is not None:
                raise NullsNotAllowedError(
                    f"column {f.name!r}: non-nullable field {inner!r} has nulls", path=self.path, column=f.name
                )
            cols.append(col)
        return pa.RecordBatch.from_arrays(cols, schema=self._stored)

    def write(self, data: pa.Table | pa.RecordBatch) -> None:
        """Append the rows of ``data`` (whole, even when other threads write too).

        Also available as ``write_batch`` (pylance's ``LanceFileWriter`` name) and ``write_table``
        (``pyarrow.parquet.ParquetWriter``'s).  On any error the file is abandoned (nothing at the path).

        Args:
            data: a Table or RecordBatch with the writer's column names and types (view types
                are accepted for their plain types).

        Raises:
            TypeError: ``data`` is not a Table or RecordBatch.
            SchemaMismatchError: its columns or types differ from the schema, or a non-nullable
                column holds nulls.
        """
        if not isinstance(data, pa.Table | pa.RecordBatch):
            raise TypeError(f"LanceWriter.write expects a pyarrow Table or RecordBatch, got {type_name(data)}")
        with self._lock:
            if self._closed:
                raise LanceError("writer is closed", path=self.path)
            try:
                batches = data.to_batches() if isinstance(data, pa.Table) else [data]
                for b in batches:
                    b = self._check(b)
                    for w, col in zip(self._writers, b.columns):
                        w.append(col)
                    if self.settings.price is not None:
                        self.settings.price.after_batch()
                    if self._zones is not None:
                        self._zones.update(b)
                    self.num_rows += b.num_rows
            except BaseException:
                self.abort()
                raise

    write_batch = write
    write_table = write

    @property
    def bytes_written(self) -> int:
        """Bytes in the file so far (pages still being encoded in the background not counted)."""
        return int(self._out.pos)

    def write_buffer(self, data: bytes | memoryview | np.ndarray) -> int:
        """Write ``data`` outside any page, after every page submitted so far.

        The blob writer stores blob bytes in the data file this way.

        Args:
            data: The bytes.

        Returns:
            Their position in the file.
        """
        with self._lock:
            if self._worker is not None:
                self._worker.drain()  # the pages before these bytes are in the file: the position is known
            return int(self._out.write_buffer(data)[0])

    def next_position(self, align: int = 1) -> int:
        """Where the next byte written will go, after every page submitted so far.

        Args:
            align: Round the position up to a multiple of this.

        Returns:
            The file position.
        """
        with self._lock:
            if self._worker is not None:
                self._worker.drain()
            return int(-(-self._out.pos // align) * align)

    def add_global_buffer(self, data: bytes) -> int:
        """Add a global buffer to the file, after the schema's and before lancelot's zone maps (as pylance's
        ``LanceFileWriter.add_global_buffer``).

        Args:
            data: The buffer's bytes.

        Returns:
            The buffer's number in the file (the schema's is 0).
        """
        with self._lock:
            self._extra_buffers.append(bytes(data))
            return len(self._extra_buffers)

    def skip_zone_maps(self) -> None:
        """Write no zone-map global buffer (a file whose global buffers another reader takes by number, as pylance's
        index files).

        Returns:
            None.
        """
        with self._lock:
            self._zones = None

    def close(self) -> None:
        """Finish the file (the last pages, the column metadata, the footer) and move it into place.

        Called by ``with`` on a normal exit; a second call does nothing.  If finishing fails, the
        file is abandoned as by ``abort`` and the error raised.
        """
        with self._lock:
            if self._closed:
                return
            try:
                columns = []
                for w in self._writers:
                    columns.extend(w.finish())
                zones = self._zones.finish() if self._zones is not None else None  # (its jobs run on the pool)
                if self._worker is not None:
                    self._worker.drain()
                    self._stop_worker()
                columns.sort(key=lambda c: c.index)
                if [c.index for c in columns] != list(range(self._num_columns)):  # a field writer broke the rule
                    raise LanceError(
                        f"internal error: column numbers {[c.index for c in columns]} are not "
                        f"0..{self._num_columns - 1}",
                        path=self.path,
                    )
                gbufs = [self._normalized.descriptor(self.num_rows).SerializeToString(), *self._extra_buffers]
                if zones is not None:
                    gbufs.append(zones)
                self._out.finish([c.metadata() for c in columns], gbufs)
                self._closed = True
                count_write(int(self._out.pos))
            except BaseException:
                self.abort()
                raise

    def abort(self) -> None:
        """Abandon the file: remove the temporary file, leave the target path untouched.

        Called by ``with`` when the block raises; does nothing once the file is closed.
        """
        with self._lock:
            if not self._closed:
                self._closed = True
                self._stop_worker()
                self._out.abort()

    def __enter__(self) -> LanceWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __del__(self) -> None:
        """A writer dropped without ``close()`` is abandoned: no file at the path, no temporary file
        left behind, its threads stopped."""
        try:
            if not getattr(self, "_closed", True) and hasattr(self, "_out"):
                self.abort()
        except Exception:  # noqa: BLE001 - nothing may escape a finalizer (e.g. at interpreter exit)
            pass


def write_table(
    data: object,
    path: str | os.PathLike[str],
    *,
    version: str | None = None,
    max_page_bytes: int | None = None,
    schema: pa.Schema | None = None,
    storage_options: dict[str, Any] | None = None,
    profile: str | None = None,
) -> None:
    """Write ``data`` as one Lance file at ``path`` (like ``pyarrow.parquet.write_table``).

    The data is streamed through a ``LanceWriter``: the file appears at ``path`` whole or not at all.

    Args:
        data: a Table, RecordBatch, RecordBatchReader, an iterable of RecordBatches (or Tables),
            a pandas DataFrame (converted by ``pyarrow.Table.from_pandas``), or an object with
            ``__arrow_c_stream__`` or ``__dataframe__`` (lancelot/inputs.py).
        path: a local path or an fsspec URL (``memory://...``, ``s3://...``).
        version: the Lance file version: ``"2.0"``, ``"2.1"``, ``"2.2"`` (the default) or ``"2.3"``
            (``"next"``, unstable).
        max_page_bytes: the largest page per column, in bytes (default 32 MiB).
        schema: the schema to write (default: the data's); required for an empty iterable.
        storage_options: options of the fsspec filesystem of ``path``.
        profile: ``"fast"``, ``"balanced"`` (the default) or ``"compact"`` (see ``LanceWriter``).

    Raises:
        TypeError: ``data`` is none of the accepted inputs (the message says what is).
        LanceError: ``data`` is empty and no ``schema`` was given.
        SchemaMismatchError: batches whose schemas differ.

    Examples:
        >>> lancelot.write_table(pa.table({"id": [1, 2, 3]}), "t.lance", version="2.1")
        >>> lancelot.read_table("t.lance").to_pydict()
        {'id': [1, 2, 3]}
    """
    schema, batches = as_batches(data, schema)
    if schema is None:
        raise LanceError(
            "write_table got no batches and no schema (pass schema= to write an empty file)", path=os.fspath(path)
        )
    with LanceWriter(
        path, schema, version=version, max_page_bytes=max_page_bytes, storage_options=storage_options, profile=profile
    ) as w:
        for b in batches:
            w.write(b)
