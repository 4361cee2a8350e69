"""Reading a Lance dataset through Spark: one pinned version, partitions of live rows per fragment.

The driver opens the dataset once, when the scan is planned, and pins that version (or the one the ``version`` /
``timestamp`` options name): every task then reads exactly that version, whatever commits happen meanwhile.  A partition
is a list of ``(fragment id, first live row, end live row)`` slices, so deleted rows are never returned
(``Fragment.read_range`` counts live rows).  With filters pushed down, each fragment's zone maps (lancelot's extension
in the files it wrote) drop the physical row ranges they prove empty; those are mapped to live-row ranges through the
fragment's deletion vector before partitions are cut."""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lancelot.errors import LanceError
from lancelot.spark.partitions import SlicesPartition, pack_slices

if TYPE_CHECKING:
    from lancelot.dataset import LanceDataset
    from lancelot.spark.row_filter import RowFilter

#: a partition reads at most this many rows per Fragment.read_range call (then sliced into batches)
READ_ROWS = 256 * 1024


@dataclass(frozen=True)
class FragmentInfo:
    """What planning needs of one fragment."""

    fragment_id: int
    live_rows: int
    physical_rows: int
    size: int  # bytes of its data files (an estimate of its rows' cost)


class DatasetPartition(SlicesPartition):
    """Live-row ranges of fragments of the pinned version: ``slices`` = ((fragment id, start, stop), ...)."""


#: datasets opened in this process, by (uri, version, storage options): Python workers are reused across tasks
_OPENED: dict[tuple[str, int, str], LanceDataset] = {}
_OPENED_MAX = 16
_LOCK = threading.Lock()


def stamp_of(ds: LanceDataset) -> tuple[int, int]:
    """What tells two manifests of one version number apart (a dataset deleted and written again)."""
    ts = ds.manifest.timestamp
    return int(ts.seconds), int(ts.nanos)


def _key(uri: str, version: int, storage: dict[str, Any] | None) -> tuple[str, int, str]:
    return (uri, int(version), json.dumps(storage or {}, sort_keys=True))


def remember(uri: str, storage: dict[str, Any] | None, ds: LanceDataset) -> None:
    """Keep a version opened on the driver (pin_version) for this process's later open_version and pin_version calls:
    pyspark plans the scan (reader, then partitions) in one Python process, and reuses that process for the next
    queries."""
    with _LOCK:
        if len(_OPENED) >= _OPENED_MAX:
            _OPENED.pop(next(iter(_OPENED)))
        _OPENED[_key(uri, ds.version, storage)] = ds


def open_version(
    uri: str, version: int, storage: dict[str, Any] | None, stamp: tuple[int, int] | None = None
) -> LanceDataset:
    """A dataset version, opened once per Python worker; ``stamp`` (``stamp_of`` when the scan was planned) makes sure
    it is the same manifest, not a new dataset written at the same path since."""
    from lancelot.dataset import dataset

    key = _key(uri, version, storage)
    with _LOCK:
        ds = _OPENED.get(key)
    if ds is not None and (stamp is None or stamp_of(ds) == tuple(stamp)):
        return ds
    ds = dataset(uri, version=int(version), storage_options=storage)
    if stamp is not None and stamp_of(ds) != tuple(stamp):
        raise LanceError(
            f"dataset {uri!r} version {version} changed while it was being read (the dataset "
            "was deleted and written again): run the query again"
        )
    with _LOCK:
        if len(_OPENED) >= _OPENED_MAX:
            _OPENED.pop(next(iter(_OPENED)))
        _OPENED[key] = ds
    return ds


def _still_current(uri: str, storage: dict[str, Any] | None, version: int | None) -> LanceDataset | None:
    """The dataset this process opened at ``version`` (None: the latest one now), if that version's manifest is still
    the one it read (same stamp); else None.  Costs a listing of ``_versions/`` and one manifest read, not a new
    LanceDataset (whose fragments keep their open files and zone maps)."""
    from lancelot.dataset.commit import list_versions, load_manifest
    from lancelot.dataset.store import ObjectStore

    store = ObjectStore(uri, storage)
    versions = list_versions(store, store.uri)
    v = versions.latest if version is None else int(version)
    if v is None or v not in versions.names:
        return None
    with _LOCK:
        ds = _OPENED.get(_key(uri, v, storage))
    if ds is None:
        return None
    ts = load_manifest(store, store.uri, versions, v).manifest.timestamp
    return ds if stamp_of(ds) == (int(ts.seconds), int(ts.nanos)) else None


def pin_version(
    uri: str, storage: dict[str, Any] | None, version: int | None, timestamp: dt.datetime | None
) -> LanceDataset:
    """The version to read: ``version``, the latest one committed at or before ``timestamp``, or the latest (the one
    this process opened before when its manifest is unchanged)."""
    from lancelot.dataset import dataset

    if timestamp is None:
        ds = _still_current(uri, storage, version)
        if ds is not None:
            return ds
    ds = dataset(uri, version=version, storage_options=storage)
    if timestamp is None:
        return ds
    from lancelot.dataset.commit import list_versions, load_manifest

    store = ds.store
    versions = list_versions(store, ds.uri)
    best = None
    for v in sorted(versions.names):
        ts = load_manifest(store, ds.uri, versions, v).manifest.timestamp
        # to the millisecond, rounded down, after a microsecond less: a version's time as printed by pylance
        # (which may lose the last microsecond in a float, .123000 as .122999) still selects it
        us = int(ts.seconds) * 10**6 + int(ts.nanos) // 1000 - 1
        t = dt.datetime.fromtimestamp(0, dt.timezone.utc) + dt.timedelta(milliseconds=us // 1000)
        if t <= timestamp:
            best = v
    if best is None:
        raise LanceError(f"dataset {uri!r} has no version committed at or before {timestamp.isoformat()}")
    return ds.checkout_version(int(best))


def fragment_bytes(ds: LanceDataset, frag: Any) -> int:
    """The bytes of a fragment's data files (from the manifest; listed in the store when it does not say)."""
    files = frag.metadata.files
    size = sum(int(d.file_size_bytes or 0) for d in files)
    return size or sum(ds.store.size(f"data/{d.path}") for d in files)


def fragment_infos(ds: LanceDataset) -> list[FragmentInfo]:
    return [
        FragmentInfo(f.fragment_id, f.count_rows(), f.physical_rows, fragment_bytes(ds, f)) for f in ds.get_fragments()
    ]


def _to_live(ranges: list[tuple[int, int]], deleted: np.ndarray) -> list[tuple[int, int]]:
    """Physical row ranges as ranges of live-row positions (deleted positions sorted ascending)."""
    if not len(deleted):
        return ranges
    d = np.asarray(deleted, dtype=np.int64)
    out = []
    for a, b in ranges:
        la, lb = a - int(np.searchsorted(d, a)), b - int(np.searchsorted(d, b))
        if la < lb:
            out.append((la, lb))
    return out


def live_ranges(ds: LanceDataset, fragment_id: int, zone_filters: list[tuple[Any, ...]]) -> list[tuple[int, int]]:
    """The live-row ranges of one fragment that the zone maps cannot rule out."""
    frag = ds.get_fragment(fragment_id)
    if frag is None:
        raise LanceError(f"dataset {ds.uri!r} version {ds.version} has no fragment {fragment_id}")
    top = [(f[0][0], *f[1:]) if isinstance(f[0], tuple) and len(f[0]) == 1 else f for f in zone_filters]
    usable = [f for f in top if isinstance(f[0], str)]
    if not usable:
        return [(0, frag.count_rows())]
    return _to_live(frag.zone_ranges(usable), frag.deleted_positions())


def plan(
    infos: Sequence[FragmentInfo],
    ranges: dict[int, list[tuple[int, int]]] | None,
    *,
    rows_per_partition: int | None,
    bytes_per_partition: int,
    min_partitions: int,
    min_partition_bytes: int,
) -> list[DatasetPartition]:
    """Cut the fragments' live-row ranges into partitions of about one budget each (partitions.pack_slices: rows, or
    bytes estimated from each fragment's data size per physical row)."""
    units = [(i.fragment_id, i.physical_rows, i.size, i.live_rows) for i in infos]
    packed = pack_slices(units, ranges, rows_per_partition, bytes_per_partition, min_partitions, min_partition_bytes)
    return [DatasetPartition(p) for p in packed]


def read_partition(
    uri: str,
    version: int,
    storage: dict[str, Any] | None,
    stamp: tuple[int, int] | None,
    partition: DatasetPartition,
    columns: list[str],
    convert: Callable[[pa.Table], pa.RecordBatch],
    batch_size: int,
    row_filter: RowFilter | None = None,
    row_address: bool = False,
) -> Iterator[pa.RecordBatch]:
    """The partition's rows in batches of ``batch_size`` (``convert``: a Table -> Spark's RecordBatch); with
    ``row_filter`` (lancelot/spark/row_filter.py) only the rows passing it; with ``row_address`` a last column
    ``_rowaddr`` (fragment id << 32 | physical row position, pylance's row address)."""
    from lancelot.spark.row_filter import filtered_read

    if row_address and row_filter is not None:
        raise LanceError("row addresses are read without filters", path=uri)
    ds = open_version(uri, version, storage, stamp)
    for fid, start, stop in partition.slices:
        frag = ds.get_fragment(fid)
        if frag is None:
            raise LanceError(f"dataset {uri!r} version {version} has no fragment {fid}")
        if row_address:
            yield from _with_addresses(frag, fid, start, stop, columns, convert, batch_size)
            continue
        if not columns:
            # no column asked (a count through an empty schema): the slice is live rows already, so one
            # zero-column batch of its length, nothing read (with a row filter: of the rows passing it)
            n = stop - start
            if row_filter is not None and n:
                n = len(row_filter.matching(frag.read_range(start, n, row_filter.columns)))
            if n:
                yield convert(pa.RecordBatch.from_pydict({"_": pa.nulls(n)}).drop_columns(["_"]))
            continue
        step = max(batch_size, READ_ROWS // batch_size * batch_size)
        for a in range(start, stop, step):
            b = min(stop, a + step)
            if row_filter is None:
                table = frag.read_range(a, b - a, columns)
            else:
                table = filtered_read(
                    lambda x, y, cols, frag=frag: frag.read_range(x, y - x, cols), frag.take, a, b, columns, row_filter
                )
            if table is None or not table.num_rows:
                continue
            batch = convert(table)
            for b in range(0, batch.num_rows, batch_size):
                yield batch.slice(b, batch_size)


def _with_addresses(
    frag: Any,
    fid: int,
    start: int,
    stop: int,
    columns: list[str],
    convert: Callable[[pa.Table], pa.RecordBatch],
    batch_size: int,
) -> Iterator[pa.RecordBatch]:
    """Live rows ``[start, stop)`` of one fragment with their row addresses as a last column."""
    deleted = np.asarray(frag.deleted_positions(), dtype=np.int64)
    positions = np.arange(frag.physical_rows, dtype=np.int64)
    if len(deleted):
        positions = np.setdiff1d(positions, deleted, assume_unique=True)
    for a in range(start, stop, batch_size):
        b = min(stop, a + batch_size)
        addr = pa.array((np.int64(fid) << 32) | positions[a:b])
        table = frag.read_range(a, b - a, columns) if columns else pa.table({})
        table = table.append_column("_rowaddr", addr) if columns else pa.table({"_rowaddr": addr})
        yield convert(table)
