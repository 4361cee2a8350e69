"""``Session``: the metadata a dataset's reads keep cached, as pylance's ``lance.Session`` reports and bounds it.

What lancelot keeps between reads of a dataset: its opened data files (each holds its footer's column metadata and
schema, dataset/open_files.py), the deleted positions of its fragments' deletion files (the fragments hold them; the
process also keeps them, dataset/deletion.py), and what its ``file_shapes`` memo works out per file shape.  By default
the files and deletions live in caches shared by the whole process (a data file opened by one dataset object is open
for every other); a dataset's default session reports the entries of its own files, which the session of another
dataset of those files reports too.  A session with a metadata capacity (``lancelot.dataset(uri,
metadata_cache_size_bytes=n)``, or ``Session(metadata_cache_size_bytes=n)`` passed as ``session=``) keeps its
datasets' opened data files in a cache of its own, bounded by that many bytes of metadata (the per-dataset shape memo,
a few small dicts, is outside the bound); 0 keeps no files and no shapes: every read opens the files it needs.

Not counted, being shared by content rather than owned by a dataset: the process-wide memos of parsed schemas and
column metadata (manifest.py ``_SCHEMAS``, group_files.py ``_COLUMNS``) that the scans of small fragments use, which a
capacity of 0 does not bypass; nor is the dataset's manifest, which it holds to be a dataset at all (as pylance's
Dataset holds its manifest outside its cache).  Deleted positions are read through the process-wide cache by
fragment.py whatever the session.  Accounting happens when ``size_bytes`` is asked, never on the read path.  lancelot
keeps no index cache: indices are read per query.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, TypeVar

from lancelot.dataset.memo import IdentityMemo
from lancelot.errors import LanceError, LanceFileNotFoundError, LanceValueError

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.store import ObjectStore
    from lancelot.reader import LanceFile

_V = TypeVar("_V")
#: the session of each dataset object that asked for one
_SESSIONS: weakref.WeakKeyDictionary[LanceDataset, Session] = weakref.WeakKeyDictionary()


def file_bytes(lf: LanceFile) -> int:
    """The metadata bytes an opened data file holds: its column metadata and schema as stored, its buffer table."""
    md = lf.metadata
    schema = len(md.schema_bytes) if md.schema_bytes is not None else md.global_buffers[0][1]
    return int(sum(c.ByteSize() for c in md.columns) + schema + 16 * len(md.global_buffers))


class _NoMemo(IdentityMemo):
    """An ``IdentityMemo`` that keeps nothing (a session of no metadata capacity)."""

    def recall(self, key: Hashable, owner: object, make: Callable[..., _V], *args: Any) -> _V:
        return make(*args)


class FileCache:
    """The opened data files of one session's datasets, least recently used dropped beyond ``capacity`` bytes of
    metadata (``file_bytes``); a file bigger than the capacity is opened and not kept."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.held = 0
        self._files: OrderedDict[tuple[str, str, str], tuple[LanceFile, int]] = OrderedDict()
        self._lock = threading.Lock()

    def open(self, store: ObjectStore, path: str, where: str, storage_options: dict[str, Any] | None) -> LanceFile:
        """The data file at ``path`` in ``store``, from the cache or opened (errors as ``open_data_file``'s)."""
        key = (store.uri, path, repr(sorted(storage_options.items())) if storage_options else "[]")
        with self._lock:
            hit = self._files.get(key)
            if hit is not None:
                self._files.move_to_end(key)
                return hit[0]
        lf = _open(store, path, where)
        size = file_bytes(lf) if self.capacity else 0
        if 0 < size <= self.capacity:
            with self._lock:
                if key not in self._files:
                    self._files[key] = (lf, size)
                    self.held += size
                while self.held > self.capacity:
                    self.held -= self._files.popitem(last=False)[1][1]
        return lf

    def __len__(self) -> int:
        return len(self._files)

    def files(self) -> list[LanceFile]:
        """The files held now, least recently used first.

        Returns:
            The ``LanceFile`` objects.
        """
        return [lf for lf, _ in self._files.values()]


def _open(store: ObjectStore, path: str, where: str) -> LanceFile:
    """A data file opened afresh: missing is a LanceFileNotFoundError, other failures name ``where`` and the path."""
    from lancelot.reader import LanceFile

    try:
        return LanceFile(store.open_input(path))
    except FileNotFoundError:
        raise LanceFileNotFoundError(f"{where}: data file {path} is missing", path=path) from None
    except LanceError as e:
        raise type(e)(f"{where}: data file {path}: {e.message}", path=e.path) from None


class Session:
    """The caches of the datasets that share it (pylance's ``lance.Session``): see lancelot/dataset/session.py.

    A dataset opened without a session has its own, reporting what the process-wide caches hold for its files (the
    same entries may count in the session of another dataset of those files: they are shared).
    """

    def __init__(
        self,
        index_cache_size_bytes: int | None = None,
        metadata_cache_size_bytes: int | None = None,
        index_cache_backend: str | dict[str, Any] | None = None,
        metadata_cache_backend: str | dict[str, Any] | None = None,
        store_registry: Any = None,
    ) -> None:
        """A session whose datasets keep at most ``metadata_cache_size_bytes`` of metadata (None: the process-wide
        caches).

        Args:
            index_cache_size_bytes: Accepted (lancelot keeps no index cache).
            metadata_cache_size_bytes: The bytes of metadata the session's datasets may keep; 0 keeps none.
            index_cache_backend: Not supported (pylance's custom cache backends): refused when given.
            metadata_cache_backend: Not supported: refused when given.
            store_registry: Accepted; no effect.

        Raises:
            ValueError: A negative size, a backend, or a backend together with a size.
        """
        for name, size, backend in (
            ("index", index_cache_size_bytes, index_cache_backend),
            ("metadata", metadata_cache_size_bytes, metadata_cache_backend),
        ):
            if size is not None and int(size) < 0:
                raise LanceValueError(f"{name}_cache_size_bytes must not be negative, not {size}")
            if backend is not None:
                raise LanceValueError(f"{name}_cache_backend: lancelot has no pluggable cache backends")
        self._capacity = None if metadata_cache_size_bytes is None else int(metadata_cache_size_bytes)
        self._files = FileCache(self._capacity) if self._capacity is not None else None
        self._datasets: weakref.WeakSet[LanceDataset] = weakref.WeakSet()

    def attach(self, ds: LanceDataset) -> None:
        """Make ``ds`` read through this session's caches."""
        _SESSIONS[ds] = self
        self._datasets.add(ds)
        ds.file_cache = self._files
        if self._capacity == 0 and not isinstance(ds.file_shapes, _NoMemo):
            ds.snapshot.file_shapes = _NoMemo(0)

    def metadata_size_bytes(self) -> int:
        """The bytes of metadata the session's datasets keep cached now (lancelot's own name)."""
        counted: set[int] = set()
        total = self._files.held if self._files is not None else 0
        if self._files is not None:
            counted.update(id(lf) for lf in self._files.files())
        for ds in list(self._datasets):
            total += _held(ds, counted, shared=self._files is None)
        return total

    def index_cache_size_bytes(self) -> int:
        """The bytes of the index cache: always 0 (lancelot reads indices per query and keeps none).

        Returns:
            0.
        """
        return 0

    def size_bytes(self) -> int:
        """The bytes the session's caches hold now: the metadata its datasets keep (see the module's docstring).

        Returns:
            The bytes.
        """
        return self.metadata_size_bytes() + self.index_cache_size_bytes()

    def is_same_as(self, other: Session) -> bool:
        """Whether ``other`` is this session.

        Args:
            other: A session.

        Returns:
            Whether it is the same object.
        """
        return other is self

    def __repr__(self) -> str:
        return (
            f"Session(index_cache_size_bytes={self.index_cache_size_bytes()}, "
            f"metadata_cache_size_bytes={self.metadata_size_bytes()})"
        )


def _held(ds: LanceDataset, counted: set[int], *, shared: bool) -> int:
    """The bytes ``ds`` keeps that are not in ``counted`` (ids, updated): its fragments' deleted positions, and with
    ``shared`` the process-wide caches' entries of its data and deletion files."""
    from lancelot.dataset import deletion, open_files
    from lancelot.dataset.fragment_columns import check_relative_path

    total = sum(_object_bytes(v) for v in ds.file_shapes.values())
    arrays = [a for f in ds.snapshot.fragments or [] if (a := f.loaded_deletions) is not None]
    if shared:
        files = open_files.files_open(ds.storage_options)
        dels = deletion.cached_deletions()
        for frag in ds.manifest.fragments:
            for df in frag.files:
                try:
                    store, prefix = ds.base_store(df, "session")
                    lf = files.get((store.uri, f"{prefix}{check_relative_path(df.path, 'session')}"))
                except LanceError:
                    continue
                if lf is not None and id(lf) not in counted:
                    counted.add(id(lf))
                    total += file_bytes(lf)
            if frag.HasField("deletion_file"):
                path = deletion.deletion_path(int(frag.id), frag.deletion_file)
                hit = dels.get((ds.store.uri, path))
                if hit is not None:
                    arrays.append(hit)
    for a in arrays:
        if id(a) not in counted:
            counted.add(id(a))
            total += a.nbytes
    return total


def _object_bytes(value: object) -> int:
    """The bytes of a memo's value: the object and, for a container, its items (one level)."""
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        size += sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in value.items())
    elif isinstance(value, list | tuple):
        size += sum(sys.getsizeof(v) for v in value)
    return size


def session_of(ds: LanceDataset) -> Session:
    """The session of ``ds``: the one it was opened with, else its own (made on first ask)."""
    s = _SESSIONS.get(ds)
    if s is None:
        s = Session()
        s.attach(ds)
    return s


def reattach(ds: LanceDataset) -> None:
    """Attach ``ds`` again to its session, if it has one (``move_to`` gave it a new snapshot)."""
    s = _SESSIONS.get(ds)
    if s is not None:
        s.attach(ds)


def open_with_session(
    ds: LanceDataset,
    session: Session | None,
    metadata_cache_size_bytes: int | None,
    index_cache_size_bytes: int | None,
) -> None:
    """Attach ``ds`` to ``session``, or to a new one of the given sizes when any is given (``lancelot.dataset``)."""
    if session is None and metadata_cache_size_bytes is None and index_cache_size_bytes is None:
        return
    if session is not None and not isinstance(session, Session):
        raise LanceValueError(f"session must be a lancelot Session, not {type(session).__name__}")
    (session or Session(index_cache_size_bytes, metadata_cache_size_bytes)).attach(ds)
