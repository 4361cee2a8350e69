"""A dataset's history as pylance reports it: version timestamps (``versions()``), the summary
pylance gives as a version's metadata, and the times ``asof`` accepts."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from lancelot.dataset.manifest import FOOTER, MAGIC, VERSIONS_DIR, parse_manifest
from lancelot.errors import CorruptFileError, LanceValueError
from lancelot.format.pb import table_pb2
from lancelot.util.jit import NumpyUntilHot, njit

if TYPE_CHECKING:
    from lancelot.dataset.store import ObjectStore


def version_time(ns: int) -> _dt.datetime:
    """A manifest's timestamp as pylance's ``versions()`` gives it: local time, whole seconds plus
    microseconds truncated, with its float arithmetic on the nanoseconds (the two agree to the microsecond)."""
    return _dt.datetime.fromtimestamp(ns // 1e9) + _dt.timedelta(microseconds=(ns % 1e9) // 1e3)


def as_local_time(asof: Any) -> _dt.datetime:
    """``asof`` as a naive local time, what ``versions()`` timestamps are (a str as pylance parses
    it, or ISO 8601; a datetime, or a pandas Timestamp; an aware time converted to local time)."""
    if isinstance(asof, str):
        try:
            cutoff = _dt.datetime.strptime(asof, "%Y-%m-%d %H:%M:%S")
        except ValueError:
            try:
                cutoff = _dt.datetime.fromisoformat(asof)
            except ValueError:
                raise LanceValueError(f"asof: cannot parse the timestamp {asof!r}") from None
    elif isinstance(asof, _dt.datetime):
        cutoff = asof
    elif hasattr(asof, "to_pydatetime"):
        cutoff = asof.to_pydatetime()
    else:
        raise TypeError(f"Unrecognized version timestamp {asof} of type {type(asof)}")
    if cutoff.tzinfo is not None:
        cutoff = cutoff.astimezone().replace(tzinfo=None)
    return cutoff


def manifest_summary(m: table_pb2.Manifest) -> dict[str, str]:
    """The summary pylance's ``versions()`` gives as a version's metadata (all values strings)."""
    rows = deleted = deletion_files = data_files = size = 0
    for f in m.fragments:  # (one pass, few attribute reads: versions() runs it over every fragment of every version)
        files = f.files
        data_files += len(files)
        for d in files:
            size += d.file_size_bytes
        rows += f.physical_rows
        if f.HasField("deletion_file"):
            deletion_files += 1
            deleted += f.deletion_file.num_deleted_rows
    rows -= deleted
    return {
        "total_data_file_rows": str(rows + deleted),
        "total_data_files": str(data_files),
        "total_deletion_file_rows": str(deleted),
        "total_deletion_files": str(deletion_files),
        "total_files_size": str(size),
        "total_fragments": str(len(m.fragments)),
        "total_rows": str(rows),
    }


# -- a manifest's summary from its bytes ------------------------------------------------------
# versions() reads every manifest of the dataset; walking each one's fragments as protobuf objects
# costs about a microsecond per fragment (a dataset of 1,000 appends: half a million).  The fields
# the summary needs are few and fixed (Manifest: fragments = 2, version = 3, timestamp = 7;
# DataFragment: files = 2, deletion_file = 3, physical_rows = 4; DataFile: file_size_bytes = 6;
# DeletionFile: num_deleted_rows = 4; Timestamp: seconds = 1, nanos = 2), so a kernel reads them
# off the wire format directly, skipping everything else.

#: the kernel's result: ok, version, seconds, nanos, fragments, data files, bytes, rows, deletion
#: files, deleted rows
_OK, _VERSION, _SECONDS, _NANOS, _FRAGS, _FILES, _SIZE, _ROWS, _DEL_FILES, _DELETED = range(10)


@njit(cache=True, nogil=True)
def _varint(buf: np.ndarray, p: int, end: int) -> tuple[int, int]:  # pragma: no cover - numba
    """(value as uint64, position after it); position -1 when the varint runs past ``end``."""
    value = np.uint64(0)
    shift = np.uint64(0)
    while p < end:
        b = np.uint64(buf[p])
        p += 1
        value |= (b & np.uint64(0x7F)) << shift
        if b < np.uint64(0x80):
            return value, p
        shift += np.uint64(7)
        if shift > np.uint64(63):
            return value, -1
    return value, -1


@njit(cache=True, nogil=True)
def _skip(buf: np.ndarray, p: int, end: int, wire: int) -> int:  # pragma: no cover - numba
    """The position after a field's value of wire type ``wire``; -1 if malformed."""
    if wire == 0:
        return _varint(buf, p, end)[1]
    if wire == 1:
        return p + 8 if p + 8 <= end else -1
    if wire == 2:
        n, p = _varint(buf, p, end)
        if p < 0 or n > np.uint64(end - p):
            return -1
        return int(p + np.int64(n))
    if wire == 5:
        return p + 4 if p + 4 <= end else -1
    return -1


@njit(cache=True, nogil=True)
def _field_value(buf: np.ndarray, p: int, end: int, field: int) -> int:  # pragma: no cover - numba
    """The value of varint field ``field`` of the message in ``[p, end)`` (0 if absent, -1 if malformed)."""
    out = np.int64(0)
    while p < end:
        tag, p = _varint(buf, p, end)
        if p < 0:
            return -1
        if np.int64(tag >> np.uint64(3)) == field and np.int64(tag & np.uint64(7)) == 0:
            v, p = _varint(buf, p, end)
            if p < 0:
                return -1
            out = np.int64(v)
        else:
            p = _skip(buf, p, end, np.int64(tag & np.uint64(7)))
            if p < 0:
                return -1
    return int(out)


@njit(cache=True, nogil=True)
def _scan_manifest(buf: np.ndarray, p: int, end: int, deep: bool) -> np.ndarray:  # pragma: no cover - numba
    """The summary fields of the Manifest message in ``buf[p:end]`` (``deep``: the fragments' too)."""
    out = np.zeros(10, dtype=np.int64)
    while p < end:
        tag, p = _varint(buf, p, end)
        if p < 0:
            return out
        field = np.int64(tag >> np.uint64(3))
        wire = np.int64(tag & np.uint64(7))
        if field == 3 and wire == 0:
            v, p = _varint(buf, p, end)
            out[_VERSION] = np.int64(v)
        elif (field == 2 or field == 7) and wire == 2:
            n, p = _varint(buf, p, end)
            if p < 0 or n > np.uint64(end - p):
                return out
            stop = p + np.int64(n)
            if field == 7:
                s = p
                while s < stop:
                    t, s = _varint(buf, s, stop)
                    if s < 0:
                        return out
                    if (t == np.uint64(8) or t == np.uint64(16)) and s >= 0:
                        v, s = _varint(buf, s, stop)
                        out[_SECONDS if t == np.uint64(8) else _NANOS] = np.int64(v)
                    else:
                        s = _skip(buf, s, stop, np.int64(t & np.uint64(7)))
                    if s < 0:
                        return out
            else:
                out[_FRAGS] += 1
                s = p
                while deep and s < stop:
                    t, s = _varint(buf, s, stop)
                    if s < 0:
                        return out
                    f = np.int64(t >> np.uint64(3))
                    w = np.int64(t & np.uint64(7))
                    if f == 4 and w == 0:
                        v, s = _varint(buf, s, stop)
                        out[_ROWS] += np.int64(v)
                    elif (f == 2 or f == 3) and w == 2:
                        m, s = _varint(buf, s, stop)
                        if s < 0 or m > np.uint64(stop - s):
                            return out
                        sub = s + np.int64(m)
                        v2 = _field_value(buf, s, sub, 6 if f == 2 else 4)
                        if v2 < 0:
                            return out
                        if f == 2:
                            out[_FILES] += 1
                            out[_SIZE] += v2
                        else:
                            out[_DEL_FILES] += 1
                            out[_DELETED] += v2
                        s = sub
                    else:
                        s = _skip(buf, s, stop, w)
                    if s < 0:
                        return out
            p = stop
        else:
            p = _skip(buf, p, end, wire)
        if p < 0:
            return out
    out[_OK] = 1 if p == end else 0
    return out


_HOT = NumpyUntilHot(_scan_manifest, warm_work=4 << 20)


@dataclass
class VersionInfo:
    """What ``versions()`` and time travel need of one manifest."""

    version: int
    timestamp_ns: int
    summary: dict[str, str] | None  # None unless asked for


def _summary_dict(frags: int, files: int, size: int, rows: int, del_files: int, deleted: int) -> dict[str, str]:
    return {
        "total_data_file_rows": str(rows),
        "total_data_files": str(files),
        "total_deletion_file_rows": str(deleted),
        "total_deletion_files": str(del_files),
        "total_files_size": str(size),
        "total_fragments": str(frags),
        "total_rows": str(rows - deleted),
    }


def version_info(data: bytes, path: str, *, summary: bool) -> VersionInfo:
    """The version, timestamp and (``summary``) pylance's summary of the manifest file ``data``:
    read off its bytes by a kernel once that is loaded (a long history gets it loaded in the
    background), else from the parsed message; a manifest the kernel cannot read is parsed."""
    if len(data) >= FOOTER + 4 and data[-4:] == MAGIC and _HOT.ready():
        pos = int.from_bytes(data[-FOOTER : -FOOTER + 8], "little", signed=True)
        end = len(data) - FOOTER
        if 0 <= pos <= end - 4 and pos + 4 + int.from_bytes(data[pos : pos + 4], "little") == end:
            r = _scan_manifest(np.frombuffer(data, dtype=np.uint8), pos + 4, end, summary)
            if r[_OK]:
                return VersionInfo(
                    int(r[_VERSION]),
                    int(r[_SECONDS]) * 1_000_000_000 + int(r[_NANOS]),
                    _summary_dict(*(int(x) for x in r[_FRAGS:])) if summary else None,
                )
    if not _HOT.ready():
        sample = np.frombuffer(data, dtype=np.uint8).copy()
        _HOT.numpy_call(lambda: _scan_manifest(sample, 0, 0, True), work=len(data))
    m = parse_manifest(data, path).manifest
    return VersionInfo(
        int(m.version),
        m.timestamp.seconds * 1_000_000_000 + m.timestamp.nanos,
        manifest_summary(m) if summary else None,
    )


def read_versions(store: ObjectStore, uri: str, *, summary: bool = True) -> list[VersionInfo]:
    """Every version of the dataset, oldest first, from one listing and one read per manifest
    (``summary=False``: versions and timestamps only, for time travel)."""
    from lancelot.dataset.commit import list_versions

    versions = list_versions(store, uri)
    out = []
    for v in sorted(versions.names):
        path = f"{VERSIONS_DIR}/{versions.names[v]}"
        try:
            data = store.read(path)
        except FileNotFoundError:
            continue  # cleaned up since the listing (pylance lists what it can read)
        info = version_info(data, path, summary=summary)
        if info.version != v:
            raise CorruptFileError(f"dataset {uri!r}: {path} holds version {info.version}, its name says {v}")
        out.append(info)
    return out


def versions_list(store: ObjectStore, uri: str) -> list[dict[str, Any]]:
    """pylance's ``versions()``: version, local timestamp and summary of every version, oldest first."""
    return [
        {"version": i.version, "timestamp": version_time(i.timestamp_ns), "metadata": i.summary}
        for i in read_versions(store, uri)
    ]


def version_asof(store: ObjectStore, uri: str, asof: Any) -> int | None:
    """The newest version committed before ``asof`` (None: none was), reading only each manifest's
    version and timestamp."""
    cutoff = as_local_time(asof)
    before = [i.version for i in read_versions(store, uri, summary=False) if version_time(i.timestamp_ns) < cutoff]
    return max(before) if before else None
