"""Stable row ids of a fragment (table format, "Row ids"; our ``rowids.proto``): the inline RowIdSequence and the
per-row dataset-version runs, decoded to numpy and encoded back.

Bitmaps of ``range_with_bitmap`` are LSB first (bit i of byte i // 8 is value start + i), as pylance 14.0.2 writes them;
a version run covers as many rows as its span holds values."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lancelot.errors import CorruptFileError
from lancelot.format.pb import rowids_pb2, table_pb2


def _array(a: rowids_pb2.EncodedU64Array) -> NDArray[np.uint64]:
    which = a.WhichOneof("array")
    # (annotated: numpy's stubs type scalars as Any for Python 3.10, and so these sums)
    values: NDArray[np.uint64]
    if which == "u16_array":
        values = np.frombuffer(a.u16_array.offsets, "<u2").astype(np.uint64) + np.uint64(a.u16_array.base)
        return values
    if which == "u32_array":
        values = np.frombuffer(a.u32_array.offsets, "<u4").astype(np.uint64) + np.uint64(a.u32_array.base)
        return values
    if which == "u64_array":
        return np.frombuffer(a.u64_array.values, "<u8").astype(np.uint64)
    return np.empty(0, np.uint64)


def segment_values(s: rowids_pb2.U64Segment, where: str) -> np.ndarray:
    which = s.WhichOneof("segment")
    if which == "range":
        return np.arange(s.range.start, s.range.end, dtype=np.uint64)
    if which == "range_with_holes":
        r = np.arange(s.range_with_holes.start, s.range_with_holes.end, dtype=np.uint64)
        return np.setdiff1d(r, _array(s.range_with_holes.holes), assume_unique=True)
    if which == "range_with_bitmap":
        b = s.range_with_bitmap
        n = int(b.end - b.start)
        bits = np.unpackbits(np.frombuffer(b.bitmap, np.uint8), bitorder="little")
        if len(bits) < n:
            raise CorruptFileError(f"{where}: row id bitmap of {len(bits)} bits for a range of {n}")
        ids: NDArray[np.uint64] = np.uint64(b.start) + np.flatnonzero(bits[:n]).astype(np.uint64)
        return ids
    if which in ("sorted_array", "array"):
        return _array(getattr(s, which))
    raise CorruptFileError(f"{where}: unknown row id segment")


def _encode(values: np.ndarray) -> rowids_pb2.U64Segment:
    """A segment for ``values``: a range when contiguous, a bitmap when ascending, else an array."""
    v = values.astype(np.uint64)
    if len(v) == 0:
        return rowids_pb2.U64Segment(range=rowids_pb2.U64Segment.Range(start=0, end=0))
    lo, hi = int(v[0]), int(v[-1]) + 1
    if len(v) == 1 or bool(np.all(np.diff(v.astype(np.int64)) > 0)):
        if hi - lo == len(v):
            return rowids_pb2.U64Segment(range=rowids_pb2.U64Segment.Range(start=lo, end=hi))
        bits = np.zeros(hi - lo, np.uint8)
        bits[(v - np.uint64(lo)).astype(np.int64)] = 1
        bitmap = np.packbits(bits, bitorder="little").tobytes()
        return rowids_pb2.U64Segment(
            range_with_bitmap=rowids_pb2.U64Segment.RangeWithBitmap(start=lo, end=hi, bitmap=bitmap)
        )
    arr = rowids_pb2.EncodedU64Array(u64_array=rowids_pb2.EncodedU64Array.U64Array(values=v.astype("<u8").tobytes()))
    return rowids_pb2.U64Segment(array=arr)


def row_ids(frag: table_pb2.DataFragment, where: str) -> np.ndarray:
    """The stable row id of every physical row of ``frag`` (inline sequences only)."""
    if frag.WhichOneof("row_id_sequence") != "inline_row_ids":
        raise CorruptFileError(f"{where}: row ids in an external file are not supported by lancelot")
    seq = rowids_pb2.RowIdSequence()
    seq.ParseFromString(frag.inline_row_ids)
    parts = [segment_values(s, where) for s in seq.segments]
    ids = np.concatenate(parts) if parts else np.empty(0, np.uint64)
    if len(ids) != int(frag.physical_rows):
        raise CorruptFileError(f"{where}: {len(ids)} row ids for {frag.physical_rows} rows")
    return ids


def row_versions(frag: table_pb2.DataFragment, which: str, default: np.ndarray | None, where: str) -> np.ndarray:
    """Per-row dataset versions (``which``: "created_at" or "last_updated_at"); ``default`` (or version 1) where the
    fragment has none."""
    field = f"inline_{which}_versions"
    n = int(frag.physical_rows)
    if not frag.HasField(field):
        if frag.HasField(f"external_{which}_versions"):
            raise CorruptFileError(f"{where}: row versions in an external file are not supported by lancelot")
        return default.copy() if default is not None else np.ones(n, np.uint64)
    seq = rowids_pb2.RowDatasetVersionSequence()
    seq.ParseFromString(getattr(frag, field))
    out = np.concatenate(
        [np.full(len(segment_values(r.span, where)), r.version, np.uint64) for r in seq.runs]
        or [np.empty(0, np.uint64)]
    )
    if len(out) != n:
        raise CorruptFileError(f"{where}: {which} versions for {len(out)} rows, the fragment has {n}")
    return out


def encode_row_ids(ids: np.ndarray) -> bytes:
    data: bytes = rowids_pb2.RowIdSequence(segments=[_encode(ids)]).SerializeToString()
    return data


def encode_versions(versions: np.ndarray) -> bytes:
    """Runs of equal consecutive versions, each span a range [0, run length)."""
    runs = []
    v = versions.astype(np.uint64)
    if len(v):
        cuts = np.flatnonzero(np.diff(v.astype(np.int64)) != 0) + 1
        starts = np.concatenate([[0], cuts])
        ends = np.concatenate([cuts, [len(v)]])
        for a, b in zip(starts, ends, strict=True):
            span = rowids_pb2.U64Segment(range=rowids_pb2.U64Segment.Range(start=0, end=int(b - a)))
            runs.append(rowids_pb2.RowDatasetVersionRun(span=span, version=int(v[a])))
    data: bytes = rowids_pb2.RowDatasetVersionSequence(runs=runs).SerializeToString()
    return data
