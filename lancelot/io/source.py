"""The sources of real files, and ``open_source``, which picks one for a path or URL: ``LocalFileSource`` (``pread``,
told ahead to the OS with ``posix_fadvise``, served from the page cache without waiting where it can with
``RWF_NOWAIT``) and ``FsspecSource`` (any fsspec URL: every request a round trip).  ``ByteSource``, its range reads and
staging, ``MemorySource`` and ``CountingSource`` are io/byte_source.py's (importable from here too)."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from typing import Any

import numpy as np

from lancelot.errors import LanceError, LanceFileNotFoundError
from lancelot.io.byte_source import ByteSource, CountingSource, MemorySource, Range, Staged, coalesce, coalesce_offsets
from lancelot.io.counters import count_read

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

#: a read_ranges of several requests adding up to at most this many bytes hints them all first
PREFETCH_MAX_BYTES = 16 << 20
#: local reads of at least this many bytes go into pooled memory (``_buffer``): glibc serves
#: allocations from 128 KiB on as fresh mmaps (until a free raises its threshold, which makes the
#: same read 1.7x slower in one process than in the next), whose pages fault in on the copy
POOLED_READ_BYTES = 1 << 17
#: local reads of at least this many bytes (below ``POOLED_READ_BYTES``) go into uninitialised memory
EMPTY_READ_BYTES = 4096
#: ``_read_cached`` (RWF_NOWAIT) tries ranges below this many bytes; larger ones are read plainly
NOWAIT_MAX_BYTES = 1 << 20
#: will_need remembers the offsets of at most this many ranges (read_ranges does not hint them again;
#: an offset hinted long ago and read again only misses a hint)
HINTED_MAX = 4096
#: a will_need of at least this many blocks is not hinted when probes find it in the page cache
PROBE_MIN_BLOCKS = 64
#: a will_need of at most this many bytes reads at once what the page cache holds of it
#: (``LocalFileSource.will_need``: a take's first round)
EARLY_MAX_BYTES = 1 << 20
#: a local file of at most this many bytes is read whole when opened and served from memory (its
#: metadata read, the last 64 KiB, would read it all anyway)
KEEP_WHOLE_BYTES = 64 << 10
#: ``preadv`` flag: fail instead of waiting when the bytes are not in the page cache (Linux >= 4.14)
_NOWAIT: int = getattr(os, "RWF_NOWAIT", 0) if hasattr(os, "preadv") else 0


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
        if not stat.S_ISREG(st.st_mode):
            os.close(self._fd)
            self._fd = -1
            raise LanceError("is a directory, not a Lance file", path=self.path)
        self.size = st.st_size
        if self.size <= KEEP_WHOLE_BYTES:
            whole = os.pread(self._fd, self.size, 0)
            count_read(len(whole))
            if len(whole) == self.size:
                self._kept = ((0, memoryview(whole)),)

    #: the offsets ``advise`` told the OS of (a set of its own once it has)
    _hinted: set[int] | frozenset[int] = frozenset()
    _nowait = bool(_NOWAIT)
    #: what will_need read ahead, until unstage: the offset of each range it was told of -> (offset,
    #: bytes) of the block holding it (replaced, never changed in place: the empty one is shared)
    _early: dict[int, tuple[int, memoryview]] = {}  # noqa: RUF012

    def _read(self, offset: int, length: int) -> bytes | memoryview:
        """``pread``; a large range lands in a buffer of pyarrow's memory pool instead of a fresh
        bytes object (whose pages, new mmap pages, all fault in on the copy: 28 MB read in 14 ms
        against 4 ms into recycled memory)."""
        if length < POOLED_READ_BYTES or not hasattr(os, "preadv"):
            data = os.pread(self._fd, length, offset)
            count_read(len(data))
            return data
        view = _pooled(length)
        got = 0
        while got < length:
            n = os.preadv(self._fd, [view[got:]], offset + got)
            if n <= 0:
                break
            got += n
            count_read(n)
        return view[:got]

    def _read_cached(self, offset: int, length: int) -> bytearray | memoryview | None:
        """The range when the page cache holds all of it, else None, without waiting for the disk
        (``preadv`` with ``RWF_NOWAIT``: one syscall, no read-ahead hint needed)."""
        if not self._nowait or length >= NOWAIT_MAX_BYTES:
            return None
        buf = _buffer(length)
        try:
            n = os.preadv(self._fd, [buf], offset, _NOWAIT)
        except BlockingIOError:
            return None
        except OSError:  # a file system without RWF_NOWAIT: hint and read as before
            self._nowait = False
            return None
        count_read(n)
        return buf if n == length else None  # partly cached (or short): the plain read decides

    def read_ranges(self, ranges: Sequence[Range]) -> list[memoryview]:
        if self._kept:  # a small file, held whole
            whole, size = self._kept[0][1], self.size
            out = []
            for off, ln in ranges:
                if off < 0 or ln < 0 or off + ln > size:
                    return super().read_ranges(ranges)  # which reports the bad range
                out.append(whole[off : off + ln])
            return out
        if self._early:  # a take's first round, read by will_need: no request, no coalescing
            out = []
            for off, ln in ranges:
                data = self._early_slice(off, ln)
                if data is None:
                    break
                out.append(data)
            else:
                return out
        elif self._nowait and not self._staged:
            cached = self._read_all_cached(ranges)
            if cached is not None:
                return cached
        return super().read_ranges(ranges)

    def _read_all_cached(self, ranges: Sequence[Range]) -> list[memoryview] | None:
        """``ranges`` when the page cache holds them all (near ones merged, each block one
        ``_read_cached``), else None: a range is bad, the blocks large or not cached (the general
        path reports, hints and reads).  A take's few small ranges spent more in the general path's
        layers than in their reads."""
        size = self.size
        for off, ln in ranges:
            if off < 0 or ln < 0 or off + ln > size:
                return None
        blocks = coalesce(ranges, self.coalesce_gap)
        if sum(ln for _, ln, _ in blocks) >= NOWAIT_MAX_BYTES:
            return None
        out: list[memoryview] = [memoryview(b"")] * len(ranges)
        for start, length, members in blocks:
            if not length:
                continue
            data = self._read_cached(start, length)
            if data is None:
                return None
            view = memoryview(data)
            for i in members:
                off, ln = ranges[i]
                out[i] = view[off - start : off - start + ln]
        return out

    def _early_slice(self, off: int, ln: int) -> memoryview | None:
        """The bytes [off, off + ln) when ``will_need``, told of a range at ``off``, read a block that
        holds them; else None."""
        block = self._early.get(off)
        if block is None or ln < 0 or off + ln > block[0] + len(block[1]):
            return None
        return block[1][off - block[0] : off - block[0] + ln]

    def _requests(self, requests: list[Range]) -> dict[int, bytes | bytearray | memoryview]:
        """Requests will_need read ahead cost nothing, those the page cache holds one ``preadv``
        each; only the others are hinted (side by side, ``_prefetch``) and then read."""
        got: dict[int, bytes | bytearray | memoryview] = {}
        missed = []
        for off, ln in requests:
            data: bytes | bytearray | memoryview | None = self._early_slice(off, ln)
            if data is None:
                data = self._read_cached(off, ln)
            if data is None:
                missed.append((off, ln))
            else:
                got[off] = data
        if missed:
            got.update(super()._requests(missed))
        return got

    def _current_size(self) -> int | None:
        return os.fstat(self._fd).st_size if self._fd >= 0 else None

    def will_need(self, ranges: Sequence[Range]) -> None:
        """Ranges about to be read (closer than ``coalesce_gap`` taken as one: a clustered take's
        rows cost a call per run, not per row).  A few (a take's first round, at most
        ``EARLY_MAX_BYTES``) are read now where the page cache holds them, and served from memory
        until ``unstage``; the others are ``advise``-d, so the OS reads them ahead, side by side."""
        if self._kept:  # a small file, held whole
            return
        merged = coalesce_offsets(ranges, self.coalesce_gap)
        early: dict[int, tuple[int, memoryview]] = {}
        missed = [(off, ln) for off, ln, _ in merged]
        if self._nowait and sum(ln for _, ln in missed) <= EARLY_MAX_BYTES:
            missed = []
            for off, ln, starts in merged:
                data = self._read_cached(off, ln) if ln else None
                if data is None:
                    missed.append((off, ln))
                    continue
                block = (off, memoryview(data))
                for start in starts:
                    early[start] = block
        self._early = early
        if missed and len(missed) == len(merged) >= PROBE_MIN_BLOCKS and self._looks_cached(merged):
            return  # hinting thousands of cached blocks costs ~5 us each; read_ranges hints what misses
        if missed:
            self.advise(missed if len(missed) < len(merged) else ranges)

    def _looks_cached(self, blocks: list[tuple[int, int, list[int]]]) -> bool:
        """Whether the first, middle and last of ``blocks`` are in the page cache (a 4 KiB RWF_NOWAIT
        probe of each): a large take of a file the cache holds needs no hints."""
        for off, ln, _ in (blocks[0], blocks[len(blocks) // 2], blocks[-1]):
            if ln and self._read_cached(off, min(ln, 4096)) is None:
                return False
        return True

    def advise(self, ranges: Sequence[Range]) -> None:
        """``posix_fadvise(WILLNEED)`` the ranges (near ones as one), so the OS reads them ahead,
        side by side; read_ranges does not hint them again."""
        hinted = self._hinted
        if len(hinted) + len(ranges) > HINTED_MAX or type(hinted) is not set:
            hinted = self._hinted = set()
        if len(ranges) <= HINTED_MAX:
            hinted.update(off for off, _ in ranges)
        self._fadvise(
            [(o, n) for o, n, _ in coalesce_offsets(ranges, self.coalesce_gap)] if len(ranges) > 1 else ranges
        )

    def unstage(self, blocks: Staged | None = None) -> None:
        super().unstage(blocks)
        if blocks is None:
            self._early = {}

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


def _buffer(length: int) -> bytearray | memoryview:
    """A writable buffer for a read of ``length`` bytes: ``_pooled`` from ``POOLED_READ_BYTES`` on, numpy's
    uninitialised memory from ``EMPTY_READ_BYTES`` (a bytearray is zero-filled before the read overwrites
    it), else a bytearray."""
    if length < EMPTY_READ_BYTES:
        return bytearray(length)
    return np.empty(length, np.uint8).data if length < POOLED_READ_BYTES else _pooled(length)


def _pooled(length: int) -> memoryview:
    """``length`` writable bytes from pyarrow's memory pool, which keeps freed pages."""
    import pyarrow as pa

    return memoryview(pa.allocate_buffer(length))


class FsspecSource(ByteSource):
    """Any fsspec URL (memory://, s3://, file://...): every request is a round trip.

    So: one ``info`` call opens it; near ranges merge across gaps of up to 1 MiB (at ~20 ms a
    request and ~100 MB/s, fetching a 1 MiB gap costs less than another request); the merged
    requests of a round go out side by side (``max_concurrency``); the file's tail, read once
    by ``read_metadata``, is kept (footer, metadata and schema are served from it).
    """

    coalesce_gap = 1 << 20
    max_concurrency = 64
    round_trip_costly = True

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        import fsspec

        from lancelot.io.storage_options import fsspec_options

        self.path = url
        fs, p = fsspec.core.url_to_fs(url, **fsspec_options(url, storage_options))
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
        count_read(len(data))
        if offset + length == self.size and len(data) == length and (not self._kept or offset < self._kept[0][0]):
            self._kept = ((offset, memoryview(data)),)  # the (longest) tail: metadata reads after open hit it
        return data


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
