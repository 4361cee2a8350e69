"""Blob columns of datasets: what a scan returns for them, and their bytes on demand.

A blob column (``lance-encoding:blob`` on a binary field; at 2.2 the ``lance.blob.v2`` extension) stores its values out
of line.  As pylance 14 does, a dataset scan returns one *description* per value, never the bytes:

* 2.0 and 2.1 files: ``struct<position: uint64, size: uint64>``, the absolute byte range of the value in the data file
  (2.0 writes a null as position 1, size 0; 2.1 a null description);
* 2.2 files (blob v2): ``struct<kind: uint8, position: uint64, size: uint64, blob_id: uint32, blob_uri: string>``;
  ``kind`` 0 (inline): the bytes lie in the data file itself; 1 (packed) and 2 (dedicated): in the sidecar ``<data file
  stem>/<name>.blob`` beside the data file, ``name`` the 32 binary digits of ``blob_id`` least significant first; 3
  (external): in the object at ``blob_uri`` (position and size 0: the whole object).

``take_blobs`` returns ``BlobFile`` objects (blob_file.py) that read only the bytes asked for; ``read_blobs`` and
``read_blob_ranges`` read whole values or ranges in one planned pass. Deleted rows are never returned: indices count
live rows only, and an address or row id of a deleted row is refused, as pylance refuses it."""

from __future__ import annotations

import posixpath
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lancelot import field_metadata, versions
from lancelot.dataset.blob_file import BlobFile, check_buffer_size
from lancelot.encodings.base import FieldReader
from lancelot.encodings.structural.blob import DESCRIPTION as DESCRIPTION_V1
from lancelot.errors import CorruptFileError, LanceError
from lancelot.extension_types import map_children
from lancelot.io.source import ByteSource, open_source

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.row_selection import Rows
    from lancelot.reader import LanceFile

BLOB_V2_EXTENSION = "lance.blob.v2"
DESCRIPTION_V2 = pa.struct(
    [
        pa.field("kind", pa.uint8(), False),
        pa.field("position", pa.uint64(), False),
        pa.field("size", pa.uint64(), False),
        pa.field("blob_id", pa.uint32(), False),
        pa.field("blob_uri", pa.string(), False),
    ]
)
KIND_INLINE, KIND_PACKED, KIND_DEDICATED, KIND_EXTERNAL = 0, 1, 2, 3
_EXT_KEY = b"ARROW:extension:name"


class BlobColumnError(LanceError, ValueError):
    """The column is not a blob column, or the selection of rows is not valid."""


class NoSuchColumnError(LanceError, RuntimeError):
    """The dataset has no column of that name (pylance raises RuntimeError)."""


class DeletedRowError(LanceError, NotImplementedError):
    """A row address or row id names a deleted row (pylance refuses those takes)."""


# -- what scans return ---------------------------------------------------------------------------
def is_blob_v2(field: pa.Field) -> bool:
    """A dataset field of the blob v2 logical type (the ``lance.blob.v2`` extension)."""
    return bool(field.metadata) and field.metadata.get(_EXT_KEY) == BLOB_V2_EXTENSION.encode()


def is_blob_field(field: pa.Field) -> bool:
    """A top-level dataset field whose values are blobs (either layout)."""
    return is_blob_v2(field) or field_metadata.is_blob(field)


def scan_field(field: pa.Field) -> pa.Field:
    """The field as a dataset scan returns it: blobs as their descriptions."""
    if is_blob_v2(field):
        return description_v2(field)
    if field_metadata.is_blob(field):
        return pa.field(field.name, DESCRIPTION_V1, field.nullable, field.metadata)
    if holds_blob(field, is_blob_field):
        return map_children(field, scan_field)
    return field


def description_v2(field: pa.Field) -> pa.Field:
    """A blob v2 field as its column of descriptions (a packed struct)."""
    md = {field_metadata.PACKED_KEY: "true", field_metadata.BLOB_KEY: "true"}
    return pa.field(field.name, DESCRIPTION_V2, field.nullable, md)


def holds_blob(field: pa.Field, test: Callable[[pa.Field], bool]) -> bool:
    """Whether ``field`` or a struct field or list item below it passes ``test``."""
    if test(field):
        return True
    t = field.type
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return holds_blob(t.value_field, test)
    return pa.types.is_struct(t) and any(holds_blob(t.field(i), test) for i in range(t.num_fields))


def scan_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` as a dataset scan returns it (the same object when it holds no blob field)."""
    if not any(holds_blob(f, is_blob_field) for f in schema):
        return schema
    return pa.schema([scan_field(f) for f in schema], metadata=schema.metadata)


def _read_field(field: pa.Field) -> pa.Field:
    """A file field with its 2.0 / 2.1 blobs read as descriptions: one-column packed structs of the same pages (the blob
    page returns descriptions when asked for that type)."""
    if field_metadata.is_blob(field):
        md = {field_metadata.PACKED_KEY: "true", field_metadata.BLOB_KEY: "true"}
        return pa.field(field.name, DESCRIPTION_V1, field.nullable, md)
    return map_children(field, _read_field)


class DescribedFile:
    """A data file whose 2.0 / 2.1 blob columns read as their descriptions (other columns, and 2.2 blob v2 columns,
    which hold descriptions already, read as the file reads them)."""

    def __init__(self, lf: LanceFile) -> None:
        self.lf = lf
        self._readers: dict[str, FieldReader] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.lf, name)

    def _blob_columns(self, columns: Sequence[str] | None) -> list[str]:
        names = self.lf.schema.names if columns is None else columns
        schema = self.lf.schema
        return [c for c in names if c in schema.names and holds_blob(schema.field(c), field_metadata.is_blob)]

    def reader(self, name: str) -> FieldReader:
        """The reader of a blob column's descriptions (a one-column packed struct of the same pages)."""
        r = self._readers.get(name)
        if r is None:
            lf = self.lf
            desc = _read_field(lf.schema.field(name))
            r = self._readers[name] = lf.make_field_reader(desc)
        return r

    def _table(self, columns: Sequence[str] | None, read: Callable[[list[str]], pa.Table], blob: Any) -> pa.Table:
        cols = list(self.lf.schema.names if columns is None else columns)
        blobs = self._blob_columns(cols)
        if not blobs:
            return read(cols)
        rest = [c for c in cols if c not in blobs]
        t = read(rest)
        arrays = {c: t.column(c) for c in rest}
        for c in blobs:
            arrays[c] = self.lf.guard(blob, self.reader(c))
        fields = [scan_field(self.lf.schema.field(c)) for c in cols]
        return pa.Table.from_arrays([arrays[c] for c in cols], schema=pa.schema(fields))

    def read_range(self, start: int, stop: int, columns: Sequence[str] | None = None) -> pa.Table:
        start, stop = max(0, int(start)), min(int(stop), self.lf.num_rows)

        def blob(r: FieldReader) -> pa.Array | pa.ChunkedArray:
            return r.read(range(start, stop)) if stop > start else pa.array([], r.ctx.field.type)

        return self._table(columns, lambda cols: self.lf.read_range(start, stop, cols), blob)

    def take(self, indices: Any, columns: Sequence[str] | None = None) -> pa.Table:
        from lancelot.dataset.row_selection import sorted_unique

        rows = np.asarray(indices, dtype=np.int64).reshape(-1)
        uniq, back = sorted_unique(rows)  # a dataset take's rows come sorted and unique: kept as they are

        def blob(r: FieldReader) -> pa.Array:
            if not len(rows):
                return pa.array([], r.ctx.field.type)
            return r.read(uniq) if back is None else r.read(uniq).take(pa.array(back))

        return self._table(columns, lambda cols: self.lf.take(rows, cols), blob)


_VIEWS: weakref.WeakKeyDictionary[Any, DescribedFile] = weakref.WeakKeyDictionary()


def described(lf: LanceFile) -> LanceFile:
    """``lf`` with its blob columns read as descriptions (the view is kept with the file)."""
    if not any(holds_blob(f, field_metadata.is_blob) for f in lf.schema):
        return lf
    view = _VIEWS.get(lf)
    if view is None:
        view = _VIEWS[lf] = DescribedFile(lf)
    return view  # type: ignore[return-value]  # reads like a LanceFile (read_range, take, the rest)


# -- row selection -------------------------------------------------------------------------------
@dataclass
class SelectedRow:
    """One selected row: its fragment and physical position."""

    fragment: Fragment
    position: int


def row_list(rows: Rows) -> list[SelectedRow]:
    """The rows of a take one by one, in the order asked (duplicates repeated)."""
    flat = [SelectedRow(f, p) for f, pos in rows.groups for p in pos.tolist()]
    return flat if rows.back is None else [flat[i] for i in rows.back.tolist()]


def _selection(ids: Any, addresses: Any, indices: Any, given: str | None = None) -> tuple[str, Any]:
    if given is not None:
        if given not in ("ids", "addresses", "indices"):
            raise BlobColumnError(f"selector must be 'ids', 'addresses' or 'indices', not {given!r}")
        return given, ids
    chosen = [(k, v) for k, v in (("ids", ids), ("addresses", addresses), ("indices", indices)) if v is not None]
    if len(chosen) != 1:
        raise BlobColumnError("Exactly one of ids, indices, or addresses must be specified")
    return chosen[0]


def selected(ds: LanceDataset, kind: str, values: Any) -> Rows:
    """The rows a blob API selects (dataset/row_selection.py maps them, as for ``take``): indices among the live rows,
    row addresses, or row ids; out of range is pylance's ValueError, an address or row id of a deleted row its
    NotImplementedError / ValueError."""
    from lancelot.dataset.row_selection import addresses_of, as_integers, by_address, by_index

    where = f"dataset {ds.uri!r} version {ds.version}"
    if kind == "indices":
        return by_index(ds, values, "index", error=BlobColumnError)
    addr = as_integers(values, where, "row selection").astype(np.uint64, copy=False)
    ids, by_id = addr, kind == "ids" and ds.has_stable_row_ids
    if by_id:
        addr = addresses_of(ds, ids, error=BlobColumnError)

    def deleted(a: int) -> LanceError:  # pylance: a ValueError for a row id, a NotImplementedError for an address
        if by_id:
            return BlobColumnError(f"{where}: row id {int(ids[addr == a][0])} was deleted or not found")
        return DeletedRowError(
            f"{where}: row {a} is deleted. A take operation that includes row addresses must not target deleted rows"
        )

    return by_address(ds, addr, deleted, error=BlobColumnError)


# -- where the bytes are --------------------------------------------------------------------------
@dataclass
class BlobPlace:
    """The bytes of one blob: ``open()`` gives their source (named ``key``), at ``offset``, ``size`` bytes long."""

    open: Callable[[], ByteSource]
    offset: int
    size: int
    where: str
    shared: bool  # the source is the data file's own (never closed by a BlobFile)
    key: str


def blob_file_name(blob_id: int) -> str:
    """The sidecar name of a blob id: its 32 binary digits, least significant first."""
    return format(int(blob_id) & 0xFFFFFFFF, "032b")[::-1]


def sidecar_path(data_path: str, blob_id: int) -> str:
    """The sidecar of a packed or dedicated blob of the data file at ``data_path``."""
    stem = data_path[: -len(".lance")] if data_path.endswith(".lance") else data_path
    return f"{stem}/{blob_file_name(blob_id)}.blob"


def column_file(ds: LanceDataset, frag: Fragment, top: str) -> tuple[LanceFile, Any, Any, str, str] | None:
    """The data file of ``frag`` holding column ``top``: its reader, its column names, its store, its path in the
    store and in the fragment (None: the column has no file there)."""
    for df, (lf, names) in zip(frag.data_fragment.files, frag.file_columns()):
        if top in names:
            store, prefix = ds.base_store(df, frag.where)
            return lf, names, store, posixpath.join(prefix, df.path), df.path
    return None


def resolve_blob_column(ds: LanceDataset, column: str) -> tuple[str, list[str], pa.Field]:
    """The top-level column, the path of struct fields below it and the field of a blob column named ``column``
    (``"img"``, or ``"s.img"`` for a blob field inside a struct, as pylance takes)."""
    names = ds.schema.names
    top, rest = (column, []) if column in names else (column.split(".")[0], column.split(".")[1:])
    if top not in names:
        raise NoSuchColumnError(f"Field {column!r} not found. Available fields: {names}")
    f = ds.schema.field(top)
    for seg in rest:
        kids = [f.type.field(i).name for i in range(f.type.num_fields)] if pa.types.is_struct(f.type) else []
        if seg not in kids:
            raise NoSuchColumnError(f"Field {column!r} not found. Available fields: {names}")
        f = f.type.field(seg)
    if not is_blob_field(f):
        raise BlobColumnError(f"dataset {ds.uri!r}: the column {column!r} is not a blob column")
    return top, rest, f


def descend(desc: dict[str, Any] | None, path: Sequence[str]) -> dict[str, Any] | None:
    """The description at ``path`` below a scanned struct value (None below a null struct)."""
    for seg in path:
        if desc is None:
            return None
        desc = desc.get(seg)
    return desc


def places_in(
    ds: LanceDataset, top: str, rows: list[SelectedRow], descs: list[dict[str, Any] | None], column: str
) -> list[BlobPlace | None]:
    """Where the blobs of descriptions in hand lie (``descs[i]`` read from row ``rows[i]``'s data file of column
    ``top``; None: a null)."""
    out: list[BlobPlace | None] = [None] * len(rows)
    files: dict[int, tuple[LanceFile, Any, Any, str, str] | None] = {}
    for i, (r, d) in enumerate(zip(rows, descs)):
        if d is None:
            continue
        frag = r.fragment
        if frag.fragment_id not in files:
            files[frag.fragment_id] = column_file(ds, frag, top)
        hit = files[frag.fragment_id]
        assert hit is not None
        lf, _, store, data_path, rel = hit
        where = f"{frag.where}: data file {rel}, column {column!r}, row {r.position}"
        out[i] = place_of(ds, lf, store, data_path, d, where)
    return out


def blob_places(ds: LanceDataset, column: str, rows: Rows) -> list[BlobPlace | None]:
    """Where each selected row's blob lies (None: a null blob), in the order asked: the descriptions of each fragment's
    rows read once, in one take of its data file."""
    top, path, _ = resolve_blob_column(ds, column)
    flat: list[BlobPlace | None] = []
    for frag, pos in rows.groups:
        hit = column_file(ds, frag, top)
        if hit is None:
            flat.extend([None] * len(pos))
            continue
        lf, names, store, data_path, rel = hit
        desc = described(lf).take(pos, [names[top]]).column(0).combine_chunks()
        for row, d in zip(pos.tolist(), desc.to_pylist()):
            where = f"{frag.where}: data file {rel}, column {column!r}, row {row}"
            flat.append(place_of(ds, lf, store, data_path, descend(d, path), where))
    return flat if rows.back is None else [flat[i] for i in rows.back.tolist()]


def place_of(
    ds: LanceDataset, lf: LanceFile, store: Any, data_path: str, d: dict[str, Any] | None, where: str
) -> BlobPlace | None:
    if d is None:
        return None
    position, size = int(d["position"]), int(d["size"])
    kind = d.get("kind")
    if kind is None:  # 2.0 / 2.1 description
        if not versions.parse(lf.version).structural and position == 1 and size == 0:
            return None  # 2.0 writes a null as (1, 0)
        kind = KIND_INLINE
    if kind == KIND_INLINE:
        # a source of its own: the dataset's open data files may be closed (a bounded cache) while
        # BlobFile objects live on
        file_size = lf.size
        opener: Callable[[], ByteSource] = lambda: store.open_input(data_path, file_size)  # noqa: E731
        _check_range(position, size, file_size, where, lf.path)
        return BlobPlace(opener, position, size, where, False, lf.path)
    if kind in (KIND_PACKED, KIND_DEDICATED):
        path = sidecar_path(data_path, d["blob_id"])

        def sidecar() -> ByteSource:
            try:
                src: ByteSource = store.open_input(path)
            except FileNotFoundError:
                raise CorruptFileError(f"{where}: blob file {path} is missing", path=path) from None
            return _checked_source(src, position, size, where, path)

        return BlobPlace(sidecar, position, size, where + f" (blob file {path})", False, store.full_path(path))
    if kind == KIND_EXTERNAL:
        uri = str(d["blob_uri"])

        def external() -> ByteSource:
            src = open_source(uri, ds.storage_options)
            return _checked_source(src, position, size, where, uri)

        if position == 0 and size == 0:  # the whole object: its size is known once it is opened
            src = external()
            src.close()
            return BlobPlace(external, 0, int(src.size), where + f" (external {uri})", False, uri)
        return BlobPlace(external, position, size, where + f" (external {uri})", False, uri)
    raise CorruptFileError(f"{where}: blob description of unknown kind {kind}")


def _check_range(position: int, size: int, file_size: int, where: str, path: str, file: str = "the file") -> None:
    """A blob description's byte range lies inside its file (``path``, of ``file_size`` bytes)."""
    if position < 0 or size < 0 or position + size > file_size:
        raise CorruptFileError(
            f"{where}: blob description [{position}, {position + size}) lies outside {file} of {file_size} bytes",
            path=path,
        )


def _checked_source(src: ByteSource, position: int, size: int, where: str, path: str) -> ByteSource:
    try:
        _check_range(position, size, src.size, where, path, path)
    except CorruptFileError:
        src.close()
        raise
    return src


# -- the API (LanceDataset.take_blobs / read_blobs / read_blob_ranges) ------------------------------
def choose(
    ds: LanceDataset, blob_column: str, ids: Any, addresses: Any, indices: Any, given: str | None = None
) -> Rows:
    """The rows selected by exactly one of ``ids``, ``addresses``, ``indices`` of a blob column (or by ``ids`` as the
    ``given`` kind)."""
    kind, values = _selection(ids, addresses, indices, given)
    resolve_blob_column(ds, blob_column)
    return selected(ds, kind, values)


def take_blobs(ds: LanceDataset, blob_column: str, rows: Rows, buffer_size: int) -> list[BlobFile | None]:
    """One lazy ``BlobFile`` per selected row (None for a null blob)."""
    buffer_size = check_buffer_size(buffer_size)
    return [
        None
        if p is None
        else BlobFile(p.open, p.offset, p.size, buffer_size=buffer_size, where=p.where, shared=p.shared)
        for p in blob_places(ds, blob_column, rows)
    ]


def read_places(places: list[BlobPlace | None], spans: list[tuple[int, int]]) -> list[bytes | None]:
    """The bytes of ``spans[i]`` (blob-local offset, length) of ``places[i]``, one pass per source."""
    out: list[bytes | None] = [None] * len(places)
    groups: dict[str, tuple[ByteSource, bool, list[int]]] = {}
    try:
        for i, p in enumerate(places):
            if p is None:
                continue
            if spans[i][1] == 0:
                out[i] = b""
                continue
            if p.key not in groups:
                groups[p.key] = (p.open(), p.shared, [])
            groups[p.key][2].append(i)
        for src, _, members in groups.values():
            reqs = []
            for i in members:
                p = places[i]
                assert p is not None
                _check_range(p.offset, p.size, src.size, p.where, src.path, src.path)  # each place of a shared source
                reqs.append((p.offset + spans[i][0], spans[i][1]))
            for i, buf in zip(members, src.read_ranges(reqs)):
                out[i] = bytes(buf)
    finally:
        for src, shared, _ in groups.values():
            if not shared:
                src.close()
    return out


def read_blobs(
    ds: LanceDataset, blob_column: str, rows: Rows, preserve_order: bool | None
) -> list[tuple[int, bytes | None]]:
    """``(row address, bytes)`` per selected row (None for a null blob); reads are planned per source in one call (no
    scheduler buffer to size)."""
    places = blob_places(ds, blob_column, rows)
    data = read_places(places, [(0, p.size if p else 0) for p in places])
    out = list(zip(rows.addresses().tolist(), data))
    return out if preserve_order is not False else sorted(out, key=lambda x: x[0])


def read_blob_ranges(
    ds: LanceDataset,
    blob_column: str,
    requests: Sequence[tuple[int, int, int]],
    selector: str,
    preserve_order: bool | None,
) -> list[tuple[int, int, bytes | None]]:
    """``(request index, row address, bytes)`` per ``(row, offset, length)`` request."""
    reqs = [(int(r), int(o), int(n)) for r, o, n in requests]
    rows = choose(ds, blob_column, [r for r, _, _ in reqs], None, None, given=selector)
    places = blob_places(ds, blob_column, rows)
    addresses = rows.addresses().tolist()
    for i, ((_, off, ln), p) in enumerate(zip(reqs, places)):
        if off < 0 or ln < 0:
            raise BlobColumnError(f"blob range request {i}: offset and length must be non-negative")
        if p is not None and off + ln > p.size:
            raise BlobColumnError(
                f"blob range request {i} for row address {addresses[i]} is invalid: "
                f"range end {off + ln} exceeds blob size {p.size}"
            )
    data = read_places(places, [(o, n) for _, o, n in reqs])
    out = [(i, a, d) for i, (a, d) in enumerate(zip(addresses, data))]
    return out if preserve_order is not False else sorted(out, key=lambda x: (x[1], x[0]))
