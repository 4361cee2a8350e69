"""``LanceDataset``: one version of a Lance dataset, read through its manifest (table format).

``lancelot.dataset(uri, version=None)`` opens the latest version (or ``version``); reads see
exactly that version's fragments, minus deleted rows.  ``delete`` commits a new version.
"""

from __future__ import annotations

import datetime as _dt
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import ArrayLike

from lancelot.dataset.commit import commit_transaction, list_versions, load_manifest
from lancelot.dataset.deletion import deletion_path, new_deletion_file, serialize_deletions
from lancelot.dataset.fragment import DATA_DIR, Fragment
from lancelot.dataset.manifest import check_reader_flags, data_version
from lancelot.dataset.operation import build_delete
from lancelot.dataset.scan import check_filter
from lancelot.dataset.store import ObjectStore
from lancelot.dataset.transaction import new_transaction
from lancelot.errors import CorruptFileError, LanceError, LanceFileNotFoundError
from lancelot.extension_types import dataset_schema
from lancelot.format.pb import file_pb2, table_pb2
from lancelot.schema import from_descriptor

if TYPE_CHECKING:
    from lancelot.dataset.blob_file import BlobFile
    from lancelot.dataset.cleanup import CleanupStats
    from lancelot.dataset.compact import CompactionMetrics, Optimizer
    from lancelot.reader import LanceFile

#: data files kept open across dataset objects (immutable: their names are never reused)
MAX_OPEN_FILES = 128
_FILES: OrderedDict[tuple[str, str, str], LanceFile] = OrderedDict()
_FILES_LOCK = threading.Lock()
#: fragments a scan reads at once
FRAGMENT_READAHEAD = 2


_POOL: ThreadPoolExecutor | None = None


def _fragment_pool() -> ThreadPoolExecutor:
    """Fragments read side by side (their fields decode on the reader's own pool)."""
    global _POOL
    with _FILES_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=FRAGMENT_READAHEAD, thread_name_prefix="lancelot-fragments")
        return _POOL


def manifest_schema(m: table_pb2.Manifest) -> pa.Schema:
    fd = file_pb2.FileDescriptor()
    fd.schema.fields.extend(m.fields)
    for k, v in m.schema_metadata.items():
        fd.schema.metadata[k] = v
    return dataset_schema(from_descriptor(fd))  # JSON columns: arrow.json


def _version_time(ns: int) -> _dt.datetime:
    """A manifest's timestamp as pylance's ``versions()`` gives it: local time, whole seconds plus
    microseconds truncated, with its float arithmetic on the nanoseconds (the two agree to the microsecond)."""
    return _dt.datetime.fromtimestamp(ns // 1e9) + _dt.timedelta(microseconds=(ns % 1e9) // 1e3)


class LanceDataset:
    """One version of a dataset (like ``lance.dataset(...)``)."""

    def __init__(
        self,
        uri: str | os.PathLike[str],
        *,
        version: int | None = None,
        storage_options: dict[str, Any] | None = None,
        _store: ObjectStore | None = None,
    ) -> None:
        self._store = _store or ObjectStore(uri, storage_options)
        self.uri: str = self._store.uri
        self.storage_options = storage_options
        self._versions = list_versions(self._store, self.uri)
        if self._versions.latest is None:
            raise LanceError(f"dataset {self.uri!r} does not exist (no manifest in _versions/)")
        v = self._versions.latest if version is None else int(version)
        self._mf = load_manifest(self._store, self.uri, self._versions, v)
        self.manifest: table_pb2.Manifest = self._mf.manifest
        self.version: int = int(self.manifest.version)
        check_reader_flags(self.manifest, f"dataset {self.uri!r} version {self.version}")
        self._schema: pa.Schema | None = None  # built on first use (count_rows needs none)
        self._index_fields()
        self._bases: dict[int, ObjectStore] = {}
        self._fragments = [Fragment(self, f) for f in self.manifest.fragments]
        #: the live row count when every fragment's manifest entry gives it (else counted on demand)
        self._live_rows: int | None = None
        known = [f._live for f in self._fragments if f._live is not None]
        if len(known) == len(self._fragments):
            self._live_rows = sum(known)

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of this version (from the manifest's fields)."""
        if self._schema is None:
            try:
                self._schema = manifest_schema(self.manifest)
            except LanceError as e:
                raise type(e)(f"dataset {self.uri!r} version {self.version}: schema: {e.message}") from None
        return self._schema

    def _index_fields(self) -> None:
        """Top-level field name of every field id, and the ids under each top-level field."""
        parent = {int(f.id): int(f.parent_id) for f in self.manifest.fields}
        name = {int(f.id): f.name for f in self.manifest.fields}
        self._top_by_id: dict[int, str] = {}
        self._top_of_id: dict[int, str] = {}
        self._subtree_ids: dict[str, set[int]] = {}
        where = f"dataset {self.uri!r} version {self.version}: schema"
        if len(parent) != len(self.manifest.fields):
            raise CorruptFileError(f"{where}: field ids repeat")
        for fid, p in parent.items():
            if p != -1 and p not in parent:
                raise CorruptFileError(f"{where}: field {fid} names parent {p}, which is not in the schema")
        for fid in parent:
            top, hops = fid, 0
            while parent.get(top, -1) != -1 and hops < 256:
                top, hops = parent[top], hops + 1
            if parent.get(top, -1) == -1:
                self._subtree_ids.setdefault(name[top], set()).add(fid)
                self._top_of_id[fid] = name[top]
                if top == fid:
                    self._top_by_id[fid] = name[fid]

    def _base(self, base_id: int | None, where: str) -> tuple[ObjectStore, str]:
        """(store, path prefix) of the files of a base path (None: this dataset, under data/).

        Files may live outside the dataset's root only where the manifest declares a base path
        (shallow clones): ``base_paths[id]`` is a dataset root (files under data/) or a directory."""
        if base_id is None:
            return self._store, f"{DATA_DIR}/"
        bp = next((b for b in self.manifest.base_paths if b.id == base_id), None)
        if bp is None:
            raise CorruptFileError(f"{where}: base path id {base_id} is not declared by the manifest")
        store = self._bases.get(base_id)
        if store is None:
            try:
                store = self._bases[base_id] = ObjectStore(bp.path, self.storage_options)
            except LanceError as e:
                raise LanceError(f"{where}: base path {bp.path!r}: {e}") from None
        return store, f"{DATA_DIR}/" if bp.is_dataset_root else ""

    def _open_file(self, path: str, where: str, store: ObjectStore | None = None) -> LanceFile:
        """The data file at ``path`` (opened once per process: data files never change)."""
        from lancelot.reader import LanceFile

        store = store or self._store
        key = (store.uri, path, repr(sorted((self.storage_options or {}).items())))
        with _FILES_LOCK:
            lf = _FILES.get(key)
            if lf is not None:
                _FILES.move_to_end(key)
                return lf
        try:
            lf = LanceFile(store.open_input(path))
        except FileNotFoundError:
            raise LanceFileNotFoundError(f"{where}: data file {path} is missing", path=path) from None
        except LanceError as e:
            raise type(e)(f"{where}: data file {path}: {e.message}", path=e.path) from None
        with _FILES_LOCK:
            lf = _FILES.setdefault(key, lf)
            while len(_FILES) > MAX_OPEN_FILES:
                _FILES.popitem(last=False)[1].close()
        return lf

    def __repr__(self) -> str:
        return f"LanceDataset({self.uri!r}, version={self.version}, fragments={len(self._fragments)})"

    # -- versions ----------------------------------------------------------------------------
    @property
    def latest_version(self) -> int:
        latest = list_versions(self._store, self.uri).latest
        if latest is None:
            raise LanceError(f"dataset {self.uri!r} no longer exists (no manifest in _versions/)")
        return int(latest)

    def versions(self) -> list[dict[str, Any]]:
        out = []
        versions = list_versions(self._store, self.uri)
        for v in sorted(versions.names):
            m = load_manifest(self._store, self.uri, versions, v).manifest
            ts = _version_time(m.timestamp.seconds * 1_000_000_000 + m.timestamp.nanos)
            out.append(
                {
                    "version": v,
                    "timestamp": ts,
                    "metadata": dict(m.table_metadata),
                    "writer": f"{m.writer_version.library} {m.writer_version.version}",
                }
            )
        return out

    def checkout_version(self, version: int) -> LanceDataset:
        return LanceDataset(self.uri, version=version, storage_options=self.storage_options, _store=self._store)

    @property
    def data_storage_version(self) -> str:
        """As pylance reports it (manifests before Lance 0.16 have none: from their files or flags)."""
        return data_version(self.manifest, f"dataset {self.uri!r} version {self.version}")

    # -- reads -------------------------------------------------------------------------------
    def get_fragments(self) -> list[Fragment]:
        return list(self._fragments)

    def get_fragment(self, fragment_id: int) -> Fragment | None:
        return next((f for f in self._fragments if f.fragment_id == fragment_id), None)

    def count_rows(self, filter: pc.Expression | None = None) -> int:
        if filter is None:
            if self._live_rows is None:
                self._live_rows = sum(f.count_rows() for f in self._fragments)
            return self._live_rows
        filter = check_filter(filter)
        return sum(f.count_rows(filter) for f in self._fragments)

    def _empty(self, columns: Sequence[str] | None) -> pa.Table:
        cols = list(self.schema.names) if columns is None else list(columns)
        for c in cols:
            if c not in self.schema.names:
                raise LanceError(f"dataset {self.uri!r}: no column named {c!r} (columns: {self.schema.names})")
        from lancelot.dataset.blob import scan_schema  # blobs: descriptions

        scanned = scan_schema(self.schema)
        return pa.schema([scanned.field(c) for c in cols], metadata=self.schema.metadata).empty_table()

    def to_table(self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None) -> pa.Table:
        """The live rows of every fragment, in order; fragments are read two at a time (like
        pylance's fragment read-ahead), so one fragment's deletion filter overlaps the next's decode.
        Fragments with deletions to filter start first: a scan does not end on one thread filtering."""
        filter = check_filter(filter)
        frags = self._fragments
        if len(frags) > 1 and self._store.is_local:
            pool = _fragment_pool()
            order = sorted(range(len(frags)), key=lambda i: -frags[i].filter_cost() if filter is None else 0)
            futures = {i: pool.submit(frags[i].read, columns, filter) for i in order}
            parts = [futures[i].result() for i in range(len(frags))]
        else:
            parts = [f.read(columns, filter) for f in frags]
        parts = [p for p in parts if p.num_rows] or [self._empty(columns)]
        return pa.concat_tables(parts)

    def to_batches(
        self, batch_size: int = 65536, columns: Sequence[str] | None = None, filter: pc.Expression | None = None
    ) -> Iterator[pa.RecordBatch]:
        filter = check_filter(filter)
        for f in self._fragments:
            yield from f.to_batches(batch_size, columns, filter)

    def scanner(
        self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None
    ) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(
            self._empty(columns).schema, self.to_batches(columns=columns, filter=filter)
        )

    def take(self, indices: ArrayLike | pa.Array | pa.ChunkedArray, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows by index over the live rows of all fragments in order (any order, duplicates)."""
        idx = np.asarray(indices.to_numpy() if isinstance(indices, pa.Array | pa.ChunkedArray) else indices)
        idx = idx.astype(np.int64, copy=False).reshape(-1)
        counts = np.array([f.count_rows() for f in self._fragments], dtype=np.int64)
        total = int(counts.sum())
        if idx.size and (idx.min() < 0 or idx.max() >= total):
            bad = int(idx[(idx < 0) | (idx >= total)][0])
            raise LanceError(
                f"dataset {self.uri!r} version {self.version}: take index {bad} is out of range for {total} rows"
            )
        if not idx.size:
            return self._empty(columns)
        starts = np.concatenate([[0], np.cumsum(counts)])
        which = np.searchsorted(starts, idx, side="right") - 1
        order = np.argsort(which, kind="stable")
        parts = []
        for fi in np.unique(which):
            sel = order[which[order] == fi]
            parts.append(self._fragments[fi].take(idx[sel] - starts[fi], columns))
        t = pa.concat_tables(parts)
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
        return t.take(pa.array(inverse))

    def head(self, n: int, columns: Sequence[str] | None = None) -> pa.Table:
        return self.take(np.arange(min(n, self.count_rows())), columns)

    # -- writes ------------------------------------------------------------------------------
    def delete(self, predicate: pc.Expression) -> LanceDataset:
        """Delete the rows matching ``predicate`` (a pyarrow.compute.Expression) as a new version;
        this object then shows the new version (as pylance's ``delete``) and is returned."""
        predicate = check_filter(predicate)
        if predicate is None:
            raise LanceError("delete needs a predicate")
        from lancelot.dataset.scan import apply_filter, filter_columns

        cols = filter_columns(predicate, self.schema.names)
        updated, removed = [], []
        for f in self._fragments:
            t = f._read_physical(cols, 0, f.physical_rows)
            t = t.append_column("__lancelot_pos", pa.array(np.arange(f.physical_rows, dtype=np.int64)))
            newly = apply_filter(t, predicate, f.where).column("__lancelot_pos").to_numpy()
            if not len(newly):
                continue
            old = f.deleted_positions().astype(np.int64)
            allpos = np.union1d(old, newly)
            if len(allpos) == len(old):
                continue
            if len(allpos) >= f.physical_rows:
                removed.append(f.fragment_id)
                continue
            ftype, data = serialize_deletions(allpos)
            d = new_deletion_file(ftype, self.version, len(allpos))
            self._store.put(deletion_path(f.fragment_id, d), data)
            nf = table_pb2.DataFragment()
            nf.CopyFrom(f._pb)
            nf.deletion_file.CopyFrom(d)
            updated.append(nf)
        if not updated and not removed:
            return self
        txn = new_transaction(self.version)
        txn.delete.updated_fragments.extend(updated)
        txn.delete.deleted_fragment_ids.extend(removed)
        txn.delete.predicate = str(predicate)
        v = commit_transaction(
            self._store, self.uri, txn, build_delete(updated, removed, self.uri), read_version=self.version
        )
        self.__dict__.update(self.checkout_version(v).__dict__)  # like pylance: this object moves on
        return self

    # -- maintenance (compact.py, cleanup.py) ---------------------------------------------------
    def compact_files(self, **options: Any) -> CompactionMetrics:
        """Merge small fragments and materialise deletions (pylance's ``optimize.compact_files``)."""
        from lancelot.dataset.compact import compact_files

        return compact_files(self, **options)

    @property
    def optimize(self) -> Optimizer:
        from lancelot.dataset.compact import Optimizer

        return Optimizer(self)

    def cleanup_old_versions(
        self, older_than: _dt.timedelta | None = None, *, delete_unverified: bool = False, **options: Any
    ) -> CleanupStats:
        """Remove versions older than ``older_than`` and the files only they use (pylance's name)."""
        from lancelot.dataset.cleanup import cleanup_old_versions

        return cleanup_old_versions(self, older_than, delete_unverified=delete_unverified, **options)

    # -- blobs (dataset/blob.py) ---------------------------------------------------------------
    def take_blobs(
        self,
        blob_column: str,
        ids: Any = None,
        addresses: Any = None,
        indices: Any = None,
        *,
        buffer_size: int = 512 * 1024,
    ) -> list[BlobFile | None]:
        """Lazy file-like ``BlobFile`` objects for the blobs of the selected rows (exactly one of
        ``ids``, ``addresses``, ``indices``); None for a null blob."""
        from lancelot.dataset import blob

        return blob.take_blobs(self, blob_column, ids, addresses, indices, buffer_size=buffer_size)

    def read_blobs(
        self,
        blob_column: str,
        ids: Any = None,
        addresses: Any = None,
        indices: Any = None,
        *,
        io_buffer_size: int | None = None,
        preserve_order: bool | None = None,
    ) -> list[tuple[int, bytes | None]]:
        """``(row address, bytes)`` of each selected row's blob (None for a null blob)."""
        from lancelot.dataset import blob

        return blob.read_blobs(
            self, blob_column, ids, addresses, indices, io_buffer_size=io_buffer_size, preserve_order=preserve_order
        )

    def read_blob_ranges(
        self,
        blob_column: str,
        requests: Sequence[tuple[int, int, int]],
        *,
        selector: str,
        io_buffer_size: int | None = None,
        preserve_order: bool | None = None,
    ) -> list[tuple[int, int, bytes | None]]:
        """``(request index, row address, bytes)`` per ``(row, offset, length)`` request."""
        from lancelot.dataset import blob

        return blob.read_blob_ranges(
            self, blob_column, requests, selector=selector, io_buffer_size=io_buffer_size, preserve_order=preserve_order
        )


def dataset(
    uri: str | os.PathLike[str], *, version: int | None = None, storage_options: dict[str, Any] | None = None
) -> LanceDataset:
    """Open a Lance dataset (a local path or an fsspec URL) at its latest version or ``version``."""
    return LanceDataset(uri, version=version, storage_options=storage_options)
