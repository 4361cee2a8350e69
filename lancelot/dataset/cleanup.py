"""Cleanup: remove old versions and the files no remaining version uses (pylance's ``cleanup_old_versions``; table
format, "Version cleanup").

A manifest is removed when it is older than the cutoff, is not the dataset's (latest) version and carries no tag
(``_refs/tags/*.json``).  Every manifest is read: the data, deletion, transaction and index files of the kept ones are
"referenced", those of removed ones "verified".  The manifests of the removed versions go first (pylance removes them
last): a cleanup interrupted at any step then leaves every listed version whole, and at worst files no manifest names.
Then every file under ``data/``, ``_deletions/``, ``_transactions/`` and ``_indices/`` is considered (as pylance 14.0.2
does; newer Lance also skips files modified after the oldest kept manifest): a referenced file stays; a verified one
goes; one no manifest names (a commit that failed, one in flight, or one an interrupted cleanup left) goes only when it
is at least 7 days old or ``delete_unverified`` is set.

Temporary files of writers that died (``TEMP_PATTERNS``: lancelot's ``.tmp-*.partial`` and ``.lancelot-*.tmp``,
pylance's staged manifests ``*.manifest-<uuid>`` and ``.tmp_*``, and its object store's ``<name>#<n>``) go by the same
rule, when also older than the cutoff (pylance 14.0.2 leaves them)."""

from __future__ import annotations

import json
import logging
import posixpath
import re
import time
import uuid as _uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from lancelot.dataset.commit import (
    AFTER_COMMIT,
    Versions,
    hinted_version,
    list_versions,
    load_manifest,
    manifest_from_bytes,
    write_version_hint,
)
from lancelot.dataset.deletion import deletion_path
from lancelot.dataset.fragment_metadata import DATA_DIR
from lancelot.dataset.history import read_manifests
from lancelot.dataset.manifest import FOOTER, MAGIC, VERSIONS_DIR
from lancelot.dataset.manifest_wire import (
    F_HAS_INDEX,
    F_INDEX_POS,
    F_NANOS,
    F_OK,
    F_SECONDS,
    F_TXN_LEN,
    F_TXN_START,
    F_VERSION,
    scan_files,
)
from lancelot.dataset.transaction import TRANSACTIONS_DIR
from lancelot.errors import LanceValueError, OSErrorMessage
from lancelot.format.pb import table_pb2
from lancelot.util.jit import NumpyUntilHot

if TYPE_CHECKING:
    from lancelot.dataset.store import ObjectStore

#: unreferenced files younger than this may belong to a commit in flight
UNVERIFIED_AGE = timedelta(days=7)
#: pylance's default cutoff when neither ``older_than`` nor ``retain_versions`` is given
DEFAULT_OLDER_THAN = timedelta(days=14)
TAGS_DIR = "_refs/tags"
INDICES_DIR = "_indices"
#: names of writers' temporary files (module docstring); never a name a dataset's own files carry
TEMP_PATTERNS = (
    re.compile(r"\.tmp-[0-9a-f]+\.partial"),  # lancelot's store: put / put_if_not_exists staging
    re.compile(r"\.lancelot-.+\.tmp"),  # lancelot's local file writer
    re.compile(r".+\.manifest-[0-9a-fA-F-]{36}"),  # Lance's staged manifest (rename-if-not-exists)
    re.compile(r"\.tmp_.+"),  # older Lance's staged manifest
    re.compile(r".+#\d+"),  # object_store's local staging file
)
TEMP_DIRS = (DATA_DIR, VERSIONS_DIR, "_deletions", TRANSACTIONS_DIR, INDICES_DIR, "_refs")


class CleanupError(OSErrorMessage, LanceValueError, OSError):
    """Cleanup refused (tagged versions older than the cutoff, an option out of range): pylance's OSError."""


@dataclass
class CleanupCandidateFile:
    """A file cleanup would remove (pylance's): its store path, ``kind`` (``"manifest"``, ``"data"``,
    ``"deletion"``, ``"transaction"``, ``"index"``; lancelot also ``"temp"``), whether no removed version names it."""

    path: str
    kind: str
    unverified: bool
    size_bytes: int


@dataclass
class CleanupExplanation:
    """What ``cleanup_old_versions`` would do (pylance's ``explain_cleanup_old_versions``)."""

    read_version: int
    stats: CleanupStats
    candidate_files: list[CleanupCandidateFile] = field(default_factory=list)
    candidate_files_truncated: bool = False
    candidate_file_limit: int = 1000
    referenced_branches: list[str] = field(default_factory=list)  # (lancelot has no branches)
    warnings: list[str] = field(default_factory=list)


@dataclass
class CleanupStats:
    """What ``cleanup_old_versions`` removed (the fields of pylance's CleanupStats)."""

    bytes_removed: int = 0
    old_versions: int = 0
    data_files_removed: int = 0
    transaction_files_removed: int = 0
    index_files_removed: int = 0
    deletion_files_removed: int = 0
    #: pylance's count of deletions that failed while its cleanup went on; lancelot's cleanup stops at the first
    #: failed deletion instead (an OSError: no manifest left naming a file it removed), so it stays 0
    failed_deletes: int = 0
    temp_files_removed: int = 0  # writers' temporary files (lancelot only; also in bytes_removed)
    removed: list[str] = field(default_factory=list, repr=False)  # dataset-relative paths
    _pace: float = field(default=0.0, repr=False)  # seconds between deletions (1 / delete_rate_limit)
    _last: float = field(default=0.0, repr=False)
    _candidates: list[CleanupCandidateFile] | None = field(default=None, repr=False)  # a dry run's: nothing deleted

    def _remove(self, store: ObjectStore, path: str, size: int, counter: str, unverified: bool = False) -> None:
        """Delete ``path`` (``size`` bytes), counted in ``counter`` (a field's name); a dry run lists it instead
        (``unverified``: no removed version names it)."""
        if self._candidates is not None:
            kind = "manifest" if counter == "old_versions" else counter.split("_")[0]
            self._candidates.append(CleanupCandidateFile(store.full_path(path).lstrip("/"), kind, unverified, size))
        elif self._pace:
            time.sleep(max(0.0, self._last + self._pace - time.monotonic()))
            self._last = time.monotonic()
        if self._candidates is None:
            store.delete(path)
        self.bytes_removed += size
        self.removed.append(path)
        setattr(self, counter, getattr(self, counter) + 1)


@dataclass
class TrackedFiles:
    paths: set[str] = field(default_factory=set)
    index_uuids: set[str] = field(default_factory=set)
    #: read off manifests' bytes (manifest_wire.scan_files): data file names, deletion file keys
    raw_paths: set[bytes] = field(default_factory=set)
    deletions: list[np.ndarray] = field(default_factory=list)

    def finish(self) -> set[str]:
        """``paths``, with the names read off manifests' bytes added (each distinct one once)."""
        self.paths.update(f"{DATA_DIR}/{p.decode()}" for p in self.raw_paths)
        if self.deletions:
            keys = np.unique(np.concatenate(self.deletions), axis=0).view(np.uint64)  # (u64 ids)
            for fid, kind, read, did in keys.tolist():
                d = table_pb2.DeletionFile(file_type=kind, read_version=read, id=did)
                self.paths.add(deletion_path(fid, d))
        self.raw_paths.clear()
        self.deletions.clear()
        return self.paths


#: cleanup reads every manifest: past this many bytes of them its kernel is prepared
_HOT = NumpyUntilHot(scan_files, warm_work=4 << 20)


def _read_version(
    store: ObjectStore, uri: str, versions: Versions, v: int, path: str, data: bytes | None
) -> tuple[float, Callable[[TrackedFiles], None]]:
    """A manifest's commit time (epoch seconds) and a function adding the files it names to a
    ``TrackedFiles``: read off its bytes (``data``; None: gone) by the kernel once
    it is loaded, else parsed (``_collect``)."""
    if data is not None and _HOT.ready():
        scanned = _scan(data, v)
        if scanned is not None:
            return scanned
    if data is None:  # an unreadable manifest stops the cleanup
        mf = load_manifest(store, uri, versions, v)
    else:
        mf = manifest_from_bytes(data, path, uri, v)
    m = mf.manifest
    if not _HOT.ready():
        size = m.ByteSize()
        empty = np.frombuffer(b"\0", dtype=np.uint8)  # (read-only, as the calls' arrays)
        _HOT.numpy_call(lambda: scan_files(empty, 0, 0), work=size)
    return m.timestamp.seconds + m.timestamp.nanos / 1e9, lambda into: _collect(m, mf.index_section, into)


def _scan(data: bytes, v: int) -> tuple[float, Callable[[TrackedFiles], None]] | None:
    """``_read_version`` by the kernel; None when the bytes are not what it reads (then: parse)."""
    if len(data) < FOOTER + 4 or data[-4:] != MAGIC:
        return None
    pos = int.from_bytes(data[-FOOTER : -FOOTER + 8], "little", signed=True)
    end = len(data) - FOOTER
    if not (0 <= pos <= end - 4 and pos + 4 + int.from_bytes(data[pos : pos + 4], "little") == end):
        return None
    meta, spans, dels = scan_files(np.frombuffer(data, dtype=np.uint8), pos + 4, end)
    if not meta[F_OK] or meta[F_VERSION] != v:
        return None
    index = None
    if meta[F_HAS_INDEX]:
        at = int(meta[F_INDEX_POS])
        if not 0 <= at <= pos - 4:
            return None
        n = int.from_bytes(data[at : at + 4], "little")
        if at + 4 + n > pos:
            return None
        index = data[at + 4 : at + 4 + n]
    txn = ""
    if meta[F_TXN_START] >= 0:
        start = int(meta[F_TXN_START])
        txn = data[start : start + int(meta[F_TXN_LEN])].decode()

    def add(into: TrackedFiles) -> None:
        starts = spans[:, 0]
        into.raw_paths.update(map(data.__getitem__, map(slice, starts.tolist(), (starts + spans[:, 1]).tolist())))
        if len(dels):
            into.deletions.append(dels)
        if txn:
            into.paths.add(f"{TRANSACTIONS_DIR}/{txn}")
        if index:
            collect_indices(index, into)

    return int(meta[F_SECONDS]) + int(meta[F_NANOS]) / 1e9, add


def tagged_versions(store: ObjectStore) -> dict[int, list[str]]:
    """version -> tag names, from ``_refs/tags/<name>.json``."""
    out: dict[int, list[str]] = {}
    for name in store.list(TAGS_DIR):
        if not name.endswith(".json"):
            continue
        try:
            v = int(json.loads(store.read(f"{TAGS_DIR}/{name}"))["version"])
        except Exception as e:  # noqa: BLE001 - a tag we cannot read must not let its version go
            raise CleanupError(f"tag file {TAGS_DIR}/{name} cannot be read ({e}): refusing to clean up") from None
        out.setdefault(v, []).append(name[: -len(".json")])
    return out


def _collect(m: table_pb2.Manifest, index_section: bytes | None, into: TrackedFiles) -> None:
    for f in m.fragments:
        for d in f.files:
            if not d.HasField("base_id"):
                into.paths.add(f"{DATA_DIR}/{d.path}")
        if f.HasField("deletion_file") and not f.deletion_file.HasField("base_id"):
            into.paths.add(deletion_path(int(f.id), f.deletion_file))
    if m.transaction_file:
        into.paths.add(f"{TRANSACTIONS_DIR}/{m.transaction_file}")
    if index_section:
        collect_indices(index_section, into)


def collect_indices(index_section: bytes, into: TrackedFiles) -> None:
    sec = table_pb2.IndexSection()
    sec.ParseFromString(index_section)
    for idx in sec.indices:
        into.index_uuids.add(str(_uuid.UUID(bytes=bytes(idx.uuid.uuid))))


class _Versioned(Protocol):
    """What a cleanup needs of a dataset: its store, URI and the version it keeps as the latest."""

    @property
    def store(self) -> ObjectStore: ...
    @property
    def uri(self) -> str: ...
    @property
    def version(self) -> int: ...


def cleanup_old_versions(
    ds: _Versioned,
    older_than: timedelta | None = None,
    retain_versions: int | None = None,
    *,
    delete_unverified: bool = False,
    error_if_tagged_old_versions: bool = True,
    delete_rate_limit: int | None = None,
    versions: list[int] | None = None,
    delete_concurrency: int | None = None,
    dry_run: bool = False,
) -> CleanupStats:
    """Remove the versions of ``ds`` (a LanceDataset) older than ``older_than`` and before the last
    ``retain_versions`` and among ``versions`` (each condition given; none: older than two weeks, as pylance), and the
    files only they used. At most ``delete_rate_limit`` deletions a second; deletions run one at a time (within any
    ``delete_concurrency``). ``dry_run``: nothing is removed, ``CleanupStats.candidates`` lists what would be."""
    for name, value in (("retain_versions", retain_versions), ("delete_rate_limit", delete_rate_limit)):
        if value is not None and value < 0:
            raise OverflowError(f"{name}: can't convert negative int to unsigned")  # (pylance's)
        if value == 0:
            raise CleanupError(f"{name} must be greater than 0, got 0")
    if delete_concurrency is not None and not 0 < delete_concurrency < 1 << 61:
        raise CleanupError(f"delete_concurrency must be between 1 and {(1 << 61) - 1}, got {delete_concurrency}")
    if older_than is None and retain_versions is None and versions is None:
        older_than = DEFAULT_OLDER_THAN
    store, uri = ds.store, ds.uri
    now = time.time()
    cutoff = None if older_than is None else now - older_than.total_seconds()
    chosen = None if versions is None else set(versions)
    listed = list_versions(store, uri)
    current = int(ds.version)
    before_version = None if retain_versions is None else (listed.latest or 0) - retain_versions + 1
    tags = tagged_versions(store)
    kept, verified = TrackedFiles(), TrackedFiles()
    old: list[int] = []
    tagged_old: list[int] = []
    for v, path, data in read_manifests(store, listed):  # (a remote store's side by side)
        ts, collect = _read_version(store, uri, listed, v, path, data)
        should = (cutoff is None or ts < cutoff) and (before_version is None or v < before_version)
        should = should and (chosen is None or v in chosen)
        is_latest = current <= v
        if v in tags and should and not is_latest:
            tagged_old.append(v)
        keep = is_latest or not should or v in tags
        collect(kept if keep else verified)
        if not keep:
            old.append(v)
    kept.finish()
    verified.finish()
    if tagged_old and error_if_tagged_old_versions:
        names = sorted(n for v in tagged_old for n in tags[v])
        raise CleanupError(
            f"dataset {uri!r}: {len(tagged_old)} tagged version(s) are older than the cutoff; delete the tags "
            f"{names} or pass error_if_tagged_old_versions=False"
        )
    stats = CleanupStats(_pace=0.0 if delete_rate_limit is None else 1.0 / delete_rate_limit)
    stats._candidates = [] if dry_run else None
    sizes = {p: n for p, n, _ in store.list_files(VERSIONS_DIR)} if old else {}  # (one listing, not a request each)
    if old and not dry_run and listed.latest is not None and (hinted_version(store) or 0) < listed.latest:
        # (a hint older than a removed version would find a gap: no next manifest)
        write_version_hint(store, listed.latest)
    for v in old:  # manifests first: no listed version ever loses a file
        path = f"{VERSIONS_DIR}/{listed.names[v]}"
        size = sizes.get(path)
        if size is None:
            continue  # gone already
        stats._remove(store, path, size, "old_versions")
    threshold = now - UNVERIFIED_AGE.total_seconds()
    emptied: set[str] = set()
    for top, kind in (
        (DATA_DIR, "data"),
        ("_deletions", "deletion"),
        (TRANSACTIONS_DIR, "transaction"),
        (INDICES_DIR, "index"),
    ):
        for path, size, mtime in store.list_files(top):
            in_flight = not delete_unverified and mtime >= threshold
            if kind == "index":
                parts = path.split("/")
                if len(parts) < 3:
                    continue
                named = parts[1] in verified.index_uuids
                if parts[1] in kept.index_uuids or (in_flight and not named):
                    continue
            elif kind == "data" and path.endswith(".blob"):
                # a blob v2 sidecar (data/<file stem>/<id>.blob) goes with its data file
                owner = path.rsplit("/", 1)[0] + ".lance"
                named = owner in verified.paths
                if owner in kept.paths or (in_flight and not named):
                    continue
            else:
                if kind == "data" and not path.endswith(".lance"):
                    continue
                if kind == "deletion" and not path.endswith((".arrow", ".bin")):
                    continue
                if kind == "transaction" and not path.endswith(".txn"):
                    continue
                named = path in verified.paths
                if path in kept.paths or (in_flight and not named):
                    continue
            stats._remove(store, path, size, f"{kind}_files_removed", unverified=not named)
            if kind == "index" or path.endswith(".blob"):
                emptied.add(path.rsplit("/", 1)[0])
    for d in sorted(emptied) if not dry_run else ():  # an index's or sidecars' directory goes with its files
        store.remove_empty_dir(d)
    _remove_temp_files(store, stats, now if delete_unverified else threshold, cutoff)
    return stats


def is_temp_file(path: str) -> bool:
    """Whether ``path`` (dataset-relative) names a writer's temporary file (``TEMP_PATTERNS``)."""
    name = posixpath.basename(path)
    return any(p.fullmatch(name) for p in TEMP_PATTERNS)


def _remove_temp_files(store: ObjectStore, stats: CleanupStats, before: float, cutoff: float | None) -> None:
    """Remove the temporary files of writers that died: modified before ``before`` (and ``cutoff``)."""
    limit = before if cutoff is None else min(before, cutoff)
    for top in TEMP_DIRS:
        for path, size, mtime in store.list_files(top):
            if mtime >= limit or not is_temp_file(path):
                continue
            stats._remove(store, path, size, "temp_files_removed", unverified=True)


def explain_cleanup_old_versions(
    ds: _Versioned, *, include_files: bool = False, max_files: int = 1000, **options: Any
) -> CleanupExplanation:
    """``cleanup_old_versions(ds, **options)`` as a dry run: its stats, and its first ``max_files`` candidate files
    when ``include_files``."""
    if max_files <= 0:
        raise LanceValueError("max_files must be positive")
    options.pop("delete_rate_limit", None)  # (nothing is deleted)
    stats = cleanup_old_versions(ds, dry_run=True, **options)
    found = sorted(stats._candidates or [], key=lambda c: c.kind == "manifest")  # manifests last, as pylance's
    stats._candidates = None
    out = CleanupExplanation(int(ds.version), stats, candidate_file_limit=max_files)
    if include_files:
        out.candidate_files = found[:max_files]
        out.candidate_files_truncated = len(found) > max_files
        if out.candidate_files_truncated:
            out.warnings.append(f"candidate_files truncated to {max_files} entries")
    return out


#: humantime's units (what ``lance.auto_cleanup.older_than`` holds), in seconds
_UNITS = {
    **dict.fromkeys(("nanos", "nsec", "ns"), 1e-9),
    **dict.fromkeys(("usec", "us", "µs"), 1e-6),
    **dict.fromkeys(("millis", "msec", "ms"), 1e-3),
    **dict.fromkeys(("seconds", "second", "secs", "sec", "s"), 1.0),
    **dict.fromkeys(("minutes", "minute", "mins", "min", "m"), 60.0),
    **dict.fromkeys(("hours", "hour", "hrs", "hr", "h"), 3600.0),
    **dict.fromkeys(("days", "day", "d"), 86_400.0),
    **dict.fromkeys(("weeks", "week", "w"), 604_800.0),
    **dict.fromkeys(("months", "month", "M"), 2_630_016.0),
    **dict.fromkeys(("years", "year", "y"), 31_557_600.0),
}


def parse_duration(text: str) -> timedelta:
    """A humantime duration (``"1day 1h"``, ``"1ms"``, ``"3600s"``): pylance's config text."""
    parts = re.findall(r"\s*(\d+)\s*([A-Za-zµ]+)", text)
    if not parts or "".join(n + u for n, u in parts) != re.sub(r"\s+", "", text):
        raise ValueError(f"not a duration: {text!r}")
    bad = [u for _, u in parts if u not in _UNITS]
    if bad:
        raise ValueError(f"unknown time unit {bad[0]!r} in {text!r}")
    return timedelta(seconds=sum(int(n) * _UNITS[u] for n, u in parts))


class _At(NamedTuple):
    store: ObjectStore
    uri: str
    version: int


def auto_cleanup(store: ObjectStore, uri: str, config: Mapping[str, str], version: int) -> CleanupStats | None:
    """pylance's auto-cleanup hook, run after each commit of ``version``: when the new manifest's config
    has ``lance.auto_cleanup.interval`` and ``version`` is a multiple of it, the versions older than
    ``lance.auto_cleanup.older_than`` (``.retain_versions`` too, when set; neither: every one) are
    cleaned up, the version the commit built on and newer ones kept.  As pylance 14's, a failure (a
    tagged version among the old ones is one) is logged as a warning, never raised: the commit stands."""
    interval = config.get("lance.auto_cleanup.interval")
    if interval is None:
        return None
    try:
        every = int(interval)
        if every <= 0 or version % every:
            return None
        older = config.get("lance.auto_cleanup.older_than")
        retain = config.get("lance.auto_cleanup.retain_versions")
        return cleanup_old_versions(
            _At(store, uri, version - 1),
            older_than=parse_duration(older) if older is not None else timedelta(0) if retain is None else None,
            retain_versions=int(retain) if retain is not None else None,
        )
    except Exception as e:  # noqa: BLE001 - pylance logs the hook's errors and keeps the commit
        logging.getLogger(__name__).warning("Auto cleanup failed after a successful commit: %s", e)
        return None


AFTER_COMMIT.append(auto_cleanup)
