"""Byte sources with a single range-read interface: ``ByteSource``, ``MemorySource`` and ``CountingSource``.

Every read of the file goes through ``ByteSource.read_ranges``: the reader plans all the byte ranges it needs, then
fetches them in one call.  Near ranges are coalesced into one request (``coalesce``) so that many small reads cost few
I/Os."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

from lancelot.errors import CorruptFileError, TruncatedFileError
from lancelot.util.pools import shared_pool

Range = tuple[int, int]  # (offset, length)
#: bytes held in memory by a source, as sorted (offset, data) blocks (``ByteSource.stage``)
Staged = tuple[tuple[int, memoryview], ...]


def coalesce(ranges: Sequence[Range], gap: int) -> list[tuple[int, int, list[int]]]:
    """Merge ranges whose gaps are at most ``gap`` bytes.

    Returns (offset, length, member indices) for each merged request.
    """
    return _merge(sorted((off, ln, i) for i, (off, ln) in enumerate(ranges)), gap)


def _merge(items: Iterable[tuple[int, int, int]], gap: int) -> list[tuple[int, int, list[int]]]:
    """(offset, length, tag) items in offset order merged where closer than ``gap`` bytes: (offset,
    length, the tags inside) per block."""
    merged: list[tuple[int, int, list[int]]] = []
    start = end = 0
    members: list[int] | None = None
    for off, ln, tag in items:
        if members is not None and off <= end + gap:
            members.append(tag)
            if off + ln > end:
                end = off + ln
        else:
            if members is not None:
                merged.append((start, end - start, members))
            start, end, members = off, off + ln, [tag]
    if members is not None:
        merged.append((start, end - start, members))
    return merged


def coalesce_offsets(ranges: Sequence[Range], gap: int) -> list[tuple[int, int, list[int]]]:
    """``ranges`` sorted, those closer than ``gap`` bytes merged: (offset, length, the offsets of
    the ranges inside) per block."""
    return _merge(((off, ln, off) for off, ln in sorted(ranges)), gap)


class ByteSource:
    """Random-access bytes of one file.  Subclasses implement ``_read``."""

    path: str
    size: int
    #: ranges closer than this are fetched as one request
    coalesce_gap: int = 4096
    #: the requests of one ``read_ranges`` are issued this many at a time (object stores: side by side)
    max_concurrency: int = 1
    #: each request costs a round trip (object stores): readers stage a take's ranges in rounds (``stage``)
    round_trip_costly: bool = False
    #: bytes staged by ``stage`` (and kept by sources that keep the file's tail), as sorted (offset, data)
    _staged: Staged = ()
    _kept: Staged = ()

    def _read(self, offset: int, length: int) -> bytes | memoryview:
        """The bytes of one range (any buffer: callers wrap it in a memoryview)."""
        raise NotImplementedError

    def read(self, offset: int, length: int) -> memoryview:
        """Read one range; it must lie inside the file."""
        return self.read_ranges([(offset, length)])[0]

    def read_ranges(self, ranges: Sequence[Range]) -> list[memoryview]:
        """Read many ranges in one pass, coalescing near ones; results in input order."""
        for off, ln in ranges:
            if off < 0 or ln < 0 or off + ln > self.size:
                raise CorruptFileError(
                    f"byte range [{off}, {off + ln}) lies outside the file of {self.size} bytes",
                    path=self.path,
                )
        out: list[memoryview] = [memoryview(b"")] * len(ranges)
        held = self._staged + self._kept
        if held:  # ranges inside staged bytes cost no request
            todo = []
            for i, (off, ln) in enumerate(ranges):
                data = _inside(held, off, ln)
                if data is None:
                    todo.append(i)
                else:
                    out[i] = data
            if len(todo) < len(ranges):
                if todo:
                    for i, data in zip(todo, self._fetch([ranges[i] for i in todo])):
                        out[i] = data
                return out
        return self._fetch(ranges, out)

    def _fetch(self, ranges: Sequence[Range], out: list[memoryview] | None = None) -> list[memoryview]:
        """Fetch ``ranges`` (checked): near ones coalesced, the requests side by side when the source allows."""
        if out is None:
            out = [memoryview(b"")] * len(ranges)
        merged = coalesce(ranges, self.coalesce_gap)
        blobs = self._requests([(off, ln) for off, ln, _ in merged if ln])
        for off, ln, members in merged:
            data = memoryview(blobs[off]) if ln else memoryview(b"")
            if len(data) != ln:
                now = self._current_size()
                if now is not None and now < self.size:
                    raise TruncatedFileError(
                        f"the file is truncated: expected {self.size} bytes (its size when opened), found {now}",
                        path=self.path,
                        expected=self.size,
                        actual=now,
                    )
                raise TruncatedFileError(
                    f"the file is truncated: expected {ln} bytes at offset {off}, got {len(data)}",
                    path=self.path,
                    expected=off + ln,
                    actual=off + len(data),
                )
            for i in members:
                o, n = ranges[i]
                out[i] = data[o - off : o - off + n]
        return out

    def _requests(self, requests: list[Range]) -> dict[int, bytes | bytearray | memoryview]:
        """The bytes of each request (non-empty, at distinct offsets) by offset: side by side when
        the source allows, else one by one, the OS told of them all first (``_prefetch``)."""
        if len(requests) > 1 and self.max_concurrency > 1:
            blobs = shared_pool(f"io-{self.max_concurrency}", self.max_concurrency).map(
                lambda r: self._read(*r), requests
            )
            return dict(zip((off for off, _ in requests), blobs))
        if len(requests) > 1:
            self._prefetch(requests)
        return {off: self._read(off, ln) for off, ln in requests}

    def _current_size(self) -> int | None:
        """The file's size now (None when unknown): tells a truncated file from a short read."""
        return None

    def stage(self, ranges: Sequence[Range]) -> Staged:
        """Fetch ``ranges`` now, in one round, and serve later ``read_ranges`` inside them from
        memory until ``unstage`` (a reader's planned round: every field's ranges at once).
        Returns the staged blocks (for ``unstage(blocks)``)."""
        ranges = [(int(o), int(n)) for o, n in ranges if n > 0]
        if not ranges:
            return ()
        blocks = [(off, ln) for off, ln, _ in coalesce(ranges, self.coalesce_gap)]
        added = tuple(zip((o for o, _ in blocks), self.read_ranges(blocks)))
        with _STAGE_LOCK:
            self._staged = tuple(sorted(self._staged + added, key=lambda b: b[0]))
        return added

    def unstage(self, blocks: Staged | None = None) -> None:
        """Drop the staged bytes (only ``blocks`` when given)."""
        with _STAGE_LOCK:
            if blocks is None:
                self._staged = ()
            elif blocks:
                drop = {id(b) for b in blocks}
                self._staged = tuple(b for b in self._staged if id(b) not in drop)

    def will_need(self, ranges: Sequence[Range]) -> None:
        """A hint that ``ranges`` are about to be read (default: ignored)."""

    def advise(self, ranges: Sequence[Range]) -> None:
        """Tell the OS that ``ranges`` are about to be read, reading nothing yet (default: nothing)."""

    def _prefetch(self, ranges: Sequence[Range]) -> None:
        """Within one ``read_ranges``: its requests, before they are read one by one (default: nothing)."""

    def close(self) -> None:
        pass


def _inside(held: tuple[tuple[int, memoryview], ...], off: int, ln: int) -> memoryview | None:
    """The bytes [off, off + ln) when one held block contains them."""
    for start, data in held:
        if start <= off and off + ln <= start + len(data):
            return data[off - start : off - start + ln]
    return None


_STAGE_LOCK = threading.Lock()


class MemorySource(ByteSource):
    """Bytes already in memory (tests, small files)."""

    def __init__(self, data: bytes, path: str = "<memory>") -> None:
        self._data = memoryview(data)
        self.path = path
        self.size = len(data)

    def _read(self, offset: int, length: int) -> memoryview:
        return self._data[offset : offset + length]


class CountingSource(ByteSource):
    """Wraps a source and counts requests and bytes (for tests and benchmarks)."""

    def __init__(self, inner: ByteSource) -> None:
        self.inner = inner
        self.path = inner.path
        self.size = inner.size
        self.coalesce_gap = inner.coalesce_gap
        self.requests = 0
        self.bytes_read = 0
        self._lock = threading.Lock()

    def _read(self, offset: int, length: int) -> bytes | memoryview:
        with self._lock:
            self.requests += 1
            self.bytes_read += length
        return self.inner._read(offset, length)

    def will_need(self, ranges: Sequence[Range]) -> None:
        self.inner.advise(ranges)  # every byte read goes through _read, to be counted

    def _prefetch(self, ranges: Sequence[Range]) -> None:
        self.inner._prefetch(ranges)

    def close(self) -> None:
        self.inner.close()
