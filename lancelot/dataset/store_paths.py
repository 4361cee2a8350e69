"""The root of the object store under a dataset and its paths (``ObjectStore``'s, store.py).

Every path given to an ``ObjectStore`` is relative to the dataset root; ``..``, absolute paths and other schemes are
refused (``UnsafePathError``), so a manifest cannot make lancelot read or write outside its dataset."""

from __future__ import annotations

import functools
import os
import re
from typing import Any

from lancelot.errors import LanceError, LanceFileNotFoundError
from lancelot.io.storage_options import fsspec_options, truthy


class UnsafePathError(LanceError):
    """A path that would leave the dataset's root (``..``, an absolute path, another scheme)."""


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


class StorePaths:
    """One dataset root (a local path or an fsspec URL) and the paths under it: the base of ``ObjectStore``."""

    def __init__(self, uri: str | os.PathLike[str], storage_options: dict[str, Any] | None = None) -> None:
        raw = os.fspath(uri)
        scheme, rest = _split_uri(raw)
        self.scheme = scheme
        self.storage_options = dict(storage_options or {})
        #: sync files and directories before publishing them (local disks; store_writes.py's "Durability")
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
