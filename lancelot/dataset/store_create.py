"""The commit primitive of the object store: ``put_if_not_exists`` (``ObjectStore``'s, store.py).

A new version becomes visible only when its manifest is *created*, never overwritten: creating an object only if
nothing is there is the one primitive the commit protocol needs (table format, "Commit Protocol"), provided where the
store can do it atomically:

- local disks: the bytes go to a temporary file beside the target (a name that never ends in ``.manifest``), then
  ``os.link``-ed to the target name: the link fails if the name exists, and a reader sees the whole file or nothing
  (pylance does the same);
- S3 (s3fs): a conditional put (``If-None-Match: *``), what pylance's object store sends;
- ``memory://`` (one process): a lock-protected check and write;
- any other store: refused with ``UnsafeCommitError`` rather than risking lost commits."""

from __future__ import annotations

import errno
import os
import threading
from typing import Any

from lancelot.dataset.store_files import fault, fsync_dir, local_temp, unlink
from lancelot.dataset.store_paths import StorePaths
from lancelot.dataset.store_writes import create_local
from lancelot.errors import LanceError
from lancelot.io.counters import count_write


class UnsafeCommitError(LanceError):
    """The store offers no atomic create-if-absent, so a commit could silently lose another's."""


class ObjectAlreadyExistsError(LanceError, FileExistsError):
    """``put_if_not_exists`` found the object already there (another writer won the race)."""

    __str__ = BaseException.__str__


_MEMORY_LOCK = threading.Lock()


class StoreCreate(StorePaths):
    """``ObjectStore``'s create-if-absent."""

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
        count_write(len(data))
        fault("create:after")

    def _exists(self, path: str) -> ObjectAlreadyExistsError:
        return ObjectAlreadyExistsError("already exists (a concurrent writer created it)", path=self.url(path))

    def _put_if_not_exists_local(self, path: str, full: str, data: bytes) -> None:
        tmp = local_temp(full, data, self.sync)
        fault("create:before")
        try:
            try:
                os.link(tmp, full)
            except OSError as e:  # (FileExistsError: re-raised, below)
                if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                    raise
                create_local(full, data, self.sync)  # no hard links here: O_EXCL (never a partial manifest)
        except FileExistsError:
            raise self._exists(path) from None
        finally:
            unlink(tmp)
        if self.sync:
            fsync_dir(os.path.dirname(full))


def _is_s3fs(fs: Any) -> bool:
    return type(fs).__module__.split(".")[0] == "s3fs"


def _has_exclusive_pipe(fs: Any) -> bool:
    """s3fs sends pipe_file(mode="create") as If-None-Match: * since 2024.12; older ones lack ``mode``."""
    import inspect

    return "mode" in inspect.signature(type(fs)._pipe_file).parameters
