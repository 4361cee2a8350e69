"""Writing blob columns of 2.2+ datasets as pylance 14 writes them ("blob v2").

A blob v2 field (blob_schema.py: its manifest and file schema) is written as descriptions in the data file, its bytes
by size (pylance's thresholds, overridable per field by the metadata keys of blob_schema.py): up to 64 KiB inline in the
data file (each value its own 64-byte aligned buffer), up to 4 MiB appended to a shared packed sidecar ``<data file
stem>/<name>.blob`` (a new one past 1 GiB), larger ones each in a dedicated sidecar; external URIs are kept as
references.

Blob ids count from 1 per data file, in the order sidecars are started.  ``with_bytes`` turns scanned descriptions back
into such values, for rewrites (compaction)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lancelot import field_metadata
from lancelot.dataset.blob import (
    DESCRIPTION_V2,
    KIND_DEDICATED,
    KIND_EXTERNAL,
    KIND_INLINE,
    KIND_PACKED,
    BlobPlace,
    column_file,
    description_v2,
    holds_blob,
    is_blob_field,
    is_blob_v2,
    place_of,
    read_places,
    sidecar_path,
)
from lancelot.dataset.blob_schema import (
    DEDICATED_KEY,
    INLINE_KEY,
    PACK_FILE_KEY,
    file_schema,
    is_v2_input,
    leaf_paths,
    map_v2,
)
from lancelot.encodings.structural.blob import DESCRIPTION as DESCRIPTION_V1
from lancelot.encodings.structural.write_blob import ALIGN, padded
from lancelot.errors import LanceError, OSErrorMessage, UnsupportedTypeError
from lancelot.extension_types import child_fields, map_child_arrays
from lancelot.io.sink import FileTarget, open_target

if TYPE_CHECKING:
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.store import ObjectStore
    from lancelot.writer import LanceWriter

INLINE_MAX = 64 * 1024
DEDICATED_THRESHOLD = 4 * 1024 * 1024
PACK_FILE_MAX = 1024 * 1024 * 1024


class ExternalBlobError(OSErrorMessage, LanceError, OSError):
    """An external blob URI written without ``allow_external_blob_outside_bases`` (pylance's OSError)."""


def _threshold(field: pa.Field, key: str, default: int, allow_zero: bool) -> int:
    raw = field_metadata.value(field, key)
    if raw is None:
        return default
    try:
        v = int(raw)
    except ValueError:
        v = -1
    if v < 0 or (v == 0 and not allow_zero):
        raise LanceError(f"blob field {field.name!r}: invalid {key}={raw!r} (a non-negative integer)")
    return v


class BlobV2Writer:
    """Turns the blob v2 columns of batches into descriptions while their bytes are written: inline ones into the data
    file (through its LanceWriter), the others into sidecars beside it."""

    def __init__(
        self,
        store: ObjectStore,
        data_path: str,
        writer: LanceWriter,
        schema: pa.Schema,
        version: str,
        *,
        allow_external: bool = True,
    ):
        self.store, self.writer = store, writer
        #: external URIs are stored as references (pylance's ``allow_external_blob_outside_bases``)
        self.allow_external = allow_external
        self.data_path = data_path
        self.fields = [i for i, f in enumerate(schema) if is_v2_input(f, version)]
        self.input_schema = schema
        self.schema = file_schema(schema, version)
        self.next_id = 1
        self.written: list[str] = []  # sidecars made (removed on abort)
        self._pack: FileTarget | None = None
        self._pack_id = 0
        self._pack_size = 0
        self._pack_max = 0
        #: (inline max, dedicated threshold, pack file max) of each blob v2 value field, by name path
        self._limits = {
            path: (
                _threshold(f, INLINE_KEY, INLINE_MAX, True),
                _threshold(f, DEDICATED_KEY, DEDICATED_THRESHOLD, False),
                _threshold(f, PACK_FILE_KEY, PACK_FILE_MAX, False),
            )
            for i in self.fields
            for path, f in leaf_paths(schema.field(i))
        }

    def convert(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` with its blob columns as descriptions (their bytes written)."""
        if not self.fields:
            return batch
        cols = list(batch.columns)
        for i in self.fields:
            field = self.input_schema.field(i)
            cols[i] = self._convert(cols[i], field, (field.name,))
        return pa.RecordBatch.from_arrays(cols, schema=self.schema)

    def _convert(self, col: pa.Array, field: pa.Field, path: tuple[str, ...]) -> pa.Array:
        """One column: a blob v2 value field as descriptions, a struct holding some with them converted, column by
        column in schema order (pylance's order of inline and sidecar bytes)."""
        if is_blob_field(field):
            return self._describe(col, *self._limits[path], ".".join(path))
        if not holds_blob(field, is_blob_field):
            return col
        kids = child_fields(field.type)
        out = map_v2(field, description_v2).type
        return map_child_arrays(col, out, lambda child, i: self._convert(child, kids[i], (*path, kids[i].name)))

    # -- one column -------------------------------------------------------------------------
    def _describe(self, col: pa.Array, inline_max: int, dedicated: int, pack_max: int, name: str) -> pa.StructArray:
        if isinstance(col, pa.ExtensionArray):
            col = col.storage
        n = len(col)
        uri = ext_pos = ext_size = None
        if pa.types.is_struct(col.type):  # lance.blob.v2 input: data, uri (and an external range)
            names = [col.type.field(k).name for k in range(col.type.num_fields)]
            if names[:2] != ["data", "uri"]:
                raise UnsupportedTypeError(f"blob field {name!r}: a lance.blob.v2 struct needs data and uri first")
            data = col.field(0)
            uri = col.field(1)
            if len(names) == 4:
                ext_pos, ext_size = col.field(2), col.field(3)
            valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), bool)
        else:
            data = col
            valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), bool)
        data = data.cast(pa.large_binary()) if data.type != pa.large_binary() else data
        offs = np.frombuffer(data.buffers()[1], np.int64)[data.offset : data.offset + n + 1]
        has_data = valid & np.asarray(data.is_valid().to_numpy(zero_copy_only=False), bool)
        size = np.where(has_data, offs[1:] - offs[:-1], 0).astype(np.int64)
        raw = np.frombuffer(data.buffers()[2], np.uint8) if data.buffers()[2] is not None else np.zeros(0, np.uint8)
        kind = np.zeros(n, np.uint8)
        position = np.zeros(n, np.uint64)
        blob_id = np.zeros(n, np.uint32)
        blob_uri = np.full(n, "", dtype=object)
        external = np.zeros(n, bool)
        if uri is not None:
            external = valid & np.asarray(uri.is_valid().to_numpy(zero_copy_only=False), bool)
            if np.any(external & has_data):
                raise LanceError(f"blob field {name!r}: a blob cannot have both data and uri")
        kind[has_data & (size > inline_max)] = KIND_PACKED
        kind[has_data & (size > dedicated)] = KIND_DEDICATED
        inline = valid & ~external & (kind == KIND_INLINE)
        position[inline] = self._write_inline(raw, offs, size, inline)
        for r in np.flatnonzero(kind != KIND_INLINE).tolist():  # in row order: sidecar ids are numbered as pylance's
            if kind[r] == KIND_PACKED:
                position[r], blob_id[r] = self._write_packed(raw[offs[r] : offs[r + 1]], pack_max)
            else:
                blob_id[r] = self._write_dedicated(raw[offs[r] : offs[r + 1]])
        if external.any() and not self.allow_external:
            assert uri is not None
            first = uri[int(np.flatnonzero(external)[0])].as_py()
            raise ExternalBlobError(
                f"blob field {name!r}: external blob URI {first!r} is outside the dataset's registered external "
                "bases; set allow_external_blob_outside_bases=True to store it as a reference",
                column=name,
            )
        if external.any():
            kind[external] = KIND_EXTERNAL
            assert uri is not None
            blob_uri[external] = np.asarray(uri.to_pylist(), dtype=object)[external]
            if ext_pos is not None and ext_size is not None:
                position[external] = np.nan_to_num(ext_pos.to_numpy(zero_copy_only=False)[external]).astype(np.uint64)
                size[external] = np.nan_to_num(ext_size.to_numpy(zero_copy_only=False)[external]).astype(np.int64)
        children = [
            pa.array(kind, pa.uint8()),
            pa.array(position, pa.uint64()),
            pa.array(size.astype(np.uint64), pa.uint64()),
            pa.array(blob_id, pa.uint32()),
            pa.array(blob_uri.tolist(), pa.string()),
        ]
        mask = None if valid.all() else pa.array(~valid)
        return pa.StructArray.from_arrays(children, fields=list(DESCRIPTION_V2), mask=mask)

    def _write_inline(self, raw: np.ndarray, offs: np.ndarray, size: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Write the ``rows`` values into the data file, each 64-byte aligned; their positions."""
        sizes = size[rows]
        if not len(sizes):
            return np.zeros(0, np.uint64)
        starts, buf = padded(raw, offs[:-1][rows], sizes)
        base = self.writer.write_buffer(buf) if len(buf) else self.writer.next_position(ALIGN)
        return (starts + base).astype(np.uint64)

    def _target(self, path: str) -> FileTarget:
        full = self.store.full_path(path)
        if self.store.is_local:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            return open_target(full)
        return open_target(self.store.url(path), self.store.storage_options)

    def _write_packed(self, data: np.ndarray, pack_max: int) -> tuple[int, int]:
        if self._pack is None or self._pack_max != pack_max or self._pack_size + len(data) > pack_max:
            self._close_pack()
            self._pack_id, self.next_id = self.next_id, self.next_id + 1
            path = sidecar_path(self.data_path, self._pack_id)
            self._pack, self._pack_size, self._pack_max = self._target(path), 0, pack_max
            self.written.append(path)
        pos = self._pack_size
        self._pack.file.write(data.data)
        self._pack_size += len(data)
        return pos, self._pack_id

    def _close_pack(self) -> None:
        if self._pack is not None:
            pack, self._pack = self._pack, None
            pack.commit()

    def _write_dedicated(self, data: np.ndarray) -> int:
        blob_id, self.next_id = self.next_id, self.next_id + 1
        path = sidecar_path(self.data_path, blob_id)
        target = self._target(path)
        self.written.append(path)
        try:
            target.file.write(data.data)
        except BaseException:
            target.abort()
            raise
        target.commit()
        return blob_id

    def finish(self) -> None:
        """Close the open packed sidecar (before the data file is committed)."""
        self._close_pack()

    def abort(self) -> None:
        """Remove what was written (best effort)."""
        if self._pack is not None:
            self._pack.abort()
            self._pack = None
        for path in self.written:
            try:
                self.store.delete(path)
            except Exception:  # noqa: BLE001 - cleanup of an abandoned write must not mask its error
                pass


# -- rewriting (compaction) ------------------------------------------------------------------------
def with_bytes(frag: Fragment, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``batches`` of ``frag`` (as scans return them) with their blob descriptions (at the top level or inside structs)
    replaced by the values a writer takes: the bytes (2.0 / 2.1), the logical blob struct (2.2: bytes in ``data``,
    external references in ``uri``).  For rewrites of whole fragments (compaction)."""
    ds = frag.dataset
    blobs = {f.name: f for f in ds.schema if holds_blob(f, is_blob_field)}
    for b in batches:
        names = [n for n in b.schema.names if n in blobs]
        if not names:
            yield b
            continue
        cols, fields = list(b.columns), list(b.schema)
        for n in names:
            i = b.schema.get_field_index(n)
            cols[i] = _rebuilt(frag, n, (), b.column(i), blobs[n], None)
            fields[i] = blobs[n]
        yield pa.RecordBatch.from_arrays(cols, schema=pa.schema(fields, metadata=b.schema.metadata))


def _rebuilt(
    frag: Fragment, top: str, path: tuple[str, ...], arr: pa.Array, field: pa.Field, live: np.ndarray | None
) -> pa.Array:
    """``arr`` (scanned, of dataset field ``field`` at ``path`` below column ``top``) with the blob descriptions at or
    below it as values; ``live``: the rows whose parent structs are valid."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if is_blob_field(field):
        return _values_of(frag, top, path, arr, field, live)
    if not holds_blob(field, is_blob_field):
        return arr
    below = None  # (the items of a list of blobs: each its own row)
    if pa.types.is_struct(field.type):
        valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), bool)
        below = valid if live is None else valid & live
    kids = child_fields(field.type)
    return map_child_arrays(arr, field.type, lambda c, i: _rebuilt(frag, top, (*path, kids[i].name), c, kids[i], below))


def _values_of(
    frag: Fragment, top: str, path: tuple[str, ...], desc: pa.Array, field: pa.Field, live: np.ndarray | None
) -> pa.Array:
    ds = frag.dataset
    descs = desc.to_pylist()
    if live is not None:
        descs = [d if ok else None for d, ok in zip(descs, live.tolist())]
    places: list[BlobPlace | None] = [None] * len(descs)
    hit = column_file(ds, frag, top)
    if hit is not None:
        lf, _, store, data_path, rel = hit
        where = f"{frag.where}: data file {rel}, column {'.'.join((top, *path))!r}"
        places = [place_of(ds, lf, store, data_path, d, where) for d in descs]
    external = [d is not None and d.get("kind") == KIND_EXTERNAL for d in descs]
    data = read_places([None if e else p for p, e in zip(places, external)], [(0, p.size if p else 0) for p in places])
    if not is_blob_v2(field):
        return pa.array(data, field.type)
    valid = [d is not None for d in descs]
    children = {
        "data": pa.array([None if e else x for x, e in zip(data, external)], pa.large_binary()),
        "uri": pa.array([d["blob_uri"] if e else None for d, e in zip(descs, external)], pa.string()),
        "position": pa.array([d["position"] if e else None for d, e in zip(descs, external)], pa.uint64()),
        "size": pa.array([d["size"] if e else None for d, e in zip(descs, external)], pa.uint64()),
    }
    t = field.type
    kids = [t.field(k) for k in range(t.num_fields)]
    mask = None if all(valid) else pa.array([not v for v in valid])
    return pa.StructArray.from_arrays([children[k.name] for k in kids], fields=kids, mask=mask)


def with_values(frag: Fragment, t: pa.Table) -> pa.Table:
    """``t`` (rows of ``frag`` as scans return them) with its blob descriptions as values (``with_bytes``), for
    operations that rewrite rows (update)."""
    if not t.num_rows or not any(holds_blob(f, is_blob_field) for f in frag.dataset.schema if f.name in t.column_names):
        return t
    batches = list(with_bytes(frag, iter(t.combine_chunks().to_batches())))
    return pa.Table.from_batches(batches)


def logical_values(col: pa.Array | pa.ChunkedArray, field: pa.Field) -> pa.Array | pa.ChunkedArray:
    """A blob column given as bytes (``binary`` / ``large_binary``) for a blob v2 dataset field, as the field's logical
    ``struct<data, uri, ...>`` (no URIs); anything else as it is.  Blob descriptions (what scans return) are refused:
    written as values they would lose the blobs."""
    if is_blob_field(field) and col.type in (DESCRIPTION_V2, DESCRIPTION_V1):
        raise LanceError(f"blob column {field.name!r}: descriptions ({col.type}) cannot be written as its values")
    if not is_blob_v2(field) or not (pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type)):
        return col
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array([logical_values(c, field) for c in col.chunks], field.type)
    data = col.cast(pa.large_binary())
    kids = [field.type.field(k) for k in range(field.type.num_fields)]
    children = [data if k.name == "data" else pa.nulls(len(col), k.type) for k in kids]
    mask = col.is_null() if col.null_count else None
    return pa.StructArray.from_arrays(children, fields=kids, mask=mask)


def accepts(source: pa.Field, target: pa.Field) -> bool:
    """Whether data of ``source`` is written into a blob v2 dataset field ``target`` (bytes with the blob key, as
    pylance's merge_insert takes them)."""
    return is_blob_v2(target) and field_metadata.is_blob(source)
