"""The contract between the file reader and the per-version field decoders.

The reader (lancelot/reader.py) maps each top-level Arrow field to the columns
that hold it, then asks a ``FieldReader`` for rows.  Each format version has
its own column allocation and its own FieldReader:

* 2.0 (encodings/v2_0): every field in pre-order owns one column (structs and
  lists included); a packed struct owns one column for itself and its children.
* 2.1+ (encodings/structural): only leaves own columns (structs and lists are
  carried by repetition/definition levels); a packed struct or blob owns one.

A FieldReader follows plan -> fetch -> decode: it plans the byte ranges from the
cached column metadata (and per-page search caches it builds once), fetches
them with one ``ByteSource.read_ranges`` call, and decodes with numpy.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from lancelot.format.pb import file2_pb2
from lancelot.io.source import ByteSource, Range


@dataclass
class ColumnInfo:
    """One column of the file: its index and its metadata message."""

    index: int
    meta: file2_pb2.ColumnMetadata


@dataclass
class FieldContext:
    """Everything a FieldReader needs to read one top-level field."""

    src: ByteSource
    version: str  # "2.0", "2.1" or "2.2"
    field: pa.Field  # the top-level Arrow field (as in LanceFile.schema)
    columns: list[ColumnInfo]  # the columns it owns, in file order
    num_rows: int
    cache: dict[Any, Any] = field(default_factory=dict)  # per-file search cache, keyed freely

    @property
    def path(self) -> str:
        return self.src.path


class FieldReader(ABC):
    """Reads rows of one top-level field."""

    def __init__(self, ctx: FieldContext) -> None:
        self.ctx = ctx

    @abstractmethod
    def read_range(self, start: int, stop: int) -> pa.Array | pa.ChunkedArray:
        """Rows [start, stop) as an Arrow array of ``ctx.field.type`` (chunked: one chunk per page, no copy)."""

    @abstractmethod
    def take(self, rows: np.ndarray) -> pa.Array:
        """Rows at ``rows`` (int64, sorted ascending, unique), in that order."""

    def read_range_chunked(self, start: int, stop: int) -> pa.Array | pa.ChunkedArray:
        """``read_range``, but a reader may return one chunk per page instead of concatenating."""
        return self.read_range(start, stop)

    # Hints: byte ranges (offset, length) a read will fetch, announced before any field reads so
    # the reader can overlap them (posix_fadvise locally, one round of requests remotely).  They
    # are only hints: never checked against the file, empty when unknown, and they never raise.

    def search_hint(self) -> list[Range]:
        """Ranges the first read loads per-page search caches from (empty once loaded)."""
        return []

    def range_hint(self, start: int, stop: int) -> list[Range]:
        """Ranges ``read_range(start, stop)`` will read."""
        return []

    def take_hint(self, rows: np.ndarray) -> list[Range]:
        """Ranges ``take(rows)`` (sorted, unique) will read first."""
        return []

    # A take planned whole: the reader fetches the byte ranges of every such field in one call.

    def point_plan(self, rows: np.ndarray) -> tuple[object, list[Range]] | None:
        """Plan a take of ``rows`` (sorted, unique) that needs nothing but its byte ranges (checked
        against the file): (plan, ranges) for ``take_fetched``; None when this reader cannot."""
        return None

    def take_fetched(self, rows: np.ndarray, plan: object, bufs: list[memoryview], op: str = "take") -> pa.Array:
        """The take ``point_plan(rows)`` planned, from the bytes of its ranges (``op``: "range"
        when it serves a short range read, for encodings/served.py)."""
        raise NotImplementedError
