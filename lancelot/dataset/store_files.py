"""Local files under the object store (store.py): the fault hook of tests, temporary files published by rename or
link, and the writers of data files (``ObjectStore.open_output``: locally a ``LanceWriter`` without the syncs pylance
does not make, store_writes.py's "Durability"; elsewhere a local temporary file uploaded whole on ``close()``)."""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from lancelot.dataset.store import ObjectStore
    from lancelot.writer import LanceWriter


#: test hook: called with a point name at each step of a write (tests pause or kill the process there)
fault_hook: Callable[[str], None] | None = None


def fault(point: str) -> None:
    if fault_hook is not None:
        fault_hook(point)


def read_local(full: str) -> bytes:
    """All bytes of a local file (unbuffered: a scan reads one small deletion file per fragment)."""
    fd = os.open(full, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        data = os.read(fd, size) if size else b""
        if len(data) < size or not size:  # a file still growing, or one whose size stat does not give
            parts = [data]
            while True:
                more = os.read(fd, 1 << 20)
                if not more:
                    break
                parts.append(more)
            data = b"".join(parts)
        return data
    finally:
        os.close(fd)


def unlink(p: str) -> None:
    try:
        os.unlink(p)
    except FileNotFoundError:
        pass


def fsync_dir(d: str) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def local_temp(full: str, data: bytes, sync: bool) -> str:
    """Write ``data`` to a temporary file beside ``full``, making its directory when it is not
    there yet (its name never ends in .manifest; synced with the ``fsync`` option)."""
    d = os.path.dirname(full)
    tmp = os.path.join(d, f".tmp-{os.urandom(16).hex()}.partial")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        fd = os.open(tmp, flags, 0o666)
    except FileNotFoundError:  # (no stat per write for the directory, which is mostly there)
        os.makedirs(d, exist_ok=True)
        fd = os.open(tmp, flags, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        fault("temp:written")
        if sync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        unlink(tmp)
        raise
    os.close(fd)
    return tmp


@functools.cache
def local_writer() -> Callable[..., LanceWriter]:
    """The LanceWriter class of local data files (defined on first use: writer.py imports late)."""
    from lancelot.io.sink import IN_PLACE
    from lancelot.writer import LanceWriter

    class _LocalWriter(LanceWriter):
        def __init__(self, path: str, schema: pa.Schema, *, sync: bool, in_place: bool, **kw: Any) -> None:
            token = IN_PLACE.set(in_place)
            try:
                super().__init__(path, schema, **kw)
            finally:
                IN_PLACE.reset(token)
            self._sync = sync
            if not sync:  # (pylance's durability, module docstring)
                self._out.skip_sync()

        def close(self) -> None:
            if self._closed:
                return
            fault("output:before-close")
            super().close()
            self.file_size = self._out.pos  # (the footer's end)
            if self._sync:
                fsync_dir(os.path.dirname(self.path))
            fault("output:closed")

    return _LocalWriter


@functools.cache
def upload_writer() -> Callable[..., LanceWriter]:
    """A LanceWriter that writes a local temporary file and uploads it whole on ``close()``
    (s3fs: a multipart upload, visible only once complete)."""
    from lancelot.writer import LanceWriter

    class _UploadWriter(LanceWriter):
        def __init__(self, store: ObjectStore, rel: str, full: str, schema: pa.Schema, **kw: Any) -> None:
            self._store, self._full = store, full
            self._tmpdir = tempfile.mkdtemp(prefix="lancelot-upload-")
            try:
                super().__init__(os.path.join(self._tmpdir, "f.lance"), schema, **kw)
            except BaseException:
                rmtree(self._tmpdir)
                raise
            self.target = store.url(rel)

        def close(self) -> None:
            if self._closed:
                return
            try:
                super().close()
                self.file_size = os.stat(self.path).st_size
                fault("output:before-upload")
                self._store.fs.put_file(self.path, self._full)
            finally:
                rmtree(self._tmpdir)

        def abort(self) -> None:
            try:
                super().abort()
            finally:
                rmtree(getattr(self, "_tmpdir", ""))

    return _UploadWriter


def rmtree(d: str) -> None:
    if d and os.path.isdir(d):
        import shutil

        shutil.rmtree(d, ignore_errors=True)
