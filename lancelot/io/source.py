"""Byte sources with a single range-read interface.

Every read of the file goes through ``ByteSource.read_ranges``: the reader plans
all the byte ranges it needs, then fetches them in one call.  Near ranges are
coalesced into one request (``coalesce``) so that many small reads cost few I/Os.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lancelot.errors import CorruptFileError, LanceError, LanceFileNotFoundError, TruncatedFileError

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

Range = tuple[int, int]  # (offset, length)
#: bytes held in memory by a source, as sorted (offset, data) blocks (``ByteSource.stage``)
Staged = tuple[tuple[int, memoryview], ...]


def coalesce(ranges: Sequence[Range], gap: int) -> list[tuple[int, int, list[int]]]:
    """Merge ranges whose gaps are at most ``gap`` bytes.

    Returns (offset, length, member indices) for each merged request.
    """
    order = sorted(range(len(ranges)), key=ranges.__getitem__)
    merged: list[tuple[int, int, list[int]]] = []
    start = end = 0
    members: list[int] | None = None
    for i in order:
        off, ln = ranges[i]
        if members is not None and off <= end + gap:
            members.append(i)
            end = max(end, off + ln)
        else:
            if members is not None:
                merged.append((start, end - start, members))
            start, end, members = off, off + ln, [i]
    if members is not None:
        merged.append((start, end - start, members))
    return merged


#: a read_ranges of several requests adding up to at most this many bytes hints them all first
PREFETCH_MAX_BYTES = 16 << 20
#: will_need remembers the offsets of at most this many ranges (read_ranges does not hint them again;
#: an offset hinted long ago and read again only misses a hint)
HINTED_MAX = 4096


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
        if len(merged) > 1 and self.max_concurrency > 1:
            todo = [(off, ln) for off, ln, _ in merged if ln]
            blobs = dict(zip(todo, _pool(self.max_concurrency).map(lambda r: self._read(*r), todo)))
        else:
            if len(merged) > 1:  # the requests are read one by one: let the OS fetch them side by side
                self._prefetch([(off, ln) for off, ln, _ in merged])
            blobs = None
        for off, ln, members in merged:
            if blobs is not None:
                data = memoryview(blobs[(off, ln)]) if ln else memoryview(b"")
            else:
                data = memoryview(self._read(off, ln)) if ln else memoryview(b"")
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
_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOL_LOCK = threading.Lock()


def _pool(workers: int) -> ThreadPoolExecutor:
    """A shared thread pool for the side-by-side requests of remote sources."""
    with _POOL_LOCK:
        pool = _POOLS.get(workers)
        if pool is None:
            from concurrent.futures import ThreadPoolExecutor

            pool = _POOLS[workers] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lancelot-io")
        return pool


class LocalFileSource(ByteSource):
    """A local file read with ``os.pread`` (thread-safe, no shared file position)."""

    def __init__(self, path: str | os.PathLike[str], shown: str | None = None) -> None:
        local = os.fspath(path)
        self.path = shown or local  # errors name what the user gave (a file:// URL stays one)
        try:
            self._fd = os.open(local, os.O_RDONLY)
        except FileNotFoundError:
            raise LanceFileNotFoundError("no such file", path=self.path) from None
        except IsADirectoryError:
            raise LanceError("is a directory, not a Lance file", path=self.path) from None
        except OSError as e:
            raise LanceError(f"cannot open: {e.strerror}", path=self.path) from None
        st = os.fstat(self._fd)
        if not os.path.isfile(local):
            os.close(self._fd)
            self._fd = -1
            raise LanceError("is a directory, not a Lance file", path=self.path)
        self.size = st.st_size
        self._hinted: set[int] = set()

    def _read(self, offset: int, length: int) -> bytes:
        return os.pread(self._fd, length, offset)

    def _current_size(self) -> int | None:
        return os.fstat(self._fd).st_size if self._fd >= 0 else None

    def will_need(self, ranges: Sequence[Range]) -> None:
        """``posix_fadvise(WILLNEED)`` each range, so the OS reads them ahead, side by side."""
        if len(self._hinted) + len(ranges) > HINTED_MAX:
            self._hinted = set()
        if len(ranges) <= HINTED_MAX:
            self._hinted.update(off for off, _ in ranges)
        self._fadvise(ranges)

    def _fadvise(self, ranges: Sequence[Range]) -> None:
        if self._fd < 0 or not hasattr(os, "posix_fadvise"):
            return
        advise, fd, willneed = os.posix_fadvise, self._fd, os.POSIX_FADV_WILLNEED
        try:
            for off, ln in ranges:
                advise(fd, off, ln, willneed)
        except OSError:
            return  # only a hint: the read itself reports any problem

    def _prefetch(self, ranges: Sequence[Range]) -> None:
        """Many scattered requests of a few bytes each (a take) cost one disk latency together,
        not one each; big reads are left to the kernel's own read-ahead, and requests the last
        ``will_need`` announced are not announced again."""
        hinted = self._hinted
        todo = [r for r in ranges if r[0] not in hinted] if hinted else ranges
        if len(todo) > 1 and sum(ln for _, ln in todo) <= PREFETCH_MAX_BYTES:
            self._fadvise(todo)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class MemorySource(ByteSource):
    """Bytes already in memory (tests, small files)."""

    def __init__(self, data: bytes, path: str = "<memory>") -> None:
        self._data = memoryview(data)
        self.path = path
        self.size = len(data)

    def _read(self, offset: int, length: int) -> memoryview:
        return self._data[offset : offset + length]


class FsspecSource(ByteSource):
    """Any fsspec URL (memory://, s3://, file://...): every request is a round trip.

    So: one ``info`` call opens it; near ranges merge across gaps of up to 1 MiB (at ~20 ms a
    request and ~100 MB/s, fetching a 1 MiB gap costs less than another request); the merged
    requests of a round go out side by side (``max_concurrency``); the file's tail, read once
    by ``read_metadata``, is kept (footer, metadata and schema are served from it).
    """

    coalesce_gap = 1 << 20
    max_concurrency = 16
    round_trip_costly = True

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        import fsspec

        self.path = url
        fs, p = fsspec.core.url_to_fs(url, **(storage_options or {}))
        self._fs, self._p = fs, p
        try:
            info = fs.info(p)
        except FileNotFoundError:
            raise LanceFileNotFoundError("no such file", path=url) from None
        except OSError as e:
            raise LanceError(f"cannot open: {e.strerror or e}", path=url) from None
        if info.get("type") == "directory":
            raise LanceError("is a directory, not a Lance file", path=url)
        try:
            self.size = int(info["size"])
        except (KeyError, TypeError, ValueError):
            raise LanceError("the store gives no size for this object", path=url) from None

    def _current_size(self) -> int | None:
        try:
            return int(self._fs.size(self._p))
        except OSError:
            return None

    def _read(self, offset: int, length: int) -> bytes:
        data: bytes = self._fs.cat_file(self._p, start=offset, end=offset + length)
        if offset + length == self.size and len(data) == length and (not self._kept or offset < self._kept[0][0]):
            self._kept = ((offset, memoryview(data)),)  # the (longest) tail: metadata reads after open hit it
        return data


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
        self.inner.will_need(ranges)

    def _prefetch(self, ranges: Sequence[Range]) -> None:
        self.inner._prefetch(ranges)

    def close(self) -> None:
        self.inner.close()


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
