"""The object store under a dataset: the objects of one root (a local path or an fsspec URL), read and listed.

A Lance dataset is a directory of objects (table format: ``data/``, ``_versions/``, ``_transactions/``,
``_deletions/``).  ``ObjectStore`` gathers its root and paths (store_paths.py), plain writes (store_writes.py) and the
commit primitive ``put_if_not_exists`` (store_create.py) with the reads and listings here.  Listings are never served
from a cache, since commits and cleanup depend on them (fsspec's directory cache is dropped after each)."""

from __future__ import annotations

import builtins
import os
import posixpath
from typing import Any

from lancelot.dataset.store_create import StoreCreate
from lancelot.dataset.store_files import read_local
from lancelot.dataset.store_writes import StoreWrites
from lancelot.errors import CorruptFileError, LanceError, LanceFileNotFoundError
from lancelot.io.source import ByteSource, FsspecSource, LocalFileSource


class ObjectStore(StoreWrites, StoreCreate):
    """The objects under one dataset root (a local path or an fsspec URL)."""

    #: the user's commit lock every manifest created through this store takes (``commit_options.with_commit_lock``)
    commit_lock: Any = None

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

    def list(self, prefix: str = "") -> list[str]:
        """Names (not paths) of the objects directly under the directory ``prefix``, sorted;
        ``[]`` if there is none.  Never served from a cache: commits depend on it."""
        full = self.full_path(prefix) if prefix not in ("", ".", "/") else self.root
        if self.fs is None:
            try:
                with os.scandir(full) as it:
                    return sorted(e.name for e in it if not e.is_dir())
            except (FileNotFoundError, NotADirectoryError):
                return []
        entries = self._listing(self.fs.ls, full) or []
        return sorted(posixpath.basename(e["name"].rstrip("/")) for e in entries if e.get("type") != "directory")

    def _listing(self, call: Any, full: str) -> Any:
        """``call(full, detail=True)`` (fsspec's ls or find) afresh, None where there is no such directory;
        what it left in fsspec's directory cache is dropped, subdirectories too (fsspec answers from a
        cached listing that a file written since by another process is missing)."""
        self.fs.invalidate_cache(full)
        try:
            return call(full, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return None
        finally:
            self._forget_listing(full)

    def _forget_listing(self, full: str) -> None:
        """Drop ``full``'s entries, and its subdirectories', from fsspec's directory cache."""
        self.fs.invalidate_cache(full)
        cache = getattr(self.fs, "dircache", None)
        if cache is not None:
            below = self.fs._strip_protocol(full).rstrip("/") + "/"
            for key in [k for k in list(cache) if k.startswith(below)]:
                cache.pop(key, None)

    def list_names(self, prefix: str) -> builtins.list[str]:
        """Names under the directory ``prefix`` in no particular order, subdirectories possibly
        among them (callers filter by name): ``list`` without a stat per entry, for directories
        of thousands of manifests.  Never served from a cache."""
        if self.fs is None:
            try:
                return os.listdir(self.full_path(prefix))
            except (FileNotFoundError, NotADirectoryError):
                return []
        return self.list(prefix)

    def list_files(self, prefix: str) -> builtins.list[tuple[str, int, float]]:  # `list` is the method above
        """(dataset-relative path, size, modification time in epoch seconds) of every object under
        the directory ``prefix``, recursively; ``[]`` if there is none (cleanup uses it)."""
        full = self.full_path(prefix)
        out: list[tuple[str, int, float]] = []
        if self.fs is None:
            top = os.path.relpath(full, self.root).replace(os.sep, "/")  # (once, not per file)
            dirs = [(full, "" if top == "." else top + "/")]
            while dirs:  # (os.walk's files: symbolic links to directories listed, not followed)
                d, rel = dirs.pop()
                try:
                    entries = list(os.scandir(d))
                except (FileNotFoundError, NotADirectoryError):
                    continue
                for e in entries:
                    try:
                        if e.is_dir() and not e.is_symlink():
                            dirs.append((e.path, rel + e.name + "/"))
                        elif not e.is_dir():
                            st = e.stat()
                            out.append((rel + e.name, st.st_size, st.st_mtime))
                    except FileNotFoundError:
                        continue
            return sorted(out)
        found = self._listing(self.fs.find, full) or {}
        for name, info in found.items():
            if info.get("type") == "directory":
                continue
            m = info.get("LastModified") or info.get("mtime") or info.get("created") or 0
            ts = m.timestamp() if hasattr(m, "timestamp") else float(m)
            out.append((name[len(self.root) :].lstrip("/"), int(info.get("size") or 0), ts))
        return sorted(out)


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
