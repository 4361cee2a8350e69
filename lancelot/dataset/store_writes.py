"""Plain writes to the object store (``ObjectStore``'s, store.py): whole objects replaced, new objects, hints,
deletes, and data-file writers; readers never see part of an object.

Durability on local disks is pylance's: its object store (rust object_store 0.12 ``LocalFileSystem``) never fsyncs,
so a commit is atomic and safe against crashed or killed processes (the page cache outlives them) but not against
power loss.  lancelot does the same by default (no fsync of data files, deletion and transaction files, manifests or
directories); the storage option ``{"fsync": True}`` syncs every file before it is published and the directory after,
for commits that must survive power loss."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lancelot.dataset.store_files import fault, fsync_dir, local_temp, local_writer, unlink, upload_writer
from lancelot.dataset.store_paths import StorePaths
from lancelot.io.counters import count_write

if TYPE_CHECKING:
    from lancelot.writer import LanceWriter


class StoreWrites(StorePaths):
    """``ObjectStore``'s plain writes."""

    def put(self, path: str, data: bytes) -> None:
        """Write (or replace) one object whole; readers never see part of it."""
        full = self.full_path(path)
        fault("put:before")
        if self.fs is None:
            tmp = local_temp(full, data, self.sync)
            try:
                os.replace(tmp, full)
            except BaseException:
                unlink(tmp)
                raise
            if self.sync:
                fsync_dir(os.path.dirname(full))
        else:
            self.fs.pipe_file(full, bytes(data))
        count_write(len(data))
        fault("put:after")

    def put_new(self, path: str, data: bytes) -> None:
        """``put`` of an object under a new, unique name that nobody reads before a manifest names
        it (a transaction file): locally written in place, no temporary file and rename (a writer
        killed meanwhile leaves a partial file no manifest names, as a partial temporary file)."""
        full = self.full_path(path)
        if self.fs is not None:
            return self.put(path, data)
        fault("put:before")
        try:
            create_local(full, data, self.sync)
        except FileExistsError:  # (the same transaction committed again)
            return self.put(path, data)
        if self.sync:
            fsync_dir(os.path.dirname(full))
        count_write(len(data))
        fault("put:after")

    def put_hint(self, path: str, data: bytes) -> None:
        """Write a hint that readers check before they trust it (``latest_version_hint.json``):
        locally its bytes overwritten in place, then its size cut to ``data``'s (a rename over the
        old file has ext4 write the new one out at once: the costliest step of an append).  A
        reader may meet a mix of old and new bytes, which it finds wrong and lists instead (as an
        error here leaves it); a file linked elsewhere too (a hard-linked copy) is replaced by ``put``."""
        if self.fs is not None or self.sync:
            return self.put(path, data)
        fault("put:before")
        try:
            fd = os.open(self.full_path(path), os.O_WRONLY | os.O_CREAT, 0o666)
        except OSError:  # (no directory yet, a hint not writable in place...)
            return self.put(path, data)
        linked = True
        try:
            st = os.fstat(fd)
            linked = st.st_nlink > 1
        finally:
            if linked:  # (errors too)
                os.close(fd)
        if linked:
            return self.put(path, data)
        write_closing(fd, data, False, size=st.st_size)
        count_write(len(data))
        fault("put:after")

    def delete(self, path: str) -> None:
        """Remove one object (nothing happens if it is not there)."""
        full = self.full_path(path)
        if self.fs is None:
            unlink(full)
            return
        try:
            self.fs.rm_file(full)
        except FileNotFoundError:
            pass
        self.fs.invalidate_cache(full)

    def remove_empty_dir(self, path: str) -> None:
        """Remove the directory ``path`` if it is empty (local disks; object stores have none)."""
        if self.fs is None:
            try:
                os.rmdir(self.full_path(path))
            except OSError:
                pass

    def open_output(
        self, path: str, schema: pa.Schema, *, in_place: bool = False, **writer_options: Any
    ) -> LanceWriter:
        """A ``lancelot.LanceWriter`` whose ``close()`` makes the file appear at ``path`` whole
        (``abort()`` leaves nothing); ``writer_options`` go to LanceWriter (version, max_page_bytes).
        After ``close()``, ``.file_size`` is the file's size in bytes.  ``in_place``: a new, unique
        name nobody reads before a manifest names it (a data file): a local file is written there
        from the start, without a temporary file and rename."""
        full = self.full_path(path)
        if self.fs is None:
            if not os.path.isdir(d := os.path.dirname(full)):  # (one stat where it is there, as it mostly is)
                os.makedirs(d, exist_ok=True)
            return local_writer()(full, schema, sync=self.sync, in_place=in_place, **writer_options)
        return upload_writer()(self, path, full, schema, **writer_options)


def create_local(full: str, data: bytes, sync: bool) -> None:
    """Create the local file ``full`` holding ``data`` (its directory too when missing); a FileExistsError
    when it is there, and no partial file left on other errors."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        fd = os.open(full, flags, 0o666)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(full), exist_ok=True)
        fd = os.open(full, flags, 0o666)
    try:
        write_closing(fd, data, sync)
    except BaseException:
        unlink(full)
        raise


def write_closing(fd: int, data: bytes, sync: bool, size: int = 0) -> None:
    """Write ``data`` at the start of the open file ``fd`` (cut to its length when it was ``size``
    bytes long), then close it, on errors too."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if size > len(data):
            os.ftruncate(fd, len(data))
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
