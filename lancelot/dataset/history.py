"""A dataset's history as pylance reports it: version timestamps (``versions()``), the summary
pylance gives as a version's metadata, and the times ``asof`` accepts."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from lancelot.errors import LanceValueError
from lancelot.format.pb import table_pb2


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
