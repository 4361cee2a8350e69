"""Listings of the object store (``ObjectStore``'s, store.py): never served from a cache, since commits and cleanup
depend on them (fsspec's directory cache is dropped after each)."""

from __future__ import annotations

import builtins
import os
import posixpath
from typing import Any

from lancelot.dataset.store_paths import StorePaths


class StoreListing(StorePaths):
    """``ObjectStore``'s listings."""

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
