"""The object store under a dataset: reads, listings, plain writes and the commit primitive.

A Lance dataset is a directory of objects (table format: ``data/``, ``_versions/``,
``_transactions/``, ``_deletions/``).  A new version becomes visible only when its
manifest is *created*, never overwritten: ``put_if_not_exists`` is the one primitive the
commit protocol needs (table format, "Commit Protocol"), and this module provides it
where the store can do it atomically:

- local disks: the bytes go to a temporary file beside the target (a name that never ends
  in ``.manifest``), then ``os.link``-ed to the target name: the link fails if the name
  exists, and a reader sees the whole file or nothing (pylance does the same);
- S3 (s3fs): a conditional put (``If-None-Match: *``), what pylance's object store sends;
- ``memory://`` (one process): a lock-protected check and write;
- any other store: refused with ``UnsafeCommitError`` rather than risking lost commits.

Durability on local disks is pylance's: its object store (rust object_store 0.12
``LocalFileSystem``) never fsyncs, so a commit is atomic and safe against crashed or killed
processes (the page cache outlives them) but not against power loss.  lancelot does the same
by default (no fsync of data files, deletion and transaction files, manifests or directories);
the storage option ``{"fsync": True}`` syncs every file before it is published and the
directory after, for commits that must survive power loss.

Every path given to an ``ObjectStore`` is relative to the dataset root; ``..``, absolute
paths and other schemes are refused (``UnsafePathError``), so a manifest cannot make
lancelot read or write outside its dataset.
"""

from __future__ import annotations

import builtins
import errno
import functools
import os
import posixpath
import re
import threading
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lancelot.dataset.store_files import fault, fsync_dir, local_temp, local_writer, read_local, unlink, upload_writer
from lancelot.errors import CorruptFileError, LanceError, LanceFileNotFoundError
from lancelot.io.source import ByteSource, FsspecSource, LocalFileSource
from lancelot.io.storage_options import fsspec_options, s3_options, truthy

if TYPE_CHECKING:
    from lancelot.writer import LanceWriter

__all__ = ["ObjectAlreadyExistsError", "ObjectStore", "UnsafeCommitError", "UnsafePathError", "s3_options"]


class UnsafePathError(LanceError):
    """A path that would leave the dataset's root (``..``, an absolute path, another scheme)."""


class UnsafeCommitError(LanceError):
    """The store offers no atomic create-if-absent, so a commit could silently lose another's."""


class ObjectAlreadyExistsError(LanceError, FileExistsError):
    """``put_if_not_exists`` found the object already there (another writer won the race)."""

    __str__ = BaseException.__str__


_MEMORY_LOCK = threading.Lock()


def _split_uri(uri: str) -> tuple[str, str]:
    """(scheme, rest) of a dataset URI; plain paths are ``file``."""
    if "://" in uri:
        scheme, rest = uri.split("://", 1)
        return scheme.lower(), rest
    return "file", uri


#: what a plain dataset-relative path never holds: empty, ``.`` or ``..`` parts, backslashes,
#: NULs, colons (schemes, drive letters)
_ODD = re.compile(r"//|/\.|[\\\x00:]")


def _local_root(path: str) -> tuple[str, str]:
    """(the absolute root, the prefix of its full paths: made per object touched by concatenation)."""
    root = os.path.abspath(os.path.expanduser(path)).rstrip("/") or "/"
    return root, os.path.join(root, "")


#: ``_local_root`` of an absolute path (a pure function of it: each write of a dataset opens its store)
_absolute_root = functools.lru_cache(maxsize=256)(_local_root)


class ObjectStore:
    """The objects under one dataset root (a local path or an fsspec URL)."""

    def __init__(self, uri: str | os.PathLike[str], storage_options: dict[str, Any] | None = None) -> None:
        raw = os.fspath(uri)
        scheme, rest = _split_uri(raw)
        self.scheme = scheme
        self.storage_options = dict(storage_options or {})
        #: sync files and directories before publishing them (local disks; see the module docstring)
        self.sync = truthy(self.storage_options.pop("fsync", False))
        self.fs: Any = None
        if scheme == "file":
            self.root, self._prefix = _absolute_root(rest) if rest[:1] == "/" else _local_root(rest)
            self.uri = self.root
        else:
            import fsspec

            opts = fsspec_options(raw, self.storage_options)
            if scheme == "memory":
                opts = {}
            try:
                self.fs, root = fsspec.core.url_to_fs(raw, **opts)
            except (ImportError, ValueError) as e:
                raise LanceError(f"cannot open the object store: {e}", path=raw) from None
            self.root = root.rstrip("/")
            self.uri = raw.rstrip("/")

    # ------------------------------------------------------------------ paths
    @property
    def is_local(self) -> bool:
        return self.fs is None

    def _rel(self, path: str) -> str:
        """Check and normalise a dataset-relative path (``a/b``; no ``..``, scheme or root)."""
        p = os.fspath(path)
        if type(p) is str and p and p[0] not in "./" and p[-1] != "/" and not _ODD.search(p):
            return p  # already plain (every path lancelot makes): nothing to split
        if not isinstance(p, str) or not p or "\x00" in p or "\\" in p:
            raise UnsafePathError(f"invalid path {p!r} in the dataset", path=self.uri)
        if "://" in p or p.startswith("/") or (len(p) > 1 and p[1] == ":"):
            raise UnsafePathError(f"path {p!r} is not relative to the dataset root", path=self.uri)
        parts = [s for s in p.split("/") if s not in ("", ".")]
        if ".." in parts or not parts:
            raise UnsafePathError(f"path {p!r} would leave the dataset root", path=self.uri)
        return "/".join(parts)

    def full_path(self, path: str) -> str:
        """The store's own path of a dataset-relative path (a local path for local stores)."""
        rel = self._rel(path)
        return self._prefix + rel if self.fs is None else f"{self.root}/{rel}"

    def url(self, path: str) -> str:
        """A full URL (local: an absolute path) naming ``path``, for messages and other libraries."""
        rel = self._rel(path)
        return f"{self.uri}/{rel}"

    def _missing(self, path: str) -> LanceFileNotFoundError:
        return LanceFileNotFoundError("no such file in the dataset", path=self.url(path))

    # ------------------------------------------------------------------ reads
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
            for d, _, names in os.walk(full):
                for n in names:
                    p = os.path.join(d, n)
                    try:
                        st = os.stat(p)
                    except FileNotFoundError:
                        continue
                    out.append((os.path.relpath(p, self.root).replace(os.sep, "/"), st.st_size, st.st_mtime))
            return sorted(out)
        found = self._listing(self.fs.find, full) or {}
        for name, info in found.items():
            if info.get("type") == "directory":
                continue
            m = info.get("LastModified") or info.get("mtime") or info.get("created") or 0
            ts = m.timestamp() if hasattr(m, "timestamp") else float(m)
            out.append((name[len(self.root) :].lstrip("/"), int(info.get("size") or 0), ts))
        return sorted(out)

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

    # ------------------------------------------------------------------ writes
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
            _create_local(full, data, self.sync)
        except FileExistsError:  # (the same transaction committed again)
            return self.put(path, data)
        if self.sync:
            fsync_dir(os.path.dirname(full))
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
        _write_closing(fd, data, False, size=st.st_size)
        fault("put:after")

    def put_if_not_exists(self, path: str, data: bytes) -> None:
        """Create ``path`` with ``data`` only if nothing is there: the commit primitive.

        Raises ``ObjectAlreadyExistsError`` (a FileExistsError) when the object is there, and
        ``UnsafeCommitError`` on a store that cannot create atomically.  "There" may mean created
        by this very call: s3fs retries a PUT whose reply was lost, and the retry finds the object
        its first attempt created; the commit then recognises its own transaction in the manifest
        (commit.py), so a create that took effect is never committed twice.
        """
        full = self.full_path(path)
        data = bytes(data)
        if self.fs is None:
            self._put_if_not_exists_local(path, full, data)
        elif self.scheme == "memory":
            fault("create:before")
            with _MEMORY_LOCK:
                if self.fs.exists(full):
                    raise self._exists(path)
                self.fs.pipe_file(full, data)
        elif self.scheme in ("s3", "s3a") and _is_s3fs(self.fs):
            if not _has_exclusive_pipe(self.fs):
                raise UnsafeCommitError(
                    "this s3fs has no conditional put (pipe_file mode='create'); "
                    "install s3fs >= 2024.12 to commit to S3",
                    path=self.uri,
                )
            fault("create:before")
            try:
                self.fs.pipe_file(full, data, mode="create")
            except FileExistsError:
                raise self._exists(path) from None
            except OSError as e:  # a concurrent conditional write in flight (HTTP 409): someone else's
                if "ConditionalRequestConflict" in str(e) or "409" in str(e):
                    raise self._exists(path) from None
                raise
        else:
            raise UnsafeCommitError(
                f"the {self.scheme}:// store has no atomic create-if-absent that lancelot can use, so a "
                "commit could overwrite a concurrent writer's; use a local path, s3:// (s3fs) or memory://",
                path=self.uri,
            )
        fault("create:after")

    def _exists(self, path: str) -> ObjectAlreadyExistsError:
        return ObjectAlreadyExistsError("already exists (a concurrent writer created it)", path=self.url(path))

    def _put_if_not_exists_local(self, path: str, full: str, data: bytes) -> None:
        tmp = local_temp(full, data, self.sync)
        fault("create:before")
        try:
            try:
                os.link(tmp, full)
            except FileExistsError:
                raise self._exists(path) from None
            except OSError as e:
                if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                    raise
                self._create_exclusive(path, full, data)  # no hard links here: O_EXCL
        finally:
            unlink(tmp)
        if self.sync:
            fsync_dir(os.path.dirname(full))

    def _create_exclusive(self, path: str, full: str, data: bytes) -> None:
        try:
            _create_local(full, data, self.sync)  # (a partial manifest must not hold the version)
        except FileExistsError:
            raise self._exists(path) from None

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


def _create_local(full: str, data: bytes, sync: bool) -> None:
    """Create the local file ``full`` holding ``data`` (its directory too when missing); a FileExistsError
    when it is there, and no partial file left on other errors."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        fd = os.open(full, flags, 0o666)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(full), exist_ok=True)
        fd = os.open(full, flags, 0o666)
    try:
        _write_closing(fd, data, sync)
    except BaseException:
        unlink(full)
        raise


def _write_closing(fd: int, data: bytes, sync: bool, size: int = 0) -> None:
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


def _is_s3fs(fs: Any) -> bool:
    return type(fs).__module__.split(".")[0] == "s3fs"


def _has_exclusive_pipe(fs: Any) -> bool:
    """s3fs sends pipe_file(mode="create") as If-None-Match: * since 2024.12; older ones lack ``mode``."""
    import inspect

    return "mode" in inspect.signature(type(fs)._pipe_file).parameters


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
