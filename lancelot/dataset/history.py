"""A dataset's history as pylance reports it: version timestamps (``versions()``), the summary pylance gives as a
version's metadata, and the times ``asof`` accepts."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from lancelot.dataset.manifest import FOOTER, MAGIC, VERSIONS_DIR, parse_manifest
from lancelot.dataset.manifest_wire import DEL_FILES, FRAGS, NANOS, OK, SECONDS, VERSION, scan_manifest
from lancelot.errors import CorruptFileError, LanceValueError
from lancelot.format.pb import table_pb2
from lancelot.util.jit import NumpyUntilHot

if TYPE_CHECKING:
    from lancelot.dataset.commit import Versions
    from lancelot.dataset.store import ObjectStore


def version_time(ns: int) -> _dt.datetime:
    """A manifest's timestamp as pylance's ``versions()`` gives it: local time, whole seconds plus microseconds
    truncated, with its float arithmetic on the nanoseconds (the two agree to the microsecond)."""
    return _dt.datetime.fromtimestamp(ns // 1e9) + _dt.timedelta(microseconds=(ns % 1e9) // 1e3)


def as_local_time(asof: Any) -> _dt.datetime:
    """``asof`` as a naive local time, what ``versions()`` timestamps are (a str as pylance parses it, or ISO 8601; a
    datetime, or a pandas Timestamp; an aware time converted to local time)."""
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


# -- a manifest's summary from its bytes (manifest_wire.py) ---------------------------------

_HOT = NumpyUntilHot(scan_manifest, warm_work=4 << 20)


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
    """The version, timestamp and (``summary``) pylance's summary of the manifest file ``data``: read off its bytes by a
    kernel once that is loaded (a long history gets it loaded in the background), else from the parsed message; a
    manifest the kernel cannot read is parsed."""
    if len(data) >= FOOTER + 4 and data[-4:] == MAGIC and _HOT.ready():
        pos = int.from_bytes(data[-FOOTER : -FOOTER + 8], "little", signed=True)
        end = len(data) - FOOTER
        if 0 <= pos <= end - 4 and pos + 4 + int.from_bytes(data[pos : pos + 4], "little") == end:
            r = scan_manifest(np.frombuffer(data, dtype=np.uint8), pos + 4, end, summary)
            if r[OK]:
                return VersionInfo(
                    int(r[VERSION]),
                    int(r[SECONDS]) * 1_000_000_000 + int(r[NANOS]),
                    _summary_dict(*(int(x) for x in r[FRAGS : DEL_FILES + 2])) if summary else None,
                )
    if not _HOT.ready():
        empty = np.frombuffer(b"\0", dtype=np.uint8)  # (read-only, as the calls' arrays)
        _HOT.numpy_call(lambda: scan_manifest(empty, 0, 0, True), work=len(data))
    m = parse_manifest(data, path).manifest
    return VersionInfo(
        int(m.version),
        m.timestamp.seconds * 1_000_000_000 + m.timestamp.nanos,
        manifest_summary(m) if summary else None,
    )


#: manifests read at once from a remote store (each read is a round trip of its own)
REMOTE_READS = 16


def read_manifests(store: ObjectStore, versions: Versions) -> Iterator[tuple[int, str, bytes | None]]:
    """(version, path, bytes or None if gone) of every listed manifest, oldest first; from a remote store
    ``REMOTE_READS`` at a time, side by side."""

    def read(v: int) -> tuple[int, str, bytes | None]:
        path = f"{VERSIONS_DIR}/{versions.names[v]}"
        try:
            return v, path, store.read(path)
        except FileNotFoundError:
            return v, path, None

    order = sorted(versions.names)
    if store.is_local:
        yield from map(read, order)
        return
    with ThreadPoolExecutor(max_workers=REMOTE_READS, thread_name_prefix="lancelot-manifests") as pool:
        for k in range(0, len(order), REMOTE_READS * 4):
            yield from pool.map(read, order[k : k + REMOTE_READS * 4])


def read_versions(store: ObjectStore, uri: str, *, summary: bool = True) -> list[VersionInfo]:
    """Every version of the dataset, oldest first, from one listing and one read per manifest (``summary=False``:
    versions and timestamps only, for time travel)."""
    from lancelot.dataset.commit import list_versions

    versions = list_versions(store, uri)
    out = []
    for v, path, data in read_manifests(store, versions):
        if data is None:
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
    """The newest version committed before ``asof`` (None: none was), reading only each manifest's version and
    timestamp."""
    cutoff = as_local_time(asof)
    before = [i.version for i in read_versions(store, uri, summary=False) if version_time(i.timestamp_ns) < cutoff]
    return max(before) if before else None
