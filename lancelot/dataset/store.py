"""The object store under a dataset: the objects of one root (a local path or an fsspec URL), read.

A Lance dataset is a directory of objects (table format: ``data/``, ``_versions/``, ``_transactions/``,
``_deletions/``).  ``ObjectStore`` gathers its root and paths (store_paths.py), listings (store_listing.py), plain
writes (store_writes.py) and the commit primitive ``put_if_not_exists`` (store_create.py) with the reads here."""

from __future__ import annotations

import os

from lancelot.dataset.store_create import StoreCreate
from lancelot.dataset.store_files import read_local
from lancelot.dataset.store_listing import StoreListing
from lancelot.dataset.store_writes import StoreWrites
from lancelot.errors import CorruptFileError, LanceError, LanceFileNotFoundError
from lancelot.io.source import ByteSource, FsspecSource, LocalFileSource


class ObjectStore(StoreListing, StoreWrites, StoreCreate):
    """The objects under one dataset root (a local path or an fsspec URL)."""

    def read(self, path: str) -> bytes:
        """All bytes of one object."""
        full = self.full_path(path)
        try:
            if self.fs is None:
                return read_local(full)
            data: bytes = self.fs.cat_file(full)
            return data
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise self._missing(path) from None

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset``; a range past the end is a CorruptFileError."""
        if offset < 0 or length < 0:
            raise LanceError(f"invalid byte range ({offset}, {length})", path=self.url(path))
        full = self.full_path(path)
        try:
            if self.fs is None:
                with open(full, "rb") as f:
                    data = os.pread(f.fileno(), length, offset)
            else:
                data = self.fs.cat_file(full, start=offset, end=offset + length) if length else b""
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise self._missing(path) from None
        if len(data) != length:
            raise CorruptFileError(
                f"byte range [{offset}, {offset + length}) lies past the end of the object ({len(data)} bytes read)",
                path=self.url(path),
            )
        return data

    def size(self, path: str) -> int:
        full = self.full_path(path)
        try:
            if self.fs is None:
                return os.stat(full).st_size
            self.fs.invalidate_cache(full)
            return int(self.fs.size(full))
        except (FileNotFoundError, NotADirectoryError):
            raise self._missing(path) from None

    def exists(self, path: str) -> bool:
        full = self.full_path(path)
        if self.fs is None:
            return os.path.exists(full)
        self.fs.invalidate_cache(full)
        return bool(self.fs.exists(full))

    def open_input(self, path: str, size: int | None = None) -> ByteSource:
        """A ByteSource over one object, for ``lancelot.LanceFile`` (``size`` saves a request)."""
        full = self.full_path(path)
        if self.fs is None:
            try:
                return LocalFileSource(full)
            except LanceError as e:
                if not os.path.exists(full):
                    raise self._missing(path) from None
                raise e
        return _StoreSource(self, path, full, size)


class _StoreSource(FsspecSource):
    """A ByteSource over an object of the store's filesystem (FsspecSource's rounds: coalesced
    ranges fetched side by side, the tail kept), opened without a request when the size is known."""

    def __init__(self, store: ObjectStore, rel: str, full: str, size: int | None) -> None:
        self._fs, self._p = store.fs, full
        self.path = store.url(rel)
        if size is None:
            try:
                size = int(self._fs.size(full))
            except FileNotFoundError:
                raise LanceFileNotFoundError("no such file in the dataset", path=self.path) from None
        self.size = int(size)

    def _read(self, offset: int, length: int) -> bytes:
        try:
            return super()._read(offset, length)
        except FileNotFoundError:
            raise LanceFileNotFoundError("no such file in the dataset", path=self.path) from None
