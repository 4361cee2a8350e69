"""Where written bytes go: ``open_target`` (a local path or any fsspec URL, made to appear at once
on commit) and ``BackgroundWriter`` (ordered background writes; the writer's side of source.py).

``BackgroundWriter.write`` queues bytes and returns at once; one thread writes them to the
file in the order they were queued, so encoding the next page overlaps the disk write of
the last one (the kernel's page-cache copy and any writeback throttling are paid there,
not by the encoder).  At most ``max_bytes`` wait at a time (memory stays bounded); the
first write error is raised by the next ``write`` or by ``close``.  Queued data must not be
modified until written: the writer only queues freshly encoded buffers and immutable Arrow
buffers.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections import deque
from contextvars import ContextVar
from typing import IO, Any

from lancelot.errors import LanceError, LanceFileNotFoundError
from lancelot.io.heap import release_free_memory
from lancelot.io.storage_options import fsspec_options

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
#: the writer thread syncs the data written so far every this many bytes, so the closing fsync
#: (the file must be on disk before it is renamed into place) finds little left to do, and then
#: hands the C heap's free pages back (io/heap.py)
SYNC_EVERY = 64 * 1024 * 1024


class BackgroundWriter:
    """Writes queued buffers to ``f`` on one thread, in order."""

    def __init__(
        self, f: IO[bytes], max_bytes: int = DEFAULT_MAX_BYTES, sync_every: int = SYNC_EVERY, inline_bytes: int = 0
    ) -> None:
        """``inline_bytes``: until the first write of at least that many bytes, writes happen in the
        caller's thread and no thread is started (a small file's one write costs less than a thread)."""
        self._f = f
        self._max = max_bytes
        self.sync_every: float = sync_every  # inf: never (dataset/store.py)
        self._inline = inline_bytes
        self._unsynced = 0
        self._queue: deque[bytes | memoryview] = deque()
        self._pending = 0  # bytes queued or being written
        self._cond = threading.Condition()
        self._error: BaseException | None = None
        self._closing = False
        self._thread: threading.Thread | None = None
        if not inline_bytes:
            self._start()

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="lancelot-file", daemon=True)
        self._thread.start()

    def _write_now(self, data: bytes | memoryview) -> None:
        self._f.write(data)
        self._unsynced += len(data)
        if self._unsynced >= self.sync_every:
            self._f.flush()
            os.fdatasync(self._f.fileno())
            self._unsynced = 0
            release_free_memory()  # the pages' freed temporaries (io/heap.py)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue:
                    return
                data = self._queue.popleft()
            try:
                if self._error is None:
                    self._write_now(data)
            except BaseException as e:  # raised in the caller's thread
                self._error = e
            with self._cond:
                self._pending -= len(data)
                self._cond.notify_all()

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def write(self, data: bytes | memoryview) -> None:
        """Queue ``data`` (bytes or a byte memoryview); blocks while ``max_bytes`` are already waiting."""
        self._raise()
        n = len(data)
        if self._thread is None:
            if n < self._inline:
                self._write_now(data)
                return
            self._start()
        with self._cond:
            while self._pending and self._pending + n > self._max and self._error is None:
                self._cond.wait()
            self._queue.append(data)
            self._pending += n
            self._cond.notify_all()
        self._raise()

    def flush(self) -> None:
        """Wait until everything queued is written (and raise a write error)."""
        if self._thread is None:  # (every write was made in the caller's thread)
            self._f.flush()
            return
        with self._cond:
            while self._pending and self._error is None:
                self._cond.wait()
        self._raise()
        self._f.flush()

    def close(self) -> None:
        """Stop the thread after the queued writes (errors are not raised: call ``flush`` first)."""
        if self._thread is None:
            self._closing = True
            return
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()

    def abort(self) -> None:
        """Drop what is queued and stop the thread."""
        with self._cond:
            self._queue.clear()
            self._pending = 0
            self._closing = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()


class FileTarget:
    """Where a new file's bytes go until ``commit`` makes them appear at ``path`` at once.

    ``file`` is a local binary file to write to.  ``path`` is the user's path or URL: every
    error names it (never the temporary file).
    """

    path: str
    file: IO[bytes]
    _tmp: str  # the local temporary file ``file`` writes

    def commit(self) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        """Close and remove the local temporary file (the target is left as it was)."""
        try:
            self.file.close()
        except OSError:
            pass
        if os.path.exists(self._tmp):
            os.unlink(self._tmp)

    def error(self, e: OSError, doing: str) -> LanceError:
        """An OSError met while ``doing`` something, as a LanceError naming the user's path."""
        why = e.strerror or str(e) or type(e).__name__
        return LanceError(f"cannot {doing}: {why}", path=self.path)


#: True while a dataset opens a data file (``dataset/store_files.py``): a new, unique name that nobody
#: reads before a manifest names it, so it is written in place, without a temporary file and rename
IN_PLACE: ContextVar[bool] = ContextVar("IN_PLACE", default=False)


class LocalTarget(FileTarget):
    """A local file: written under a temporary name beside the target, fsynced and renamed into
    place by ``commit`` (atomic: readers see the old file or the whole new one); under ``IN_PLACE``,
    created at the target itself (it must not exist)."""

    sync = True  # False: renamed into place without fsync (a dataset's data file, dataset/store.py)

    def __init__(self, path: str, shown: str | None = None) -> None:
        self.path = shown or path
        self._dst = path
        if IN_PLACE.get():
            self._tmp = path
        elif os.path.isdir(path):
            raise LanceError("is a directory: give a file path to write", path=self.path)
        else:  # (beside the target: its directory as given, the current one for a bare name)
            self._tmp = os.path.join(os.path.split(path)[0], f".lancelot-{os.urandom(16).hex()}.tmp")
        try:  # (mode 0666 less the umask: the usual mode of a finished file)
            fd = os.open(self._tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except (FileNotFoundError, NotADirectoryError):
            d = os.path.dirname(os.path.abspath(path))
            raise LanceFileNotFoundError(f"directory {d!r} does not exist", path=self.path) from None
        except OSError as e:
            raise self.error(e, "create the file") from None
        self.file = os.fdopen(fd, "wb", buffering=1 << 20)

    def commit(self) -> None:
        try:
            if self.sync:
                self.file.flush()
                os.fsync(self.file.fileno())
            self.file.close()
            if self._tmp != self._dst:
                os.replace(self._tmp, self._dst)
        except OSError as e:
            self.abort()
            raise self.error(e, "finish the file") from None


class FsspecTarget(FileTarget):
    """Any other fsspec URL (memory://, s3://...): written to a local temporary file, then
    uploaded by ``commit`` in one ``put`` (an object store shows the whole object or none)."""

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        import fsspec

        self.path = url
        self._fs, self._p = fsspec.core.url_to_fs(url, **fsspec_options(url, storage_options))
        try:
            if self._fs.isdir(self._p):
                raise LanceError("is a directory: give a file path to write", path=url)
        except OSError as e:
            raise self.error(e, "reach the target") from None
        f = tempfile.NamedTemporaryFile(prefix="lancelot-", suffix=".tmp", delete=False)  # noqa: SIM115
        self.file, self._tmp = f, f.name

    def commit(self) -> None:
        try:
            self.file.close()
            parent = self._fs._parent(self._p)
            if parent and not self._fs.exists(parent):
                self._fs.makedirs(parent, exist_ok=True)
            self._fs.put_file(self._tmp, self._p)
        except OSError as e:
            raise self.error(e, "upload the file") from None
        finally:
            self.abort()  # FileTarget's: the local temporary file goes either way


def open_target(path_or_url: str | os.PathLike[str], storage_options: dict[str, Any] | None = None) -> FileTarget:
    """A FileTarget for a local path, a ``file://`` URL or any other fsspec URL."""
    s = os.fspath(path_or_url)
    if "://" not in s:
        return LocalTarget(s)
    import fsspec
    from fsspec.implementations.local import LocalFileSystem

    fs, p = fsspec.core.url_to_fs(s, **fsspec_options(s, storage_options))
    if isinstance(fs, LocalFileSystem):
        return LocalTarget(p, shown=s)
    return FsspecTarget(s, storage_options)
