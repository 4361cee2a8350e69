"""The contract between the file reader and the per-version field decoders.

The reader (lancelot/reader.py) maps each top-level Arrow field to the columns
that hold it, then asks a ``FieldReader`` for rows.  Each format version has
its own column allocation and its own FieldReader:

* 2.0 (encodings/v2_0): every field in pre-order owns one column (structs and
  lists included); a packed struct owns one column for itself and its children.
* 2.1+ (encodings/structural): only leaves own columns (structs and lists are
  carried by repetition/definition levels); a packed struct or blob owns one.

A FieldReader plans a read (``plan``): the byte ranges it needs, found from the
cached column metadata and the search caches it loads (the 2.1+ readers load a
page's in a first round of the first read that needs it), and the decode step that turns their bytes into an Arrow array
or into the plan of a next round.  The reader fetches the ranges of every
field's plan in one coalesced ``ByteSource.read_ranges`` call per round; no
decoder reads the file itself.  A decoder of several rounds may be written as
a ``Fetch`` generator (it yields each round's ranges and is sent their bytes):
``gather`` runs several side by side, ``as_plan`` / ``resume`` turn one into
Plans (the 2.0 node decoders and take plans are written so).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

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


#: what a field read asks for: sorted unique rows (int64, inside the file) or a ``range`` of rows
Rows = np.ndarray | range


@dataclass(eq=False)
class Plan:
    """One round of a field read: the byte ranges it needs, and the decode step that turns their
    bytes (in the order of ``ranges``) into the field's array or into the Plan of a next round
    (2.0 list offsets, then the items; a page's search cache, then its data; blob descriptions,
    then the blobs).  ``planner`` names what made it (encodings/served.py reports it).  A decode
    step never reads the file itself: what it needs next is the next round's Plan."""

    ranges: list[Range]
    decode: Callable[[list[memoryview]], pa.Array | pa.ChunkedArray | Plan]
    planner: str = ""


def done(array: pa.Array | pa.ChunkedArray, planner: str = "empty") -> Plan:
    """A plan that needs no bytes: its result is known already."""
    return Plan([], lambda _: array, planner)


_T = TypeVar("_T")

#: a decode written as a generator: it yields the byte ranges of each round it needs and is sent
#: their bytes (in the order of the ranges) back; its return value is its result
Fetch = Generator[list[Range], list[memoryview], _T]


def fetch(ranges: list[Range]) -> Fetch[list[memoryview]]:
    """One round of ``ranges`` (``yield from fetch(r)`` in a Fetch: their bytes)."""
    return (yield ranges)


def gather(steps: Sequence[Fetch[Any]]) -> Fetch[list[Any]]:
    """Run several Fetch decodes side by side: each round fetches the union of their pending
    ranges, so the rounds of the whole are as many as the longest one's, not their sum."""
    out: list[Any] = [None] * len(steps)
    pending: list[tuple[int, Fetch[Any], list[Range]]] = []
    for i, g in enumerate(steps):
        try:
            pending.append((i, g, next(g)))
        except StopIteration as stop:
            out[i] = stop.value
    while pending:
        bufs = yield [r for _, _, rs in pending for r in rs]
        nxt, pos = [], 0
        for i, g, rs in pending:
            part, pos = bufs[pos : pos + len(rs)], pos + len(rs)
            try:
                nxt.append((i, g, g.send(part)))
            except StopIteration as stop:
                out[i] = stop.value
        pending = nxt
    return out


def served(step: Fetch[_T], blocks: list[tuple[int, memoryview]]) -> Fetch[_T]:
    """``step`` with the rounds whose ranges all lie inside ``blocks`` ((file offset, bytes)
    fetched before) answered from them, the others passed on."""
    try:
        ranges = next(step)
        while True:
            found: list[memoryview] = []
            for off, ln in ranges:
                inside = (b[off - at : off - at + ln] for at, b in blocks if at <= off and off + ln <= at + len(b))
                hit = next(inside, None)
                if hit is None:
                    break
                found.append(hit)
            ranges = step.send(found if len(found) == len(ranges) else (yield ranges))
    except StopIteration as stop:
        result: _T = stop.value
        return result


def resume(step: Fetch[pa.Array | pa.ChunkedArray], planner: str) -> pa.Array | pa.ChunkedArray | Plan:
    """Run ``step`` to its first yield: its result when it needs no bytes, else the Plan of that
    round (whose decode step does the same with the next)."""

    def advance(bufs: list[memoryview] | None) -> pa.Array | pa.ChunkedArray | Plan:
        try:
            ranges = next(step) if bufs is None else step.send(bufs)
        except StopIteration as stop:
            return stop.value
        return Plan(ranges, advance, planner)

    return advance(None)


def as_plan(step: Fetch[pa.Array | pa.ChunkedArray], planner: str) -> Plan:
    """A Fetch decode as a chain of Plans: its first round's ranges (computed now), each later
    round the Plan its decode step returns."""
    first = resume(step, planner)
    return first if isinstance(first, Plan) else done(first, planner)


def execute(src: ByteSource, plans: list[Plan]) -> list[pa.Array | pa.ChunkedArray]:
    """The read loop on the caller's thread: fetch the union of every pending plan's ranges in one
    ``read_ranges``, decode, repeat for the follow-up plans (``LanceFile`` runs the same loop with
    its pools and staging)."""
    out: list[pa.Array | pa.ChunkedArray] = [None] * len(plans)
    pending = list(enumerate(plans))
    while pending:
        ranges = [r for _, p in pending for r in p.ranges]
        bufs = src.read_ranges(ranges) if ranges else []
        nxt = []
        pos = 0
        for i, p in pending:
            res = p.decode(bufs[pos : pos + len(p.ranges)])
            pos += len(p.ranges)
            if isinstance(res, Plan):
                nxt.append((i, res))
            else:
                out[i] = res
        pending = nxt
    return out


class FieldReader(ABC):
    """Reads rows of one top-level field: ``plan`` says which bytes a read needs and how to decode
    them (in rounds: a first read loads the search caches it needs first)."""

    def __init__(self, ctx: FieldContext) -> None:
        self.ctx = ctx

    @abstractmethod
    def plan(self, rows: Rows) -> Plan:
        """The first round of a read of ``rows``: sorted unique int64 rows inside the file (a
        take), or ``range(start, stop)`` inside the file (a range read, which may come back as a
        ChunkedArray of one chunk per page).  The result has ``ctx.field.type``, rows in order."""

    def read(self, rows: Rows) -> pa.Array | pa.ChunkedArray:
        """``rows`` read on their own: plan, fetch, decode (LanceFile reads many fields together
        instead)."""
        return execute(self.ctx.src, [self.plan(rows)])[0]
