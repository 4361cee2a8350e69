"""Dataset operations run by Spark: ``lancelot.spark.delete`` (one dataset version per call).

``delete(spark, uri, where)``: Spark reads the dataset's latest version with each row's
address (``with_row_address``: fragment id << 32 | physical position) and evaluates
``where`` with its own SQL; executors group the matching positions by fragment and each
writes one deletion file per fragment (its earlier deletions included, as
``LanceDataset.delete`` does); the driver then commits one Delete transaction
(protos/transaction.proto) with the library's commit, which checks it against any
commit made meanwhile exactly as the library's own delete (a conflict raises
``CommitConflictError`` and the deletion files written are removed).  Nothing is
visible before that commit: deletion files are named by no manifest until then.

merge_insert, update, add_columns and compact from Spark wait for the library's own
operations (see docs/SPARK.md).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: tasks writing deletion files (one per fragment at most)
MAX_TASKS = 64
#: what each executor's task sends the driver, one row per fragment it changed
DELETIONS_SCHEMA = "fragment_id long, deletion binary, removed boolean, deleted long"
_ARROW_SCHEMA = pa.schema(
    [("fragment_id", pa.int64()), ("deletion", pa.binary()), ("removed", pa.bool_()), ("deleted", pa.int64())]
)


def _write_deletions(
    uri: str, version: int, storage: dict[str, Any] | None, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """In a task: the matching (fragment id, position) pairs become one deletion file per fragment."""
    from lancelot.dataset.deletion import deletion_path, new_deletion_file, serialize_deletions
    from lancelot.spark.dataset_scan import open_version

    found: dict[int, list[np.ndarray]] = {}
    for b in batches:
        if not b.num_rows:
            continue
        fids = b.column(0).to_numpy(zero_copy_only=False)
        pos = b.column(1).to_numpy(zero_copy_only=False)
        for fid in np.unique(fids):
            found.setdefault(int(fid), []).append(pos[fids == fid])
    if not found:
        return
    ds = open_version(uri, version, storage)
    out: dict[str, list[Any]] = {"fragment_id": [], "deletion": [], "removed": [], "deleted": []}
    for fid, parts in sorted(found.items()):
        frag = ds.get_fragment(fid)
        if frag is None:
            raise ValueError(f"dataset {uri!r} version {version} has no fragment {fid}")
        old = np.asarray(frag.deleted_positions(), dtype=np.int64)
        allpos = np.union1d(old, np.concatenate(parts).astype(np.int64))
        if len(allpos) == len(old):
            continue
        removed = len(allpos) >= frag.physical_rows
        blob = b""
        if not removed:
            ftype, data = serialize_deletions(allpos)
            d = new_deletion_file(ftype, version, len(allpos))
            ds._store.put(deletion_path(fid, d), data)
            blob = d.SerializeToString()
        out["fragment_id"].append(fid)
        out["deletion"].append(blob)
        out["removed"].append(removed)
        out["deleted"].append(len(allpos) - len(old))
    if out["fragment_id"]:
        yield pa.RecordBatch.from_pydict(out, schema=_ARROW_SCHEMA)


def delete(spark: SparkSession, uri: str, where: str, *, storage_options: dict[str, Any] | None = None) -> int:
    """Delete the rows of the dataset at ``uri`` for which the Spark SQL predicate ``where`` is true,
    as one new version (the latest version's number, unchanged when no row matches)."""
    from lancelot.dataset import dataset
    from lancelot.dataset.commit import commit_transaction
    from lancelot.dataset.deletion import deletion_path
    from lancelot.dataset.operation import build_delete
    from lancelot.dataset.transaction import new_transaction
    from lancelot.format.pb import table_pb2
    from lancelot.spark import _ensure_registered

    _ensure_registered(spark)
    ds = dataset(uri, storage_options=storage_options)
    version = ds.version
    reader = (
        spark.read.format("lance")
        .option("version", version)
        .option("with_row_address", "true")
        .option("filter_pushdown", "false")
    )
    if storage_options:
        reader = reader.option("storage_options", json.dumps(storage_options))
    hits = (
        reader.load(uri)
        .filter(where)
        .selectExpr("shiftright(_rowaddr, 32) AS fragment_id", "_rowaddr & 4294967295 AS pos")
    )
    parallel = max(1, min(len(ds.get_fragments()), MAX_TASKS))
    fn = functools.partial(_write_deletions, uri, version, storage_options)
    rows = hits.repartition(parallel, "fragment_id").mapInArrow(fn, DELETIONS_SCHEMA).collect()
    if not rows:
        return version
    updated, removed, written = [], [], []
    for r in rows:
        if r.removed:
            removed.append(int(r.fragment_id))
            continue
        frag = ds.get_fragment(int(r.fragment_id))
        nf = table_pb2.DataFragment()
        nf.CopyFrom(frag._pb)  # type: ignore[union-attr]
        nf.deletion_file.ParseFromString(bytes(r.deletion))
        updated.append(nf)
        written.append(deletion_path(int(r.fragment_id), nf.deletion_file))
    txn = new_transaction(version)
    txn.delete.updated_fragments.extend(updated)
    txn.delete.deleted_fragment_ids.extend(removed)
    txn.delete.predicate = where
    try:
        return commit_transaction(ds._store, ds.uri, txn, build_delete(updated, removed, ds.uri), read_version=version)
    except Exception:
        for path in written:  # named by no manifest: removed so nothing is left behind
            ds._store.delete(path)
        raise
