"""Opening a byte source (``open_source``): a local path, a ``file://`` URL or any fsspec URL.  The sources live in
io/byte_source.py (``ByteSource``, ``MemorySource``, ``CountingSource``), io/local_source.py and io/fsspec_source.py;
their names are importable from here too."""

from __future__ import annotations

import os
from typing import Any

from lancelot.io.byte_source import ByteSource, CountingSource, MemorySource, Range, Staged, coalesce
from lancelot.io.fsspec_source import FsspecSource
from lancelot.io.local_source import LocalFileSource

__all__ = [
    "ByteSource",
    "CountingSource",
    "FsspecSource",
    "LocalFileSource",
    "MemorySource",
    "Range",
    "Staged",
    "coalesce",
    "open_source",
]


def open_source(
    path_or_url: str | os.PathLike[str] | ByteSource, storage_options: dict[str, Any] | None = None
) -> ByteSource:
    """Open a local path or an fsspec URL as a ByteSource."""
    if isinstance(path_or_url, ByteSource):
        return path_or_url
    s = os.fspath(path_or_url)
    if "://" in s and not s.startswith("file://"):
        return FsspecSource(s, storage_options)
    if s.startswith("file://"):
        import fsspec

        return LocalFileSource(fsspec.core.url_to_fs(s)[1], shown=s)
    return LocalFileSource(s)
