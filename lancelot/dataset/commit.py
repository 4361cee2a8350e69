"""Commits: a new version becomes visible only when its manifest is created with
put-if-not-exists (table format, "Conflict resolution").

``commit_transaction`` writes the transaction file, then loops: read the latest version,
check the transactions committed since the writer's read version (transaction.py),
build the new manifest on top of the latest one (fragment ids renumbered from
``max_fragment_id``), and try to create ``_versions/<N+1>``.  Losing the race means
reloading and trying again; a writer that dies leaves only files no manifest points to.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lancelot.dataset.manifest import (
    HINT_FILE,
    VERSIONS_DIR,
    ManifestFile,
    check_writer_flags,
    manifest_name,
    parse_manifest,
    parse_manifest_name,
    serialize_manifest,
)
from lancelot.dataset.transaction import TRANSACTIONS_DIR, conflicts, transaction_name
from lancelot.errors import CorruptFileError, LanceError
from lancelot.format.pb import table_pb2, transaction_pb2

if TYPE_CHECKING:
    from lancelot.dataset.store import ObjectStore

MAX_RETRIES = 50


class CommitConflictError(LanceError):
    """A concurrent commit makes this one impossible (e.g. an append against an overwrite),
    or the dataset already exists for a create."""


@dataclass
class Versions:
    """The manifests of a dataset: version -> file name, and the naming scheme in use."""

    names: dict[int, str]
    scheme: str | None

    @property
    def latest(self) -> int | None:
        return max(self.names) if self.names else None


def list_versions(store: ObjectStore, uri: str) -> Versions:
    names: dict[int, str] = {}
    schemes = set()
    for name in store.list(VERSIONS_DIR):
        parsed = parse_manifest_name(name)
        if parsed is None:
            continue
        v, scheme = parsed
        names[v] = name
        schemes.add(scheme)
    if len(schemes) > 1:
        raise CorruptFileError(f"dataset {uri!r}: _versions/ mixes both manifest naming schemes")
    return Versions(names, schemes.pop() if schemes else None)


def load_manifest(store: ObjectStore, uri: str, versions: Versions, version: int) -> ManifestFile:
    name = versions.names.get(version)
    if name is None:
        raise LanceError(
            f"dataset {uri!r}: version {version} does not exist "
            f"(versions: {sorted(versions.names)[:20]}{'...' if len(versions.names) > 20 else ''})"
        )
    path = f"{VERSIONS_DIR}/{name}"
    try:
        data = store.read(path)
    except FileNotFoundError:
        raise LanceError(f"dataset {uri!r}: manifest of version {version} vanished") from None
    try:
        mf = parse_manifest(data, path)
    except LanceError as e:
        raise type(e)(f"dataset {uri!r} version {version}: {e.message}", path=e.path) from None
    if mf.manifest.version != version:
        raise CorruptFileError(f"dataset {uri!r}: {path} holds version {mf.manifest.version}, its name says {version}")
    return mf


def load_transaction(store: ObjectStore, mf: ManifestFile) -> transaction_pb2.Transaction | None:
    name = mf.manifest.transaction_file
    if name:
        try:
            t = transaction_pb2.Transaction()
            t.ParseFromString(store.read(f"{TRANSACTIONS_DIR}/{name}"))
            return t
        except FileNotFoundError:
            return None
        except Exception:  # noqa: BLE001 - a corrupt transaction is as good as none
            return None
    return mf.transaction


#: build(base manifest or None, new version) -> (new manifest, index section to store or None)
Builder = Callable[[ManifestFile | None, int], tuple[table_pb2.Manifest, bytes | None]]


def commit_transaction(
    store: ObjectStore,
    uri: str,
    txn: transaction_pb2.Transaction,
    build: Builder,
    *,
    read_version: int | None,
    create: bool = False,
    scheme: str = "v2",
) -> int:
    """Write ``txn`` and commit the manifest ``build`` makes; return the new version."""
    name = transaction_name(txn)
    store.put(f"{TRANSACTIONS_DIR}/{name}", txn.SerializeToString())
    checked = read_version
    for _ in range(MAX_RETRIES):
        versions = list_versions(store, uri)
        latest = versions.latest
        if create and latest is not None:
            raise CommitConflictError(f"dataset {uri!r} already exists (version {latest})")
        base = None
        if latest is not None:
            if checked is not None and checked > latest:
                raise LanceError(f"dataset {uri!r}: read version {checked} is newer than the latest {latest}")
            start = checked if checked is not None else latest
            for v in range(start + 1, latest + 1):
                if v not in versions.names:
                    continue
                why = conflicts(txn, load_transaction(store, load_manifest(store, uri, versions, v)))
                if why:
                    raise CommitConflictError(
                        f"dataset {uri!r}: commit on top of version {read_version} conflicts with version {v}: {why}"
                    )
            checked = latest
            base = load_manifest(store, uri, versions, latest)
            check_writer_flags(base.manifest, f"dataset {uri!r} version {latest}")
        version = (latest or 0) + 1
        m, index = build(base, version)
        m.version = version
        m.transaction_file = name
        data = serialize_manifest(m, index)
        target = f"{VERSIONS_DIR}/{manifest_name(version, versions.scheme or scheme)}"
        try:
            store.put_if_not_exists(target, data)
        except (FileExistsError, CommitConflictError):
            continue
        _write_hint(store, version)
        return version
    raise CommitConflictError(f"dataset {uri!r}: gave up after {MAX_RETRIES} concurrent commits won the race")


def _write_hint(store: ObjectStore, version: int) -> None:
    """latest_version_hint.json, as pylance writes it (a hint only: readers list _versions/)."""
    try:
        store.put(f"{VERSIONS_DIR}/{HINT_FILE}", json.dumps({"version": version}, separators=(",", ":")).encode())
    except Exception:  # noqa: BLE001 - the hint is best effort
        pass
