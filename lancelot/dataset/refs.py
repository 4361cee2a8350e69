"""Tags: names for versions, ``_refs/tags/<name>.json`` beside ``_versions/`` (table format, "Tags"; the layout pylance
14 writes and reads).

A tag file is JSON: ``branch`` (null on the main branch), ``version``, ``createdAt`` and ``updatedAt`` (RFC 3339, UTC,
nanoseconds, "Z"), ``manifestSize`` (bytes of the tagged version's manifest) and ``metadata`` (a string map).  Tag names
are refs: letters, digits, ``.``, ``-``, ``_``; no leading or trailing dot, no ``..``, not ending in ``.lock``. Tagged
versions are kept by ``cleanup_old_versions``."""

from __future__ import annotations

import builtins
import datetime as _dt
import json
import time
from typing import TYPE_CHECKING, Any

from lancelot.dataset.manifest import VERSIONS_DIR
from lancelot.errors import CorruptFileError, InvalidRefError, LanceValueError, RefConflictError, RefNotFoundError

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset

TAGS_DIR = "_refs/tags"


def check_tag_name(tag: object) -> str:
    """A valid tag name (the rules pylance applies), else a ValueError."""
    if not isinstance(tag, str) or not tag:
        raise InvalidRefError(f"tag name must be a non-empty string, not {tag!r}")
    bad = [c for c in tag if not (c.isalnum() or c in ".-_")]
    if bad:
        raise InvalidRefError(f"tag {tag!r}: characters must be alphanumeric, '.', '-' or '_' (not {bad[0]!r})")
    if tag.startswith(".") or tag.endswith("."):
        raise InvalidRefError(f"tag {tag!r}: a tag cannot begin or end with a dot")
    if tag.endswith(".lock"):
        raise InvalidRefError(f"tag {tag!r}: a tag cannot end with .lock")
    if ".." in tag:
        raise InvalidRefError(f"tag {tag!r}: a tag cannot have two consecutive dots")
    return tag


def _now() -> str:
    """The current time as pylance writes it in tag files: UTC, nanoseconds, "Z"."""
    ns = time.time_ns()
    base = _dt.datetime.fromtimestamp(ns // 1_000_000_000, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{ns % 1_000_000_000:09d}Z"


def _parse_time(text: object) -> _dt.datetime | None:
    """A tag file's time as pylance's ``tags.list()`` gives it (UTC, microseconds)."""
    if not isinstance(text, str) or not text:
        return None
    t = text.rstrip("Z")
    frac = ""
    if "." in t:
        t, frac = t.split(".", 1)
    d = _dt.datetime.strptime(t[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=_dt.timezone.utc)
    return d + _dt.timedelta(microseconds=int((frac + "000000")[:6]) if frac else 0)


class Tags:
    """The dataset's tags, ``LanceDataset.tags`` (pylance's ``Tags``): names for versions, stored as
    ``_refs/tags/<name>.json`` in the layout pylance writes, so each library reads the other's. Tagged versions are kept
    by ``cleanup_old_versions``.

    Examples:
        >>> _ = ds.delete("id = 0")
        >>> ds.tags.create("before-delete", 1)
        >>> ds.tags.list()["before-delete"]["version"]
        1
        >>> ds.tags.update("before-delete", 2)
        >>> [name for name, _ in ds.tags.list_ordered()]
        ['before-delete']
        >>> ds.tags.delete("before-delete")
    """

    def __init__(self, ds: LanceDataset) -> None:
        """The tags of ``ds`` (use ``LanceDataset.tags``).

        Args:
            ds: The dataset.
        """
        self._ds = ds

    @property
    def _where(self) -> str:
        return f"dataset {self._ds.uri!r}"

    def _path(self, tag: str) -> str:
        return f"{TAGS_DIR}/{check_tag_name(tag)}.json"

    def _read(self, tag: str) -> dict[str, Any]:
        try:
            raw = self._ds.store.read(self._path(tag))
        except FileNotFoundError:
            raise RefNotFoundError(f"Ref not found error: tag {tag} does not exist ({self._where})") from None
        try:
            doc = json.loads(raw)
            int(doc["version"])
        except (ValueError, KeyError, TypeError):
            raise CorruptFileError(f"{self._where}: tag file {self._path(tag)} is not a tag") from None
        out: dict[str, Any] = doc
        return out

    def _resolve(self, reference: int | str | tuple[str | None, int | None] | None) -> int:
        """The version a reference names: an int, a tag, (branch, version) on main, None: latest."""
        if isinstance(reference, tuple):
            branch, version = reference
            if branch not in (None, "main"):
                raise LanceValueError(f"{self._where}: branches are not supported by lancelot ({branch!r})")
            reference = version
        if reference is None:
            return self._ds.latest_version
        if isinstance(reference, str):
            return self.get_version(reference)
        v = int(reference)
        if v not in self._ds.version_names():
            from lancelot.errors import VersionNotFoundError

            raise VersionNotFoundError(f"Version not found error: version main:{v} does not exist ({self._where})")
        return v

    def _manifest_size(self, version: int) -> int:
        return self._ds.store.size(f"{VERSIONS_DIR}/{self._ds.version_names()[version]}")

    def _write(self, tag: str, version: int, created: str | None, metadata: dict[str, str]) -> None:
        now = _now()
        doc = {
            "branch": None,
            "version": version,
            "createdAt": created or now,
            "updatedAt": now,
            "manifestSize": self._manifest_size(version),
            "metadata": metadata,
        }
        self._ds.store.put(self._path(tag), json.dumps(doc, indent=2).encode())

    def create(self, tag: str, reference: int | str | tuple[str | None, int | None] | None = None) -> None:
        """Name a version.

        Args:
            tag: The name: letters, digits, ``.``, ``-``, ``_`` (no leading or trailing dot, no ``..``, not ending in
                ``.lock``), as pylance requires.
            reference: A version number, another tag, pylance's ``(branch, version)`` pair (main only), or None for the
                latest version.

        Raises:
            ValueError: An invalid name, a tag that exists, or a version that does not.
        """
        path = self._path(tag)
        version = self._resolve(reference)
        if self._ds.store.exists(path):
            raise RefConflictError(f"Ref conflict error: tag {tag} already exists ({self._where})")
        now = _now()
        doc: dict[str, Any] = {
            "branch": None,
            "version": version,
            "createdAt": now,
            "updatedAt": now,
            "manifestSize": self._manifest_size(version),
            "metadata": {},
        }
        try:
            self._ds.store.put_if_not_exists(path, json.dumps(doc, indent=2).encode())
        except FileExistsError:
            raise RefConflictError(f"Ref conflict error: tag {tag} already exists ({self._where})") from None

    def update(self, tag: str, reference: int | str | tuple[str | None, int | None] | None = None) -> None:
        """Point an existing tag at another version.

        Args:
            tag: The tag's name.
            reference: As in ``create``.

        Raises:
            ValueError: No such tag, or no such version.
        """
        old = self._read(tag)
        self._write(tag, self._resolve(reference), old.get("createdAt"), dict(old.get("metadata") or {}))

    def replace_metadata(self, tag: str, metadata: dict[str, str]) -> None:
        """Replace a tag's metadata (a string map stored in its file).

        Args:
            tag: The tag's name.
            metadata: The new metadata.
        """
        old = self._read(tag)
        self._write(tag, int(old["version"]), old.get("createdAt"), dict(metadata))

    def delete(self, tag: str) -> None:
        """Remove a tag (the version stays).

        Args:
            tag: The tag's name.

        Raises:
            ValueError: No such tag (a ``RefNotFoundError``).
        """
        path = self._path(tag)
        if not self._ds.store.exists(path):
            raise RefNotFoundError(f"Ref not found error: tag {tag} does not exist ({self._where})")
        self._ds.store.delete(path)

    def get_version(self, tag: str) -> int:
        """The version a tag names.

        Args:
            tag: The tag's name.

        Returns:
            The version number.

        Raises:
            ValueError: No such tag (a ``RefNotFoundError``).
        """
        return int(self._read(tag)["version"])

    def list(self) -> dict[str, dict[str, Any]]:
        """Every tag, as pylance lists them.

        Returns:
            ``{tag: {"branch", "version", "created_at", "updated_at", "manifest_size", "metadata"}}``.
        """
        out = {}
        for name in self._ds.store.list(TAGS_DIR):
            if not name.endswith(".json"):
                continue
            tag = name[: -len(".json")]
            try:
                doc = self._read(tag)
            except (RefNotFoundError, InvalidRefError):
                continue
            out[tag] = {
                "branch": doc.get("branch"),
                "version": int(doc["version"]),
                "created_at": _parse_time(doc.get("createdAt")),
                "updated_at": _parse_time(doc.get("updatedAt")),
                "manifest_size": doc.get("manifestSize"),
                "metadata": dict(doc.get("metadata") or {}),
            }
        return out

    def list_ordered(self, order: str | None = None) -> builtins.list[tuple[str, dict[str, Any]]]:
        """Every tag, ordered by version, newest first, then by name.

        Args:
            order: ``"asc"`` for oldest first; None or ``"desc"`` for newest first.

        Returns:
            ``(tag, contents)`` pairs, the contents as in ``list``.
        """
        if order not in (None, "asc", "desc"):
            raise LanceValueError(f"order must be 'asc' or 'desc', not {order!r}")
        items = sorted(self.list().items(), key=lambda kv: kv[0])
        items.sort(key=lambda kv: kv[1]["version"], reverse=order != "asc")
        return items
