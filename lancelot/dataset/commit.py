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
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from lancelot.dataset.commit_options import check_deadline, create_manifest
from lancelot.dataset.deletion import rebase_deletions
from lancelot.dataset.manifest import (
    HINT_FILE,
    U64_MAX,
    VERSIONS_DIR,
    ManifestFile,
    check_writer_flags,
    manifest_name,
    parse_manifest,
    parse_manifest_name,
    serialize_manifest,
)
from lancelot.dataset.transaction import (
    REBASE,
    RETRYABLE,
    TRANSACTIONS_DIR,
    Conflict,
    conflict,
    gap_conflict,
    operation,
    transaction_name,
    transaction_uuid,
)
from lancelot.errors import (  # (the conflict errors live with the others; importable from here too)
    CommitConflictError as CommitConflictError,
)
from lancelot.errors import (
    CorruptFileError,
    LanceError,
    LanceFileNotFoundError,
)
from lancelot.errors import (
    RetryableCommitConflictError as RetryableCommitConflictError,
)
from lancelot.format.pb import table_pb2, transaction_pb2

if TYPE_CHECKING:
    from lancelot.dataset.store import ObjectStore

MAX_RETRIES = 50


class CommitIOError(LanceError, OSError):
    """Reading the dataset's objects failed while committing (after retries): an I/O error, not a
    conflict; the commit may be tried again."""

    __str__ = BaseException.__str__


class Versions:
    """The manifests of a dataset: version -> file name, and the naming scheme in use.

    A listing of V2 names keeps them as listed until ``names`` is asked for: the latest version is
    the smallest name (``u64::MAX - version``, zero-padded), and a version's name is computed, so
    opening the latest version of a long history parses no name but that one."""

    def __init__(self, names: dict[int, str] | None, scheme: str | None, raw_v2: list[str] | None = None) -> None:
        self._names = names
        self.scheme = scheme
        self._raw = raw_v2  # the V2 names as listed, while ``names`` is not built
        self._set: set[str] | None = None

    @property
    def names(self) -> dict[int, str]:
        if self._names is None:
            self._names = {U64_MAX - int(n[:20]): n for n in self._raw or ()}
        return self._names

    @property
    def latest(self) -> int | None:
        if self._names is None:
            return U64_MAX - int(min(self._raw)[:20]) if self._raw else None
        return max(self._names) if self._names else None

    def name_of(self, version: int) -> str | None:
        """The file name of ``version``'s manifest, None if it is not listed."""
        if self._names is not None:
            return self._names.get(version)
        if self._set is None:
            self._set = set(self._raw or ())
        name = manifest_name(version, "v2")
        return name if name in self._set else None

    def adding(self, version: int, name: str) -> Versions:
        """These versions and one more (a commit's own)."""
        if self._names is None and self.scheme in ("v2", None) and name.endswith(".manifest") and len(name) == 29:
            return Versions(None, "v2", [*(self._raw or ()), name])
        return Versions({**self.names, version: name}, self.scheme or parse_manifest_name(name)[1])  # type: ignore[index]


def list_versions(store: ObjectStore, uri: str) -> Versions:
    """The manifests under ``_versions/``, from one listing (other files, such as temporary files and
    the version hint, are skipped).  A directory mixing both naming schemes (a migration to V2 names
    interrupted) lists every version under either name, its V2 name first, and new versions take V2
    names: it opens at its latest version (pylance 14 refuses to, an internal error, but opens a
    version given by number), and ``migrate_manifest_paths_v2`` run again finishes the migration.

    The common case, every name of the V2 scheme, costs one comprehension (no call per name):
    appends and ``versions()`` list directories of thousands of manifests."""
    manifests = [n for n in store.list_names(VERSIONS_DIR) if n.endswith(".manifest")]
    v2 = [n for n in manifests if len(n) == 29 and n[:20].isdigit()]
    if len(v2) == len(manifests):
        return Versions(None, "v2" if v2 else None, v2)
    names = {U64_MAX - int(n[:20]): n for n in v2}
    schemes = {"v2"} if names else set()
    for name in manifests:
        parsed = parse_manifest_name(name)
        if parsed is None or parsed[1] == "v2":
            continue
        names.setdefault(parsed[0], name)
        schemes.add(parsed[1])
    return Versions(names, "v2" if "v2" in schemes else schemes.pop() if schemes else None)


def load_manifest(store: ObjectStore, uri: str, versions: Versions, version: int) -> ManifestFile:
    name = versions.name_of(version)
    if name is None:
        raise LanceError(
            f"dataset {uri!r}: version {version} does not exist "
            f"(versions: {sorted(versions.names)[:20]}{'...' if len(versions.names) > 20 else ''})"
        )
    path = f"{VERSIONS_DIR}/{name}"
    try:
        data = store.read(path)
    except FileNotFoundError:
        raise LanceFileNotFoundError(
            f"dataset {uri!r}: the manifest of version {version} vanished (cleaned up?)", path=store.url(path)
        ) from None
    return manifest_from_bytes(data, path, uri, version)


def manifest_from_bytes(data: bytes, path: str, uri: str, version: int) -> ManifestFile:
    """The manifest file ``data`` read from ``path``, which must hold version ``version``."""
    try:
        mf = parse_manifest(data, path)
    except LanceError as e:
        raise type(e)(f"dataset {uri!r} version {version}: {e.message}", path=e.path) from None
    if mf.manifest.version != version:
        raise CorruptFileError(f"dataset {uri!r}: {path} holds version {mf.manifest.version}, its name says {version}")
    return mf


def locate_version(store: ObjectStore, uri: str, version: int) -> tuple[Versions, ManifestFile] | None:
    """Version ``version``'s manifest read by its name, V2 scheme first, without listing
    ``_versions/`` (as pylance resolves a version it is given); None when neither name exists.
    The ``Versions`` returned knows this one version only."""
    for scheme in ("v2", "v1"):
        versions = Versions({version: manifest_name(version, scheme)}, scheme)
        try:
            return versions, load_manifest(store, uri, versions, version)
        except FileNotFoundError:
            continue
    return None


def latest_by_hint(store: ObjectStore, uri: str, expect: int | None = None) -> tuple[Versions, ManifestFile] | None:
    """The latest version of a dataset on a local disk found through ``latest_version_hint.json``
    (pylance and lancelot write it after each commit) instead of a listing of ``_versions/``:
    the hinted version's manifest read by name, and no manifest of the version after it.  None
    (then: list) whenever anything differs from that: no hint, a stale one, a manifest missing
    or damaged, or (``expect``) a version other than that one.  Object stores list (a LIST page is
    one request there)."""
    version = hinted_version(store)
    if version is None or version != (expect or version):
        return None
    try:
        found = locate_version(store, uri, version)
    except (LanceError, OSError, ValueError, KeyError, TypeError):  # a damaged manifest: list
        return None
    return found if found is not None and _none_after(store, version) else None


def still_latest(store: ObjectStore, versions: Versions, mf: ManifestFile) -> tuple[Versions, ManifestFile] | None:
    """``versions`` (narrowed to this one) and ``mf``, a version a dataset read, when a fresh read of
    the version hint says it is still the latest (``latest_hinted``); None (then: list) otherwise.  A
    dataset's own listing may be old: a version committed and cleaned up since would let a commit
    create that version number again."""
    version = int(mf.manifest.version)
    name = versions.name_of(version) if store.is_local else None
    if name is None or latest_hinted(store) != version:
        return None
    return Versions({version: name}, versions.scheme or parse_manifest_name(name)[1]), mf  # type: ignore[index]


def latest_hinted(store: ObjectStore) -> int | None:
    """The latest version by the version hint, its manifest not read: the hinted version's manifest
    is there (either naming scheme) and none of the version after it; None (then: list) otherwise."""
    version = hinted_version(store)
    if version is None or not any(store.exists(f"{VERSIONS_DIR}/{manifest_name(version, s)}") for s in ("v2", "v1")):
        return None
    return version if _none_after(store, version) else None


def hinted_version(store: ObjectStore) -> int | None:
    """The version ``latest_version_hint.json`` names (local disks), None if none can be read."""
    if not store.is_local:
        return None
    try:
        raw = store.read(f"{VERSIONS_DIR}/{HINT_FILE}")
        plain = raw.startswith(b'{"version":') and raw.endswith(b"}")  # (as written: no JSON parser needed)
        version = int(raw[11:-1]) if plain and raw[11:-1].isdigit() else int(json.loads(raw)["version"])
    except (LanceError, OSError, ValueError, KeyError, TypeError):
        return None
    return version if version >= 1 else None


def _none_after(store: ObjectStore, version: int) -> bool:
    """No manifest of ``version + 1`` under either naming scheme."""
    return not any(store.exists(f"{VERSIONS_DIR}/{manifest_name(version + 1, s)}") for s in ("v2", "v1"))


def load_transaction(
    store: ObjectStore, mf: ManifestFile, *, where: str = "", version: int | None = None
) -> transaction_pb2.Transaction | None:
    """The transaction that committed ``mf`` (its file, else the manifest's inline one).

    A transaction file that is really absent, or does not parse, gives None (a conflict for the
    commit checking it, as pylance treats it); an I/O error is retried, then raised as the
    ``CommitIOError`` it is, never mistaken for a conflict."""
    name = mf.manifest.transaction_file
    if not name:
        return mf.transaction
    path = f"{TRANSACTIONS_DIR}/{name}"
    try:
        data = _read_retrying(store, path, where or f"version {version}")
    except FileNotFoundError:
        return None
    t = transaction_pb2.Transaction()
    try:
        t.ParseFromString(data)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError and friends: a corrupt file is as good as none
        return None
    return t


#: pauses before each new attempt at an object-store read that failed (then the error is raised)
READ_RETRY_DELAYS = (0.05, 0.2, 0.5)


def _read_retrying(store: ObjectStore, path: str, where: str) -> bytes:
    """``store.read(path)``, retried on transient I/O errors; a missing object raises at once
    (a FileNotFoundError), other errors as a ``CommitIOError`` naming the object."""
    for attempt in range(len(READ_RETRY_DELAYS) + 1):
        try:
            return store.read(path)
        except FileNotFoundError:
            raise
        except OSError as e:
            if attempt == len(READ_RETRY_DELAYS):
                raise CommitIOError(
                    f"{where}: reading {path} failed {attempt + 1} times: {type(e).__name__}: {e}",
                    path=store.url(path),
                ) from e
            time.sleep(READ_RETRY_DELAYS[attempt])
    raise AssertionError("unreachable")


def _load_retrying(store: ObjectStore, uri: str, versions: Versions, version: int) -> ManifestFile:
    """``load_manifest`` with transient read errors retried (commits read manifests to check them)."""
    for attempt in range(len(READ_RETRY_DELAYS) + 1):
        try:
            return load_manifest(store, uri, versions, version)
        except FileNotFoundError:
            raise
        except OSError as e:
            if attempt == len(READ_RETRY_DELAYS):
                raise CommitIOError(
                    f"dataset {uri!r}: reading the manifest of version {version} failed {attempt + 1} times: "
                    f"{type(e).__name__}: {e}",
                    path=store.url(f"{VERSIONS_DIR}/{versions.names[version]}"),
                ) from e
            time.sleep(READ_RETRY_DELAYS[attempt])
    raise AssertionError("unreachable")


def is_ours(mf: ManifestFile, txn: transaction_pb2.Transaction) -> bool:
    """Whether ``mf`` was committed by ``txn`` (same transaction uuid): an earlier attempt of this
    very commit that took effect although its reply was lost."""
    if mf.manifest.transaction_file:
        return transaction_uuid(mf.manifest.transaction_file) == txn.uuid
    return mf.transaction is not None and mf.transaction.uuid == txn.uuid


#: build(base manifest or None, new version) -> (new manifest, index section to store or None)
Builder = Callable[[ManifestFile | None, int], tuple[table_pb2.Manifest, bytes | None]]

#: operations that stand against every other whatever it did: a cleaned-up version in between
#: cannot hide a conflict from them
_UNCONDITIONAL = {"overwrite", "restore", "clone"}


#: called after each commit with (store, uri, the new manifest's config, its version): pylance's
#: auto-cleanup hook, which cleanup.py registers (it reads manifests through this module, so this
#: module cannot import it)
AFTER_COMMIT: list[Callable[[ObjectStore, str, Mapping[str, str], int], object]] = []


def commit_transaction(*args: Any, **kwargs: Any) -> int:
    """``commit_manifest`` (same arguments) returning only the new version."""
    version: int = commit_manifest(*args, **kwargs)[0]
    return version


def commit_manifest(
    store: ObjectStore,
    uri: str,
    txn: transaction_pb2.Transaction,
    build: Builder,
    *,
    read_version: int | None,
    create: bool = False,
    scheme: str = "v2",
    known: tuple[Versions, ManifestFile | None] | None = None,
    rebase: bool = False,
    read_manifest: ManifestFile | None = None,
) -> tuple[int, Versions, ManifestFile | None]:
    """Write ``txn`` and commit the manifest ``build`` makes; return the new version, the versions
    known then (the new one among them) and its manifest (None where an earlier attempt of this
    commit took effect: read it back).

    ``known``: the listing and latest manifest the writer read, when it read them itself just
    before (an append): the first attempt builds on them without listing ``_versions/`` or
    reading the manifest again, as pylance's commit does.  Without it, a read version that the
    version hint, read afresh, names as the latest is built on without a listing too.  ``build``
    may take over the message of a manifest the commit reads itself, and of a known one its
    caller marked ``owned``.
    Should another writer have committed since, creating the manifest fails and the next attempt
    lists and checks as usual.

    Every version committed since ``read_version`` is checked against ``txn`` (transaction.py);
    with ``rebase`` (a delete or update run here, which knows the rows it changed: pylance's
    affected rows), one whose fragments another changed meanwhile gets the deletion files merged
    (``rebase_deletions``); without, that is a retryable conflict, as pylance's commit of a
    transaction it is given.  A version that is this very transaction (an earlier attempt took
    effect but its reply was lost, and the store's own retry found the manifest there) is
    returned as the commit's: one operation, one version.  The transactions of versions in between
    that a cleanup removed cannot be checked: overwrites, restores and clones, which stand against
    everything alike, pass over them, and so do an append and, given the manifest of its read version
    (``read_manifest``), a delete, update or index build whose fragments the next version still has
    as they were read (``gap_conflict``; a delete's or update's with other deletions: rebased); else a
    ``RetryableCommitConflictError`` asks the caller to re-read."""
    name = transaction_name(txn)
    store.put_new(f"{TRANSACTIONS_DIR}/{name}", txn.SerializeToString())
    if known is None and read_version and not create:
        known = latest_by_hint(store, uri, read_version)  # (the read version still the latest: no listing)
        if known is not None:
            known[1].owned = True  # (read for this commit only: its builder may take the message over)
    checked = read_version
    attempted: set[int] = set()  # versions this commit tried to create (they may have taken effect)
    for _ in range(MAX_RETRIES):
        check_deadline(uri)  # (commit_timeout: LanceDataset.commit's, retries included)
        if known is not None and (known[1] is None or known[1].manifest.version == read_version):
            versions, base = known
            latest = versions.latest
            known = None
            if create and latest is not None:
                raise CommitConflictError(f"dataset {uri!r} already exists (version {latest})")
            if base is not None:
                checked = latest
                check_writer_flags(base.manifest, f"dataset {uri!r} version {latest}")
        else:
            known = None
            versions = list_versions(store, uri)
            latest = versions.latest
            for v in sorted(attempted):
                if v in versions.names:
                    if is_ours(_load_vanishing(store, uri, versions, v), txn):
                        return _done(store, v), versions, None
                    attempted.discard(v)  # another writer's: this attempt lost the race
            if create and latest is not None:
                raise CommitConflictError(f"dataset {uri!r} already exists (version {latest})")
            base = None
            if latest is not None:
                if checked is not None and checked > latest:
                    raise LanceError(f"dataset {uri!r}: read version {checked} is newer than the latest {latest}")
                unconditional = operation(txn) in _UNCONDITIONAL
                start = checked if checked is not None else latest
                base = None
                rebase_over: list[tuple[transaction_pb2.Transaction, str]] = []  # deletes to merge with
                gap_end = 0  # versions cleaned up before it were found no conflict
                for v in range(start + 1, latest + 1):
                    if v not in versions.names:
                        if unconditional or operation(txn) == "update_config" or v < gap_end:  # (pylance's: config
                            continue  # upserts too)
                        gap_end = min(n for n in versions.names if n > v)
                        after = _load_vanishing(store, uri, versions, gap_end)
                        if read_manifest is not None:
                            gap = gap_conflict(txn, read_manifest, after)
                        elif operation(txn) != "append":
                            gap = Conflict(RETRYABLE, "the read version is unknown")
                        else:
                            gap = None
                        if gap is not None and gap.kind == REBASE and rebase:
                            rebase_over.append((txn, f"versions up to {gap_end - 1} were cleaned up: {gap.reason}"))
                        elif gap is not None:
                            raise RetryableCommitConflictError(
                                f"dataset {uri!r}: version {v}, committed after the read version {read_version}, has "
                                f"been cleaned up and cannot be checked for conflicts ({gap.reason}); re-read the "
                                "dataset and retry"
                            )
                        continue
                    mf = _load_vanishing(store, uri, versions, v)
                    if is_ours(mf, txn):
                        return _done(store, v), versions, None
                    other = load_transaction(store, mf, where=f"dataset {uri!r} version {v}")
                    c = conflict(txn, other)
                    if (
                        c is not None
                        and c.kind == REBASE
                        and other is not None
                        and (rebase or operation(txn) == "rewrite")
                    ):
                        if operation(txn) != "rewrite":  # a rewrite's builder carries the deletions itself
                            rebase_over.append((other, c.reason))
                    elif c is not None:
                        retryable = c.retryable or c.kind == REBASE  # (pylance's words lead: "... for version N")
                        raise (RetryableCommitConflictError if retryable else CommitConflictError)(
                            f"{'Retryable commit' if retryable else 'Commit'} conflict for version {v}: dataset "
                            f"{uri!r}: commit on top of version {read_version} conflicts with version {v}: {c.reason}"
                        )
                    if v == latest:
                        base = mf
                base = base or _load_vanishing(store, uri, versions, latest)
                base.owned = True  # (read for this commit only: its builder may take the message over)
                if rebase_over:  # only once every version in between was checked with the transaction as it was
                    if versions.name_of(int(txn.read_version)) is None:  # (the rows it read: cleaned up)
                        if read_manifest is None:
                            raise RetryableCommitConflictError(f"dataset {uri!r}: {rebase_over[0][1]}; re-read, retry")
                        read = read_manifest
                    else:
                        read = _load_vanishing(store, uri, versions, int(txn.read_version))
                    txn, build = rebase_deletions(store, uri, txn, rebase_over, read, base, build)
                    name = transaction_name(txn)
                    store.put_new(f"{TRANSACTIONS_DIR}/{name}", txn.SerializeToString())
                checked = latest
                check_writer_flags(base.manifest, f"dataset {uri!r} version {latest}")
        version = (latest or 0) + 1
        m, index = build(base, version)
        m.version = version
        m.transaction_file = name
        data = serialize_manifest(m, index)
        used = versions.scheme or scheme
        target = f"{VERSIONS_DIR}/{manifest_name(version, used)}"
        attempted.add(version)
        try:
            create_manifest(store, target, version, data)
        except (FileExistsError, CommitConflictError):
            continue  # lost the race, or won it with a lost reply: the next round tells which
        now = versions.adding(version, manifest_name(version, used))
        _done(store, version)
        for hook in AFTER_COMMIT:
            hook(store, uri, m.config, version)
        return version, now, ManifestFile(m, index, None)
    raise CommitConflictError(f"dataset {uri!r}: gave up after {MAX_RETRIES} concurrent commits won the race")


def _load_vanishing(store: ObjectStore, uri: str, versions: Versions, version: int) -> ManifestFile:
    """A listed manifest, read for a commit; one that vanished since the listing was cleaned up."""
    try:
        return _load_retrying(store, uri, versions, version)
    except FileNotFoundError:
        raise RetryableCommitConflictError(
            f"dataset {uri!r}: version {version} was cleaned up while this commit checked it; "
            "re-read the dataset and retry"
        ) from None


def _done(store: ObjectStore, version: int) -> int:
    write_version_hint(store, version)
    return version


def write_version_hint(store: ObjectStore, version: int) -> None:
    """latest_version_hint.json, as pylance writes it (a hint only: readers list _versions/)."""
    try:
        store.put_hint(f"{VERSIONS_DIR}/{HINT_FILE}", b'{"version":%d}' % version)
    except Exception:  # noqa: BLE001 - the hint is best effort
        pass
