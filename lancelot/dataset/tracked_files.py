"""``LanceDataset.tracked_files`` and ``all_files`` (pylance 14): the files each version's manifest names, and the files
present under the dataset's root, as Arrow streams (what cleanup compares: dataset/cleanup.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from lancelot.dataset.cleanup import INDICES_DIR, TEMP_DIRS, TrackedFiles, collect_indices
from lancelot.dataset.commit import list_versions, load_manifest
from lancelot.dataset.deletion import deletion_path
from lancelot.dataset.fragment_metadata import DATA_DIR
from lancelot.dataset.manifest import VERSIONS_DIR
from lancelot.dataset.transaction import TRANSACTIONS_DIR

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset

_BASE = pa.field("base_uri", pa.dictionary(pa.int32(), pa.string()), False)
#: pylance's schemas of the two streams
TRACKED_SCHEMA = pa.schema(
    [
        pa.field("version", pa.int64(), False),
        _BASE,
        pa.field("path", pa.string(), False),
        pa.field("type", pa.dictionary(pa.int8(), pa.string()), False),
    ]
)
ALL_SCHEMA = pa.schema(
    [
        _BASE,
        pa.field("path", pa.string(), False),
        pa.field("size_bytes", pa.int64(), False),
        pa.field("last_modified", pa.timestamp("us", tz="UTC"), False),
    ]
)


def tracked_files(
    ds: LanceDataset, min_version: int | None, progress: Callable[[int, int | None], object] | None
) -> pa.RecordBatchReader:
    """One batch per version (from ``min_version`` on), oldest first: its manifest, transaction file, data files,
    deletion files and index files (those in the dataset's own root), each row ``(version, base_uri, path, type)``;
    ``progress(done, total)`` after each."""
    store, uri = ds.store, ds.uri
    listed = list_versions(store, uri)
    chosen = sorted(v for v in listed.names if min_version is None or v >= min_version)

    def batches() -> Iterator[pa.RecordBatch]:
        for done, v in enumerate(chosen, 1):
            mf = load_manifest(store, uri, listed, v)
            m = mf.manifest
            rows = [(f"{VERSIONS_DIR}/{listed.names[v]}", "manifest")]
            if m.transaction_file:
                rows.append((f"{TRANSACTIONS_DIR}/{m.transaction_file}", "transaction file"))
            own = m.fragments
            rows += [(f"{DATA_DIR}/{d.path}", "data file") for f in own for d in f.files if not d.HasField("base_id")]
            rows += [
                (deletion_path(int(f.id), f.deletion_file), "deletion file")
                for f in own
                if f.HasField("deletion_file") and not f.deletion_file.HasField("base_id")
            ]
            if mf.index_section:
                found = TrackedFiles()
                collect_indices(mf.index_section, found)
                for u in sorted(found.index_uuids):
                    rows += [(p, "index file") for p, _, _ in store.list_files(f"{INDICES_DIR}/{u}")]
            paths, kinds = zip(*rows)
            yield pa.record_batch(
                [pa.array([v] * len(rows), pa.int64()), _dictionary([uri] * len(rows)), pa.array(paths), _kinds(kinds)],
                schema=TRACKED_SCHEMA,
            )
            if progress is not None:
                progress(done, len(chosen))

    return pa.RecordBatchReader.from_batches(TRACKED_SCHEMA, batches())


def all_files(ds: LanceDataset) -> pa.RecordBatchReader:
    """Every file of the dataset's root (its own store; not other base paths): ``(base_uri, path, size_bytes,
    last_modified)``: all under the directories Lance writes (``data/``, ``_versions/``... ``cleanup.TEMP_DIRS``)."""
    store = ds.store
    found = [f for top in TEMP_DIRS for f in store.list_files(top)]
    if store.fs is None:  # a local file's time to the microsecond, truncated as pylance's (not the float's rounding)
        when = [os.stat(store.full_path(p)).st_mtime_ns // 1000 for p, _, _ in found]
    else:
        when = [int(t * 1e6) for _, _, t in found]
    batch = pa.record_batch(
        [
            _dictionary([ds.uri] * len(found)),
            pa.array([p for p, _, _ in found], pa.string()),
            pa.array([n for _, n, _ in found], pa.int64()),
            pa.array(when, pa.timestamp("us", tz="UTC")),
        ],
        schema=ALL_SCHEMA,
    )
    return pa.RecordBatchReader.from_batches(ALL_SCHEMA, [batch])


def _dictionary(values: list[str]) -> pa.Array:
    return pa.array(values, pa.string()).dictionary_encode().cast(_BASE.type)


def _kinds(values: tuple[str, ...]) -> pa.Array:
    return pa.array(values, pa.string()).dictionary_encode().cast(TRACKED_SCHEMA.field("type").type)
