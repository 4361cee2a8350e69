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
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any

import pyarrow as pa

from lancelot import field_metadata, versions
from lancelot.encodings.strategy import WriteSettings, check_profile
from lancelot.encodings.structural.write_profile import FilePrice
from lancelot.errors import LanceError, SchemaMismatchError
from lancelot.extension_types import stored_array
from lancelot.format.container import ContainerWriter
from lancelot.schema import normalize_schema, to_descriptor
from lancelot.versions import FileVersion
from lancelot.zonemaps import ZoneMapBuilder

DEFAULT_MAX_PAGE_BYTES = 32 * 1024 * 1024  # pylance's page limit; columns gather 8 MiB (encodings/paging.py)
#: re-exported for callers of the writer (spark, dataset): lancelot/versions.py owns them
DEFAULT_VERSION = versions.DEFAULT
WRITABLE = versions.WRITABLE


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


class LanceWriter:
    """Writes one Lance file (like ``pyarrow.parquet.ParquetWriter``); a context manager.

    Safe to share between threads: each ``write`` call appends its batches whole (one lock
    orders the calls; the encoding work inside a call still runs on the page pool).
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
            raise TypeError(f"LanceWriter expects a pyarrow Schema, got {_type_name(schema)}")
        self.path = os.fspath(path)
        self.version = resolve_version(version)
        self.schema = schema
        self._stored = normalize_schema(schema)
        profile = check_profile(profile)
        self.settings = WriteSettings(
            version=self.version,
            max_page_bytes=int(max_page_bytes or DEFAULT_MAX_PAGE_BYTES),
            profile=profile,
            columns=sum(field_metadata.column_count(f, self.version) for f in self._stored),
            price=FilePrice() if profile == "compact" and self.version.structural else None,
        )
        self.max_page_bytes = self.settings.max_page_bytes
        self.num_rows = 0
        self._lock = threading.RLock()  # one write/close/abort at a time: batches stay whole
        self._out = ContainerWriter(self.path, self.version, storage_options)
        self._closed = False
        self._worker = None
        try:
            self._worker = self.version.page_worker()
            make = self.version.field_writer_factory()
            self._writers = []
            first = 0  # each field's columns follow the columns of the fields before it (the readers' rule)
            for f in self._stored:
                self._writers.append(
                    make(self._out, f, first_column=first, settings=self.settings, worker=self._worker)
                )
                first += field_metadata.column_count(f, self.version)
            self._num_columns = first
            if self.settings.price is not None:  # its price is solved on a sample of every column
                self.settings.price.columns = [c for w in self._writers for c in getattr(w, "columns", [])]
            # zone statistics computed on the page pool (the caller's thread goes on shredding)
            self._zones = ZoneMapBuilder(self._stored, run=self._worker.run if self._worker is not None else None)
        except BaseException:
            self._stop_worker()
            self._out.abort()
            raise

    def _stop_worker(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def _check(self, batch: pa.RecordBatch) -> pa.RecordBatch:
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
                raise SchemaMismatchError(
                    f"non-nullable column {f.name!r} has {col.null_count} nulls", path=self.path, column=f.name
                )
            cols.append(col)
        return pa.RecordBatch.from_arrays(cols, schema=self._stored)

    def write(self, data: pa.Table | pa.RecordBatch) -> None:
        """Append a Table or RecordBatch (whole, even when other threads write too).

        On any error the file is abandoned (nothing at the path).
        """
        if not isinstance(data, pa.Table | pa.RecordBatch):
            raise TypeError(f"LanceWriter.write expects a pyarrow Table or RecordBatch, got {_type_name(data)}")
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

    def close(self) -> None:
        """Finish the file and move it into place."""
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
                gbufs = [to_descriptor(self._stored, self.num_rows).SerializeToString()]
                if zones is not None:
                    gbufs.append(zones)
                self._out.finish([c.metadata() for c in columns], gbufs)
                self._closed = True
            except BaseException:
                self.abort()
                raise

    def abort(self) -> None:
        """Abandon the file: remove the temporary file, leave the target untouched."""
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


def _type_name(x: object) -> str:
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


_EXPECTED = (
    "a pyarrow Table, RecordBatch or RecordBatchReader, an iterable of RecordBatches or Tables, or a pandas DataFrame"
)


def as_batches(data: object, schema: pa.Schema | None = None) -> tuple[pa.Schema | None, Iterable[pa.RecordBatch]]:
    """What ``pyarrow.parquet.write_table`` users pass, as (schema, batches); TypeError for anything else.

    The schema is None only for an empty iterable with no ``schema`` given.
    """
    if isinstance(data, pa.Table | pa.RecordBatch):
        return schema or data.schema, (data.to_batches() if isinstance(data, pa.Table) else [data])
    if isinstance(data, pa.RecordBatchReader):
        return schema or data.schema, data
    if type(data).__module__.startswith("pandas.") and type(data).__name__ == "DataFrame":
        t = pa.Table.from_pandas(data, preserve_index=None)
        return schema or t.schema, t.to_batches()
    if isinstance(data, str | bytes | bytearray | dict) or not isinstance(data, Iterable):
        raise TypeError(f"write_table expects {_EXPECTED}; got {_type_name(data)}")

    def parts(it: Iterator[object]) -> Iterator[pa.RecordBatch]:
        for i, b in enumerate(it):
            if isinstance(b, pa.Table):
                yield from b.to_batches()
            elif isinstance(b, pa.RecordBatch):
                yield b
            else:
                raise TypeError(
                    f"write_table expects an iterable of pyarrow RecordBatches or Tables; item {i} is {_type_name(b)}"
                )

    it = parts(iter(data))
    if schema is not None:
        return schema, it
    try:
        first = next(it)
    except StopIteration:
        return None, iter(())
    return first.schema, (b for part in ([first], it) for b in part)


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
    """Write ``data`` as one Lance file at ``path`` (a local path or any fsspec URL).

    ``data`` is a Table, RecordBatch, RecordBatchReader, an iterable of RecordBatches (or Tables),
    or a pandas DataFrame (converted by ``pyarrow.Table.from_pandas``); anything else is a TypeError.
    The file appears at ``path`` whole or not at all.
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
