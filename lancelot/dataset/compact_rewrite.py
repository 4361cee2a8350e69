"""A compaction group rewritten: the live rows of adjacent fragments, in order, written into new fragments (ids
unassigned), stable row ids carried over (table format, "Transaction types": Rewrite).

How the rows are cut into fragments follows pylance 14. Re-encoding makes ``k = max(1, rows // target)`` fragments,
their sizes differing by one at most (1024 live rows with a target of 1500 make one fragment; 3072, two of 1536; 34 with
a target of 8, four of 9, 9, 8, 8); given ``batch_size`` or ``max_bytes_per_file``, each is written from the fragments'
batches of ``batch_size`` rows (batches never span two fragments) and closes early once its bytes written reach
``max_bytes_per_file``; else from one scan per group of small fragments (``changes.SCAN_ROWS`` rows). Binary copy (the
``try_binary_copy`` / ``force_binary_copy`` modes) takes whole fragments into a new one until it holds the largest of
those sizes, ``max_bytes_per_file`` ignored; it is for fragments of one data file holding the schema's fields in the
output version, without deletions or blob columns (else ``try`` re-encodes and ``force`` is pylance's "Not supported"
OSError). lancelot writes the rows of either mode through its writer: the fragments and rows are pylance's, the pages
within the files are lancelot's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lancelot.dataset import blob_write
from lancelot.dataset.blob import holds_blob, is_blob_field
from lancelot.dataset.changes import SCAN_ROWS, row_groups
from lancelot.dataset.compact_options import CompactionNotSupportedError, Options
from lancelot.dataset.manifest import FLAG_STABLE_ROW_IDS
from lancelot.dataset.rowids import encode_row_ids, encode_versions, row_ids, row_versions
from lancelot.errors import LanceError
from lancelot.format.pb import table_pb2
from lancelot.util.arrays import combined

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.fragment import Fragment


def rewrite_group(
    ds: LanceDataset,
    group: list[Fragment],
    target_rows_per_fragment: int,
    data_version: str | None,
    where: str,
    options: Options | None = None,
) -> list[table_pb2.DataFragment]:
    """The live rows of ``group`` written into new fragments (ids unassigned) in ``data_version``, cut as pylance cuts
    them for ``options`` (pylance's defaults when None)."""
    from lancelot.dataset.write_options import DEFAULT_MAX_BYTES_PER_FILE
    from lancelot.dataset.writing import write_fragments

    opts = options or Options(target_rows_per_fragment=target_rows_per_fragment)
    if opts.batch_size == 0:
        raise CompactionNotSupportedError(f"compaction of {where}: batch_size must be between 1 and 4294967295, got 0")
    scan = {"batch_size": opts.batch_size} if opts.batch_size else {}

    def rows() -> Iterator[pa.RecordBatch]:
        if scan or opts.max_bytes_per_file is not None or any(holds_blob(f, is_blob_field) for f in ds.schema):
            for f in group:  # batches cut as pylance's (a file's bytes are checked per batch)
                yield from blob_write.with_bytes(f, f.to_batches(**scan))  # blobs: their values (dataset/blob_write.py)
            return
        for chunk in row_groups(group, SCAN_ROWS):  # one scan per group of small fragments, not one per fragment
            yield from combined(ds.scanner(fragments=chunk, scan_in_order=True).to_table()).to_batches()

    sizes = _binary_copy_sizes(group, target_rows_per_fragment, data_version, opts, where)
    max_bytes = opts.max_bytes_per_file
    if sizes is None:
        live = sum(f.count_rows() for f in group)
        k = max(1, live // target_rows_per_fragment) if target_rows_per_fragment else 1
        sizes = [live // k + (i < live % k) for i in range(k)]  # balanced, as pylance splits
    else:
        max_bytes = None
    it = _pieces(rows())
    try:
        new = [
            n
            for size in sizes
            for n in write_fragments(
                it.take(size),
                ds.uri,
                schema=ds.schema,
                data_storage_version=data_version,
                max_rows_per_file=max(1, size),
                max_bytes_per_file=DEFAULT_MAX_BYTES_PER_FILE if max_bytes is None else max_bytes,
                _store=ds.store,
                _base=ds.manifest_file,
            )
        ]
    except LanceError as e:
        raise type(e)(f"compaction of {where}: {e.message}", path=e.path) from None
    new_pb = [n.to_pb() for n in new]
    if ds.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS:
        _carry_row_ids(group, new_pb)
    return new_pb


def _binary_copy_sizes(
    group: list[Fragment], target: int, data_version: str | None, opts: Options, where: str
) -> list[int] | None:
    """The new fragments' row counts a binary copy makes, or None: re-encode.  pylance copies whole data files into a
    new one until it holds the largest of the re-encoding's balanced sizes, then starts the next."""
    if opts.compaction_mode == "reencode":
        return None
    why = _binary_copy_refusal(group, data_version)
    if why is not None:
        if opts.compaction_mode == "force_binary_copy":
            raise CompactionNotSupportedError(f"compaction of {where}: binary copy is not supported: {why}")
        return None
    live = sum(f.physical_rows for f in group)
    k = max(1, live // target) if target else 1
    most = live // k + (live % k > 0)
    sizes, acc = [], 0
    for f in group:
        acc += f.physical_rows
        if acc >= most:
            sizes.append(acc)
            acc = 0
    return sizes + [acc] if acc else sizes


def _binary_copy_refusal(group: list[Fragment], data_version: str | None) -> str | None:
    """Why pylance would not binary-copy ``group`` (None: it would): deleted rows, a fragment of several data files or
    holding a dropped column's data, blob columns, or a data file in another version than the output's."""
    ds = group[0].dataset
    if any(holds_blob(f, is_blob_field) for f in ds.schema):
        return "the dataset has blob columns"
    ids = {int(f.id) for f in ds.manifest.fields}
    for f in group:
        pb = f.data_fragment
        if pb.HasField("deletion_file"):
            return f"fragment {f.fragment_id} has deleted rows"
        if len(pb.files) != 1:
            return f"fragment {f.fragment_id} has {len(pb.files)} data files"
        d = pb.files[0]
        if not {int(i) for i in d.fields} <= ids:
            return f"fragment {f.fragment_id}'s data file holds a dropped column's data"
        if data_version is not None and f"{d.file_major_version}.{d.file_minor_version}" != data_version:
            return (
                f"binary copy target is {data_version}, but data file {d.path!r} uses "
                f"{d.file_major_version}.{d.file_minor_version}"
            )
    return None


class _pieces:
    """Consecutive pieces of a stream of batches, ``take(n)`` rows at a time (the last takes the rest)."""

    def __init__(self, batches: Iterator[pa.RecordBatch]) -> None:
        self.batches, self.held = batches, None

    def take(self, n: int) -> Iterator[pa.RecordBatch]:
        while n > 0:
            b = self.held if self.held is not None else next(self.batches, None)
            if b is None:
                return
            self.held = b.slice(n) if b.num_rows > n else None
            b = b.slice(0, n) if b.num_rows > n else b
            n -= b.num_rows
            yield b


def _carry_row_ids(group: list[Fragment], new: list[table_pb2.DataFragment]) -> None:
    """Stable row ids: the live rows keep their ids and their created-at / last-updated-at versions, re-chunked over the
    new fragments (what pylance's compaction does; ``next_row_id`` is unchanged)."""
    ids, created, updated = [], [], []
    for f in group:
        live = f.live_positions()
        rid = row_ids(f.data_fragment, f.where)
        c = row_versions(f.data_fragment, "created_at", None, f.where)
        u = row_versions(f.data_fragment, "last_updated_at", c, f.where)
        ids.append(rid[live])
        created.append(c[live])
        updated.append(u[live])
    ids_a, c_a, u_a = (np.concatenate(x) for x in (ids, created, updated))
    at = 0
    for nf in new:
        n = int(nf.physical_rows)
        nf.inline_row_ids = encode_row_ids(ids_a[at : at + n])
        nf.inline_created_at_versions = encode_versions(c_a[at : at + n])
        nf.inline_last_updated_at_versions = encode_versions(u_a[at : at + n])
        at += n
    if at != len(ids_a):
        raise LanceError(f"compaction wrote {at} rows for {len(ids_a)} live rows")
